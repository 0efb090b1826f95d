"""What a model call in progress is doing, for someone watching it (the live hospital).

A call of the embedded model on the one core the window leaves it takes seconds, and a
first call (a whole system prompt to read) or a judge's 15-40 s; watched with nothing but
"is thinking", the hospital looks frozen. A :class:`CallWatch` follows the model calls
made under it, in the thread that makes them, and another thread (the world's) reads it:

- ``waiting``: the call is in line for a model another call holds (``holder()`` names it);
- ``reading``: the model evaluates the prompt tokens its cache does not hold (``done`` of
  ``total``);
- ``writing``: it generates (``tokens`` so far).

``calls`` counts the calls made under the watch (a guard that asks again makes a second).
Backends report through :func:`waiting`, :func:`reading` and :func:`writing`, which do
nothing unless the calling thread runs under :func:`watched`: batch runs pay nothing.
Only counts are published, never text: a reply a guard will refuse is never shown.
"""
from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable

from agents.llm.base import CallContext

__all__ = ["CallWatch", "watched", "watching", "waiting", "running", "granted", "reading", "writing", "ended"]


class CallWatch:
    """One thread's model calls as they go. Written by that thread, read by others: each
    field is replaced whole, and :meth:`snapshot` reads them together."""

    def __init__(self) -> None:
        # None (no call), "waiting" (in line for the model), "granted" (got it), "reading", "writing"
        self.state: str | None = None
        self.role: str | None = None
        self.calls = 0
        self.done = 0
        self.total = 0
        self.tokens = 0
        self._holder: Callable[[], CallContext | None] = lambda: None

    def snapshot(self) -> dict[str, Any]:
        return {"state": self.state, "role": self.role, "calls": self.calls, "done": self.done,
                "total": self.total, "tokens": self.tokens,
                "holder": self._holder() if self.state == "waiting" else None}


_current: ContextVar[CallWatch | None] = ContextVar("medsim_call_watch", default=None)


def watched(watch: CallWatch, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` made to run under ``watch`` (in whatever thread runs it)."""
    def run() -> Any:
        watch.calls, watch.state = 0, None
        token = _current.set(watch)
        try:
            return fn()
        finally:
            _current.reset(token)
            watch.state = None
    return run


def watching() -> CallWatch | None:
    """The watch of the calling thread's calls, if one is set."""
    return _current.get()


def waiting(ctx: CallContext, holder: Callable[[], CallContext | None]) -> None:
    """A call of ``ctx.role`` is in line for a model; ``holder()``: the call that has it now."""
    w = _current.get()
    if w is not None:
        w._holder, w.role = holder, ctx.role
        w.state = "waiting"


def granted() -> None:
    """The call in line got its model (its backend may say more: :func:`running`)."""
    w = _current.get()
    if w is not None and w.state == "waiting":
        w.state = "granted"


def running(ctx: CallContext) -> None:
    """A call of ``ctx.role`` has the model: it starts reading its prompt."""
    w = _current.get()
    if w is not None:
        w.calls += 1
        w.role, w.done, w.total, w.tokens = ctx.role, 0, 0, 0
        w.state = "reading"


def reading(done: int, total: int) -> None:
    """``done`` of the call's ``total`` new prompt tokens are evaluated."""
    w = _current.get()
    if w is not None:
        w.done, w.total = done, total


def writing(tokens: int) -> None:
    """The call has generated ``tokens`` tokens."""
    w = _current.get()
    if w is not None:
        w.tokens = tokens
        w.state = "writing"


def ended() -> None:
    """The call is over (its reply, or its error)."""
    w = _current.get()
    if w is not None:
        w.state = None
