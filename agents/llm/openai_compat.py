"""Any OpenAI-compatible chat completions server (vLLM, llama.cpp server, Ollama,
hosted APIs), over :mod:`agents.llm.transport` (httpcore underneath). The API key comes from an environment
variable (``MEDSIM_API_KEY``, else ``OPENAI_API_KEY``) and is never logged: it goes into
the Authorization header only, and every error message is scrubbed of it (a server may
echo it back). A key a server wants in the base URL's query string (``?api_key=``,
``?key=``, ``?sig=`` ...) is sent as given and shown nowhere: the backend's name and
every message carry the URL redacted (:func:`agents.llm.url_secrets.redact_url`), and
text the server sends back is scrubbed of those values as of the key
(:mod:`agents.llm.scrub`: in any letter case, inside JSON string literals, before a quote
is cut).

The transport is :mod:`agents.llm.transport`: ``GenerateParams.timeout_s`` is a deadline
for the whole call (connect, TLS, send, status line, headers, body), not for each socket
read; proxies come from the environment; connections are kept alive in one pool per
server, as bench workers call the same server turn after turn.

:func:`check_server` asks ``GET {base_url}/models`` once before a run, so that a dead
server, a refused key or a wrong model name is reported once instead of per case.

A reply's size is capped twice, for servers that ignore ``max_tokens``: the body read
from the socket stops at :func:`body_limit` bytes (a transient transport error), and the
text is cut to :func:`text_limit` characters (``finish_reason`` "length", with a note in
the call's event). Every transport fault and malformed reply (cut-short or non-UTF-8
body, bad status line, closed connection, not JSON, no message, content that is not
text) is a transient :class:`LLMError`, retried by the caller's policy. Missing or
invalid ``usage`` leaves the text standing: the counts are 0 and the note says why.
"""
from __future__ import annotations

import json
import time
from typing import Any, Sequence

from agents.llm.base import chat_message, CallContext, GenerateParams, LLMError, Message, Output
from agents.llm.scrub import scrub_reply, scrubbed_error, secrets_of, snippet
from agents.llm.transport import (BaseURL, TransportFailure, auth_headers, body_limit, body_text,
                                  close_kept_connections, http_error, post_text, request, seconds_text, text_limit)

# body_limit, text_limit and close_kept_connections are the transport's (agents.llm.transport), named here too
__all__ = ["API_KEY_ENV", "OpenAICompatLLM", "body_limit", "check_server", "close_kept_connections", "text_limit"]

API_KEY_ENV: tuple[str, ...] = ("MEDSIM_API_KEY", "OPENAI_API_KEY")

_NO_MODEL_LISTING = frozenset({404, 405, 501})


# ---------------------------------------------------------------------------- reply parsing


def _count(value: Any) -> int | None:
    """A token count, or None where the server sent something that is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _usage(payload: dict) -> tuple[int, int | None, int, str]:
    """(prompt tokens, prompt tokens evaluated or None, completion tokens, a note on what
    was wrong with them or ""); bad usage counts as missing. The reply's text stands:
    the counts are bookkeeping, and retrying a good reply for them would waste it."""
    usage = payload.get("usage")
    if usage is None:
        return 0, None, 0, "the server sent no token usage (counted as 0)"
    if not isinstance(usage, dict):
        return 0, None, 0, "the server's token usage is not an object (counted as 0)"
    pt = _count(usage.get("prompt_tokens"))
    ct = _count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    evaluated = max(0, pt - cached) if pt is not None and cached is not None else None
    bad = [k for k, v in (("prompt_tokens", pt), ("completion_tokens", ct)) if v is None]
    note = f"the server's {' and '.join(bad)} is not a token count (counted as 0)" if bad else ""
    return pt or 0, evaluated, ct or 0, note


# ---------------------------------------------------------------------------- the backend


class OpenAICompatLLM:
    def __init__(self, base_url: str, model: str, *, api_key_env: tuple[str, ...] = API_KEY_ENV):
        if not model:
            raise ValueError("an OpenAI-compatible backend needs a model name (--model NAME)")
        self._base = BaseURL.parse(base_url)  # refuses credentials without repeating them
        self.base_url = self._base.shown  # what names and messages show: a query's key redacted
        self.model = model
        self.name = f"openai:{self.base_url}#{model}"
        self._key_env = api_key_env

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [chat_message(m) for m in messages],  # images as content parts
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)[:4]
        if params.response_schema:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": json.loads(params.response_schema), "strict": True}}
        auth, key = auth_headers(self._key_env, self.name)
        secrets = secrets_of(key, self._base.secrets)
        headers = {"Content-Type": "application/json", "Accept": "application/json", **auth}
        url = self.base_url
        t0 = time.perf_counter()
        reply, text = post_text(self._base, "/chat/completions", json.dumps(body).encode(), headers,
                                timeout_s=params.timeout_s, max_body=body_limit(params.max_tokens), url=url,
                                backend=self.name, secrets=secrets)
        latency = time.perf_counter() - t0
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as e:
            raise scrubbed_error(f"response from {url} is not JSON ({e.msg} at character {e.pos}): "
                                 f"{snippet(text, secrets)}", backend=self.name, secrets=secrets,
                                 transient=True) from None
        except (ValueError, RecursionError) as e:  # a number of over 4300 digits; nesting too deep
            raise scrubbed_error(f"response from {url} is JSON that cannot be read ({type(e).__name__})",
                                 backend=self.name, secrets=secrets, transient=True) from None
        choice = None
        if isinstance(payload, dict) and isinstance(payload.get("choices"), list) and payload["choices"]:
            choice = payload["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise scrubbed_error(f"unexpected response shape from {url} (no choices[0].message): "
                                 f"{snippet(text, secrets)}", backend=self.name, secrets=secrets, transient=True)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise scrubbed_error(f"unexpected response shape from {url}: choices[0].message.content is a "
                                 f"{type(content).__name__}, not text", backend=self.name, secrets=secrets,
                                 transient=True)
        pt, evaluated, ct, usage_note = _usage(payload)
        notes = [usage_note] if usage_note else []
        finish = choice.get("finish_reason")
        finish = scrub_reply(finish, secrets)[:40] if isinstance(finish, str) and finish else "stop"
        text = scrub_reply(content or "", secrets)
        if content is None:
            notes.append("the server sent no text (content null)")
        cap = text_limit(params.max_tokens)
        if len(text) > cap:
            notes.append(f"reply truncated: {len(text)} characters, more than the {cap} that max_tokens="
                         f"{params.max_tokens} allows (the server ignores max_tokens?)")
            text, finish = text[:cap], "length"
        return Output(
            text=text, model=self.name, prompt_tokens=pt, prompt_tokens_evaluated=evaluated,
            completion_tokens=ct, latency_s=latency, finish_reason=finish, note="; ".join(notes),
        )


def check_server(base_url: str, model: str, *, timeout_s: float = 10.0,
                 api_key_env: tuple[str, ...] = API_KEY_ENV) -> list[str] | None:
    """Ask ``GET {base_url}/models`` once, before a run.

    Returns the served model ids when the server lists them and ``model`` is among them;
    None when the server answered but keeps no listing (404, 405, 501, an empty list or a
    reply that is not an OpenAI-style list). Raises a non-transient :class:`LLMError`
    when the server cannot be reached (refused, DNS, TLS, ``timeout_s`` passed), refuses
    the API key (401, 403) or lists models without ``model``. An Ollama-style
    ``name:latest`` counts as serving ``name``."""
    try:
        base = BaseURL.parse(base_url)
    except ValueError as e:
        raise LLMError(str(e), backend="openai", transient=False) from None
    url = base.shown
    backend = f"openai:{url}"
    auth, key = auth_headers(api_key_env, backend)
    secrets = secrets_of(key, base.secrets)
    try:
        reply = request(base, "GET", "/models", body=None, headers={"Accept": "application/json", **auth},
                        timeout_s=timeout_s)
    except TransportFailure as f:
        reason = f"no reply within {seconds_text(timeout_s)} s" if f.kind == "timeout" else f.reason
        verb = "cannot reach" if f.kind != "transport" else "bad reply from"
        raise scrubbed_error(f"{verb} {url}: {reason}", backend=backend, secrets=secrets, transient=False) from None
    names = " or ".join(api_key_env)
    if reply.status in (401, 403):
        if key is None:
            msg = f"{url} wants an API key (HTTP {reply.status}) and none is set: put it in {names}"
        else:
            msg = f"{url} refused the API key (HTTP {reply.status}): check the key in {names}"
        raise scrubbed_error(msg, backend=backend, secrets=secrets, transient=False)
    if reply.status in _NO_MODEL_LISTING:
        return None
    if reply.status != 200:
        raise http_error(reply, url, backend=backend, secrets=secrets)
    text = body_text(reply)
    try:
        payload = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):  # not JSON, a number too long, nesting too deep
        return None
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    ids = [d["id"] for d in data if isinstance(d, dict) and isinstance(d.get("id"), str)]
    if not ids:
        return None
    if model in ids or f"{model}:latest" in ids:
        return ids
    more = f" (and {len(ids) - 10} more)" if len(ids) > 10 else ""
    raise scrubbed_error(f"{url} does not serve model '{model}'; it serves: {', '.join(ids[:10])}{more}",
                         backend=backend, secrets=secrets, transient=False)
