"""Real consultations from a small local model: AgentClinic's protocol vs. medsim's default.

Runs the same demo cases twice on one model (default: the embedded Qwen2.5-Coder-1.5B):
once with ``--protocol agentclinic`` (marker turns, AgentClinic-style prompts, a diagnosis
accepted at any turn, no detectors) and once with medsim's default (structured turns,
minimum gathering, detectors with corrective retries). Prints, per mode: consultations
with >= 3 exchanges and >= 1 test before the diagnosis, tests per case, refusals, role
breaks, loops (detected and handled / left in the transcript), failed consultations,
accuracy (Wilson 95% CI), median wall time, prompt tokens evaluated and sent and
completion tokens per case. Runs are resumable (``runs/small-models/<mode>``).

    .venv/bin/python benchmarks/small_models.py [--llm local] [--limit 10]
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from agents.results import read_results
from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec
from agents.events import read_events
from agents.guards import check_reply
from agents.stats import wilson_interval

def analyse(out: Path) -> dict:
    rows = read_results(out / "results.jsonl")
    per_case = []
    for r in rows:
        ev = read_events(out / r["events"])
        rejected = [e for e in ev if e["type"] == "reply_rejected"]
        # post-hoc: the same detectors over what was left in the transcript
        left = {"refusal": 0, "role_break": 0, "loop": 0}
        prev: dict[str, list[str]] = {"doctor": [], "patient": [], "measurement": []}
        incoming = ""
        for e in ev:
            if e["type"] == "llm_call" and e["role"] in prev:
                incoming = e["messages"][-1]["content"]
            if e["type"] == "utterance":
                # check the raw reply of the role (the doctor's JSON is checked on its spoken text)
                p = check_reply(e["speaker"], e["text"], prev[e["speaker"]], incoming)
                if p in left:
                    left[p] += 1
                prev[e["speaker"]].append(e["text"])
        routes = [e for e in ev if e["type"] == "route"]
        diag_turn = next((e["turn"] for e in ev if e["type"] == "diagnosis"), None)
        before = [e for e in routes if diag_turn is None or e["turn"] < diag_turn]
        exchanges = sum(1 for e in before if e["route"] in ("patient", "measurement"))
        tests_before = sum(1 for e in before if e["route"] == "measurement")
        per_case.append({
            "gathered": exchanges >= 3 and tests_before >= 1 and diag_turn is not None,
            "tests": r["n_tests"],
            "handled": {k: sum(1 for e in rejected if e["problem"] == k) for k in left},
            "left": left,
        })
    n = len(rows)
    scored = [r for r in rows if not r.get("error") and r.get("status") != "failed"]
    correct = sum(1 for r in scored if r.get("correct"))
    lo, hi = wilson_interval(correct, len(scored))
    tot = lambda key: sum(r[key] or 0 for r in rows)  # noqa: E731
    return {
        "cases": n,
        "gathered": sum(c["gathered"] for c in per_case),
        "tests_per_case": sum(c["tests"] for c in per_case) / max(1, n),
        "handled": {k: sum(c["handled"][k] for c in per_case) for k in ("refusal", "role_break", "loop")},
        "left": {k: sum(c["left"][k] for c in per_case) for k in ("refusal", "role_break", "loop")},
        "failed": sum(1 for r in rows if r.get("status") == "failed"),
        "errors": sum(1 for r in rows if r.get("error")),
        "correct": correct, "scored": len(scored), "ci": (lo, hi),
        "median_wall": statistics.median(r["wall_s"] for r in rows) if rows else 0.0,
        "sent": tot("prompt_tokens") / max(1, n), "evaluated": tot("prompt_tokens_evaluated") / max(1, n),
        "completion": tot("completion_tokens") / max(1, n),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default="local")
    ap.add_argument("--cases", default="demo")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("runs/small-models"))
    ap.add_argument("--modes", nargs="*", default=["agentclinic", "medsim"])
    args = ap.parse_args()
    results = {}
    for mode in args.modes:
        out = args.out / mode
        spec = build_spec(None, {"cases": args.cases, "llm": args.llm, "limit": args.limit, "protocol.name": mode})
        run_bench(spec, BenchOptions(out=out, resume=True))
        results[mode] = analyse(out)
    names = {"agentclinic": "markers (AgentClinic protocol)", "medsim": "default (structured + guards)"}
    print(f"\nmodel: {args.llm}; cases: first {args.limit} of {args.cases}")
    for mode, s in results.items():
        lo, hi = s["ci"]
        print(f"\n== {names.get(mode, mode)} ==")
        print(f"consultations with >=3 exchanges and >=1 test before the diagnosis: {s['gathered']}/{s['cases']}")
        print(f"tests requested per case: {s['tests_per_case']:.1f}")
        for k in ("refusal", "role_break", "loop"):
            print(f"{k}s: detected and retried {s['handled'][k]}, left in transcript {s['left'][k]}")
        print(f"failed consultations: {s['failed']}; backend errors: {s['errors']}")
        print(f"accuracy: {s['correct']}/{s['scored']} (95% CI {lo:.0%}-{hi:.0%})")
        print(f"median wall time per case: {s['median_wall']:.1f} s")
        print(f"per case: prompt tokens sent {s['sent']:.0f}, evaluated {s['evaluated']:.0f} "
              f"(ratio {s['evaluated'] / max(1, s['sent']):.3f}), completion {s['completion']:.0f}")


if __name__ == "__main__":
    main()
