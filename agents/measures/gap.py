"""The oracle gap: how much of the distance between a baseline and a full-information
(static) run a condition closes, (acc(X) - acc(base)) / (acc(static) - acc(base)) on the
cases scored in all three, with a paired bootstrap 95% interval (cases resampled
together; draws in which the gap is zero are left out and counted). ``medsim compare``
and a run's own conditions (the ladder) report it."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["OracleGap", "oracle_gaps", "condition_gaps", "gaps_table"]

_DRAWS = 2000


@dataclass(frozen=True)
class OracleGap:
    """How much of the gap between the baseline (A) and the full-information run (S) the
    run closes."""

    run: str
    oracle: str
    n: int
    accuracy_base: float | None
    accuracy_run: float | None
    accuracy_oracle: float | None
    share: float | None  # (run - base) / (oracle - base); None when the gap is zero
    ci95: tuple[float, float] | None
    degenerate_draws: int  # bootstrap draws with no gap, left out


def _acc(rows: Sequence[Mapping[str, Any]]) -> float:
    return sum(1 for r in rows if r.get("correct")) / len(rows)


def oracle_gaps(labels: Sequence[str], cells: Sequence[Mapping[Any, Mapping[str, Any]]], static: Sequence[bool],
                scored: Callable[[Mapping[str, Any]], bool], seed: int = 0) -> list[OracleGap]:
    """The oracle gap of each run (but the baseline, the first, and the static ones)
    against each static run; ``cells[i]`` the cells of run ``labels[i]`` by key."""
    out: list[OracleGap] = []
    base = cells[0]
    for s, oracle in enumerate(cells):
        if s == 0 or not static[s]:
            continue
        for i, run in enumerate(cells):
            if i in (0, s) or static[i]:
                continue
            keys = [k for k in base if k in run and k in oracle and scored(base[k]) and scored(run[k])
                    and scored(oracle[k])]
            if not keys:
                continue
            rows = [(base[k], run[k], oracle[k]) for k in keys]
            ab, ar, ao = (_acc([r[j] for r in rows]) for j in range(3))
            share = (ar - ab) / (ao - ab) if ao != ab else None
            rng = random.Random(seed)
            draws, degenerate = [], 0
            n = len(rows)
            for _ in range(_DRAWS):
                pick = [rows[rng.randrange(n)] for _ in range(n)]
                b_, r_, o_ = (_acc([p[j] for p in pick]) for j in range(3))
                if o_ == b_:
                    degenerate += 1
                    continue
                draws.append((r_ - b_) / (o_ - b_))
            draws.sort()
            ci = ((round(draws[int(0.025 * (len(draws) - 1))], 4), round(draws[int(0.975 * (len(draws) - 1))], 4))
                  if len(draws) >= 2 else None)
            out.append(OracleGap(labels[i], labels[s], n, ab, ar, ao, None if share is None else round(share, 4), ci,
                                 degenerate))
    return out


def condition_gaps(rows: Sequence[Mapping[str, Any]], order: Sequence[str], static: Sequence[bool]) -> list[OracleGap]:
    """The oracle gaps of a run's own conditions: the first condition that is not static
    is the baseline, each static one an oracle (rows errored or failed are left out)."""
    if not any(static) or all(static):
        return []
    base = next(i for i, s in enumerate(static) if not s)
    names = [order[base]] + [c for i, c in enumerate(order) if i != base]
    flags = [static[base]] + [s for i, s in enumerate(static) if i != base]
    cells = [{(r["case_id"], int(r.get("seed", 0))): r for r in rows if r.get("condition", "base") == c} for c in names]
    return oracle_gaps(names, cells, flags, lambda r: not r.get("error") and r.get("status") != "failed"
                       and r.get("correct") is not None)


def gaps_table(gaps: Sequence[OracleGap], base: str) -> list[str]:
    """The gaps as Markdown lines."""
    if not gaps:
        return []
    p = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    md = ["", f"## Oracle gap closed (against {base}; paired bootstrap 95% interval)", "",
          "| condition | static | n | baseline | condition | static | share closed | 95% CI |",
          "|---|---|---|---|---|---|---|---|"]
    for g in gaps:
        ci = "n/a" if g.ci95 is None else f"{g.ci95[0]:.1%} to {g.ci95[1]:.1%}"
        md.append(f"| {g.run} | {g.oracle} | {g.n} | {p(g.accuracy_base)} | {p(g.accuracy_run)} | "
                  f"{p(g.accuracy_oracle)} | {p(g.share)} | {ci} |")
    return md
