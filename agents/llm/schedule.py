"""Which consultation a shared model serves next: the one nearest its end.

In the live hospital two consultations (or more) share one in-process model, which runs
one call at a time. Served in arrival order, each waits for the other at every turn, and
the first diagnosis comes only after both have done most of their work. A
:class:`ModelGate` serves the waiting call of the consultation furthest along first: the
later turn, then the more calls made in that turn (the doctor's call comes before the
patient's reply to it), then the consultation that came first. It keeps the model for that
consultation for ``hold_s`` after each of its calls: the world shows its reply (a speech
bubble, a walk to the lab) before it asks again, and a call of another consultation
started in that gap would keep it waiting for that call's whole length. Past ``hold_s``
(a long walk, a person thinking) the others may run.

Batch runs do not use it: they schedule their own cases (``medsim bench --workers``).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from agents.llm import progress
from agents.llm.base import LLM, CallContext, GenerateParams, Message, Output

__all__ = ["ModelGate", "Gated"]


class ModelGate:
    """One model's calls, one at a time, the consultation furthest along first.

    ``clock``: seconds (``time.monotonic``; a test's fake). ``served``: (case, role, turn)
    of each call in the order it got the model. Waiters look again every ``poll_s`` (a fake
    clock moves without notifying them) and whenever a call ends."""

    def __init__(self, *, hold_s: float = 4.0, clock: Callable[[], float] = time.monotonic, poll_s: float = 0.05):
        if hold_s < 0:
            raise ValueError(f"hold_s must be >= 0, got {hold_s}")
        self.hold_s, self.clock, self.poll_s = hold_s, clock, poll_s
        self._cv = threading.Condition()
        self._busy = False
        self._waiting: dict[int, CallContext] = {}  # ticket -> the call waiting
        self._tickets = 0
        self._arrived: dict[str, int] = {}  # case -> the order it first asked
        self._last: dict[str, float] = {}  # case -> when its last call ended
        self._done: dict[str, tuple[int, int]] = {}  # case -> (its latest turn, calls served in that turn)
        self.served: list[tuple[str, str, int]] = []
        self.holder: CallContext | None = None  # the call that has the model now

    def _rank(self, case: str, turn: int) -> tuple[int, int, int]:
        """Higher goes first: a later turn, more calls made in it, then the earlier case."""
        last_turn, calls = self._done.get(case, (turn, 0))
        return turn, calls if last_turn == turn else 0, -self._arrived[case]

    def _free_for(self, ticket: int) -> bool:
        me = self._waiting[ticket]
        mine = self._rank(me.case_id, me.turn)
        waiting = {c.case_id for c in self._waiting.values()}
        if any(self._rank(c.case_id, c.turn) > mine for t, c in self._waiting.items() if t != ticket):
            return False
        now = self.clock()
        for case, at in self._last.items():  # a consultation between two of its calls
            if (case != me.case_id and case not in waiting and now - at < self.hold_s
                    and self._rank(case, self._done[case][0]) > mine):
                return False
        return True

    @contextmanager
    def turn(self, ctx: CallContext) -> Iterator[None]:
        """Held while one call runs; waits until it is this call's turn."""
        with self._cv:
            self._arrived.setdefault(ctx.case_id, len(self._arrived))
            self._tickets += 1
            ticket = self._tickets
            self._waiting[ticket] = ctx
            try:
                while self._busy or not self._free_for(ticket):
                    self._cv.wait(self.poll_s)
            finally:
                del self._waiting[ticket]
            self._busy, self.holder = True, ctx
            self.served.append((ctx.case_id, ctx.role, ctx.turn))
            last_turn, calls = self._done.get(ctx.case_id, (ctx.turn, 0))
            self._done[ctx.case_id] = (ctx.turn, calls + 1 if last_turn == ctx.turn else 1)
        try:
            yield
        finally:
            with self._cv:
                self._busy, self.holder = False, None
                self._last[ctx.case_id] = self.clock()
                self._cv.notify_all()

    def wrap(self, llm: LLM) -> "Gated":
        return Gated(llm, self)


class Gated:
    """An LLM whose calls pass through a :class:`ModelGate`."""

    def __init__(self, inner: LLM, gate: ModelGate):
        self.inner, self.gate = inner, gate
        self.name = getattr(inner, "name", type(inner).__name__)

    def __getattr__(self, item: str):  # what the run records of a backend (its path, its label)
        return getattr(self.inner, item)

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        progress.waiting(ctx, lambda: self.gate.holder)  # a watcher sees who has the model meanwhile
        try:
            with self.gate.turn(ctx):
                progress.granted()
                return self.inner.generate(messages, params, ctx)
        finally:
            progress.ended()
