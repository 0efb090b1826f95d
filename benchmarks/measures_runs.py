"""Issue 22's table from nothing: the runs it compares, each a ``medsim bench`` of its own
pinned to one core (``taskset``), as many at once as there are cores, longest first; then
``benchmarks/measures_table.py --rescore`` over them.

    .venv/bin/python benchmarks/measures_runs.py --cases ../shared/data/agentclinic/agentclinic_medqa.jsonl \\
        --limit 40 --out runs/i22

The runs (each ``--max-turns`` 10, one seed, the embedded model for every role unless
``--llm`` says otherwise): AgentClinic's protocol (the baseline of the gap), medsim's default
doctor, the focused doctor, the static full-information read and the focused doctor's final
prompt read static (the oracles). A run already finished in ``--out`` is kept (each bench
resumes its own cells), so an interrupted table picks up where it stopped. On two cores the
40-case table takes about three hours. ``--only LABEL,...`` runs some of them.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# label -> the bench flags of that run, longest first (the focused doctor takes ~2x the others)
RUNS = {
    "focused": ["--doctor-strategy", "focused"],
    "default": [],
    "agentclinic": ["--protocol", "agentclinic"],
    "focused_static": ["--static", "--doctor-strategy", "focused"],
    "static": ["--static"],
}


def _cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: no pinning
        return list(range(os.cpu_count() or 1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="a case set (name or JSONL path)")
    ap.add_argument("--limit", type=int, default=40, help="the first N cases (default 40)")
    ap.add_argument("--out", required=True, type=Path, help="a folder: one run directory per label in it")
    ap.add_argument("--llm", default="local", help="every role's backend (default: local, the embedded model)")
    ap.add_argument("--max-turns", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="some of the runs, e.g. focused,static (default: all)")
    ap.add_argument("--cores", type=int, default=0, help="runs at once (default: one per core this process may use)")
    a = ap.parse_args()
    labels = [x for x in a.only.split(",") if x] or list(RUNS)
    unknown = [x for x in labels if x not in RUNS]
    if unknown:
        ap.error(f"--only: unknown run(s) {', '.join(unknown)}; the runs are {', '.join(RUNS)}")
    cores = _cores()[:a.cores] if a.cores else _cores()
    pin = sys.platform.startswith("linux") and bool(subprocess.run(["which", "taskset"], capture_output=True).stdout)
    a.out.mkdir(parents=True, exist_ok=True)
    queue = list(labels)
    running: dict[int, tuple[str, subprocess.Popen, float]] = {}
    failed = []
    while queue or running:
        for core in cores:
            if core not in running and queue:
                label = queue.pop(0)
                cmd = [sys.executable, "-m", "medsim", "bench", "--cases", a.cases, "--limit", str(a.limit), "--llm",
                       a.llm, "--max-turns", str(a.max_turns), "--seed", str(a.seed), *RUNS[label], "--resume",
                       "--out", str(a.out / label)]
                if pin:
                    cmd = ["taskset", "-c", str(core), *cmd]
                log = (a.out / f"{label}.log").open("w")
                print(f"core {core}: {label}: {shlex.join(cmd)}", flush=True)
                running[core] = (label, subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT), time.time())
        time.sleep(5)
        for core, (label, proc, t0) in list(running.items()):
            if proc.poll() is not None:
                print(f"core {core}: {label} finished (exit {proc.returncode}, {(time.time() - t0) / 60:.0f} min; "
                      f"log {a.out / (label + '.log')})", flush=True)
                if proc.returncode:
                    failed.append(label)
                del running[core]
    done = [x for x in ["agentclinic", "default", "focused", "static", "focused_static"]
            if x in labels and x not in failed]
    if failed:
        print(f"failed: {', '.join(failed)} (see their logs); the table is of the others", flush=True)
    if len(done) < 2:
        return 1
    table = [sys.executable, str(ROOT / "benchmarks" / "measures_table.py"), "--rescore",
             *(f"{x}={a.out / x}" for x in done)]
    print(shlex.join(table), flush=True)
    return subprocess.run(table, cwd=ROOT).returncode or (1 if failed else 0)


if __name__ == "__main__":
    raise SystemExit(main())
