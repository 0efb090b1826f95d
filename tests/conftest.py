from __future__ import annotations

import importlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fake_chat import FakeChat

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
AGENTCLINIC = REPO.parent / "shared" / "data" / "agentclinic" / "agentclinic_medqa.jsonl"


@pytest.fixture(autouse=True)
def _own_prompt_cache(tmp_path, monkeypatch):
    """Each test's consult and play keep their prompt cache (agents.llm.prompt_cache) in
    its own folder: nothing written to the user's cache, no test warmed by another."""
    monkeypatch.setenv("MEDSIM_PROMPT_CACHE", str(tmp_path / "prompt-cache"))


@pytest.fixture
def agentclinic_path() -> Path:
    if not AGENTCLINIC.is_file():
        pytest.skip(f"reference data not present at {AGENTCLINIC} (it lives beside the checkout, never in it)")
    return AGENTCLINIC


@pytest.fixture
def fake_openai():
    """Yields (base_url, server); server.requests records what was asked."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
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
    from agents.llm.local_model import smollm2_path

    yield from llama_model(smollm2_path, "smollm2")


def llama_model(path_of, label: str):
    """A fixture's body: the model ``path_of()`` finds, through llama.cpp, closed after;
    skipped when llama.cpp or the model is not installed, unless MEDSIM_REQUIRE_LLAMA is
    set (then it fails)."""
    from agents.llm.local_model import ModelNotInstalled

    try:
        importlib.import_module("llama_cpp")  # fails here when llama.cpp is missing
        path = path_of()
    except (ImportError, ModelNotInstalled) as e:
        if os.environ.get("MEDSIM_REQUIRE_LLAMA"):
            raise
        pytest.skip(f"llama.cpp or the {label} model is not installed: {e}")
    from agents.llm.llamacpp import LlamaCppLLM, LlamaPool

    pool = LlamaPool(n_ctx=4096, n_threads=2)
    yield LlamaCppLLM(path, pool, label=label)
    pool.close()
