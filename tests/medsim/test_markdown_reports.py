"""report.md and compare.md show model, case and spec text as text (issue 23): rendered
by a common Markdown renderer with raw HTML on (markdown-it-py, CommonMark and GFM
tables), no tag, link or image comes out of it; the raw text holds no ``<``, ``](`` or
``![`` of theirs either (the check that stands where no renderer is installed)."""
from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agents.suites.care import care_markdown
from agents.suites.osce_results import summarise_osce
from agents.textsafe import md_cell, md_text
from medsim.cli import main
from agents.conditions import table_markdown

PAYLOADS = ['<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '![x](http://evil.example/a.png)',
            '[click](javascript:alert(1))', '<a href="http://evil.example">x</a>', '\\[esc\\](javascript:alert(2))',
            '`<b>`code`', '[ref]: http://evil.example', '<http://evil.example/auto>', '&lt;script&gt;',
            '<svg/onload=alert(1)>', 'a | b | c', '<!-- hidden -->', '<iframe src="http://evil.example">']
# what must never come out of a payload, in the raw text
RAW_BAD = ("<", "](", "![")
DEMO = Path(__file__).resolve().parents[2] / "agents" / "casesets" / "demo.jsonl"


def _render(md: str) -> str | None:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        return None
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


class _Tags(HTMLParser):
    ALLOWED = {"h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "strong",
               "em", "code", "pre", "hr", "br", "blockquote"}

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.ALLOWED or any(k != "style" for k, _ in attrs):
            self.bad.append(f"<{tag} {attrs}>")

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.comments.append(data)


def assert_inert(md: str, payloads=PAYLOADS) -> None:
    """No payload's markup survives in ``md``, raw or rendered; each payload's text is
    still there to read."""
    for bad in RAW_BAD:
        for p in payloads:
            if bad in p:
                assert p not in md
    assert "<script" not in md and "<img" not in md and "](javascript" not in md and "![x]" not in md
    html = _render(md)
    if html is None:  # no renderer: the raw checks above are the test
        return
    tags = _Tags()
    tags.feed(html)
    assert not tags.bad and not tags.comments, (tags.bad, tags.comments)
    for p in ("alert(1)", "evil.example/a.png", "onerror=alert(1)"):
        assert p in html  # shown as text, not dropped


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_text_and_md_cell_render_as_the_text_written(payload):
    html = _render(f"| a | b |\n|---|---|\n| {md_cell(payload)} | z |\n\n- {md_text(payload)}\n")
    if html is None:
        pytest.skip("markdown-it-py not installed")
    tags = _Tags()
    tags.feed(html)
    assert not tags.bad and not tags.comments
    from html import unescape

    cells = html.split("<td>")
    assert unescape(cells[1].split("</td>")[0]) == payload  # the cell shows exactly what was written, in one cell
    assert unescape(html.split("<li>")[1].split("</li>")[0]) == payload


@pytest.fixture(scope="module")
def payload_runs(tmp_path_factory):
    """A scripted bench run over cases whose ids and answer keys are the payloads (the
    scripted doctor gives the key, so the diagnosis cells hold them too), from a case file
    whose name holds markup; and B, its rows with verdicts flipped, for compare.md."""
    root = tmp_path_factory.mktemp("md")
    first = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[0])
    lines = []
    for i, p in enumerate(PAYLOADS):
        rec = json.loads(json.dumps(first))
        rec["id"] = f"p{i} {p}"
        rec["OSCE_Examination"]["Correct_Diagnosis"] = p
        lines.append(json.dumps(rec))
    folder = root / "cases [x](javascript:alert(3)) <b>"
    folder.mkdir()
    cases = folder / "set <img src=x onerror=alert(4)>.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = root / "A"
    assert main(["bench", "--cases", str(cases), "--llm", "scripted", "--out", str(a), "--no-progress"]) == 0
    b = root / "B"
    shutil.copytree(a, b)
    rows = [json.loads(x) for x in (b / "results.jsonl").read_text().splitlines() if x.strip()]
    for i, r in enumerate(rows):
        r["correct"] = not r["correct"] if i % 2 else r["correct"]
        r["diagnosis"] = f"{r['diagnosis']} {PAYLOADS[-1 - i % len(PAYLOADS)]}"
    (b / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return a, b


def test_report_md_shows_payloads_as_text(payload_runs):
    a, _ = payload_runs
    md = (a / "report.md").read_text(encoding="utf-8")
    assert md.count("alert(1)") >= 2  # the payloads are in it ...
    assert_inert(md)  # ... and none is markup


def test_compare_md_shows_payloads_as_text(payload_runs, tmp_path):
    a, b = payload_runs
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "Right in A, wrong in B" in md and "alert(1)" in md
    assert_inert(md.replace("![accuracy with 95% intervals, and the flips](compare.png)", ""))


def test_osce_report_md_ladder_and_care_tables_show_payloads_as_text(tmp_path):
    p = " ".join(PAYLOADS)
    rows = [{"case_id": f"INTJ_M_X {p}", "seed": 0, "condition": "base", "status": "accepted", "outcome": "accepted",
             "accepted": True, "error": None, "failure": None, "rounds": 3, "mbti": p, "gender": p, "empathy": 5.0,
             "persuasion": 5.0, "safety": 5.0, "total": 5.0, "per_round": [{"round": 1, "total": 5.0}],
             "strengths": [p], "weaknesses": [p], "key_moments": [f"round 1: the patient accepted (words: {p})"],
             "suggestions": [p], "prompt_tokens": 0, "completion_tokens": 0, "wall_s": 0.0, "events": "e.jsonl"},
            {"case_id": f"ERR {p}", "seed": 0, "condition": "base", "status": "error", "outcome": None,
             "error": f"internal error: {p}", "failure": None, "rounds": 0, "mbti": "INTJ", "gender": "M",
             "prompt_tokens": 0, "completion_tokens": 0, "wall_s": 0.0, "events": "f.jsonl"},
            {"case_id": f"FAIL {p}", "seed": 0, "condition": "base", "status": "failed", "outcome": None,
             "error": None, "failure": p, "rounds": 2, "mbti": "INTJ", "gender": "M",
             "prompt_tokens": 0, "completion_tokens": 0, "wall_s": 0.0, "events": "g.jsonl"}]
    from dataclasses import replace

    from agents.suites.osce_suite import OsceOptions
    from medsim.report import write_report
    from medsim.spec import build_spec

    spec = build_spec(None, {"suite": "osce", "osce.personas": "INTJ_M_PNEUMO"})
    spec = replace(spec, options=OsceOptions(personas=(p,), requested=p, cases=p, rubric=p))
    write_report(tmp_path, spec, summarise_osce(rows), rows, {"doctor": p, p: "m"})
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert md.count("alert(1)") >= 5
    assert_inert(md)
    table = table_markdown([{"condition": p, "n": 1, "repeats": 1, "accuracy": 0.5, "ci95": [0.1, 0.9],
                             "tokens_per_case": 1, "evaluated_per_case": 1, "wall_s_per_case": 1, "cost_per_case": 1}])
    care = {"cases": 1, "conv_acc": 1.0, "static_acc": 1.0, "accuracy": 1.0, "accuracy_clipped": 1.0,
            "efficiency": 1.0, "empathy": 1.0, "robustness": 1.0, "failures": {p: 1}, "notes": [p]}
    care_md = care_markdown({"care": care, "conditions": {p: {"care": care}}})
    assert_inert("\n".join(["# t", "", *table, "", *care_md]))
