"""The stop detector of a treatment discussion: after each patient reply, has the
patient accepted the treatment, left (refused, walked out, or gone for a second
opinion), or not yet decided?

Rules first, in order: the patient's explicit marker (``[DECISION: ACCEPT]`` /
``[DECISION: LEAVE]``, asked for by the patient's prompt, read in any usual spelling);
then plain phrases ("I'll go ahead with the operation", "I want a second opinion"), in
sentences that are not questions or hedged ("maybe", "if", "not sure"); then, when
configured, one small classifier call with a bounded JSON reply (an enum). Every
decision names the rule that made it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from agents.prompts import render

__all__ = ["StopVerdict", "split_marker", "detect_by_rules", "STOP_SCHEMA", "stop_messages_text", "parse_stop_reply",
           "DECISIONS"]

DECISIONS = ("accepted", "left", "continue")
STOP_SCHEMA = {"type": "object", "properties": {"decision": {"type": "string", "enum": list(DECISIONS)}},
               "required": ["decision"], "additionalProperties": False}

_MARKER = re.compile(r"[\[(]?\s*[*_]*\s*decision\s*[*_]*\s*[:=\-–]\s*[*_]*\s*"
                     r"(accept(?:ed|s)?|agree[ds]?|yes|leave|left|leaving|refuse[ds]?|decline[ds]?|no)\b\s*[*_]*\s*[\])]?",
                     re.IGNORECASE)
_MARKER_WORDS = {"accept": "accepted", "accepted": "accepted", "accepts": "accepted", "agree": "accepted",
                 "agreed": "accepted", "agrees": "accepted", "yes": "accepted"}
_HEDGE = re.compile(r"\b(if|maybe|perhaps|might|not sure|unsure|whether|unless|before i decide|should i|would i|"
                    r"could i|do i|don't know|do not know)\b", re.IGNORECASE)
_OP = r"(?:the |this |that )?(?:surgery|operation|procedure|treatment|lobectomy|vats|keyhole surgery|it)"
_LEFT = (
    ("second_opinion", re.compile(r"\b(?:i(?:'ll| will|'m going to| am going to| want to| would like to|'d like to| need to)"
                                  r"|let me) (?:get|seek|ask for|go for|have) (?:a )?second opinion", re.I)),
    ("refuses", re.compile(r"\bi (?:won't|will not|don't want to|do not want to|refuse to|am not going to|'m not going to)"
                           rf" (?:have|do|go ahead with|go through with|agree to) {_OP}", re.I)),
    ("refuses", re.compile(r"\bi (?:refuse|decline)\b", re.I)),
    ("leaves", re.compile(r"\bi(?:'m| am) (?:leaving|going home|done here|out of here)\b", re.I)),
)
_ACCEPTED = (
    ("agrees", re.compile(rf"\bi(?:'ll| will| want to|'d like to| would like to|'m ready to| am ready to| agree to|"
                          rf"'m going to| am going to) (?:have|do|go ahead with|go through with|proceed with|book|schedule|sign up for) "
                          rf"{_OP}", re.I)),
    ("agrees", re.compile(r"\b(?:let's|let us) (?:do it|go ahead|book it|schedule it|schedule the|book the)", re.I)),
    ("agrees", re.compile(r"\bi (?:accept|consent)\b|\bsign me up\b|\bi(?:'m| am) in\b", re.I)),
    # "I think it would be best to proceed with it" (the embedded patient's acceptance)
    ("agrees", re.compile(rf"\b(?:best|happy|ready|willing|want|like|decided) to (?:proceed|go ahead)(?: with {_OP})?\b",
                          re.I)),
)


@dataclass(frozen=True)
class StopVerdict:
    decision: str  # accepted | left | continue
    rule: str
    evidence: str


def split_marker(text: str) -> tuple[str, str | None, str]:
    """``(spoken text without the marker, decision or None, the marker as written)``;
    the last marker counts."""
    found = list(_MARKER.finditer(text))
    if not found:
        return text.strip(), None, ""
    m = found[-1]
    word = m.group(1).lower()
    decision = _MARKER_WORDS.get(word, "left")
    spoken = _MARKER.sub("", text).strip()
    return spoken, decision, m.group(0).strip()


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def detect_by_rules(text: str) -> StopVerdict | None:
    """The marker, then the phrases; None when no rule decides."""
    spoken, decision, marker = split_marker(text)
    if decision is not None:
        return StopVerdict(decision, "marker", marker)
    for s in _sentences(spoken):
        if s.endswith("?") or _HEDGE.search(s):
            continue
        for decision, rules in (("left", _LEFT), ("accepted", _ACCEPTED)):
            for name, rx in rules:
                if rx.search(s):
                    return StopVerdict(decision, f"phrase:{name}", s)
    return None


def stop_messages_text(reply: str) -> str:
    return render("osce_stop", reply=reply.replace('"', "'"))


def parse_stop_reply(text: str) -> str | None:
    """The classifier's reply -> a decision, or None when it cannot be read."""
    t = text.strip()
    m = re.search(r"\{.*\}", t, re.DOTALL)
    if m:
        try:
            obj = json.loads(m.group(0))
            v = obj.get("decision") if isinstance(obj, dict) else None
            if isinstance(v, str) and v.strip().lower() in DECISIONS:
                return v.strip().lower()
        except ValueError:
            pass
    m = re.search(r"\b(accepted|left|continue)\b", t, re.IGNORECASE)
    return m.group(1).lower() if m else None

