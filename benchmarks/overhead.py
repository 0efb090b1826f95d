"""Framework overhead per case with the scripted backend (goal: <= 5 ms per case).

The scripted backend does no model work, so the wall time per case is what medsim itself
costs: prompt rendering, parsing, routing, judging, the event log on disk, results rows.

    .venv/bin/python benchmarks/overhead.py [--cases demo] [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec
from agents.events import read_events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=["demo", str(Path(__file__).resolve().parents[2] / "shared/data/agentclinic/agentclinic_medqa.jsonl")])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    for spec in args.cases:
        if spec != "demo" and not Path(spec).is_file():
            print(f"{spec}: not found, skipped")
            continue
        per_case, events = [], 0
        for i in range(args.repeats):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.perf_counter()
                o = run_bench(build_spec(None, {"cases": spec}), BenchOptions(out=Path(d) / "run", progress=False))
                wall = time.perf_counter() - t0
                n = o.summary["cases"]
                per_case.append(wall / n * 1000)
                if i == 0:
                    events = sum(len(read_events(p)) for p in (Path(d) / "run" / "events").iterdir())
        med = statistics.median(per_case)
        print(f"{Path(spec).name}: {n} cases, {events / n:.0f} events/case, framework overhead per case "
              f"median {med:.2f} ms (min {min(per_case):.2f}, max {max(per_case):.2f}, {args.repeats} runs) "
              f"-> goal <= 5 ms: {'met' if med <= 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
