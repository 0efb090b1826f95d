"""The LLM protocol: ``generate(messages, params, ctx) -> Output``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

__all__ = ["Message", "GenerateParams", "Output", "CallContext", "LLM", "LLMError", "chat_message", "text_message"]


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str
    images: tuple[str, ...] = ()  # image files (or URLs) shown with the text, for backends that can

    def to_dict(self) -> dict:
        d = {"role": self.role, "content": self.content}
        if self.images:
            d["images"] = list(self.images)
        return d


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
    # the kind of question, where a role asks two with different system prompts (the judge's
    # grading and its fidelity checks): a backend that keeps a conversation's cache per role
    # keeps one per slot, so neither evicts the other; empty: the role's own
    slot: str = ""


@dataclass(frozen=True)
class Output:
    text: str
    model: str
    prompt_tokens: int = 0
    # Prompt tokens the backend actually evaluated (the rest came from its KV cache);
    # None where the backend cannot tell.
    prompt_tokens_evaluated: int | None = None
    completion_tokens: int = 0
    # Completion tokens that came from a kept draft (jump-forward decoding: several tokens
    # in one llama_decode) rather than one decode each; None where the backend cannot tell.
    drafted_tokens: int | None = None
    latency_s: float = 0.0
    finish_reason: str = "stop"
    note: str = ""  # what the backend could not do (e.g. images it cannot send: the text went alone)


class LLMError(RuntimeError):
    """A backend failed to produce an output (dead server, timeout, bad response).

    ``transient`` errors are retried by :func:`agents.llm.calls.generate_logged`, waiting
    at least ``retry_after_s`` where the server asked for it (HTTP Retry-After)."""

    def __init__(self, message: str, *, backend: str, transient: bool = True, retry_after_s: float | None = None):
        super().__init__(f"[{backend}] {message}")
        self.backend = backend
        self.transient = transient
        self.retry_after_s = retry_after_s


@runtime_checkable
class LLM(Protocol):
    name: str

    def generate(
        self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext
    ) -> Output: ...


_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}


def text_message(m: Message) -> dict:
    """A chat message as text alone (for backends that cannot show images)."""
    return {"role": m.role, "content": m.content}


def chat_message(m: Message) -> dict:
    """A chat message in the OpenAI content-parts form: text, then each image as an
    ``image_url`` (a local file as a base64 data URI, a URL as it is). A file is read by
    :func:`agents.image_file.read_image_bytes` (a regular file, size-capped, timed)."""
    if not m.images:
        return text_message(m)
    import base64
    from pathlib import Path

    from agents.image_file import read_image_bytes

    parts: list[dict] = [{"type": "text", "text": m.content}]
    for img in m.images:
        if img.startswith(("http://", "https://", "data:")):
            url = img
        else:
            p = Path(img)
            mime = _MIME.get(p.suffix.lower(), "application/octet-stream")
            url = f"data:{mime};base64,{base64.b64encode(read_image_bytes(p)).decode('ascii')}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": m.role, "content": parts}
