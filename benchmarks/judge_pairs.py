"""How far the diagnosis judge agrees with the labelled pairs.

Prints, for the shipped set (``agents/judge_pairs.jsonl``) or ``--pairs FILE``, the
figures of (a) the deterministic pre-check alone (undecided counted as "not correct"
and reported separately) and (b) the pre-check plus the embedded model judge
(Qwen2.5-Coder-1.5B-Instruct Q4_K_M through llama.cpp), for each reply format asked:
``text`` (a Yes/No answer) and ``json`` (a bounded {"relation", "why"} object that
llama.cpp enforces with a grammar). Then the pairs each judge got wrong.

    .venv/bin/python benchmarks/judge_pairs.py [--pairs FILE] [--format text json] [--gguf PATH]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from agents.events import LLMCall, ListSink
from agents.judge import REPLY_FORMATS, JudgeUnparsed, Verdict, judge_diagnosis, precheck
from agents.judge_eval import evaluate, format_evaluation, load_pairs, shipped_pairs
from agents.llm.base import GenerateParams
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import embedded_model_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, help="a labelled pairs JSONL file (default: the shipped set)")
    ap.add_argument("--format", nargs="*", default=list(REPLY_FORMATS), choices=REPLY_FORMATS,
                    help="the judge's reply formats to measure (default: all)")
    ap.add_argument("--gguf", type=Path, help="another GGUF model instead of the embedded one")
    ap.add_argument("--max-tokens", type=int, default=60)
    args = ap.parse_args()
    pairs = load_pairs(args.pairs) if args.pairs else shipped_pairs()
    source = str(args.pairs or "agents/judge_pairs.jsonl")

    t0 = time.perf_counter()
    pre = evaluate(pairs, precheck)
    print(format_evaluation(pre, f"== pre-check alone: {source} ({len(pairs)} pairs, {time.perf_counter() - t0:.2f}s)"))

    if not args.format:
        return
    path = args.gguf or embedded_model_path()
    pool = LlamaPool()
    llm = LlamaCppLLM(path, pool, label="local")
    params = GenerateParams(temperature=0.0, max_tokens=args.max_tokens)
    try:
        for fmt in args.format:
            sink = ListSink()
            unparsed = 0

            def judge(diagnosis: str, truth: str, fmt: str = fmt, sink: ListSink = sink) -> Verdict:
                nonlocal unparsed
                try:
                    return judge_diagnosis(diagnosis, truth, llm=llm, params=params, case_id="judge-pairs", turn=0,
                                           sink=sink, reply_format=fmt)
                except JudgeUnparsed as e:
                    unparsed += 1
                    return Verdict(None, "llm", "unparsed", str(e))

            t0 = time.perf_counter()
            ev = evaluate(pairs, judge)
            wall = time.perf_counter() - t0
            calls = [e for e in sink.events if isinstance(e, LLMCall)]
            lat = sorted(c.latency_s for c in calls)
            median = lat[len(lat) // 2] if lat else 0.0
            print()
            print(format_evaluation(ev, f"== pre-check + {llm.name} judge ({Path(path).name}), reply format {fmt!r}"))
            sent = sum(r.verdict.method == "llm" for r in ev.results)
            print(f"model calls {len(calls)} (pairs sent to the model {sent}, unparsed after retry {unparsed}), "
                  f"median call {median:.2f}s, wall {wall:.1f}s")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
