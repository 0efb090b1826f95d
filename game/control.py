"""A person in the world: which agent they control, and the questions the world is
waiting for them to answer. No pygame: the view (or a test) reads :meth:`PlayerIO.pending`
and answers with :meth:`PlayerIO.answer`.

Model calls run on worker threads (``game.runner.ThreadRunner``); a person's turn is one
more such call, which blocks its worker thread until the person answers, hands the agent
back (the AI then takes that turn) or the shift closes.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from agents.participants.base import Observation
from agents.participants.human import InputEnded
from agents.participants.switch import Handback
from agents.protocol import DoctorAction

__all__ = ["Request", "PlayerIO", "CaseIO"]


@dataclass
class Request:
    """The world waits for the person: the doctor's next action (``kind`` "doctor") or
    a patient's / technician's answer (``kind`` "reply")."""

    id: int
    case_id: str
    role: str
    kind: str
    obs: Observation
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _value: Any = field(default=None, repr=False)
    _error: BaseException | None = field(default=None, repr=False)


class PlayerIO:
    """Requests from every consultation, answered by the person from the view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Request] = {}
        self._closed = False

    def for_case(self, case_id: str) -> "CaseIO":
        return CaseIO(self, case_id)

    # -- the world's side (worker threads) ------------------------------------------
    def ask(self, case_id: str, role: str, kind: str, obs: Observation) -> Any:
        with self._lock:
            if self._closed:
                raise InputEnded()
            req = Request(next(self._ids), case_id, role, kind, obs)
            self._pending[req.id] = req
        req._done.wait()
        if req._error is not None:
            raise req._error
        return req._value

    # -- the person's side (the view, tests) -----------------------------------------
    def pending(self, case_id: str | None = None, role: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self._pending.values()
                    if (case_id is None or r.case_id == case_id) and (role is None or r.role == role)]

    def answer(self, request_id: int, value: DoctorAction | str) -> None:
        self._finish(request_id, value=value)

    def hand_back(self, case_id: str | None = None, role: str | None = None) -> None:
        """The AI takes over the waiting turns (of one case and role, or all)."""
        for r in self.pending(case_id, role):
            self._finish(r.id, error=Handback())

    def close(self) -> None:
        """The window closed: every waiting turn ends the person's part."""
        with self._lock:
            self._closed = True
            reqs = list(self._pending.values())
        for r in reqs:
            self._finish(r.id, error=InputEnded())

    def _finish(self, request_id: int, *, value: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            req = self._pending.pop(request_id, None)
        if req is None:
            return
        req._value, req._error = value, error
        req._done.set()


class CaseIO:
    """The :class:`~agents.participants.human.HumanIO` of one consultation."""

    def __init__(self, player: PlayerIO, case_id: str):
        self.player, self.case_id = player, case_id

    def doctor_action(self, obs: Observation) -> DoctorAction:
        return self.player.ask(self.case_id, "doctor", "doctor", obs)

    def reply(self, role: str, obs: Observation) -> str:
        return self.player.ask(self.case_id, role, "reply", obs)
