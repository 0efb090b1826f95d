"""``medsim bench`` with every bad input of issue 14: odd text in ids and diagnoses is
carried end to end and survives every ``--resume``; what cannot be carried (unpaired
surrogates, a case path that is not text) is refused before anything is written; a crash
while results.jsonl is rewritten loses no row; ``--resume`` knows a case file however it
is spelled. Plus a bounded fuzz test of results rows round-tripping through the file."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agents.results as results_mod
from agents.cases.registry import resolve_case_path
from agents.results import read_results, results_line, write_results, write_results_csv
from medsim.bench import BenchError, BenchOptions, _Results, run_bench
from medsim.cli import main
from medsim.spec import build_spec

# NUL and every character str.splitlines() breaks at, and a few more
ODD = "\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r\t\ufeff\U0001f600"


def _case(id_: str, truth: str) -> str:
    return json.dumps({"id": id_, "OSCE_Examination": {
        "Objective_for_Doctor": "Assess the patient.", "Patient_Actor": {"Demographics": "50-year-old man",
                                                                         "History": f"Short of breath.{ODD}"},
        "Test_Results": {"Complete_Blood_Count": {"WBC": "7.0"}}, "Correct_Diagnosis": truth}}, ensure_ascii=False)


def _bench(cases: str | Path, out: Path, **kw):
    return run_bench(build_spec(None, {"cases": str(cases), **kw.pop("over", {})}),
                     BenchOptions(out=out, progress=False, **kw))


def test_odd_text_in_ids_and_diagnoses_survives_the_run_and_every_resume(tmp_path):
    ids = [f"a{ODD}b", "y" * 300, "line\u2028sep", "../../escape", "\u00e9" * 500]
    truths = [f"Asthma{ODD}", "Gout\u0085", "Iron\u2028deficiency", "Flu\x00", "Psoriasis\x1e"]
    cases = tmp_path / "odd.jsonl"
    cases.write_text("\n".join(_case(i, t) for i, t in zip(ids, truths)) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    _bench(cases, out)
    raw = (out / "results.jsonl").read_bytes()
    assert raw.isascii() and raw.count(b"\n") == len(ids)  # every odd character escaped: one line a row
    want = {(r["case_id"], r["truth"]) for r in read_results(out / "results.jsonl")}
    assert want == {(i.strip(), t.strip()) for i, t in zip(ids, truths)}
    for _ in range(2):  # before the fix, every resume after the first run failed: "corrupt results row"
        o = _bench(cases, out, resume=True)
        assert o.summary["cases"] == len(ids)
        assert {(r["case_id"], r["truth"]) for r in read_results(out / "results.jsonl")} == want
    names = [p.name for p in (out / "events").iterdir()]
    assert len(names) == len(ids) and all(len(n) <= 57 and n.isascii() for n in names)
    for p in out.rglob("*"):  # every file written is UTF-8 text
        if p.is_file() and p.suffix in (".jsonl", ".json", ".md", ".csv", ".html"):
            p.read_bytes().decode("utf-8")


@pytest.mark.parametrize("record, field", [
    (_case("x\ud800", "Asthma"), "id"),
    (_case("x", "Gout\udfff"), "OSCE_Examination.Correct_Diagnosis"),
])
def test_unpaired_surrogates_are_refused_before_anything_is_written(tmp_path, capsys, record, field):
    cases = tmp_path / "sur.jsonl"
    lines = [json.dumps(json.loads(r)) for r in (_case("ok", "Flu"), record)]  # escaped, as JSON writers do
    cases.write_bytes(("\n".join(lines) + "\n").encode("ascii"))
    out = tmp_path / "run"
    assert main(["bench", "--cases", str(cases), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{cases}:2: field '{field}': holds an unpaired surrogate" in err and "Traceback" not in err
    assert not out.exists()


def test_a_case_path_that_is_not_utf8_is_refused(tmp_path, capsys):
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.jsonl")  # as argv holds it: "caf\udce9.jsonl"
    shutil.copy(resolve_case_path("demo"), os.fsencode(name))
    out = tmp_path / "run"
    assert main(["bench", "--cases", name, "--limit", "1", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "caf\\xe9.jsonl' is not UTF-8 text" in err and not out.exists()


# -- the rewrite of results.jsonl on resume -----------------------------------------------------
def _half_run(tmp_path: Path) -> tuple[Path, bytes, list[dict]]:
    """A run stopped after 3 of 6 cases, with a torn last line (so resume rewrites)."""
    seen = []

    def stop(row):
        seen.append(row)
        if len(seen) == 3:
            raise KeyboardInterrupt
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_bench(build_spec(None, {"limit": 6}), BenchOptions(out=out, progress=False), on_row=stop)
    with (out / "results.jsonl").open("a") as fh:
        fh.write('{"case_id": "demo-0')
    return out, (out / "results.jsonl").read_bytes(), read_results(out / "results.jsonl")


def test_a_crash_while_rewriting_results_loses_no_row(tmp_path, monkeypatch):
    out, before, rows = _half_run(tmp_path)
    assert len(rows) == 3
    calls = []

    def dies_on_the_second_row(row):
        calls.append(row)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as if killed half way through writing the new file
        return json.dumps(row, ensure_ascii=True, sort_keys=True) + "\n"
    monkeypatch.setattr(results_mod, "results_line", dies_on_the_second_row)
    with pytest.raises(KeyboardInterrupt):
        run_bench(build_spec(None, {"limit": 6}), BenchOptions(out=out, progress=False, resume=True))
    assert (out / "results.jsonl").read_bytes() == before  # the old file, whole
    assert not list(out.glob("*.tmp"))
    monkeypatch.undo()

    def no_disk(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", no_disk)  # the new file cannot be made durable: the old one stays
    with pytest.raises(OSError):
        run_bench(build_spec(None, {"limit": 6}), BenchOptions(out=out, progress=False, resume=True))
    assert (out / "results.jsonl").read_bytes() == before
    monkeypatch.undo()

    o = run_bench(build_spec(None, {"limit": 6}), BenchOptions(out=out, progress=False, resume=True))
    after = read_results(out / "results.jsonl")
    assert o.summary["cases"] == 6 and after[:3] == rows and len({r["case_id"] for r in after}) == 6


def test_resume_rewrites_results_only_when_it_must(tmp_path, monkeypatch):
    rows = [{"case_id": f"c{i}", "seed": 0, "condition": "base"} for i in range(3)]
    path = tmp_path / "results.jsonl"
    write_results(rows, path)
    inode = path.stat().st_ino
    monkeypatch.setattr(results_mod, "write_results", lambda *a, **k: pytest.fail("rewritten"))
    _Results(path, rows).close()  # the file already holds exactly these rows: left alone
    assert path.stat().st_ino == inode


# -- --resume and the spelling of --cases ---------------------------------------------------------
def test_resume_knows_the_case_file_however_it_is_spelled(tmp_path, monkeypatch):
    shutil.copy(resolve_case_path("demo"), tmp_path / "cases.jsonl")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    _bench("cases.jsonl", out, over={"limit": 2})
    assert json.loads((out / "run.json").read_text())["cases_path"] == str(tmp_path / "cases.jsonl")
    _bench(tmp_path / "cases.jsonl", out, resume=True, over={"limit": 2})  # absolute (refused before)
    monkeypatch.chdir(tmp_path / "sub")
    _bench("../cases.jsonl", out, resume=True, over={"limit": 2})
    _bench("./../sub/../cases.jsonl", out, resume=True, over={"limit": 2})
    # another file of the same name, other contents: not the same run
    (tmp_path / "sub" / "cases.jsonl").write_text(_case("other", "Gout") + "\n", encoding="utf-8")
    _bench("../cases.jsonl", out, resume=True, over={"limit": 2})
    with pytest.raises(BenchError, match=r"cases: \"cases.jsonl\" here, \"\.\./cases.jsonl\" in the run"):
        _bench("cases.jsonl", out, resume=True, over={"limit": 2})
    # a run.json from before resolved paths were recorded: the contents' hash decides
    doc = json.loads((out / "run.json").read_text())
    doc.pop("cases_path")
    (out / "run.json").write_text(json.dumps(doc))
    _bench(tmp_path / "cases.jsonl", out, resume=True, over={"limit": 2})


def test_resume_refuses_another_file_behind_the_same_name(tmp_path, monkeypatch):
    for d, case_id in (("a", "one"), ("b", "two")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "cases.jsonl").write_text(_case(case_id, "Asthma") + "\n", encoding="utf-8")
    out = tmp_path / "run"
    monkeypatch.chdir(tmp_path / "a")
    _bench("cases.jsonl", out)
    monkeypatch.chdir(tmp_path / "b")
    with pytest.raises(BenchError, match="cases: \"cases.jsonl\" is .*b/cases.jsonl here, .*a/cases.jsonl in the run"):
        _bench("cases.jsonl", out, resume=True)


# -- results rows: any text round-trips ----------------------------------------------------------------
_CHARS = st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(list(ODD + "\n\"\\")))
# (st.text over a union of alphabets drops surrogates.) A high surrogate followed by a low one is
# left out: JSON spells that pair exactly as it spells the one character they encode, so no
# JSON file can tell the two apart (json.loads gives the character); such a string is no text.
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_TEXT = st.lists(_CHARS, max_size=16).map("".join).filter(lambda t: not _PAIR.search(t))
_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _TEXT),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_TEXT, kids, max_size=3),
                       max_leaves=10)
_ROWS = st.lists(st.fixed_dictionaries({"case_id": _TEXT, "seed": st.integers(0, 9), "truth": _TEXT,
                                        "diagnosis": st.one_of(st.none(), _TEXT)},
                                       optional={"events": _TEXT, "extra": _VALUES}), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(kept=_ROWS, appended=_ROWS)
def test_fuzzed_rows_round_trip_through_results_jsonl(kept, appended):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "results.jsonl"
        write_results(kept, path)
        assert read_results(path) == kept
        res = _Results(path, read_results(path))
        for r in appended:
            res.append(r)
        res.close()
        assert read_results(path) == kept + appended
        assert path.read_bytes().isascii()
        write_results_csv(kept + appended, Path(d) / "results.csv").read_text(encoding="utf-8")  # UTF-8, always
        # rows an older version wrote unescaped (ensure_ascii=False) read back too, where UTF-8 can hold them
        old = [r for r in kept if not any("\ud800" <= ch <= "\udfff" for ch in json.dumps(r, ensure_ascii=False))]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in old), encoding="utf-8")
        assert read_results(path) == old
        assert results_line(kept[0]).count("\n") == 1


def test_results_with_a_byte_order_mark_are_read(tmp_path):
    p = tmp_path / "results.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + results_line({"case_id": "a"}).encode() + results_line({"case_id": "b"}).encode())
    assert [r["case_id"] for r in read_results(p)] == ["a", "b"]
