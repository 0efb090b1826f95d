"""Parsing doctor turns (AgentClinic markers and reasonable variants).

A doctor turn is routed to one of: the measurement technician (a test request), the end
of the case (a diagnosis) or the patient (anything else). Every parse returns the rule
that fired so the decision can be logged; fallbacks are explicit rules too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from agents.catalogue import CATALOGUE, OTHER

__all__ = ["DoctorAction", "parse_doctor_turn", "clean_marker_text", "DOCTOR_SCHEMA", "DIAGNOSE_SCHEMA", "doctor_schema", "gathering_schema",
           "parse_structured_turn", "say", "DOCTOR_STRATEGIES"]

# how the doctor plays its turns (protocol.doctor_strategy): "turns", the model decides each turn
# from the dialogue (agents.participants.llm.LLMDoctor); "focused", a running differential and the
# diagnosis from the summarised record (agents.participants.focused)
DOCTOR_STRATEGIES = ("turns", "focused")

# Markdown emphasis / code / heading characters that small models wrap markers in.
_MD = re.compile(r"[*`#>]+")

_DIAG_EXACT = re.compile(r"DIAGNOSIS READY\s*:")
_DIAG = re.compile(
    r"\b(?:diagnosis[\s_-]*ready|final[\s_-]+diagnosis|my[\s_-]+diagnosis[\s_-]+is)\b\s*[:\-–—]?",
    re.IGNORECASE,
)
_TEST_EXACT = re.compile(r"REQUEST TEST\s*:")
_TEST = re.compile(
    r"\b(?:request(?:ing|ed)?[\s_-]+(?:a[\s_-]+)?tests?|test[\s_-]+request(?:ed)?|order[\s_-]+tests?)\b\s*[:\-–—]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DoctorAction:
    kind: str  # "ask" | "test" | "diagnose"
    text: str  # question for the patient / test name / diagnosis
    rule: str  # parse rule that fired
    note: str = ""
    # a diagnosis with a ranked differential: (condition, confidence 0-1 or None), most
    # likely first, the first being ``text`` (empty: a differential of one, ``text``)
    differential: tuple[tuple[str, float | None], ...] = ()


_PAIRS = {"[": "]", "(": ")", '"': '"', "'": "'", "“": "”", "‘": "’", "{": "}", "<": ">"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}


def _balanced(text: str) -> bool:
    depth = {o: 0 for o in "[({"}
    for ch in text:
        if ch in depth:
            depth[ch] += 1
        elif ch in "])}":
            o = _CLOSERS[ch]
            depth[o] -= 1
            if depth[o] < 0:
                return False
    return all(v == 0 for v in depth.values())


def _unwrap(line: str) -> str:
    """Remove brackets and quotes around the whole payload ("[Gout]", "'Gout'") and a
    lone unmatched opener or closer at either end ("[Gout"), never a bracket that
    belongs to the text ("Interstitial lung disease (ILD)")."""
    while len(line) >= 2 and line[0] in _PAIRS and line[-1] == _PAIRS[line[0]] and _balanced(line[1:-1]):
        line = line[1:-1].strip()
    if line and line[0] in _PAIRS and _PAIRS[line[0]] not in line[1:]:
        line = line[1:].strip()
    if line and line[-1] in _CLOSERS and _CLOSERS[line[-1]] not in line[:-1]:
        line = line[:-1].strip()
    return line


def clean_marker_text(s: str) -> str:
    """The payload after a marker: first non-empty line, without brackets or quotes
    around it and without trailing punctuation; brackets inside it are kept."""
    for line in s.splitlines():
        line = line.strip()
        if line:
            break
    else:
        return ""
    for _ in range(2):
        line = re.sub(r"[\s.;,!:]+$", "", line.strip())
        line = _unwrap(line)
    return line.strip()


def parse_doctor_turn(text: str) -> DoctorAction:
    plain = _MD.sub("", text)
    # A diagnosis wins over a test request in the same turn (AgentClinic checks it first).
    for pattern, exact in ((_DIAG_EXACT, True), (_DIAG, False)):
        m = pattern.search(plain)
        if m:
            payload = clean_marker_text(plain[m.end():])
            if payload:
                return DoctorAction("diagnose", payload, "diagnosis_marker" if exact else "diagnosis_variant")
            return DoctorAction("ask", text.strip(), "empty_diagnosis_marker",
                                note="diagnosis marker with no diagnosis after it; sent to the patient")
    for pattern, exact in ((_TEST_EXACT, True), (_TEST, False)):
        m = pattern.search(plain)
        if m:
            payload = clean_marker_text(plain[m.end():])
            if payload:
                return DoctorAction("test", payload, "test_marker" if exact else "test_variant")
            return DoctorAction("test", plain.strip(), "empty_test_marker",
                                note="test marker with no test name; whole turn sent to the technician")
    if not text.strip():
        return DoctorAction("ask", "", "empty_turn", note="doctor produced no text")
    return DoctorAction("ask", text.strip(), "default_patient")


# The structured doctor turn: one of three bounded shapes (bounded schemas keep small
# models' JSON valid; free-form ones run to max_tokens and truncate). A test is chosen from
# the hospital's catalogue, or "other" with its name; a diagnosis is a short condition name.
_ASK = {"type": "object", "properties": {"action": {"type": "string", "enum": ["ask_patient"]},
                                         "text": {"type": "string", "minLength": 2, "maxLength": 160}},
        "required": ["action", "text"], "additionalProperties": False}
_ORDER = {"type": "object", "properties": {"action": {"type": "string", "enum": ["order_test"]},
                                           "test": {"type": "string", "enum": [*CATALOGUE, OTHER]},
                                           "text": {"type": "string", "maxLength": 80}},
          "required": ["action", "test"], "additionalProperties": False}
_DIAGNOSE = {"type": "object", "properties": {"action": {"type": "string", "enum": ["diagnose"]},
                                              "text": {"type": "string", "minLength": 2, "maxLength": 100}},
             "required": ["action", "text"], "additionalProperties": False}
DOCTOR_SCHEMA = {"anyOf": [_ASK, _ORDER, _DIAGNOSE]}


def doctor_schema(measurement: bool = True) -> dict:
    """The doctor's turn; without a technician there is nothing to order."""
    return DOCTOR_SCHEMA if measurement else {"anyOf": [_ASK, _DIAGNOSE]}


def gathering_schema(measurement: bool = True) -> dict:
    """A turn that gathers (a question, or an order when there is a technician): the
    doctor's turn without the diagnosis."""
    return {"anyOf": [_ASK, _ORDER]} if measurement else _ASK


# the last turn: only a diagnosis can be produced
DIAGNOSE_SCHEMA = _DIAGNOSE
_ACTIONS = {"ask_patient": "ask", "order_test": "test", "diagnose": "diagnose"}


def parse_structured_turn(text: str) -> DoctorAction:
    """A JSON doctor turn -> action. A test comes from ``test`` (its catalogue name, or for
    "other" the free ``text``); the older ``{"action", "text"}`` form is read too. Anything
    else falls back to the marker parser, and the fallback is named in the rule."""
    import json

    try:
        obj = json.loads(text, strict=False)  # a raw newline inside a string is still the model's text
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and obj.get("action") in _ACTIONS:
        kind = _ACTIONS[obj["action"]]
        test, free = obj.get("test"), obj.get("text")
        rule = "structured"
        if kind == "test" and isinstance(test, str) and test and test != OTHER:
            payload, rule = test, "structured_catalogue"
        elif isinstance(free, str):
            payload = free.strip()
            if kind == "test" and test == OTHER:
                rule = "structured_other_test"
        else:
            payload = ""
        if kind != "ask":
            payload = clean_marker_text(payload)
        if kind == "diagnose":  # the marker echoed inside the JSON: {"text": "DIAGNOSIS READY: X"}
            m = _DIAG.match(payload)
            if m and clean_marker_text(payload[m.end():]):
                payload, rule = clean_marker_text(payload[m.end():]), "structured_marker_echo"
        if payload:
            return DoctorAction(kind, payload, rule)
        return DoctorAction("ask", "", "structured_empty_text", note="structured turn with empty text")
    fb = parse_doctor_turn(text)
    return DoctorAction(fb.kind, fb.text, f"structured_fallback:{fb.rule}",
                        note="reply was not the structured JSON; parsed as free text")


def say(action: DoctorAction) -> str:
    """What the doctor says aloud for an action (dialogue panel, speech bubbles)."""
    if action.kind == "test":
        return f"I'd like to order: {action.text}."
    if action.kind == "diagnose":
        return f"My diagnosis is: {action.text}."
    return action.text
