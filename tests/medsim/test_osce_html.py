"""report.html of an OSCE run (medsim.osce_html): written by ``medsim osce`` and ``medsim
bench --protocol osce``, served by ``medsim view``; a row per encounter linking to its
transcript page (rounds, rejected replies, stop decisions, the judge's per-round scores
and per-criterion marks, feedback); model text escaped."""
from __future__ import annotations

import json
import re
from pathlib import Path

from agents.results import read_results
from agents.suites.osce_scripted import DOCTOR_SCRIPT, OsceScriptedLLM
from medsim.bench import BenchOptions
from medsim.cli import main
from medsim.html_report import neutralise
from medsim.bench import run_bench as run_osce
from tests.helpers import osce_spec as build_osce_spec
from medsim.osce_html import osce_rounds, stop_reason
from tests.agents.test_osce_guards import LoopingDoctor
from tests.helpers import medsim_view
from tests.medsim.test_html_report import NASTY, _assert_self_contained, _get, _parse

PERSONAS = "INTJ_M_PNEUMO,ESFP_F_LUNG"


def _rows_of(html: str) -> list[str]:
    return re.findall(r'<tr class="encounter">(.*?)</tr>', html, re.S)


def _check_links(report: Path, rows: list[dict]) -> list[Path]:
    """One transcript link per row, in order, each to an existing page named like the
    row's events file; returns the pages."""
    page = _assert_self_contained(report)
    assert page.links == ["transcripts/" + Path(r["events"]).stem + ".html" for r in rows]
    pages = [report.parent / href for href in page.links]
    assert all(p.is_file() for p in pages)
    return pages


def test_an_osce_run_writes_a_report_with_a_transcript_per_encounter(tmp_path):
    out = tmp_path / "run"
    assert main(["osce", "--personas", PERSONAS, "--llm", "scripted", "--out", str(out), "--no-progress"]) == 0
    rows = read_results(out / "results.jsonl")
    html = (out / "report.html").read_text(encoding="utf-8")
    s = json.loads((out / "summary.json").read_text())
    # the summary: counts, outcomes and the mean scores
    assert f"{s['accepted']} / {s['left']} / {s['undecided']}" in html
    assert f"{s['mean_total']:.1f}" in html and "empathy 30/persuasion 40/safety 30" in html
    # a row per encounter: persona, outcome, stop reason, rounds, scores, total
    table = _rows_of(html)
    assert len(table) == len(rows) == 2
    for r, cells in zip(rows, table):
        assert r["case_id"] in cells and r["outcome"] in cells and "round limit (10)" in cells
        assert f'<td class="n">{r["rounds"]}</td>' in cells and f"<b>{r['total']:.1f}</b>" in cells
        for c in ("empathy", "persuasion", "safety"):
            assert f"{r[c]:.1f}" in cells
    assert 'src="data:image/png;base64,' in html  # the per-round chart
    for r, t in zip(rows, _check_links(out / "report.html", rows)):
        tp = _assert_self_contained(t)
        assert "../report.html" in [v for _, _, v in tp.refs] and f"../{r['events']}" in [v for _, _, v in tp.refs]
        th = t.read_text(encoding="utf-8")
        # every round: the doctor's and the patient's turns, the stop decision, the judge's scores and marks
        assert th.count('class="round"') == r["rounds"] == 10
        assert th.count('class="msg doctor"') == th.count('class="msg patient"') == 10
        assert str(neutralise(DOCTOR_SCRIPT[0])) in th
        assert th.count("stop decision: continue") == 10
        assert th.count("judge after round") == 10
        last = r["per_round"][-1]
        assert f"judge after round 10: empathy {last['empathy']:.1f}" in th and f"total <b>{last['total']:.1f}</b>" in th
        for mark in ("met", "not_met", "not_relevant"):
            assert f'<span class="mark {mark}">' in th
        # the criterion x round grid: 30 criteria with their text and end state
        grid = re.search(r'<table class="grid-marks" id="criteria">(.*?)</table>', th, re.S).group(1)
        assert grid.count("<tr>") == 31
        assert "Asks about allergies" in grid
        assert grid.count(">met</td>") == sum(1 for v in r["criteria"].values() if v == "met")
        for label in ("Strengths", "Weaknesses", "Key moments", "Suggestions"):
            assert f"<b>{label}</b>" in th
        assert str(neutralise(r["suggestions"][0])) in th
        assert 'src="data:image/png;base64,' in th  # the encounter's chart


def test_bench_protocol_osce_writes_the_same_report(tmp_path):
    out = tmp_path / "bench"
    assert main(["bench", "--protocol", "osce", "--personas", PERSONAS, "--llm", "scripted", "--max-rounds", "3",
                 "--out", str(out), "--no-progress"]) == 0
    rows = read_results(out / "results.jsonl")
    assert len(_rows_of((out / "report.html").read_text(encoding="utf-8"))) == 2
    _check_links(out / "report.html", rows)


class NastyDoctor(OsceScriptedLLM):
    """A doctor whose words hold markup, terminal escapes and a bidi override, and whose
    first reply in each encounter is empty (the guards reject it)."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.calls: dict[str, int] = {}

    def generate(self, messages, params, ctx):
        if ctx.role != "doctor":
            return super().generate(messages, params, ctx)
        n = self.calls[ctx.case_id] = self.calls.get(ctx.case_id, 0) + 1
        if n == 1:
            return self._out("", messages)
        return self._out(f"{DOCTOR_SCRIPT[(n - 2) % len(DOCTOR_SCRIPT)]} {NASTY} (call {n})", messages)


def test_model_text_is_escaped_and_rejected_replies_are_set_apart(tmp_path):
    out = tmp_path / "nasty"
    run_osce(build_osce_spec(PERSONAS, max_rounds=3), BenchOptions(out=out, progress=False),
             backends={"doctor": NastyDoctor()})
    rows = read_results(out / "results.jsonl")
    pages = [out / "report.html", *_check_links(out / "report.html", rows)]
    for p in pages:
        html = p.read_text(encoding="utf-8")
        assert "<script" not in html.lower()
        assert "\x1b" not in html and "\u202e" not in html
    for t in pages[1:]:
        th = t.read_text(encoding="utf-8")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in th and ">ESC<" in th and "U+202E" in th
        # the empty first reply: a rejected reply in its own box, before the doctor's first words
        box = th.index('<div class="box guard"><div class="label">doctor reply rejected (empty, attempt 1)')
        assert box < th.index('class="msg doctor"')
    assert "rejected replies" in pages[0].read_text(encoding="utf-8")


def test_a_failed_encounter_shows_its_reason(tmp_path):
    out = tmp_path / "failed"
    run_osce(build_osce_spec("ISTP_M_LUNG", max_rounds=4), BenchOptions(out=out, progress=False),
             backends={"doctor": LoopingDoctor(seed=0)})
    (row,) = read_results(out / "results.jsonl")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="errors"' in html and "(failed)" in html and "failed: doctor reply still loop" in html
    (t,) = _check_links(out / "report.html", [row])
    th = t.read_text(encoding="utf-8")
    assert th.count("doctor reply rejected (loop") == 3 and 'class="box error"' in th  # consultation failed


def test_medsim_view_writes_a_missing_osce_report_and_serves_it(tmp_path):
    out = tmp_path / "run"
    run_osce(build_osce_spec(PERSONAS, max_rounds=3), BenchOptions(out=out, progress=False))
    (out / "report.html").unlink()
    for p in (out / "transcripts").iterdir():
        p.unlink()
    with medsim_view(out) as (_, port):
        status, _, body = _get(port, "/report.html")
        assert status == 200 and len(_rows_of(body.decode())) == 2 and b"accuracy" not in body
        for href in _parse(out / "report.html").links:
            status, headers, page = _get(port, "/" + href)
            assert status == 200 and headers["Content-Type"].startswith("text/html") and b"judge after round" in page


def test_the_report_page_of_an_osce_run_is_the_osce_suites(tmp_path):
    from medsim.pages import write_report_page

    out = tmp_path / "run"
    run_osce(build_osce_spec("INTJ_M_PNEUMO", max_rounds=2), BenchOptions(out=out, progress=False))
    (out / "report.html").unlink()
    write_report_page(out)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert len(_rows_of(html)) == 1 and "By specialty" not in html


# -- the rounds of a handmade log ----------------------------------------------------------------------
EVENTS = [
    {"type": "header", "case_id": "P", "seed": 0},
    {"type": "utterance", "turn": 1, "speaker": "doctor", "addressee": "patient", "text": "Hello."},
    {"type": "reply_rejected", "role": "patient", "turn": 1, "problem": "no_speech", "text": "[DECISION: ACCEPT]",
     "attempt": 1},
    {"type": "utterance", "turn": 1, "speaker": "patient", "addressee": "doctor", "text": "Hi."},
    {"type": "osce_stop", "turn": 1, "decision": "continue", "rule": "none", "evidence": ""},
    {"type": "utterance", "turn": 2, "speaker": "doctor", "addressee": "patient", "text": "The operation."},
    {"type": "utterance", "turn": 2, "speaker": "patient", "addressee": "doctor", "text": "Yes. [DECISION: ACCEPT]"},
    {"type": "osce_stop", "turn": 2, "decision": "accepted", "rule": "marker", "evidence": "[DECISION: ACCEPT]"},
    {"type": "consultation_ended", "status": "accepted", "turns": 2},
    {"type": "osce_round", "turn": 1, "category": "empathy", "verdicts": {"10": "not_met", "1": "met"}, "method": "llm"},
    {"type": "osce_round", "turn": 2, "category": "safety", "verdicts": {}, "method": "unjudged", "note": "timeout"},
    {"type": "scored", "scorer": "osce", "value": None, "details": {"error": "judge failed"}},
]


def test_osce_rounds_groups_each_rounds_turns_stop_and_verdicts():
    rounds, after = osce_rounds(EVENTS, [{"round": 1, "total": 5.0}, {"round": 2, "total": 6.0}])
    assert [r["round"] for r in rounds] == [1, 2]
    one, two = rounds
    assert [i["kind"] for i in one["items"]] == ["say", "guard", "say"] and "no_speech" in one["items"][1]["label"]
    assert one["stop"]["decision"] == "continue" and two["stop"]["decision"] == "accepted"
    assert [m["number"] for m in one["judged"][0]["marks"]] == ["1", "10"]  # by number, not as text
    assert [m["label"] for m in one["judged"][0]["marks"]] == ["met", "not met"]
    assert two["judged"][0]["method"] == "unjudged" and two["judged"][0]["note"] == "timeout"
    assert one["scores"]["total"] == 5.0 and two["scores"]["total"] == 6.0
    assert [i["kind"] for i in after] == ["error"]  # the scoring error belongs to no round


def test_stop_reason_names_the_decision_the_limit_a_failure_or_an_error():
    assert stop_reason(EVENTS, {"status": "accepted"}) == "accepted in round 2 (marker)"
    assert stop_reason([{"type": "turn_limit", "turn": 4, "max_turns": 4}], {"status": "undecided"}) == "round limit (4)"
    assert stop_reason([], {"status": "failed", "failure": "doctor kept looping"}) == "failed: doctor kept looping"
    assert stop_reason(EVENTS, {"status": "error", "error": "boom"}) == "error"
