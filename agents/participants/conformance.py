"""``check_participant``: what every participant owes the engine, checked the way the
engine asks (PettingZoo ships ``api_test`` with the package for the same reason).

A participant has a ``role`` (a registered role's name, or a suite's), and ``act(obs)``
returns a :class:`~agents.participants.base.Turn`: its ``text`` a string, its ``source``
one of the known sources; the doctor's turn carries an ``action`` (ask, test or diagnose)
or text the protocol parses; on a final turn the doctor diagnoses; and a failure is a
:class:`~agents.participants.base.RoleFailure` or an :class:`~agents.llm.base.LLMError`,
never another exception.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from agents.consultation import LAST_TURN
from agents.llm.base import LLMError
from agents.participants.base import Observation, RoleFailure, Turn
from agents.protocol import parse_doctor_turn

__all__ = ["check_participant", "ParticipantConformanceError", "SOURCES", "DOCTOR_KINDS"]

SOURCES = frozenset({"llm", "scripted", "replay", "human", "fallback", "synthesised"})
DOCTOR_KINDS = frozenset({"ask", "test", "diagnose"})


class ParticipantConformanceError(AssertionError):
    """What a participant got wrong (every problem found)."""


@dataclass
class ParticipantReport:
    role: str
    turns: list[Turn] = field(default_factory=list)


def check_participant(participant: object, observations: Sequence[Observation] | None = None, *,
                      final: bool = True) -> ParticipantReport:
    """Ask ``participant`` for turns as the engine does and check each.

    Args:
        participant: the participant (a model's, a script's, a wrapper around one).
        observations: what it is told, in order (default: an opening, a question, and,
            with ``final``, a last turn).
        final: the last observation is the doctor's final turn (a diagnosis is required).

    Returns:
        The turns it took. Raises :class:`ParticipantConformanceError` listing the problems.
    """
    problems: list[str] = []
    role = getattr(participant, "role", None)
    if not isinstance(role, str) or not role:
        raise ParticipantConformanceError(f"{participant!r}: no role (a participant has a role name)")
    if not callable(getattr(participant, "act", None)):
        raise ParticipantConformanceError(f"{role}: no act(observation) method")
    obs = list(observations or [Observation(turn=1, text="The patient has come in and sits down. Begin."),
                                Observation(turn=2, text="Patient: It hurts here since yesterday."),
                                *([Observation(turn=3, text=f"Patient: No.\n{LAST_TURN}", final=True)] if final else [])])
    report = ParticipantReport(role)
    for o in obs:
        try:
            turn = participant.act(o)  # type: ignore[attr-defined]
        except (RoleFailure, LLMError):
            continue  # the engine's way to fail: recorded, not a bug
        except Exception as e:  # noqa: BLE001 - the finding
            problems.append(f"turn {o.turn}: act raised {type(e).__name__}: {e} (only RoleFailure or LLMError)")
            continue
        if not isinstance(turn, Turn):
            problems.append(f"turn {o.turn}: act returned {type(turn).__name__}, not a Turn")
            continue
        report.turns.append(turn)
        if not isinstance(turn.text, str):
            problems.append(f"turn {o.turn}: text is {type(turn.text).__name__}, not a string")
        if turn.source not in SOURCES:
            problems.append(f"turn {o.turn}: source {turn.source!r} is none of {', '.join(sorted(SOURCES))}")
        if role == "doctor":
            action = turn.action if turn.action is not None else parse_doctor_turn(turn.text)
            if action.kind not in DOCTOR_KINDS:
                problems.append(f"turn {o.turn}: the doctor's action is {action.kind!r}")
            if o.final and action.kind != "diagnose":
                problems.append(f"turn {o.turn}: on the final turn the doctor must diagnose, it chose {action.kind}")
    if problems:
        raise ParticipantConformanceError(f"{role}: " + "; ".join(problems))
    return report
