"""The memory store: nearest neighbours, persistence, index rebuilds, errors, threads."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memory.embed import EmbedderError, HashEmbedder
from memory.store import BUFFERS, DB_NAME, MemoryStore, MemoryStoreError, RecordNotFound
from tests.memory.helpers import VectorsOnly, seeded_unit, unit

REPO = Path(__file__).resolve().parents[2]

# Hand-made unit vectors with distinct inner products against e1 = (1, 0, 0, 0).
KNOWN = {1: unit(1, 0, 0, 0), 2: unit(0.8, 0.6, 0, 0), 3: unit(0.6, 0, 0.8, 0), 4: unit(0.28, 0.96, 0, 0),
         5: unit(0, 0, 0, 1), 6: unit(-1, 0, 0, 0)}


def fill_known(s: MemoryStore) -> None:
    ids = [s.add("records", case_id=f"case-{i}", case_key=f"key-{i}", text=f"record {i}", vector=v)
           for i, v in KNOWN.items()]
    assert ids == list(KNOWN)


def ranked(hits):
    return [(r.id, round(score, 4)) for r, score in hits]


@pytest.mark.parametrize("threshold,kind", [(20_000, "flat"), (1, "hnsw")])
def test_nearest_neighbours_on_known_vectors(tmp_path, threshold, kind):
    with MemoryStore(tmp_path, VectorsOnly(4), approx_threshold=threshold) as s:
        fill_known(s)
        assert s.index_kind("records") == kind
        assert ranked(s.search("records", unit(1, 0, 0, 0), k=3)) == [(1, 1.0), (2, 0.8), (3, 0.6)]
        assert ranked(s.search("records", unit(1, 0, 0, 0), k=6)) == [(1, 1.0), (2, 0.8), (3, 0.6), (4, 0.28),
                                                                       (5, 0.0), (6, -1.0)]
        assert ranked(s.search("records", np.array([0, 2, 0, 0]), k=2)) == [(4, 0.96), (2, 0.6)]  # normalised
        assert ranked(s.search("records", unit(0, 0, 0.6, 0.8), k=2)) == [(5, 0.8), (3, 0.48)]
        assert len(s.search("records", unit(1, 0, 0, 0), k=50)) == 6  # k past the size: all of them
        assert s.search("experience", unit(1, 0, 0, 0)) == []  # buffers are separate
        rec, score = s.search("records", unit(1, 0, 0, 0), k=1)[0]
        assert (rec.case_id, rec.case_key, rec.text, rec.buffer) == ("case-1", "key-1", "record 1", "records")


def test_approximate_index_agrees_with_exact_search(tmp_path):
    rng = np.random.default_rng(1)
    basis = rng.standard_normal((8, 32))
    data = rng.standard_normal((3000, 8)) @ basis + 0.2 * rng.standard_normal((3000, 32))
    data = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    with MemoryStore(tmp_path, VectorsOnly(32), approx_threshold=1000) as s:
        ids = s.add_many([{"buffer": "records", "case_id": str(i), "case_key": str(i), "text": "", "vector": v}
                          for i, v in enumerate(data)])
        assert s.index_kind("records") == "hnsw"
        queries = data[rng.choice(len(data), 50, replace=False)] + 0.05 * rng.standard_normal((50, 32))
        hit = total = 0
        for q in queries.astype(np.float32):
            exact = {ids[j] for j in np.argsort(-(data @ (q / np.linalg.norm(q))))[:3]}
            got = s.search("records", q, k=3)
            assert [sc for _, sc in got] == sorted((sc for _, sc in got), reverse=True)
            hit += len(exact & {r.id for r, _ in got})
            total += 3
        assert hit / total >= 0.95


def test_index_becomes_approximate_at_the_threshold_and_persists(tmp_path):
    emb = VectorsOnly(16)
    with MemoryStore(tmp_path, emb, approx_threshold=5) as s:
        for i in range(4):
            s.add("records", case_id=str(i), case_key=str(i), text="", vector=seeded_unit(i, 16))
        assert s.index_kind("records") == "flat"
        s.add("records", case_id="4", case_key="4", text="", vector=seeded_unit(4, 16))
        assert s.index_kind("records") == "hnsw"
        assert "threshold" in s.index_status["records"]
        assert s.index_kind("experience") == "flat"
    with MemoryStore(tmp_path, emb, approx_threshold=5) as s:
        assert s.index_status["records"] == "loaded" and s.index_kind("records") == "hnsw"
        assert [r.id for r, _ in s.search("records", seeded_unit(3, 16), k=1)] == [4]  # ids start at 1
    with MemoryStore(tmp_path, emb, approx_threshold=100) as s:  # threshold raised: back to exact
        assert s.index_kind("records") == "flat" and s.index_status["records"].startswith("rebuilt")


_WRITER = """
import sys
from pathlib import Path
from memory.store import MemoryStore
from tests.memory.helpers import VectorsOnly, seeded_unit
with MemoryStore(Path(sys.argv[1]), VectorsOnly(16), approx_threshold=int(sys.argv[2])) as s:
    for i in range(40):
        s.add("records" if i % 4 else "experience", case_id=f"c{i}", case_key=f"k{i}", text=f"text {i}",
              diagnosis=f"dx {i}", tests=[f"t{i}"], meta={"i": i}, vector=seeded_unit(i, 16))
"""

_READER = """
import json, sys
from pathlib import Path
from memory.store import MemoryStore
from tests.memory.helpers import VectorsOnly, seeded_unit
with MemoryStore(Path(sys.argv[1]), VectorsOnly(16), approx_threshold=int(sys.argv[2]), read_only=True) as s:
    out = {"state": s.state(), "status": s.index_status,
           "hits": [[(r.case_id, r.diagnosis, r.meta["i"]) for r, _ in s.search(b, seeded_unit(i, 16), k=1)]
                    for i, b in ((5, "records"), (8, "experience"), (39, "records"))]}
print(json.dumps(out))
"""


@pytest.mark.parametrize("threshold", [20_000, 10])
def test_persistence_across_processes(tmp_path, threshold):
    def run(code):
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(threshold)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout
    run(_WRITER)
    out = json.loads(run(_READER))
    assert out["status"] == {"records": "loaded", "experience": "loaded"}
    assert out["hits"] == [[["c5", "dx 5", 5]], [["c8", "dx 8", 8]], [["c39", "dx 39", 39]]]
    assert (out["state"]["size"], out["state"]["records"], out["state"]["experience"]) == (40, 30, 10)
    with MemoryStore(tmp_path, VectorsOnly(16), approx_threshold=threshold) as s:
        assert s.state() == out["state"]


def _filled(tmp_path: Path, n: int = 30, threshold: int = 20_000) -> VectorsOnly:
    emb = VectorsOnly(16)
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s:
        s.add_many([{"buffer": "records", "case_id": f"c{i}", "case_key": f"k{i}", "text": "", "vector": seeded_unit(i, 16)}
                    for i in range(n)])
    return emb


def _all_found(s: MemoryStore, n: int) -> None:
    assert s.count("records") == n
    for i in range(n):
        (rec, score), = s.search("records", seeded_unit(i, 16), k=1)
        assert rec.case_id == f"c{i}" and score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("threshold", [20_000, 5])
def test_index_rebuilt_when_files_are_deleted(tmp_path, threshold):
    emb = _filled(tmp_path, threshold=threshold)
    for p in tmp_path.glob("records.faiss*"):
        p.unlink()
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s:
        assert s.index_status["records"].startswith("rebuilt from SQLite (index file missing)")
        _all_found(s, 30)
    assert (tmp_path / "records.faiss").is_file()  # and saved again


@pytest.mark.parametrize("threshold", [20_000, 5])
def test_stale_index_caught_up_from_sqlite(tmp_path, threshold):
    emb = _filled(tmp_path, n=20, threshold=threshold)
    saved = {p.name: p.read_bytes() for p in tmp_path.glob("records.faiss*")}
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s:  # records added behind the saved index's back
        s.add_many([{"buffer": "records", "case_id": f"c{i}", "case_key": f"k{i}", "text": "", "vector": seeded_unit(i, 16)}
                    for i in range(20, 30)])
    for name, data in saved.items():
        (tmp_path / name).write_bytes(data)
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s:
        assert s.index_status["records"] == "loaded, caught up with 10 records from SQLite"
        _all_found(s, 30)


def test_index_that_disagrees_with_sqlite_is_rebuilt(tmp_path):
    emb = _filled(tmp_path, n=20)
    saved = {p.name: p.read_bytes() for p in tmp_path.glob("records.faiss*")}
    with MemoryStore(tmp_path, emb) as s:
        s.clear()
        s.add_many([{"buffer": "records", "case_id": f"c{i}", "case_key": f"k{i}", "text": "", "vector": seeded_unit(i, 16)}
                    for i in range(30)])
    for name, data in saved.items():  # an index of ids 1..20, which SQLite no longer has
        (tmp_path / name).write_bytes(data)
    with MemoryStore(tmp_path, emb) as s:
        assert s.index_status["records"] == "rebuilt from SQLite (index disagrees with SQLite): flat, 30 vectors, " \
            + s.index_status["records"].rsplit(", ", 1)[1]
        _all_found(s, 30)
        assert min(r["id"] for r in s.export()) == 21  # ids are never reused after clear()


@pytest.mark.parametrize("damage", ["flip", "truncate", "sidecar", "sidecar_matches_garbage", "empty"])
def test_corrupt_index_is_rebuilt(tmp_path, damage):
    import hashlib

    emb = _filled(tmp_path, threshold=5)
    ipath, spath = tmp_path / "records.faiss", tmp_path / "records.faiss.json"
    data = bytearray(ipath.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        ipath.write_bytes(bytes(data))
    elif damage == "truncate":
        ipath.write_bytes(bytes(data[: len(data) // 3]))
    elif damage == "sidecar":
        spath.write_text("{not json", encoding="utf-8")
    elif damage == "sidecar_matches_garbage":  # the checksum agrees, the content is not an index
        garbage = b"garbage" * 100
        ipath.write_bytes(garbage)
        side = json.loads(spath.read_text())
        side["file_sha256"] = hashlib.sha256(garbage).hexdigest()
        spath.write_text(json.dumps(side))
    else:
        ipath.write_bytes(b"")
    with MemoryStore(tmp_path, emb, approx_threshold=5) as s:
        assert s.index_status["records"].startswith("rebuilt from SQLite"), s.index_status
        _all_found(s, 30)
    with MemoryStore(tmp_path, emb, approx_threshold=5) as s:
        assert s.index_status["records"] == "loaded"


def test_embedder_mismatch_is_refused(tmp_path):
    with MemoryStore(tmp_path, HashEmbedder()) as s:
        s.add("records", case_id="a", case_key="a", text="chest pain")
    with pytest.raises(MemoryStoreError) as e:
        MemoryStore(tmp_path, HashEmbedder(dim=128))
    assert "hash:256" in str(e.value) and "hash:128" in str(e.value)
    with pytest.raises(MemoryStoreError, match="other:256.*never mixed"):
        MemoryStore(tmp_path, VectorsOnly(256, name="other:256"))
    with pytest.raises(MemoryStoreError, match="hash:256"):
        MemoryStore(tmp_path, VectorsOnly(256, name="other:256"), read_only=True)
    with MemoryStore(tmp_path, HashEmbedder(), read_only=True) as s:  # the right one still opens
        assert s.count() == 1


def test_texts_are_embedded_and_searched(tmp_path):
    with MemoryStore(tmp_path, HashEmbedder()) as s:
        s.add("records", case_id="mi", case_key="k-mi", text="crushing chest pain, sweating, ST elevation",
              diagnosis="Myocardial infarction", tests=["ECG", "Troponin"])
        s.add("records", case_id="derm", case_key="k-derm", text="itchy rash on both hands after gardening",
              diagnosis="Contact dermatitis")
        s.add("experience", case_id="mi", case_key="k-mi2", text="chest pain with normal ECG",
              insight="Repeat the troponin before ruling out a heart attack.")
        (top, score), _ = s.search("records", "chest pain and sweating", k=2)
        assert top.diagnosis == "Myocardial infarction" and top.tests == ("ECG", "Troponin") and score > 0.3
        (exp, _), = s.search("experience", "chest pain", k=3)
        assert exp.insight.startswith("Repeat the troponin")


def test_state_export_get_clear(tmp_path):
    emb = VectorsOnly(4)
    with MemoryStore(tmp_path / "a", emb) as a, MemoryStore(tmp_path / "b", emb) as b:
        empty = a.state()
        assert empty == {"size": 0, "records": 0, "experience": 0, "hash": empty["hash"], "embedder": "test:vectors-4",
                         "dim": 4}
        for s in (a, b):
            fill_known(s)
            s.add("experience", case_id="x", case_key="key-x", text="insight", insight="think of PE",
                  images=["xray.png"], meta={"from": "reflection"}, vector=unit(0, 0, 1, 1))
        st = a.state()
        assert (st["size"], st["records"], st["experience"]) == (7, 6, 1)
        assert st["hash"] == b.state()["hash"] != empty["hash"]  # same ids and case keys, same hash
        assert a.has_case("key-x") and not a.has_case("key-nope")
        assert a.case_keys() == {f"key-{i}" for i in KNOWN} | {"key-x"}
        assert a.count() == 7 and a.count("experience") == 1
        rows = list(a.export())
        assert [r["id"] for r in rows] == list(range(1, 8)) and "vector" not in rows[0]
        json.dumps(rows)  # JSON-ready
        assert rows[-1]["images"] == ["xray.png"] and rows[-1]["meta"] == {"from": "reflection"}
        assert a.get(7).insight == "think of PE"
        with pytest.raises(RecordNotFound, match="no memory record 99") as e:
            a.get(99)
        assert isinstance(e.value, KeyError) and isinstance(e.value, MemoryStoreError)
        a.clear()
        assert a.count() == 0 and a.state()["hash"] == empty["hash"] and a.search("records", unit(1, 0, 0, 0)) == []
        assert a.add("records", case_id="n", case_key="n", text="", vector=unit(1, 0, 0, 0)) == 8
    with MemoryStore(tmp_path / "a", emb) as a:
        assert a.state() == {**empty, "size": 1, "records": 1, "hash": a.state()["hash"]}
        assert a.state()["hash"] != empty["hash"]


def test_add_many_is_all_or_nothing_and_inputs_are_checked(tmp_path):
    with MemoryStore(tmp_path, VectorsOnly(4)) as s:
        good = {"buffer": "records", "case_id": "a", "case_key": "a", "text": "", "vector": unit(1, 0, 0, 0)}
        for bad, msg in [({"buffer": "nope"}, "unknown buffer"), ({"vector": np.zeros(4)}, "zero"),
                         ({"vector": np.ones(5)}, "shape"), ({"tests": "ECG"}, "tests must be a sequence"),
                         ({"meta": {"x": object()}}, "JSON"), ({"case_id": 3}, "case_id must be a string"),
                         ({"colour": "red"}, "colour")]:
            with pytest.raises(MemoryStoreError, match=msg):
                s.add_many([good, {**good, **bad}])
        assert s.count() == 0
        with pytest.raises(EmbedderError, match="vectors only"):  # no vector: the text is embedded
            s.add("records", case_id="a", case_key="a", text="hello")
        assert s.add_many([]) == []


def test_read_only(tmp_path):
    with pytest.raises(MemoryStoreError, match="no memory store"):
        MemoryStore(tmp_path / "none", VectorsOnly(4), read_only=True)
    assert not (tmp_path / "none").exists()
    with MemoryStore(tmp_path, VectorsOnly(4)) as s:
        fill_known(s)
    (tmp_path / "records.faiss").unlink()
    with MemoryStore(tmp_path, VectorsOnly(4), read_only=True) as s:
        assert ranked(s.search("records", unit(1, 0, 0, 0), k=1)) == [(1, 1.0)]  # rebuilt in memory only
        for call in (lambda: s.add("records", case_id="a", case_key="a", text="", vector=unit(1, 0, 0, 0)),
                     s.clear, s.checkpoint):
            with pytest.raises(MemoryStoreError, match="read-only"):
                call()
    assert not (tmp_path / "records.faiss").exists()  # a read-only store writes nothing


def test_another_connection_is_seen(tmp_path):
    emb = VectorsOnly(4)
    with MemoryStore(tmp_path, emb) as a, MemoryStore(tmp_path, emb, read_only=True) as b:
        assert b.search("records", unit(1, 0, 0, 0)) == []
        fill_known(a)
        assert ranked(b.search("records", unit(1, 0, 0, 0), k=2)) == [(1, 1.0), (2, 0.8)]
        assert b.state() == a.state()
        a.clear()
        assert b.search("records", unit(1, 0, 0, 0)) == [] and b.state() == a.state()


def test_clear_errors_for_bad_directories_and_files(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(MemoryStoreError, match=f"cannot create the memory directory {f / 'mem'}"):
        MemoryStore(f / "mem", VectorsOnly(4))
    with pytest.raises(MemoryStoreError, match="not a directory"):
        MemoryStore(f, VectorsOnly(4))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / DB_NAME).write_bytes(b"this is not an sqlite database at all" * 100)
    with pytest.raises(MemoryStoreError, match=f"{bad / DB_NAME}.*corrupt"):
        MemoryStore(bad, VectorsOnly(4))
    other = tmp_path / "other"
    other.mkdir()
    sqlite3.connect(other / DB_NAME).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(MemoryStoreError, match="not a medsim memory"):
        MemoryStore(other, VectorsOnly(4))
    s = MemoryStore(tmp_path / "ok", VectorsOnly(4))
    s.close()
    s.close()  # twice is fine
    with pytest.raises(MemoryStoreError, match="closed"):
        s.search("records", unit(1, 0, 0, 0))


@pytest.mark.skipif(sys.platform == "win32" or __import__("os").geteuid() == 0,
                    reason="root writes anywhere; permissions cannot be tested")
def test_unwritable_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(MemoryStoreError, match="not writable"):
            MemoryStore(d, VectorsOnly(4))
    finally:
        d.chmod(0o700)


def test_threads_add_and_search(tmp_path):
    dim, per, workers = 16, 40, 4
    errors = []
    with MemoryStore(tmp_path, VectorsOnly(dim), approx_threshold=60) as s:
        def work(w):
            try:
                for j in range(per):
                    i = w * per + j
                    buffer = BUFFERS[i % 2]
                    rid = s.add(buffer, case_id=f"c{i}", case_key=f"k{i}", text="", vector=seeded_unit(i, dim))
                    (rec, score), = s.search(buffer, seeded_unit(i, dim), k=1)
                    assert rec.id == rid and score == pytest.approx(1.0, abs=1e-5)
                    s.state()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert s.count() == per * workers and s.count("records") == per * workers // 2
        assert s.index_kind("records") == "hnsw"  # crossed the threshold while threads ran
        ids = [r["id"] for r in s.export()]
        assert sorted(set(ids)) == list(range(1, per * workers + 1))
        live = s.state()
    with MemoryStore(tmp_path, VectorsOnly(dim), approx_threshold=60) as s:
        assert s.state() == live  # the running hash equals one computed from scratch
        for i in range(per * workers):
            (rec, _), = s.search(BUFFERS[i % 2], seeded_unit(i, dim), k=1)
            assert rec.case_id == f"c{i}"
