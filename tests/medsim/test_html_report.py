"""report.html and its transcript pages (medsim.html_report), and the server of
``medsim view`` (medsim.report_server): self-contained pages, model text shown as
text, one transcript per row, per-condition accuracy, no path out of the run."""
from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agents.events import read_events
from agents.results import read_results
from tests.helpers import default_sigint
from medsim.bench import BenchOptions, run_bench
from medsim.html_report import neutralise, transcript_items, write_html_report
from medsim.report_server import make_server
from medsim.spec import build_spec

NASTY = "<script>alert(1)</script> \x1b[31mred\x1b[0m \u202egnp.exe"
REPO = Path(__file__).resolve().parents[2]


class _Page(HTMLParser):
    """Every tag, and every src/href, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.links: list[str] = []  # <a class="transcript" href>

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        for k in ("src", "href", "action", "srcset", "poster", "data"):
            if a.get(k) is not None:
                self.refs.append((tag, k, a[k]))
        if tag == "a" and a.get("class") == "transcript":
            self.links.append(a["href"])


def _parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _assert_self_contained(path: Path, *, no_urls: bool = True) -> _Page:
    """No script, no external reference; ``no_urls``: not even a URL as text."""
    page = _parse(path)
    text = path.read_text(encoding="utf-8")
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
    assert not (no_urls and re.search(r"https?://", text)), "a URL in " + str(path)
    assert "@import" not in text and "url(" not in text
    for tag, attr, value in page.refs:
        if value.startswith("data:"):
            assert tag == "img" and value.startswith("data:image/png;base64,"), (tag, attr, value[:40])
            continue
        # relative, inside the run: no scheme, no host, no absolute path
        assert not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", value) and not value.startswith("/"), (tag, attr, value)
        assert (path.parent / value).resolve().is_relative_to(path.parent.parent.resolve()), value
    return page


def _bench(tmp_path: Path, out: str = "run", **over) -> Path:
    spec = build_spec(None, {"cases": "demo", "limit": 3, **over})
    return run_bench(spec, BenchOptions(out=tmp_path / out, progress=False)).out


# -- report.html from a bench run --------------------------------------------------------------------
def test_a_bench_run_writes_a_self_contained_report_with_a_transcript_per_case(tmp_path):
    out = _bench(tmp_path)
    report = out / "report.html"
    page = _assert_self_contained(report)
    html = report.read_text(encoding="utf-8")
    s = json.loads((out / "summary.json").read_text())
    assert f"{s['accuracy']:.1%}" in html and f"{s['ci95'][0]:.1%}" in html and f"{s['ci95'][1]:.1%}" in html
    # the plots are inline PNGs
    plots = [v for t, a, v in page.refs if t == "img" and v.startswith("data:image/png;base64,")]
    assert len(plots) >= 2
    for v in plots:
        assert base64.b64decode(v.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # the run: command, case file hash (recorded or computed), specialties
    assert "case file SHA-256" in html and re.search(r"\b[0-9a-f]{64}\b", html)
    assert "cardiology" in html and "By specialty" in html
    # one link per row, each to an existing transcript named like its events file
    rows = read_results(out / "results.jsonl")
    assert len(page.links) == len(rows) == 3
    for row, href in zip(rows, page.links):
        assert href == "transcripts/" + Path(row["events"]).stem + ".html"
        t = out / href
        assert t.is_file()
        tp = _assert_self_contained(t)
        assert "../report.html" in [v for _, _, v in tp.refs]
        ev = read_events(out / row["events"])
        first = next(e for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor")
        thtml = t.read_text(encoding="utf-8")
        assert str(neutralise(first["text"])) in thtml
        assert 'class="msg doctor"' in thtml and 'class="msg patient"' in thtml
        assert str(neutralise(row["truth"])) in thtml and "judge (" in thtml


def test_resume_writes_the_report_again(tmp_path):
    out = _bench(tmp_path)
    (out / "report.html").unlink()
    spec = build_spec(None, {"cases": "demo", "limit": 3})
    run_bench(spec, BenchOptions(out=out, progress=False, resume=True))
    assert (out / "report.html").is_file()


def test_a_run_with_conditions_shows_each_conditions_accuracy(tmp_path):
    out = _bench(tmp_path, conditions={"baseline": {"protocol": {"measurement": False}},
                                       "measurement": {"protocol": {"measurement": True}}})
    html = (out / "report.html").read_text(encoding="utf-8")
    s = json.loads((out / "summary.json").read_text())
    table = re.findall(r'<tr class="condition"><td>([^<]+)</td>(.*?)</tr>', html, re.S)
    assert [name for name, _ in table] == ["baseline", "measurement"]
    for name, cells in table:
        c = s["conditions"][name]
        assert f"{c['accuracy']:.1%}" in cells and f"{c['correct']}/{c['scored']}" in cells
    assert "Accuracy by condition" in html
    assert len(_parse(out / "report.html").links) == 6


# -- model text is data ------------------------------------------------------------------------------
def test_model_and_case_text_is_shown_escaped(tmp_path):
    rec = json.loads((REPO / "agents" / "casesets" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0])
    rec["id"] = "nasty-<b>1</b>"
    rec["OSCE_Examination"]["Patient_Actor"]["History"] = NASTY
    rec["OSCE_Examination"]["Correct_Diagnosis"] = "Myocardial infarction " + NASTY
    cases = tmp_path / "nasty.jsonl"
    cases.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    out = _bench(tmp_path, cases=str(cases))
    ev = read_events(next((out / "events").glob("*.jsonl")))
    said = " ".join(e.get("text") or "" for e in ev if e["type"] == "utterance")  # the model said it (in sentences)
    assert "<script>alert(1)</script> \x1b[31mred\x1b[0m \u202egnp" in said
    pages = [out / "report.html", *sorted((out / "transcripts").glob("*.html"))]
    assert len(pages) == 2
    for p in pages:
        html = p.read_text(encoding="utf-8")
        _assert_self_contained(p)
        assert "<script" not in html.lower() and "<b>1</b>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "\x1b" not in html and "\u202e" not in html
        assert ">ESC<" in html and "U+202E" in html


def test_neutralise_marks_controls_bidi_and_surrogates():
    got = str(neutralise("a<b>&\"'\x00\x1b\x7f\x9b\u202e\u2066\u200f\ud800\tz\nq\r\n"))
    assert "<b>" not in got and "&lt;b&gt;&amp;" in got
    for ch in "\x00\x1b\x7f\x9b\u202e\u2066\u200f\ud800\r":
        assert ch not in got
    assert "\t" in got and "\n" in got and got.count('class="ctl"') == 8


def test_guard_rejections_errors_images_and_the_judge_are_set_apart(tmp_path):
    """A handmade log: each kind of event the transcript shows in its own box."""
    image = REPO / "agents" / "casesets" / "images" / "cxr_left_pneumothorax.png"
    events = [
        {"type": "header", "case_id": "h1", "seed": 0, "condition": "base", "models": {"doctor": "m"}, "spec": {}},
        {"type": "case_started", "case_id": "h1", "objective": "Assess", "demographics": "30-year-old"},
        {"type": "utterance", "turn": 1, "speaker": "doctor", "addressee": "patient", "text": "What brings you in?"},
        {"type": "reply_rejected", "role": "patient", "turn": 1, "problem": "role_break", "text": "As an AI <i>", "attempt": 1},
        {"type": "utterance", "turn": 1, "speaker": "patient", "addressee": "doctor", "text": "Chest pain."},
        {"type": "test_requested", "turn": 2, "test": "Chest X-ray"},
        {"type": "test_result", "turn": 2, "test": "Chest X-ray", "result": "RESULTS: pneumothorax"},
        {"type": "utterance", "turn": 2, "speaker": "measurement", "addressee": "doctor", "text": "RESULTS: pneumothorax"},
        {"type": "image_returned", "turn": 2, "study": "Chest X-ray", "modality": "X-ray", "body_part": "chest",
         "image": str(image), "sha256": "ab" * 32},
        {"type": "image_returned", "turn": 2, "study": "CT", "modality": "CT", "body_part": "chest",
         "image": "https://example.org/ct.png", "sha256": None},
        {"type": "case_error", "turn": 3, "error": "internal error: boom"},
        {"type": "diagnosis", "turn": 3, "diagnosis": "Pneumothorax"},
        {"type": "judge", "method": "llm", "correct": True, "diagnosis": "Pneumothorax", "truth": "Pneumothorax",
         "rationale": "same condition", "rule": "llm"},
    ]
    items = transcript_items(events)
    kinds = [i["kind"] for i in items]
    assert kinds == ["say", "guard", "say", "note", "say", "image", "image", "error", "verdict", "verdict"]
    assert items[4]["speaker"] == "measurement" and items[4]["title"] == "Result: Chest X-ray"  # one bubble, titled
    out = tmp_path / "hand"
    (out / "events").mkdir(parents=True)
    (out / "events" / "h1-0123456789.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    row = {"case_id": "h1", "seed": 0, "condition": "base", "status": "diagnosed", "diagnosis": "Pneumothorax",
           "truth": "Pneumothorax", "correct": True, "error": None, "turns": 3, "n_tests": 1, "specialty": None,
           "events": "events/h1-0123456789.jsonl"}
    write_html_report(out, [row])
    t = out / "transcripts" / "h1-0123456789.html"
    page = _assert_self_contained(t, no_urls=False)  # the study's URL is shown as text
    html = t.read_text(encoding="utf-8")
    assert 'class="box guard"' in html and "As an AI &lt;i&gt;" in html
    assert 'class="box error"' in html and "internal error: boom" in html
    assert 'class="box verdict good"' in html and "same condition" in html
    assert sum(1 for tag, _, v in page.refs if tag == "img" and v.startswith("data:image/png")) == 1  # the local one
    assert "example.org/ct.png" in html and "(image not available here)" in html  # a URL: named, never fetched


def test_a_row_naming_a_file_outside_the_run_gets_no_transcript(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"type": "utterance", "speaker": "doctor", "text": "SECRET"}\n')
    rows = [{"case_id": "x", "events": "../secret.jsonl"}, {"case_id": "y", "events": "events/../../secret.jsonl"}]
    write_html_report(out, rows)
    assert "SECRET" not in (out / "report.html").read_text() and not (out / "transcripts").exists()


# -- medsim view's server --------------------------------------------------------------------------
@pytest.fixture
def served(tmp_path):
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "report.html").write_text("<p>report</p>", encoding="utf-8")
    (run / "events" / "a.jsonl").write_text('{"type": "header"}\n', encoding="utf-8")
    (tmp_path / "secret.txt").write_text("SECRET", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", run / "link.txt")
    os.symlink(tmp_path / "outside", run / "linkdir")
    server = make_server(run, 0, quiet=True)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _get(port: int, path: str, method: str = "GET") -> tuple[int, dict, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.putrequest(method, path, skip_host=False, skip_accept_encoding=True)  # the path exactly as written
        c.endheaders()
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def test_view_serves_the_run_and_nothing_outside_it(served):
    status, headers, body = _get(served, "/")
    assert status == 200 and body == b"<p>report</p>" and "script-src" not in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    status, headers, _ = _get(served, "/events/a.jsonl")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/..%2fsecret.txt",
                 "/events/../../secret.txt", "/events/%2e%2e/%2e%2e/secret.txt", "/.%2e/secret.txt",
                 "//secret.txt", "//etc/passwd", "/%2Fetc%2Fpasswd",
                 "/link.txt", "/linkdir/secret.txt", "/..\\secret.txt", "/%5c..%5csecret.txt",
                 "/report.html%00.txt", "/events/", "/events", "/missing.html", "/%ff%fe"):
        status, _, body = _get(served, path)
        assert status in (400, 403, 404), (path, status)
        assert b"SECRET" not in body and b"root:" not in body, path
    assert _get(served, "/report.html", "POST")[0] == 405


def test_view_command_writes_a_missing_report_serves_it_and_stops_on_ctrl_c(tmp_path):
    out = _bench(tmp_path)
    (out / "report.html").unlink()
    p = subprocess.Popen([sys.executable, "-m", "medsim", "view", str(out), "--port", "0", "--no-browser", "--quiet"],
                         preexec_fn=default_sigint,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/report\.html", line)
        assert m, line + p.stderr.read() if p.poll() is not None else line
        status, _, body = _get(int(m.group(1)), "/report.html")
        assert status == 200 and b"accuracy" in body and (out / "report.html").is_file()
        status, _, _ = _get(int(m.group(1)), "/../run.json")
        assert status in (403, 404)
    finally:
        p.send_signal(signal.SIGINT)
        try:
            code = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
    assert code == 0 and "Traceback" not in p.stderr.read()


def test_view_command_stops_cleanly_on_sigterm(tmp_path):
    out = _bench(tmp_path)
    p = subprocess.Popen([sys.executable, "-m", "medsim", "view", str(out), "--port", "0", "--no-browser", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/report\.html", line)
        assert m, line
        assert _get(int(m.group(1)), "/report.html")[0] == 200
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            code = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
    assert code == 0 and "Traceback" not in p.stderr.read()


def test_the_measures_section_shows_top_k_and_a_reliability_diagram_when_confidences_were_given(tmp_path):
    from medsim.cli import main

    assert main(["bench", "--cases", "demo", "--llm", "scripted", "--limit", "4", "--doctor-strategy", "focused",
                 "--no-progress", "--out", str(tmp_path / "f")]) == 0
    page = (tmp_path / "f" / "report.html").read_text()
    section = page[page.index('<section id="measures">'):]
    section = section[: section.index("</section>")]
    assert "top-5" in section and "Brier (top-1 confidence, n=4)" in section
    assert 'alt="top-1 confidence against the share right, per bin"' in section
    assert "Information elicited" in section and "Tests ordered" in section
    # a doctor that gives one diagnosis: top-k, no confidence, no diagram
    assert main(["bench", "--cases", "demo", "--llm", "scripted", "--limit", "4", "--no-progress", "--out",
                 str(tmp_path / "t")]) == 0
    plain = (tmp_path / "t" / "report.html").read_text()
    assert "no confidence was given: no calibration" in plain and "Reliability diagram" not in plain


def test_a_transcript_shows_the_working_and_the_final_differential():
    got = transcript_items([
        {"type": "differential", "turn": 2, "final": False, "items": [{"diagnosis": "Pericarditis", "confidence": 0.6}]},
        {"type": "differential", "turn": 5, "final": True, "items": [{"diagnosis": "Myocarditis", "confidence": None},
                                                                      {"diagnosis": "Pericarditis", "confidence": 0.2}]}])
    assert [i["label"] for i in got] == ["working differential (the doctor's own, not shown to the patient)",
                                         "final differential"]
    assert got[0]["text"] == "1. Pericarditis (60%)" and got[1]["text"] == "1. Myocarditis\n2. Pericarditis (20%)"
