"""llama.cpp's own lines ("llama_context: n_ctx_per_seq ... will not be utilized") never
reach a user's terminal (issue 23); ``-v`` lets them through. Each check loads the small
test model in a child process, whose stderr is the terminal's."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOAD = ("import logging, sys\n"
        "if sys.argv[1] == 'debug': logging.basicConfig(level=logging.DEBUG)\n"
        "from agents.llm.local_model import smollm2_path\n"
        "from agents.llm.llamacpp import LlamaCppLLM, LlamaPool\n"
        "from agents.llm.base import Message, GenerateParams, CallContext\n"
        "p = LlamaPool(); llm = LlamaCppLLM(smollm2_path(), p)\n"
        "llm.generate([Message('user', 'Hi')], GenerateParams(max_tokens=3), CallContext('doctor', 'x', 1))\n"
        "p.close()\n")


@pytest.mark.llama
@pytest.mark.parametrize("level, shown", [("quiet", False), ("debug", True)])
def test_llama_cpp_lines_only_at_debug(smol, level, shown):
    r = subprocess.run([sys.executable, "-c", LOAD, level], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("llama_context" in r.stderr) is shown, r.stderr[-500:]
