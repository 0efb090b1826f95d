"""The errors of the run loop and its executors, in a module of their own (both raise
them; neither imports the other for them)."""
from __future__ import annotations

__all__ = ["BenchError"]


class BenchError(RuntimeError):
    """A problem with the run itself (bad output dir, resume mismatch); nothing ran."""
