"""A small TOML writer for the run spec (the standard library reads TOML, ``tomllib``,
but does not write it). Handles what a spec holds: strings, ints, floats, booleans,
lists of scalars and nested tables; None values are left out."""
from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

from agents.textsafe import UNSAFE

__all__ = ["dumps"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else UNSAFE.sub(_escape, json.dumps(k, ensure_ascii=False))


def _escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    return "\\ufffd" if 0xD800 <= cp <= 0xDFFF else f"\\u{cp:04x}"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        r = repr(v)
        return r if ("." in r or "e" in r) else r + ".0"
    if isinstance(v, str):
        # JSON string escapes are valid TOML basic-string escapes, except \\/ (not produced);
        # characters unsafe on a terminal (agents.textsafe) as \\uXXXX, a lone surrogate
        # (no TOML escape) as U+FFFD
        return UNSAFE.sub(_escape, json.dumps(v, ensure_ascii=False))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def dumps(data: Mapping[str, Any]) -> str:
    lines: list[str] = []

    def table(d: Mapping[str, Any], path: list[str]) -> None:
        scalars = [(k, v) for k, v in d.items() if v is not None and not isinstance(v, Mapping)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, Mapping)]
        if path and (scalars or not subs):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_key(p) for p in path) + "]")
        for k, v in scalars:
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subs:
            table(v, path + [k])

    table(data, [])
    return "\n".join(lines) + "\n"
