"""A run stopped in the middle finishes, on ``--resume``, as a run that was never stopped:

- killed (SIGKILL) in the learning window, between a cell's learning being committed to
  the memory and its row being written (online and on a learning split): resume rolls the
  learning back and runs the cell again, leaving other runs' records alone;
- Ctrl-C (a real SIGINT): the queued cells stop at once, the running ones write their
  rows, exit 130, and the command to resume is printed;
- a cell counted twice (a duplicated row) counts once;
- a refused run writes nothing into --out;
- a full disk names the file, says what to do, and leaves no temporary file.

Real processes for the signals; the scripted backend and the hashing embedder throughout."""
from __future__ import annotations

import errno
import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.results import read_results, row_key
from medsim.bench import BenchError, BenchOptions, run_bench
from medsim.spec import build_spec
from tests.helpers import default_sigint

pytest.importorskip("faiss")

ROOT = Path(__file__).resolve().parents[2]
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith("MEDSIM_TRIAL")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _cmd(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "medsim", "bench", "--llm", "scripted", "--out", str(out), "--no-progress", *args]


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=ROOT, env=_env(**env), capture_output=True, text=True, timeout=300)
    return p


def _cells(path: Path) -> dict:
    """A results file's rows by cell, without their timings; one row per cell."""
    rows = read_results(path)
    cells = {row_key(r): {k: v for k, v in r.items() if k not in ("wall_s", "model_latency_s")} for r in rows}
    assert len(cells) == len(rows), f"{path}: a cell has more than one row"
    return cells


def _summary(out: Path) -> dict:
    s = json.loads((out / "summary.json").read_text())
    s.pop("wall_s")
    return s


def _records(mem: Path) -> list[tuple]:
    conn = sqlite3.connect(f"file:{mem / 'memory.sqlite3'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, buffer, case_id, text, diagnosis, insight, meta FROM records ORDER BY id"
                            ).fetchall()
    finally:
        conn.close()


def _seed_other_runs(mem: Path) -> None:
    """Records another run (and an untagged older one) left in the memory: never rolled back."""
    from medsim.memory import learned_by, open_memory
    from medsim.spec import MemorySpec

    with open_memory(MemorySpec(mode="learn", dir=str(mem), embedder="hash")) as m:
        m.remember("records", case_id="old-1", case_key="other-key-1", text="an ankle sprain after a fall",
                   diagnosis="Ankle sprain")
        m.remember("records", case_id="demo-003", case_key="other-key-2", text="an itchy rash on both hands",
                   diagnosis="Contact dermatitis",
                   meta={"learned_by": learned_by("another-run", "results.jsonl", ("demo-003", 0, "base"))})


def _comparable(records: list[tuple]) -> list[tuple]:
    """Memory records without what differs between two runs by design (the run id)."""
    out = []
    for r in records:
        meta = json.loads(r[-1])
        tag = meta.get("learned_by")
        if tag and tag.get("run") not in ("another-run",):
            tag = {**tag, "run": "this run"}
        out.append((*r[:-1], json.dumps({**meta, "learned_by": tag} if tag else meta, sort_keys=True)))
    return out


# -- 1. a kill in the learning window ---------------------------------------------------------------------
@pytest.mark.parametrize("how", ["online", "split"])
def test_a_kill_in_the_learning_window_resumes_to_the_uninterrupted_results(tmp_path, how):
    if how == "online":
        args = ("--cases", "demo", "--limit", "8", "--memory", "learn", "--embedder", "hash")
        held = "demo-005"  # diagnosed right: filed in the records buffer
    else:
        from agents.cases.registry import resolve_case_path

        lines = resolve_case_path("demo").read_text().splitlines()
        (tmp_path / "learn.jsonl").write_text("\n".join(lines[:6]) + "\n")
        (tmp_path / "score.jsonl").write_text("\n".join(lines[6:9]) + "\n")
        args = ("--cases", str(tmp_path / "score.jsonl"), "--learn-cases", str(tmp_path / "learn.jsonl"),
                "--embedder", "hash")
        held = "demo-004"  # a learning case diagnosed wrong, whose lesson is stored in the experience buffer
    ref, ref_mem = tmp_path / "ref", tmp_path / "ref-mem"
    out, mem = tmp_path / "run", tmp_path / "mem"
    for m in (ref_mem, mem):
        _seed_other_runs(m)
    p = _run(_cmd(ref, *args, "--memory-dir", str(ref_mem)))
    assert p.returncode == 0, p.stderr
    rows_file = out / ("results.jsonl" if how == "online" else "learning/results.jsonl")
    learned = {r["case_id"]: r["learned"] for r in read_results(ref / rows_file.relative_to(out))}
    assert learned[held] == ("filed" if how == "online" else "insight_stored")

    hold = tmp_path / "held"
    proc = subprocess.Popen(_cmd(out, *args, "--memory-dir", str(mem)), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            env=_env(MEDSIM_TRIAL_HOLD=held, MEDSIM_TRIAL_HOLD_FILE=str(hold)))
    try:
        deadline = time.monotonic() + 120
        while not hold.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # in the window: the cell's learning is in the memory, its row is not on disk
    assert held in {r[2] for r in _records(mem)} and held not in {r["case_id"] for r in read_results(rows_file)}

    again = _run(_cmd(out, *args, "--memory-dir", str(mem), "--resume"))
    assert again.returncode == 0, again.stderr
    assert "rolled back" in again.stderr and f"({held})" in again.stderr
    assert "are in the memory" not in again.stderr
    assert _cells(out / "results.jsonl") == _cells(ref / "results.jsonl")
    if how == "split":
        assert _cells(out / "learning/results.jsonl") == _cells(ref / "learning/results.jsonl")
    assert _summary(out) == _summary(ref)  # the memory's size and hash (ids, case keys) included
    got = _comparable(_records(mem))
    assert got == _comparable(_records(ref_mem))  # the same records under the same ids
    assert [r[2] for r in got[:2]] == ["old-1", "demo-003"]  # another run's records stay
    assert json.loads(_records(mem)[2][-1])["learned_by"]["run"] == json.loads((out / "run.json").read_text())["run_id"]


# -- 2. Ctrl-C --------------------------------------------------------------------------------------------
def test_ctrl_c_cancels_the_queued_cells_and_resume_finishes_the_run(tmp_path):
    args = ("--cases", "demo", "--repeats", "15", "--workers", "4")  # 330 cells
    out = tmp_path / "run"
    proc = subprocess.Popen(_cmd(out, *args), cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while not ((out / "results.jsonl").is_file() and len((out / "results.jsonl").read_bytes().splitlines()) >= 10):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "queued case(s) cancelled" in stderr
    assert "finish the run with: " in stderr and f"--out {out} --no-progress" in stderr and "--resume" in stderr
    rows = read_results(out / "results.jsonl")
    logs = list((out / "events").iterdir())
    assert 10 <= len(rows) < 200, len(rows)  # stopped early (an uninterrupted run writes 330)
    assert len(logs) == len(rows)  # no cell ran whose row was thrown away: the running ones wrote theirs
    assert stopped_in < 20

    again = _run(_cmd(out, *args, "--resume"))
    assert again.returncode == 0, again.stderr
    ref = tmp_path / "ref"
    p = _run(_cmd(ref, *args))
    assert p.returncode == 0, p.stderr
    assert _cells(out / "results.jsonl") == _cells(ref / "results.jsonl")
    assert _summary(out) == _summary(ref)


# -- 3. a cell counted twice ---------------------------------------------------------------------------------
def test_resume_counts_a_duplicated_cell_once(tmp_path, caplog):
    from medsim.compare import load_run

    out = tmp_path / "run"
    spec = build_spec(None, {"limit": 6})
    run_bench(spec, BenchOptions(out=out, progress=False))
    lines = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    twin = json.loads(lines[1])
    twin["wall_s"] = 9.0  # the same cell run again by a second writer
    (out / "results.jsonl").write_bytes(b"".join([*lines, lines[0], json.dumps(twin).encode() + b"\n"]))
    with caplog.at_level("WARNING"):
        o = run_bench(spec, BenchOptions(out=out, progress=False, resume=True))
    assert o.summary["cases"] == 6 and json.loads((out / "summary.json").read_text())["cases"] == 6
    assert "2 duplicated row(s) dropped" in caplog.text and str(out / "results.jsonl") in caplog.text
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 6 == len({row_key(r) for r in rows})
    assert next(r for r in rows if r["case_id"] == twin["case_id"])["wall_s"] == 9.0  # the last copy is kept
    assert len(load_run(str(out)).rows) == 6  # and `medsim compare`, which refuses duplicates, reads it


# -- 4. a refused run writes nothing ----------------------------------------------------------------------------
def test_a_run_the_leak_check_refuses_writes_nothing(tmp_path):
    mem = {"memory.embedder": "hash", "memory.dir": str(tmp_path / "mem")}
    run_bench(build_spec(None, {"limit": 3, "memory.mode": "learn", **mem}), BenchOptions(out=tmp_path / "learn",
                                                                                          progress=False))
    out = tmp_path / "frozen"
    with pytest.raises(BenchError, match="are in the memory"):
        run_bench(build_spec(None, {"limit": 3, "memory.mode": "frozen", **mem}), BenchOptions(out=out, progress=False))
    assert not out.exists()
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(BenchError, match="are in the memory"):
        run_bench(build_spec(None, {"limit": 3, "memory.mode": "frozen", **mem}), BenchOptions(out=out, progress=False))
    assert [p.name for p in out.iterdir()] == ["notes.txt"]  # as it was found
    # so the next run there (without the memory) is a new run, not "already holds a run"
    o = run_bench(build_spec(None, {"limit": 3}), BenchOptions(out=out, progress=False))
    assert o.summary["cases"] == 3


# -- 5. a full disk ---------------------------------------------------------------------------------------------
def _full_disk_for(monkeypatch, name: str) -> None:
    """Path.write_bytes of ``name`` writes half, then fails as a full disk does."""
    real = pathlib.Path.write_bytes

    def write_bytes(self, data):
        if self.name == name:
            real(self, data[: len(data) // 2])
            raise OSError(ENOSPC.errno, ENOSPC.strerror)
        return real(self, data)
    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)


def test_a_full_disk_names_the_file_says_what_to_do_and_leaves_no_tmp(tmp_path, monkeypatch):
    spec = build_spec(None, {"limit": 4})
    out = tmp_path / "run"
    _full_disk_for(monkeypatch, "run.json.tmp")
    with pytest.raises(BenchError) as e:
        run_bench(spec, BenchOptions(out=out, progress=False))
    msg = str(e.value)
    assert str(out / "run.json") in msg and "No space left on device" in msg and "free some space" in msg
    assert not out.exists()  # no run.json.tmp, nothing else either
    monkeypatch.undo()

    # a row that cannot be appended: the results file is named, and --resume is the way on
    real_write, calls = os.write, []

    def write(fd, data):
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(ENOSPC.errno, ENOSPC.strerror)
        return real_write(fd, data)
    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError) as e:
        run_bench(spec, BenchOptions(out=out, progress=False))
    assert e.value.filename == str(out / "results.jsonl") and e.value.errno == errno.ENOSPC
    assert "No space left on device" in e.value.strerror and "--resume" in e.value.strerror
    assert len(read_results(out / "results.jsonl")) == 2
    monkeypatch.undo()

    # the summary at the end
    _full_disk_for(monkeypatch, "summary.json.tmp")
    with pytest.raises(OSError) as e:
        run_bench(spec, BenchOptions(out=out, progress=False, resume=True))
    assert e.value.filename == str(out / "summary.json") and "free some space" in e.value.strerror
    assert not list(out.rglob("*.tmp"))
    monkeypatch.undo()

    o = run_bench(spec, BenchOptions(out=out, progress=False, resume=True))
    ref = run_bench(spec, BenchOptions(out=tmp_path / "ref", progress=False))
    assert o.summary["cases"] == 4 and _cells(out / "results.jsonl") == _cells(ref.out / "results.jsonl")


def test_an_event_log_that_cannot_be_written_is_named(tmp_path, monkeypatch):
    from agents.events import EventLog

    def full(self, event, **context):
        raise OSError(ENOSPC.errno, ENOSPC.strerror)
    monkeypatch.setattr(EventLog, "emit", full)
    out = tmp_path / "run"
    with pytest.raises(OSError) as e:
        run_bench(build_spec(None, {"limit": 2}), BenchOptions(out=out, progress=False))
    assert Path(e.value.filename).parent == out / "events" and "free some space" in e.value.strerror


# -- the CLI says it in one line ----------------------------------------------------------------------------------
def test_the_cli_prints_the_file_and_the_hint(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.json").mkdir()  # the summary cannot be written (a directory is in its place)
    p = _run(_cmd(out, "--cases", "demo", "--limit", "2"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{out / 'summary.json'}: cannot write it" in p.stderr and "--resume" in p.stderr
