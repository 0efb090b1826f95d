"""What the measures share."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

__all__ = ["static_run", "measure_block"]


def static_run(events: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the log's run was static QA (the doctor read the whole case: nothing to
    elicit, nothing to order), from its header's run spec."""
    h = next((e for e in events if e.get("type") == "header"), None)
    spec = (h or {}).get("spec") or {}
    return bool((spec.get("protocol") or {}).get("static"))


def measure_block(events: Sequence[Mapping[str, Any]], scorer: str,
                  build: Callable[[Any, Mapping[str, Any]], Mapping[str, Any]]) -> dict[str, Any] | None:
    """A results row's block for a measure, from the case's first ``scored`` event of
    ``scorer``: None when there is none; ``{"scored": False, "why"}`` when it skipped the
    case or failed; else ``{"scored": True, **build(value, details)}``."""
    e = next((x for x in events if x.get("type") == "scored" and x.get("scorer") == scorer), None)
    if e is None:
        return None
    d = e.get("details") or {}
    if "skipped" in d or d.get("error"):
        return {"scored": False, "why": d.get("skipped") or d.get("error")}
    return {"scored": True, **build(e.get("value"), d)}
