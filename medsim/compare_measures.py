"""What ``medsim compare`` says beyond accuracy: the measures of each paired cell
(top-k of the differential, calibration, information elicited, tests ordered) and the
oracle gap.

- :func:`measure_rows`: for the cells two runs both scored, each measure in both runs and
  the paired difference (top-k: Bonett-Price's paired interval; recall and F1: a paired
  bootstrap interval of the mean difference; the Brier score over the cells with a top-1
  confidence in each run, no paired interval).
- :func:`oracle_gaps`: where one of the runs is a static run (the doctor read the whole
  case: protocol.static), the share of the gap between the baseline A and that
  full-information run that each other run closes, (acc(X) - acc(A)) / (acc(S) - acc(A))
  on the cases scored in all three, with a paired bootstrap 95% interval (cases
  resampled together; draws where the gap is zero are left out, and counted).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agents.measures.calibration import bootstrap_interval
from agents.measures.gap import OracleGap, oracle_gaps
from agents.stats import paired_difference_interval

__all__ = ["MeasureRow", "OracleGap", "measure_rows", "oracle_gaps", "is_static", "measures_markdown",
           "gaps_markdown"]


@dataclass(frozen=True)
class MeasureRow:
    """One measure in both runs over the ``n`` paired cells where both have it."""

    measure: str
    n: int
    a: float | None
    b: float | None
    difference: float | None
    ci95: tuple[float, float] | None
    method: str


def is_static(spec: Mapping[str, Any]) -> bool:
    return bool((spec.get("protocol") or {}).get("static"))


def _rank(row: Mapping[str, Any]) -> int | None:
    d = row.get("differential")
    if isinstance(d, Mapping) and d.get("scored"):
        return int(d.get("rank") or 0)
    return None


def _value(row: Mapping[str, Any], block: str, key: str) -> float | None:
    d = row.get(block)
    if isinstance(d, Mapping) and d.get("scored") and isinstance(d.get(key), (int, float)):
        return float(d[key])
    return None


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def measure_rows(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[MeasureRow]:
    """The measures of the paired cells (rows that lack a measure are left out of it)."""
    out: list[MeasureRow] = []
    ranked = [(_rank(a), _rank(b)) for a, b in pairs]
    ranked = [(x, y) for x, y in ranked if x is not None and y is not None]
    for k in (1, 3, 5):
        if not ranked:
            break
        hit = [(0 < x <= k, 0 < y <= k) for x, y in ranked]
        both = sum(1 for x, y in hit if x and y)
        oa = sum(1 for x, y in hit if x and not y)
        ob = sum(1 for x, y in hit if y and not x)
        n = len(hit)
        out.append(MeasureRow(f"top-{k}", n, (both + oa) / n, (both + ob) / n, (ob - oa) / n,
                              paired_difference_interval(both, oa, ob, n - both - oa - ob), "Bonett-Price paired"))
    for name, block, key in (("information recall", "elicited", "recall"), ("tests precision", "orders", "precision"),
                             ("tests recall", "orders", "recall"), ("tests F1", "orders", "f1")):
        vals = [(_value(a, block, key), _value(b, block, key)) for a, b in pairs]
        vals = [(x, y) for x, y in vals if x is not None and y is not None]
        if vals:
            n = len(vals)
            diffs = [y - x for x, y in vals]
            out.append(MeasureRow(name, n, sum(x for x, _ in vals) / n, sum(y for _, y in vals) / n, sum(diffs) / n,
                                  bootstrap_interval(diffs, _mean), "paired bootstrap of the mean difference"))
    conf = [(_value(a, "differential", "top1_confidence"), _rank(a), _value(b, "differential", "top1_confidence"),
             _rank(b)) for a, b in pairs]
    conf = [c for c in conf if None not in c]
    if conf:
        n = len(conf)
        ba = sum((ca - (ra == 1)) ** 2 for ca, ra, _, _ in conf) / n  # type: ignore[operator]
        bb = sum((cb - (rb == 1)) ** 2 for _, _, cb, rb in conf) / n  # type: ignore[operator]
        out.append(MeasureRow("Brier (top-1)", n, ba, bb, bb - ba, None, "cells with a confidence in both runs"))
    return out


def _f(x: float | None, pct: bool = True) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.1%}" if pct else f"{x:+.3f}"


def measures_markdown(rows: Sequence[MeasureRow], a: str, b: str) -> list[str]:
    if not rows:
        return []
    md = ["", f"### Measures on the paired cells ({b} - {a})", "",
          f"| measure | n | {a} | {b} | {b} - {a} | 95% CI | interval |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        pct = not r.measure.startswith("Brier")
        v = (lambda x: "n/a" if x is None else f"{x:.1%}") if pct else (lambda x: "n/a" if x is None else f"{x:.3f}")
        ci = "-" if r.ci95 is None else f"{_f(r.ci95[0], pct)} to {_f(r.ci95[1], pct)}"
        md.append(f"| {r.measure} | {r.n} | {v(r.a)} | {v(r.b)} | {_f(r.difference, pct)} | {ci} | {r.method} |")
    return md


def gaps_markdown(gaps: Sequence[OracleGap]) -> list[str]:
    if not gaps:
        return []
    md = ["## Oracle gap closed", "",
          "The share of the gap between the baseline A and the full-information (static) run that each run closes: "
          "(accuracy of the run - A) / (static - A), on the cases scored in all three; 95% paired bootstrap "
          "interval (cases resampled together; draws with no gap left out and counted).", "",
          "| run | static run | n | A | run | static | share closed | 95% CI | draws with no gap |",
          "|---|---|---|---|---|---|---|---|---|"]
    p = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    for g in gaps:
        ci = "n/a" if g.ci95 is None else f"{g.ci95[0]:.1%} to {g.ci95[1]:.1%}"
        md.append(f"| {g.run} | {g.oracle} | {g.n} | {p(g.accuracy_base)} | {p(g.accuracy_run)} | "
                  f"{p(g.accuracy_oracle)} | {p(g.share)} | {ci} | {g.degenerate_draws} |")
    return md + [""]
