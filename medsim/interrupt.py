"""Ctrl-C while a run's cells run: a request the run loop reads, not an exception.

Python turns SIGINT into a KeyboardInterrupt in the main thread, wherever it happens to
be; the run loop then leaves its executor's ``with`` block, whose ``shutdown(wait=True)``
runs every queued cell to its end (and their rows are thrown away). :class:`Interrupts`
instead counts SIGINTs while the loop runs: after the first, the loop cancels the queued
cells and waits for the running ones (their rows are written); after the second it stops
waiting. The loop then raises KeyboardInterrupt itself (the CLI exits 130).

The handler is installed only in the main thread and only over Python's default one
(``signal.default_int_handler``): a SIGINT that is ignored (a job started in the
background) stays ignored, and a handler someone else installed is left alone (a
KeyboardInterrupt there is handled as any exception is: queued cells are cancelled).
"""
from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["Interrupts"]


class Interrupts:
    """``with Interrupts() as stop:`` counts SIGINTs in the block (``stop.count``);
    ``stop.requested`` after the first, ``stop.now`` after the second. Outside the main
    thread it installs nothing (``installed`` is False) and counts nothing."""

    def __init__(self) -> None:
        self.count = 0
        self.installed = False
        self._previous: Any = None

    @property
    def requested(self) -> bool:
        return self.count >= 1

    @property
    def now(self) -> bool:
        return self.count >= 2

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1  # nothing else here: the loop reads the count (a handler must not log or raise)

    def __enter__(self) -> "Interrupts":
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self.installed = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.installed:
            signal.signal(signal.SIGINT, self._previous)
            self.installed = False
