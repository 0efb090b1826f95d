"""Validated settings tables: the validators every section of a run spec uses (the
shell's own sections in :mod:`medsim.spec` and each suite's section, parsed by the
suite), and the error that names the key it is about.

A :class:`SpecError` carries ``key``, the dotted spec key it is about
(``protocol.max_turns``): the command line maps it to the flag that set it
(:mod:`medsim.flags`) without reading the message.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping

__all__ = ["SpecError", "check_keys", "get_int", "get_float", "get_bool", "get_str", "near_name"]


class SpecError(ValueError):
    """An invalid run spec: names the key (and the file or flag) and what is wrong.

    Args:
        message: what is wrong, naming the key.
        key: the dotted key the error is about (None: the spec as a whole).
    """

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key

    def where(self, source: str) -> "SpecError":
        """The same error said of ``source`` (a file name, a flag)."""
        return SpecError(f"{source}: {self}", key=self.key)


def near_name(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to a mistyped one, or None."""
    near = difflib.get_close_matches(str(name), sorted(known), n=1)
    return near[0] if near else None


def check_keys(d: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    """Refuse a table that is not a table, or a key not in ``allowed`` (with a "did you
    mean")."""
    allowed = set(allowed)
    if not isinstance(d, Mapping):
        raise SpecError(f"{path.rstrip('.') or 'spec'}: expected a table, got {d!r}", key=path.rstrip(".") or None)
    for k in d:
        if k not in allowed:
            near = near_name(str(k), allowed)
            hint = f" (did you mean '{path}{near}'?)" if near else f" (known: {', '.join(sorted(allowed))})"
            raise SpecError(f"unknown key '{path}{k}'{hint}", key=f"{path}{k}")


def get_int(d: Mapping[str, Any], key: str, path: str, *, lo: int | None = None, default: Any = None,
            optional: bool = False) -> Any:
    """``d[key]`` as an integer (at least ``lo``); ``default`` when absent; None when
    absent and ``optional``."""
    v = d.get(key, default)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{path}{key}: expected an integer, got {v!r}", key=path + key)
    if lo is not None and v < lo:
        raise SpecError(f"{path}{key}: must be at least {lo}, got {v}", key=path + key)
    return v


def get_float(d: Mapping[str, Any], key: str, path: str, *, lo: float, hi: float | None = None, default: Any = None,
              strict_lo: bool = False) -> float:
    """``d[key]`` as a number in ``[lo, hi]`` (``(lo, hi]`` with ``strict_lo``)."""
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecError(f"{path}{key}: expected a number, got {v!r}", key=path + key)
    v = float(v)
    if v != v or (v <= lo if strict_lo else v < lo) or (hi is not None and v > hi):
        rng = f"{'above' if strict_lo else 'at least'} {lo:g}" + (f" and at most {hi:g}" if hi is not None else "")
        raise SpecError(f"{path}{key}: must be {rng}, got {v:g}", key=path + key)
    return v


def get_bool(d: Mapping[str, Any], key: str, path: str, default: Any = None, optional: bool = False) -> Any:
    """``d[key]`` as true or false."""
    v = d.get(key, default)
    if v is None and optional:
        return None
    if not isinstance(v, bool):
        raise SpecError(f"{path}{key}: expected true or false, got {v!r}", key=path + key)
    return v


def get_str(d: Mapping[str, Any], key: str, path: str, *, default: Any = None, optional: bool = False,
            choices: tuple[str, ...] | None = None) -> Any:
    """``d[key]`` as a non-empty string (one of ``choices`` when given)."""
    v = d.get(key, default)
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v.strip():
        raise SpecError(f"{path}{key}: expected a non-empty string, got {v!r}", key=path + key)
    if choices and v not in choices:
        raise SpecError(f"{path}{key}: must be one of {', '.join(choices)}, got {v!r}", key=path + key)
    return v
