"""File names derived safely from data.

A case id is data: it may be absolute, hold ``../``, NUL, a slash, 300 characters or
two spellings of one path (``x`` and ``./x``). Files are never named by it directly:
the name is a stable slug of the id (for people) plus a short hash of the exact id,
seed and condition (for uniqueness). The id itself stays inside the file.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["slug", "event_file_name"]

_MAX_SLUG = 40


def slug(text: str, max_len: int = _MAX_SLUG) -> str:
    """ASCII letters, digits, '.', '_' and '-' only; never empty, never starting with
    a dot, at most ``max_len`` characters."""
    t = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    t = re.sub(r"[^A-Za-z0-9._-]+", "-", t)
    t = re.sub(r"-{2,}", "-", t).strip(".-_")[:max_len].strip(".-_")
    return t or "case"


def event_file_name(case_id: str, seed: int = 0, condition: str = "base") -> str:
    """``<slug>-<10 hex>.jsonl``: the same (id, seed, condition) always gives the same
    name; different ones (even ids that slug alike) give different names."""
    h = hashlib.sha256(f"{case_id}\x00{seed}\x00{condition}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug(case_id)}-{h}.jsonl"
