"""What the measures share."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["static_run"]


def static_run(events: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the log's run was static QA (the doctor read the whole case: nothing to
    elicit, nothing to order), from its header's run spec."""
    h = next((e for e in events if e.get("type") == "header"), None)
    spec = (h or {}).get("spec") or {}
    return bool((spec.get("protocol") or {}).get("static"))
