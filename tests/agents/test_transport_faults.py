"""Every fault an OpenAI-compatible server can make, end to end through ``medsim bench``
and through the client, against the fault-injecting server in tests/fault_server.py
(127.0.0.1 only): transport faults are retried and end the case as a labelled backend
error that keeps its turn count; a server that never sends text fails the run loudly;
replies are capped; logs grow with the conversation, not its square; the API key never
reaches a file."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agents.events import DictSink, EventLog, LLMCall, LogError, expand_prompts, read_events
from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.llm.openai_compat import OpenAICompatLLM, body_limit, text_limit
from agents.results import read_results
from medsim.cli import main
from tests.fault_server import fault_server

KEY = "sk-test-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    for var in ("MEDSIM_API_KEY", "OPENAI_API_KEY", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MEDSIM_API_KEY", KEY)


def bench(tmp_path: Path, url: str, *extra: str, out: str = "run") -> tuple[int, Path]:
    o = tmp_path / out
    rc = main(["bench", "--llm", f"openai:{url}", "--model", "fake", "--limit", "1", "--out", str(o),
               "--no-progress", "--backoff", "0", *extra])
    return rc, o


def only_row(out: Path) -> tuple[dict, list[dict]]:
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 1
    return rows[0], read_events(out / rows[0]["events"])


def ask(url: str, *, max_tokens: int = 50, timeout_s: float = 5.0):
    llm = OpenAICompatLLM(url, "fake")
    return llm.generate([Message("system", "You are a patient."), Message("user", "Hello")],
                        GenerateParams(max_tokens=max_tokens, timeout_s=timeout_s), CallContext("patient", "c1"))


# ---------------------------------------------------------------------------- retried, then a labelled error

TRANSIENT = {
    "short_body": "body was cut short",
    "non_utf8": "not UTF-8",
    "bad_status_line": "does not start with an HTTP status line",
    "disconnect": "closed the connection without sending a reply",
    "garbage_json": "is not JSON",
    "content_list": "content is a list, not text",
    "content_int": "content is a int, not text",
    "500": "HTTP 500",
    "429": "HTTP 429",
}


@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_transport_fault_is_retried_then_ends_the_case_as_a_backend_error(tmp_path, fault):
    # the doctor's first turn and the patient's answer go through; the fault starts at
    # the doctor's second turn and stays
    with fault_server(fault, after=2) as srv:
        rc, out = bench(tmp_path, srv.url, "--retries", "2")
        chats = len(srv.chats())
    row, ev = only_row(out)
    assert rc == 1 and row["status"] == "error"
    assert TRANSIENT[fault] in row["error"] and row["error"].startswith(f"[openai:{srv.url}#fake]")
    assert "internal error" not in row["error"]
    assert row["turns"] == 2  # the turn the fault hit is counted
    assert [e["attempt"] for e in ev if e["type"] == "llm_retry"] == [1, 2]
    ended = next(e for e in ev if e["type"] == "consultation_ended")
    assert ended["status"] == "error" and ended["turns"] == 2
    assert chats == 2 + 3  # two good calls, then the first attempt and two retries


@pytest.mark.parametrize("fault", ["short_body", "bad_status_line", "disconnect", "non_utf8", "content_int"])
def test_transport_fault_that_passes_is_retried_and_the_case_goes_on(tmp_path, fault):
    with fault_server(fault, times=2, after=2) as srv:
        rc, out = bench(tmp_path, srv.url, "--retries", "2")
    row, ev = only_row(out)
    assert rc == 0 and row["status"] == "diagnosed" and row["error"] is None
    assert [e["attempt"] for e in ev if e["type"] == "llm_retry"] == [1, 2]


def test_retry_after_is_waited_for_up_to_the_cap():
    waits: list[float] = []
    sink = DictSink()
    with fault_server("429", times=2) as srv:
        srv.retry_after = 7
        out = generate_logged(OpenAICompatLLM(srv.url, "fake"), [Message("system", "patient"), Message("user", "hi")],
                              GenerateParams(), CallContext("patient", "c1"), sink,
                              RetryPolicy(retries=3, backoff_s=0.5, max_backoff_s=5.0), sleep=waits.append)
    assert out.text and waits == [5.0, 5.0]  # Retry-After 7 s, capped at max_backoff_s
    assert [e["backoff_s"] for e in sink.events if e["type"] == "llm_retry"] == [5.0, 5.0]


def test_slow_reply_is_cut_at_the_timeout_and_retried(tmp_path):
    with fault_server("slow", times=1, after=2) as srv:
        srv.delay_s = 2.0
        t0 = time.monotonic()
        rc, out = bench(tmp_path, srv.url, "--retries", "1", "--timeout", "0.5")
    row, ev = only_row(out)
    assert rc == 0 and row["status"] == "diagnosed"
    retry = next(e for e in ev if e["type"] == "llm_retry")
    assert "no complete reply within 0.5 s" in retry["error"]
    assert time.monotonic() - t0 < 30


# ---------------------------------------------------------------------------- usage and null content


@pytest.mark.parametrize("fault,note", [("usage_missing", "sent no token usage"),
                                        ("usage_nonint", "prompt_tokens and completion_tokens is not a token count"),
                                        ("usage_negative", "prompt_tokens and completion_tokens is not a token count")])
def test_bad_usage_keeps_the_text_and_says_the_counts_are_missing(tmp_path, fault, note):
    with fault_server(fault) as srv:
        out = ask(srv.url)
        rc, run = bench(tmp_path, srv.url, "--retries", "0")
    assert out.text and (out.prompt_tokens, out.completion_tokens) == (0, 0) and note in out.note
    row, ev = only_row(run)
    assert rc == 0 and row["status"] == "diagnosed" and row["prompt_tokens"] == 0
    calls = [e for e in ev if e["type"] == "llm_call"]
    assert calls and all(note in c["note"] for c in calls)


def test_a_server_that_never_sends_text_fails_the_run_loudly(tmp_path, capsys, caplog):
    with fault_server("content_null") as srv:
        rc, out = bench(tmp_path, srv.url, "--retries", "0", "--limit", "2")
    err = capsys.readouterr().err + caplog.text  # said on stderr, by the CLI's logger
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 2 and summary["scored"] == 0 and summary["failed"] == 2
    assert rc == 1 and "nothing could be scored" in err and "empty" in err
    _, ev = only_row_of(out, 0)
    assert any("content null" in e["note"] for e in ev if e["type"] == "llm_call")


def only_row_of(out: Path, i: int) -> tuple[dict, list[dict]]:
    row = read_results(out / "results.jsonl")[i]
    return row, read_events(out / row["events"])


def test_a_run_where_some_cases_score_still_exits_zero(tmp_path):
    with fault_server() as srv:
        rc, _ = bench(tmp_path, srv.url)
    assert rc == 0


# ---------------------------------------------------------------------------- reply size


def test_reply_text_is_cut_to_what_max_tokens_allows():
    with fault_server("huge_content") as srv:
        srv.huge_bytes = 200_000
        out = ask(srv.url, max_tokens=50)
    assert len(out.text) == text_limit(50) and out.finish_reason == "length"
    assert "reply truncated" in out.note and "max_tokens=50" in out.note


@pytest.mark.parametrize("fault,size", [("huge_body", 2 << 20), ("huge_body", 40 << 20), ("huge_stream", 40 << 20)])
def test_a_body_over_the_byte_limit_is_a_transient_error_read_no_further(fault, size):
    with fault_server(fault) as srv:
        srv.huge_bytes = size
        t0 = time.monotonic()
        with pytest.raises(LLMError, match="bytes read at most") as e:
            ask(srv.url, max_tokens=50)
    assert e.value.transient and time.monotonic() - t0 < 5
    assert body_limit(50) == 1 << 20 and body_limit(100_000) == 6_400_000


def test_a_server_ignoring_max_tokens_writes_small_logs(tmp_path):
    with fault_server("huge_content") as srv:
        srv.huge_bytes = 1_000_000
        rc, out = bench(tmp_path, srv.url, "--max-turns", "8")
    logged = sum(p.stat().st_size for p in (out / "events").iterdir())
    assert logged < 400_000  # about 11 MB before: every prompt logged whole, replies uncut
    _, ev = only_row(out)
    assert any("reply truncated" in e["note"] for e in ev if e["type"] == "llm_call")


# ---------------------------------------------------------------------------- prompts as deltas


def test_logged_prompts_are_deltas_that_read_back_whole(tmp_path):
    with fault_server() as srv:
        rc, out = bench(tmp_path, srv.url)
        sent = [r["body"]["messages"] for r in srv.chats()]
    row, ev = only_row(out)
    assert rc == 0
    # read back whole: exactly what the server was sent, call by call (one worker: in order)
    assert [e["messages"] for e in ev if e["type"] == "llm_call"] == sent
    raw = [json.loads(line) for line in (out / row["events"]).read_text().splitlines()]
    calls = [e for e in raw if e["type"] == "llm_call"]
    first = {}
    for c in calls:
        if c["role"] in first:  # each later call of a role: the new messages only
            assert c["messages_base"]["n"] >= 1 and len(c["messages"]) <= 2, c
        else:
            first[c["role"]] = c
            assert "messages_base" not in c
    doctor = [c["messages_base"]["n"] for c in calls if c["role"] == "doctor" and "messages_base" in c]
    assert doctor == [2, 4, 6]  # the conversation so far, by reference
    # the HTML transcript counts each call's whole prompt
    from medsim.html_report import read_events as _read_events

    assert [len(e["messages"]) for e in _read_events(out / row["events"]) if e["type"] == "llm_call"] \
        == [len(m) for m in sent]
    assert (out / "transcripts").is_dir()


def test_event_log_keeps_whole_prompts_and_a_broken_reference_is_named(tmp_path):
    kept: list[dict] = []
    a = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"}]
    b = [*a, {"role": "assistant", "content": "x"}, {"role": "user", "content": "u2"}]
    other = [{"role": "system", "content": "other"}]
    with EventLog(tmp_path / "l.jsonl", keep=kept) as log:
        for msgs, role in ((a, "doctor"), (other, "patient"), (b, "doctor")):
            log.emit(LLMCall(role=role, turn=1, model="m", messages=msgs, params={}, output="o", prompt_tokens=1,
                             prompt_tokens_evaluated=None, completion_tokens=1, latency_s=0.0, finish_reason="stop"))
    assert [k["messages"] for k in kept] == [a, other, b]
    raw = [json.loads(x) for x in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert raw[2]["messages_base"] == {"seq": 0, "n": 2} and raw[2]["messages"] == b[2:]
    assert [e["messages"] for e in read_events(tmp_path / "l.jsonl")] == [a, other, b]
    with pytest.raises(LogError, match="refers to call"):
        expand_prompts([raw[2]])
    assert expand_prompts([dict(raw[2])], strict=False)[0]["messages"] == b[2:]


# ---------------------------------------------------------------------------- the key


def _files_holding(out: Path, secret: str) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes())


def test_a_key_echoed_in_a_reply_reaches_no_file(tmp_path):
    with fault_server("key_echo") as srv:
        out = ask(srv.url)
        rc, run = bench(tmp_path, srv.url, "--retries", "0")
    assert KEY not in out.text and "***" in out.text
    assert run.is_dir() and _files_holding(run, KEY) == []


def test_a_key_echoed_in_an_error_reaches_no_file(tmp_path):
    with fault_server("key_in_error", after=2) as srv:
        rc, run = bench(tmp_path, srv.url, "--retries", "0")
    row, _ = only_row(run)
    assert rc == 1 and "HTTP 401" in row["error"] and "***" in row["error"]
    assert _files_holding(run, KEY) == []


def test_a_short_placeholder_key_is_not_scrubbed_from_model_text(monkeypatch):
    monkeypatch.setenv("MEDSIM_API_KEY", "x")  # what local servers are often given
    with fault_server() as srv:
        assert ask(srv.url).text == "I have felt unwell for two days."


@pytest.mark.parametrize("userinfo", ["u:URLSECRET99@", ":URLSECRET99@", "URLSECRET99@"])
@pytest.mark.parametrize("flag", ["--llm", "--judge-llm"])
def test_a_key_in_the_url_is_refused_and_never_echoed(tmp_path, capsys, userinfo, flag):
    with fault_server() as srv:
        url = srv.url.replace("http://", f"http://{userinfo}")
        out = tmp_path / "run"
        args = ["bench", "--model", "fake", "--limit", "1", "--out", str(out), "--no-progress", flag,
                f"openai:{url}"]
        if flag == "--judge-llm":
            args += ["--judge-model", "fake"]
        rc = main(args)
        assert srv.requests == []
    cap = capsys.readouterr()
    assert rc == 2 and not out.exists()
    assert "credentials" in cap.err and "URLSECRET99" not in cap.err + cap.out
    with pytest.raises(ValueError, match="credentials") as e:
        OpenAICompatLLM(url, "fake")
    assert "URLSECRET99" not in str(e.value)


# ---------------------------------------------------------------------------- fuzz

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**20) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20)
_usage = st.one_of(_json, st.fixed_dictionaries({}, optional={"prompt_tokens": _json, "completion_tokens": _json,
                                                              "prompt_tokens_details": _json}))
_message = st.fixed_dictionaries({}, optional={"role": _json, "content": _json | st.text(max_size=300)})
_choice = st.fixed_dictionaries({}, optional={"message": _message | _json, "finish_reason": _json})
_chat = st.fixed_dictionaries({}, optional={"choices": st.lists(_choice | _json, max_size=2) | _json,
                                            "usage": _usage})
_body = st.one_of(
    _chat.map(lambda d: json.dumps(d).encode()),
    _json.map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=200),
    st.sampled_from([b"", b"[" * 5000, b'{"choices": [{"message": {"content": 1' + b"0" * 5000 + b"}}]}",
                     b'{"choices": [{"message": {"content": "\\ud800"}}]}']),
)
_status = st.one_of(st.just(200), st.sampled_from([200, 201, 204, 301, 400, 401, 404, 408, 429, 500, 502, 503, 599]))


@pytest.fixture(scope="module")
def fuzz_server():
    with fault_server() as srv:
        yield srv


# the autouse key fixture is function-scoped: setting the same variable for each example is what it should do
@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(status=_status, body=_body)
def test_any_server_reply_is_an_output_or_an_llm_error(fuzz_server, status, body):
    fuzz_server.raw_reply = (status, body, {})
    try:
        out = ask(fuzz_server.url, max_tokens=20, timeout_s=5.0)
    except LLMError as e:
        assert str(e).startswith("[openai:") and isinstance(e.transient, bool)
        return
    assert status == 200
    assert isinstance(out.text, str) and len(out.text) <= text_limit(20)
    assert isinstance(out.finish_reason, str) and out.finish_reason
    assert all(isinstance(n, int) and n >= 0 for n in (out.prompt_tokens, out.completion_tokens))
    assert out.prompt_tokens_evaluated is None or out.prompt_tokens_evaluated >= 0
