"""Generation mode: a model invents cases in medsim's case schema.

``--cases generate:N[:specialty]`` asks a model (role ``generator``; the bench uses the
doctor's backend) for N cases, one call per case with a bounded JSON schema (lengths and
item counts capped, so a small model's reply stays valid). Each reply is checked: JSON,
the schema's fields, a record the case loader accepts (``agents.cases.agentclinic``),
at least one examination finding or test, and a diagnosis the patient's own words do not
give away. An invalid reply is asked again (``retries`` times) with what was wrong;
a case still invalid after that is left out, named in a ``case_generated`` event. The
valid records are written as JSONL, reusable with ``--cases FILE``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from agents.cases.agentclinic import parse_record
from agents.events import Event, EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render

__all__ = ["GENERATE_SCHEMA", "GenerateSpec", "parse_generate", "generated_record", "Generator", "CaseGenerated",
           "scripted_case", "GenerateError"]

_S = lambda n: {"type": "string", "minLength": 1, "maxLength": n}  # noqa: E731
_PAIRS = lambda k: {"type": "array", "maxItems": k, "items": {  # noqa: E731
    "type": "object", "properties": {"name": _S(60), "value": _S(200)}, "required": ["name", "value"],
    "additionalProperties": False}}
GENERATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"specialty": _S(40), "demographics": _S(80), "chief_complaint": _S(200), "history": _S(600),
                   "symptoms": {"type": "array", "maxItems": 6, "items": _S(100)},
                   "past_medical_history": _S(300), "social_history": _S(300),
                   "vitals": _PAIRS(6), "exam": _PAIRS(6), "tests": _PAIRS(8), "diagnosis": _S(100)},
    "required": ["specialty", "demographics", "chief_complaint", "history", "symptoms", "past_medical_history",
                 "social_history", "vitals", "exam", "tests", "diagnosis"],
    "additionalProperties": False}


class GenerateError(ValueError):
    """A bad ``generate:`` spec, or no valid case at all."""


@dataclass(frozen=True)
class GenerateSpec:
    n: int
    specialty: str | None = None


def parse_generate(spec: str) -> GenerateSpec | None:
    """``generate:N[:specialty]`` -> its parts; None for any other case-set name."""
    if not spec.startswith("generate:"):
        return None
    _, _, rest = spec.partition(":")
    n, _, specialty = rest.partition(":")
    if not n.strip().isdigit() or not 1 <= int(n) <= 1000:
        raise GenerateError(f"--cases {spec}: expected generate:N[:specialty] with N from 1 to 1000")
    sp = specialty.strip() or None
    if sp is not None and (len(sp) > 40 or not re.fullmatch(r"[A-Za-z][A-Za-z \-/&]*", sp)):
        raise GenerateError(f"--cases {spec}: the specialty is a short name in letters, got {sp!r}")
    return GenerateSpec(int(n), sp)


@dataclass(frozen=True)
class CaseGenerated(Event):
    """One requested case: ``valid`` after ``attempts`` replies, or left out (``problem``)."""

    type: ClassVar[str] = "case_generated"
    index: int
    case_id: str
    valid: bool
    attempts: int
    problem: str = ""


def _pairs(v: Any) -> dict[str, str]:
    return {" ".join(x["name"].split()): " ".join(x["value"].split()) for x in v if x["name"].strip() and x["value"].strip()}


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())


def generated_record(obj: Any, case_id: str) -> tuple[dict[str, Any] | None, str]:
    """A model's reply (decoded JSON) -> (case record, "") or (None, what is wrong)."""
    if not isinstance(obj, Mapping):
        return None, "expected a JSON object"
    for k in ("specialty", "demographics", "chief_complaint", "history", "past_medical_history", "social_history",
              "diagnosis"):
        if not isinstance(obj.get(k), str) or not obj[k].strip():
            return None, f"'{k}' must be a non-empty string"
        if len(obj[k]) > GENERATE_SCHEMA["properties"][k]["maxLength"]:
            return None, f"'{k}' is too long"
    if not isinstance(obj.get("symptoms"), list) or not all(isinstance(x, str) for x in obj["symptoms"]):
        return None, "'symptoms' must be a list of strings"
    for k in ("vitals", "exam", "tests"):
        v = obj.get(k)
        if not isinstance(v, list) or not all(isinstance(x, Mapping) and isinstance(x.get("name"), str)
                                              and isinstance(x.get("value"), str) for x in v):
            return None, f"'{k}' must be a list of {{name, value}}"
    if not obj["exam"] and not obj["tests"]:
        return None, "a case needs at least one examination finding or test result"
    dx = _norm(obj["diagnosis"])
    told = _norm(" ".join([obj["chief_complaint"], obj["history"], *obj["symptoms"]]))
    if len(dx) >= 4 and dx in told:
        return None, "the patient's own words give the diagnosis away"
    exam = {k: v for k, v in (("Vital_Signs", _pairs(obj["vitals"])), ("Examination", _pairs(obj["exam"]))) if v}
    record = {"id": case_id, "specialty": " ".join(obj["specialty"].split()).lower(), "OSCE_Examination": {
        "Objective_for_Doctor": "Assess the patient and reach a diagnosis.",
        "Patient_Actor": {"Demographics": " ".join(obj["demographics"].split()), "History": obj["history"].strip(),
                          "Symptoms": {"Primary_Symptom": obj["chief_complaint"].strip(),
                                       "Secondary_Symptoms": [s.strip() for s in obj["symptoms"] if s.strip()]},
                          "Past_Medical_History": obj["past_medical_history"].strip(),
                          "Social_History": obj["social_history"].strip()},
        "Physical_Examination_Findings": exam, "Test_Results": _pairs(obj["tests"]),
        "Correct_Diagnosis": obj["diagnosis"].strip(), "Generated": True}}
    case, errors = parse_record(json.loads(json.dumps(record)), "<generated>", 1)
    if case is None:
        return None, "; ".join(f"{e.field}: {e.message}" for e in errors)
    return record, ""


@dataclass
class Generator:
    llm: LLM
    sink: EventSink
    params: GenerateParams = field(default_factory=lambda: GenerateParams(temperature=0.7, max_tokens=900))
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    retries: int = 2  # asks again after an invalid reply
    prefix: str = "gen"

    def generate(self, spec: GenerateSpec) -> list[dict[str, Any]]:
        """The valid records (in order); raises :class:`GenerateError` when none is."""
        params = GenerateParams(temperature=self.params.temperature, max_tokens=self.params.max_tokens,
                                seed=self.params.seed, timeout_s=self.params.timeout_s,
                                response_schema=json.dumps(GENERATE_SCHEMA, sort_keys=True))
        system = render("generate_case", specialty_clause=f" in {spec.specialty}" if spec.specialty else "")
        out: list[dict[str, Any]] = []
        for i in range(1, spec.n + 1):
            cid = f"{self.prefix}-{i:03d}"
            avoid = [r["OSCE_Examination"]["Correct_Diagnosis"] for r in out][-10:]
            user = render("generate_case_user", index=i, total=spec.n,
                          avoid=f" Do not repeat these diagnoses: {'; '.join(avoid)}." if avoid else "")
            messages = [Message("system", system), Message("user", user)]
            problem = ""
            for attempt in range(1, self.retries + 2):
                reply = generate_logged(self.llm, messages, params, CallContext("generator", cid, attempt), self.sink,
                                        self.policy).text
                try:
                    record, problem = generated_record(json.loads(reply, strict=False), cid)
                except (ValueError, RecursionError) as e:
                    record, problem = None, f"not JSON ({str(e)[:80]})"
                if record is not None:
                    if spec.specialty and not record.get("specialty"):
                        record["specialty"] = spec.specialty.lower()
                    out.append(record)
                    self.sink.emit(CaseGenerated(index=i, case_id=cid, valid=True, attempts=attempt))
                    break
                messages = [*messages, Message("assistant", reply),
                            Message("user", f"(That case was invalid: {problem}. Reply with the corrected JSON object "
                                            "only.)")]
            else:
                self.sink.emit(CaseGenerated(index=i, case_id=cid, valid=False, attempts=self.retries + 1,
                                             problem=problem))
        if not out:
            raise GenerateError(f"no valid case in {spec.n} request(s); the log names each problem")
        return out


# -- the scripted generator's cases (medsim's own, short) -----------------------------------
_SCRIPTED = (
    {"specialty": "respiratory", "demographics": "67-year-old man", "chief_complaint": "Cough with yellow sputum and fever",
     "history": "He has had a cough for four days, now bringing up thick yellow phlegm, with fevers and sweats. "
                "Breathing in deeply hurts on the right side.",
     "symptoms": ["Shortness of breath on walking", "Pain on the right side when breathing in"],
     "past_medical_history": "Type 2 diabetes on metformin.", "social_history": "Ex-smoker; lives with his wife.",
     "vitals": [{"name": "Temperature", "value": "38.9 C"}, {"name": "Respiratory rate", "value": "26/min"}],
     "exam": [{"name": "Chest", "value": "Crackles and bronchial breathing at the right base"}],
     "tests": [{"name": "Chest X-ray", "value": "Right lower lobe consolidation"},
               {"name": "CRP", "value": "186 mg/L"}],
     "diagnosis": "Community-acquired pneumonia"},
    {"specialty": "endocrinology", "demographics": "19-year-old woman", "chief_complaint": "Vomiting and tummy pain",
     "history": "Two days of feeling very thirsty and passing a lot of urine, then vomiting since this morning. "
                "She feels drowsy.", "symptoms": ["Thirst", "Passing a lot of urine", "Weight loss"],
     "past_medical_history": "None.", "social_history": "Student; does not smoke.",
     "vitals": [{"name": "Heart rate", "value": "118/min"}],
     "exam": [{"name": "General", "value": "Dry mucous membranes, deep sighing breathing"}],
     "tests": [{"name": "Capillary glucose", "value": "28 mmol/L"}, {"name": "Blood ketones", "value": "5.2 mmol/L"},
               {"name": "Venous blood gas", "value": "pH 7.12, bicarbonate 9 mmol/L"}],
     "diagnosis": "Diabetic ketoacidosis"},
    {"specialty": "gastroenterology", "demographics": "24-year-old man", "chief_complaint": "Pain in the lower right tummy",
     "history": "The pain started around the belly button yesterday and moved to the lower right. He has no appetite.",
     "symptoms": ["Nausea", "Loss of appetite"], "past_medical_history": "None.",
     "social_history": "Works in an office.", "vitals": [{"name": "Temperature", "value": "37.9 C"}],
     "exam": [{"name": "Abdomen", "value": "Tender at McBurney's point with guarding"}],
     "tests": [{"name": "White cell count", "value": "14.2 x10^9/L"}],
     "diagnosis": "Acute appendicitis"},
)


def scripted_case(index: int, seed: int = 0) -> dict[str, Any]:
    return dict(_SCRIPTED[(index - 1 + seed) % len(_SCRIPTED)])
