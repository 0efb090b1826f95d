"""A fault-injecting OpenAI-compatible server for tests, bound to 127.0.0.1 only.

``FaultServer`` answers ``GET /models`` with a listing of the model ``fake`` and
``POST /chat/completions`` by playing each role from the system prompt (as the
``fake_openai`` fixture does), unless a fault is set: ``server.fault = "short_body"``
makes chat replies go wrong in that way (all of them, or ``times`` of them after the
first ``after`` normal ones: ``server.set_fault(fault, times=, after=)``), then it
answers normally again. ``server.raw_reply = (status, body bytes, headers)`` answers
every chat request with exactly that (the fuzz test's mode). Every request is recorded in
``server.requests``, with the client's port (``port``: one per TCP connection). The
server speaks HTTP/1.1 and keeps connections open, unless ``server.hang_up = True``: it
then closes each connection after its reply without saying so (as a server whose idle
timeout has passed). Faults (see :data:`FAULTS`):

transport: ``short_body`` (Content-Length larger than the body, then close),
``non_utf8``, ``bad_status_line``, ``disconnect`` (close without a byte), ``slow``
(``server.delay_s`` before a normal reply), ``huge_body`` (``server.huge_bytes`` of
JSON padding, with a Content-Length), ``huge_stream`` (the same without one: read until
the server closes);
HTTP: ``429`` and ``500`` (with ``Retry-After: server.retry_after``), ``key_in_error``
(a 401 whose body quotes the Authorization header);
reply shape: ``garbage_json``, ``content_null``, ``content_list``, ``content_int``,
``usage_missing``, ``usage_nonint``, ``usage_negative``, ``huge_content`` (a reply of
``server.huge_bytes`` characters, max_tokens ignored), ``key_echo`` (the reply's text
quotes the Authorization header and the request line).
"""
from __future__ import annotations

import json
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from agents.patient_voice import given_facts, nothing_given

__all__ = ["FAULTS", "FaultServer", "fault_server", "role_reply"]

FAULTS = ("short_body", "non_utf8", "bad_status_line", "disconnect", "slow", "huge_body", "huge_stream", "429", "500",
          "key_in_error", "garbage_json", "content_null", "content_list", "content_int", "usage_missing",
          "usage_nonint", "usage_negative", "huge_content", "key_echo")


def role_reply(messages: list[dict[str, Any]]) -> str:
    """What the fake plays for the role whose system prompt opens ``messages``."""
    msgs = [dict(m, content=" ".join(p.get("text", "") for p in m["content"] if p.get("type") == "text"))
            if isinstance(m.get("content"), list) else m for m in messages]
    system = str(msgs[0].get("content", "")) if msgs else ""
    turns = sum(1 for m in msgs if m.get("role") == "assistant")
    if system.startswith("You are Dr."):
        return ["What brings you in?", "How long has it lasted?", "REQUEST TEST: Chest X-Ray",
                "DIAGNOSIS READY: Pneumonia"][min(turns, 3)]
    if "measurement technician" in system:
        return "RESULTS: normal readings"
    if "senior physician" in system:
        return "No."
    if "radiologist" in system:
        return "An image with a finding."
    last = str(msgs[-1].get("content", "")) if msgs else ""
    if given_facts(last):  # a grounded patient: say the first fact given
        return given_facts(last)[0]
    if nothing_given(last):
        return "I haven't noticed that."
    return "I have felt unwell for two days."


def _payload(text: Any, usage: Any = "default") -> dict[str, Any]:
    d: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    if usage == "default":
        usage = {"prompt_tokens": 10, "completion_tokens": 3}
    if usage is not None:
        d["usage"] = usage
    return d


class _Handler(BaseHTTPRequestHandler):
    server: "FaultServer"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a kept-alive reply's body would wait ~40 ms for a delayed ACK

    def log_message(self, *args: Any) -> None:  # silence
        pass

    def _raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.server.requests.append({"method": "GET", "path": self.path, "auth": self.headers.get("Authorization"),
                                     "body": None, "port": self.client_address[1]})
        if self.path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake"}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        auth = self.headers.get("Authorization") or ""
        self.server.requests.append({"method": "POST", "path": self.path, "auth": auth or None, "body": body,
                                     "port": self.client_address[1]})
        s = self.server
        if s.hang_up:
            self.close_connection = True  # after this reply, with no "Connection: close" said
        if s.raw_reply is not None:
            status, data, headers = s.raw_reply
            self._json(status, data, headers)
            return
        fault = s.take_fault()
        text = role_reply(body.get("messages", []) if isinstance(body, dict) else [])
        if fault is None:
            self._json(200, _payload(text))
        elif fault == "slow":
            time.sleep(s.delay_s)
            self._json(200, _payload(text))
        elif fault == "short_body":
            data = json.dumps(_payload(text)).encode()
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n%s" % (len(data) + 500, data[: len(data) // 2]))
        elif fault == "non_utf8":
            self._json(200, b'{"choices": [{"message": {"content": "\xff\xfe\xfa"}}]}')
        elif fault == "bad_status_line":
            self._raw(b"GARBAGE NOT HTTP\r\n\r\n")
        elif fault == "disconnect":
            self.close_connection = True
        elif fault == "huge_body":
            pad = b" " * s.huge_bytes
            self._json(200, b'{"pad": "' + pad + b'", "choices": [{"message": {"content": "x"}}]}')
        elif fault == "huge_stream":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                             b'{"pad": "')
            block = b" " * 65536
            try:
                for _ in range(s.huge_bytes // len(block) + 1):
                    self.wfile.write(block)
                self._raw(b'", "choices": [{"message": {"content": "x"}}]}')
            except OSError:  # the client stopped reading: what a capped client does
                self.close_connection = True
        elif fault in ("429", "500"):
            self._json(int(fault), {"error": {"message": "try later"}}, {"Retry-After": str(s.retry_after)})
        elif fault == "key_in_error":
            self._json(401, {"error": f"bad key: {auth}"})
        elif fault == "garbage_json":
            self._json(200, b'{"choices": [{"message": ')
        elif fault == "content_null":
            self._json(200, _payload(None))
        elif fault == "content_list":
            self._json(200, _payload([{"type": "text", "text": text}]))
        elif fault == "content_int":
            self._json(200, _payload(42))
        elif fault == "usage_missing":
            self._json(200, _payload(text, usage=None))
        elif fault == "usage_nonint":
            self._json(200, _payload(text, usage={"prompt_tokens": "many", "completion_tokens": 1.5}))
        elif fault == "usage_negative":
            self._json(200, _payload(text, usage={"prompt_tokens": -5, "completion_tokens": -1}))
        elif fault == "huge_content":
            self._json(200, _payload(text + " " + "word " * (s.huge_bytes // 5)))
        elif fault == "key_echo":
            self._json(200, _payload(f"{text} (you sent {auth} to {self.path})"))
        else:  # pragma: no cover - a typo in a test
            self._json(500, {"error": f"unknown fault {fault}"})


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.fault: str | None = None
        self.fault_times: int | None = None  # None: every chat request; N: the next N, then normal replies
        self.fault_after = 0  # normal chat replies before the fault starts
        self.raw_reply: tuple[int, bytes, dict[str, str]] | None = None
        self.delay_s = 0.5
        self.retry_after = 0
        self.huge_bytes = 1_000_000
        self.hang_up = False
        self._lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply (a capped or timed-out read) is expected here."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def set_fault(self, fault: str | None, times: int | None = None, after: int = 0) -> None:
        assert fault is None or fault in FAULTS, fault
        with self._lock:
            self.fault, self.fault_times, self.fault_after = fault, times, after

    def take_fault(self) -> str | None:
        with self._lock:
            if self.fault is None:
                return None
            if self.fault_after > 0:
                self.fault_after -= 1
                return None
            if self.fault_times is None:
                return self.fault
            if self.fault_times <= 0:
                return None
            self.fault_times -= 1
            return self.fault

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]


@contextmanager
def serving(server: Any, poll_interval: float = 0.5) -> Iterator[Any]:
    """``server`` (a socketserver) answering in a daemon thread; shut down and closed on exit."""
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def fault_server(fault: str | None = None, times: int | None = None, after: int = 0) -> Iterator[FaultServer]:
    server = FaultServer()
    server.set_fault(fault, times, after)
    with serving(server):
        yield server
