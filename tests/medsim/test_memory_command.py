"""``medsim memory show|delete ID``: the id as ``memory search`` prints it (``records:1``)
or a bare number; a wrong buffer, a missing record or a malformed id is a plain error
(exit 2); a deleted record is gone from SQLite and from the search index."""
from __future__ import annotations

import json

import pytest

from medsim.cli import main
from medsim.memory import open_memory, parse_record_id
from medsim.spec import MemorySpec

pytest.importorskip("faiss")


@pytest.fixture
def mem(tmp_path):
    d = tmp_path / "mem"
    with open_memory(MemorySpec(mode="learn", dir=str(d), embedder="hash")) as m:
        m.remember("records", case_id="c1", case_key="k1", text="crushing chest pain and sweating",
                   diagnosis="Myocardial infarction")
        m.remember("experience", case_id="c2", case_key="k2", text="sudden breathlessness after a flight",
                   insight="Ask about long journeys when breathlessness is sudden.")
    return d


def _ids(capsys, mem, text):
    assert main(["memory", "search", "--memory-dir", str(mem), *text.split()]) == 0
    return [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]


def test_the_id_search_prints_is_the_id_show_and_delete_take(mem, capsys):
    printed = _ids(capsys, mem, "chest pain")
    assert printed[0] == "records:1" and "experience:2" in printed
    assert main(["memory", "show", "records:1", "--memory-dir", str(mem)]) == 0
    assert json.loads(capsys.readouterr().out)["case_id"] == "c1"
    assert main(["memory", "show", "2", "--memory-dir", str(mem)]) == 0  # a bare number too
    assert json.loads(capsys.readouterr().out)["buffer"] == "experience"
    assert main(["memory", "delete", "records:1", "--memory-dir", str(mem)]) == 0
    assert "deleted records:1 (case c1: Myocardial infarction)" in capsys.readouterr().out
    assert "records:1" not in _ids(capsys, mem, "chest pain")  # gone from the index as from SQLite
    assert main(["memory", "show", "records:1", "--memory-dir", str(mem)]) == 2
    assert main(["memory", "stats", "--memory-dir", str(mem)]) == 0
    assert "1 record(s): 0 in records, 1 in experience" in capsys.readouterr().out


@pytest.mark.parametrize("arg,message", [("records:2", "is in the experience buffer, not records (it is experience:2)"),
                                         ("9", "no memory record 9"), ("notes:1", "is not a record id"),
                                         ("records:", "is not a record id"), ("x", "is not a record id")])
def test_bad_ids_are_plain_errors_and_delete_nothing(mem, capsys, caplog, arg, message):
    for action in ("show", "delete"):
        caplog.clear()
        assert main(["memory", action, arg, "--memory-dir", str(mem)]) == 2
        assert message in caplog.text, caplog.text
    assert main(["memory", "stats", "--memory-dir", str(mem)]) == 0
    assert "2 record(s)" in capsys.readouterr().out


def test_parse_record_id():
    assert parse_record_id("records:1") == ("records", 1)
    assert parse_record_id("experience:12") == ("experience", 12)
    assert parse_record_id(" 7 ") == (None, 7)
    for bad in ("", ":1", "records:x", "records:-1", "１"):
        with pytest.raises(ValueError, match="records:1"):
            parse_record_id(bad)
