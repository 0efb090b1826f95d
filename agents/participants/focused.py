"""The focused doctor: a second doctor strategy, behind the same participant interface.

The default doctor (:class:`~agents.participants.llm.LLMDoctor`) decides each turn from
the raw dialogue. The focused doctor is built the way MeDxBench's MeDxAgent is described
(written for medsim):

1. **The chief complaint first, then a history and the examination**: its first turn
   asks what brought the patient in (the demographics and the task it is told at the
   start, as every doctor is); the next ones take the rest of a short history (onset and
   course, other symptoms, past history and medicines, social history:
   :data:`CHECKLIST`, the first ``history`` items), then it orders the physical
   examination (vital signs included) and the first-line blood tests (:data:`FIRST_LINE`,
   one order) where the protocol has a technician. These turns call no model: a clinician
   takes them whatever the complaint, and a small model asked to choose skips them
   (measured: 2.1 questions and 0.08 examinations a case; the v3 work-up named a complete
   blood count in 1 of 40 cases, where 18 record one).
2. **A work-up aimed at its candidates**: one call that reads the record and names its
   leading conditions (up to ``workup``), each with the one test that would best confirm
   it; those tests go to the technician as one order ("MRI brain; Acetylcholine receptor
   antibodies"), each answered (:class:`~agents.participants.wrappers.Hinted`), priced and
   scored as a test of its own (:func:`agents.orders.order_tests`), with the tests of the
   order sets of the complaint (:mod:`agents.order_sets`: the imaging of the part that
   hurts, which the model seldom names). Measured before it: the
   update below, one test a turn, left ~1.5 tests a case after the history.
3. **A running differential in its own state**: each later turn is one call that reads
   what it has learned so far (a record, not the dialogue) and returns its leading
   conditions with a confidence each, and the one question or test that would best tell
   the two leading ones apart. The differential is logged (``differential`` events with
   ``final = false``) and never shown to the patient. A question or test it has already
   asked is replaced by the next item of the checklist not yet covered.
4. **The diagnosis in its own call, from a summarised record** (:func:`record_vignette`):
   what the patient said (the checklist's answers under labels, another answer with its
   question), the examination findings and the test results one a line, sorted into the
   static prompt's form (``focused_final.txt``: the same sections the full-information
   static run reads), never the raw dialogue. It answers a ranked differential of up to
   five with confidences (the ``differential`` scorer's input), ordered by
   :func:`final_order`: pooled with the last running differential (:func:`pooled`: two
   reads of one record), a condition a result concludes first
   (:func:`concluded_by_results`), a condition the patient said they already have last
   (:func:`demote_known`: the diagnosis is of the new problem). The first is the diagnosis.
5. **It stops** when the differential is settled (the same leading condition in the last
   ``agree`` updates, at least ``settle`` confident and ``margin`` ahead of the next, once
   ``min_items`` things have been learned and the protocol accepts a diagnosis: a small
   model's confidence alone is near 0.9 whatever the case, and the update does not ask for a
   test not yet done: a doctor that still wants a test to tell its leaders apart has not
   settled) or on the last turn. No test is ordered whose result it already holds (a part
   of the examination named as a test: "Cranial nerves", "Blood pressure").

It is an :class:`LLMDoctor` (structured mode), so the wrappers and the world treat it as
one: its history holds each turn's message and its JSON action, and the record is read
back from that history (a turn a person played is in it too). Chain of thought, the
panels and memory (:class:`~agents.deliberation.Deliberating`) read its record
(:meth:`FocusedDoctor.record_messages`) instead of the dialogue.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from agents.cases.model import Case, format_facts
from agents.catalogue import CATALOGUE
from agents.condition_names import not_a_condition_name
from agents.events import DifferentialGiven
from agents.fidelity.facts import claim_concepts
from agents.suites.negation import about_someone_else
from agents.judge import normalise, precheck
from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.calls import generate_logged
from agents.order_sets import order_set_tests
from agents.orders import is_examination, is_whole_examination, order_tests, test_name
from agents.participants.base import Observation, Turn
from agents.participants.llm import LLMDoctor, addressed
from agents.prompts import render
from agents.protocol import DoctorAction, gathering_schema, parse_structured_turn, say
from agents.roles import PATIENT, STAFF, roles_of_kind, speaker_label

__all__ = ["FocusedDoctor", "FocusedConfig", "focused_system", "Learned", "RANKED_ITEM", "ranked", "update_schema", "final_schema",
           "CHECKLIST", "CHECKLIST_LABELS", "EXAMINATION", "FIRST_LINE", "demote_known", "pooled", "reply_json",
           "result_lines", "record_vignette", "learned_from_events", "concluded_by_results", "final_order"]

RANKED_ITEM = {"type": "object", "properties": {"diagnosis": {"type": "string", "minLength": 2, "maxLength": 80},
                                               "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
               "required": ["diagnosis", "confidence"], "additionalProperties": False}

# the history a doctor takes before choosing its own questions, and asks from when its own
# choice would repeat itself (written for medsim)
CHECKLIST = (
    "What brings you in today?",
    "When did this start, and how has it changed since?",
    "Have you noticed any other symptoms?",
    "Do you have any medical conditions, or take any medicines?",
    "Do you smoke, drink alcohol or use drugs, and what work do you do?",
    "Has anyone in your family had anything similar?",
)
# the whole physical examination, vital signs included (agents.orders.is_whole_examination)
EXAMINATION = "Physical examination"
# the first-line blood tests a clinician sends whatever the complaint (the complete blood count
# and the comprehensive metabolic panel's two halves), one order after the examination
FIRST_LINE = ("Complete blood count", "Basic metabolic panel", "Liver function tests")
# what the diagnosis call's record calls each checklist answer (the static prompt's "History",
# "Past Medical History"): a small model read "(asked ...)" lines worse than labelled facts
CHECKLIST_LABELS = ("Presenting complaint", "Onset and course", "Other symptoms", "Medical conditions and medicines",
                    "Social history", "Family history")
_RESULTS = re.compile(r"\bRESULTS:\s*")
# a finding that begins another "Section > Item:" within one result ("..., Vital Signs > Heart Rate: 88")
_FINDING = re.compile(r"[;,]\s+(?=[A-Z][A-Za-z0-9 ()/'-]{0,40} > [^:]{1,60}:)")
_LABELLED = re.compile(r"^[^:.]{2,100}:\s")
_BRACKETED = re.compile(r"\s*\([^()]*\)\s*$")  # a name's trailing bracket: an initialism, a gloss
# a result's own conclusion ("... consistent with X", "confirming the diagnosis of X"): the words
# after it name what the result shows. Weaker cues ("suggestive of", "indicating") name a finding
# as often as a condition ("suggestive of ascites", "indicating gas") and are not read.
_CONCLUDES = re.compile(r"\b(?:consistent with|diagnostic of|indicative of|compatible with|in keeping with|"
                        r"confirm(?:s|ing|ed)?(?: the diagnosis of)?)\s+(?:an?\s+|the\s+)?([^.;,\n]{3,80})",
                        re.IGNORECASE)
_SPEAKER = re.compile(r"^\s*([A-Z][A-Za-z ]{1,20}):\s*")


# a running differential's condition names are kept short: a small model that writes a sentence
# in their place ("Double vision could be due to strabismus, which is ...") used up the reply's
# tokens before its next step (the focused v4 run's first case: two updates cut, no step taken)
WORKING_NAME = {"type": "string", "minLength": 2, "maxLength": 60}
WORKING_ITEM = {**RANKED_ITEM, "properties": {**RANKED_ITEM["properties"], "diagnosis": WORKING_NAME}}


def update_schema(measurement: bool, items: int) -> dict:
    return {"type": "object", "properties": {
        "differential": {"type": "array", "items": WORKING_ITEM, "minItems": 2, "maxItems": items},
        "next": gathering_schema(measurement)}, "required": ["differential", "next"], "additionalProperties": False}


def workup_schema(items: int) -> dict:
    """The running differential, each condition with the test that would confirm it."""
    item = {"type": "object", "properties": {**WORKING_ITEM["properties"],
                                             "test": {"type": "string", "minLength": 2, "maxLength": 60}},
            "required": ["diagnosis", "confidence", "test"], "additionalProperties": False}
    return {"type": "object", "properties": {"differential": {"type": "array", "items": item, "minItems": 2,
                                                              "maxItems": items}},
            "required": ["differential"], "additionalProperties": False}


def final_schema(items: int) -> dict:
    return {"type": "object", "properties": {
        "differential": {"type": "array", "items": RANKED_ITEM, "minItems": items, "maxItems": items}},
        "required": ["differential"], "additionalProperties": False}


def ranked(obj: Any, limit: int = 5) -> list[tuple[str, float | None]]:
    """A reply's differential as (condition, confidence 0-1), most likely first: items
    that name no condition are dropped, a repeated condition is kept once, a confidence
    outside 0-100 is clipped and a missing one is None."""
    items = obj.get("differential") if isinstance(obj, dict) else None
    out: list[tuple[str, float | None]] = []
    seen: set[str] = set()
    for it in items if isinstance(items, list) else []:
        name = it.get("diagnosis") if isinstance(it, dict) else it if isinstance(it, str) else None
        if not isinstance(name, str):
            continue
        name = " ".join(name.split()).strip(" .;,")
        key = normalise(name)
        if not name or not key or key in seen or not_a_condition_name(name):
            continue
        seen.add(key)
        c = it.get("confidence") if isinstance(it, dict) else None
        conf = None if not isinstance(c, (int, float)) or isinstance(c, bool) else min(1.0, max(0.0, float(c) / 100))
        out.append((name, conf))
        if len(out) == limit:
            break
    return out


def pooled(final: list[tuple[str, float | None]], working: list[tuple[str, float | None]],
           limit: int = 5) -> list[tuple[str, float | None]]:
    """Two reads of the record pooled: each condition's confidence is the mean of what
    the final call and the last running differential gave it (0 where one did not name
    it; a missing confidence counts as 0), highest first, ties in the final call's
    order; a condition named in both (a trailing bracket aside: "Cerebral palsy (CP)")
    keeps the final call's wording. A small model's
    one read of a record is noisy: it names the condition a test result spelled out in
    one read and not the next."""
    if not working:
        return final[:limit]
    score: dict[str, float] = {}
    name: dict[str, str] = {}
    order: list[str] = []
    for items in (final, working):
        for dx, conf in items:
            key = normalise(_BRACKETED.sub("", dx)) or normalise(dx)  # "Cerebral palsy (CP)" is cerebral palsy
            if key not in name:
                name[key] = dx
                order.append(key)
            score[key] = score.get(key, 0.0) + (conf or 0.0) / 2
    keys = sorted(order, key=lambda k: (-score[k], order.index(k)))[:limit]
    return [(name[k], round(score[k], 4)) for k in keys]


def concluded_by_results(items: list[tuple[str, float | None]], learned: list[Learned]
                         ) -> list[tuple[str, float | None]]:
    """The differential with each condition a result concludes ("MRI brain: lesions
    consistent with progressive multifocal leukoencephalopathy (PML)") moved to its front, in
    their order: a report's conclusion is the strongest evidence in the record, and a small
    model reading the record ranks it below the names it knows best. A name matches a
    conclusion by the judge's pre-check (an initialism, the same core words), never by a model."""
    said = [m.group(1) for x in learned if x.kind in ("exam", "test") for m in _CONCLUDES.finditer(x.answer)]
    first = [it for it in items if any(precheck(it[0], c).correct for c in said)]
    return first + [it for it in items if it not in first]


def final_order(final: list[tuple[str, float | None]], working: list[tuple[str, float | None]], known: str,
                learned: list[Learned], limit: int = 5) -> list[tuple[str, float | None]]:
    """The final differential as the doctor reports it: the two reads pooled (:func:`pooled`),
    the conditions the results conclude first (:func:`concluded_by_results`), the conditions
    the patient already has last (:func:`demote_known`)."""
    return demote_known(concluded_by_results(pooled(final, working, limit), learned), known)


def demote_known(items: list[tuple[str, float | None]], known: str) -> list[tuple[str, float | None]]:
    """The differential with the conditions the patient said they already have (``known``:
    their answer about medical conditions and medicines) moved to its end, in their order:
    the diagnosis is of the problem that brought them in, and a small model reading a
    record tends to name the history it was told ("Crohn disease" first for a patient on
    natalizumab with new ataxia and an MRI of PML)."""
    own = " ".join(x for x in re.split(r"(?<=[.;])\s+", known) if not about_someone_else(x))  # not a relative's
    told = {c for c, denied in claim_concepts(own) if not denied}  # "no heart problems" is not a heart problem
    if not told:
        return items
    old = [it for it in items if (have := {c for c, _ in claim_concepts(it[0])}) and have <= told]
    return [it for it in items if it not in old] + old


def _examined(ordered: set[str]) -> bool:
    """Whether the whole physical examination is among the (normalised) orders, however worded."""
    return any(is_whole_examination(o) for o in ordered)


def _test_key(test: str) -> Any:
    """What makes two names one test ("CBC" and "complete blood count"): their canonical
    kind, target and specimens (agents.orders.test_name), else their words."""
    t = test_name(test)
    return (t.core, t.specimens) if t.core else normalise(test)


def reply_json(text: str) -> Any:
    """A model's reply read as JSON; None when it is not JSON (a reply cut at its token
    limit)."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None


@dataclass(frozen=True)
class Learned:
    """One thing the doctor learned: ``kind`` patient | exam | test | note (an order not
    done), what it asked or ordered, and the answer."""

    kind: str
    asked: str
    answer: str


def result_lines(asked: str, answer: str) -> list[str]:
    """A technician's reply as the static prompt's lines, one result a line: split at each
    "RESULTS:" and, within one, where another "Section > Item:" finding begins. A result
    without a label of its own ("Lesions consistent with ...") is put under what was ordered."""
    out = []
    for part in _RESULTS.split(answer):
        for line in _FINDING.split(part):
            line = line.strip(" ;,")
            if line:
                out.append(line if _LABELLED.match(line) else f"{asked}: {line}")
    return out


def record_vignette(case: Case, learned: list[Learned]) -> str:
    """The summarised record in the static prompt's form (the diagnosis call's input): the
    checklist's answers under its labels, another question's answer with its question, and
    each examination finding and test result on a line of its own."""
    labels = dict(zip(CHECKLIST, CHECKLIST_LABELS))
    facts = "\n".join(f"- {labels[x.asked]}: {x.answer}" if x.asked in labels else f'- (asked "{x.asked}") {x.answer}'
                      for x in learned if x.kind == "patient") or "- nothing"
    exam = "\n".join(f"- {line}" for x in learned if x.kind == "exam" for line in result_lines(x.asked, x.answer))
    tests = "\n".join(f"- {line}" for x in learned if x.kind == "test" for line in result_lines(x.asked, x.answer))
    return render("focused_final", objective=case.objective, demographics=case.demographics, facts=facts,
                  exam=exam or "- none done", tests=tests or "- none done")


def learned_from_events(events: list[dict[str, Any]]) -> list[Learned]:
    """What a logged consultation's doctor learned (as :meth:`FocusedDoctor.learned` reads it
    from its history): each question or order routed to the patient or the technician, with
    the first reply to the doctor in that turn (a replay of the diagnosis call on a finished
    run's record)."""
    out: list[Learned] = []
    for i, e in enumerate(events):
        if e.get("type") != "route" or e.get("route") not in ("patient", "measurement"):
            continue
        reply = next((u for u in events[i + 1:] if u.get("type") == "utterance" and u.get("turn") == e.get("turn")
                      and u.get("speaker") != "doctor" and u.get("addressee") == "doctor"), None)
        if reply is None:
            continue
        asked = str(e.get("extracted") or "")
        kind = "patient" if e["route"] == "patient" else "exam" if is_examination(asked) else "test"
        out.append(Learned(kind, asked, " ".join(str(reply.get("text") or "").split())))
    return out


@dataclass(frozen=True)
class FocusedConfig:
    history: int = 5  # checklist questions asked first, before the examination and the model's choices
    examine: bool = True  # order the physical examination after them (where there is a technician)
    first_line: tuple[str, ...] = FIRST_LINE  # then these tests, one order (where there is a technician; (): none)
    workup: int = 4  # then one order of the tests that would confirm each of its leading conditions, up to this many (0: none)
    order_sets: int = 2  # ... with the tests of this many order sets of the complaint (agents.order_sets; 0: none)
    settle: float = 0.8  # the leading condition's confidence that settles the differential
    margin: float = 0.3  # ... and how far ahead of the next it must be
    agree: int = 2  # ... in this many updates in a row naming the same leader
    min_items: int = 4  # things learned before it may settle early
    working: int = 3  # conditions in the running differential
    final: int = 5  # conditions in the final differential
    update_tokens: int = 160
    final_tokens: int = 150


def _labels() -> frozenset[str]:
    return frozenset(speaker_label(r.name) for r in roles_of_kind(PATIENT, STAFF))


def focused_system(case: Case) -> str:
    """The system prompt of the focused doctor's update and work-up calls."""
    return render("focused_system", objective=case.objective, demographics=case.demographics,
                  catalogue="; ".join(CATALOGUE))


@dataclass
class FocusedDoctor(LLMDoctor):
    """The focused strategy (see the module's docstring)."""

    case: Case | None = None
    focus: FocusedConfig = field(default_factory=FocusedConfig)
    working: list[tuple[str, float | None]] = field(default_factory=list)  # the running differential
    leaders: list[str] = field(default_factory=list)  # each update's leading condition (normalised)
    worked_up: bool = False  # the work-up's order is made

    def __post_init__(self) -> None:
        if self.case is None:
            raise ValueError("the focused doctor needs its case (objective, demographics)")
        self.mode = "structured"
        super().__post_init__()

    # -- the record --------------------------------------------------------------------
    def learned(self) -> list[Learned]:
        """What it learned, read from its history: each of its actions with the message
        that answered it."""
        out: list[Learned] = []
        h = self.history
        for i in range(1, len(h) - 1, 2):
            if h[i].role != "assistant" or h[i + 1].role != "user":
                continue
            a = parse_structured_turn(h[i].content)
            answer = h[i + 1].content
            answer = answer.split("\n(This is your last turn")[0].strip()
            m = _SPEAKER.match(answer)
            if m is None or m.group(1) not in _labels():  # not an answer: a refusal, a reminder
                out.append(Learned("note", a.text, " ".join(answer.split())))
                continue
            text = " ".join(answer[m.end():].split())
            kind = "patient" if a.kind == "ask" else "exam" if is_examination(a.text) else "test"
            out.append(Learned(kind, a.text, text))
        return out

    def known_conditions(self) -> str:
        """What the patient answered to the checklist's question about medical conditions
        and medicines ("" when not asked)."""
        return " ".join(x.answer for x in self.learned() if x.kind == "patient" and x.asked == CHECKLIST[3])

    def has_result(self, test: str) -> bool:
        """Whether a result named ``test`` is in what the technician has returned already
        ("Cranial nerves" after the examination's "Neurological Examination > Cranial
        Nerves: ...", "Blood pressure" after the vital signs'): ordering it again would
        bring the same line back."""
        name = " ".join(test.split()).strip(" .;,")
        if len(name) < 3:
            return False
        label = re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"\s*:", re.IGNORECASE)
        return any(x.kind in ("exam", "test") and label.search(x.answer) for x in self.learned())

    def _asked(self) -> tuple[set[str], set[str]]:
        """The questions asked and the orders made (each order, and each test of an order
        of several), normalised."""
        qs, orders = set(), set()
        for m in self.history:
            if m.role == "assistant":
                a = parse_structured_turn(m.content)
                if a.kind == "ask":
                    qs.add(normalise(a.text))
                else:
                    orders |= {normalise(a.text), *(normalise(t) for t in order_tests(a.text))}
        return qs, orders

    def record_text(self) -> str:
        """The record in the order it was learned (the running differential's input)."""
        lines = []
        for x in self.learned():
            if x.kind == "patient":
                lines.append(f'- You asked: "{x.asked}" The patient said: "{x.answer}"')
            elif x.kind == "note":
                lines.append(f"- You tried: {x.asked}. {x.answer}")
            else:
                lines.append(f"- You ordered: {x.asked}. Result: {x.answer}")
        return "\n".join(lines) or "- nothing yet"

    def vignette(self) -> str:
        """The summarised record in the static prompt's form (the diagnosis call's input)."""
        case = self.case
        assert case is not None
        if not self.static:
            return record_vignette(case, self.learned())
        facts = format_facts({k: v for k, v in case.patient.items() if k != "Demographics"}, indent="- ")
        exam = format_facts(case.exam, indent="- ") or "- none recorded"
        tests = format_facts(case.tests, indent="- ") or "- none recorded"
        return render("focused_final", objective=case.objective, demographics=case.demographics, facts=facts,
                      exam=exam, tests=tests)

    def record_messages(self) -> list[Message]:
        """What a strategy on top of it (CoT, a panel, memory) reads: the record."""
        return [Message("system", self.vignette())]

    # -- calls -------------------------------------------------------------------------
    def _call(self, obs: Observation, messages: list[Message], schema: dict, max_tokens: int) -> str:
        params: GenerateParams = replace(self.params, max_tokens=max_tokens, stop=(),
                                         response_schema=json.dumps(schema, sort_keys=True))
        out = generate_logged(self.llm, messages, params, CallContext(self.role, self.case_id, obs.turn), self.sink,
                              self.policy)
        return out.text.strip()

    def _next_from_checklist(self, asked: set[str], ordered: set[str], upto: int | None = None,
                             rule: str = "focused_checklist") -> DoctorAction | None:
        """The first of the checklist's first ``upto`` questions (all when None), then the
        physical examination, then the first-line tests, not yet done; None when all are done."""
        for q in CHECKLIST[:upto]:
            if normalise(q) not in asked:
                return DoctorAction("ask", q, rule)
        if self.measurement and self.focus.examine and not _examined(ordered):
            return DoctorAction("test", EXAMINATION, rule)
        if self.measurement and self.focus.first_line and normalise(first := "; ".join(self.focus.first_line)) \
                not in ordered:
            return DoctorAction("test", first, rule)
        return None

    def _update(self, obs: Observation) -> DoctorAction | None:
        """The running differential and the next step (None: nothing new to ask)."""
        case = self.case
        assert case is not None
        system = focused_system(case)
        ask = render("focused_update", record=self.record_text())
        reply = self._call(obs, [Message("system", system), Message("user", ask)],
                           update_schema(self.measurement, self.focus.working), self.focus.update_tokens)
        obj = reply_json(reply)
        self._record_differential(obs, obj)
        nxt = obj.get("next") if isinstance(obj, dict) else None
        a = parse_structured_turn(json.dumps(nxt)) if isinstance(nxt, dict) else None
        asked, ordered = self._asked()
        again = a is not None and a.kind == "test" and (
            _test_key(a.text) in {_test_key(o) for o in ordered} or is_examination(a.text) and _examined(ordered)
            or self.has_result(a.text))  # after the whole examination, a part of it ("Cardiovascular examination") too
        if a is None or not a.text or (a.kind == "ask" and normalise(a.text) in asked) or again or a.kind == "diagnose":
            return self._next_from_checklist(asked, ordered)
        return replace(a, rule=f"focused:{a.rule}")

    def _record_differential(self, obs: Observation, obj: Any) -> None:
        got = ranked(obj, self.focus.working)
        if got:
            self.working = got
            self.leaders.append(normalise(got[0][0]))
            self.sink.emit(DifferentialGiven.of(obs.turn, got, final=False))

    def _workup(self, obs: Observation) -> DoctorAction | None:
        """The running differential, each condition with the test that would confirm it,
        and one order of those tests (None: each is done already, or none was named)."""
        case = self.case
        assert case is not None
        self.worked_up = True
        system = focused_system(case)
        ask = render("focused_workup", record=self.record_text())
        obj = reply_json(self._call(obs, [Message("system", system), Message("user", ask)],
                               workup_schema(self.focus.workup), self.focus.update_tokens + 40))
        self._record_differential(obs, obj)
        _, ordered = self._asked()
        items = obj.get("differential") if isinstance(obj, dict) else None
        named = [" ".join(str(it.get("test") or "").split()).strip(" .;,")
                 for it in (items if isinstance(items, list) else []) if isinstance(it, dict)]
        complaint = [case.objective, *(x.answer for x in self.learned()
                                       if x.kind == "patient" and x.asked in CHECKLIST[:3])]
        named += order_set_tests(complaint, self.focus.order_sets) if self.focus.order_sets else []
        tests, seen = [], {_test_key(t) for t in ordered}
        for t in named:
            # the examination is done already, and a part of it (or of a test) returned is not asked again
            if t and _test_key(t) not in seen and not is_examination(t) and not self.has_result(t):
                seen.add(_test_key(t))
                tests.append(t.replace(";", ","))
        if not tests:
            return None
        return DoctorAction("test", "; ".join(tests), "focused_workup")

    def _settled(self, obs: Observation) -> bool:
        w = self.working
        if not obs.may_diagnose or len(self.learned()) < self.focus.min_items or not w or w[0][1] is None:
            return False
        second = w[1][1] if len(w) > 1 and w[1][1] is not None else 0.0
        last = self.leaders[-self.focus.agree:]
        return (len(last) == self.focus.agree and len(set(last)) == 1 and w[0][1] >= self.focus.settle
                and w[0][1] - second >= self.focus.margin)

    def _diagnose(self, obs: Observation) -> DoctorAction:
        reply = self._call(obs, [Message("user", self.vignette())], final_schema(self.focus.final),
                           self.focus.final_tokens)
        final = ranked(reply_json(reply), self.focus.final)
        got = final_order(final, self.working, self.known_conditions(), self.learned(), self.focus.final)
        rule = "focused_final"
        if not final and self.working:  # the final call named no condition: the running differential stands
            got, rule = self.working, "focused_working"
        if not got:
            return DoctorAction("diagnose", "", "focused_final_empty", note="no condition named")
        return DoctorAction("diagnose", got[0][0], rule, differential=tuple(got))

    # -- Participant -------------------------------------------------------------------
    def act(self, obs: Observation) -> Turn:
        self.history.append(Message("user", obs.text))
        if self.static or obs.final:
            action = self._diagnose(obs)
        elif len(self.history) == 1:
            action = DoctorAction("ask", CHECKLIST[0], "focused_opening")
        elif (first := self._next_from_checklist(*self._asked(), upto=self.focus.history,
                                                  rule="focused_history")) is not None:
            action = first  # the history and the examination, before the model chooses
        elif (self.measurement and self.focus.workup and not self.worked_up
              and (work := self._workup(obs)) is not None):
            action = work
        else:
            nxt = self._update(obs)
            # a leader held with confidence is not settled while the doctor itself still asks for a
            # test it has not done to tell it from the next (seen: an MRI brain asked for, then a
            # diagnosis of multiple sclerosis instead; the MRI held the answer)
            wants_test = nxt is not None and nxt.kind == "test" and nxt.rule.startswith("focused:")
            if (self._settled(obs) and not wants_test) or (nxt is None and obs.may_diagnose):
                action = self._diagnose(obs)
            else:
                action = nxt or DoctorAction("ask", "Is there anything else you think I should know?",
                                             "focused_nothing_new")
        action = addressed(action)
        text = json.dumps(_as_json(action))
        self.history.append(Message("assistant", text))
        return Turn(text=text, action=action, spoken=say(action))


def _as_json(a: DoctorAction) -> dict[str, str]:
    if a.kind == "test":
        return {"action": "order_test", "test": "other", "text": a.text}
    if a.kind == "diagnose":
        return {"action": "diagnose", "text": a.text}
    return {"action": "ask_patient", "text": a.text}
