"""A participant that replays its recorded turns from an event log: what it said, in
order, and for the doctor the recorded routing of each turn. Used where no model calls
were recorded for a role (a human's turns); a turn asked for out of the recorded order
is a divergence, reported as a non-transient backend error."""
from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Mapping

from agents.llm.base import LLMError
from agents.participants.base import Observation, Turn
from agents.protocol import DoctorAction

__all__ = ["ReplayedParticipant", "recorded_turns"]

_KIND = {"patient": "ask", "diagnosis": "diagnose"}  # any other route: the staff role an order went to


def recorded_turns(events: Iterable[Mapping[str, Any]], role: str) -> list[tuple[int, Turn]]:
    """(turn number, Turn) for each utterance ``role`` made, with the doctor's route."""
    routes = {}
    out: list[tuple[int, Turn]] = []
    evs = list(events)
    for e in evs:
        if e.get("type") == "route":
            routes[e["turn"]] = e
    for e in evs:
        if e.get("type") != "utterance" or e.get("speaker") != role:
            continue
        src = e.get("source") or "llm"
        if role == "doctor":
            r = routes.get(e["turn"])
            if r is None:
                raise LLMError(f"log has no routing for the doctor's turn {e['turn']}", backend="replay", transient=False)
            action = DoctorAction(_KIND.get(r["route"], "test"), r["extracted"], r["rule"], r.get("note", ""))
            out.append((e["turn"], Turn(text=e["text"], action=action, spoken=e["text"], source=src)))
        else:
            out.append((e["turn"], Turn(text=e["text"], source=src)))
    return out


class ReplayedParticipant:
    """``sources``: replay only the turns these produced (e.g. ("human",) where the AI's
    turns of the same role replay from its recorded model calls)."""

    def __init__(self, role: str, events: Iterable[Mapping[str, Any]], *, sources: tuple[str, ...] | None = None):
        self.role = role
        self._turns = deque(t for t in recorded_turns(events, role) if sources is None or t[1].source in sources)

    def act(self, obs: Observation) -> Turn:
        if not self._turns:
            raise LLMError(f"no recorded {self.role} turn left (turn {obs.turn})", backend="replay", transient=False)
        turn_no, turn = self._turns.popleft()
        if turn_no != obs.turn:
            raise LLMError(f"replay diverged: the log has the {self.role}'s next turn at {turn_no}, asked at {obs.turn}",
                           backend="replay", transient=False)
        return turn
