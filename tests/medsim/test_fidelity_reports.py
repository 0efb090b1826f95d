"""Simulator fidelity in every consultation run (issue 21): the rows, summary.json,
report.md, report.html and results.csv of a run carry it; `medsim score` re-checks an old
run; `medsim compare` sets two runs side by side; `medsim fidelity` checks the checker; a
technician asked for blood cultures never answers with the blood count."""
from __future__ import annotations

import csv
import json

import pytest

from agents.results import read_results
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import build_spec


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fidelity") / "run"
    run_bench(build_spec(None, {"cases": "demo", "limit": 6}), BenchOptions(out=out, progress=False))
    return out


def test_a_run_reports_its_simulator_fidelity_everywhere(run):
    rows = read_results(run / "results.jsonl")
    assert all(r["fidelity"]["checker"] == "pre-check" for r in rows)  # the scripted judge cannot check
    assert all(r["fidelity"]["patient"]["n"] >= 1 and r["fidelity"]["technician"]["n"] >= 1 for r in rows)
    f = json.loads((run / "summary.json").read_text())["fidelity"]
    assert f["checker"] == "pre-check" and f["cells"] == 6
    for label in ("contradicted", "third_person", "leak"):
        x = f["patient"][label]
        assert x["n"] + x["undecided"] == f["patient"]["items"] and len(x["ci95"]) == 2
    assert f["technician"]["wrong_record"]["k"] == 0  # the scripted technician reports the order's records
    md = (run / "report.md").read_text()
    assert "## Simulator fidelity" in md and "| patient (" in md
    html = (run / "report.html").read_text()
    assert 'id="fidelity"' in html and html.count('class="fidelity"') == 14
    with (run / "results.csv").open() as fh:
        header = next(csv.reader(fh))
    assert "fidelity_patient_third_person" in header and "fidelity_technician_wrong_record" in header


def test_medsim_score_rechecks_an_old_run(run):
    # an old run's log: its fidelity scoring removed, as a run made before the scorer had none
    for log in (run / "events").glob("*.jsonl"):
        lines = [ln for ln in log.read_text().splitlines() if '"scorer":"fidelity"' not in ln]
        log.write_text("\n".join(lines) + "\n")
    assert main(["score", str(run), "--judge-llm", "scripted", "--label", "again"]) == 0
    rows = read_results(run / "scores" / "again" / "scores.jsonl")
    assert rows and all("fidelity" in r for r in rows)
    assert "## Simulator fidelity" in (run / "scores" / "again" / "report.md").read_text()


def test_medsim_compare_pairs_the_fidelity_by_cell(run, tmp_path):
    other = tmp_path / "other"
    run_bench(build_spec(None, {"cases": "demo", "limit": 6, "seeds": [0]}), BenchOptions(out=other, progress=False))
    out = tmp_path / "cmp"
    assert main(["compare", str(run), str(other), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert "Simulator fidelity on the 6 cells both runs checked" in md and "| patient | third_person |" in md
    data = json.loads((out / "compare.json").read_text())
    assert data["comparisons"][0]["fidelity_cells"] == 6
    assert 'class="fidelity"' in (out / "compare.html").read_text()


def test_medsim_fidelity_prints_agreement_per_label(capsys):
    assert main(["fidelity", "--pairs", "shipped", "--show", "none"]) == 0
    text = capsys.readouterr().out
    assert "pre-check on shipped" in text and "all labels" in text and "third_person" in text
    assert "FP" in text and "FN" in text
    assert main(["fidelity", "--pairs", "no-such-file.jsonl"]) == 2


def test_blood_cultures_get_no_blood_count_in_consult(capsys, monkeypatch):
    """The issue's reproduction: `medsim consult --cases demo --case demo-007 --as doctor
    --llm scripted`, ordering blood cultures (menu number 34) and then a blood count (15)."""
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("2\n34\n2\n15\n3\nAcute appendicitis\n"))
    main(["consult", "--cases", "demo", "--case", "demo-007", "--as", "doctor", "--llm", "scripted"])
    out = capsys.readouterr().out
    cultures = next(line for line in out.splitlines() if "Technician: RESULTS: Blood cultures" in line)
    assert "No growth" in cultures and "WBC" not in cultures
    assert any("Technician:" in line and "WBC: 15.4" in line for line in out.splitlines())
