"""AutoMedic's conversion: multiple-choice QA items -> consultation profiles.

An item (MedQA-style JSONL: ``question``, ``options`` as a dict letter -> text or a
list, ``answer`` as the text or the letter; optional ``id``) goes through:

1. **parsing** (a malformed item is dropped, reason ``malformed``);
2. a **rule-based pre-filter** (:func:`prefilter_text`): research participants, abstract
   mechanisms, fact recall (no patient), image-dependent items, key facts only in the
   options;
3. a **model screen** (``automedic_filter`` prompt, a bounded JSON verdict with an enum
   of reasons); an unparsable verdict after the retries drops the item
   (``screen_unparsed``): an item nobody vouched for is not converted;
4. **extraction** (``automedic_extract``, a bounded JSON schema): demographics (for the
   doctor); basic information (chief complaint, duration, history, past history,
   lifestyle; a missing one imputed with a plain value and named under ``imputed``) for
   the patient; optional information (vitals, exam, labs, imaging) for the clinical
   staff, which must be **grounded** in the question (every number and most words of a
   value appear in it) or it is dropped: never invented. Any sentence of the patient's
   information that holds a measurement, an optional value or the answer is removed
   (:func:`scrub`), so what only the staff hold never reaches the patient;
5. a **polarity check** of each basic item against the vignette (deterministic,
   :mod:`agents.suites.negation`): a basic item that asserts what the vignette only
   negates ("smokes" where it says "She does not smoke") gets the vignette's own negated
   phrase in place of the false clause ("does not smoke, works as a teacher"), or, where
   no clean repair exists, the plain imputed value (named under ``imputed``). Each repair
   is listed in the item's event (``repairs``: stage ``polarity``, reason
   ``negation_restored`` or ``negation_imputed``, the field, before and after). It runs
   on every extraction, the rule-based one included.

Every decision is an ``automedic_item`` event naming the stage and reason; the model's
calls are ``llm_call`` events. The output record is a medsim case (AgentClinic OSCE
JSONL, ``agents/cases/model.py``) with the original item under ``AutoMedic``.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from agents.events import Event, EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render
from agents.suites.negation import negations, restore

__all__ = ["McqItem", "ItemError", "ItemScreened", "parse_item", "prefilter_text", "prefilter", "rule_extract",
           "FILTER_SCHEMA", "EXTRACT_SCHEMA", "FILTER_REASONS", "BASIC_FIELDS", "OPTIONAL_FIELDS", "grounded",
           "scrub", "restore_polarity", "to_record", "Conversion", "query_of", "OBJECTIVE"]

FILTER_REASONS = ("suitable", "research_participants", "abstract_mechanism", "fact_recall", "image_dependent",
                  "key_facts_in_options", "other")
BASIC_FIELDS = ("chief_complaint", "duration", "history", "past_medical_history", "lifestyle")
OPTIONAL_FIELDS = ("vitals", "exam", "labs", "imaging")
OBJECTIVE = ("Find out what is wrong with the patient by talking to them and asking the clinical staff for "
             "measurements and results; afterwards you will answer a multiple-choice question about this patient.")

_S = lambda n: {"type": "string", "maxLength": n}  # noqa: E731
_ITEMS = {"type": "array", "maxItems": 8,
          "items": {"type": "object", "properties": {"name": _S(60), "value": _S(200)},
                    "required": ["name", "value"], "additionalProperties": False}}
FILTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"suitable": {"type": "boolean"}, "reason": {"type": "string", "enum": list(FILTER_REASONS)},
                   "note": _S(160)},
    # every key required, so the grammar writes them in the (sorted) order note, reason, suitable:
    # a small model that had to pick the reason first picked the first enum value for every item
    # (the embedded 1.5B model dropped four suitable items as "research_participants", its notes
    # saying they were suitable); with the note first it reasons before it decides
    "required": ["note", "reason", "suitable"], "additionalProperties": False}
EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"demographics": _S(80), "chief_complaint": _S(200), "duration": _S(100), "history": _S(700),
                   "past_medical_history": _S(300), "lifestyle": _S(300),
                   "imputed": {"type": "array", "maxItems": 5, "items": {"type": "string", "enum": list(BASIC_FIELDS)}},
                   "vitals": _ITEMS, "exam": _ITEMS, "labs": _ITEMS, "imaging": _ITEMS},
    "required": ["demographics", *BASIC_FIELDS, "imputed", *OPTIONAL_FIELDS], "additionalProperties": False}


class ItemError(ValueError):
    """A malformed item."""


@dataclass(frozen=True)
class McqItem:
    id: str
    line: int
    question: str
    options: dict[str, str]
    answer_letter: str

    @property
    def answer(self) -> str:
        return self.options[self.answer_letter]

    def options_text(self) -> str:
        return "\n".join(f"{k}. {v}" for k, v in self.options.items())


@dataclass(frozen=True)
class ItemScreened(Event):
    """One item's fate: ``kept`` or dropped at ``stage`` (parse | rules | screen |
    extract) for ``reason``; ``note`` says more (the model's note, values dropped as
    ungrounded, fields imputed); ``repairs`` lists the kept item's basic fields changed
    by the polarity check (:func:`restore_polarity`)."""

    type: ClassVar[str] = "automedic_item"
    line: int
    item_id: str
    kept: bool
    stage: str
    reason: str
    note: str = ""
    repairs: list[dict[str, Any]] = field(default_factory=list)


def parse_item(obj: Any, line: int, stem: str = "item") -> McqItem:
    if not isinstance(obj, dict):
        raise ItemError(f"expected a JSON object, got {type(obj).__name__}")
    q = obj.get("question")
    if not isinstance(q, str) or not q.strip():
        raise ItemError("field 'question': missing or not a non-empty string")
    raw = obj.get("options")
    if isinstance(raw, list):
        opts = {chr(ord("A") + i): v for i, v in enumerate(raw)}
    elif isinstance(raw, dict):
        opts = {str(k).strip(): v for k, v in raw.items()}
    else:
        raise ItemError("field 'options': expected a dict (letter -> text) or a list")
    if not 2 <= len(opts) <= 10 or not all(isinstance(v, str) and v.strip() for v in opts.values()):
        raise ItemError("field 'options': 2 to 10 non-empty strings")
    opts = {k: " ".join(v.split()) for k, v in opts.items()}
    ans = obj.get("answer", obj.get("answer_idx"))
    if not isinstance(ans, str) or not ans.strip():
        raise ItemError("field 'answer': missing or not a non-empty string")
    ans = ans.strip()
    letter = next((k for k in opts if k == ans or k.upper() == ans.upper()), None)
    if letter is None:
        letter = next((k for k, v in opts.items() if _norm(v) == _norm(ans)), None)
    if letter is None:
        raise ItemError(f"field 'answer': {ans[:60]!r} is neither an option's letter nor its text")
    iid = obj.get("id")
    if iid is not None and (not isinstance(iid, (str, int)) or not str(iid).strip()):
        raise ItemError("field 'id': present but empty")
    if iid is None:
        iid = f"{stem}-{hashlib.sha256(q.encode('utf-8', 'replace')).hexdigest()[:8]}"
    return McqItem(str(iid).strip(), line, " ".join(q.split()), opts, letter)


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())


# -- the rule-based pre-filter -----------------------------------------------------------
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("image_dependent", re.compile(r"\b(shown|pictured|photograph|figure|image below|the following image|"
                                   r"illustrated|in the image|see image|exhibit)\b", re.I)),
    ("research_participants", re.compile(r"\b(investigators?|researchers?|study participants|participants|"
                                         r"clinical trial|randomi[sz]ed|cohort|enrolled|case-control|"
                                         r"a study|the study|null hypothesis|sensitivity of the test)\b", re.I)),
    ("abstract_mechanism", re.compile(r"\b(mechanism of action|most likely mechanism|mechanism|which enzyme|"
                                      r"which receptor|which (?:of the following )?(?:cells?|genes?|proteins?) |"
                                      r"embryologic|derived from which|pathway)\b", re.I)),
)
_PATIENT = re.compile(r"\b(\d+|[a-z]+)[- ](?:year|month|week|day)[- ]old\b|\b(newborn|infant|neonate)\b|"
                      r"\b(man|woman|boy|girl|patient)\b", re.I)


def query_of(question: str) -> str:
    """The question without the vignette: its last sentence (the one asking)."""
    parts = _sentences(question)
    asks = [p for p in parts if p.rstrip().endswith("?")]
    return (asks[-1] if asks else parts[-1] if parts else question).strip()


def prefilter_text(question: str, options: str | Sequence[str]) -> str | None:
    """The rule that makes an item unsuitable, or None."""
    for reason, rx in _RULES:
        if rx.search(question):
            return reason
    vignette = question.replace(query_of(question), "")
    opts = options.splitlines() if isinstance(options, str) else list(options)
    words = [len(o.split()) for o in opts if o.strip()]
    if words and sum(words) / len(words) > 14 and sum(words) > len(vignette.split()):
        return "key_facts_in_options"  # the options hold the case; the stem does not
    if not _PATIENT.search(vignette) or len(vignette.split()) < 12:
        return "fact_recall"
    return None


def prefilter(item: McqItem) -> str | None:
    return prefilter_text(item.question, list(item.options.values()))


# -- rule-based extraction (the scripted converter, and a model-free reference) -------------
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_DEMO = re.compile(r"\b(?:an?\s+)?(\d+[- ](?:year|month|week|day)[- ]old\s+(?:man|woman|boy|girl|male|female|"
                   r"infant|newborn|child|patient))\b", re.I)
_DURATION = re.compile(r"\b(?:for|over|since)\s+(?:the\s+(?:past|last)\s+)?(?:\d+|a|an|one|two|three|four|five|six|"
                       r"several|few)\s+(?:hours?|days?|weeks?|months?|years?)\b|\b(?:since|this)\s+(?:yesterday|"
                       r"this morning|last night|morning)\b", re.I)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("imaging", re.compile(r"\b(x-?ray|radiograph\w*|CT|MRI|ultrasound|ultrasonograph\w*|echocardiograph\w*|"
                           r"scan|ECG|EKG|electrocardiogra\w*|angiograph\w*|mammogra\w*)\b")),
    ("vitals", re.compile(r"\b(temperature|pulse|blood pressure|respirations?|respiratory rate|heart rate|oxygen "
                          r"saturation|mm ?Hg|°[CF]|/min)\b", re.I)),
    ("labs", re.compile(r"\b(laboratory|labs?|serum|urinalysis|hemoglobin|haemoglobin|leukocyte|platelet|count|"
                        r"mg/dL|mEq/L|mmol/L|g/dL|U/L|/mm3|biopsy|culture|smear|titer|assay|level)\b", re.I)),
    ("exam", re.compile(r"\b(examination|exam|auscultation|palpation|palpable|inspection|tender\w*|murmur|"
                        r"reveals|appears|on physical|rales|crackles|wheez\w*|edema|oedema|rash|lesion)\b", re.I)),
    ("lifestyle", re.compile(r"\b(smok\w*|cigarettes?|alcohol|drinks?|beer|wine|works? as|occupation|employed|"
                             r"travel\w*|sexually active|illicit|drug use|diet|exercis\w*|lives? (?:with|alone))\b",
                             re.I)),
    ("past_medical_history", re.compile(r"\b(history of|medications?|takes?|taking|diagnosed with|past medical|"
                                        r"surgery|vaccinat\w*|allerg\w*)\b", re.I)),
)
_CC_SPLIT = re.compile(r"\b(?:with|because of|for|complaining of|due to|after)\b")
_UNITS = re.compile(r"\d\s*(?:%|°|mm ?Hg|/min|mg|g/dL|mEq|mmol|U/L|/mm3|cm H2O|kg/m2|bpm)", re.I)
_IMPUTE = {"chief_complaint": "I have not been feeling well.",
           "duration": "I am not sure exactly when it started.",
           "history": "Nothing else I can think of.",
           "past_medical_history": "No other medical problems that I know of, and no regular medicines.",
           "lifestyle": "Nothing unusual about how I live."}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def rule_extract(question: str, answer: str = "") -> dict[str, Any]:
    """The vignette split by rules into the extraction schema's shape (deterministic)."""
    sents = _sentences(question)
    q = query_of(question)
    sents = [s for s in sents if s != q]
    out: dict[str, Any] = {"demographics": "", **{k: "" for k in BASIC_FIELDS}, "imputed": [],
                           **{k: [] for k in OPTIONAL_FIELDS}}
    basic: dict[str, list[str]] = {k: [] for k in BASIC_FIELDS}
    for i, s in enumerate(sents):
        if i == 0:
            m = _DEMO.search(s)
            if m:
                out["demographics"] = m.group(1).replace("-", " ").replace(" year old", "-year-old") \
                    .replace(" month old", "-month-old").replace(" week old", "-week-old").replace(" day old", "-day-old")
                # the complaint follows the first "with", "because of", ... that no negation
                # holds: in "who has not been vaccinated for measles is brought because of
                # fever" it is the fever, not "measles"
                rest = s[m.end():]
                negated = [(g.start, g.end) for g in negations(rest)]
                cut = next((c for c in _CC_SPLIT.finditer(rest)
                            if not any(a <= c.start() < b for a, b in negated)), None)
                basic["chief_complaint"].append((rest[cut.end():] if cut else s).strip(" .,"))
            else:
                basic["chief_complaint"].append(s.strip(" ."))
            d = _DURATION.search(s)
            if d:
                basic["duration"].append(d.group(0))
            continue
        kind = next((k for k, rx in _KINDS if rx.search(s)), "history")
        if kind in OPTIONAL_FIELDS:
            name = {"vitals": "Vital signs", "exam": "Examination", "labs": "Laboratory", "imaging": "Imaging"}[kind]
            n = sum(1 for x in out[kind] if x["name"].startswith(name))
            out[kind].append({"name": name if n == 0 else f"{name} {n + 1}", "value": s[:200]})
        else:
            basic[kind].append(s)
            if kind == "history" and not basic["duration"] and (d := _DURATION.search(s)):
                basic["duration"].append(d.group(0))
    for k in BASIC_FIELDS:
        text = " ".join(basic[k]).strip()
        if not text:
            text = _IMPUTE[k]
            out["imputed"].append(k)
        out[k] = text[: EXTRACT_SCHEMA["properties"][k]["maxLength"]]
    for k in OPTIONAL_FIELDS:
        out[k] = out[k][:8]
    return out


# -- checks ---------------------------------------------------------------------------------
_NUM = re.compile(r"\d+(?:[.,]\d+)?")


def grounded(value: str, question: str) -> bool:
    """A staff value is grounded when each number in it, and most of its longer words,
    appear in the question."""
    qn = question.lower()
    nums = _NUM.findall(value)
    if any(n not in qn for n in nums):
        return False
    words = [w for w in re.findall(r"[a-z]{4,}", value.lower())]
    if not words:
        return bool(nums)
    return sum(1 for w in words if w in qn) / len(words) >= 0.6


def scrub(text: str, withheld: Iterable[str], answer: str) -> tuple[str, list[str]]:
    """``text`` without the sentences that hold a measurement, a withheld (staff) value or
    the answer; returns (text, removed sentences)."""
    held = [_norm(v) for v in withheld if len(_norm(v)) >= 6]
    held_words = [set(re.findall(r"[a-z]{4,}", h)) for h in held]
    staff = [rx for k, rx in _KINDS if k in ("imaging", "vitals", "labs")]
    ans = _norm(answer)
    kept, removed = [], []
    for s in _sentences(text):
        n = _norm(s)
        words = set(re.findall(r"[a-z]{4,}", n))
        if (_UNITS.search(s) or any(rx.search(s) for rx in staff)
                or any(h in n or (len(n) >= 12 and n in h) for h in held)
                or any(len(words & hw) >= 2 and len(words & hw) >= len(hw) / 2 for hw in held_words)
                or (len(ans) >= 4 and ans in n)):
            removed.append(s)
        else:
            kept.append(s)
    return " ".join(kept), removed


def restore_polarity(profile: dict[str, Any], question: str) -> list[dict[str, Any]]:
    """Repairs, in place, the basic items of ``profile`` that assert what the vignette
    (``question`` without its query) only negates; returns one dict per repair (stage,
    reason, field, before, after, concepts). A field with no clean repair gets its plain
    imputed value and is added to ``profile["imputed"]``."""
    vignette = question.replace(query_of(question), "")
    done: list[dict[str, Any]] = []
    for k in BASIC_FIELDS:
        text = str(profile.get(k, ""))
        if not text or text == _IMPUTE[k]:
            continue
        r = restore(text, vignette, fallback=_IMPUTE[k], max_len=EXTRACT_SCHEMA["properties"][k]["maxLength"])
        if r is None:
            continue
        profile[k] = r.after
        if r.reason == "negation_imputed":
            imputed = profile.setdefault("imputed", [])
            imputed.append(k) if k not in imputed else None
        done.append({"stage": "polarity", "reason": r.reason, "field": k, "before": r.before, "after": r.after,
                     "concepts": list(r.concepts)})
    return done


def to_record(item: McqItem, profile: Mapping[str, Any], *, source: str, screen: Mapping[str, Any]) -> dict[str, Any]:
    """A medsim case record (AgentClinic OSCE JSONL) with the item under ``AutoMedic``."""
    def facts(kind: str) -> dict[str, str]:
        return {x["name"].strip() or kind: x["value"].strip() for x in profile.get(kind, []) if x["value"].strip()}

    patient = {"Demographics": profile["demographics"], "Symptoms": {"Primary_Symptom": profile["chief_complaint"]},
               "Duration": profile["duration"], "History": profile["history"],
               "Past_Medical_History": profile["past_medical_history"], "Social_History": profile["lifestyle"]}
    exam = {k: v for k, v in (("Vital_Signs", facts("vitals")), ("Examination", facts("exam"))) if v}
    tests = {k: v for k, v in (("Laboratory", facts("labs")), ("Imaging", facts("imaging"))) if v}
    return {"id": item.id, "specialty": None, "OSCE_Examination": {
        "Objective_for_Doctor": OBJECTIVE, "Patient_Actor": patient, "Physical_Examination_Findings": exam,
        "Test_Results": tests, "Correct_Diagnosis": item.answer,
        "AutoMedic": {"question": item.question, "query": query_of(item.question), "options": dict(item.options),
                      "answer": item.answer, "answer_letter": item.answer_letter, "source": source,
                      "imputed": list(profile.get("imputed", [])), "screen": dict(screen)}}}


# -- the conversion of one item --------------------------------------------------------------
@dataclass
class Conversion:
    """Converts items with one model (role ``converter``), logging to ``sink``."""

    llm: LLM
    sink: EventSink
    params: GenerateParams = field(default_factory=lambda: GenerateParams(temperature=0.0, max_tokens=900))
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    retries: int = 1  # asks again after an invalid reply (JSON or schema)
    last_drop: tuple[str, str] | None = None  # (stage, reason) of the last item dropped

    def _ask(self, item: McqItem, system: str, user: str, schema: dict, check) -> tuple[Any, str]:
        params = GenerateParams(temperature=self.params.temperature, max_tokens=self.params.max_tokens,
                                seed=self.params.seed, timeout_s=self.params.timeout_s,
                                response_schema=json.dumps(schema, sort_keys=True))
        messages = [Message("system", system), Message("user", user)]
        problem = ""
        for attempt in range(1 + self.retries):
            out = generate_logged(self.llm, messages, params, CallContext("converter", item.id, attempt), self.sink,
                                  self.policy)
            try:
                obj = json.loads(out.text, strict=False)
                problem = check(obj)
            except (ValueError, RecursionError) as e:
                obj, problem = None, f"not JSON ({str(e)[:80]})"
            if not problem:
                return obj, ""
            messages = [*messages, Message("assistant", out.text),
                        Message("user", f"(That reply was invalid: {problem}. Reply with the JSON object only.)")]
        return None, problem

    def screen(self, item: McqItem) -> tuple[bool | None, str, str]:
        """(suitable, reason, note); suitable None when the verdict never parsed."""
        def check(o: Any) -> str:
            if not isinstance(o, dict) or not isinstance(o.get("suitable"), bool) or o.get("reason") not in FILTER_REASONS:
                return "needs suitable (true/false) and reason (one of the listed)"
            return ""
        obj, problem = self._ask(item, render("automedic_filter"),
                                 render("automedic_filter_user", question=item.question, options=item.options_text()),
                                 FILTER_SCHEMA, check)
        if obj is None:
            return None, "screen_unparsed", problem
        reason = obj["reason"] if not obj["suitable"] else "suitable"
        if not obj["suitable"] and reason == "suitable":
            reason = "other"
        return obj["suitable"], reason, str(obj.get("note", ""))[:160]

    def extract(self, item: McqItem) -> tuple[dict[str, Any] | None, str]:
        def check(o: Any) -> str:
            if not isinstance(o, dict):
                return "expected an object"
            if not isinstance(o.get("demographics"), str) or not o["demographics"].strip():
                return "demographics is missing"
            for k in BASIC_FIELDS:
                if not isinstance(o.get(k), str):
                    return f"{k} must be a string"
            for k in OPTIONAL_FIELDS:
                v = o.get(k, [])
                if not isinstance(v, list) or not all(isinstance(x, dict) and isinstance(x.get("name"), str)
                                                      and isinstance(x.get("value"), str) for x in v):
                    return f"{k} must be a list of {{name, value}}"
            return ""
        obj, problem = self._ask(item, render("automedic_extract"),
                                 render("automedic_extract_user", question=item.question, options=item.options_text(),
                                        answer=f"{item.answer_letter}. {item.answer}"),
                                 EXTRACT_SCHEMA, check)
        return obj, problem

    def convert(self, item: McqItem, source: str) -> dict[str, Any] | None:
        """The case record of ``item``, or None (dropped; the reason is logged)."""
        def drop(stage: str, reason: str, note: str = "") -> None:
            self.last_drop = (stage, reason)
            self.sink.emit(ItemScreened(line=item.line, item_id=item.id, kept=False, stage=stage, reason=reason,
                                        note=note))

        rule = prefilter(item)
        if rule is not None:
            drop("rules", rule, "rule-based pre-filter")
            return None
        stage = "screen"
        try:
            ok, reason, note = self.screen(item)
            if ok is not True:
                drop("screen", reason, note)
                return None
            stage = "extract"
            prof, problem = self.extract(item)
        except LLMError as e:
            drop(stage, "model_error", str(e)[:300])
            return None
        if prof is None:
            drop("extract", "extract_invalid", problem)
            return None
        notes: list[str] = []
        imputed = list(dict.fromkeys(k for k in prof.get("imputed", []) if k in BASIC_FIELDS))  # once each
        for k in BASIC_FIELDS:  # a basic item left empty is imputed with a plain value
            prof[k] = " ".join(str(prof.get(k, "")).split())
            if not prof[k]:
                prof[k] = _IMPUTE[k]
                imputed.append(k) if k not in imputed else None
        # what the vignette negates stays negated ("does not smoke" never becomes "smokes")
        prof["imputed"] = imputed
        repairs = restore_polarity(prof, item.question)
        imputed = prof["imputed"]
        for r in repairs:
            notes.append(f"{r['reason']} in {r['field']}: {r['before'][:80]!r} -> {r['after'][:80]!r}")
        withheld: list[str] = []
        for k in OPTIONAL_FIELDS:  # never invented: a value the question does not hold is dropped
            keep = []
            for x in prof.get(k, [])[:8]:
                v = " ".join(x["value"].split())
                if grounded(v, item.question):
                    keep.append({"name": " ".join(x["name"].split())[:60] or k, "value": v})
                    withheld.append(v)
                else:
                    notes.append(f"dropped ungrounded {k}: {v[:60]}")
            prof[k] = keep
        for k in BASIC_FIELDS:  # what only the staff hold (and the answer) never reaches the patient
            text, removed = scrub(prof[k], withheld, item.answer)
            if removed:
                notes.append(f"removed from the patient's {k}: {len(removed)} sentence(s)")
            if not text:
                text = _IMPUTE[k]
                imputed.append(k) if k not in imputed else None
            prof[k] = text
        prof["demographics"] = " ".join(prof["demographics"].split())[:80]
        # the age and sex are in the vignette's first sentence: where the rules find them, they win
        # over the model's (the embedded 1.5B model wrote "45-year-old woman" for a 34-year-old)
        ruled = rule_extract(item.question)["demographics"]
        if ruled and ruled.lower() != prof["demographics"].lower():
            if prof["demographics"]:
                notes.append(f"demographics from the vignette ({ruled!r}), not the model's ({prof['demographics']!r})")
            prof["demographics"] = ruled
        prof["imputed"] = imputed
        if imputed:
            notes.append(f"imputed: {', '.join(imputed)}")
        record = to_record(item, prof, source=source, screen={"reason": reason, "note": note})
        self.sink.emit(ItemScreened(line=item.line, item_id=item.id, kept=True, stage="extract", reason="converted",
                                    note="; ".join(notes), repairs=repairs))
        return record
