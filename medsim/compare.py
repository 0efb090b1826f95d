"""``medsim compare RUN_A RUN_B [RUN_C ...]``: finished bench runs compared cell by cell.

A run is a ``medsim bench --out`` directory, or one of its conditions as
``DIR:CONDITION``. Each run after the first is compared with the first (A), on the cells
both hold: the same case id and seed, and the same condition name unless conditions were
picked. Cells that errored, failed (a role kept breaking the consultation) or were not
scored in either run are listed and left out of every paired figure: they count in
neither accuracy, in no test and in no ratio. On the cells left (the paired cells): each
run's accuracy with its Wilson 95% interval, the difference B - A with its paired (Bonett-Price)
95% interval, McNemar's exact test on the discordant pairs, the cases that flip each way,
and the ratios B/A of tokens sent, tokens evaluated, completion tokens, wall time and cost
per paired cell.

This module reads and computes (:func:`compare_runs`); ``medsim.compare_report`` writes
compare.md, compare.html, compare.json and the chart.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.fidelity.scorer import PATIENT_LABELS, TECHNICIAN_LABELS, fidelity_summary
from agents.stats import mcnemar_exact, paired_difference_interval, wilson_interval
from medsim.compare_measures import MeasureRow, OracleGap, is_static, measure_rows, oracle_gaps
from medsim.study_state import refuse_in_progress

__all__ = ["CompareError", "Run", "Flip", "Excluded", "Ratio", "FidelityRate", "Comparison", "CompareReport", "load_run",
           "compare_runs", "run_label", "run_models", "RATIO_MEASURES"]

# (row field, what it is): the ratios B/A, per paired cell
RATIO_MEASURES = (("prompt_tokens", "tokens sent"), ("prompt_tokens_evaluated", "tokens evaluated"),
                  ("completion_tokens", "completion tokens"), ("wall_s", "wall s"), ("cost", "cost"))


class CompareError(RuntimeError):
    """Runs that cannot be compared (not a run, a corrupt row, nothing in common); the
    message names the path."""


@dataclass(frozen=True)
class Run:
    """A bench run's rows (one condition of it when ``condition`` is picked)."""

    arg: str  # as given on the command line
    path: Path
    condition: str | None  # picked with DIR:CONDITION
    rows: list[dict[str, Any]]
    spec: dict[str, Any]  # run.json's spec ({} when unreadable)
    finished: bool  # summary.json is there (an interrupted run has none)
    notes: tuple[str, ...] = ()

    @property
    def conditions(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.rows:
            seen.setdefault(r.get("condition", "base"), None)
        return list(seen)

    def cells(self, condition: str) -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["case_id"], int(r.get("seed", 0))): r for r in self.rows if r.get("condition", "base") == condition}


@dataclass(frozen=True)
class Flip:
    """A paired cell right in one run and wrong in the other."""

    case_id: str
    seed: int
    diagnosis_a: str | None
    diagnosis_b: str | None
    truth: str | None


@dataclass(frozen=True)
class Excluded:
    """A shared cell left out of the paired figures, and why (per run; "scored" when
    that run's cell was fine)."""

    case_id: str
    seed: int
    a: str
    b: str


@dataclass(frozen=True)
class Ratio:
    field: str
    measure: str
    a_per_cell: float | None
    b_per_cell: float | None
    ratio: float | None  # B/A; None when A is 0 or a cell did not record the measure
    note: str = ""


@dataclass(frozen=True)
class FidelityRate:
    """One fidelity label in both runs, over the cells both checked (the same cells)."""

    role: str
    label: str
    k_a: int
    n_a: int
    rate_a: float | None
    ci95_a: tuple[float, float]
    k_b: int
    n_b: int
    rate_b: float | None
    ci95_b: tuple[float, float]
    difference: float | None  # rate B - rate A


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on one condition pair."""

    a: str  # labels: "A", "B", ...
    b: str
    condition_a: str
    condition_b: str
    shared: int  # cells in both runs
    only_a: int  # cells in A that B lacks (not compared)
    only_b: int
    excluded: list[Excluded]
    both_right: int
    only_a_right: int  # right in A, wrong in B
    only_b_right: int  # wrong in A, right in B
    both_wrong: int
    accuracy_a: float | None
    ci95_a: tuple[float, float]
    accuracy_b: float | None
    ci95_b: tuple[float, float]
    difference: float | None  # accuracy B - accuracy A on the paired cells
    difference_ci95: tuple[float, float]  # Bonett-Price paired interval
    mcnemar_p: float  # exact, two-sided
    flips_a_right: list[Flip]  # right in A, wrong in B
    flips_b_right: list[Flip]  # wrong in A, right in B
    ratios: list[Ratio]
    repeated_cases: int  # cases paired under more than one seed (cells not independent)
    fidelity: list[FidelityRate] = field(default_factory=list)  # over the cells both runs checked
    fidelity_cells: int = 0
    fidelity_checkers: tuple[str, str] = ("", "")
    measures: list[MeasureRow] = field(default_factory=list)  # top-k, calibration, recall, tests F1

    @property
    def paired(self) -> int:
        return self.both_right + self.only_a_right + self.only_b_right + self.both_wrong


@dataclass(frozen=True)
class CompareReport:
    runs: list[Run]
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)
    gaps: list[OracleGap] = field(default_factory=list)  # against a static (full-information) run

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"runs": [{"label": run_label(i), "arg": r.arg, "path": str(r.path), "condition": r.condition,
                          "conditions": r.conditions, "cells": len(r.rows), "finished": r.finished,
                          "models": run_models(r), "notes": list(r.notes)} for i, r in enumerate(self.runs)],
                "comparisons": [{**asdict(c), "paired": c.paired} for c in self.comparisons],
                "notes": list(self.notes),
                "oracle_gaps": [asdict(g) for g in self.gaps],
                "method": {"paired_on": "case id and seed (and condition name unless picked with RUN:CONDITION)",
                           "excluded": "cells that errored, failed or were not scored in either run: listed, and in "
                                       "neither accuracy, the test nor the ratios",
                           "accuracy_ci": "Wilson score, 95%",
                           "difference_ci": "Bonett-Price (2012) adjusted Wald for paired proportions, 95%",
                           "test": "McNemar exact: two-sided binomial(n discordant, 1/2)",
                           "ratios": "B/A of the mean per paired cell",
                           "fidelity": "each run's rate over the cells both checked (the same cells), Wilson 95% "
                                       "intervals; the items (utterances) differ between runs, so the difference has "
                                       "no paired interval"}}


def run_label(i: int) -> str:
    """A, B, C, ... for the runs in the order given."""
    return chr(ord("A") + i) if i < 26 else f"R{i + 1}"


# -- reading a run ----------------------------------------------------------------------
_NUMERIC = ("prompt_tokens", "prompt_tokens_evaluated", "completion_tokens", "wall_s", "cost", "turns")


def _check_row(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise CompareError(f"{where}: corrupt results row (a JSON {type(row).__name__}, not an object)")
    if not isinstance(row.get("case_id"), str):
        raise CompareError(f"{where}: corrupt results row (no case_id)")
    if not isinstance(row.get("seed", 0), int) or isinstance(row.get("seed", 0), bool):
        raise CompareError(f"{where}: corrupt results row (seed {row.get('seed')!r} is not an integer)")
    if not isinstance(row.get("condition", "base"), str):
        raise CompareError(f"{where}: corrupt results row (condition {row.get('condition')!r} is not a name)")
    if row.get("correct") not in (True, False, None) or "correct" not in row:
        raise CompareError(f"{where}: corrupt results row (correct is {row.get('correct', '<missing>')!r}, "
                           "expected true, false or null)")
    if not isinstance(row.get("status"), str):
        raise CompareError(f"{where}: corrupt results row (status {row.get('status', '<missing>')!r})")
    for k in _NUMERIC:
        v = row.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise CompareError(f"{where}: corrupt results row ({k} is {v!r}, expected a number or null)")
    return row


def _cell(row: dict[str, Any]) -> tuple[str, int, str]:
    """A results row's cell: (case, seed, condition)."""
    return row["case_id"], int(row.get("seed", 0)), row.get("condition", "base")


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of a results.jsonl, each checked, naming file and line on a bad one. A
    last line with no newline that is not JSON is a write cut short by a kill (the bench
    drops it on ``--resume``): dropped here too, and said."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise CompareError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise CompareError(f"{path}: not UTF-8 text (byte {e.start})") from None
    lines = text.split("\n")
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    seen: dict[tuple[str, int, str], int] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{path}:{i + 1}"
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            if i == len(lines) - 1:  # no newline after it: a torn last write
                notes.append(f"{where}: a torn last line (an interrupted write) was dropped")
                continue
            raise CompareError(f"{where}: corrupt results row (not JSON)") from None
        row = _check_row(raw, where)
        key = _cell(row)
        if key in seen:
            raise CompareError(f"{where}: cell {key} appears twice (first on line {seen[key]})")
        seen[key] = i + 1
        rows.append(row)
    return rows, notes


def load_run(arg: str) -> Run:
    """A run from ``DIR`` or ``DIR:CONDITION``; :class:`CompareError` names the path when
    it is not a run, a row is corrupt or the condition is not in it."""
    path, condition = Path(arg), None
    if not path.is_dir() and ":" in arg:
        head, _, cond = arg.rpartition(":")
        if head and Path(head).is_dir():
            path, condition = Path(head), cond
    if not path.is_dir():
        raise CompareError(f"{arg}: no such run directory")
    refuse_in_progress(path, "comparing it")
    results, run_file = path / "results.jsonl", path / "run.json"
    if (path / "scores.jsonl").is_file() and path.parent.name == "scores":  # a re-scoring (medsim score) of a run
        results, run_file = path / "scores.jsonl", path.parent.parent / "run.json"
    if not results.is_file() or not run_file.is_file():
        missing = " and ".join(f.name for f in (run_file, results) if not f.is_file())
        raise CompareError(f"{path}: not a medsim bench run (no {missing})")
    try:
        doc = json.loads(run_file.read_text(encoding="utf-8"))
        spec = doc.get("spec") if isinstance(doc, dict) and isinstance(doc.get("spec"), dict) else {}
    except (OSError, ValueError):
        raise CompareError(f"{run_file}: unreadable (not the JSON a bench run writes)") from None
    rows, notes = _read_rows(results)
    if results.name == "scores.jsonl":  # a re-scoring's wall_s is the re-scoring's: the consultation's is the run's
        own = path.parent.parent / "results.jsonl"
        walls = {_cell(r): r.get("wall_s") for r in (_read_rows(own)[0] if own.is_file() else [])}
        for r in rows:
            r["wall_s"] = walls.get(_cell(r))
        notes.append(f"{path}: a re-scoring of {path.parent.parent}; wall time is the consultations' (from its results)")
    run = Run(arg, path, condition, rows, spec, (path / "summary.json").is_file(), tuple(notes))
    if condition is not None and condition not in run.conditions:
        raise CompareError(f"{path}: no condition '{condition}' in its results "
                           f"(conditions: {', '.join(run.conditions) or 'none'})")
    if not rows:
        raise CompareError(f"{results}: no results rows")
    return run


def run_models(run: Run) -> dict[str, str]:
    """Model per role of the run (of its picked or only condition), from run.json (a
    study's doctor: the person, by their label)."""
    from medsim.assemble import describe_roles
    from medsim.spec import RunSpec, SpecError

    try:
        spec = RunSpec.from_dict(run.spec)
        conds = [run.condition] if run.condition else run.conditions
        s = spec.for_condition(conds[0]) if len(conds) == 1 and conds[0] in spec.condition_names() else spec
    except (SpecError, KeyError, TypeError, ValueError):
        return {}
    return {r: m for r, m in describe_roles(s).items() if s.roles[r].backend != "none"}


# -- pairing ------------------------------------------------------------------------------
def _condition_pairs(a: Run, b: Run) -> list[tuple[str, str]]:
    ca = [a.condition] if a.condition else a.conditions
    cb = [b.condition] if b.condition else b.conditions
    if len(ca) == 1 and len(cb) == 1:
        return [(ca[0], cb[0])]
    if a.condition or b.condition:  # one picked, the other has several: the same name
        picked, other = (a.condition, b) if a.condition else (b.condition, a)
        if picked in other.conditions:
            return [(picked, picked)]
        raise CompareError(f"{other.path}: has conditions {', '.join(other.conditions)} and none is "
                           f"'{picked}'; pick one as {other.path}:CONDITION")
    shared = [c for c in ca if c in cb]
    if shared:
        return [(c, c) for c in shared]
    raise CompareError(f"{a.path} and {b.path}: no condition name in common ({', '.join(ca)} against "
                       f"{', '.join(cb)}); pick the ones to compare as RUN:CONDITION")


def _why_not_scored(row: Mapping[str, Any]) -> str | None:
    if row.get("error"):
        return f"error: {row['error']}"
    if row.get("status") == "failed":
        return f"failed: {row.get('failure') or 'the consultation failed'}"
    if row.get("correct") is None:
        return f"not scored (status {row.get('status')})"
    return None


def _ratios(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[Ratio]:
    out = []
    for key, measure in RATIO_MEASURES:
        va = [ra.get(key) for ra, _ in pairs]
        vb = [rb.get(key) for _, rb in pairs]
        if not pairs:
            out.append(Ratio(key, measure, None, None, None, "no paired cells"))
            continue
        if any(v is None for v in va + vb):
            out.append(Ratio(key, measure, None, None, None, "not recorded for every paired cell"))
            continue
        ma, mb = sum(va) / len(va), sum(vb) / len(vb)
        out.append(Ratio(key, measure, ma, mb, mb / ma if ma else None, "" if ma else "A is 0"))
    return out


def _fidelity(cells_a: Mapping[Any, Mapping[str, Any]], cells_b: Mapping[Any, Mapping[str, Any]],
              shared: Sequence[Any]) -> tuple[list[FidelityRate], int, tuple[str, str]]:
    """The simulator's fidelity in both runs over the shared cells both checked (every
    cell, scored or not: the patient spoke either way)."""
    both = [k for k in shared if isinstance(cells_a[k].get("fidelity"), Mapping)
            and isinstance(cells_b[k].get("fidelity"), Mapping)]
    if not both:
        return [], 0, ("", "")
    fa = fidelity_summary([cells_a[k] for k in both])["fidelity"]
    fb = fidelity_summary([cells_b[k] for k in both])["fidelity"]
    out = []
    for role, names in (("patient", PATIENT_LABELS), ("technician", TECHNICIAN_LABELS)):
        for name in names:
            x, y = fa[role][name], fb[role][name]
            if not (x["n"] or y["n"]):
                continue
            diff = y["rate"] - x["rate"] if x["rate"] is not None and y["rate"] is not None else None
            out.append(FidelityRate(role, name, x["k"], x["n"], x["rate"], tuple(x["ci95"]), y["k"], y["n"], y["rate"],
                                    tuple(y["ci95"]), diff))
    return out, len(both), (fa["checker"], fb["checker"])


def _compare(a: Run, b: Run, la: str, lb: str, cond_a: str, cond_b: str) -> Comparison:
    cells_a, cells_b = a.cells(cond_a), b.cells(cond_b)
    shared = [k for k in cells_a if k in cells_b]
    excluded: list[Excluded] = []
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for k in shared:
        ra, rb = cells_a[k], cells_b[k]
        wa, wb = _why_not_scored(ra), _why_not_scored(rb)
        if wa or wb:
            excluded.append(Excluded(k[0], k[1], wa or "scored", wb or "scored"))
        else:
            pairs.append((ra, rb))
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    flips_a: list[Flip] = []
    flips_b: list[Flip] = []
    for ra, rb in pairs:
        ca, cb = bool(ra["correct"]), bool(rb["correct"])
        counts[(ca, cb)] += 1
        if ca != cb:
            flip = Flip(ra["case_id"], int(ra.get("seed", 0)), ra.get("diagnosis"), rb.get("diagnosis"),
                        ra.get("truth") if ra.get("truth") is not None else rb.get("truth"))
            (flips_a if ca else flips_b).append(flip)
    both, only_a, only_b, neither = counts[(True, True)], counts[(True, False)], counts[(False, True)], \
        counts[(False, False)]
    n = len(pairs)
    seeds_per_case: dict[str, int] = {}
    for ra, _ in pairs:
        seeds_per_case[ra["case_id"]] = seeds_per_case.get(ra["case_id"], 0) + 1
    return Comparison(
        a=la, b=lb, condition_a=cond_a, condition_b=cond_b, shared=len(shared),
        only_a=sum(1 for k in cells_a if k not in cells_b), only_b=sum(1 for k in cells_b if k not in cells_a),
        excluded=excluded, both_right=both, only_a_right=only_a, only_b_right=only_b, both_wrong=neither,
        accuracy_a=(both + only_a) / n if n else None, ci95_a=wilson_interval(both + only_a, n),
        accuracy_b=(both + only_b) / n if n else None, ci95_b=wilson_interval(both + only_b, n),
        difference=(only_b - only_a) / n if n else None,
        difference_ci95=paired_difference_interval(both, only_a, only_b, neither),
        mcnemar_p=mcnemar_exact(only_a, only_b), flips_a_right=flips_a, flips_b_right=flips_b,
        ratios=_ratios(pairs), repeated_cases=sum(1 for v in seeds_per_case.values() if v > 1),
        measures=measure_rows(pairs),
        **dict(zip(("fidelity", "fidelity_cells", "fidelity_checkers"), _fidelity(cells_a, cells_b, shared))))


def compare_runs(runs: Sequence[Run]) -> CompareReport:
    """Each run after the first against the first, condition pair by condition pair.
    Raises :class:`CompareError` when a run shares no cell with the first."""
    if len(runs) < 2:
        raise CompareError("compare needs at least two runs")
    a = runs[0]
    comparisons: list[Comparison] = []
    notes: list[str] = []
    for i, b in enumerate(runs[1:], start=1):
        la, lb = "A", run_label(i)
        got = [_compare(a, b, la, lb, ca, cb) for ca, cb in _condition_pairs(a, b)]
        if not any(c.shared for c in got):
            seeds_a = sorted({int(r.get("seed", 0)) for r in a.rows})
            seeds_b = sorted({int(r.get("seed", 0)) for r in b.rows})
            raise CompareError(f"{a.path} and {b.path}: no cells in common (same case id and seed"
                               f"{'' if a.condition or b.condition else ' and condition'}); seeds {seeds_a} against "
                               f"{seeds_b}, {len({r['case_id'] for r in a.rows})} against "
                               f"{len({r['case_id'] for r in b.rows})} case ids")
        for c in got:
            if c.shared:
                comparisons.append(c)
            else:
                notes.append(f"{lb} against A on condition {c.condition_a}: no cells in common, not compared")
        if not (a.condition or b.condition):
            for run, other, label in ((a, b, la), (b, a, lb)):
                left = [c for c in run.conditions if c not in other.conditions]
                if left and len(a.conditions) + len(b.conditions) > 2:
                    notes.append(f"{label} ({run.path}): condition(s) {', '.join(left)} not in "
                                 f"{'A' if label != 'A' else lb}, not compared")
    gaps = oracle_gaps([run_label(i) for i in range(len(runs))],
                       [r.cells(r.condition or (r.conditions[0] if r.conditions else "base")) for r in runs],
                       [is_static(r.spec) for r in runs], lambda row: _why_not_scored(row) is None)
    for i, r in enumerate(runs):
        if not r.finished:
            notes.append(f"{run_label(i)} ({r.path}): no summary.json, the run may be unfinished")
        notes += [f"{run_label(i)}: {n}" for n in r.notes]
    return CompareReport(list(runs), comparisons, notes, gaps)
