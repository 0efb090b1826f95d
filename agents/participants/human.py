"""A person as a participant. The engine sees one more participant; how the person is
asked (a terminal, the game's text box and menus) is an injected :class:`HumanIO`, so
the same participant serves ``medsim consult --as`` and ``medsim play --as``.

Nothing a person types is parsed as a protocol marker: the doctor's action comes from
the IO's menu (ask, order a test, diagnose), and typed text is only ever the words of
that action. Typed text is cleaned (control characters removed, whitespace collapsed,
length capped)."""
from __future__ import annotations

import re
import unicodedata
from typing import Protocol

from agents.participants.base import Observation, RoleFailure, Turn
from agents.protocol import DoctorAction, say

__all__ = ["HumanIO", "HumanParticipant", "InputEnded", "clean_typed", "MAX_TYPED", "ask", "order", "diagnose"]

MAX_TYPED = 500  # characters kept of one typed line


class InputEnded(Exception):
    """The person stopped answering (end of input, window closed)."""


class HumanIO(Protocol):
    def doctor_action(self, obs: Observation) -> DoctorAction:
        """The doctor's next action; on ``obs.final`` it must be a diagnosis."""
        ...

    def reply(self, role: str, obs: Observation) -> str:
        """A patient's (or technician's) typed answer to ``obs``."""
        ...


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clean_typed(text: str, max_len: int = MAX_TYPED) -> str:
    """What a person typed, fit for a transcript: NFC, no control or direction-override
    characters, single spaces, at most ``max_len`` characters."""
    t = unicodedata.normalize("NFC", text)
    t = "".join(ch for ch in t if not (0xD800 <= ord(ch) <= 0xDFFF))  # lone surrogates
    t = _CONTROL.sub(" ", t)
    t = " ".join(t.split())
    return t[:max_len].rstrip()


def ask(question: str) -> DoctorAction:
    return DoctorAction("ask", clean_typed(question), "human_question")


def order(test: str) -> DoctorAction:
    return DoctorAction("test", clean_typed(test), "human_menu")


def diagnose(diagnosis: str) -> DoctorAction:
    return DoctorAction("diagnose", clean_typed(diagnosis), "human_diagnosis")


class HumanParticipant:
    def __init__(self, role: str, io: HumanIO):
        self.role, self.io = role, io

    def act(self, obs: Observation) -> Turn:
        try:
            if self.role == "doctor":
                action = self.io.doctor_action(obs)
                if obs.final and action.kind != "diagnose":
                    raise RoleFailure("doctor", "no diagnosis on the last turn", 1,
                                      "the person playing the doctor gave no diagnosis on the last turn")
                if not action.text:
                    raise RoleFailure("doctor", f"empty {action.kind}", 1,
                                      f"the person playing the doctor gave an empty {action.kind}")
                text = say(action)
                return Turn(text=text, action=action, spoken=text, source="human")
            text = clean_typed(self.io.reply(self.role, obs)) or "(says nothing)"
            return Turn(text=text, source="human")
        except InputEnded:
            raise RoleFailure(self.role, "input ended", 1,
                              f"the person playing the {self.role} stopped answering (the input ended)") from None
