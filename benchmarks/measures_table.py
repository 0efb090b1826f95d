"""One table of several finished runs on the cells they all scored (issue 22): top-1,
top-3, top-5 (with Wilson 95% intervals), the Brier score of the top-1 confidence,
information recall, tests F1, tokens and wall time per case, and n; then each run
against the first (paired: top-1 and top-5 differences with Bonett-Price intervals), and
the share of the gap to the static run that each closes (when one of the runs is static).

    .venv/bin/python benchmarks/measures_table.py LABEL=RUN_DIR [LABEL=RUN_DIR ...]

A run directory may be a re-scoring (``RUN/scores/LABEL``). Every figure is read from the
rows' blocks (``agents.measures``); the judge and the checker are named under the table. A
run scored before the measures existed gets the two deterministic ones (information
elicited, tests ordered) computed here from its event logs, and a differential of one
(its diagnosis) for top-k; it has no confidence, so no Brier score.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.cases.registry import load_cases  # noqa: E402
from agents.events import DictSink, read_events  # noqa: E402
from agents.measures.elicited import ElicitationScorer, elicited_row  # noqa: E402
from agents.measures.gap import oracle_gaps  # noqa: E402
from agents.measures.ordered import OrdersScorer, orders_row  # noqa: E402
from agents.scorers import Transcript  # noqa: E402
from agents.stats import paired_difference_interval, wilson_interval  # noqa: E402
from medsim.compare import load_run  # noqa: E402
from medsim.compare_measures import is_static  # noqa: E402


def _ok(r: dict) -> bool:
    return not r.get("error") and r.get("status") != "failed" and r.get("correct") is not None


def _rank(r: dict) -> int:
    d = r.get("differential") or {}
    if d.get("scored"):
        return int(d.get("rank") or 0)
    return 1 if r.get("correct") else 0  # a run scored before the measures: a differential of one


def _fill(run, rows: list[dict], every: bool = False) -> int:
    """The deterministic measures of rows scored before they existed (``every``: of all
    rows: the runs scored with the code of today, not of the day each ran), from the logs."""
    missing = [r for r in rows if r.get("events") and (every or "elicited" not in r and "orders" not in r)]
    if not missing:
        return 0
    cases = {c.id: c for c in load_cases(run.spec["cases"])[0]}
    # a re-scoring's own logs hold its scoring only: the consultation is in the run's log of that name
    root = run.path.parent.parent if run.path.parent.name == "scores" else run.path
    for r in missing:
        events = read_events(root / "events" / Path(r["events"]).name)
        t = Transcript.from_events(events, case_id=r["case_id"])
        for scorer, key, read in ((ElicitationScorer(), "elicited", elicited_row), (OrdersScorer(), "orders", orders_row)):
            s = scorer(cases[r["case_id"]], t, DictSink())
            r[key] = read([{"type": "scored", "scorer": s.scorer, "value": s.value, "details": s.details}])
    return len(missing)


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    ap.add_argument("--rescore", action="store_true",
                    help="compute information elicited and tests ordered again from every run's logs, with this "
                         "checkout's matching (runs made on different days are then measured alike)")
    a = ap.parse_args()
    labels, runs = [], []
    for arg in a.runs:
        label, _, path = arg.partition("=")
        labels.append(label if path else Path(label).name)
        runs.append(load_run(path or label))
    for lb, run in zip(labels, runs):
        if (k := _fill(run, run.rows, a.rescore)):
            print(f"{lb}: information elicited and tests ordered computed from the logs of {k} cells")
    cells = [{(r["case_id"], int(r.get("seed", 0))): r for r in run.rows} for run in runs]
    keys = [k for k in cells[0] if all(k in c and _ok(c[k]) for c in cells)]
    n = len(keys)
    print(f"{n} cells scored in every run ({', '.join(f'{lb}: {len(c)}' for lb, c in zip(labels, cells))} cells)\n")
    print("| run | n | top-1 | top-3 | top-5 | Brier (n) | info recall | tests F1 | tokens/case | wall s/case |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    judges = set()
    for lb, c, run in zip(labels, cells, runs):
        rows = [c[k] for k in keys]
        tops = []
        for k in (1, 3, 5):
            hits = sum(1 for r in rows if 0 < _rank(r) <= k)
            lo, hi = wilson_interval(hits, n)
            tops.append(f"{hits / n:.1%} ({lo:.0%}-{hi:.0%})" if n else "n/a")
        conf = [((r.get("differential") or {}).get("top1_confidence"), _rank(r) == 1) for r in rows]
        conf = [(p, y) for p, y in conf if isinstance(p, (int, float))]
        brier = f"{sum((p - y) ** 2 for p, y in conf) / len(conf):.3f} ({len(conf)})" if conf else "-"
        rec = _mean([(r.get("elicited") or {}).get("recall") for r in rows if (r.get("elicited") or {}).get("scored")])
        f1 = _mean([(r.get("orders") or {}).get("f1") for r in rows if (r.get("orders") or {}).get("scored")])
        tok = _mean([(r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in rows])
        wall = _mean([r.get("wall_s") for r in rows])
        judges |= {str((r.get("differential") or {}).get("judge")) for r in rows if r.get("differential")}
        print(f"| {lb} | {n} | {' | '.join(tops)} | {brier} | {'-' if rec is None else f'{rec:.3f}'} | "
              f"{'-' if f1 is None else f'{f1:.3f}'} | {tok:,.0f} | {wall:.1f} |")
    print(f"\njudge: {', '.join(sorted(j for j in judges if j != 'None')) or 'the runs’ own (see their reports)'}")
    base = cells[0]
    print("\n| run vs " + labels[0] + " | top-1 difference (95% CI) | top-5 difference (95% CI) |\n|---|---|---|")
    for lb, c in list(zip(labels, cells))[1:]:
        out = []
        for k in (1, 5):
            x = [(0 < _rank(base[key]) <= k, 0 < _rank(c[key]) <= k) for key in keys]
            both = sum(1 for p, q in x if p and q)
            oa = sum(1 for p, q in x if p and not q)
            ob = sum(1 for p, q in x if q and not p)
            lo, hi = paired_difference_interval(both, oa, ob, n - both - oa - ob)
            out.append(f"{(ob - oa) / n:+.1%} ({lo:+.1%} to {hi:+.1%})")
        print(f"| {lb} | {out[0]} | {out[1]} |")
    gaps = oracle_gaps(labels, [{k: c[k] for k in keys} for c in cells], [is_static(r.spec) for r in runs], _ok)
    if gaps:
        print(f"\n| run | oracle (static) | share of the gap {labels[0]} -> oracle closed (top-1) | 95% CI (paired "
              f"bootstrap) | n |\n|---|---|---|---|---|")
        for g in gaps:
            ci = "n/a" if g.ci95 is None else f"{g.ci95[0]:.1%} to {g.ci95[1]:.1%}"
            print(f"| {g.run} | {g.oracle} | {'n/a' if g.share is None else f'{g.share:.1%}'} | {ci} | {g.n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
