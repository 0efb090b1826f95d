"""Case memory at scale: insert rate, approximate index build, retrieval latency and recall.

For a store of N records (default 100,000) of unit vectors of dimension 384 (MiniLM's),
inserted with ``add_many`` in batches of 1,000 (one transaction each):

- the insert rate (SQLite + the exact index), and the rate of single ``add`` calls (one
  transaction and one fsync each: synchronous=FULL) on top of the full store;
- the time to build the approximate (HNSW) index from SQLite, as opening the store does
  once the buffer is past the threshold, and the time to reopen with the saved index;
- retrieval latency p50/p95/max over 1,000 queries at k=3, end to end through
  ``MemoryStore.search`` (FAISS plus fetching the records from SQLite); goal p95 <= 5 ms;
- recall@3 of the approximate index against exact search (numpy) on 200 queries.

Two data sets: ``random`` (uniformly random unit vectors, queries likewise: the worst case
for any approximate index, as every vector is almost equally far from a query) and
``structured`` (vectors with a 32-dimensional latent structure plus noise, closer to real
sentence embeddings). Then the embedding throughput of ``hash`` and ``minilm`` on a few
hundred real case texts (the demo case set and, when present beside the checkout, the
AgentClinic MedQA cases).

    .venv/bin/python benchmarks/memory_retrieval.py [--n 100000] [--data random structured] [--no-minilm]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memory.embed import EmbedderError, make_embedder
from memory.store import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
CASE_FILES = [ROOT / "agents" / "casesets" / "demo.jsonl",
              ROOT.parent / "shared" / "data" / "agentclinic" / "agentclinic_medqa.jsonl"]


class VectorsOnly:
    """A stand-in embedder for a store filled with given vectors (nothing to embed)."""

    text_strategy = "none (vectors given)"

    def __init__(self, dim: int):
        self.dim = dim
        self.name = f"bench:vectors-{dim}"

    def embed_texts(self, texts):
        raise EmbedderError("this benchmark store takes vectors only")

    def embed_images(self, paths):
        raise EmbedderError("this benchmark store takes vectors only")


def unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def make_data(kind: str, n: int, dim: int, rng: np.random.Generator) -> tuple[np.ndarray, callable]:
    if kind == "random":
        def sample(m):
            return unit(rng.standard_normal((m, dim), dtype=np.float32))
    else:
        basis = rng.standard_normal((32, dim)).astype(np.float32)

        def sample(m):
            return unit(rng.standard_normal((m, 32), dtype=np.float32) @ basis
                        + 0.3 * rng.standard_normal((m, dim), dtype=np.float32))
    return np.concatenate([sample(min(10_000, n - s)) for s in range(0, n, 10_000)]), sample


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def bench_store(kind: str, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    n, dim, k = args.n, args.dim, args.k
    print(f"\n== {kind} unit vectors: N={n:,}, dim={dim}, k={k}, approximate past {args.threshold:,} ==")
    vecs, sample = make_data(kind, n, dim, rng)
    emb = VectorsOnly(dim)
    with tempfile.TemporaryDirectory(prefix="medsim-membench-") as d:
        d = Path(d)
        # 1. bulk insert (exact index only, so that this measures the inserts)
        with MemoryStore(d, emb, approx_threshold=n + 10**6) as s:
            t0 = time.perf_counter()
            for b in range(0, n, args.batch):
                s.add_many([{"buffer": "records", "case_id": f"c{i}", "case_key": f"k{i}",
                             "text": f"case {i}", "diagnosis": "dx", "vector": vecs[i]}
                            for i in range(b, min(n, b + args.batch))])
            dt = time.perf_counter() - t0
            print(f"insert (add_many, {args.batch:,} per transaction): {n / dt:,.0f} records/s ({dt:.1f} s)")
        size = sum(p.stat().st_size for p in d.iterdir())
        print(f"on disk: {size / 2**20:.0f} MiB (database and exact index)")
        # 2. the approximate index, built from SQLite on open
        t0 = time.perf_counter()
        s = MemoryStore(d, emb, approx_threshold=args.threshold, ef_search=args.ef_search)
        dt = time.perf_counter() - t0
        print(f"approximate index build (open: read SQLite, build HNSW M={s.hnsw_m} "
              f"efConstruction={s.ef_construction}, save): {dt:.1f} s  [{s.index_status['records']}]")
        try:
            # 3. latency, end to end
            queries = sample(args.queries)
            for q in queries[:20]:
                s.search("records", q, k)  # warm-up
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                hits = s.search("records", q, k)
                lat.append((time.perf_counter() - t0) * 1000)
                assert len(hits) == k
            p95 = pct(lat, 95)
            print(f"retrieval over {len(lat):,} queries, k={k}, efSearch={s.ef_search}: p50 {pct(lat, 50):.2f} ms, "
                  f"p95 {p95:.2f} ms, max {max(lat):.2f} ms -> goal p95 <= 5 ms: {'met' if p95 <= 5 else 'NOT met'}")
            # 4. recall against exact search
            rq = sample(args.recall_queries)
            exact = np.argsort(-(rq @ vecs.T), axis=1)[:, :k] + 1  # ids are 1..n in insert order
            found = [{r.id for r, _ in s.search("records", q, k)} for q in rq]
            recall = statistics.mean(len(f & set(e.tolist())) / k for f, e in zip(found, exact))
            print(f"recall@{k} of the approximate index against exact search ({len(rq)} queries): {recall:.3f}")
            if args.ef_sweep:
                sweep = []
                for ef in args.ef_sweep:
                    s.ef_search = ef
                    lat, hit = [], 0
                    for q, e in zip(rq, exact):
                        t0 = time.perf_counter()
                        got = s.search("records", q, k)
                        lat.append((time.perf_counter() - t0) * 1000)
                        hit += len({r.id for r, _ in got} & set(e.tolist()))
                    sweep.append(f"{ef}: recall {hit / (k * len(rq)):.3f}, p95 {pct(lat, 95):.2f} ms")
                s.ef_search = args.ef_search
                print("  efSearch sweep (same queries) -> " + "; ".join(sweep))
            # 5. single adds (one transaction, one fsync each) onto the full store
            extra = sample(args.single_adds)
            t0 = time.perf_counter()
            for i, v in enumerate(extra):
                s.add("records", case_id=f"x{i}", case_key=f"x{i}", text="extra", vector=v)
            dt = time.perf_counter() - t0
            print(f"single add (synchronous=FULL, HNSW insert): {len(extra) / dt:,.0f} records/s "
                  f"({dt / len(extra) * 1000:.1f} ms each)")
        finally:
            t0 = time.perf_counter()
            s.close()
            close_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with MemoryStore(d, emb, approx_threshold=args.threshold) as s2:
            dt = time.perf_counter() - t0
            print(f"close (save index) {close_s:.1f} s; reopen with the saved index: {dt:.2f} s "
                  f"[{s2.index_status['records']}]")


def case_texts(limit: int) -> list[str]:
    """Whole cases (long: several chunks) and their individual findings (short)."""
    whole, leaves = [], []

    def walk(v, out):
        if isinstance(v, dict):
            for x in v.values():
                walk(x, out)
        elif isinstance(v, list):
            for x in v:
                walk(x, out)
        elif isinstance(v, str) and len(v.split()) >= 4:
            out.append(v)
    for f in CASE_FILES:
        if not f.is_file():
            continue
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                parts: list[str] = []
                walk(json.loads(line), parts)
                whole.append(" ".join(parts))
                leaves.extend(parts)
    texts = whole[:limit // 3] + leaves
    return list(dict.fromkeys(texts))[:limit]


def bench_embedders(args: argparse.Namespace) -> None:
    texts = case_texts(args.texts)
    chars = sum(map(len, texts)) / max(1, len(texts))
    print(f"\n== embedding throughput: {len(texts)} case texts, mean {chars:.0f} characters ==")
    kinds = ["hash"] + ([] if args.no_minilm else ["minilm"])
    for kind in kinds:
        e = make_embedder(kind)
        t0 = time.perf_counter()
        e.embed_texts(texts[:2])
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = e.embed_texts(texts)
        dt = time.perf_counter() - t0
        one, short = [], sorted(texts, key=len)[len(texts) // 2:][:50]  # query-sized texts
        for t in short:
            t0 = time.perf_counter()
            e.embed_texts([t])
            one.append((time.perf_counter() - t0) * 1000)
        print(f"{e.name}: {len(texts) / dt:,.0f} texts/s in one batch ({dt:.2f} s; first call incl. loading "
              f"{load:.2f} s); one text of ~{sum(map(len, short)) // len(short)} characters at a time (a query): "
              f"p50 {pct(one, 50):.1f} ms, p95 {pct(one, 95):.1f} ms; "
              f"{out.shape[1]} dims; {e.text_strategy}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--queries", type=int, default=1_000)
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument("--single-adds", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--threshold", type=int, default=20_000)
    ap.add_argument("--ef-search", type=int, default=128)
    ap.add_argument("--ef-sweep", type=int, nargs="*", default=[32, 64, 256, 512],
                    help="also measure recall and p95 at these efSearch values (none: skip)")
    ap.add_argument("--data", nargs="+", choices=["random", "structured"], default=["random", "structured"])
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--no-minilm", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for kind in args.data:
        bench_store(kind, args)
    bench_embedders(args)


if __name__ == "__main__":
    main()
