"""Bring your own doctor over the A2A protocol (``a2a:URL``, agents/llm/a2a.py) against
the fake agent in tests/a2a_server.py (127.0.0.1 only): the spec, the agent card, the
conversation kept per contextId (only new messages after the first, the brief in the
first), Message and Task results, polling, errors retried and reported, the key kept out
of every reply and file, and a whole ``medsim osce`` run with the agent as the doctor."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agents.events import DictSink, read_events
from agents.llm.a2a import HISTORY_OPEN, INSTRUCTIONS_CLOSE, INSTRUCTIONS_OPEN, A2ALLM, check_agent
from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import BackendSpecError, build_backend, check_backend_spec, describe_spec
from agents.results import read_results
from medsim.cli import main
from medsim.spec import ProtocolSpec, RoleSpec
from tests.a2a_server import DOCTOR_LINES, a2a_agent
from tests.helpers import clean_http_env

KEY = "sk-a2a-SECRET-0123456789"
URL_SECRET = "URLSECRET-987654321"
P = GenerateParams(max_tokens=200, timeout_s=5.0)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_http_env(monkeypatch, KEY)


@pytest.fixture
def agent():
    with a2a_agent() as s:
        yield s


def ctx(case: str = "c1") -> CallContext:
    return CallContext("doctor", case, 1)


def texts(agent) -> list[str]:
    return [m["parts"][0]["text"] for m in agent.sent()]


# -- the spec --------------------------------------------------------------------------------
def test_spec_accepts_an_agent_url_and_refuses_bad_ones():
    for ok in ("a2a:http://127.0.0.1:9999/", "a2a:https://agent.example/a2a/doctor", "a2a:http://[::1]:8000"):
        check_backend_spec(ok, None)
    check_backend_spec("a2a:http://127.0.0.1:9999/", "qwen")  # a model inherited from --model is ignored
    for bad, words in (("a2a:", "needs the agent's URL"), ("a2a:127.0.0.1:9999", "needs the agent's URL"),
                       ("a2a:ftp://h/", "needs the agent's URL"), ("a2a:http://h:99999/", "cannot be read"),
                       ("a2a:http://[::1/", "cannot be read"),
                       (f"a2a:http://user:{URL_SECRET}@h/", "put the key in MEDSIM_API_KEY")):
        with pytest.raises(BackendSpecError) as e:
            check_backend_spec(bad, None)
        assert words in str(e.value) and URL_SECRET not in str(e.value), bad
    with pytest.raises(BackendSpecError) as e:  # no scheme: refused, the query's key not repeated
        check_backend_spec(f"a2a:h/?api_key={URL_SECRET}", None)
    assert URL_SECRET not in str(e.value) and "api_key=***" in str(e.value)


def test_the_spec_shows_the_url_redacted_and_builds_the_agent_backend():
    spec = f"a2a:http://h:1/?api_key={URL_SECRET}&x=1"
    assert describe_spec(spec, None) == "a2a:http://h:1/?api_key=***&x=1"
    rs = RoleSpec.parse("doctor", {"backend": spec}, llm="scripted", model=None)
    assert rs.describe() == "a2a:http://h:1/?api_key=***&x=1" and URL_SECRET not in json.dumps(rs.to_dict())
    assert ProtocolSpec.parse({}, doctor_backend=spec).doctor_mode == "markers"  # no agent takes a JSON schema
    llm = build_backend(spec, model=None, cases={}, seed=0, pool=LlamaPool())
    assert isinstance(llm, A2ALLM) and llm.name == "a2a:http://h:1/?api_key=***&x=1"


# -- the card --------------------------------------------------------------------------------
def test_the_card_is_read_at_the_current_then_the_older_path(agent):
    card = check_agent(agent.url, timeout_s=5)
    assert (card.name, card.version, card.protocol_version) == ("Fake A2A Doctor", "1.2.3", "0.3.0")
    agent.card_mode = "legacy"
    assert check_agent(agent.url, timeout_s=5).card_path == "/.well-known/agent.json"
    llm = A2ALLM(agent.url)
    llm.check(timeout_s=5)
    assert llm.name == f"a2a:{agent.url}#Fake A2A Doctor@1.2.3"
    assert llm.generate([Message("user", "hi")], P, ctx()).model == llm.name  # each call records the agent
    gets = [r for r in agent.requests if r["method"] == "GET"]
    assert gets and all(r["auth"] == f"Bearer {KEY}" for r in gets)


def test_no_card_or_a_bad_one_is_a_clear_error(agent, dead_url):
    agent.card_mode = "none"
    with pytest.raises(LLMError) as e:
        check_agent(agent.url, timeout_s=5)
    assert "no A2A agent card at" in str(e.value) and "agent-card.json" in str(e.value) and not e.value.transient
    agent.card_mode = "garbage"
    with pytest.raises(LLMError, match="not an A2A agent card"):
        check_agent(agent.url, timeout_s=5)
    with pytest.raises(LLMError, match="cannot reach"):
        check_agent(dead_url, timeout_s=5)


# -- the conversation ------------------------------------------------------------------------
def test_one_context_per_conversation_and_only_new_messages_after_the_first(agent):
    llm = A2ALLM(agent.url)
    sys = Message("system", "You are the doctor. The diagnosis is X.")
    m = [sys, Message("user", "The patient has come in.")]
    r1 = llm.generate(m, P, ctx()).text
    assert r1 == DOCTOR_LINES[0]
    m += [Message("assistant", r1), Message("user", "Patient: I am scared.")]
    assert llm.generate(m, P, ctx()).text == DOCTOR_LINES[1]
    # a guard asks the last message again with a correction: only the correction is sent
    m2 = m[:-1] + [Message("user", "Patient: I am scared.\n(You already said that. Say something new.)")]
    r3 = llm.generate(m2, P, ctx()).text
    m2 += [Message("assistant", r3 + "\n"), Message("user", "Patient: Fine.")]  # a committed reply is stripped
    llm.generate(m2, P, ctx())
    sent = agent.sent()
    first = sent[0]["parts"][0]["text"]
    assert first.startswith(f"{INSTRUCTIONS_OPEN}\nYou are the doctor. The diagnosis is X.\n{INSTRUCTIONS_CLOSE}")
    assert first.endswith("The patient has come in.") and "contextId" not in sent[0]
    assert texts(agent)[1:] == ["Patient: I am scared.", "(You already said that. Say something new.)",
                                "Patient: Fine."]
    contexts = {s.get("contextId") for s in sent[1:]}
    assert len(contexts) == 1 and list(agent.contexts) == list(contexts)
    assert len({s["messageId"] for s in sent}) == len(sent)
    # the same case started afresh (another seed), and another case: new contexts, the brief again
    llm.generate([sys, Message("user", "The patient has come in.")], P, ctx())
    llm.generate([sys, Message("user", "The patient has come in.")], P, ctx("c2"))
    assert len(agent.contexts) == 3 and all(t.startswith(INSTRUCTIONS_OPEN) for t in texts(agent)[4:])


def test_a_conversation_the_agent_has_not_seen_is_sent_whole(agent):
    llm = A2ALLM(agent.url)
    m = [Message("system", "S"), Message("user", "u1"), Message("assistant", "a1"), Message("user", "u2")]
    llm.generate(m, P, ctx())
    [text] = texts(agent)
    assert text == f"{INSTRUCTIONS_OPEN}\nS\n{INSTRUCTIONS_CLOSE}\n\n{HISTORY_OPEN}\nUser: u1\n\nYou: a1\n" \
                   f"[END OF CONVERSATION SO FAR]\n\nu2"


def test_a_stateless_agent_is_sent_the_whole_conversation_each_time(agent):
    agent.mode = "no_context"
    llm = A2ALLM(agent.url)
    m = [Message("system", "S"), Message("user", "u1")]
    r = llm.generate(m, P, ctx()).text
    llm.generate(m + [Message("assistant", r), Message("user", "u2")], P, ctx())
    second = texts(agent)[1]
    assert second.startswith(INSTRUCTIONS_OPEN) and f"You: {r}" in second and second.endswith("u2")
    assert all("contextId" not in s for s in agent.sent())


# -- results -----------------------------------------------------------------------------------
def test_task_results_artifacts_status_message_and_input_required(agent):
    llm = A2ALLM(agent.url)
    agent.mode = "task"
    m = [Message("user", "u1")]
    assert llm.generate(m, P, ctx("t1")).text == DOCTOR_LINES[0]
    agent.mode = "task_status"
    assert llm.generate([Message("user", "u1")], P, ctx("t2")).text == DOCTOR_LINES[0]
    agent.mode = "input_required"
    r = llm.generate([Message("user", "u1")], P, ctx("t3")).text
    llm.generate([Message("user", "u1"), Message("assistant", r), Message("user", "u2")], P, ctx("t3"))
    *_, asked, answer = agent.sent()
    assert "taskId" not in asked and answer.get("taskId")  # the input-required task is continued
    assert len(agent.contexts[answer["contextId"]]) == 2  # in the context the agent opened


def test_a_working_task_is_polled_until_it_completes_within_the_deadline(agent):
    agent.mode, agent.polls = "working", 3
    llm = A2ALLM(agent.url)
    assert llm.generate([Message("user", "u1")], P, ctx()).text == DOCTOR_LINES[0]
    gets = [r["body"] for r in agent.requests if r["method"] == "POST" and r["body"]["method"] == "tasks/get"]
    assert len(gets) == 4 and all(g["params"]["id"] for g in gets)
    agent.polls = -1  # never completes: the role's timeout bounds the wait
    t0 = time.monotonic()
    with pytest.raises(LLMError) as e:
        llm.generate([Message("user", "u1")], GenerateParams(timeout_s=0.6), ctx("other"))
    assert time.monotonic() - t0 < 3 and e.value.transient and "still working after 0.6 s" in str(e.value)


# -- errors ------------------------------------------------------------------------------------
def test_transient_errors_are_retried_and_others_reported(agent):
    llm = A2ALLM(agent.url)
    sink = DictSink()
    agent.fail("rpc_error")
    agent.fail("garbage")
    agent.fail("http500")
    out = generate_logged(llm, [Message("user", "u1")], P, ctx(), sink, RetryPolicy(retries=3, backoff_s=0),
                          sleep=lambda s: None)
    assert out.text == DOCTOR_LINES[0]
    retries = [e["error"] for e in sink.events if e["type"] == "llm_retry"]
    assert len(retries) == 3
    assert "JSON-RPC error -32603: internal error, try again" in retries[0] and "is not JSON" in retries[1]
    assert "HTTP 500" in retries[2]
    for fault, words in (("rpc_fatal", "JSON-RPC error -32602: invalid params: no"),
                         ("failed", "the agent's task ended failed: the model crashed"),
                         ("not_a_result", "neither an A2A Message nor a Task")):
        agent.fail(fault, times=5)
        sink = DictSink()
        with pytest.raises(LLMError) as e:
            generate_logged(llm, [Message("user", "u2")], P, ctx(fault), sink, RetryPolicy(retries=1, backoff_s=0),
                            sleep=lambda s: None)
        assert words in str(e.value) and str(e.value).startswith(f"[a2a:{agent.url}]"), fault
        agent._faults.clear()


def test_the_key_goes_in_a_bearer_header_and_nowhere_else(agent, monkeypatch):
    url = f"{agent.url}?api_key={URL_SECRET}"
    llm = A2ALLM(url)
    assert URL_SECRET not in llm.name
    agent.fail("key_echo")
    out = llm.generate([Message("user", "u1")], P, ctx())
    assert KEY not in out.text and "Bearer ***" in out.text
    assert agent.requests[-1]["auth"] == f"Bearer {KEY}"
    agent.fail("rpc_fatal")
    with pytest.raises(LLMError) as e:
        llm.generate([Message("user", "u1")], P, ctx("2"))
    assert URL_SECRET not in str(e.value) and "api_key=***" in str(e.value)
    monkeypatch.delenv("MEDSIM_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the OpenAI backend's fallback is not the agent's key
    llm.generate([Message("user", "u1")], P, ctx("3"))
    assert agent.requests[-1]["auth"] is None


def test_a_reply_is_capped(agent):
    agent.fail("huge")
    out = A2ALLM(agent.url).generate([Message("user", "u1")], GenerateParams(max_tokens=10, timeout_s=5), ctx())
    assert len(out.text) == 16 * 10 + 256 and out.finish_reason == "length" and "truncated" in out.note


# -- a whole OSCE run with the agent as the doctor ----------------------------------------------
def _osce(tmp_path: Path, url: str, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "run"
    rc = main(["osce", "--personas", "INTJ_M_PNEUMO", "--doctor-llm", f"a2a:{url}", "--llm", "scripted",
               "--max-rounds", "3", "--out", str(out), "--no-progress", *extra])
    return rc, out


def _no_secrets(out: Path) -> None:
    for f in out.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert KEY.encode() not in data and URL_SECRET.encode() not in data, f


def test_medsim_osce_with_an_a2a_doctor(tmp_path, agent, capsys):
    from agents.suites.osce_personas import load_osce_cases, load_traits

    rc, out = _osce(tmp_path, f"{agent.url}?api_key={URL_SECRET}")
    assert rc == 0, capsys.readouterr().err
    [row] = read_results(out / "results.jsonl")
    assert row["error"] is None and row["rounds"] >= 1
    ev = read_events(out / row["events"])
    said = [e["text"] for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert said == list(DOCTOR_LINES[:len(said)])  # the doctor's turns are the agent's
    sent = agent.sent()
    assert len(sent) == row["rounds"] and len(agent.contexts) == 1  # one context across the encounter
    assert "contextId" not in sent[0] and {s["contextId"] for s in sent[1:]} == set(agent.contexts)
    case = load_osce_cases()["PNEUMO"]
    first = sent[0]["parts"][0]["text"]
    assert first.startswith(INSTRUCTIONS_OPEN) and INSTRUCTIONS_CLOSE in first  # the doctor's brief, delimited
    assert case.diagnosis in first and case.treatment in first
    for s in sent[1:]:  # only the patient's new words
        t = s["parts"][0]["text"]
        assert t.startswith("Patient: ") and INSTRUCTIONS_OPEN not in t and case.treatment not in t
    everything = json.dumps([r["body"] for r in agent.requests])
    for hidden in (load_traits().mbti["INTJ"], *case.fears):  # the hidden persona never reaches the agent
        assert json.dumps(hidden)[1:-1] not in everything
    assert all(r["auth"] == f"Bearer {KEY}" for r in agent.requests)
    run = json.loads((out / "run.json").read_text())
    assert run["spec"]["roles"]["doctor"]["backend"] == f"a2a:{agent.url}?api_key=***"
    recorded = f"a2a:{agent.url}?api_key=***#Fake A2A Doctor@1.2.3"  # the agent's name and version, from its card
    assert ev[0]["models"]["doctor"] == recorded
    assert {e["model"] for e in ev if e["type"] == "llm_call" and e["role"] == "doctor"} == {recorded}
    _no_secrets(out)


def test_medsim_osce_retries_agent_errors_then_reports_them(tmp_path, agent, capsys):
    agent.fail("rpc_error")  # once: retried, the run goes on
    rc, out = _osce(tmp_path, agent.url)
    assert rc == 0
    [row] = read_results(out / "results.jsonl")
    ev = read_events(out / row["events"])
    assert [e["attempt"] for e in ev if e["type"] == "llm_retry"] == [1] and row["error"] is None
    agent.fail("rpc_fatal", times=100)  # not transient: the encounter ends as an error, the exit code says so
    rc, out = _osce(tmp_path / "2", agent.url)
    assert rc == 1
    [row] = read_results(out / "results.jsonl")
    assert "JSON-RPC error -32602" in row["error"] and f"a2a:{agent.url}" in row["error"]
    _no_secrets(out)


def test_medsim_osce_preflight_names_a_missing_agent(tmp_path, agent, dead_url, capsys):
    rc, out = _osce(tmp_path, dead_url)
    err = capsys.readouterr().err
    assert rc == 2 and "roles.doctor: the agent check failed before the run" in err and "cannot reach" in err
    assert not out.exists()
    agent.card_mode = "none"
    rc, out = _osce(tmp_path, agent.url)
    assert rc == 2 and "no A2A agent card" in capsys.readouterr().err and not out.exists()
    assert not agent.sent()


def test_medsim_bench_with_an_a2a_doctor(tmp_path, agent, capsys):
    agent.lines = ("What brings you in today?", "How long have you felt this way?", "DIAGNOSIS READY: Pneumonia")
    out = tmp_path / "bench"
    rc = main(["bench", "--cases", "demo", "--limit", "1", "--doctor-llm", f"a2a:{agent.url}", "--llm", "scripted",
               "--min-gathering", "0", "--max-turns", "4", "--out", str(out), "--no-progress"])
    assert rc in (0, 1), capsys.readouterr().err  # 1: the scripted judge may call the diagnosis wrong
    [row] = read_results(out / "results.jsonl")
    assert row.get("error") is None
    ev = read_events(out / row["events"])
    assert ev[0]["models"]["doctor"] == f"a2a:{agent.url}#Fake A2A Doctor@1.2.3"
    assert len(agent.contexts) == 1 and agent.sent()[0]["parts"][0]["text"].startswith(INSTRUCTIONS_OPEN)


def test_history_full_is_an_a2a_roles_choice_and_recorded_in_the_spec():
    from agents.settings import SpecError
    from medsim.spec import build_spec

    url = "a2a:http://127.0.0.1:9999/"
    rs = RoleSpec.parse("doctor", {"backend": url, "history": "full"}, llm="scripted", model=None)
    assert rs.history == "full" and rs.to_dict()["history"] == "full"
    plain = RoleSpec.parse("doctor", {"backend": url}, llm="scripted", model=None)
    assert plain.history is None and "history" not in plain.to_dict()  # today's specs stay as they were
    assert RoleSpec.parse("doctor", {"backend": url, "history": "agent"}, llm="scripted", model=None).history is None
    for table, words in (({"backend": "scripted", "history": "full"}, "only an a2a: backend"),
                         ({"backend": url, "history": "all"}, "one of agent, full")):
        with pytest.raises(SpecError) as e:
            RoleSpec.parse("doctor", table, llm="scripted", model=None)
        assert words in str(e.value) and "roles.doctor.history" in str(e.value)
    spec = build_spec(None, {"roles.doctor.backend": url, "roles.doctor.history": "full"})
    from medsim.assemble import Backends
    from agents.llm.llamacpp import LlamaPool
    llm = Backends({}, LlamaPool()).get("doctor", spec.roles["doctor"], 0)
    assert isinstance(llm, A2ALLM) and llm.history == "full"


# -- streamed replies (server-sent events) --------------------------------------------------
def test_a_streamed_reply_is_read_as_it_arrives_its_chunks_one_text(agent):
    agent.streaming = "chunks"  # events split across reads, the reply in 4-character artifact chunks
    llm = A2ALLM(agent.url)
    llm.check()
    t0 = time.monotonic()
    r = llm.generate([Message("user", "u1")], P, ctx("s1"))
    assert r.text == DOCTOR_LINES[0]
    assert time.monotonic() - t0 < 2.0  # read up to the final event, not until the server closes the stream
    methods = [x["body"]["method"] for x in agent.requests if x["method"] == "POST"]
    assert methods == ["message/stream"]


def test_a_stream_is_held_to_the_whole_call_deadline_and_the_reply_cap(agent):
    llm = A2ALLM(agent.url)
    agent.streaming = "forever"  # working, working, ... never final
    llm.check()
    t0 = time.monotonic()
    with pytest.raises(LLMError) as e:
        llm.generate([Message("user", "u1")], GenerateParams(max_tokens=200, timeout_s=1.0), ctx("s2"))
    assert time.monotonic() - t0 < 3.0 and "within 1.0 s (whole-call timeout)" in str(e.value) and e.value.transient
    agent.streaming = "huge"  # chunks without end: the byte cap stops the read
    with pytest.raises(LLMError) as e:
        llm.generate([Message("user", "u1")], GenerateParams(max_tokens=20, timeout_s=10.0), ctx("s3"))
    assert "larger than" in str(e.value)


def test_a_stream_that_ends_before_the_answer_is_polled_and_an_error_event_reported(agent):
    llm = A2ALLM(agent.url, poll_s=(0.01, 0.05))
    agent.streaming = "cut"
    llm.check()
    assert llm.generate([Message("user", "u1")], P, ctx("s4")).text == DOCTOR_LINES[0]
    methods = [x["body"]["method"] for x in agent.requests if x["method"] == "POST"]
    assert methods == ["message/stream", "tasks/get", "tasks/get"]  # working once more, then completed
    agent.streaming = "error"
    with pytest.raises(LLMError) as e:
        llm.generate([Message("user", "u1")], P, ctx("s5"))
    assert "answered message/stream with JSON-RPC error -32603: the stream broke" in str(e.value)
    assert e.value.transient
