"""A role a person can take over and hand back at any turn.

:class:`Switchable` holds the AI participant and a :class:`HumanParticipant` for the same
role and asks ``human_on()`` at each turn who acts. Every turn the person takes is also
written into the AI's conversation, as if the AI had said it, so that when the person hands
the role back the AI carries on from the same transcript. A person who hands back in the
middle of a turn (their IO raises :class:`Handback`) leaves that turn to the AI.
"""
from __future__ import annotations

import json
from typing import Callable

from agents.participants.base import Observation, Participant, Turn
from agents.participants.llm import LLMDoctor, LLMParticipant

__all__ = ["Handback", "Switchable", "base_llm"]


class Handback(Exception):
    """The person handed the role back to the AI while a turn was being asked."""


def base_llm(p: object) -> LLMParticipant | None:
    """The LLM participant inside wrappers (Hinted -> Guarded -> LLMParticipant)."""
    seen = 0
    while p is not None and not isinstance(p, LLMParticipant) and seen < 8:
        p = getattr(p, "inner", None)
        seen += 1
    return p if isinstance(p, LLMParticipant) else None


def _as_model_reply(llm: LLMParticipant, turn: Turn) -> str:
    """A person's turn in the words the role's model would have used."""
    a = turn.action
    if isinstance(llm, LLMDoctor) and a is not None:
        if llm.mode == "structured":
            action = {"ask": "ask_patient", "test": "order_test", "diagnose": "diagnose"}[a.kind]
            return json.dumps({"action": action, "text": a.text})
        return {"ask": a.text, "test": f"REQUEST TEST: {a.text}", "diagnose": f"DIAGNOSIS READY: {a.text}"}[a.kind]
    return turn.text


class Switchable:
    def __init__(self, role: str, ai: Participant, human: Participant, human_on: Callable[[], bool]):
        self.role, self.ai, self.human, self.human_on = role, ai, human, human_on

    def act(self, obs: Observation) -> Turn:
        if not self.human_on():
            return self.ai.act(obs)
        try:
            turn = self.human.act(obs)
        except Handback:
            return self.ai.act(obs)
        llm = base_llm(self.ai)
        if llm is not None:
            llm.commit(obs.text, _as_model_reply(llm, turn))
        return turn
