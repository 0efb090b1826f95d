"""Kill trials: a scripted bench killed with SIGKILL, then resumed, must end with the
results of a run that was never interrupted.

    .venv/bin/python benchmarks/kill_trials.py [--random 21] [--window 10] [--seed 0] [--kills 2]

Three runs, each first done once uninterrupted (the reference), all on the scripted
backend (no model):

- ``plain``: the demo cases x 10 seeds, 4 workers (220 cells);
- ``online``: the demo cases with ``--memory learn`` (learning online, one worker);
- ``split``: a learning split (the first 11 demo cases, ``--learn-cases``) learned into the
  memory, then the other 11 scored with it frozen.

A random trial (cycling through the three) starts the run in a fresh directory and a
fresh memory, kills it with SIGKILL at a random moment (once a random number of rows is
on disk, plus a random 0-30 ms; some fall before the first row, some after the last),
``--resume``s it, kills that too (``--kills`` kills in all), and resumes it once more
to the end. A window trial (``online`` and ``split`` in turn) kills the run in the
learning window: between a cell's learning being committed to the memory and its row
being written. It is targeted with the run loop's trial hold (``medsim.trial_hold``:
``MEDSIM_TRIAL_HOLD=CASE`` pauses the loop just before that case's row is written and
says so in a file); the case is drawn from those the reference run learned from. The
trial checks it hit the window (the memory holds a record of that cell, results.jsonl
no row for it), then resumes.

A trial matches when the resumed run has the reference's rows (one per cell, compared
without their timings: ``wall_s``, ``model_latency_s``), its summary.json (without
``wall_s``), the same event-log files, and (with memory) the same memory records
(id, buffer, case, text, diagnosis, insight, tests). Prints each trial, then the number
of trials and how many matched (a resume that fails does not match); exits 1 if any did
not.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = ("wall_s", "model_latency_s")
LEARNED = ("filed", "insight_stored")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDSIM_TRIAL_")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def _split_files(d: Path) -> tuple[Path, Path]:
    from agents.cases.registry import resolve_case_path

    lines = [x for x in resolve_case_path("demo").read_text(encoding="utf-8").splitlines() if x.strip()]
    learn, score = d / "learn.jsonl", d / "score.jsonl"
    learn.write_text("\n".join(lines[:11]) + "\n", encoding="utf-8")
    score.write_text("\n".join(lines[11:]) + "\n", encoding="utf-8")
    return learn, score


def command(kind: str, out: Path, mem: Path, files: tuple[Path, Path]) -> list[str]:
    base = [sys.executable, "-m", "medsim", "bench", "--llm", "scripted", "--out", str(out), "--no-progress"]
    if kind == "plain":
        return [*base, "--cases", "demo", "--repeats", "10", "--workers", "4"]
    if kind == "online":
        return [*base, "--cases", "demo", "--memory", "learn", "--memory-dir", str(mem), "--embedder", "hash"]
    assert kind == "split", kind
    learn, score = files
    return [*base, "--cases", str(score), "--learn-cases", str(learn), "--memory-dir", str(mem), "--embedder", "hash"]


def _rows(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return fh.read().count(b"\n")
    except OSError:
        return 0


def _strip(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if k not in TIMINGS}
    if isinstance(d, list):
        return [_strip(v) for v in d]
    return d


def _memory(mem: Path) -> list[tuple]:
    db = mem / "memory.sqlite3"
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, buffer, case_id, text, diagnosis, insight, tests FROM records ORDER BY id"
                            ).fetchall()
    finally:
        conn.close()


def outcome(out: Path, mem: Path) -> dict[str, Any]:
    """What a finished run left: rows by cell (without timings), summary, event logs, memory."""
    from agents.results import read_results, row_key

    rows = read_results(out / "results.jsonl")
    lrows = read_results(out / "learning" / "results.jsonl")
    return {"rows": {json.dumps(row_key(r)): _strip(r) for r in rows}, "n_rows": len(rows),
            "learning_rows": {json.dumps(row_key(r)): _strip(r) for r in lrows}, "n_learning_rows": len(lrows),
            "summary": _strip(json.loads((out / "summary.json").read_text(encoding="utf-8"))),
            "events": sorted(p.name for p in (out / "events").iterdir()),
            "memory": _memory(mem)}


def differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    out = [k for k in want if got.get(k) != want[k]]
    if "rows" in out:
        bad = [k for k in set(want["rows"]) | set(got["rows"]) if got["rows"].get(k) != want["rows"].get(k)]
        out.append(f"{len(bad)} cell(s) differ, e.g. {sorted(bad)[:3]}")
    return out


def run(cmd: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=_env(**env), capture_output=True, text=True, timeout=600)


def finish(cmd: list[str]) -> str | None:
    """Resume ``cmd`` to its end; None, or why the resume failed."""
    p = run([*cmd, "--resume"])
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        return f"the resume exited {p.returncode}: {last[:300]}"
    return None


def kill_at_random(cmd: list[str], out: Path, n_cells: int, rng: random.Random) -> str:
    """Start ``cmd``, SIGKILL it once a random number of rows (between those already
    there and all of them) is written, plus 0-30 ms."""
    def written() -> int:  # rows on disk, the learning split's too
        return _rows(out / "results.jsonl") + _rows(out / "learning" / "results.jsonl")

    k = rng.randint(written(), n_cells)
    jitter = rng.uniform(0, 0.03)
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while p.poll() is None and written() < k:
        time.sleep(0.002)
    time.sleep(jitter)
    if p.poll() is not None:
        return f"ended before the kill (aimed at row {k})"
    p.send_signal(signal.SIGKILL)
    p.wait()
    return f"killed at {written()} row(s) (aimed at {k} + {jitter * 1000:.0f} ms)"


def kill_in_window(cmd: list[str], out: Path, mem: Path, case: str, where: Path) -> tuple[str, bool]:
    """Start ``cmd`` held just before ``case``'s row is written, SIGKILL it there, and
    check that the kill fell in the learning window."""
    hold = where / "hold"
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(MEDSIM_TRIAL_HOLD=case, MEDSIM_TRIAL_HOLD_FILE=str(hold)),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not hold.exists():
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            raise SystemExit(f"the run never reached the hold before {case}'s row")
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    from agents.results import read_results

    written = {r["case_id"] for f in (out / "results.jsonl", out / "learning" / "results.jsonl")
               for r in read_results(f)}
    conn = sqlite3.connect(f"file:{mem / 'memory.sqlite3'}?mode=ro", uri=True)
    try:
        learned = {r[0] for r in conn.execute("SELECT case_id FROM records")}
    finally:
        conn.close()
    hit = case in learned and case not in written
    return f"killed before {case}'s row: {'in the window' if hit else 'NOT in the window'}", hit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random", type=int, default=21, help="trials killed at random moments (default 21)")
    ap.add_argument("--window", type=int, default=10, help="trials killed in the learning window (default 10)")
    ap.add_argument("--kills", type=int, default=2, help="SIGKILLs per random trial before the last resume (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments (default 0)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the trial directories here (default: a temp dir)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="medsim-kill-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        files = _split_files(root)
        ref: dict[str, dict[str, Any]] = {}
        for kind in ("plain", "online", "split"):
            out, mem = root / f"ref-{kind}", root / f"ref-{kind}-mem"
            p = run(command(kind, out, mem, files))
            if p.returncode != 0:
                raise SystemExit(f"the reference {kind} run failed ({p.returncode}):\n{p.stderr[-3000:]}")
            ref[kind] = outcome(out, mem)
            print(f"reference {kind}: {ref[kind]['n_rows']} rows, {ref[kind]['n_learning_rows']} learning rows, "
                  f"{len(ref[kind]['memory'])} memory records", flush=True)
        learned = {k: [c for c in [*ref[k]["learning_rows"].values(), *ref[k]["rows"].values()]
                       if c.get("learned") in LEARNED] for k in ("online", "split")}
        trials = matched = hits = 0
        plan = [("random", ("plain", "online", "split")[i % 3]) for i in range(args.random)] + \
               [("window", ("online", "split")[i % 2]) for i in range(args.window)]
        for i, (how, kind) in enumerate(plan):
            where = root / f"trial-{i:02d}"
            where.mkdir()
            out, mem = where / "run", where / "mem"
            cmd = command(kind, out, mem, files)
            n = ref[kind]["n_rows"] + ref[kind]["n_learning_rows"]
            if how == "random":
                notes = []
                for j in range(args.kills):
                    notes.append(kill_at_random(cmd if j == 0 else [*cmd, "--resume"], out, n, rng))
                note = "; then ".join(notes)
            else:
                case = rng.choice(learned[kind])["case_id"]
                note, hit = kill_in_window(cmd, out, mem, case, where)
                hits += hit
            failed = finish(cmd)
            diff = [failed] if failed else differences(outcome(out, mem), ref[kind])
            trials += 1
            matched += not diff
            verdict = "same results" if not diff else "DIFFERENT: " + ", ".join(diff)
            print(f"trial {i + 1:2d} ({how}, {kind}): {note} -> {verdict}", flush=True)
        print(f"\n{trials} trials: {matched} matched the uninterrupted run ({args.random} killed at random moments, "
              f"{args.kills} kill(s) each; {args.window} in the learning window, {hits} of them checked to be in it)")
        return 0 if matched == trials and hits == args.window else 1


if __name__ == "__main__":
    sys.exit(main())
