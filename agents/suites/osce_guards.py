"""Guards for the OSCE encounter: the consultation's detectors (:mod:`agents.guards`,
applied by :class:`agents.participants.wrappers.Guarded`) plus three checks a treatment
discussion needs, and corrections worded for it.

On the embedded 1.5B model a real session looped: doctor and patient repeated
near-identical turns for five rounds, and the patient broke role (spoke as the doctor,
wrote "Doctor:" lines, answered for both sides). ``check_reply`` catches an empty reply,
a refusal ("as an AI"), a speaker label at a line's start and an exact repeat; the
checks here add

- ``loop`` for a *near*-duplicate of one of the role's own earlier turns (a reply that
  carries a decision marker is let through: it ends the encounter, so it cannot loop);
- ``echo`` for a reply that is (nearly) the other side's last message;
- ``role_break`` for the other side's label inside a line ("... I see. Doctor: So ...")
  and a patient who speaks as the doctor ("As your surgeon, ...").

It also reads ``check_reply`` for a patient who is discussing a treatment, not giving a
history (:func:`osce_detect`): "I can't do that" or "I can't answer that yet" is the
patient declining, in character, not a model's refusal, and "Can you tell me more about
your experience with this operation?" is the patient's question, not the doctor's line.
Without this a refusal of the treatment would be re-asked until it turned into something
else, which would bias the outcome.

A flagged reply is recorded (``reply_rejected``) and the role asked again with the
correction below, another seed and a hotter sample, a bounded number of times; then
:class:`agents.participants.base.RoleFailure` ends the encounter as *failed*.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Callable, Sequence

from agents.guards import check_reply, normalise_line
from agents.participants.base import Observation
from agents.suites.osce_stop import split_marker

__all__ = ["OSCE_CORRECTIONS", "osce_detect", "near_repeat", "echo_of_other", "speaks_for_other", "osce_checks",
           "NEAR"]

NEAR = 0.9  # SequenceMatcher ratio of two normalised turns from which they count as the same
_MIN_CHARS = 40  # shorter turns ("I see. Go on.") may legitimately come back

OSCE_CORRECTIONS = {
    "doctor": {
        "empty": "(Say your next words to the patient, in one to four sentences.)",
        "refusal": "(You are the doctor in this conversation. Go on talking with the patient about the recommended "
                   "treatment.)",
        "role_break": "(Speak only as the doctor. Do not write the patient's words.)",
        "echo": "(Do not repeat the patient's words. Answer them in your own words.)",
        "loop": "(You already said that. Say something new: answer the patient's last words, or raise another point "
                "about the treatment.)",
    },
    "patient": {
        "empty": "(Answer the doctor in one to four sentences, in character.)",
        "refusal": "(Stay in character: you are the patient. Answer the doctor in the first person.)",
        "role_break": "(Speak only as the patient, in the first person. Do not write the doctor's lines.)",
        "echo": "(Do not repeat the doctor's words. Answer them in your own words, as the patient.)",
        "loop": "(You already said that. React to what the doctor just said, in different words.)",
    },
}

_OTHER = {"doctor": r"patient", "patient": r"doctor|dr\.?(?:\s+\w+)?"}
_AS_DOCTOR = re.compile(r"\bas your (?:doctor|surgeon|physician)\b"
                        # a clinician's service lines in the patient's mouth (the embedded patient,
                        # after the doctor's "You're welcome! ... feel free to ask.")
                        r"|\bfeel free to (?:ask|reach out|contact)\b|\bi(?:'m| am) glad i could help\b"
                        r"|\bhow (?:can|may) i (?:help|assist) you\b", re.IGNORECASE)
_NOTES = re.compile(r"^\s*\(.*\)\s*$")  # instructions in parentheses (the last round's note) are not words


# what check_reply flags that a patient in a treatment discussion says in character
_IN_CHARACTER = {
    # not "I can't help (with that)": that is how a model refuses
    "refusal": re.compile(r"\bi (?:can'?t|cannot|am unable to|'m unable to) (?:do that|answer)\b", re.IGNORECASE),
    "role_break": re.compile(r"^\s*can you tell me more about your\b", re.IGNORECASE),
}


def osce_detect(role: str, text: str, previous: Sequence[str], incoming: str) -> str | None:
    """:func:`agents.guards.check_reply`, with the patient's in-character words (above)
    taken out before the reply is checked again; a model's refusal ("as an AI", "I can't
    assist with that") or a speaker label is still caught."""
    problem = check_reply(role, text, previous, incoming)
    rx = _IN_CHARACTER.get(problem or "") if role == "patient" else None
    if rx is None or not rx.search(text):
        return problem
    rest = rx.sub(" ", text)
    return check_reply(role, rest, previous, incoming) if normalise_line(rest) else None


def _ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


_CONTRACTIONS = [(re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"\bwon'?t\b", "will not"), (r"\bcan'?t\b", "can not"), (r"\bcannot\b", "can not"), (r"n'?t\b", " not"),
    (r"\bi'?m\b", "i am"), (r"'re\b", " are"), (r"'s\b", " is"), (r"'ve\b", " have"), (r"'ll\b", " will"),
    (r"'d\b", " would"))]


def _expand(text: str) -> str:
    """Contractions written out, so "You're welcome" and "You are welcome" compare equal
    (the embedded patient echoed the doctor's line with its contraction undone)."""
    text = text.replace("\u2019", "'")
    for rx, repl in _CONTRACTIONS:
        text = rx.sub(repl, text)
    return text


def _spoken(text: str) -> str:
    return normalise_line(_expand(split_marker(text)[0]))


def near_repeat(previous: Callable[[], Sequence[str]], *, threshold: float = NEAR,
                min_chars: int = _MIN_CHARS) -> Callable[[str, Observation], str | None]:
    """``loop`` when the reply is a near-duplicate of one of ``previous()`` (the role's
    accepted replies)."""

    def check(reply: str, obs: Observation) -> str | None:
        if split_marker(reply)[1] is not None:
            return None
        norm = _spoken(reply)
        if len(norm) < min_chars:
            return None
        return "loop" if any(_ratio(norm, _spoken(p)) >= threshold for p in previous()) else None
    return check


def _other_words(text: str) -> str:
    """The other side's words in an observation: notes and the speaker label taken out."""
    lines = [ln for ln in text.splitlines() if not _NOTES.match(ln)]
    t = "\n".join(lines).strip()
    return re.sub(r"^\s*(?:doctor|patient)\s*:\s*", "", t, flags=re.IGNORECASE)


def echo_of_other(reply: str, obs: Observation, *, threshold: float = NEAR) -> str | None:
    """``echo`` when the reply repeats the other side's whole last message (nearly or
    inside a longer reply); quoting a phrase of it is fine."""
    other = normalise_line(_expand(_other_words(obs.answering or obs.text)))
    norm = _spoken(reply)
    if len(other) <= 30 or len(norm) <= 20:
        return None
    return "echo" if other in norm or _ratio(norm, other) >= threshold else None


def speaks_for_other(role: str) -> Callable[[str, Observation], str | None]:
    """``role_break`` for the other side's label after a sentence ("Okay. Doctor: ...")
    or, for the patient, speaking as the doctor."""
    label = re.compile(rf"[.!?…]\s+\**\s*(?:{_OTHER.get(role, '(?!)')})\s*\**\s*:", re.IGNORECASE)

    def check(reply: str, obs: Observation) -> str | None:
        if label.search(reply) or (role == "patient" and _AS_DOCTOR.search(reply)):
            return "role_break"
        return None
    return check


def osce_checks(role: str, previous: Callable[[], Sequence[str]]) -> tuple[Callable[[str, Observation], str | None], ...]:
    """The checks :class:`~agents.participants.wrappers.Guarded` runs after
    ``check_reply`` for an OSCE ``role``."""
    return (speaks_for_other(role), echo_of_other, near_repeat(previous))
