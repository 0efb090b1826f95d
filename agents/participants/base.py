"""The participant interface: what a participant is told -> its turn.

The consultation engine asks participants for turns (PettingZoo's agent selection:
the engine picks who acts, the participant only acts). LLM, scripted, replayed and
human participants implement :class:`Participant`; guards, corrective retries
and technician hints are wrappers around one (see ``agents.participants.wrappers``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.protocol import DoctorAction

__all__ = ["Observation", "Turn", "Participant", "RoleFailure"]


@dataclass(frozen=True)
class Observation:
    """What a participant is told on its turn."""

    turn: int
    text: str  # the message, as the participant reads it
    final: bool = False  # the doctor's last turn: a diagnosis is required
    order: str | None = None  # the technician: the examination or test that was ordered
    records: tuple[tuple[str, str], ...] = ()  # the technician: case records matching the order
    may_diagnose: bool = True  # the doctor: a diagnosis now would be accepted (minimum gathering met)
    images: tuple[str, ...] = ()  # images shown with the text (a vision reader's study)
    # when ``text`` is an instruction (a re-ask), the other side's message still being
    # answered: what an echo check compares the reply with
    answering: str | None = None


@dataclass(frozen=True)
class Turn:
    """A participant's turn. ``text`` is what it produced (a model's raw reply);
    ``spoken`` what is said aloud (the doctor's question, order or diagnosis), when it
    differs; ``action`` the doctor's decision (ask / test / diagnose); ``source`` who
    produced it: llm | scripted | replay | human | fallback."""

    text: str
    action: DoctorAction | None = None
    spoken: str | None = None
    source: str = "llm"

    @property
    def said(self) -> str:
        return (self.spoken if self.spoken is not None else self.text).strip()


@runtime_checkable
class Participant(Protocol):
    role: str

    def act(self, obs: Observation) -> Turn: ...


class RoleFailure(RuntimeError):
    """A role kept producing unusable replies after its retries: the consultation failed
    (this is not a wrong diagnosis)."""

    def __init__(self, role: str, problem: str, attempts: int, message: str | None = None):
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        super().__init__(message or f"{role} reply still {problem} after {tries}")
        self.role, self.problem, self.attempts = role, problem, attempts
