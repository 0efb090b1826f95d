"""Prompt tokens evaluated vs. sent over real consultations (goal: evaluated <= 1/4 of
what re-sending the whole history every call would cost).

Every call's ``prompt_tokens`` is the full prompt it sent (what a backend without a KV
cache evaluates); ``prompt_tokens_evaluated`` is what llama.cpp actually evaluated after
reusing the role's cached prefix.

    .venv/bin/python benchmarks/kv_cache.py [--llm local] [--cases demo] [--n 3] [--max-turns 20]
"""
from __future__ import annotations

import argparse
import time

from agents.cases import load_cases
from agents.consultation import run_consultation
from agents.events import DictSink
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.results import case_row
from agents.suites.diagnosis import consultation_config
from medsim.assemble import Backends, plan_for
from medsim.spec import build_spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default="local")
    ap.add_argument("--cases", default="demo")
    ap.add_argument("--ids", nargs="*", default=["demo-003", "demo-007", "demo-011"])
    ap.add_argument("--max-turns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context", nargs="*", default=["per_role"], choices=["per_role", "swap", "shared"],
                    help="how roles share the model (several: compared in one run)")
    args = ap.parse_args()
    spec = build_spec(None, {"cases": args.cases, "llm": args.llm, "seed": args.seed,
                             "protocol.max_turns": args.max_turns})
    cases, _ = load_cases(spec.cases)
    by_id = {c.id: c for c in cases}
    chosen = [by_id[i] for i in args.ids if i in by_id] or cases[:3]
    for mode in args.context:
        pool = LlamaPool()
        plan = plan_for(spec, "base", args.seed, Backends(by_id, pool))
        for b in set(plan.llms.values()):
            if isinstance(b, LlamaCppLLM):
                b.context = mode
        sent = evald = 0
        total_wall = 0.0
        print(f"\ncontext mode: {mode}")
        print(f"{'case':<10} {'status':<12} {'turns':>5} {'calls':>5} {'sent':>7} {'evaluated':>9} {'ratio':>6} {'wall_s':>7}")
        for case in chosen:
            t0 = time.perf_counter()
            sink = DictSink()
            run_consultation(case, plan.cast(case, sink), consultation_config(plan.spec.protocol), sink)
            wall = time.perf_counter() - t0
            r = case_row(case, sink.events, seed=args.seed, condition="base", events_file="", wall_s=wall)
            total_wall += wall
            sent += r["prompt_tokens"]
            evald += r["prompt_tokens_evaluated"] or 0
            print(f"{case.id:<10} {r['status']:<12} {r['turns']:>5} {r['llm_calls']:>5} {r['prompt_tokens']:>7} "
                  f"{r['prompt_tokens_evaluated']!s:>9} {(r['prompt_tokens_evaluated'] or 0) / max(1, r['prompt_tokens']):>6.3f} {wall:>7.1f}")
        pool.close()
        ratio = evald / max(1, sent)
        print(f"total ({mode}): sent {sent}, evaluated {evald}, evaluated/sent = {ratio:.3f} "
              f"-> goal <= 0.25: {'met' if ratio <= 0.25 else 'NOT met'}; wall {total_wall:.1f} s")


if __name__ == "__main__":
    main()
