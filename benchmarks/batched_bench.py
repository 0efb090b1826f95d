"""Cases per hour of ``medsim bench --llm local``: today's serial lock against batched
decoding, on whole consultations (issue 14).

``benchmarks/batched_decode.py`` times one-turn prompts that share one system prompt,
which favours the serial path (its context keeps that prefix). Real consultations differ:
with ``--workers N`` the serial path shares one context per role among N interleaved
cases (each call finds another case's conversation there and re-evaluates its own), while
the batched engine keeps a sequence per (case, role). This script runs the bench itself
(:func:`medsim.bench.run_bench`, the spec built as the command line builds it) on the
first ``--limit`` cases, three ways per ``--workers W``:

- ``serial w1``: ``medsim bench --workers 1`` (the reference);
- ``serial wW``: ``medsim bench --workers W --no-batched`` (one call at a time behind the model's lock);
- ``batched wW``: ``medsim bench --workers W`` (batched: the default with an in-process model);

and prints wall time, cases per hour, tokens per second (completion; and prompt evaluated
plus completion), the prompt tokens evaluated, the ratio of cases per hour to ``serial
w1``, and how many diagnoses equal serial w1's (batched replies may drift a little). The
issue's goals on 2 cores: >= 1.5x at 4 workers and >= 2.5x at 16.

    .venv/bin/python benchmarks/batched_bench.py --model local \\
        --cases ../shared/data/agentclinic/agentclinic_medqa.jsonl --limit 16 --workers 4 16 --max-turns 8

A quick check with the small model: ``--model smollm2 --cases demo --limit 2 --workers 2
--max-turns 3 --threads 1``. Wall time includes loading the model (from the page cache:
the file is read once before the first run); the run directories go under ``--out``
(default: a temporary directory, removed at the end). Run it on an idle machine: on a busy
one, llama.cpp's threads wait for each other at every step.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.llm.local_model import embedded_model_path, smollm2_path
from medsim.assemble import pool_for
from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec


def run_one(args: argparse.Namespace, out: Path, workers: int, batched: bool) -> dict[str, Any]:
    spec = build_spec(None, {"cases": args.cases, "limit": args.limit, "llm": args.model, "workers": workers,
                             "batched": batched, "protocol.max_turns": args.max_turns, "seed": args.seed,
                             "preflight": False})
    pool = pool_for(spec, n_threads=args.threads)
    t0 = time.perf_counter()
    try:
        outcome = run_bench(spec, BenchOptions(out=out, progress=False), pool=pool)
        wall = time.perf_counter() - t0
        engines = list(pool._engines.values())
    finally:
        pool.close()
    s = outcome.summary
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return {"mode": f"{'batched' if batched else 'serial'} w{workers}", "cases": s["cases"], "scored": s["scored"],
            "errors": s["errors"], "failed": s["failed"], "wall_s": wall, "cases_h": s["cases"] / wall * 3600,
            "completion": s["completion_tokens"], "evaluated": s["prompt_tokens_evaluated"],
            "sent": s["prompt_tokens"], "diagnoses": {(r["case_id"], r.get("seed", 0)): r["diagnosis"] for r in rows},
            "shape": ", ".join(f"{e.n_seq}x{e.n_ctx_seq}" for e in engines),
            "mean_batch": (sum(e.step_tokens for e in engines) / max(1, sum(e.steps for e in engines))) if engines else None,
            "copies": sum(e.copies for e in engines) if engines else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local", choices=("local", "smollm2"), help="in-process model (default local)")
    ap.add_argument("--cases", default="demo", help="case set or JSONL path (default demo)")
    ap.add_argument("--limit", type=int, default=8, help="the first K cases (default 8)")
    ap.add_argument("--workers", type=int, nargs="+", default=[4], help="W values, each run serial and batched (default 4)")
    ap.add_argument("--max-turns", type=int, default=8, help="turn limit per consultation (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: every core, as the bench)")
    ap.add_argument("--no-serial-workers", action="store_true",
                    help="skip serial wW (the slowest mode: its contexts thrash); serial w1 and batched wW only")
    ap.add_argument("--out", type=Path, default=None, help="keep the run directories here (default: a temporary one)")
    args = ap.parse_args()
    path = embedded_model_path() if args.model == "local" else smollm2_path()
    with open(path, "rb") as fh:  # into the page cache: the first run does not pay the disk
        while fh.read(1 << 24):
            pass
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="batched-bench-")
        base = Path(tmp.name)
    else:
        base = args.out
        base.mkdir(parents=True, exist_ok=True)
    print(f"# {args.model} ({path.name}), cases {args.cases} first {args.limit}, max turns {args.max_turns}, "
          f"threads {args.threads or os.cpu_count()}, seed {args.seed}", flush=True)
    plan = [(1, False)] + [(w, b) for w in args.workers if w > 1 for b in (False, True) if b or not args.no_serial_workers]
    results = []
    try:
        for workers, batched in plan:
            r = run_one(args, base / f"{'batched' if batched else 'serial'}-w{workers}", workers, batched)
            results.append(r)
            print(f"  done {r['mode']}: {r['wall_s']:.1f} s", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    ref = results[0]
    head = (f"{'mode':<12} {'cases':>5} {'scored':>6} {'err':>3} {'wall s':>8} {'cases/h':>8} {'x w1':>5} "
            f"{'compl tok/s':>11} {'all tok/s':>9} {'evaluated':>9} {'same dx':>7}  engine")
    print(head)
    for r in results:
        same = sum(1 for k, d in r["diagnoses"].items() if ref["diagnoses"].get(k) == d)
        engine = (f"{r['shape']}, mean batch {r['mean_batch']:.2f}, {r['copies']} prefix copies"
                  if r["mean_batch"] is not None else "serial")
        print(f"{r['mode']:<12} {r['cases']:>5} {r['scored']:>6} {r['errors']:>3} {r['wall_s']:>8.1f} "
              f"{r['cases_h']:>8.1f} {r['cases_h'] / ref['cases_h']:>5.2f} {r['completion'] / r['wall_s']:>11.2f} "
              f"{(r['completion'] + r['evaluated']) / r['wall_s']:>9.1f} {r['evaluated']:>9} "
              f"{same:>3}/{len(r['diagnoses']):<3}  {engine}")


if __name__ == "__main__":
    main()
