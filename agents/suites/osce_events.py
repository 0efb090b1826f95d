"""The OSCE encounter's own events. They go to the same event log as a consultation's
(header, ``case_started``, ``utterance``, ``llm_call``, ``consultation_ended``,
``scored``, ``case_finished`` are shared, see :mod:`agents.events`); these add what
only a treatment discussion has."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from agents.events import Event

__all__ = ["OsceStarted", "StopDecision", "RoundJudged"]


@dataclass(frozen=True)
class OsceStarted(Event):
    """The persona of the encounter (personality, gender, case: the patient's side) and
    what the doctor was told (the doctor's side)."""

    type: ClassVar[str] = "osce_started"
    case_id: str
    persona: dict[str, Any]
    doctor_brief: dict[str, Any]
    max_rounds: int


@dataclass(frozen=True)
class StopDecision(Event):
    """The stop detector's decision after the patient's reply: ``accepted``, ``left``
    (refused, left, or went for a second opinion) or ``continue``; ``rule`` says how
    (``marker``, ``phrase:<name>``, ``classifier``, ``classifier_unparsed``, ``none``)."""

    type: ClassVar[str] = "osce_stop"
    turn: int
    decision: str
    rule: str
    evidence: str


@dataclass(frozen=True)
class RoundJudged(Event):
    """The rubric judge's verdicts for one category after one round, over the
    conversation so far: criterion number (as text) -> met | not_met | not_relevant.
    ``method``: llm | skipped (every criterion of the category already met) | unjudged
    (the judge failed; the criteria keep their earlier state)."""

    type: ClassVar[str] = "osce_round"
    turn: int
    category: str
    verdicts: dict[str, str]
    method: str
    note: str = ""
