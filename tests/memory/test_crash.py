"""A process killed (SIGKILL) while writing leaves a consistent store: SQLite passes its
integrity check, every committed record is there and searchable, the counts match, and at
most the record (or the add_many batch) being written is lost."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.store import DB_NAME, MemoryStore
from tests.memory.helpers import VectorsOnly, seeded_unit

REPO = Path(__file__).resolve().parents[2]
DIM = 16

# Writes forever: one record per add (or `bulk` per add_many); says "w" as it starts a
# write and prints each committed id once the call has returned. Saves the indexes every
# 25 records, so that a kill can also land while an index file is being written.
_CHILD = """
import sys
from pathlib import Path
from memory.store import MemoryStore
from tests.memory.helpers import VectorsOnly, seeded_unit
d, threshold, i, bulk = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = MemoryStore(d, VectorsOnly(16), approx_threshold=threshold)
print("ready", flush=True)
while True:
    print("w", flush=True)
    if bulk:
        ids = s.add_many([{"buffer": "records", "case_id": f"c{j}", "case_key": f"k{j}", "text": f"t{j}",
                           "vector": seeded_unit(j, 16)} for j in range(i, i + bulk)])
        print(" ".join(f"{rid}:{j}" for rid, j in zip(ids, range(i, i + bulk))), flush=True)
        i += bulk
    else:
        rid = s.add("records", case_id=f"c{i}", case_key=f"k{i}", text=f"t{i}", vector=seeded_unit(i, 16))
        print(f"{rid}:{i}", flush=True)
        i += 1
    if i % 25 == 0:
        s.checkpoint()
"""


def _kill_while_writing(d: Path, threshold: int, start: int, commits_before_kill: int, bulk: int = 0,
                        delay_s: float = 0.0) -> dict[int, int]:
    """Run the writer; once it has reported `commits_before_kill` commits and started the
    next write, wait `delay_s` and SIGKILL it. Returns {record id: i} of every commit it
    reported."""
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(d), str(threshold), str(start), str(bulk)],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
        while sum(len(x.split()) for x in lines if x.strip() != "w") < commits_before_kill:
            lines.append(p.stdout.readline())
        while lines[-1].strip() != "w":  # the next write has begun
            lines.append(p.stdout.readline())
        if delay_s:
            time.sleep(delay_s)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        lines += p.stdout.read().splitlines()  # printed before it died: committed too
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    assert p.returncode == -signal.SIGKILL
    committed = {}
    for line in lines:
        for pair in line.split():
            if pair != "w":
                rid, i = pair.split(":")
                committed[int(rid)] = int(i)
    return committed


def _check_consistent(d: Path, threshold: int, committed: dict[int, int], in_flight: list[int]) -> dict[int, int]:
    """The store holds every committed record, plus at most the ones in flight (all or none
    of them); returns {id: i} of what it holds."""
    conn = sqlite3.connect(d / DB_NAME)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with MemoryStore(d, VectorsOnly(DIM), approx_threshold=threshold) as s:
        held = {r["id"]: int(r["case_id"][1:]) for r in s.export()}
        extra = sorted(i for rid, i in held.items() if rid not in committed)
        assert extra in ([], in_flight), f"lost or invented records: {extra} (in flight: {in_flight})"
        assert {rid: held[rid] for rid in committed} == committed  # every committed record is there
        assert s.count() == s.count("records") == len(committed) + len(extra)
        for rid, i in held.items():
            (rec, score), = s.search("records", seeded_unit(i, DIM), k=1)
            assert rec.id == rid and score == pytest.approx(1.0, abs=1e-5)
    return held


@pytest.mark.parametrize("threshold", [20_000, 60])
def test_sigkill_during_single_adds(tmp_path, threshold):
    held: dict[int, int] = {}
    # killed writers in a row on the same store, at different moments of a write
    for lines, delay in ((37, 0.0), (25, 0.0005), (51, 0.001), (40, 0.002)):
        start = max(held.values(), default=-1) + 1
        committed = _kill_while_writing(tmp_path, threshold, start, lines, delay_s=delay)
        assert len(committed) >= lines
        nxt = max(committed.values()) + 1
        held = _check_consistent(tmp_path, threshold, {**committed, **{r: i for r, i in held.items()}}, [nxt])
    assert len(held) >= 37 + 25 + 51 + 40


def test_sigkill_during_bulk_adds(tmp_path):
    held: dict[int, int] = {}
    for lines, delay in ((3, 0.0), (2, 0.001), (4, 0.003)):
        start = max(held.values(), default=-1) + 1
        committed = _kill_while_writing(tmp_path, 500, start, lines * 100, bulk=100, delay_s=delay)
        nxt = max(committed.values()) + 1
        held = _check_consistent(tmp_path, 500, {**committed, **held}, list(range(nxt, nxt + 100)))
        assert len(held) % 100 == 0  # a batch is stored whole or not at all
