"""A tiny OpenAI-compatible server for tests and benchmarks: plays each role from its
system prompt (the test suite's ``fake_openai`` fixture and benchmarks/scale.py use it)."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

__all__ = ["FakeChat"]


class FakeChat(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible server: plays each role from the system prompt."""

    delay_s = 0.0

    def log_message(self, *args):  # silence
        pass

    def do_POST(self):  # noqa: N802
        import time

        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n))
        self.server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        # images come as content parts: read their text (the request is kept as it came)
        msgs = [dict(m, content=" ".join(p.get("text", "") for p in m["content"] if p.get("type") == "text"))
                if isinstance(m["content"], list) else m for m in body["messages"]]
        system = msgs[0]["content"]
        turns = sum(1 for m in msgs if m["role"] == "assistant")
        if system.startswith("You are Dr."):
            text = ["What brings you in?", "How long has it lasted?", "REQUEST TEST: Chest X-Ray",
                    "DIAGNOSIS READY: Pneumonia"][min(turns, 3)]
        elif "measurement technician" in system:
            text = "RESULTS: normal readings"
        elif "senior physician" in system:
            text = "No."
        elif "radiologist" in system:
            text = "An image with a finding."
        else:
            text = "I have felt unwell for two days."
        prompt_tokens = sum(len(m["content"].split()) for m in msgs)
        payload = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                             "prompt_tokens_details": {"cached_tokens": 0}}}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
