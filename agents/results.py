"""Result rows and the summary of consultations, and the results files every suite's
runs share.

A row is one finished cell of a run, keyed by (case, seed, condition), built from the
cell's events only (so ``medsim score`` and replay rebuild the same rows from a log). The
consultation suites (:mod:`agents.suites.diagnosis`) build theirs with :func:`case_row` and
add their own fields; :func:`read_results`, :func:`write_results` and
:func:`write_results_csv` serve every suite.
"""
from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from agents.cases.model import Case
from agents.costs import case_cost
from agents.scorers import Transcript
from agents.secrets import scrub_secrets
from agents.stats import wilson_interval
from agents.textsafe import printable

__all__ = ["row_key", "unique_rows", "case_row", "call_totals", "summarise", "read_results", "results_line",
           "write_results", "write_results_csv", "CSV_COLUMNS", "ResultsError", "csv_cell"]


class ResultsError(RuntimeError):
    """A results file that cannot be read (a corrupt row that is not the torn last one)."""


def row_key(row: Mapping[str, Any]) -> tuple[str, int, str]:
    return (row["case_id"], int(row.get("seed", 0)), row.get("condition", "base"))


def unique_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Any], int]:
    """One row per cell (:func:`row_key`): the last of each (a cell run again, by a
    second writer or a resume, is the later row, and its event log the one on disk),
    where the cell's first row was; and how many copies were dropped."""
    last: dict[tuple[str, int, str], Any] = {}
    order: list[tuple[str, int, str]] = []
    n = 0
    for r in rows:
        k = row_key(r)
        if k not in last:
            order.append(k)
        n += 1
        last[k] = r
    return [last[k] for k in order], n - len(order)


def case_row(case: Case, events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
             wall_s: float) -> dict[str, Any]:
    """One results row from a case's events (consultation, then scoring)."""
    t = Transcript.from_events(events, case_id=case.id)
    status, error = t.status, t.error
    correct = None
    judge_method = None
    scored = False
    for e in events:
        if e.get("type") == "scored" and e.get("scorer") == "diagnosis" and not scored:
            scored = True  # the first: later judgements are the learning loop's (a second attempt)
            if e["details"].get("error"):
                status, error = "error", e["details"]["error"]
            else:
                correct = e["value"]
        elif e.get("type") == "judge" and not scored:
            judge_method = e["method"]
    if status in ("error", "failed"):
        correct = None
    return {
        "case_id": case.id, "seed": seed, "condition": condition,
        "status": status, "diagnosis": t.diagnosis, "truth": case.diagnosis, "correct": correct,
        "error": error, "failure": t.failure, "turns": t.turns,
        "tests_requested": list(t.tests_requested), "n_tests": len(t.tests_requested),
        "judge_method": judge_method, **call_totals(events),
        "wall_s": round(wall_s, 4),
        "specialty": case.specialty,
        **case_cost(events[: _end(events)]),
        "events": events_file,
        **_memory_fields(events),
    }


def call_totals(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a cell's model calls cost: ``llm_calls``, ``prompt_tokens`` (sent),
    ``prompt_tokens_evaluated`` (None when a backend does not say), ``completion_tokens``
    and ``model_latency_s``: the fields every suite's row carries."""
    calls = [e for e in events if e.get("type") == "llm_call"]
    evals = [c.get("prompt_tokens_evaluated") for c in calls]
    return {"llm_calls": len(calls), "prompt_tokens": sum(c.get("prompt_tokens") or 0 for c in calls),
            "prompt_tokens_evaluated": None if any(v is None for v in evals) else sum(evals),
            "completion_tokens": sum(c.get("completion_tokens") or 0 for c in calls),
            "model_latency_s": round(sum(c.get("latency_s") or 0.0 for c in calls), 4)}


def _end(events: Sequence[Mapping[str, Any]]) -> int:
    """The consultation's events (what the learning loop does afterwards costs nothing)."""
    return next((i + 1 for i, e in enumerate(events) if e.get("type") == "consultation_ended"), len(events))


def _memory_fields(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The memory the case consulted (its state at retrieval) and what it learned."""
    out: dict[str, Any] = {}
    got = [e for e in events if e.get("type") == "memory_retrieved"]
    if got:
        out["memory"] = got[-1]["memory"]
        out["memory_hits"] = [f"{h['buffer']}:{h['id']}" for h in got[-1]["hits"]]
    learned = [e for e in events if e.get("type") == "memory_learned"]
    if learned:
        out["learned"] = learned[-1]["action"]
    return out


Block = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, Any]]


def _block(rows: Sequence[Mapping[str, Any]], extra: Block | None = None) -> dict[str, Any]:
    errors = [r for r in rows if r.get("error")]
    failed = [r for r in rows if not r.get("error") and r.get("status") == "failed"]
    scored = [r for r in rows if not r.get("error") and r.get("status") != "failed"]
    correct = sum(1 for r in scored if r.get("correct"))
    lo, hi = wilson_interval(correct, len(scored))
    n = max(1, len(scored))
    evald = [r["prompt_tokens_evaluated"] for r in rows if r.get("prompt_tokens_evaluated") is not None]
    return {
        "cases": len(rows),
        "scored": len(scored),
        "correct": correct,
        "accuracy": (correct / len(scored)) if scored else None,
        "ci95": [round(lo, 4), round(hi, 4)],
        "errors": len(errors),
        "error_cases": {_label(r): r["error"] for r in errors},
        # consultations a role kept breaking (refusals, role breaks, loops): not scored
        "failed": len(failed),
        "failed_cases": {_label(r): r.get("failure") for r in failed},
        # strict accuracy: failed consultations counted as wrong
        "accuracy_all": (correct / (len(scored) + len(failed))) if (scored or failed) else None,
        "no_diagnosis": sum(1 for r in scored if r.get("status") == "no_diagnosis"),
        "mean_turns": round(sum(r.get("turns", 0) for r in scored) / n, 3),
        "mean_tests": round(sum(r.get("n_tests", 0) for r in scored) / n, 3),
        "prompt_tokens": sum(r.get("prompt_tokens") or 0 for r in rows),
        "prompt_tokens_evaluated": sum(evald) if len(evald) == len(rows) else None,
        "completion_tokens": sum(r.get("completion_tokens") or 0 for r in rows),
        "wall_s": round(sum(r.get("wall_s") or 0.0 for r in rows), 3),
        "mean_cost": round(sum(r.get("cost") or 0.0 for r in scored) / n, 2),
        **(extra(rows) if extra is not None else {}),
    }


def _label(r: Mapping[str, Any]) -> str:
    seed, cond = r.get("seed", 0), r.get("condition", "base")
    extra = "" if (seed, cond) == (0, "base") else f" (seed {seed}, {cond})"
    return f"{r['case_id']}{extra}"


def summarise(rows: Iterable[Mapping[str, Any]], extra: Block | None = None) -> dict[str, Any]:
    """Accuracy (Wilson 95% interval) over scored cases; errors and failed
    consultations counted apart, never as wrong answers. With several conditions or
    seeds, a block per condition follows. ``extra(rows)``: a suite's own figures, added to
    the run's block and to each condition's (AutoMedic's CARE)."""
    rows = list(rows)
    out = _block(rows, extra)
    conditions = sorted({r.get("condition", "base") for r in rows})
    seeds = sorted({int(r.get("seed", 0)) for r in rows})
    out["seeds"] = seeds
    if len(conditions) > 1:
        out["conditions"] = {c: _block([r for r in rows if r.get("condition", "base") == c], extra)
                             for c in conditions}
    return out


def results_line(row: Mapping[str, Any]) -> str:
    """One results.jsonl line. ASCII only: a U+2028, U+0085, vertical tab or any other
    character some reader treats as a line break, a NUL, even an unpaired surrogate (not
    encodable as UTF-8) is written as a JSON escape, so any text round-trips and never
    splits a row."""
    return scrub_secrets(json.dumps(row, ensure_ascii=True, sort_keys=True)) + "\n"  # no API key in a row


def write_results(rows: Iterable[Mapping[str, Any]], path: Path) -> None:
    """Replace ``path`` with ``rows``, atomically: the rows go to a temporary file beside
    it, which is flushed to disk (fsync) and then renamed over it. A crash or kill at any
    moment leaves the old file whole or the new one whole, never part of either."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="ascii", newline="\n") as fh:
            for r in rows:
                fh.write(results_line(r))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of a results.jsonl; a torn last line (a kill mid-write) is dropped. Lines are
    split at "\n" only (never at U+2028 or the other characters ``str.splitlines``
    breaks at: a row written by an older version may hold them unescaped)."""
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        return rows
    lines = path.read_text(encoding="utf-8-sig", errors="replace").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or "case_id" not in row:
                raise ValueError("not a results row")
            rows.append(row)
        except (ValueError, RecursionError):
            if i == len(lines) - 1:
                continue
            raise ResultsError(f"{path}:{i + 1}: corrupt results row") from None
    return rows


# results.csv: these columns first, in this order; any other scalar field after them, by name
CSV_COLUMNS = ("case_id", "seed", "condition", "status", "correct", "diagnosis", "truth", "error", "failure",
               "turns", "n_tests", "tests_requested", "judge_method", "llm_calls", "prompt_tokens",
               "prompt_tokens_evaluated", "completion_tokens", "model_latency_s", "wall_s", "cost", "cost_tests",
               "currency", "specialty", "events")


# what makes a spreadsheet read a cell as a formula (OWASP's CSV injection list; the
# full-width forms some spreadsheets take as the same), after any leading spaces
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(v: Any) -> Any:
    """One results.csv cell: None is empty, a number stays a number, a list's items are
    joined with "; "; text is :func:`agents.textsafe.printable` (controls, bidi marks and
    lone surrogates as visible escapes; newlines and tabs kept, inside the cell's quotes)
    and, where a spreadsheet would take it for a formula (it starts with ``=``, ``+``,
    ``-``, ``@``, a tab or a CR and is not a plain number), starts with a single quote,
    which spreadsheets show as text. results.jsonl keeps every value exactly."""
    if v is None:
        return ""
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, (list, tuple)):
        v = "; ".join("" if x is None else str(x) for x in v)
    s = printable(scrub_secrets(str(v)))
    if s.lstrip(" ").startswith(_FORMULA_START) and not _NUMBER.fullmatch(s.strip()):
        s = "'" + s
    return s


def write_results_csv(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """``results.csv`` beside results.jsonl, for a spreadsheet or a DataFrame: one line
    per row, the rows' scalar fields (a list's items joined with "; ", None as an empty
    cell; a field holding a mapping, like the memory's state, is left out; each cell
    through :func:`csv_cell`: no formula, no raw control or bidi character). Columns:
    :data:`CSV_COLUMNS` first, then any other field by name. Written to a temporary file
    and renamed, so a reader never sees half of it."""
    seen: set[str] = set()
    nested: set[str] = set()
    for r in rows:
        for k, v in r.items():
            seen.add(k)
            if isinstance(v, Mapping):
                nested.add(k)
    cols = [c for c in CSV_COLUMNS if c in seen and c not in nested]
    cols += sorted(k for k in seen if k not in nested and k not in CSV_COLUMNS)
    path = Path(path)
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([csv_cell(c) for c in cols])
        for r in rows:
            w.writerow([csv_cell(r.get(c)) for c in cols])
    os.replace(tmp, path)
    return path
