"""The checker model: a bounded JSON verdict on what the pre-check left undecided.

One call per undecided utterance or reply, with a JSON schema (enums and booleans, a
short reason: a small model keeps it valid, as the diagnosis judge's ``judge_json``
prompt does), parsed leniently (a reply cut off after its first fields still counts). Its
calls are logged like the judge's (role ``judge``: the checker is the run's judge model).
A reply that cannot be read, or a model that fails, leaves the fields undecided.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Mapping, Sequence

from agents.cases.model import Case, flatten, format_facts
from agents.events import EventSink
from agents.fidelity.facts import case_facts
from agents.llm.base import LLM, CallContext, GenerateParams, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render

__all__ = ["PATIENT_SCHEMA", "TECHNICIAN_SCHEMA", "TECHNICIAN_MAP", "Checker", "parse_patient", "parse_technician",
           "patient_messages", "technician_messages"]

PATIENT_SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {"type": "string", "enum": ["supported", "contradicted", "unsupported", "no_claim"]},
        "voice": {"type": "string", "enum": ["first_person", "third_person", "caregiver", "not_caregiver"]},
        "leak": {"type": "boolean"},
        "overshare": {"type": "boolean"},
        "why": {"type": "string", "maxLength": 80},
    },
    "required": ["claims", "voice", "leak", "overshare", "why"],
    "additionalProperties": False,
}
TECHNICIAN_MAP = {"ordered_record": "from_case", "other_record": "wrong_record", "invented": "unmarked",
                  "no_result": "not_available"}
TECHNICIAN_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": list(TECHNICIAN_MAP)}, "why": {"type": "string", "maxLength": 80}},
    "required": ["verdict", "why"],
    "additionalProperties": False,
}
_MAX_CHARS = 1400  # of the facts and of the records in a prompt: a small model's context is short
_MIN_TOKENS = 90


def _clip(text: str, n: int = _MAX_CHARS) -> str:
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def patient_messages(case: Case, question: str, reply: str) -> list[Message]:
    """The checker's prompt for one patient utterance."""
    cf = case_facts(case)
    giver = f" The patient cannot speak for themselves: their {cf.caregiver} answers." if cf.caregiver else ""
    facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
    records = format_facts({**case.exam, **case.records()}, indent="- ") or "- none"
    return [Message("system", render("fidelity_patient")),
            Message("user", render("fidelity_patient_user", demographics=case.demographics, caregiver=giver,
                                   facts=_clip(format_facts(facts, indent="- ")), diagnosis=case.diagnosis,
                                   records=_clip(records, 900), question=question or "(nothing yet)", reply=reply))]


def technician_messages(case: Case, test: str, reply: str, expected: Sequence[str]) -> list[Message]:
    """The checker's prompt for one technician reply."""
    mine = {p: v for p, v in _paths(case)}
    exp = "\n".join(f"- {p}: {mine.get(p, '')}" for p in expected) or "- none (the case has no record of it)"
    others = "\n".join(f"- {p}: {v}" for p, v in _paths(case) if p not in expected) or "- none"
    return [Message("system", render("fidelity_technician")),
            Message("user", render("fidelity_technician_user", test=test, expected=_clip(exp, 900),
                                   others=_clip(others, 900), reply=reply))]


def _paths(case: Case) -> list[tuple[str, str]]:
    return [(" > ".join(p), t) for section in (case.records(), case.exam) for p, t in flatten(section)]


def _json_object(text: str) -> Mapping[str, Any] | None:
    t = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", t, re.DOTALL)
    if fenced:
        t = fenced.group(1)
    start = t.find("{")
    if start < 0:
        return None
    try:
        obj = json.loads(t[start:])
    except ValueError:
        end = t.rfind("}")
        try:
            obj = json.loads(t[start:end + 1]) if end > start else None
        except ValueError:
            obj = None
    return obj if isinstance(obj, dict) else None


def _field(text: str, obj: Mapping[str, Any] | None, name: str, kind: type) -> Any:
    if obj is not None and isinstance(obj.get(name), kind):
        return obj[name]
    if kind is bool:
        m = re.search(rf'"{name}"\s*:\s*(true|false)', text, re.I)
        return None if m is None else m.group(1).lower() == "true"
    m = re.search(rf'"{name}"\s*:\s*"([a-z_ ]+)"', text, re.I)
    return None if m is None else m.group(1).strip().lower().replace(" ", "_")


def parse_patient(text: str) -> dict[str, Any]:
    """The fields of a patient verdict that could be read (others are absent)."""
    obj = _json_object(text)
    out: dict[str, Any] = {}
    for name, kind in (("claims", str), ("voice", str), ("leak", bool), ("overshare", bool)):
        v = _field(text, obj, name, kind)
        allowed = PATIENT_SCHEMA["properties"][name].get("enum")
        if v is not None and (allowed is None or v in allowed):
            out[name] = v
    return out


def parse_technician(text: str) -> str | None:
    """A technician verdict (one of the pre-check's verdicts), or None."""
    v = _field(text, _json_object(text), "verdict", str)
    return TECHNICIAN_MAP.get(v) if isinstance(v, str) else None


class Checker:
    """The checker model (``llm``), with the run's judge settings."""

    def __init__(self, llm: LLM, params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=_MIN_TOKENS),
                 policy: RetryPolicy = RetryPolicy(), attempts: int = 2):
        self.llm, self.policy, self.attempts = llm, policy, attempts
        self.name = getattr(llm, "name", "?")
        self.params = params

    def _ask(self, messages: list[Message], schema: dict, case_id: str, turn: int, sink: EventSink,
             parse: Any, want: Sequence[str] = ()) -> Any:
        params = dataclasses.replace(self.params, temperature=0.0, max_tokens=max(self.params.max_tokens, _MIN_TOKENS),
                                     response_schema=json.dumps(schema, sort_keys=True))
        got: Any = None
        for _ in range(self.attempts):
            # logged as the judge's call, kept apart from its grading (another system prompt)
            out = generate_logged(self.llm, messages, params, CallContext("judge", case_id, turn, slot="checker"), sink,
                                  self.policy)
            got = parse(out.text)
            if got and (not want or all(w in got for w in want)):
                return got
            messages = messages + [Message("assistant", out.text),
                                   Message("user", "Please reply with the JSON object only.")]
        return got

    def patient(self, case: Case, question: str, reply: str, want: Sequence[str], *, turn: int,
                sink: EventSink) -> dict[str, Any]:
        """The fields ``want`` (claims, voice, leak, overshare) the model decided; an
        :class:`~agents.llm.base.LLMError` of the model is raised."""
        got = self._ask(patient_messages(case, question, reply), PATIENT_SCHEMA, case.id, turn, sink,
                        parse_patient, want) or {}
        return {k: got[k] for k in want if k in got}

    def technician(self, case: Case, test: str, reply: str, expected: Sequence[str], *, turn: int,
                   sink: EventSink) -> str | None:
        return self._ask(technician_messages(case, test, reply, expected), TECHNICIAN_SCHEMA, case.id, turn, sink,
                         parse_technician)

