"""Any text a model replies is written to the event log and read back (issue 23): a lone
surrogate is made valid where the reply comes in (U+FFFD, with a note on the call), and
controls, bidi marks and line separators are JSON escapes in the file, never raw bytes."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents.events import DictSink, EventLog, LLMCall, Utterance, read_events
from agents.llm.base import CallContext, GenerateParams, Message, Output
from agents.llm.calls import generate_logged
from agents.results import read_results
from agents.textsafe import UNSAFE, UNSAFE_CHARS
from medsim.cli import main
from tests.fault_server import fault_server

# every kind of character the log must not hold raw: C0 and C1 controls, DEL, bidi
# overrides and isolates, zero-width, line and paragraph separators, NEL, BOM
ODD = "\x00\x07\x1b\x7f\x85\x9b\u061c\u200b\u200f\u2028\u2029\u202e\u2066\ufeff"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    for var in ("MEDSIM_API_KEY", "OPENAI_API_KEY", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)


def _call(output: str) -> LLMCall:
    return LLMCall(role="doctor", turn=1, model="m", messages=[{"role": "user", "content": "q" + ODD}], params={},
                   output=output, prompt_tokens=1, prompt_tokens_evaluated=None, completion_tokens=1, latency_s=0.0,
                   finish_reason="stop")


def test_every_event_is_written_escaped_and_reads_back_exactly(tmp_path):
    path = tmp_path / "events.jsonl"
    texts = ["a\ud800b", "\udfff", ODD, "fièvre 发烧 " + ODD + "\n\t\"\\", "\U0001f600 an emoji stays itself"]
    with EventLog(path) as log:
        for i, t in enumerate(texts):
            log.emit(_call(t), case_id="c")
            log.emit(Utterance(turn=i, speaker="patient", addressee="doctor", text=t), case_id="c")
    raw = path.read_bytes()
    text = raw.decode("utf-8")  # strict: a surrogate or a torn byte would raise here
    assert not UNSAFE.search(text), "a control, bidi or separator character is written raw"
    assert len(text.split("\n")) == 2 * len(texts) + 1  # one event a line, whatever the text
    events = read_events(path)
    assert [e["seq"] for e in events] == list(range(2 * len(texts)))
    assert [e["output"] for e in events if e["type"] == "llm_call"] == texts
    assert [e["text"] for e in events if e["type"] == "utterance"] == texts
    assert all(e["messages"] == [{"role": "user", "content": "q" + ODD}] for e in events if e["type"] == "llm_call")
    assert "fièvre 发烧" in text and "\U0001f600" in text  # readable text stays as it is: only the unsafe is escaped


class _Says:
    name = "says"

    def __init__(self, text: str):
        self.text = text

    def generate(self, messages, params, ctx):
        return Output(text=self.text, model="m")


def test_a_reply_with_a_lone_surrogate_is_made_valid_where_it_comes_in_and_says_so(tmp_path):
    with EventLog(tmp_path / "e.jsonl", keep=(kept := [])) as log:
        out = generate_logged(_Says("Pneu\ud800monia\udc00"), [Message("user", "hi")], GenerateParams(),
                              CallContext("doctor", "c"), log)
    assert out.text == "Pneu\ufffdmonia\ufffd" and "2 unpaired surrogate(s)" in out.note
    (call,) = read_events(tmp_path / "e.jsonl")
    assert call["output"] == out.text and call["note"] == out.note and kept[0]["output"] == out.text
    sink = DictSink()
    assert generate_logged(_Says("plain"), [], GenerateParams(), CallContext("doctor", "c"), sink).note == ""
    assert sink.events[0]["output"] == "plain"  # valid text passes untouched


def test_a_server_replying_a_lone_surrogate_leaves_every_call_in_the_log_and_no_internal_error(tmp_path):
    """On main this cell became "internal error: UnicodeEncodeError ..." and the reply's
    llm_call was missing from the log."""
    with fault_server() as srv:
        srv.raw_reply = (200, json.dumps({"choices": [{"message": {"content": "Hi \ud800 there \u202e\x07"}}]},
                                         ensure_ascii=True).encode(), {})
        out = tmp_path / "run"
        main(["bench", "--llm", f"openai:{srv.url}", "--model", "fake", "--limit", "1", "--out", str(out),
              "--no-progress", "--backoff", "0", "--max-turns", "3"])
        n_requests = sum(1 for r in srv.requests if r["method"] == "POST")
    (row,) = read_results(out / "results.jsonl")
    assert "UnicodeEncodeError" not in str(row.get("error")) and not str(row.get("error") or "").startswith("internal")
    events = read_events(out / row["events"])
    assert [e["seq"] for e in events] == list(range(len(events)))  # none lost
    calls = [e for e in events if e["type"] == "llm_call"]
    assert len(calls) == row["llm_calls"] == n_requests > 0
    assert all(c["output"] == "Hi \ufffd there \u202e\x07" and "U+FFFD" in c["note"] for c in calls)
    raw = (out / row["events"]).read_text(encoding="utf-8")
    assert "\\u202e" in raw and not re.search(f"[{UNSAFE_CHARS}]", raw)
    for f in ("results.csv", "report.md", "report.html"):
        (out / f).read_text(encoding="utf-8")  # every file written, and UTF-8
    assert Path(out / "summary.json").is_file()
