"""A question medsim's doctor says to the patient, in the second person.

The doctor's prompt speaks of "the patient" ("one short question for the patient", "The
patient is a 45-year-old man"), and the embedded model carries the phrase into what it
asks: in a 40-case bench of the default doctor 18 of its 75 questions to the patient spoke
of the patient in the third person ("What is the patient's name?", "How long has the
patient been experiencing wrist pain?") to the patient's face. A patient asked about "the
patient" may answer about someone else, and a reader of the transcript sees a doctor no
clinician would be. :func:`to_patient` turns such a question to "you", with the verb made
to agree ("has the patient" -> "have you", "the patient feels" -> "you feel", "the
patient's" -> "your"). It changes only "the patient" (and "this patient"): a question
about another person ("Does your mother have diabetes?") or already in the second person
is returned as it was.

Only medsim's own doctors' questions go through it (the structured doctor's and the
focused doctor's); a doctor under test from outside (AgentClinic's replica, a remote
agent) is left as it speaks.
"""
from __future__ import annotations

import re

from agents.patient_voice import base_form

__all__ = ["to_patient"]

_PATIENT = r"(?:the|this)\s+patient"
_AUX = {"does": "do", "has": "have", "is": "are", "was": "were", "doesn't": "don't", "hasn't": "haven't",
        "isn't": "aren't", "wasn't": "weren't"}
_MODAL = r"did|didn't|had|hadn't|can|can't|could|couldn't|will|won't|would|wouldn't|should|may|might|must"
_AUX_WORDS = "|".join(re.escape(a) for a in _AUX) + "|" + _MODAL
# "has the patient", "did the patient": a question's auxiliary before its subject
_INVERTED = re.compile(rf"\b({_AUX_WORDS})\s+{_PATIENT}\b(?!['’]s)", re.IGNORECASE)
_POSSESSIVE = re.compile(rf"\b{_PATIENT}['’]s\b", re.IGNORECASE)
_REFLEXIVE = re.compile(r"\b(?:himself|herself|themselves|themself)\b", re.IGNORECASE)  # in a question about the patient
# "the patient has", "the patient feels": the subject before its verb
_SUBJECT = re.compile(rf"\b{_PATIENT}\s+([a-z]+(?:n['’]t)?)\b", re.IGNORECASE)
_REST = re.compile(rf"\b{_PATIENT}\b", re.IGNORECASE)
_NOT_VERBS = {"is", "was", "has", "does", "this", "his", "always", "sometimes", "perhaps", "as", "us", "yes", "its",
              "plus", "thus", "less", "unless", "across", "towards", "afterwards", "besides", "whereas"}


def _case(old: str, new: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def to_patient(question: str) -> str:
    """``question`` with "the patient" as "you" (see the module's docstring)."""
    if not _REST.search(question):
        return question
    out = _INVERTED.sub(lambda m: _case(m.group(1), _AUX.get(m.group(1).lower(), m.group(1).lower())) + " you",
                        question)
    out = _POSSESSIVE.sub(lambda m: _case(m.group(0), "your"), out)
    out = _REFLEXIVE.sub(lambda m: _case(m.group(0), "yourself"), out)

    def subject(m: re.Match[str]) -> str:
        verb = m.group(1)
        low = verb.lower().replace("’", "'")
        if low in _AUX:
            new = _AUX[low]
        elif low.endswith("s") and low not in _NOT_VERBS and not low.endswith(("ss", "us", "ous", "ics")):
            new = base_form(low)
        else:
            new = verb
        return _case(m.group(0), "you") + " " + new

    out = _SUBJECT.sub(subject, out)
    return _REST.sub(lambda m: _case(m.group(0), "you"), out)
