"""The backend registry: every kind of backend spec (``--llm SPEC``, a role's ``backend``)
is one registered :class:`~agents.llm.backend_kind.BackendKind`, and everything that reads
a spec (checking it, building the backend, showing it, checking it before a run, batched
decoding, the "auto" doctor mode) asks the kind, so no other module parses a prefix.
The built-in kinds are in :mod:`agents.llm.providers`, one class each.

Adding a backend takes three steps:

1. Subclass :class:`~agents.llm.backend_kind.BackendKind`: set ``name`` (the spec is
   ``NAME``, or ``NAME:ARGUMENT`` with ``takes_argument = True``), ``help``, and what it
   can do (``constrains_json``, ``in_process``, ...); implement ``build`` (return an
   :class:`~agents.llm.base.LLM`: ``name`` and ``generate(messages, params, ctx) ->
   Output``, failures raised as :class:`~agents.llm.base.LLMError`), and ``check``
   (reject a bad argument) and ``preflight`` (ask a server once) where they apply.
2. Register it: ``register_backend(MyKind())`` (a built-in goes into
   :data:`agents.llm.providers.BUILTIN_KINDS`). ``--llm name:...`` and ``llm = "name:..."``
   in a run spec now work everywhere: bench, consult, play, osce, score.
3. Check it: ``agents.llm.conformance.check_backend("name:...")`` in a test builds it and
   calls it as medsim does (plain and with a JSON schema), and checks what it returns,
   how it fails and that it shows no secret.

``unregister_backend(name)`` takes a kind out again (a test's fixture does, so that other
tests do not see it).
"""
from __future__ import annotations

import re
import threading

from agents.llm.backend_kind import BackendKind, BackendSpecError
from agents.llm.providers import BUILTIN_KINDS
from agents.llm.url_secrets import redact_spec

__all__ = ["backend_kind", "backend_kinds", "find_backend_kind", "kinds_help", "register_backend", "shown_spec",
           "unregister_backend"]

_NAME = re.compile(r"[a-z][a-z0-9_.-]*\Z")
_lock = threading.Lock()
_kinds: dict[str, BackendKind] = {k.name: k for k in BUILTIN_KINDS}  # by name, in registration order


def register_backend(kind: BackendKind, *, replace: bool = False) -> BackendKind:
    """Register ``kind`` under its name and return it. Raises ValueError for a name that
    is not a lower-case word (letters, digits, ``_ . -``) or is taken (unless
    ``replace``), and TypeError for what is not a BackendKind."""
    if not isinstance(kind, BackendKind):
        raise TypeError(f"register_backend takes a BackendKind instance, got {type(kind).__name__}")
    if not _NAME.match(kind.name or ""):
        raise ValueError(f"a backend kind's name is a lower-case word (a-z, 0-9, _ . -), got {kind.name!r}")
    with _lock:
        if kind.name in _kinds and not replace:
            raise ValueError(f"the backend kind {kind.name!r} is registered already ({_kinds[kind.name]!r}); "
                             "unregister it first, or pass replace=True")
        _kinds[kind.name] = kind
    return kind


def unregister_backend(name: str) -> BackendKind:
    """Take the kind named ``name`` out of the registry and return it (KeyError if none)."""
    with _lock:
        return _kinds.pop(name)


def backend_kinds() -> tuple[BackendKind, ...]:
    """The registered kinds, in registration order (the built-ins first)."""
    with _lock:
        return tuple(_kinds.values())


def find_backend_kind(spec: str) -> BackendKind | None:
    """The kind of ``spec`` (``NAME`` or ``NAME:ARGUMENT``), or None."""
    with _lock:
        kind = _kinds.get(spec)
        if kind is None or kind.takes_argument:
            name, colon, _ = spec.partition(":")
            kind = _kinds.get(name) if colon else None
    return kind if kind is not None and kind.matches(spec) else None


def backend_kind(spec: str) -> BackendKind:
    """The kind of ``spec``; :class:`BackendSpecError` naming the known ones if none."""
    kind = find_backend_kind(spec)
    if kind is None:
        raise BackendSpecError(f"unknown backend '{shown_spec(spec)}' (use {kinds_help()})")
    return kind


def shown_spec(spec: str) -> str:
    """``spec`` as a message may quote it: redacted by its kind (any spec: its URL's
    secrets), at most 200 characters."""
    kind = find_backend_kind(spec)
    return (kind.redact(spec) if kind is not None else redact_spec(spec))[:200]


def kinds_help(*, long: bool = False) -> str:
    """The listed kinds as help and messages name them: ``scripted, local, ..., a2a:URL or
    human``; ``long``: one line each, ``usage: help``."""
    listed = [k for k in backend_kinds() if k.listed]
    if long:
        return "\n".join(f"{k.shown_usage()}: {k.help}" for k in listed)
    names = [k.shown_usage() for k in listed]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
