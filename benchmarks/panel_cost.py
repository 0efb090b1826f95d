"""What a diagnosis strategy costs on top of a single doctor, read from a finished bench
run with conditions (``medsim bench --ladder`` or any grid).

The deliberation (CoT, the voting panel, the role-split panel) happens on the doctor's
final turn, after it decided to diagnose, so per condition this sums the doctor's model
calls on each case's final turn: how many, the prompt tokens they sent (what N full
prompts would cost a backend without a KV cache), the tokens llama.cpp actually
evaluated (the shared consultation prefix is reused), completion tokens and seconds. Each
line is compared with the single doctor (``--single``, the ladder's "measurement" rung).

    .venv/bin/python benchmarks/panel_cost.py runs/ladder-local [--single measurement]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean


def final_turn_calls(events: list[dict]) -> list[dict]:
    end = next((e for e in events if e.get("type") == "consultation_ended"), None)
    if end is None:
        return []
    last = end["turns"]
    return [e for e in events if e.get("type") == "llm_call" and e.get("role") == "doctor" and e.get("turn") == last]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a bench output directory with several conditions")
    ap.add_argument("--single", default="measurement", help="the condition with one doctor and no deliberation")
    a = ap.parse_args(argv)
    results = a.run / "results.jsonl"
    if not results.is_file():
        print(f"{results}: not found (give a medsim bench --out directory)", file=sys.stderr)
        return 2
    rows = [json.loads(x) for x in results.read_text(encoding="utf-8").splitlines() if x.strip()]
    per: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("error") or not r.get("events"):
            continue
        events = [json.loads(x) for x in (a.run / r["events"]).read_text(encoding="utf-8").splitlines() if x.strip()]
        calls = final_turn_calls(events)
        whole = [e for e in events if e.get("type") == "llm_call" and e.get("role") == "doctor"]
        per.setdefault(r.get("condition", "base"), []).append({
            "case": r["case_id"], "calls": len(calls), "sent": sum(c["prompt_tokens"] for c in calls),
            "evaluated": sum(c["prompt_tokens_evaluated"] or 0 for c in calls),
            "completion": sum(c["completion_tokens"] for c in calls), "seconds": sum(c["latency_s"] for c in calls),
            "doctor_seconds": sum(c["latency_s"] for c in whole), "wall": r.get("wall_s") or 0.0})
    if a.single not in per:
        print(f"no condition {a.single!r} in {a.run} (have: {', '.join(per)}); choose one with --single",
              file=sys.stderr)
        return 2
    base = {k: mean(x[k] for x in per[a.single]) for k in ("calls", "sent", "evaluated", "completion", "seconds",
                                                           "doctor_seconds", "wall")}
    print(f"run: {a.run}   single doctor: {a.single}   (means per case, the doctor's final turn)")
    print(f"{'condition':<12} {'n':>3} {'calls':>6} {'sent':>8} {'evaluated':>9} {'eval/sent':>9} {'completion':>10} "
          f"{'final s':>8} {'x single':>8} {'case wall s':>11} {'x single':>8}")
    for cond, xs in per.items():
        m = {k: mean(x[k] for x in xs) for k in base}
        print(f"{cond:<12} {len(xs):>3} {m['calls']:>6.1f} {m['sent']:>8.0f} {m['evaluated']:>9.0f} "
              f"{m['evaluated'] / max(1.0, m['sent']):>9.3f} {m['completion']:>10.0f} {m['seconds']:>8.1f} "
              f"{m['seconds'] / max(1e-9, base['seconds']):>8.2f} {m['wall']:>11.1f} "
              f"{m['wall'] / max(1e-9, base['wall']):>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
