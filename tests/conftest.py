from __future__ import annotations

import importlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
AGENTCLINIC = REPO.parent / "shared" / "data" / "agentclinic" / "agentclinic_medqa.jsonl"


@pytest.fixture
def agentclinic_path() -> Path:
    if not AGENTCLINIC.is_file():
        pytest.skip(f"reference data not present at {AGENTCLINIC} (it lives beside the checkout, never in it)")
    return AGENTCLINIC


class _FakeChat(BaseHTTPRequestHandler):
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


@pytest.fixture
def fake_openai():
    """Yields (base_url, server); server.requests records what was asked."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeChat)
    server.requests = []
    server.delay_s = 0.0
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def smol():
    """SmolLM2-135M-Instruct through llama.cpp (the real in-process path). `make test`
    sets MEDSIM_REQUIRE_LLAMA=1 so a missing install fails instead of skipping."""
    from agents.llm.local_model import ModelNotInstalled, smollm2_path

    try:
        importlib.import_module("llama_cpp")  # fails here when llama.cpp is missing
        path = smollm2_path()
    except (ImportError, ModelNotInstalled) as e:
        if os.environ.get("MEDSIM_REQUIRE_LLAMA"):
            raise
        pytest.skip(f"llama.cpp test model not installed: {e}")
    from agents.llm.llamacpp import LlamaCppLLM, LlamaPool

    pool = LlamaPool(n_ctx=4096, n_threads=2)
    yield LlamaCppLLM(path, pool, label="smollm2")
    pool.close()
