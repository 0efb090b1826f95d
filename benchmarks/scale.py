"""Scale and resilience figures (issue 14), printed, not asserted:

    .venv/bin/python benchmarks/scale.py [--part throughput,memory,kill] [--kills 20]
        [--delay-ms 100] [--cases-for-memory 1000]

- throughput: cases per second at 1, 4, 16 and 32 workers against a loopback
  OpenAI-compatible fake server that answers every call after --delay-ms (the server of
  the test suite, tests/conftest.py), with the speed-up over 1 worker and its fraction of
  linear;
- memory: a 1,000-consultation scripted run in a child process, its resident memory
  sampled as it goes (start, 10%, 50%, end, peak) and the slope over the second half;
- kill: --kills runs killed with SIGKILL at a random moment and resumed; each resumed run
  is compared with an uninterrupted one: the same cells, none twice, the same rows (but
  the timing fields) and byte-identical event logs (but the header's command line and
  start time). Every other trial also kills the first --resume a moment after it starts.

Batched local decoding (``medsim bench --workers N --batched``): benchmarks/batched_bench.py
prints cases per hour of whole consultations, serial against batched, and
benchmarks/batched_decode.py tokens/s of one-turn prompts. Run them on an idle machine;
ratios within one run are what to compare. Throughput here counts at least 8 cells per
worker (--seeds raises it): with few cells per worker the last wave's stragglers weigh.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agents.results import read_results  # noqa: E402
from tests.fake_chat import FakeChat  # noqa: E402  (the test suite's fake server)
from tests.helpers import log_bytes  # noqa: E402

TIMING = {"wall_s", "latency_s", "started", "finished"}


def _bench(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "medsim", "bench", *args, "--no-progress"], cwd=REPO,
                          capture_output=True, text=True, **kw)


# ----------------------------------------------------------------------------- throughput
_TIMED_RUN = """
import json, sys, time
from pathlib import Path
import medsim.bench
from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec
spec = build_spec(None, json.loads(sys.argv[1]))
run_cells, spent = medsim.bench.run_cells, []
def timed(*a, **k):  # the cells alone: not the set-up, nor the report written once at the end
    t = time.perf_counter()
    try:
        return run_cells(*a, **k)
    finally:
        spent.append(time.perf_counter() - t)
medsim.bench.run_cells = timed
t0 = time.perf_counter()
o = run_bench(spec, BenchOptions(out=Path(sys.argv[2]), progress=False))
print(json.dumps({"seconds": time.perf_counter() - t0, "cell_seconds": sum(spent), "cells": o.summary["cases"],
                  "errors": o.summary["errors"]}))
"""


class _KeepAliveChat(FakeChat):
    """The tests' fake, speaking HTTP/1.1 with connections kept open, as vLLM and
    llama.cpp's server do, and with Nagle's algorithm off, as they have it: with it on,
    a kept-alive reply's body (written after its headers) waits for the client's delayed
    ACK, some 40 ms a call."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


def throughput(workers: list[int], delay_ms: float, min_seeds: int) -> None:
    """Cells per second while the cells run (timed inside the child: not its imports, its
    set-up, nor the report it writes once at the end, which at 32 workers would be a tenth
    of the run; the whole run's rate is printed beside), with at least 8 cells per worker
    and a whole number of them, so that the last wave does not dominate."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveChat)
    server.requests, server.delay_s = [], delay_ms / 1000
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    print(f"throughput: the demo cases (22) x seeds against a fake server answering after {delay_ms:.0f} ms")
    base = base_whole = None
    try:
        with tempfile.TemporaryDirectory(prefix="medsim-scale-") as d:
            for w in workers:
                seeds = max(min_seeds, -(-8 * w // 22))
                while seeds * 22 % w:  # every worker gets as many cells
                    seeds += 1
                over = {"cases": "demo", "seeds": list(range(seeds)), "llm": f"openai:{url}", "model": "fake",
                        "workers": w}
                server.requests.clear()
                r = subprocess.run([sys.executable, "-c", _TIMED_RUN, json.dumps(over), str(Path(d) / f"w{w}")],
                                   cwd=REPO, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"  {w:>2} workers: the run failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
                    continue
                res = json.loads(r.stdout.strip().splitlines()[-1])
                rate = res["cells"] / res["cell_seconds"]
                whole = res["cells"] / res["seconds"]
                base = base or rate
                base_whole = base_whole or whole
                print(f"  {w:>2} workers: {res['cells']} cells, {len(server.requests)} calls, {res['cell_seconds']:6.1f} s, "
                      f"{rate:5.2f} cells/s, x{rate / base:4.1f} of 1 worker ({rate / base / w:4.0%} of linear); "
                      f"whole run {res['seconds']:.1f} s, x{whole / base_whole:4.1f} ({whole / base_whole / w:4.0%}); "
                      f"errors {res['errors']}")
    finally:
        server.shutdown()
        server.server_close()


# ----------------------------------------------------------------------------- memory
def _rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def memory(n_cases: int) -> None:
    seeds = -(-n_cases // 22)  # the demo set has 22 cases
    with tempfile.TemporaryDirectory(prefix="medsim-mem-") as d:
        out = Path(d) / "mem"
        p = subprocess.Popen([sys.executable, "-m", "medsim", "bench", "--cases", "demo", "--seeds",
                              ",".join(map(str, range(seeds))), "--llm", "scripted", "--out", str(out),
                              "--no-progress"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples: list[tuple[int, int]] = []  # (cells done, RSS KiB)
        total_cells = seeds * 22
        results = out / "results.jsonl"
        t0 = time.perf_counter()
        while p.poll() is None:
            rss = _rss_kib(p.pid)
            done = sum(1 for _ in results.open("rb")) if results.is_file() else 0
            if rss and 0 < done < total_cells:  # while cells run (not start-up, not the report at the end)
                samples.append((done, rss))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        total = len(read_results(results)) if results.is_file() else 0
    if p.returncode != 0 or not samples:
        print(f"memory: the run failed (exit {p.returncode}): {err.strip()[-300:]}")
        return
    def at(frac: float) -> int:
        goal = frac * total
        return next((rss for done, rss in samples if done >= goal), samples[-1][1])
    half = [(done, rss) for done, rss in samples if done >= total / 2]
    slope = 0.0
    if len(half) > 2 and half[-1][0] > half[0][0]:
        xs, ys = [h[0] for h in half], [h[1] for h in half]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"memory: {total} scripted consultations in {wall:.0f} s; RSS MiB while cells ran (after start-up, before "
          f"the report): first sample {samples[0][1] / 1024:.0f} (cell {samples[0][0]}), 10% {at(0.1) / 1024:.0f}, "
          f"50% {at(0.5) / 1024:.0f}, last {samples[-1][1] / 1024:.0f} (cell {samples[-1][0]}), "
          f"peak {max(s[1] for s in samples) / 1024:.0f}; slope over the second half {slope:+.2f} KiB per case")


# ----------------------------------------------------------------------------- kill/resume
def _snapshot(out: Path) -> tuple[dict, dict]:
    rows = {}
    for r in read_results(out / "results.jsonl"):
        key = (r["case_id"], r["seed"], r["condition"])
        if key in rows:
            raise AssertionError(f"{key} twice")
        rows[key] = {k: v for k, v in r.items() if k not in TIMING}
    logs = {p.name: log_bytes(p) for p in sorted((out / "events").iterdir())}
    return rows, logs


def kill_resume(kills: int, seed: int) -> None:
    rng = random.Random(seed)
    common = ["--cases", "demo", "--seeds", "0,1,2", "--llm", "scripted", "--workers", "2"]
    with tempfile.TemporaryDirectory(prefix="medsim-kill-") as d:
        ref = Path(d) / "ref"
        t0 = time.perf_counter()
        r = _bench([*common, "--out", str(ref)])
        full = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"kill: the reference run failed: {r.stderr.strip()[-300:]}")
            return
        want_rows, want_logs = _snapshot(ref)
        outcomes = {"identical": 0, "differs": 0}
        killed_at: list[int] = []
        resumes_killed = 0
        problems: list[str] = []
        for i in range(kills):
            out = Path(d) / f"k{i}"
            t0 = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-m", "medsim", "bench", *common, "--out", str(out), "--no-progress"],
                                 cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # kill once a random number of rows is written (0: while starting), a few ms later
            target, res = rng.randrange(len(want_rows)), out / "results.jsonl"
            while p.poll() is None and time.perf_counter() - t0 < 10 * full + 60:
                if (sum(1 for _ in res.open("rb")) if res.is_file() else 0) >= target:
                    break
                time.sleep(0.002)
            time.sleep(rng.uniform(0, 0.03))
            p.send_signal(signal.SIGKILL)
            p.wait()
            res = out / "results.jsonl"
            killed_at.append(sum(1 for _ in res.open("rb")) if res.is_file() else 0)
            if i % 2:  # every other trial also kills the first --resume, while it starts and rewrites the rows
                q = subprocess.Popen([sys.executable, "-m", "medsim", "bench", *common, "--out", str(out), "--resume",
                                      "--no-progress"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0.3, 2.5))
                q.send_signal(signal.SIGKILL)
                q.wait()
                resumes_killed += 1
            r = _bench([*common, "--out", str(out), "--resume"])
            if r.returncode != 0:
                outcomes["differs"] += 1
                problems.append(f"run {i}: resume exited {r.returncode}: {r.stderr.strip()[-200:]}")
                continue
            try:
                rows, logs = _snapshot(out)
                same = rows == want_rows and logs == want_logs
                if not same:
                    miss = set(want_rows) - set(rows)
                    diff = [k for k in want_rows if k in rows and rows[k] != want_rows[k]]
                    problems.append(f"run {i}: {len(miss)} cells missing, {len(diff)} rows differ, "
                                    f"logs equal: {logs == want_logs}")
            except AssertionError as e:
                same = False
                problems.append(f"run {i}: {e}")
            outcomes["identical" if same else "differs"] += 1
            shutil.rmtree(out, ignore_errors=True)
    print(f"kill/resume: {kills} runs of {len(want_rows)} cells killed with SIGKILL at random moments "
          f"(rows finished when killed: min {min(killed_at)}, median {statistics.median(killed_at):.0f}, "
          f"max {max(killed_at)}; in {resumes_killed} of them the first --resume was killed too), then resumed: {outcomes['identical']} identical to the uninterrupted run, "
          f"{outcomes['differs']} not")
    for line in problems[:10]:
        print("  " + line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="throughput,memory,kill", help="which figures (default: all three)")
    ap.add_argument("--workers", default="1,4,16,32", help="worker counts for throughput (default 1,4,16,32)")
    ap.add_argument("--delay-ms", type=float, default=100.0, help="the fake server's latency per call (default 100)")
    ap.add_argument("--seeds", type=int, default=4, help="at least this many seeds of the demo set per throughput run, and 8 cells per worker (default 4: 88 cells)")
    ap.add_argument("--cases-for-memory", type=int, default=1000, help="consultations in the memory run (default 1000)")
    ap.add_argument("--kills", type=int, default=20, help="kill/resume trials (default 20)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments (default 0)")
    a = ap.parse_args()
    parts = {p.strip() for p in a.part.split(",")}
    if "throughput" in parts:
        throughput([int(w) for w in a.workers.split(",")], a.delay_ms, a.seeds)
    if "memory" in parts:
        memory(a.cases_for_memory)
    if "kill" in parts:
        kill_resume(a.kills, a.seed)
    print("batched local decoding: see benchmarks/batched_bench.py (cases/hour, serial vs --batched) and "
          "benchmarks/batched_decode.py (tokens/s of one-turn prompts)")


if __name__ == "__main__":
    main()
