"""A backend kind: what one form of backend spec (``--llm SPEC``, a role's ``backend``) means.

A kind is a subclass of :class:`BackendKind` that sets its class attributes and
implements :meth:`~BackendKind.build` (and :meth:`~BackendKind.check` where its spec has an
argument to check). :mod:`agents.llm.registry` holds the registered kinds; the built-in
ones are in :mod:`agents.llm.providers`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from agents.llm.base import LLM
from agents.llm.url_secrets import redact_spec

if TYPE_CHECKING:  # for annotations only: building a backend needs no llama.cpp import
    from agents.cases.model import Case
    from agents.llm.llamacpp import LlamaPool

__all__ = ["BackendKind", "BackendSpecError"]


class BackendSpecError(ValueError):
    """A backend spec that names no backend, or a backend that cannot be built from it (a
    model file that is missing or not a model). The message never repeats a URL's secret."""


class BackendKind:
    """One kind of backend: the specs ``NAME`` (or ``NAME:ARGUMENT`` where
    ``takes_argument``), how they are checked, built, shown and checked before a run.

    Class attributes, set by a subclass:

    - ``name``: the kind's name, the spec's prefix (``"openai"`` for ``openai:URL``).
    - ``takes_argument``: the spec is ``NAME:ARGUMENT``; else exactly ``NAME``.
    - ``usage``: how help and messages write the spec (``"gguf:PATH"``); default the name,
      or ``NAME:ARG``.
    - ``help``: one sentence for ``--llm``'s help and the docs.
    - ``listed``: shown in the list of kinds that help and error messages give.
    - ``in_process``: the model runs in this process (llama.cpp): the run's ``LlamaPool``
      serves it and batched decoding may apply (:meth:`decodes_batched`).
    - ``constrains_json``: :meth:`~agents.llm.base.LLM.generate` holds a reply to
      ``GenerateParams.response_schema``; the "auto" doctor mode is ``structured`` for a
      doctor whose kind can, ``markers`` for one whose kind cannot.
    - ``has_model``: False for a role a person plays or nobody plays (``human``, ``none``):
      every call is an :class:`~agents.llm.base.LLMError`.
    - ``seeded``: the backend built depends on the run's seed (one is built per seed).
    - ``preflight_subject``: what :meth:`preflight` asks (``"server"``, ``"agent"``), for the
      message when it fails.
    """

    name: ClassVar[str] = ""
    takes_argument: ClassVar[bool] = False
    usage: ClassVar[str] = ""
    help: ClassVar[str] = ""
    listed: ClassVar[bool] = True
    in_process: ClassVar[bool] = False
    constrains_json: ClassVar[bool] = False
    has_model: ClassVar[bool] = True
    seeded: ClassVar[bool] = False
    preflight_subject: ClassVar[str] = "backend"

    # -- the spec ---------------------------------------------------------------------
    def shown_usage(self) -> str:
        """``usage``, or the name (``NAME:ARG`` for a kind that takes an argument)."""
        return self.usage or (f"{self.name}:ARG" if self.takes_argument else self.name)

    def matches(self, spec: str) -> bool:
        """Whether ``spec`` is one of this kind's: ``NAME``, or ``NAME:...``."""
        if self.takes_argument:
            return spec.startswith(self.name + ":")
        return spec == self.name

    def argument(self, spec: str) -> str:
        """What follows ``NAME:`` (``""`` for a kind without an argument)."""
        return spec[len(self.name) + 1:] if self.takes_argument else ""

    def check(self, spec: str, model: str | None) -> None:
        """Raise :class:`BackendSpecError` where ``spec`` (with the role's ``model`` name)
        cannot name a backend of this kind. The form only: files and servers are looked
        at when the backend is built or checked before the run. The message must never
        repeat a secret (use :meth:`redact`)."""

    def build(self, spec: str, *, model: str | None, cases: Mapping[str, "Case"], seed: int,
              pool: "LlamaPool") -> LLM:
        """The backend (called only with a spec :meth:`check` accepted). ``cases``: the
        run's cases by id (the scripted fake plays from them); ``pool``: the run's llama.cpp
        pool (in-process kinds load their model there, on the first call). Raise
        :class:`BackendSpecError` for what the spec names but cannot be used (a missing
        file); build nothing heavy here: a model loads on its first call."""
        raise NotImplementedError(f"the backend kind {self.name!r} does not say how to build its backend")

    # -- how it is shown ----------------------------------------------------------------
    def redact(self, spec: str) -> str:
        """``spec`` as it may be shown or written: every secret in it ``***``. Default:
        the argument read as a URL, its query's secrets and userinfo redacted
        (:func:`agents.llm.url_secrets.redact_spec`)."""
        return redact_spec(spec)

    def describe(self, spec: str, model: str | None) -> str:
        """The backend as logs, reports and run names show it (redacted). Default:
        :meth:`redact`."""
        return self.redact(spec)

    # -- the run ------------------------------------------------------------------------
    def preflight(self, spec: str, model: str | None, *, timeout_s: float, llm: Any = None) -> None:
        """Ask the backend once, before a run, whether it is there (a server, an agent);
        raise a non-transient :class:`~agents.llm.base.LLMError` naming what is wrong.
        ``llm``: the run's backend of this spec, if built (an agent keeps its card).
        Default: nothing to ask."""

    def sees_images(self, spec: str) -> bool:
        """Whether a model of this spec is shown the images sent with a message (a vision
        model); a reader of images must be one."""
        return False

    def decodes_batched(self, spec: str) -> bool:
        """Whether concurrent calls to this backend can decode together in one llama.cpp
        context (:mod:`agents.llm.batched`). Default: no."""
        return False

    def model_file(self, spec: str) -> str | None:
        """The resolved model file an in-process backend loads (the key its batched
        contexts are shaped by), or None: not in process, or not installed (the build says
        so). Default: None."""
        return None

    def __repr__(self) -> str:
        return f"<backend kind {self.shown_usage()}>"
