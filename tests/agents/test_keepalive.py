"""HTTP keep-alive in the OpenAI-compatible client: calls to one server share its pool of
TCP connections (httpcore's, agents/llm/transport.py); a connection the server closed, or one a call failed on, is never
used again. Loopback only (tests/fault_server.py records each request's client port:
one port, one connection)."""
from __future__ import annotations

import threading
import time

import pytest

from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.openai_compat import OpenAICompatLLM, close_kept_connections
from tests.fault_server import fault_server
from tests.helpers import clean_http_env

MSGS = [Message("system", "You are a patient."), Message("user", "What brings you in?")]


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    clean_http_env(monkeypatch)
    close_kept_connections()
    yield
    close_kept_connections()


def call(url: str, timeout_s: float = 10.0) -> str:
    return OpenAICompatLLM(url, "fake").generate(MSGS, GenerateParams(timeout_s=timeout_s), CallContext("patient", "c")).text


def ports(srv) -> list[int]:
    return [r["port"] for r in srv.chats()]


def test_calls_from_one_thread_share_one_connection():
    with fault_server() as srv:
        texts = [call(srv.url) for _ in range(4)]
    assert texts == ["I have felt unwell for two days."] * 4
    assert len(set(ports(srv))) == 1, ports(srv)


def test_threads_share_the_servers_pool_one_connection_per_call_at_a_time():
    with fault_server() as srv:
        def worker() -> None:
            for _ in range(3):
                call(srv.url)

        ts = [threading.Thread(target=worker) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert len(srv.chats()) == 9
    assert 0 < len(set(ports(srv))) <= 3  # at most one per call in flight, each kept and used again


def test_a_connection_the_server_closed_is_not_reused():
    with fault_server() as srv:
        srv.hang_up = True  # closes after each reply without "Connection: close"
        first = call(srv.url)
        time.sleep(0.2)  # the server's close reaches the client's socket
        second = call(srv.url)  # no retry here: a reuse of the closed socket would fail this call
    assert first == second == "I have felt unwell for two days."
    assert len(srv.chats()) == 2 and len(set(ports(srv))) == 2


def test_a_call_that_failed_leaves_no_connection_behind():
    with fault_server("slow", times=1, after=1) as srv:
        srv.delay_s = 1.0
        call(srv.url)
        with pytest.raises(LLMError, match="no complete reply within 0.3 s"):
            call(srv.url, timeout_s=0.3)  # its late reply must not become the next call's
        time.sleep(1.0)
        assert call(srv.url) == "I have felt unwell for two days."
        p = ports(srv)
    assert p[0] == p[1] and p[2] != p[1]  # kept, then dropped after the timeout


def test_a_dropped_connection_is_not_kept_and_a_whole_bad_reply_does_not_drop_one():
    with fault_server("disconnect", times=1, after=1) as srv:
        call(srv.url)
        with pytest.raises(LLMError, match="closed the connection without sending a reply"):
            call(srv.url)
        call(srv.url)
        srv.set_fault("garbage_json", times=1)  # a whole HTTP reply whose JSON is bad
        with pytest.raises(LLMError):
            call(srv.url)
        call(srv.url)
        p = ports(srv)
    assert p[0] == p[1] != p[2]  # the dropped connection is replaced
    assert p[2] == p[3] == p[4]  # the HTTP exchange was whole: the connection stays
