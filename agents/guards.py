"""Detectors for the ways small models break a consultation: refusals, role breaks, loops,
echoes of the instruction, empty turns. Each is a pure function of the reply and what the
role said before; :class:`agents.participants.wrappers.Guarded` asks again with a corrective
instruction after a flagged reply and records every rejection as an event."""
from __future__ import annotations

import re
from typing import Sequence

from agents.roles import STAFF, role_defaults

__all__ = ["check_reply", "CORRECTIONS", "corrections_for", "normalise_line"]

_REFUSAL = re.compile(
    r"(i'?m sorry,? but i (?:can'?t|cannot)|i (?:can'?t|cannot|am unable to|'m unable to) (?:assist|help|provide|answer|do that)"
    r"|as an ai\b|i am an ai\b|i'?m an ai\b|as a language model|i'?m not able to (?:assist|help)|i can'?t (?:role-?play|pretend))",
    re.IGNORECASE,
)
_SPEAKER = re.compile(r"(?:^|\n)\s*\**\s*(doctor|dr\.?(?:\s+\w+)?|patient|technician|nurse)\s*\**\s*:", re.IGNORECASE)


# a patient talking as the one who helps ("I'm here to help you with your Crohn disease")
_AS_CARER = re.compile(r"\b(?:i'?m|i\s+am)\s+here\s+to\s+(?:help|assist)\b|\bhow\s+(?:can|may)\s+i\s+(?:help|assist)\s+you\b|"
                       r"\bi\s+(?:can|will)\s+help\s+you\s+with\s+your\b", re.IGNORECASE)


# the grounded patient's instruction said back ("You have not noticed any information on ..."),
# or spoken of: the facts it is given with each question are its memory, not a document it
# reads from ("The fact given brings me in today: ...", "According to the information provided, ...")
_PATIENT_ECHO = re.compile(r"^\W*you\s+(?:have\s+not|haven'?t|do\s+not|don'?t)\s+(?:noticed|know)\b|\bsay\s+(?:that\s+)?you\s+"
                           r"(?:have\s+not|haven'?t|do\s+not|don'?t)\b|\bwhat\s+you\s+know\s+that\s+answers\b|"
                           r"\b(?:the|these|those|my)\s+(?:facts?|information|details|notes|records?)\s+(?:i\s+(?:was|am|have\s+been)\s+)?"
                           r"(?:given|provided|listed|supplied|above|below|you\s+gave)\b|"
                           r"\b(?:according\s+to|based\s+on|as\s+(?:stated|given|listed)\s+in)\s+the\s+"
                           r"(?:facts?|information|details|notes|records?)\b",
                           re.IGNORECASE)

# a patient (or a parent) speaking of the patient as the doctor would, to the family ("Your baby
# has been very fussy", "your son's fever"): the patient's side says "my", never "your"
_AS_OTHER_SIDE = re.compile(r"\byour\s+(?:baby|babies|child|children|son|daughter|infant|newborn|toddler|boy|girl|kid|"
                            r"little\s+one)\b", re.IGNORECASE)


# a patient describing itself as "you", its instruction's words ("You are a 55-year-old male")
# said back as its own: "You are a smoker, drink alcohol socially, and work in construction"
_SELF_AS_YOU = re.compile(r"^\W*you\s*(?:(?:are|'re|were)\s+(?:a|an|not|\d+)|smoke|drink|work|take|deny|denied|report|"
                          r"reported)\b", re.IGNORECASE)


def _self_as_you(text: str) -> bool:
    """A statement (not a question) that opens with the patient as "you" (:data:`_SELF_AS_YOU`)."""
    return any(_SELF_AS_YOU.match(s) and not s.rstrip().endswith("?") for s in re.findall(r"[^.!?;]+[.!?;]*", text))


def normalise_line(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def check_reply(role: str, text: str, previous: Sequence[str], incoming: str) -> str | None:
    """The problem with ``role``'s reply, or None. ``previous`` are the role's accepted
    replies so far; ``incoming`` is the message it answered."""
    t = text.strip()
    if not normalise_line(t):
        return "empty"
    if _REFUSAL.search(t):
        return "refusal"
    speakers = {m.group(1).lower().split()[0].rstrip(".") for m in _SPEAKER.finditer(t)}
    own = set(role_defaults(role).speaker_words) | ({"dr"} if role == "doctor" else set())
    if speakers - own:
        return "role_break"
    norm = normalise_line(t)
    if role == "doctor":
        inc = normalise_line(incoming)
        # the doctor repeating the message it was given (instruction or the patient's words)
        if len(inc) > 30 and (inc in norm or norm in inc) and len(norm) > 20:
            return "echo"
        if "not yet you have asked" in norm or "this is your last turn" in norm:
            return "echo"
    if role == "patient":
        # the patient repeating the doctor's question, or the instruction it was given
        question = normalise_line(incoming.split("\n", 1)[0])
        if (len(question) > 15 and norm.startswith(question)) or _PATIENT_ECHO.search(t):
            return "echo"
        if _self_as_you(t):
            return "second_person"
    if role == "patient" and (re.match(r"^\s*(what brings you|how can i help|can you tell me more about your)", t, re.IGNORECASE)
                              or _AS_CARER.search(t) or _AS_OTHER_SIDE.search(t)):
        return "role_break"
    if role == "doctor" and (norm.startswith("action diagnose") or "diagnosis ready" in norm):
        # restating one's diagnosis (told it came too early, the doctor gives it again) is
        # consistency, not a loop: the consultation decides when a diagnosis is taken
        return None
    # a repeated line: the doctor's questions must move on; a patient may say "no" twice
    # but not the same long answer; the technician legitimately repeats "not available"
    min_len = {"doctor": 12, "patient": 40}.get(role)
    if min_len is not None and len(norm) > min_len and any(norm == normalise_line(p) for p in previous):
        return "loop"
    return None


CORRECTIONS = {
    "doctor": {
        "empty": "(Reply with your next step: one question, one test, or your diagnosis.)",
        "refusal": "(You are the doctor in this consultation. Continue: ask a question, order a test or give your diagnosis.)",
        "role_break": "(Speak only as the doctor. Do not write the patient's or technician's words.)",
        "echo": "(Do not repeat that message. Ask the patient a new question or order a test.)",
        "loop": "(You already said that. Ask something new or order a different test.)",
        "not_a_condition": "(Give the name of one condition, as a textbook names it: not a sentence, not a list of "
                           "symptoms or possibilities.)",
    },
    "patient": {
        "empty": "(Answer the doctor in one or two sentences.)",
        "refusal": "(Stay in character: you are the patient. Answer the doctor's question in the first person, from what you know about yourself.)",
        "role_break": "(Speak only as the patient, in the first person. Do not write the doctor's lines and do not ask the doctor questions.)",
        "loop": "(You already said that. Answer this question with different details from what you know.)",
        "echo": "(Answer the question in your own words.)",
        "second_person": '(Speak as yourself: say "I" and "my" about yourself, never "you".)',
    },
    "measurement": {
        "empty": "(Reply with the result, as RESULTS: ...)",
        "refusal": "(You are the technician. Report the result from the records, as RESULTS: ...)",
        "role_break": "(Reply only as the technician, with the result.)",
        "loop": "(Report the result of this order.)",
        "echo": "(Report the result of this order.)",
        "ignored_records": "(The records above answer this order: report them, as RESULTS: ...)",
    },
}


def corrections_for(role: str) -> dict[str, str]:
    """What the guards tell ``role`` for each problem: its registration's own, else the
    table above for its name, else (another staff role: a nurse) the technician's, naming
    the role."""
    r = role_defaults(role)
    if r.corrections is not None:
        return dict(r.corrections)
    if role in CORRECTIONS:
        return CORRECTIONS[role]
    if r.kind == STAFF:
        return {k: v.replace("technician", r.label.lower()) for k, v in CORRECTIONS["measurement"].items()}
    return {}
