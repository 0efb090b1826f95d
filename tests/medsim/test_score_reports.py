"""``medsim score``'s folder (RUN_DIR/scores/<label>/) has report.html and results.csv
beside report.md, for a bench run and for an OSCE run: a row per re-scored cell, each
linking to the run's own transcript page (none copied) and to the judge's log."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from agents.results import read_results
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.bench import run_bench as run_osce
from tests.helpers import osce_spec as build_osce_spec
from medsim.spec import build_spec
from tests.medsim.test_html_report import NASTY, REPO, _parse
from tests.medsim.test_osce_html import _rows_of


def _snapshot(out: Path) -> dict:
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "scores" not in p.parts}


def _check(run: Path, label: str, *, to_pages: bool = True) -> tuple[list[dict], str]:
    """The scores folder's results.csv and report.html against its scores.jsonl: a CSV
    line and a linked row per cell, each link to a file of the run (not a copy)."""
    sdir = run / "scores" / label
    rows = read_results(sdir / "scores.jsonl")
    with (sdir / "results.csv").open(encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(rows) > 0
    assert [(t["case_id"], int(t["seed"])) for t in table] == [(r["case_id"], r["seed"]) for r in rows]
    page = _parse(sdir / "report.html")
    assert len(page.links) == len(rows)
    stems = [Path(r["events"]).stem for r in rows]
    for stem, href in zip(stems, page.links):
        target = (sdir / href).resolve()
        assert target.is_file() and target.parent.parent == run.resolve()
        assert target == (run / ("transcripts" if to_pages else "events") / (stem + (".html" if to_pages else ".jsonl"))).resolve()
    logs = [v for t, a, v in page.refs if t == "a" and v.startswith("events/")]
    assert logs == [f"events/{s}.jsonl" for s in stems] and all((sdir / v).is_file() for v in logs)
    assert not (sdir / "transcripts").exists()
    return rows, (sdir / "report.html").read_text(encoding="utf-8")


def test_a_bench_runs_scores_have_report_html_and_results_csv(tmp_path):
    run = run_bench(build_spec(None, {"cases": "demo", "limit": 3}), BenchOptions(out=tmp_path / "run",
                                                                                   progress=False)).out
    before = _snapshot(run)
    assert main(["score", str(run), "--judge-llm", "scripted", "--label", "again"]) == 0
    assert _snapshot(run) == before  # the run's own files are untouched
    rows, html = _check(run, "again")
    assert "re-judged by" in html and html.count('<tr class="case">') == 3
    # an older run without transcript pages: the rows link to the run's event logs
    for p in (run / "transcripts").iterdir():
        p.unlink()
    assert main(["score", str(run), "--judge-llm", "scripted", "--label", "older"]) == 0
    _check(run, "older", to_pages=False)


def test_an_osce_runs_scores_have_report_html_and_results_csv(tmp_path):
    run = tmp_path / "osce"
    run_osce(build_osce_spec("INTJ_M_PNEUMO,ESFP_F_LUNG,ISTP_LUNG", max_rounds=4), BenchOptions(out=run, progress=False))
    before = _snapshot(run)
    assert main(["score", str(run), "--judge-llm", "scripted"]) == 0
    assert _snapshot(run) == before
    rows, html = _check(run, "scripted")
    assert len(_rows_of(html)) == 3 and "re-judged by scripted" in html
    summary = json.loads((run / "scores" / "scripted" / "summary.json").read_text())
    assert f"{summary['mean_total']:.1f}" in html
    # the per-round lists in one CSV field, as the run's own results.csv has them
    with (run / "scores" / "scripted" / "results.csv").open(encoding="utf-8", newline="") as fh:
        first = next(csv.DictReader(fh))
    assert first["per_round"].startswith("r1=")


def test_model_text_in_a_score_report_is_escaped(tmp_path):
    rec = json.loads((REPO / "agents" / "casesets" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0])
    rec["id"] = "nasty-<b>1</b>"
    rec["OSCE_Examination"]["Correct_Diagnosis"] = "Myocardial infarction " + NASTY
    cases = tmp_path / "nasty.jsonl"
    cases.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    run = run_bench(build_spec(None, {"cases": str(cases)}), BenchOptions(out=tmp_path / "run", progress=False)).out
    assert main(["score", str(run), "--judge-llm", "scripted", "--label", "x"]) == 0
    _, html = _check(run, "x")
    assert "<script" not in html.lower() and "<b>1</b>" not in html and "\x1b" not in html and "\u202e" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "U+202E" in html


def test_medsim_view_of_a_scores_folder_serves_the_run_and_opens_the_scores_page(tmp_path):
    """The scores page links up to the run's transcripts (../../transcripts/...): view
    serves the run's folder and opens scores/<label>/report.html, so every link works."""
    from tests.helpers import medsim_view
    from tests.medsim.test_html_report import _get

    run = run_bench(build_spec(None, {"cases": "demo", "limit": 2}), BenchOptions(out=tmp_path / "run",
                                                                                   progress=False)).out
    assert main(["score", str(run), "--judge-llm", "scripted", "--label", "again"]) == 0
    sdir = run / "scores" / "again"
    assert main(["-q", "view", str(sdir), "--rebuild"]) == 2  # score writes that page, view cannot
    with medsim_view(sdir, "scores/again/report.html") as (_, port):
        status, _, body = _get(port, "/scores/again/report.html")
        assert status == 200 and b"re-judged by" in body
        links = _parse(sdir / "report.html").links
        assert links
        for href in links:
            target = (sdir / href).resolve().relative_to(run.resolve()).as_posix()
            status, headers, _ = _get(port, "/" + target)
            assert status == 200 and headers["Content-Type"].startswith("text/html")
