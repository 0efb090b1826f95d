"""Reading a case file's lines into JSON values, for every case format.

A case file is data a person made: it may be latin-1 or UTF-16, start with a byte-order
mark, hold an integer of 5,000 digits, a list nested 200,000 deep, a field of 20 MB
(longer than :data:`MAX_FIELD_CHARS`) or a ``"\\ud800"`` escape (an unpaired surrogate:
not text, and it cannot be written to a UTF-8 file). Each such line becomes a
:class:`CaseRecordError` naming the file, the line and (where known) the field; nothing
here raises for what a line holds.

What is accepted: UTF-8, with or without a byte-order mark; lines ended by LF or CRLF;
blank lines; no final newline. Text is carried as it is (NUL, U+2028, U+0085 and the
other line-breaking characters included): the files written from it escape them.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from agents.cases.model import Case, CaseRecordError

__all__ = ["read_json_lines", "load_records", "MAX_DEPTH", "MAX_FIELD_CHARS"]

MAX_DEPTH = 64  # a case record is a few levels deep; deeper is a broken file (and would blow the stack later)
# A field's text goes into every prompt of the case, every llm_call event that repeats the
# prompt, the transcripts and the reports: 20 MB in one field made 261 MB of output for one
# cell. The longest field in the shipped sets and AgentClinic's MedQA is 567 characters.
MAX_FIELD_CHARS = 50_000

_SURROGATE = re.compile("[\ud800-\udfff]")
_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def _json_error(e: BaseException) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"invalid JSON: {e.msg} at column {e.colno}"
    if isinstance(e, RecursionError):
        return f"invalid JSON: nested too deeply (a case record is at most {MAX_DEPTH} levels deep)"
    text = str(e)
    if "integer string conversion" in text:  # CPython's int-size limit (sys.get_int_max_str_digits)
        limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        return f"invalid JSON: a number with more than {limit} digits"
    return f"invalid JSON: {text[:120]}"


def _check_value(value: Any) -> tuple[str, str] | None:
    """(field, problem) for the first string holding an unpaired surrogate or longer
    than :data:`MAX_FIELD_CHARS`, or for nesting deeper than :data:`MAX_DEPTH`; None
    when the value is fine. Iterative: the value may be nested as deep as the JSON
    parser allowed."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return where or "<record>", f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(v, str):
            if len(v) > MAX_FIELD_CHARS:
                return (where or "<record>", f"is {len(v):,} characters long; a case field is at most "
                        f"{MAX_FIELD_CHARS:,} (it is sent in every prompt of the case)")
            m = _SURROGATE.search(v)
            if m:
                return (where or "<record>",
                        f"holds an unpaired surrogate (\\u{ord(m.group()):04x} at character {m.start() + 1}), "
                        "which is not Unicode text; fix the escape in the file")
        elif isinstance(v, dict):
            for k, item in reversed(list(v.items())):
                name = f"{where}.{k}" if where else str(k)
                if len(k) > MAX_FIELD_CHARS:
                    return (where or "<record>", f"a key is {len(k):,} characters long; at most {MAX_FIELD_CHARS:,}")
                m = _SURROGATE.search(k)
                if m:
                    return (where or "<record>",
                            f"a key holds an unpaired surrogate (\\u{ord(m.group()):04x}), which is not Unicode text")
                stack.append((item, name, depth + 1))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{where}[{i}]", depth + 1))
    return None


def read_json_lines(path: str | Path) -> Iterator[tuple[int, Any | CaseRecordError]]:
    """(line number, decoded JSON value) for each non-blank line of ``path``, or (line
    number, :class:`CaseRecordError`) for a line that is not UTF-8, not JSON, or holds a
    value no case can carry. Raises OSError for a file that cannot be opened."""
    p = str(path)
    with open(path, "rb") as fh:
        for lineno, raw_bytes in enumerate(fh, start=1):
            if lineno == 1:
                bom = next((b for b in _BOMS if raw_bytes.startswith(b)), None)
                if bom is not None:
                    yield lineno, CaseRecordError(p, lineno, "<encoding>",
                                                  f"the file is {_BOMS[bom]} text (byte-order mark); save it as UTF-8")
                    return
                if raw_bytes.startswith(b"\xef\xbb\xbf"):
                    raw_bytes = raw_bytes[3:]  # a UTF-8 byte-order mark
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as e:
                hint = "; UTF-16 text? save it as UTF-8" if b"\x00" in raw_bytes else ""
                where = f"byte 0x{raw_bytes[e.start]:02x} at column {e.start + 1}"
                yield lineno, CaseRecordError(p, lineno, "<encoding>", f"not UTF-8 text ({where}){hint}")
                continue
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError) as e:  # bad JSON, huge integers, absurd nesting
                msg = _json_error(e)
                if "\x00" in raw:
                    msg += " (the line holds NUL bytes: UTF-16 text? save it as UTF-8)"
                elif "\r" in raw.rstrip("\r\n"):
                    msg += " (the line holds a carriage return: are lines ended by CR alone? end them by LF)"
                yield lineno, CaseRecordError(p, lineno, "<json>", msg)
                continue
            bad = _check_value(value)
            if bad is not None:
                yield lineno, CaseRecordError(p, lineno, bad[0], bad[1])
                continue
            yield lineno, value


def load_records(path: str | Path, parse: Callable[[Any, str, int], tuple[Case | None, list[CaseRecordError]]]
                 ) -> tuple[list[Case], list[CaseRecordError]]:
    """Every line of a case file through ``parse(record, path, line)``: the valid cases and
    one error per invalid record (file, line, field); a repeated id is an error on its
    second line. Never raises for bad records; raises OSError for a missing file."""
    p = Path(path)
    cases: list[Case] = []
    errors: list[CaseRecordError] = []
    seen: dict[str, int] = {}
    for lineno, record in read_json_lines(p):
        if isinstance(record, CaseRecordError):
            errors.append(record)
            continue
        case, errs = parse(record, str(p), lineno)
        if errs:
            errors.extend(errs)
            continue
        assert case is not None
        if case.id in seen:
            errors.append(CaseRecordError(str(p), lineno, "id", f"duplicate id '{case.id}' (first on line {seen[case.id]})"))
            continue
        seen[case.id] = lineno
        cases.append(case)
    return cases, errors
