"""Secrets kept out of what a server sends back.

A server may echo what it was sent: an error body quoting the ``Authorization`` header, a
reply repeating the request, an agent card naming its own URL. The HTTP backends
(:mod:`agents.llm.openai_compat`, :mod:`agents.llm.a2a`) pass on nothing a server said
before it is scrubbed of the API key and of the secrets in the base URL
(:func:`agents.llm.url_secrets.url_secrets`); a scrubbed secret reads ``***``.

What counts as an occurrence:

- the secret in any letter case (a server may upper-case what it quotes: ``SK-...``);
- the secret inside a JSON string literal once the literal is decoded: a structured reply
  ``{"text": "\\u0073k-..."}`` holds the key as soon as the doctor's turn is read, so each
  literal with an escape is decoded, scrubbed and written back (the raw text is scrubbed
  as well);
- in a quote that is cut to length, the secret before the cut: :func:`snippet` scrubs,
  then cuts, so no head of a secret split by the cut survives.

Short secrets (under :data:`MIN_SECRET_CHARS` characters: ``x``, ``EMPTY``, ``ollama``,
the placeholder keys local servers are given) are scrubbed from error messages only, as
written: scrubbing them out of model text, or in any case, would garble it.
"""
from __future__ import annotations

import json
import re
from typing import Iterable, Sequence

from agents.llm.base import LLMError
from agents.llm.url_secrets import REDACTED

__all__ = ["MIN_SECRET_CHARS", "SNIPPET_CHARS", "scrub", "scrub_reply", "scrubbed_error", "secrets_of", "snippet"]

MIN_SECRET_CHARS = 8  # model text is scrubbed of secrets this long or longer
SNIPPET_CHARS = 200  # characters of a server's text quoted in a message

# a JSON string literal: a quote, then characters other than a quote or a backslash, or
# an escape (a backslash and the character after it), then a quote
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def secrets_of(*groups: str | None | Iterable[str]) -> tuple[str, ...]:
    """The secrets a text is scrubbed of, each once, the longest first (one may hold
    another): ``secrets_of(key, base.secrets)``. Empty values and None are left out."""
    found: set[str] = set()
    for g in groups:
        if g is None:
            continue
        found.update([g] if isinstance(g, str) else g)
    return tuple(sorted((s for s in found if s), key=lambda s: (-len(s), s)))


def _pattern(secrets: Sequence[str]) -> re.Pattern[str] | None:
    """The long secrets, in any letter case, the longest first."""
    long = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
    return re.compile("|".join(re.escape(s) for s in long), re.IGNORECASE) if long else None


def _scrub_long(text: str, pattern: re.Pattern[str]) -> str:
    text = pattern.sub(REDACTED, text)

    def literal(m: re.Match[str]) -> str:
        raw = m.group(0)
        if "\\" not in raw:  # no escape: what it decodes to was scrubbed above
            return raw
        try:
            value = json.loads(raw, strict=False)
        except ValueError:  # not a literal a JSON reader would take: nothing decodes it
            return raw
        if not isinstance(value, str) or not pattern.search(value):
            return raw
        return json.dumps(pattern.sub(REDACTED, value), ensure_ascii=False)

    return _JSON_STRING.sub(literal, text) if "\\" in text else text


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` for an error message: every secret ``***`` (the long ones in any case and
    inside JSON string literals, the short ones as written)."""
    pattern = _pattern(secrets)
    if pattern is not None:
        text = _scrub_long(text, pattern)
    for s in secrets:
        if s and len(s) < MIN_SECRET_CHARS:
            text = text.replace(s, REDACTED)
    return text


def scrub_reply(text: str, secrets: Sequence[str]) -> str:
    """Model text without the secrets long enough to be secrets (in any case, and inside
    JSON string literals); the short ones are left, as a reply would be garbled."""
    pattern = _pattern(secrets)
    return _scrub_long(text, pattern) if pattern is not None else text


def snippet(text: str, secrets: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """A server's text quoted in a message: on one line, scrubbed, then cut to ``limit``
    characters (in that order: a secret across the cut is gone whole)."""
    return scrub(text.strip().replace("\n", " "), secrets)[:limit]


def scrubbed_error(message: str, *, backend: str, secrets: Sequence[str], transient: bool) -> LLMError:
    """An :class:`LLMError` whose message is :func:`scrub`-bed of ``secrets``."""
    return LLMError(scrub(message, secrets), backend=backend, transient=transient)
