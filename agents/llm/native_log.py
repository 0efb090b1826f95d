"""llama.cpp's own log lines (its C code writes to the process's stderr)."""
from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import Any

__all__ = ["quiet_native"]


def quiet_native() -> Any:
    """Hold llama.cpp's own stderr lines (``llama_context: n_ctx_per_seq ... will not be
    utilized``) while a model or context is made; ``-v`` (debug logging) lets them through.
    Loading failures still raise, with their message."""
    if logging.getLogger("agents.llm").isEnabledFor(logging.DEBUG):
        return nullcontext()
    from llama_cpp._utils import suppress_stdout_stderr

    return suppress_stdout_stderr(disable=False)
