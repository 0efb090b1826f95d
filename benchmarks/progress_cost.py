"""What reporting a call's progress costs (agents.llm.progress, the live hospital): the
embedded model evaluates a long prompt whole (n_batch pieces, as an unwatched call does)
and in PROGRESS_CHUNK-token pieces (a watched call), alternating, each time in a fresh
context; then both generate the same greedy reply. Prints the seconds of each and their
ratio, and whether the replies are the same.

    .venv/bin/python benchmarks/progress_cost.py [--threads 1] [--reps 3]

``--threads 1`` is what the live hospital gives the model (a core is kept for the window).
Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from agents.llm import progress  # noqa: E402
from agents.llm.base import CallContext, GenerateParams, Message  # noqa: E402
from agents.llm.llamacpp import PROGRESS_CHUNK, LlamaCppLLM, LlamaPool  # noqa: E402
from agents.llm.local_model import embedded_model_path  # noqa: E402
from agents.prompts import template_text  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    system = template_text("fidelity_patient") * 2  # a long system prompt, as a checker's or a first call's
    messages = [Message("system", system), Message("user", "Reply with one word: ready.")]
    params = GenerateParams(temperature=0.0, max_tokens=8)
    path = embedded_model_path()
    times: dict[bool, list[float]] = {False: [], True: []}
    texts: dict[bool, set[str]] = {False: set(), True: set()}
    n_prompt = 0
    for rep in range(args.reps):
        for watched in ((False, True) if rep % 2 == 0 else (True, False)):
            pool = LlamaPool(n_ctx=4096, n_threads=args.threads)  # a fresh context: the whole prompt is read
            try:
                llm = LlamaCppLLM(path, pool, label="embedded")
                call = lambda: llm.generate(messages, params, CallContext("judge", "bench"))  # noqa: E731
                t0 = time.perf_counter()
                out = progress.watched(progress.CallWatch(), call)() if watched else call()
                times[watched].append(time.perf_counter() - t0)
                texts[watched].add(out.text)
                n_prompt = out.prompt_tokens_evaluated or out.prompt_tokens
            finally:
                pool.close()
    whole, pieces = statistics.median(times[False]), statistics.median(times[True])
    print(f"embedded model, {args.threads} thread(s), a prompt of {n_prompt} tokens read from an empty context, "
          f"{args.reps} reps each")
    print(f"  unwatched (whole):               {whole:.2f} s  ({', '.join(f'{t:.2f}' for t in times[False])})")
    print(f"  watched ({PROGRESS_CHUNK}-token pieces, reported): {pieces:.2f} s  "
          f"({', '.join(f'{t:.2f}' for t in times[True])})")
    print(f"  ratio watched/unwatched: {pieces / whole:.3f}; same reply: {texts[False] == texts[True]}")


if __name__ == "__main__":
    main()
