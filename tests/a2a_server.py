"""A fake A2A agent for tests, bound to 127.0.0.1 only (port 0: the system picks one).

``GET /.well-known/agent-card.json`` serves its card (``card_mode``: "current", "legacy"
for the older ``/.well-known/agent.json`` only, "none", "garbage"). ``POST /`` takes
JSON-RPC 2.0: ``message/send`` answers by ``mode``:

- "message": a Message; "task": a completed Task with the reply as an artifact;
  "task_status": a completed Task with the reply in its status message only;
- "working": a Task in state "working", which ``tasks/get`` reports as working ``polls``
  times, then completed (``polls=-1``: never completes);
- "input_required": a Task in state "input-required" (the reply in its status message);
- "no_context": a Message without a contextId (a stateless agent).

The reply is the next of ``lines`` in the message's context (a new context for a message
without a contextId). ``fail(fault, times=1)`` makes the next ``times`` message/send
calls go wrong instead: "rpc_error" (JSON-RPC -32603, internal error), "rpc_fatal"
(-32602, invalid params), "garbage" (a 200 whose body is not JSON), "http500",
"failed" (a Task in state "failed", its status message ``fail_text``), "not_a_result" (a result that is neither),
"key_echo" (a reply quoting the request's Authorization header), "huge" (a reply of
``huge`` characters). ``streaming`` (see ``_stream``) makes the card advertise streaming
and ``message/stream`` answer with server-sent events. Every request is kept in ``requests``; the texts each context
received in ``contexts``.
"""
from __future__ import annotations

import json
import threading
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from tests.fault_server import serving

__all__ = ["A2AAgent", "DOCTOR_LINES", "a2a_agent"]

DOCTOR_LINES = (
    "Good morning. I would like to talk with you about the operation we recommend, and hear what matters to you.",
    "That is a fair worry. Most people go home within a few days, and we watch closely for any complication.",
    "Without treatment the problem may come back, which is why I think the operation is the safer path for you.",
    "We can also talk through the alternatives, their chances of success and what recovery would ask of you.",
    "Take the time you need; I can arrange for you to meet the surgeon and a nurse who cares for these patients.",
    "Whatever you decide, we will support you, and you can come back to me with any question at any time.",
)


class A2AAgent(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.contexts: dict[str, list[str]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.mode = "message"
        self.polls = 2
        self.card_mode = "current"
        self.lines: tuple[str, ...] = DOCTOR_LINES
        self.huge = 100_000
        self.fail_text = "the model crashed"
        self._faults: list[str] = []
        self.streaming: str | None = None  # the card advertises streaming; message/stream answers by this

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def fail(self, fault: str, times: int = 1) -> None:
        with self.lock:
            self._faults += [fault] * times

    def sent(self) -> list[dict[str, Any]]:
        """The messages of every message/send, in order."""
        return [r["body"]["params"]["message"] for r in self.requests
                if r["method"] == "POST" and isinstance(r["body"], dict) and r["body"].get("method") == "message/send"]

    def card(self) -> dict[str, Any]:
        return {"name": "Fake A2A Doctor", "description": "a doctor for medsim's tests", "url": self.url,
                "version": "1.2.3", "protocolVersion": "0.3.0", "capabilities": {"streaming": bool(self.streaming)},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "consult", "name": "consult", "description": "talks with patients", "tags": []}]}

    def reply_for(self, context: str, text: str) -> str:
        with self.lock:
            got = self.contexts.setdefault(context, [])
            got.append(text)
            n = len(got) - 1
        line = self.lines[n % len(self.lines)]
        return line if n < len(self.lines) else f"{line} (Point {n + 1}.)"


class _Handler(BaseHTTPRequestHandler):
    server: A2AAgent

    def log_message(self, *args: Any) -> None:  # silence
        pass

    def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, doc: Any) -> None:
        self._send(200, json.dumps(doc).encode())

    def do_GET(self) -> None:  # noqa: N802
        s = self.server
        with s.lock:
            s.requests.append({"method": "GET", "path": self.path, "auth": self.headers.get("Authorization"),
                               "body": None})
        path = self.path.split("?")[0]
        wanted = {"current": "/.well-known/agent-card.json", "legacy": "/.well-known/agent.json"}.get(s.card_mode)
        if s.card_mode == "garbage" and path == "/.well-known/agent-card.json":
            self._send(200, b"<html>hello</html>", "text/html")
        elif wanted is not None and path == wanted:
            self._json(s.card())
        else:
            self._send(404, b'{"detail": "not found"}')

    def do_POST(self) -> None:  # noqa: N802
        s = self.server
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        auth = self.headers.get("Authorization")
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with s.lock:
            s.requests.append({"method": "POST", "path": self.path, "auth": auth, "body": body})
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            self._json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}})
            return
        rid, method, params = body.get("id"), body.get("method"), body.get("params") or {}
        if method == "tasks/get":
            self._json({"jsonrpc": "2.0", "id": rid, "result": self._poll(params.get("id"))})
            return
        if method == "message/stream" and s.streaming:
            self._stream(rid, params["message"])
            return
        if method != "message/send":
            self._json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
            return
        with s.lock:
            fault = s._faults.pop(0) if s._faults else None
        if fault == "rpc_error":
            self._json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "internal error, try again"}})
            return
        if fault == "rpc_fatal":
            self._json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "invalid params: no"}})
            return
        if fault == "garbage":
            self._send(200, b"<html>this is not JSON</html>", "text/html")
            return
        if fault == "http500":
            self._send(500, b"boom")
            return
        if fault == "not_a_result":
            self._json({"jsonrpc": "2.0", "id": rid, "result": [1, 2, 3]})
            return
        msg = params["message"]
        context = msg.get("contextId") or str(uuid.uuid4())
        text = " ".join(p.get("text", "") for p in msg.get("parts", []) if p.get("kind") == "text")
        reply = s.reply_for(context, text)
        if fault == "key_echo":
            reply = f"Your header was {auth} and this is my answer."
        elif fault == "huge":
            reply = "x" * s.huge
        parts = [{"kind": "text", "text": reply}]
        task_id = str(uuid.uuid4())
        if fault == "failed":
            result: dict[str, Any] = {"kind": "task", "id": task_id, "contextId": context, "status": {
                "state": "failed", "message": {"kind": "message", "role": "agent", "messageId": "m",
                                               "parts": [{"kind": "text", "text": s.fail_text}]}}}
        elif s.mode in ("message", "no_context"):
            result = {"kind": "message", "role": "agent", "messageId": str(uuid.uuid4()), "parts": parts}
            if s.mode == "message":
                result["contextId"] = context
        elif s.mode == "task":
            result = {"kind": "task", "id": task_id, "contextId": context, "status": {"state": "completed"},
                      "artifacts": [{"artifactId": "a1", "parts": parts}]}
        elif s.mode in ("task_status", "input_required"):
            state = "completed" if s.mode == "task_status" else "input-required"
            result = {"kind": "task", "id": task_id, "contextId": context, "status": {
                "state": state, "message": {"kind": "message", "role": "agent", "messageId": "m", "parts": parts}}}
        else:  # working
            with s.lock:
                s.tasks[task_id] = {"polls_left": s.polls, "context": context, "parts": parts}
            result = {"kind": "task", "id": task_id, "contextId": context, "status": {"state": "working"}}
        self._json({"jsonrpc": "2.0", "id": rid, "result": result})

    def _stream(self, rid: Any, msg: dict[str, Any]) -> None:
        """message/stream as server-sent events, written a few bytes at a time (an event
        is split across reads). ``streaming``: "chunks" (a task, then the reply as
        artifact chunks with append, then completed and final, the stream left open 3 s), "forever" (working
        status events that never end), "huge" (chunks without end), "cut" (working, then
        the stream closes: the task is polled), "error" (a JSON-RPC error event)."""
        s = self.server
        context = msg.get("contextId") or str(uuid.uuid4())
        text = " ".join(p.get("text", "") for p in msg.get("parts", []) if p.get("kind") == "text")
        reply = s.reply_for(context, text)
        task_id = str(uuid.uuid4())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(result: Any, *, error: Any = None) -> None:
            doc = {"jsonrpc": "2.0", "id": rid, **({"error": error} if error else {"result": result})}
            data = f"event: message\ndata: {json.dumps(doc)}\n\n".encode()
            for i in range(0, len(data), 5):
                self.wfile.write(data[i:i + 5])
                self.wfile.flush()

        status = {"kind": "status-update", "taskId": task_id, "contextId": context, "final": False,
                  "status": {"state": "working"}}
        event({"kind": "task", "id": task_id, "contextId": context, "status": {"state": "submitted"}})
        try:
            if s.streaming == "error":
                event(None, error={"code": -32603, "message": "the stream broke"})
            elif s.streaming == "cut":
                with s.lock:
                    s.tasks[task_id] = {"polls_left": 1, "context": context, "parts": [{"kind": "text", "text": reply}]}
                event(status)
            elif s.streaming == "forever":
                while True:
                    event(status)
                    threading.Event().wait(0.05)
            else:
                pieces = [reply[i:i + 4] for i in range(0, len(reply), 4)] if s.streaming == "chunks" else None
                n = 0
                while pieces is None or n < len(pieces):
                    part = pieces[n] if pieces is not None else "x" * 1000
                    event({"kind": "artifact-update", "taskId": task_id, "contextId": context, "append": n > 0,
                           "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": part}]}})
                    n += 1
                event({**status, "final": True, "status": {"state": "completed"}})
                threading.Event().wait(3)  # the stream stays open after the answer: a client reads up to it
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading

    def _poll(self, task_id: Any) -> dict[str, Any]:
        s = self.server
        with s.lock:
            t = s.tasks.get(task_id)
            if t is None:
                return {"kind": "task", "id": str(task_id), "status": {"state": "unknown"}}
            if t["polls_left"] != 0:
                t["polls_left"] -= 1 if t["polls_left"] > 0 else 0
                return {"kind": "task", "id": task_id, "contextId": t["context"], "status": {"state": "working"}}
        return {"kind": "task", "id": task_id, "contextId": t["context"], "status": {"state": "completed"},
                "artifacts": [{"artifactId": "a1", "parts": t["parts"]}]}


@contextmanager
def a2a_agent() -> Iterator[A2AAgent]:
    """A running fake agent; shut down on exit."""
    with serving(A2AAgent(), poll_interval=0.05) as server:
        yield server
