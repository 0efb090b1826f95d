"""Every suite medsim ships goes through the one run loop: it can be benched, scored and
consulted, and replayed in the hospital or refused with a clear message; and a case gets
the same verdict from ``medsim consult`` as from ``medsim bench`` (AutoMedic's once ended
in "the log holds no answer to the question" under consult: it built its consultation by
hand)."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.events import read_events
from agents.results import read_results
from agents.suites.builtin import BUILTIN_SUITES
from medsim.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mcq_cases(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mcq") / "cases.jsonl"
    assert main(["automedic", "convert", str(REPO / "docs" / "examples" / "mcq.jsonl"), "--out", str(out)]) == 0
    return out


def _flags(suite: str, mcq: Path) -> list[str]:
    return {"diagnosis": ["--cases", "demo", "--limit", "3"],
            "automedic": ["--cases", str(mcq), "--protocol", "automedic"],
            "osce": ["--suite", "osce", "--personas", "INTJ_M_PNEUMO,ESFP_F_LUNG", "--max-rounds", "3"]}[suite]


def test_the_shipped_suites_are_the_registered_ones():
    assert {s.name for s in BUILTIN_SUITES} == {"diagnosis", "automedic", "osce"}


@pytest.mark.parametrize("suite", [s.name for s in BUILTIN_SUITES])
def test_every_suite_is_benched_scored_consulted_and_replayed_or_refused(suite, mcq_cases, tmp_path, capsys):
    flags = _flags(suite, mcq_cases)
    out = tmp_path / "run"
    assert main(["bench", *flags, "--llm", "scripted", "--no-progress", "--out", str(out)]) == 0
    rows = read_results(out / "results.jsonl")
    assert rows and not any(r["error"] for r in rows)
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    assert main(["score", str(out), "--judge-llm", "scripted", "--label", "again"]) == 0
    assert len(read_results(out / "scores" / "again" / "scores.jsonl")) == len(rows)
    capsys.readouterr()
    first = rows[0]["case_id"]
    consult = [f for f in flags if f not in ("--limit", "3")] if suite != "osce" else flags
    log = tmp_path / "consult.jsonl"
    assert main(["consult", *consult, "--llm", "scripted", "--case", first, "--log", str(log)]) == 0
    said = capsys.readouterr().out
    assert "Status: " in said and "error" not in said.split("Status: ")[1].split(";")[0]
    assert read_events(log)[-1]["type"] == "case_finished"
    code = main(["replay", str(out), first, "--headless", "--frames", "5", "--fixed-dt", "0.05"])
    err = capsys.readouterr().err
    if next(s for s in BUILTIN_SUITES if s.name == suite).live:
        assert code == 0, err
    else:
        assert code == 2 and f"the {suite} suite's" in err and "cannot be replayed" in err


def test_consult_gives_the_verdict_bench_gives(mcq_cases, tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["bench", "--cases", str(mcq_cases), "--protocol", "automedic", "--llm", "scripted", "--no-progress",
                 "--out", str(out)]) == 0
    rows = {r["case_id"]: r for r in read_results(out / "results.jsonl")}
    assert len(rows) >= 4 and {r["correct"] for r in rows.values()} == {True, False}
    for case_id, row in rows.items():
        log = tmp_path / f"{case_id}.jsonl"
        assert main(["consult", "--cases", str(mcq_cases), "--protocol", "automedic", "--llm", "scripted",
                     "--case", case_id, "--log", str(log)]) == 0, capsys.readouterr().err
        ev = read_events(log)
        scored = next(e for e in ev if e["type"] == "scored" and e["scorer"] == "diagnosis")
        assert scored["value"] == row["correct"], case_id
        assert ev[-1]["correct"] == row["correct"] and ev[-1]["diagnosis"] == row["diagnosis"]
    capsys.readouterr()
