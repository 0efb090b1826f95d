"""Backend specs -> backends, one per role.

Specs: ``scripted``; ``local`` (the embedded Qwen2.5-Coder-1.5B); ``smollm2`` (the small
test model); ``gguf:PATH``; ``openai:BASE_URL`` (with a model name).
"""
from __future__ import annotations

from typing import Mapping

from agents.cases.model import Case
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import EMBEDDED, embedded_model_path, smollm2_path
from agents.llm.openai_compat import OpenAICompatLLM
from agents.llm.scripted import ScriptedLLM

__all__ = ["BackendSpecError", "build_backend", "build_role_backends", "is_in_process", "describe_spec"]


class BackendSpecError(ValueError):
    pass


def is_in_process(spec: str) -> bool:
    return spec in ("local", "smollm2") or spec.startswith("gguf:")


def describe_spec(spec: str, model: str | None) -> str:
    if spec.startswith("openai:"):
        return f"{spec}#{model}"
    if spec == "local":
        return f"local:{EMBEDDED.name}"
    return spec


def build_backend(spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
    if spec == "scripted":
        return ScriptedLLM(cases, seed=seed)
    if spec == "local":
        return LlamaCppLLM(embedded_model_path(), pool, label=f"local:{EMBEDDED.name}")
    if spec == "smollm2":
        return LlamaCppLLM(smollm2_path(), pool, label="smollm2-135m-instruct")
    if spec.startswith("gguf:"):
        path = spec[len("gguf:"):]
        if not path:
            raise BackendSpecError("gguf: needs a path, e.g. gguf:models/my.gguf")
        return LlamaCppLLM(path, pool)
    if spec.startswith("openai:"):
        base = spec[len("openai:"):]
        if not base.startswith(("http://", "https://")):
            raise BackendSpecError(f"openai: needs a base URL like openai:http://localhost:8000/v1, got '{spec}'")
        if not model:
            raise BackendSpecError("openai: backends need --model NAME")
        return OpenAICompatLLM(base, model)
    raise BackendSpecError(f"unknown backend spec '{spec}' (use scripted, local, smollm2, gguf:PATH or openai:URL)")


def build_role_backends(specs: Mapping[str, str], *, model: str | None, cases: Mapping[str, Case],
                        seed: int, pool: LlamaPool) -> dict[str, LLM]:
    """One backend per distinct spec, shared by the roles that name it."""
    built: dict[str, LLM] = {}
    out: dict[str, LLM] = {}
    for role, spec in specs.items():
        if spec not in built:
            built[spec] = build_backend(spec, model=model, cases=cases, seed=seed, pool=pool)
        out[role] = built[spec]
    return out
