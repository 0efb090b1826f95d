"""The secrets of this process, scrubbed by every writer as the last line of defence.

The HTTP backends keep a server's key and the secrets in its URL out of what they pass on
(:mod:`agents.llm.scrub`). What reaches a file anyway (a model that repeats a key it was
shown, a case that holds one) is scrubbed where it is written: the event log, the results
rows and CSV, report.md, report.html and the transcript pages, compare's files. The secrets
are the API keys in the environment (``MEDSIM_API_KEY``, ``OPENAI_API_KEY``) and each
secret a backend's URL holds (:func:`add_secrets`, called as the URL is parsed).
"""
from __future__ import annotations

import os
import threading

from agents.llm.scrub import MIN_SECRET_CHARS, scrub_reply, secrets_of

__all__ = ["KEY_ENV", "add_secrets", "known_secrets", "scrub_secrets"]

KEY_ENV = ("MEDSIM_API_KEY", "OPENAI_API_KEY")
_lock = threading.Lock()
_added: set[str] = set()


def add_secrets(*secrets: str) -> None:
    """Remember secrets (a URL's key) for the writers to scrub."""
    with _lock:
        _added.update(s for s in secrets if s and len(s) >= MIN_SECRET_CHARS)


def known_secrets() -> tuple[str, ...]:
    """The long secrets of the process: the environment's keys and those added."""
    env = [v for v in (os.environ.get(k) for k in KEY_ENV) if v and len(v) >= MIN_SECRET_CHARS]
    with _lock:
        return secrets_of(env, _added)


def scrub_secrets(text: str) -> str:
    """``text`` with every known secret (any letter case, inside decoded JSON strings too)
    replaced by ``***``; as it is when the process has none."""
    secrets = known_secrets()
    return scrub_reply(text, secrets) if secrets and text else text
