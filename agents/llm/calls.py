"""The one place a role's model call happens: retries with backoff, and logging of every
call (prompt, output, tokens, latency) and every retry as events."""
from __future__ import annotations

import time
from functools import lru_cache
from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

from agents.events import EventSink, LLMCall, LLMRetry
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message, Output
from agents.textsafe import valid_unicode

__all__ = ["RetryPolicy", "generate_logged"]


@lru_cache(maxsize=64)
def _params_dict(params: GenerateParams) -> dict:
    d = asdict(params)
    d["stop"] = list(params.stop)
    return d


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3  # attempts after the first
    backoff_s: float = 1.0  # first wait; doubles each time
    max_backoff_s: float = 30.0


def _valid(out: Output) -> Output:
    """A reply made valid Unicode where it comes in: an unpaired surrogate (a server's JSON
    can spell one, ``"\\ud800"``) is U+FFFD, with a note on the call saying so; no log,
    row, report, prompt or tokenizer downstream then meets text it cannot hold."""
    text, n = valid_unicode(out.text)
    if not n:
        return out
    note = f"{n} unpaired surrogate(s) in the reply replaced by U+FFFD"
    return replace(out, text=text, note=f"{out.note}; {note}" if out.note else note)


def generate_logged(
    llm: LLM,
    messages: Sequence[Message],
    params: GenerateParams,
    ctx: CallContext,
    sink: EventSink,
    policy: RetryPolicy = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
) -> Output:
    """Call ``llm.generate``; on a transient :class:`LLMError` wait (the policy's backoff,
    or the server's Retry-After if longer, at most ``max_backoff_s``) and retry up to
    ``policy.retries`` times (each retry is an event); re-raise the last error. The
    reply's text is made valid Unicode (:func:`agents.textsafe.valid_unicode`)."""
    attempt = 0
    while True:
        try:
            out = llm.generate(messages, params, ctx)
        except LLMError as e:
            if not e.transient or attempt >= policy.retries:
                raise
            wait = policy.backoff_s * (2 ** attempt)
            if e.retry_after_s is not None:  # the server's Retry-After, never past the cap
                wait = max(wait, e.retry_after_s)
            wait = min(wait, policy.max_backoff_s)
            attempt += 1
            sink.emit(LLMRetry(role=ctx.role, turn=ctx.turn, attempt=attempt, error=str(e), backoff_s=wait))
            sleep(wait)
            continue
        out = _valid(out)
        p = _params_dict(params)
        sink.emit(LLMCall(
            role=ctx.role, turn=ctx.turn, model=out.model,
            messages=[m.to_dict() for m in messages], params=p, output=out.text,
            prompt_tokens=out.prompt_tokens, prompt_tokens_evaluated=out.prompt_tokens_evaluated,
            completion_tokens=out.completion_tokens, latency_s=round(out.latency_s, 4),
            finish_reason=out.finish_reason, note=out.note, drafted_tokens=out.drafted_tokens,
        ))
        return out
