"""What a server sends back never carries the API key on (issue 23's secret defects), through
the OpenAI-compatible client and the A2A client against loopback servers:

(a) a key JSON-escaped inside a structured reply (``\\u0073k-...``) is the key once the
    doctor's turn is decoded: it is scrubbed after decoding, and from the raw text;
(b) an error body is scrubbed before it is cut, so a key across the cut leaks no head;
(c) a key echoed in another letter case is scrubbed too.
"""
from __future__ import annotations

import json

import pytest

from agents.llm.a2a import A2ALLM
from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.openai_compat import OpenAICompatLLM
from agents.protocol import parse_structured_turn
from tests.a2a_server import a2a_agent
from tests.fault_server import fault_server

KEY = "sk-test-SECRET-0123456789"
ESCAPED = "\\u0073" + KEY[1:]  # the key's first letter as a JSON escape: the text differs, the string does not
P = GenerateParams(max_tokens=80, timeout_s=5.0)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    for var in ("MEDSIM_API_KEY", "OPENAI_API_KEY", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MEDSIM_API_KEY", KEY)


def _pieces(text: str, secret: str = KEY, n: int = 6) -> list[str]:
    """The runs of ``n`` characters of ``secret`` (any case) that ``text`` holds."""
    low = text.lower()
    return [secret[i:i + n] for i in range(len(secret) - n + 1) if secret[i:i + n].lower() in low]


def _chat(status: int, content: str | None = None, body: bytes | None = None) -> tuple[int, bytes, dict]:
    if body is None:
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 3}}).encode()
    return status, body, {}


def _ask(url: str, role: str = "doctor"):
    return OpenAICompatLLM(url, "fake").generate([Message("system", "You are Dr. X."), Message("user", "Hi")], P,
                                                 CallContext(role, "c1"))


# -- (a) a key JSON-escaped inside a structured reply -------------------------------------------
def test_a_key_escaped_in_a_structured_reply_is_scrubbed_after_decoding():
    reply = '{"action": "ask_patient", "text": "Before we start: my key is ' + ESCAPED + '. How are you?"}'
    with fault_server() as srv:
        srv.raw_reply = _chat(200, reply)
        out = _ask(srv.url)
    action = parse_structured_turn(out.text)  # what the consultation reads from the turn
    assert action.kind == "ask" and "How are you?" in action.text
    assert KEY not in action.text and "***" in action.text
    assert ESCAPED not in out.text and KEY not in json.loads(out.text)["text"]


def test_a_key_escaped_in_an_a2a_agents_json_reply_is_scrubbed_after_decoding():
    with a2a_agent() as agent:
        agent.lines = ('{"text": "the key: ' + ESCAPED + '"}',)
        out = A2ALLM(agent.url).generate([Message("user", "u1")], P, CallContext("doctor", "c1"))
    assert KEY not in json.loads(out.text)["text"] and "***" in out.text


# -- (b) an error body cut before it was scrubbed ---------------------------------------------------
@pytest.mark.parametrize("cut", [6, 12, len(KEY) - 2])
def test_a_key_across_the_cut_of_an_error_body_leaks_no_part(cut):
    body = ("x" * (200 - cut) + KEY + " and more words after it").encode()  # the 200th character falls in the key
    with fault_server() as srv:
        srv.raw_reply = (401, body, {})
        with pytest.raises(LLMError) as e:
            _ask(srv.url)
    msg = str(e.value)
    assert "HTTP 401" in msg and _pieces(msg) == [], msg


def test_a_key_across_the_cut_of_a_reply_that_is_not_json_leaks_no_part():
    with fault_server() as srv:
        srv.raw_reply = (200, ("{" + "y" * 190 + KEY).encode(), {})
        with pytest.raises(LLMError, match="is not JSON") as e:
            _ask(srv.url)
    assert _pieces(str(e.value)) == []


def test_an_a2a_agents_error_message_cut_across_the_key_leaks_no_part():
    with a2a_agent() as agent:
        agent.fail_text = "x" * 190 + KEY
        agent.fail("failed")  # a failed task: its status message is quoted, cut short
        with pytest.raises(LLMError) as e:
            A2ALLM(agent.url).generate([Message("user", "u1")], P, CallContext("doctor", "c1"))
    assert "failed" in str(e.value) and _pieces(str(e.value)) == [], str(e.value)


# -- (c) a key in another letter case ---------------------------------------------------------------
def test_an_upper_cased_key_in_a_reply_is_scrubbed():
    with fault_server() as srv:
        srv.raw_reply = _chat(200, f"Your key, shouted: {KEY.upper()}. And lower: {KEY.lower()}.")
        out = _ask(srv.url, role="patient")
    assert _pieces(out.text) == [] and out.text.count("***") == 2


def test_an_upper_cased_key_in_an_error_is_scrubbed():
    with fault_server() as srv:
        srv.raw_reply = (401, json.dumps({"error": f"BAD KEY: BEARER {KEY.upper()}"}).encode(), {})
        with pytest.raises(LLMError) as e:
            _ask(srv.url)
    assert "HTTP 401" in str(e.value) and _pieces(str(e.value)) == []


# -- the scrubber itself --------------------------------------------------------------------------
def test_the_scrubber_keeps_what_is_not_a_secret_and_short_keys_out_of_model_text():
    from agents.llm.scrub import scrub, scrub_reply, snippet

    assert scrub_reply("nothing secret here: \\u0041", [KEY]) == "nothing secret here: \\u0041"
    assert scrub_reply('{"a": "\\u00e9t\\u00e9", "b": 1}', [KEY]) == '{"a": "\\u00e9t\\u00e9", "b": 1}'
    assert scrub_reply('{"a": "\\u0073' + KEY[1:] + '", "b": "\\n"}', [KEY]) == '{"a": "***", "b": "\\n"}'
    assert scrub_reply('"\\x41 ' + ESCAPED + '"', [KEY]) == '"\\x41 ' + ESCAPED + '"'  # no JSON reader takes it
    assert scrub_reply("EMPTY is fine, x too", ["EMPTY", "x"]) == "EMPTY is fine, x too"
    assert scrub("key EMPTY, not empty", ["EMPTY"]) == "key ***, not empty"  # short keys: as written, errors only
    assert snippet("a" * 195 + KEY, [KEY], 200) == "a" * 195 + "***"
