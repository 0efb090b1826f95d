"""One process at a time in a run directory (medsim.runlock): a second ``medsim bench`` on
an OUT that another process holds exits 2 at once, naming OUT and the holder's pid, and
touches nothing there; a holder killed with SIGKILL leaves no stale lock; a normal run
leaves no lock file. Real processes throughout; servers on 127.0.0.1 only."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.results import read_results, row_key
from medsim.runlock import LOCK_NAME, RunLock, RunLockError
from tests.fault_server import fault_server

ROOT = Path(__file__).resolve().parent.parent

# holds OUT's lock until its stdin closes (or it is killed)
HOLDER = ("import sys; from medsim.runlock import RunLock; lock = RunLock(sys.argv[1]); lock.acquire(); "
          "print('held', flush=True); sys.stdin.read(); lock.release()")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["MEDSIM_API_KEY"] = "sk-lock-test-0123456789"
    return env


def _bench(out: Path, *args: str, wait: bool = True):
    cmd = [sys.executable, "-m", "medsim", "bench", "--cases", "demo", "--out", str(out), "--no-progress", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_second_process_is_refused_and_a_killed_holder_leaves_no_stale_lock(tmp_path):
    out = tmp_path / "run"
    first = _bench(out, "--llm", "scripted", "--limit", "2")
    assert first.returncode == 0, first.stderr
    assert not (out / LOCK_NAME).exists()  # a run that ended removed its lock file
    results = out / "results.jsonl"
    results.write_bytes(results.read_bytes().splitlines(keepends=True)[0])  # as if killed after one case
    done = read_results(results)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = _files(out)
        assert before[LOCK_NAME] == f"{holder.pid}\n".encode()
        second = _bench(out, "--llm", "scripted", "--limit", "2", "--resume")
        assert second.returncode == 2, second.stderr
        assert str(out) in second.stderr and f"pid {holder.pid}" in second.stderr
        assert "Traceback" not in second.stderr
        assert _files(out) == before  # results.jsonl, run.json and the lock file untouched
        holder.send_signal(signal.SIGKILL)  # dies holding it: the kernel drops the lock
        holder.wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert (out / LOCK_NAME).exists()  # the file stays; nobody holds it
    third = _bench(out, "--llm", "scripted", "--limit", "2", "--resume")
    assert third.returncode == 0, third.stderr
    rows = read_results(results)
    assert rows[:1] == done and len(rows) == 2 and len({row_key(r) for r in rows}) == 2
    assert not (out / LOCK_NAME).exists()


def test_two_benches_at_once_on_one_directory(tmp_path):
    out = tmp_path / "run"
    with fault_server("slow") as srv:
        srv.delay_s = 0.3  # each model reply: the first run lasts a few seconds
        args = ("--llm", f"openai:{srv.url}", "--model", "fake", "--limit", "1", "--resume")
        first = _bench(out, *args, wait=False)
        try:
            deadline = time.monotonic() + 30
            while not ((out / LOCK_NAME).is_file() and (out / LOCK_NAME).read_text().strip() == str(first.pid)):
                assert first.poll() is None and time.monotonic() < deadline, first.communicate()
                time.sleep(0.05)
            second = _bench(out, *args)
            assert first.poll() is None  # (the refusal came while the first was running)
            assert second.returncode == 2 and f"pid {first.pid}" in second.stderr and str(out) in second.stderr
            stdout, stderr = first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 0, stderr
        rows = read_results(out / "results.jsonl")
        assert len(rows) == 1
        again = _bench(out, *args)  # the first has ended: the resume runs (nothing left to do)
    assert again.returncode == 0, again.stderr
    assert read_results(out / "results.jsonl") == rows


def test_the_lock_in_one_process(tmp_path):
    out = tmp_path / "new" / "dir"
    with RunLock(out) as a:
        assert out.is_dir() and (out / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        with pytest.raises(RunLockError) as e:
            RunLock(out).acquire()  # another open file: refused as another process would be
        assert e.value.pid == os.getpid() and str(out) in str(e.value)
        assert a.held
    assert not a.held and not (out / LOCK_NAME).exists()
    with RunLock(out):  # free again
        pass
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunLockError, match="not a directory"):
        RunLock(tmp_path / "file").acquire()


def test_a_deleted_lock_file_lets_no_second_writer_in(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (out / LOCK_NAME).unlink()  # someone removes the lock file while the run holds it
        second = _bench(out, "--llm", "scripted", "--limit", "2", "--resume")
        assert second.returncode == 2, second.stderr
        assert "in use by another medsim process" in second.stderr and "lock file was removed" in second.stderr
        assert not (out / "results.jsonl").exists() and not (out / "run.json").exists()
        with pytest.raises(RunLockError, match="in use by another medsim process"):
            RunLock(out).acquire()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(out) as lock:  # the holder is gone: free
        assert lock.mode == "flock"


@pytest.fixture(params=["enolck", "no-fcntl"])
def no_file_lock(request, monkeypatch):
    """A file system that refuses flock (ENOLCK, as some NFS mounts), or no fcntl at all."""
    import errno

    import medsim.runlock as runlock

    if request.param == "no-fcntl":
        monkeypatch.setattr(runlock, "fcntl", None)
    else:
        def flock(fd, op):
            raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
        monkeypatch.setattr(runlock.fcntl, "flock", flock)
    return request.param


def test_without_a_file_lock_a_pid_file_keeps_a_second_writer_out(tmp_path, no_file_lock, caplog):
    out = tmp_path / "run"
    with caplog.at_level("WARNING"):
        with RunLock(out) as a:
            assert a.mode == "pidfile" and (out / LOCK_NAME).read_text() == f"{os.getpid()}\n"
            assert "no file lock can be taken" in caplog.text and str(out / LOCK_NAME) in caplog.text
            with pytest.raises(RunLockError, match=f"pid {os.getpid()}.*remove that file if no medsim runs there"):
                RunLock(out).acquire()
    assert not (out / LOCK_NAME).exists()
    # a pid file left by a run killed with SIGKILL: taken over
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out.mkdir()
    (out / LOCK_NAME).write_text(f"{dead.pid}\n")
    with RunLock(out) as b:
        assert (out / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    # one of a process that runs: refused, naming it
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / LOCK_NAME).write_text(f"{alive.pid}\n")
        with pytest.raises(RunLockError) as e:
            RunLock(out).acquire()
        assert e.value.pid == alive.pid and f"pid {alive.pid}" in str(e.value)
        assert (out / LOCK_NAME).read_text() == f"{alive.pid}\n"  # left as it was
    finally:
        alive.kill()
        alive.wait()
    assert not b.held
