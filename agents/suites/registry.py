"""The suites by name: one registration each (:class:`~agents.suites.contract.Suite`).

The built-in suites (diagnosis, automedic, osce) are registered by
:mod:`agents.suites.builtin`, which the shell imports; a suite of your own is one call::

    register_suite(MySuite())

and ``medsim bench --suite my-suite`` (or ``suite = "my-suite"`` in a run spec) runs it.
"""
from __future__ import annotations

import threading

from agents.settings import SpecError, near_name
from agents.suites.contract import Suite

__all__ = ["register_suite", "unregister_suite", "get_suite", "suite_names", "all_suites"]

_LOCK = threading.Lock()
_SUITES: dict[str, Suite] = {}


def register_suite(suite: Suite, *, replace_existing: bool = False) -> Suite:
    """Add ``suite`` under its ``name`` (registering a name twice is an error unless
    ``replace_existing``). Returns it."""
    if not suite.name or not all(ch.isalnum() or ch in "-_" for ch in suite.name):
        raise ValueError(f"a suite name is letters, digits, '-' and '_', got {suite.name!r}")
    with _LOCK:
        if suite.name in _SUITES and not replace_existing:
            raise ValueError(f"suite '{suite.name}' is already registered")
        taken = {s.section: s.name for s in _SUITES.values() if s.section and s.name != suite.name}
        if suite.section and suite.section in taken:
            raise ValueError(f"suite '{suite.name}': the run-spec section '{suite.section}' is suite "
                             f"'{taken[suite.section]}''s")
        _SUITES[suite.name] = suite
    return suite


def unregister_suite(name: str) -> None:
    """Remove a suite (a test that registers one takes it away again)."""
    with _LOCK:
        _SUITES.pop(name, None)


def suite_names() -> tuple[str, ...]:
    return tuple(_SUITES)


def all_suites() -> tuple[Suite, ...]:
    return tuple(_SUITES.values())


def get_suite(name: str) -> Suite:
    """The suite registered as ``name``; a :class:`SpecError` (key ``suite``) naming the
    nearest one otherwise."""
    try:
        return _SUITES[name]
    except KeyError:
        near = near_name(name, _SUITES)
        hint = f" (did you mean '{near}'?)" if near else ""
        raise SpecError(f"suite: no suite '{name}'{hint}; suites: {', '.join(_SUITES) or 'none'}",
                        key="suite") from None
