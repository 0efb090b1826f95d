"""Running model calls for the world without blocking it.

``InlineRunner`` runs a task when it is submitted (headless runs and tests: deterministic);
``ThreadRunner`` runs tasks on worker threads and the world polls them each tick, so the
render loop never waits on a model (calls to one in-process model are still serialised
by the backend's lock)."""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Protocol

__all__ = ["Runner", "InlineRunner", "ThreadRunner"]


class Handle(Protocol):
    def done(self) -> bool: ...
    def result(self) -> Any: ...


class Runner(Protocol):
    def submit(self, fn: Callable[[], Any]) -> Handle: ...
    def close(self) -> None: ...


class _Done:
    def __init__(self, value: Any = None, error: BaseException | None = None):
        self.value, self.error = value, error

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class InlineRunner:
    def submit(self, fn: Callable[[], Any]) -> _Done:
        try:
            return _Done(fn())
        except Exception as e:  # noqa: BLE001 - re-raised by result(), as a Future would
            return _Done(error=e)

    def close(self) -> None:
        pass


def _lower_priority(nice: int) -> None:
    """Run this worker thread at a lower CPU priority than the render loop (Linux: a
    thread's own nice value; elsewhere nothing happens)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (AttributeError, OSError):
        pass


class ThreadRunner:
    """``nice``: how much lower the workers' CPU priority is than the caller's, so that a
    model call (which takes a core for seconds) never starves the window of CPU; 0 keeps
    the same priority."""

    def __init__(self, workers: int = 4, *, nice: int = 0):
        init = (lambda: _lower_priority(nice)) if nice else None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="medsim-llm", initializer=init)

    def submit(self, fn: Callable[[], Any]) -> "Future[Any]":
        return self._pool.submit(fn)

    def close(self) -> None:
        # Queued calls are dropped; a call already running is waited for, because
        # freeing an in-process model under a running llama.cpp decode crashes.
        self._pool.shutdown(wait=True, cancel_futures=True)
