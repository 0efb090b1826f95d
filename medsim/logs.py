"""Where medsim's status messages go: the ``logging`` module, to standard error, set up
once by the ``medsim`` command (``-q``: warnings and errors only; ``-v``: debug too).
Results a command exists to print (tables, paths, JSON) go to standard output instead.

Every line passes through :func:`agents.textsafe.printable`: an error that quotes model
or case text cannot drive the terminal."""
from __future__ import annotations

import logging
import sys

from agents.textsafe import printable

__all__ = ["setup_logging", "PACKAGES", "QUIET", "NORMAL", "VERBOSE"]

PACKAGES = ("medsim", "agents", "memory", "game")  # medsim's own loggers; others log warnings only
QUIET, NORMAL, VERBOSE = logging.WARNING, logging.INFO, logging.DEBUG


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (tests and pytest swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self):  # noqa: D401
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _Formatter(logging.Formatter):
    """``message`` at INFO; ``medsim: warning: message`` (error, critical) above it;
    ``debug: logger: message`` below it."""

    def format(self, record: logging.LogRecord) -> str:
        text = printable(super().format(record))
        if record.levelno >= logging.WARNING:
            return f"medsim: {record.levelname.lower()}: {text}"
        if record.levelno < logging.INFO:
            return f"debug: {record.name}: {text}"
        return text


def setup_logging(level: int = NORMAL) -> None:
    """One handler on the root logger (replacing one an earlier call installed); medsim's
    packages log at ``level``, other libraries at WARNING (DEBUG with ``-v`` stays ours)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if isinstance(h, _Stderr)]:
        root.removeHandler(h)
    handler = _Stderr()
    handler.setFormatter(_Formatter())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in PACKAGES:
        logging.getLogger(name).setLevel(level)
