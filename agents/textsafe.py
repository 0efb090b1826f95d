"""Model text made safe to show: characters that could drive a terminal or reorder what a
reader sees are replaced by a visible escape (``\\x1b``, ``\\u202e``), never passed on.

The characters: C0 controls (but tab and newline), DEL, C1 controls, the Arabic letter
mark, bidi embeddings/overrides/isolates and marks, zero-width characters, line and
paragraph separators, BOM and lone surrogates (JSON may hold them). ``UNSAFE_CHARS`` is
the character class (without brackets) for writers that escape in their own syntax
(HTML marks, TOML ``\\uXXXX``); :func:`printable` is the one function for terminals and
Markdown.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["UNSAFE_CHARS", "UNSAFE", "printable", "escape_char", "md_cell"]

UNSAFE_CHARS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
                "\ufeff\ud800-\udfff")
UNSAFE = re.compile(f"[{UNSAFE_CHARS}]")
_UNSAFE_LINE = re.compile(f"[{UNSAFE_CHARS}\t\n]")


_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape_char(ch: str) -> str:
    """``\\n``, ``\\t``, ``\\r``; else ``\\x1b`` below U+0100, ``\\u202e`` above."""
    if ch in _SHORT:
        return _SHORT[ch]
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def printable(text: Any, *, single_line: bool = False) -> str:
    """``text`` (anything; not a string: ``str()`` of it) with every unsafe character
    escaped visibly. Newlines and tabs stay (a transcript's layout), ``\\r\\n`` becoming
    ``\\n``; with ``single_line`` (a table cell, a log line's field) they are escaped too."""
    s = text if isinstance(text, str) else str(text)
    if single_line:
        return _UNSAFE_LINE.sub(lambda m: escape_char(m.group()), s)
    return UNSAFE.sub(lambda m: escape_char(m.group()), s.replace("\r\n", "\n"))


def md_cell(value: Any, empty: str = "-") -> str:
    """A Markdown table cell: :func:`printable` on one line, ``|`` escaped so the row keeps
    its columns; None is ``empty``."""
    if value is None:
        return empty
    return printable(value, single_line=True).replace("|", "\\|")
