"""Tokens/s of serial one-at-a-time generation vs. batched generation (issue 14).

The serial path is :class:`~agents.llm.llamacpp.LlamaCppLLM` (one call at a time, as
today's ``--workers N`` gets behind the model's lock); the batched path is
:class:`~agents.llm.batched.BatchedEngine` with 1, 4 and 16 worker threads submitting
the same prompts at once. Every run sends the same prompts at temperature 0, so the
replies should be the same text: the ``same`` column counts replies equal to the serial
one. Model loading is not timed (each path makes one warm-up call first).

    .venv/bin/python benchmarks/batched_decode.py [--model local|smollm2] [--prompts 16]
        [--max-tokens 48] [--concurrency 1 4 16] [--threads N] [--rounds R]

tok/s and ratio use each mode's best (shortest) round; on a busy machine use --rounds 3.
"""
from __future__ import annotations

import argparse
import os
import queue
import statistics
import threading
import time

from agents.llm.base import CallContext, GenerateParams, Message, Output
from agents.llm.batched import BatchedEngine
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import embedded_model_path, smollm2_path

SYSTEM = ("You are a patient in a clinic. Answer the doctor's question in one or two sentences, "
          "as a worried but cooperative patient would.")
QUESTIONS = [
    "What brings you in today?", "When did the pain start?", "Do you have a fever?",
    "Have you noticed any rash?", "Any cough or shortness of breath?", "Do you take any medicines?",
    "Any allergies to medicines?", "Does anything make the pain better or worse?",
    "Have you travelled recently?", "Does anyone in your family have heart disease?",
    "How is your appetite?", "Have you lost weight without trying?", "Do you smoke or drink alcohol?",
    "Any trouble sleeping lately?", "Where exactly does it hurt? Please describe it.",
    "Have you had this problem before, and what did you do about it then?",
]


def prompts(n: int) -> list[list[Message]]:
    return [[Message("system", SYSTEM), Message("user", QUESTIONS[i % len(QUESTIONS)] + (f" ({i})" if i >= len(QUESTIONS) else ""))]
            for i in range(n)]


def run_serial(path: str, msgs: list[list[Message]], params: GenerateParams, threads: int, n_ctx: int
               ) -> tuple[float, list[Output]]:
    pool = LlamaPool(n_ctx=n_ctx, n_threads=threads)
    llm = LlamaCppLLM(path, pool)
    llm.generate([Message("user", "hi")], GenerateParams(max_tokens=1, temperature=0.0), CallContext("bench", "warm"))
    t0 = time.perf_counter()
    outs = [llm.generate(m, params, CallContext("bench", "b")) for m in msgs]
    wall = time.perf_counter() - t0
    pool.close()
    return wall, outs


def run_batched(path: str, msgs: list[list[Message]], params: GenerateParams, threads: int, n_ctx: int,
                concurrency: int) -> tuple[float, list[Output]]:
    engine = BatchedEngine(path, n_seq=concurrency, n_ctx_seq=n_ctx, n_threads=threads)
    engine.generate([Message("user", "hi")], GenerateParams(max_tokens=1, temperature=0.0))
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(msgs)):
        todo.put(i)
    outs: list[Output | None] = [None] * len(msgs)

    def worker() -> None:
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            outs[i] = engine.generate(msgs[i], params)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    engine.close()
    assert all(o is not None for o in outs)
    return wall, [o for o in outs if o is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local", choices=["local", "smollm2"])
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 4, 16])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=1, help="repeat every mode, interleaved; the best run counts")
    ap.add_argument("--n-ctx", type=int, default=1024, help="context per sequence (and of the serial context)")
    args = ap.parse_args()
    path = str(embedded_model_path() if args.model == "local" else smollm2_path())
    msgs = prompts(args.prompts)
    params = GenerateParams(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    print(f"model {os.path.basename(path)}, {args.prompts} prompts, max_tokens {args.max_tokens}, "
          f"{args.threads} threads, {args.rounds} round(s), load average {os.getloadavg()[0]:.1f}")
    modes = [0, *args.concurrency]  # 0: serial
    walls: dict[int, list[float]] = {m: [] for m in modes}
    tokens: dict[int, int] = {}
    serial: list[Output] = []
    same: dict[int, int] = {}
    for r in range(args.rounds):  # modes interleaved round by round: a busy machine's load hits them alike
        for m in modes:
            if m == 0:
                wall, outs = run_serial(path, msgs, params, args.threads, args.n_ctx)
                serial = serial or outs
            else:
                wall, outs = run_batched(path, msgs, params, args.threads, args.n_ctx, m)
            walls[m].append(wall)
            tokens[m] = sum(o.completion_tokens for o in outs)
            same[m] = min(same.get(m, len(outs)), sum(a.text == b.text for a, b in zip(serial, outs)))
            print(f"  round {r + 1} {'serial' if m == 0 else f'batched x{m}'}: {wall:.1f} s, "
                  f"{tokens[m] / wall:.1f} tok/s", flush=True)
            for i, (a, b) in enumerate(zip(serial, outs)):
                if a.text != b.text:
                    print(f"    differs at prompt {i}: serial {a.text[:70]!r}\n{'':>24}batched {b.text[:70]!r}")
    base = tokens[0] / min(walls[0])
    print(f"{'mode':<14} {'best_s':>7} {'median_s':>8} {'tokens':>6} {'tok/s':>6} {'ratio':>5} {'same':>5}")
    for m in modes:
        best = min(walls[m])
        print(f"{'serial' if m == 0 else f'batched x{m}':<14} {best:>7.1f} {statistics.median(walls[m]):>8.1f} "
              f"{tokens[m]:>6} {tokens[m] / best:>6.1f} {tokens[m] / best / base:>5.2f} {same[m]:>2}/{len(msgs)}")

if __name__ == "__main__":
    main()
