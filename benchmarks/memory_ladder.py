"""Does memory help? Accuracy on a scored split with memory off vs. frozen after learning
on a separate split, on one model (default: the embedded Qwen2.5-Coder-1.5B).

    .venv/bin/python benchmarks/memory_ladder.py [--llm local] [--learn 24] [--score 24] [--max-turns 8]

The case file (default: AgentClinic's MedQA cases beside the checkout) is split in order:
the first --learn cases teach the memory, the next --score cases are scored twice (memory off,
then frozen). Prints the case counts, each accuracy with its Wilson interval, and the paired
difference (frozen - off) with its 95% interval (Bonett-Price, as `medsim compare`) and McNemar's exact test. Runs are resumable
(`runs/memory-ladder/`); the split files are written there, never into the repository.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents.results import read_results
from agents.stats import mcnemar_exact, paired_difference_interval
from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec

DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared" / "data" / "agentclinic" / "agentclinic_medqa.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default="local")
    ap.add_argument("--cases", default=str(DEFAULT_CASES))
    ap.add_argument("--learn", type=int, default=24)
    ap.add_argument("--score", type=int, default=24)
    ap.add_argument("--max-turns", type=int, default=8)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--out", type=Path, default=Path("runs/memory-ladder"))
    args = ap.parse_args()
    lines = [line for line in Path(args.cases).read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(lines) < args.learn + args.score:
        raise SystemExit(f"{args.cases} has {len(lines)} cases; need {args.learn + args.score}")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = Path(args.cases).stem

    def split(name: str, rows: list[str], start: int) -> Path:
        p = args.out / f"{name}.jsonl"
        out = []
        for i, line in enumerate(rows):
            rec = json.loads(line)
            rec.setdefault("id", f"{stem}-{start + i + 1:03d}")  # the ids the full file would give
            out.append(json.dumps(rec, ensure_ascii=False))
        p.write_text("\n".join(out) + "\n", encoding="utf-8")
        return p

    learn = split("learn", lines[: args.learn], 0)
    score = split("score", lines[args.learn: args.learn + args.score], args.learn)
    common = {"cases": str(score), "llm": args.llm, "protocol.max_turns": args.max_turns}
    off = build_spec(None, common, default_llm="local")
    frozen = build_spec(None, {**common, "memory.learn_cases": str(learn), "memory.dir": str(args.out / "memory"),
                               "memory.embedder": args.embedder}, default_llm="local")
    o_off = run_bench(off, BenchOptions(out=args.out / "off", resume=True))
    o_mem = run_bench(frozen, BenchOptions(out=args.out / "frozen", resume=True))
    lrows = read_results(args.out / "frozen" / "learning" / "results.jsonl")
    learned = {k: sum(1 for r in lrows if r.get("learned") == k) for k in ("filed", "insight_stored", "nothing")}
    a = {r["case_id"]: r for r in read_results(args.out / "off" / "results.jsonl")}
    b = {r["case_id"]: r for r in read_results(args.out / "frozen" / "results.jsonl")}
    both = [cid for cid in a if cid in b and a[cid]["correct"] is not None and b[cid]["correct"] is not None]
    n = len(both)
    right_a = {c for c in both if a[c]["correct"]}
    right_b = {c for c in both if b[c]["correct"]}
    gain, loss = len(right_b - right_a), len(right_a - right_b)
    mean = (gain - loss) / n if n else float("nan")
    lo, hi = paired_difference_interval(len(right_a & right_b), loss, gain, n - len(right_a | right_b)) if n else (
        float("nan"), float("nan"))

    def acc(o) -> str:  # noqa: ANN001
        s = o.summary
        lo, hi = s["ci95"]
        return (f"{s['correct']}/{s['scored']} = {s['accuracy']:.1%} (95% CI {lo:.1%}-{hi:.1%}); "
                f"failed {s['failed']}, errors {s['errors']}") if s["accuracy"] is not None else "n/a"
    ls = json.loads((args.out / "frozen" / "learning" / "summary.json").read_text())
    print(f"model {args.llm}; embedder {args.embedder}; max turns {args.max_turns}; cases from {args.cases}")
    print(f"learning split: {len(lrows)} cases ({ls['correct']}/{ls['scored']} right on the first attempt); "
          f"filed {learned['filed']}, insights stored {learned['insight_stored']}, nothing {learned['nothing']}; "
          f"memory {ls['memory']['records']} records + {ls['memory']['experience']} insights")
    print(f"scored split, memory off:    {acc(o_off)}")
    print(f"scored split, memory frozen: {acc(o_mem)}")
    print(f"paired on {n} cases scored in both: frozen - off = {mean:+.1%} (95% CI {lo:+.1%} to {hi:+.1%}, "
          f"Bonett-Price); right only with memory {gain}, only without {loss}; McNemar exact p = "
          f"{mcnemar_exact(loss, gain):.3f}")


if __name__ == "__main__":
    main()
