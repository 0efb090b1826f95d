"""Backend specs -> backends.

Specs: ``scripted``; ``local`` (the embedded Qwen2.5-Coder-1.5B); ``smollm2`` (the small
test model); ``gguf:PATH``; ``openai:BASE_URL`` (with a model name); ``a2a:URL`` (an
external agent over the A2A protocol, :mod:`agents.llm.a2a`; a model name is ignored). A
spec is checked (:func:`check_backend_spec`) before anything is built or written.
"""
from __future__ import annotations

from typing import Mapping
from urllib.parse import urlsplit

from agents.cases.model import Case
from agents.llm.a2a import A2ALLM, parse_agent_url
from agents.llm.base import LLM, LLMError
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import EMBEDDED, embedded_model_path, smollm2_path
from agents.llm.openai_compat import OpenAICompatLLM
from agents.llm.scripted import ScriptedLLM
from agents.llm.url_secrets import redact_spec

__all__ = ["BackendSpecError", "NoModel", "check_backend_spec", "build_backend", "is_in_process", "describe_spec", "KINDS"]

KINDS = "scripted, local, smollm2, gguf:PATH, openai:URL, a2a:URL or human"


class BackendSpecError(ValueError):
    pass


class NoModel:
    """The backend of a role a person plays: it has no model, and a call is a bug."""

    def __init__(self, name: str = "human"):
        self.name = name

    def generate(self, messages, params, ctx):  # type: ignore[no-untyped-def]
        raise LLMError(f"the {ctx.role} role is played by a person and has no model", backend=self.name,
                       transient=False)


def is_in_process(spec: str) -> bool:
    return spec in ("local", "smollm2") or spec.startswith("gguf:")


def decodes_batched(spec: str) -> bool:
    """An in-process backend whose calls can decode together (agents.llm.batched): not a
    model with an image projector (``gguf:MODEL,PROJECTOR``), which the serial path serves."""
    return is_in_process(spec) and "," not in spec


def describe_spec(spec: str, model: str | None) -> str:
    """The backend as logs, reports and names show it: a URL's secrets redacted."""
    if spec.startswith("openai:"):
        return f"{redact_spec(spec)}#{model}"
    if spec.startswith("a2a:"):  # an agent has no model name: its card's name is recorded when it is checked
        return redact_spec(spec)
    if spec == "local":
        return f"local:{EMBEDDED.name}"
    return spec


def check_backend_spec(spec: str, model: str | None) -> None:
    """Raise :class:`BackendSpecError` for a spec that cannot name a backend. Checks the
    form only (a gguf file's existence and a server's liveness are checked when the run
    is assembled)."""
    if spec in ("scripted", "local", "smollm2", "human", "none"):
        return
    if spec.startswith("gguf:") and "," in spec:  # a multimodal model and its projector
        model, _, proj = spec[len("gguf:"):].partition(",")
        if not model.strip() or not proj.strip():
            raise BackendSpecError("gguf:MODEL,PROJECTOR needs both files")
        return
    if spec.startswith("gguf:"):
        if not spec[len("gguf:"):].strip():
            raise BackendSpecError("gguf: needs a path, e.g. gguf:models/my.gguf")
        return
    if spec.startswith("openai:"):
        base = spec[len("openai:"):]
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendSpecError(f"openai: needs a base URL like openai:http://localhost:8000/v1, got '{_safe(spec)}'")
        if parts.username or parts.password:
            raise BackendSpecError("openai: the URL holds credentials; put the key in MEDSIM_API_KEY instead")
        if not model:
            raise BackendSpecError(f"'{_safe(spec)}' needs a model name (--model NAME, or the role's model)")
        return
    if spec.startswith("a2a:"):  # the agent's URL (a model name, inherited from --model, is ignored)
        try:
            parse_agent_url(spec[len("a2a:"):])
        except ValueError as e:
            raise BackendSpecError(str(e)) from None
        return
    raise BackendSpecError(f"unknown backend '{_safe(spec)}' (use {KINDS})")


def _safe(spec: str) -> str:
    """A spec for messages: never echo credentials in a URL (a key in its query string
    is redacted)."""
    try:
        parts = urlsplit(spec.split(":", 1)[1]) if spec.startswith(("openai:", "a2a:")) else None
    except ValueError:
        parts = None
    if parts and (parts.username or parts.password):
        return spec.split(":", 1)[0] + ":<url with credentials>"
    return redact_spec(spec)[:200]


def build_backend(spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
    check_backend_spec(spec, model)
    if spec == "scripted":
        return ScriptedLLM(cases, seed=seed)
    if spec == "human":
        return NoModel()
    if spec == "none":
        return NoModel("none")
    if spec == "local":
        return LlamaCppLLM(embedded_model_path(), pool, label=f"local:{EMBEDDED.name}")
    if spec == "smollm2":
        return LlamaCppLLM(smollm2_path(), pool, label="smollm2-135m-instruct")
    if spec.startswith("gguf:") and "," in spec:
        model, _, proj = spec[len("gguf:"):].partition(",")
        return LlamaCppLLM(model.strip(), pool, projector=proj.strip())
    if spec.startswith("gguf:"):
        return LlamaCppLLM(spec[len("gguf:"):], pool)
    if spec.startswith("a2a:"):
        return A2ALLM(spec[len("a2a:"):])
    assert spec.startswith("openai:") and model
    return OpenAICompatLLM(spec[len("openai:"):], model)
