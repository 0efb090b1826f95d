"""Model text made safe to show: characters that could drive a terminal or reorder what a
reader sees are replaced by a visible escape (``\\x1b``, ``\\u202e``), never passed on.

The characters: C0 controls (but tab and newline), DEL, C1 controls, the Arabic letter
mark, bidi embeddings/overrides/isolates and marks, zero-width characters, line and
paragraph separators, BOM and lone surrogates (JSON may hold them). ``UNSAFE_CHARS`` is
the character class (without brackets) for writers that escape in their own syntax
(HTML marks, TOML ``\\uXXXX``, JSON ``\\uXXXX``); :func:`printable` is the one function
for terminals.

Markdown (report.md, compare.md) goes through :func:`md_text` and :func:`md_cell`, the
one escaping for every Markdown writer: besides :func:`printable`, HTML is written as
entities (no ``<script>``, no ``<img onerror>``, no raw tag of any kind) and link and
image syntax is backslash-escaped (no ``[text](url)``, no ``![](url)``, no autolink).
:func:`valid_unicode` makes text that may hold lone surrogates (a model's reply decoded
from a JSON ``"\\ud800"``) valid Unicode, for the boundary where model text comes in.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["UNSAFE_CHARS", "UNSAFE", "printable", "escape_char", "md_text", "md_cell", "valid_unicode"]

UNSAFE_CHARS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
                "\ufeff\ud800-\udfff")
UNSAFE = re.compile(f"[{UNSAFE_CHARS}]")
_UNSAFE_LINE = re.compile(f"[{UNSAFE_CHARS}\t\n]")
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def valid_unicode(text: str) -> tuple[str, int]:
    """``text`` with each unpaired surrogate (not a character: no UTF-8 file, terminal or
    tokenizer can hold one) replaced by U+FFFD, and how many were replaced."""
    n = len(_SURROGATE.findall(text))
    return (_SURROGATE.sub("\ufffd", text), n) if n else (text, 0)


# Markdown: a backslash (so an escape in the text cannot undo ours), the HTML characters
# as entities, a backtick (a code span) and "]" (every link, image, reference and footnote
# needs an unescaped "]"), and a "(" after a "]"; then printable, whose escapes ("\x1b")
# are a backslash and a letter, which Markdown shows as they are
_MD_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_SPECIAL = re.compile(r"[\\&<>`\]]|(?<=\])\(")


def _md_char(m: re.Match[str]) -> str:
    ch = m.group()
    return _MD_HTML.get(ch) or "\\" + ch


def md_text(value: Any) -> str:
    """Text from a model, a case or a spec for one line of Markdown (a heading, a list
    item, a table cell): ``&``, ``<`` and ``>`` as HTML entities, ``\\``, `````, ``]``
    and a ``(`` after a ``]`` backslash-escaped, then :func:`printable` on one line. Any
    CommonMark or GitHub renderer shows the text as it was written, and nothing in it
    becomes a tag, a link, an image or a code span."""
    s = value if isinstance(value, str) else str(value)
    return printable(_MD_SPECIAL.sub(_md_char, s), single_line=True)


def md_cell(value: Any, empty: str = "-") -> str:
    """A Markdown table cell: :func:`md_text`, ``|`` escaped so the row keeps its columns;
    None is ``empty``."""
    if value is None:
        return empty
    return md_text(value).replace("|", "\\|")
