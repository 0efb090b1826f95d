"""What batching can win on this machine: llama.cpp's raw decode rate, k sequences a step.

Batched decoding (``agents/llm/batched.py``, ``medsim bench --workers N --batched``) can
only be as much faster than one call at a time as one ``llama_decode`` of k rows is
cheaper than k decodes of one row. This measures that ceiling directly, with no
sampling, no Python scheduler and no chat template in the way:

- *k sequences, one token each* (what a decode step of k concurrent replies is): every
  row's logits are computed, as each reply samples its next token from them;
- *one sequence, a chunk of c tokens* (what prompt evaluation is, and what the issue's
  probe measured): logits of the last token only, then of every token.

Each sequence first holds ``--context`` tokens (a consultation's prompt), in one
llama.cpp context with a KV stream per sequence (``kv_unified`` off, as the batched
engine) or one shared stream (``--unified``). Rounds are interleaved; the best counts.

    .venv/bin/python benchmarks/decode_scaling.py [--model local|smollm2] [--threads 2]
        [--ks 1 2 4 8 16] [--chunks 1 4 16] [--context 300] [--steps 12] [--rounds 2] [--unified]
"""
from __future__ import annotations

import argparse
import os
import time

from agents.llm.local_model import embedded_model_path, smollm2_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local", choices=["local", "smollm2"])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ks", type=int, nargs="*", default=[1, 2, 4, 8, 16])
    ap.add_argument("--chunks", type=int, nargs="*", default=[1, 4, 16])
    ap.add_argument("--context", type=int, default=300, help="tokens each sequence holds before the timed steps")
    ap.add_argument("--steps", type=int, default=12, help="decode steps timed per k")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--unified", action="store_true", help="one KV stream for all sequences (masked attention)")
    args = ap.parse_args()

    import llama_cpp
    from llama_cpp import Llama

    path = str(embedded_model_path() if args.model == "local" else smollm2_path())
    n_seq = max(args.ks)
    need = args.context + args.rounds * (args.steps + 2 * sum(max(1, 48 // c) * c for c in args.chunks)) + 64
    n_ctx_seq = -(-need // 256) * 256
    fmt = Llama(model_path=path, n_ctx=256, n_threads=args.threads, verbose=False)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx_seq * n_seq, 512, 512, n_seq
    cp.n_threads = cp.n_threads_batch = args.threads
    cp.kv_unified = args.unified
    ctx = llama_cpp.llama_init_from_model(fmt._model.model, cp)
    if not ctx:
        raise SystemExit(f"cannot create a context of {n_seq} x {n_ctx_seq} tokens")
    batch = llama_cpp.llama_batch_init(512, 0, 1)

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        for i, (tok, pos, seq, logits) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, int(logits)
        batch.n_tokens = len(items)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed")

    text = b"The patient, a 45-year-old man, reports chest pain on exertion and shortness of breath. " * 60
    toks = fmt.tokenize(text)[: args.context]
    print(f"model {os.path.basename(path)}, {args.threads} threads, {n_seq} sequences x {args.context} tokens held, "
          f"KV {'unified' if args.unified else 'one stream per sequence'}, load average {os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    for s in range(n_seq):
        for i in range(0, len(toks), 256):
            part = toks[i:i + 256]
            decode([(t, i + j, s, False) for j, t in enumerate(part)])
    print(f"filled {n_seq * len(toks)} tokens in {time.perf_counter() - t0:.1f} s")
    pos = {s: len(toks) for s in range(n_seq)}
    tok = toks[7]
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for k in args.ks:
            t0 = time.perf_counter()
            for _ in range(args.steps):
                decode([(tok, pos[s], s, True) for s in range(k)])
                for s in range(k):
                    pos[s] += 1
            rate = k * args.steps / (time.perf_counter() - t0)
            key = f"{k} sequence{'s' if k > 1 else ''} x 1 token"
            best[key] = max(best.get(key, 0.0), rate)
        for c in args.chunks:
            for all_logits in (False, True):
                if c == 1 and all_logits:
                    continue
                n = max(1, 48 // c)
                t0 = time.perf_counter()
                for _ in range(n):
                    decode([(tok, pos[0] + j, 0, all_logits or j == c - 1) for j in range(c)])
                    pos[0] += c
                rate = n * c / (time.perf_counter() - t0)
                key = f"1 sequence x {c} token{'s' if c > 1 else ''}" + (", every row's logits" if all_logits else "")
                best[key] = max(best.get(key, 0.0), rate)
    base = best.get("1 sequence x 1 token") or next(iter(best.values()))
    print(f"{'one llama_decode of':<44} {'tok/s':>7} {'x one row':>9}")
    for key, rate in best.items():
        print(f"{key:<44} {rate:>7.1f} {rate / base:>9.2f}")
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    fmt.close()


if __name__ == "__main__":
    main()
