"""The LLM protocol: ``generate(messages, params, ctx) -> Output``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

__all__ = ["Message", "GenerateParams", "Output", "CallContext", "LLM", "LLMError"]


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class GenerateParams:
    temperature: float = 0.2
    max_tokens: int = 200
    stop: tuple[str, ...] = ()
    seed: int = 0
    timeout_s: float = 120.0
    # JSON schema (as JSON text, so params stay hashable) the reply must follow; backends
    # constrain decoding to it (llama.cpp grammar, OpenAI-style response_format)
    response_schema: str | None = None


@dataclass(frozen=True)
class CallContext:
    """Who is calling: the named role and the case. Backends may use it (the scripted
    fake does; real models ignore it); every call is logged with it."""

    role: str
    case_id: str
    turn: int = 0


@dataclass(frozen=True)
class Output:
    text: str
    model: str
    prompt_tokens: int = 0
    # Prompt tokens the backend actually evaluated (the rest came from its KV cache);
    # None where the backend cannot tell.
    prompt_tokens_evaluated: int | None = None
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"


class LLMError(RuntimeError):
    """A backend failed to produce an output (dead server, timeout, bad response).

    ``transient`` errors are retried by :class:`agents.llm.wrappers.Retrying`."""

    def __init__(self, message: str, *, backend: str, transient: bool = True):
        super().__init__(f"[{backend}] {message}")
        self.backend = backend
        self.transient = transient


@runtime_checkable
class LLM(Protocol):
    name: str

    def generate(
        self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext
    ) -> Output: ...
