"""A participant that plays a fixed script: tests, demonstrations, and a doctor whose
turns are known in advance. (The scripted *model* backend, ``agents.llm.scripted``,
plays roles through the LLM path instead.)"""
from __future__ import annotations

from typing import Sequence

from agents.participants.base import Observation, Turn
from agents.protocol import DoctorAction, parse_doctor_turn, say

__all__ = ["ScriptedParticipant"]


class ScriptedParticipant:
    """Hands out ``script`` in order; the last entry repeats. For the doctor, an entry is
    a :class:`DoctorAction` or marker text (``REQUEST TEST: CBC``) parsed as AgentClinic's
    protocol, the rule recorded."""

    def __init__(self, role: str, script: Sequence["str | DoctorAction"]):
        if not script:
            raise ValueError("a scripted participant needs at least one line")
        self.role = role
        self.script = list(script)
        self.i = 0

    def act(self, obs: Observation) -> Turn:
        item = self.script[min(self.i, len(self.script) - 1)]
        self.i += 1
        if self.role != "doctor":
            return Turn(text=str(item), source="scripted")
        action = item if isinstance(item, DoctorAction) else parse_doctor_turn(str(item))
        text = say(action) if isinstance(item, DoctorAction) else str(item).strip()
        return Turn(text=text, action=action, spoken=text, source="scripted")
