"""Deleting records and rolling back adds: SQLite and the FAISS index stay in step (in
this connection, after reopening, in another connection), deleted ids are never given
out again, and a rollback of the newest adds gives their ids back."""
from __future__ import annotations

import pytest

from memory.store import MemoryStore, RecordNotFound
from tests.memory.helpers import VectorsOnly, unit
from tests.memory.test_store import KNOWN, fill_known, ranked

pytest.importorskip("faiss")

E1 = unit(1, 0, 0, 0)


@pytest.mark.parametrize("threshold", [20_000, 1])  # exact index; approximate (HNSW cannot remove: rebuilt)
def test_delete_keeps_sqlite_and_the_index_in_step(tmp_path, threshold):
    emb = VectorsOnly(4)
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s, \
            MemoryStore(tmp_path, emb, approx_threshold=threshold, read_only=True) as other:
        fill_known(s)
        assert ranked(other.search("records", E1, k=2)) == [(1, 1.0), (2, 0.8)]
        before = s.state()
        gone = s.delete([1])
        assert [r.case_id for r in gone] == ["case-1"]
        assert ranked(s.search("records", E1, k=2)) == [(2, 0.8), (3, 0.6)]
        assert ranked(other.search("records", E1, k=2)) == [(2, 0.8), (3, 0.6)]  # another connection sees it
        assert s.count() == 5 and "key-1" not in s.case_keys() and s.state()["hash"] != before["hash"]
        with pytest.raises(RecordNotFound, match="no memory record 1 "):
            s.delete([1, 2])  # one is missing: nothing is deleted
        assert s.count() == 5
        assert s.add("records", case_id="n", case_key="n", text="", vector=E1) == 7  # ids are never reused
    with MemoryStore(tmp_path, emb, approx_threshold=threshold) as s:
        assert s.index_status["records"] == "loaded"  # the saved index agrees with SQLite: no rebuild
        assert ranked(s.search("records", E1, k=2)) == [(7, 1.0), (2, 0.8)]


def test_rollback_gives_the_newest_ids_back_and_only_those(tmp_path):
    emb = VectorsOnly(4)
    with MemoryStore(tmp_path, emb) as s:
        fill_known(s)
        state = s.state()
        a = s.add("experience", case_id="a", case_key="key-a", text="", insight="x", vector=unit(0, 1, 0, 0))
        b = s.add("records", case_id="b", case_key="key-b", text="", vector=E1)
        assert (a, b) == (7, 8)
        s.rollback([a, b])
        assert s.state() == state and s.count("experience") == 0
        assert s.add("records", case_id="b", case_key="key-b", text="", vector=E1) == 7  # the same ids again
        s.rollback([7])
        assert s.state() == state
        # a record added after the one rolled back: its id is not given back (that would break the order)
        c = s.add("records", case_id="c", case_key="key-c", text="", vector=E1)
        d = s.add("records", case_id="d", case_key="key-d", text="", vector=E1)
        s.rollback([c])
        assert s.add("records", case_id="e", case_key="key-e", text="", vector=E1) == d + 1
        # nor after a delete: deleted ids stay unused
        s.delete([d])
        s.delete([d + 1])
        assert s.add("records", case_id="f", case_key="key-f", text="", vector=E1) == d + 2
    with MemoryStore(tmp_path, emb) as s:
        assert [r["id"] for r in s.export()] == [*KNOWN, d + 2]
        assert s.index_status["records"] == "loaded" and len(s.search("records", E1, k=50)) == len(KNOWN) + 1


def test_find_by_meta_and_case_keys_excluding(tmp_path):
    with MemoryStore(tmp_path, VectorsOnly(4)) as s:
        fill_known(s)
        tagged = s.add("records", case_id="t", case_key="key-t", text="", vector=E1,
                       meta={"learned_by": {"run": "r1", "results": "results.jsonl", "cell": ["t", 0, "base"]}})
        s.add("records", case_id="u", case_key="key-u", text="", vector=E1, meta={"learned_by": {"run": "r2"}})
        assert [r.id for r in s.find_by_meta("learned_by.run", "r1")] == [tagged]
        assert s.find_by_meta("learned_by.run", "r3") == []
        assert "key-t" in s.case_keys() and "key-t" not in s.case_keys(excluding=[tagged])
        assert "key-u" in s.case_keys(excluding=[tagged])
