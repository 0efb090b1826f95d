"""The AutoMedic protocol's own events. They go to the same log as a consultation's
(``utterance``, ``route``, ``llm_call``, ``consultation_ended``, ``scored`` are shared, see
:mod:`agents.events`); these add the end of the dialogue, the multiple-choice answers
(after the dialogue and the static baseline) and the patient's empathy rating, all
before ``consultation_ended`` so the scorers (``agents.suites.care``) read them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.events import Event

__all__ = ["DialogueEnded", "McqAnswered", "EmpathyRated"]


@dataclass(frozen=True)
class DialogueEnded(Event):
    """The doctor ended the dialogue (``</end>``; ``rule`` how it was read) or the turn
    limit did (``rule`` ``turn_limit``)."""

    type: ClassVar[str] = "automedic_dialogue_ended"
    turn: int
    rule: str


@dataclass(frozen=True)
class McqAnswered(Event):
    """The doctor's answer to the multiple-choice question: ``mode`` conversation (after
    the dialogue, the question without the vignette) or static (the whole question).
    ``letter`` is None when the reply named no option (``rule`` not_in_options)."""

    type: ClassVar[str] = "automedic_answer"
    turn: int
    mode: str
    raw: str
    letter: str | None
    rule: str
    answer_letter: str


@dataclass(frozen=True)
class EmpathyRated(Event):
    """The patient's 1-5 rating of the doctor's empathy (None: the reply held no rating)."""

    type: ClassVar[str] = "automedic_empathy"
    turn: int
    rating: int | None
    rule: str
    raw: str
