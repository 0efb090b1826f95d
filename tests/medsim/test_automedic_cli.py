"""AutoMedic, biases and generated cases through the CLI: convert, bench (workers, resume,
report with CARE), score."""
from __future__ import annotations

import json

from agents.cases.registry import load_cases
from agents.events import DictSink, read_events
from agents.llm.base import Output
from agents.results import read_results
from agents.suites.generate import GenerateSpec, Generator, scripted_case
from medsim.cli import main
from tests.automedic_items import write_items


def _convert(tmp_path):
    src = write_items(tmp_path / "items.jsonl")
    out = tmp_path / "cases.jsonl"
    assert main(["-q", "automedic", "convert", str(src), "--out", str(out), "--llm", "scripted"]) == 0
    return out


def test_automedic_bench_resume_and_score(tmp_path, capsys):
    cases = _convert(tmp_path)
    assert "4 converted" in capsys.readouterr().out
    run = tmp_path / "run"
    args = ["-q", "bench", "--cases", str(cases), "--protocol", "automedic", "--seeds", "0,1", "--workers", "2",
            "--out", str(run), "--no-progress"]
    assert main(args) == 0
    rows = read_results(run / "results.jsonl")
    assert len(rows) == 8 and all(r["care"] for r in rows) and all(r["status"] != "error" for r in rows)
    for r in rows:
        ev = read_events(run / r["events"])
        assert [e["mode"] for e in ev if e["type"] == "automedic_answer"] == ["conversation", "static"]
        doctor_sys = next(e for e in ev if e["type"] == "llm_call" and e["role"] == "doctor")["messages"][0]["content"]
        assert "<clinical>" in doctor_sys and "pyelonephritis" not in doctor_sys.lower()
        assert r["correct"] == (r["care"]["conv_correct"] if r["status"] != "failed" else None)
    summary = json.loads((run / "summary.json").read_text())
    care = summary["care"]
    assert care["cases"] == 8 and 0 <= care["robustness"] <= 1 and care["static_acc"] is not None
    report = (run / "report.md").read_text()
    assert "## CARE (AutoMedic)" in report and "robustness" in report
    # resume: drop the last row, finish the run; the rows come back the same
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text("".join(lines[:-1]))
    assert main([*args, "--resume"]) == 0
    again = read_results(run / "results.jsonl")
    key = lambda r: (r["case_id"], r["seed"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, rows))
    assert {key(r): r["care"] for r in again} == {key(r): r["care"] for r in rows}
    # re-score from the logs: the same verdicts and CARE, no consultation re-run
    assert main(["-q", "score", str(run), "--judge-llm", "scripted", "--label", "again"]) == 0
    scores = read_results(run / "scores" / "again" / "scores.jsonl")
    assert {key(r): (r["correct"], r["care"]) for r in scores} == {key(r): (r["correct"], r["care"]) for r in again}
    assert "## CARE" in (run / "scores" / "again" / "report.md").read_text()


def test_a_case_without_the_question_is_an_error_not_a_wrong_answer(tmp_path):
    run = tmp_path / "run"
    assert main(["-q", "bench", "--cases", "demo", "--limit", "1", "--protocol", "automedic", "--out", str(run),
                 "--no-progress"]) == 1
    row = read_results(run / "results.jsonl")[0]
    assert row["status"] == "error" and "AutoMedic" in row["error"] and row["correct"] is None


def test_bias_grid_through_the_bench(tmp_path):
    run = tmp_path / "run"
    assert main(["-q", "bench", "--cases", "demo", "--limit", "2", "--doctor-bias", "recency,confirmation",
                 "--patient-bias", "self_diagnosis", "--out", str(run), "--no-progress"]) == 0
    rows = read_results(run / "results.jsonl")
    conds = {r["condition"] for r in rows}
    assert conds == {"unbiased", "doctor-recency", "doctor-confirmation", "patient-self_diagnosis"}
    for r in rows:
        assert r.get("doctor_bias") == (r["condition"].split("-", 1)[1] if r["condition"].startswith("doctor-") else None)
        assert r.get("patient_bias") == ("self_diagnosis" if r["condition"].startswith("patient-") else None)
    report = (run / "report.md").read_text()
    assert "## Conditions" in report and "doctor-recency" in report
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["conditions"]) == conds
    # one bias is the protocol's, no grid
    one = tmp_path / "one"
    assert main(["-q", "bench", "--cases", "demo", "--limit", "1", "--doctor-bias", "gender", "--out", str(one),
                 "--no-progress"]) == 0
    assert read_results(one / "results.jsonl")[0]["doctor_bias"] == "gender"
    assert main(["-q", "bench", "--cases", "demo", "--doctor-bias", "astrology", "--out", str(tmp_path / "x")]) == 2


def test_generated_cases_are_saved_and_reused(tmp_path, capsys):
    run = tmp_path / "gen"
    args = ["-q", "bench", "--cases", "generate:3:respiratory", "--out", str(run), "--no-progress"]
    assert main(args) == 0
    path = run / "generated_cases.jsonl"
    assert f"-> {path}" in capsys.readouterr().out
    cases, errors = load_cases(str(path))
    assert len(cases) == 3 and errors == []
    assert json.loads((run / "run.json").read_text())["spec"]["cases"] == str(path)
    before = path.read_bytes()
    assert main([*args, "--resume"]) == 0
    assert path.read_bytes() == before and "(reused)" in capsys.readouterr().out


def test_generating_cases_waits_for_no_other_run_in_the_folder(tmp_path, capsys):
    """The cases are invented under the run directory's lock: while another process holds
    it, nothing is generated or written."""
    from medsim.runlock import LOCK_NAME, RunLock

    run = tmp_path / "gen"
    with RunLock(run):
        assert main(["-q", "bench", "--cases", "generate:2", "--out", str(run), "--no-progress"]) == 2
        assert "in use by another medsim process" in capsys.readouterr().err
        assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME]
    assert main(["-q", "bench", "--cases", "generate:2", "--out", str(run), "--no-progress"]) == 0


class _Flaky:
    """A generator model: bad JSON, then a case that gives its diagnosis away, then a good one."""

    name = "flaky"

    def __init__(self):
        self.calls = 0

    def generate(self, messages, params, ctx):
        self.calls += 1
        if self.calls == 1:
            return Output('{"specialty": "resp', "flaky")
        case = scripted_case(1)
        if self.calls == 2:
            case = {**case, "chief_complaint": "I think I have community-acquired pneumonia"}
        return Output(json.dumps(case), "flaky")


def test_generation_retries_on_invalid_output(tmp_path):
    sink = DictSink()
    llm = _Flaky()
    records = Generator(llm, sink, retries=2).generate(GenerateSpec(1))
    assert llm.calls == 3 and len(records) == 1
    done = [e for e in sink.events if e["type"] == "case_generated"]
    assert done == [{**done[0], "valid": True, "attempts": 3}]
    retries = [e["messages"][-1]["content"] for e in sink.events if e["type"] == "llm_call"][1:]
    assert "not JSON" in retries[0] and "give the diagnosis away" in retries[1]
    out = tmp_path / "gen.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert load_cases(str(out))[0][0].diagnosis == "Community-acquired pneumonia"
    # a model that never gets it right: the case is left out and said, and no valid case is an error
    import pytest

    from agents.suites.generate import GenerateError

    class _Never:
        name = "never"

        def generate(self, messages, params, ctx):
            return Output("not json", "never")

    sink = DictSink()
    with pytest.raises(GenerateError):
        Generator(_Never(), sink, retries=1).generate(GenerateSpec(2))
    assert [e["valid"] for e in sink.events if e["type"] == "case_generated"] == [False, False]
