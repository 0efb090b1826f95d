"""Backend specs -> backends, by asking each spec's kind (:mod:`agents.llm.registry`).

Specs: ``scripted``; ``local`` (the embedded Qwen2.5-Coder-1.5B); ``smollm2`` (the small
test model); ``gguf:PATH``; ``openai:BASE_URL`` (with a model name); ``a2a:URL`` (an
external agent over the A2A protocol, :mod:`agents.llm.a2a`; a model name is ignored);
``human``; ``none``; and any kind registered with
:func:`~agents.llm.registry.register_backend`. A spec is checked
(:func:`check_backend_spec`) before anything is built or written.
"""
from __future__ import annotations

from typing import Mapping

from agents.cases.model import Case
from agents.llm.backend_kind import BackendSpecError
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaPool
from agents.llm.providers import NoModel
from agents.llm.registry import backend_kind, find_backend_kind, kinds_help
from agents.llm.url_secrets import redact_spec

__all__ = ["BackendSpecError", "NoModel", "check_backend_spec", "build_backend", "is_in_process", "decodes_batched",
           "describe_spec", "redact_backend_spec", "KINDS"]


def __getattr__(name: str) -> str:
    if name == "KINDS":  # the registered kinds as messages list them, read when asked (a kind may be added)
        return kinds_help()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_in_process(spec: str) -> bool:
    """Whether the spec's model runs in this process (llama.cpp); False for an unknown spec."""
    kind = find_backend_kind(spec)
    return kind is not None and kind.in_process


def decodes_batched(spec: str) -> bool:
    """An in-process backend whose calls can decode together (agents.llm.batched): not a
    model with an image projector (``gguf:MODEL,PROJECTOR``), which the serial path serves."""
    kind = find_backend_kind(spec)
    return kind is not None and kind.in_process and kind.decodes_batched(spec)


def describe_spec(spec: str, model: str | None) -> str:
    """The backend as logs, reports and names show it: a URL's secrets redacted."""
    kind = find_backend_kind(spec)
    return kind.describe(spec, model) if kind is not None else redact_backend_spec(spec)


def redact_backend_spec(spec: str) -> str:
    """The spec as it may be written (a run's header, a printed spec): redacted by its kind."""
    kind = find_backend_kind(spec)
    return kind.redact(spec) if kind is not None else redact_spec(spec)


def check_backend_spec(spec: str, model: str | None) -> None:
    """Raise :class:`BackendSpecError` for a spec that cannot name a backend. Checks the
    form only (a gguf file and a server are checked when the run is assembled)."""
    backend_kind(spec).check(spec, model)


def build_backend(spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool,
                  **options: str) -> LLM:
    """The backend ``spec`` names (checked first). Raises :class:`BackendSpecError` for a
    bad spec or what it names that cannot be used (a gguf: path that is no GGUF file).
    ``options``: a kind's own settings from the role's spec (a2a's ``history``)."""
    kind = backend_kind(spec)
    kind.check(spec, model)
    return kind.build(spec, model=model, cases=cases, seed=seed, pool=pool, **options)
