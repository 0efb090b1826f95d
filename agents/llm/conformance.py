"""The conformance check a backend passes before medsim relies on it: :func:`check_backend`.

It ships with the package, as PettingZoo's ``api_test`` does, so a new backend kind is
checked in one line of a test::

    from agents.llm.conformance import check_backend
    check_backend("mykind:http://127.0.0.1:8000/v1", model="m")

Given a spec (or a :class:`~agents.llm.backend_kind.BackendKind` and a spec, or a built
:class:`~agents.llm.base.LLM`), it checks:

- the kind: it answers the spec in the registry; its attributes have their types; ``check``
  takes the spec; ``describe`` is one line; ``decodes_batched`` and ``model_file`` only for
  an in-process kind; ``redact`` and ``describe`` hide a secret in a URL's query (the
  spec's own, and a probe's);
- the backend it builds: a ``name`` on one line, naming the kind, with no secret;
- two calls, as medsim makes them: plain messages, then with a JSON schema
  (``GenerateParams.response_schema``). Each returns an :class:`~agents.llm.base.Output`
  (text a str; token counts ints >= 0, evaluated prompt tokens also None and at most the
  prompt's; latency a finite float >= 0; ``model`` the backend's name; finish reason and
  note strs) or raises an :class:`~agents.llm.base.LLMError` (``transient`` a bool, no
  secret in its message), never another exception. Where the kind says it constrains
  replies to a schema (``constrains_json``), the reply to the second call is JSON that
  follows it. ``expect="error"`` (the default for a kind without a model, ``human`` and
  ``none``): every call must raise an LLMError instead (a dead server's backend is checked
  so too).

Every problem found is listed in one :class:`BackendConformanceError`.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from agents.llm.backend_kind import BackendKind, BackendSpecError
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message, Output
from agents.llm.llamacpp import LlamaPool
from agents.llm.registry import find_backend_kind
from agents.llm.url_secrets import url_secrets

__all__ = ["BackendConformanceError", "ConformanceReport", "DEFAULT_SCHEMA", "PROBE_SECRET", "check_backend",
           "schema_problems"]

# a small bounded schema (a bounded one keeps a small model's constrained JSON short and whole)
DEFAULT_SCHEMA: dict[str, Any] = {"type": "object",
                                  "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 40}},
                                  "required": ["answer"], "additionalProperties": False}
PROBE_SECRET = "conformance-probe-SECRET-8c1f"  # put in a probe URL's query: redact and describe must hide it
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")


class BackendConformanceError(AssertionError):
    """A backend that does not conform; ``problems`` lists every finding (the spec's
    secrets, and the probe's, ``***`` in them)."""

    def __init__(self, what: str, problems: Sequence[str], secrets: Sequence[str] = ()):
        hide = [*secrets, PROBE_SECRET]
        self.problems = [_hidden(p, hide) for p in problems]
        super().__init__(f"{_hidden(what, hide)} does not conform:\n" + "\n".join(f"- {p}" for p in self.problems))


@dataclass
class ConformanceReport:
    """What :func:`check_backend` checked: the backend's name, the kind's name (None for an
    LLM given built), and each call's outcome ("output" or "LLMError (transient)")."""

    backend: str
    kind: str | None
    calls: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- a small JSON schema check


_TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is_type(value: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    want = _TYPES.get(t)
    return want is not None and isinstance(value, want) and not (t != "boolean" and isinstance(value, bool))


def schema_problems(value: Any, schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``, for the keywords medsim's schemas use: ``type``,
    ``enum``, ``const``, ``anyOf``, ``properties``, ``required``,
    ``additionalProperties: false``, ``items``, ``minLength``/``maxLength``,
    ``minItems``/``maxItems``. Unknown keywords are not checked."""
    if "anyOf" in schema:
        options = [schema_problems(value, s, where) for s in schema["anyOf"]]
        if all(options):
            return [f"{where}: matches none of anyOf ({'; '.join(o[0] for o in options)})"]
    t = schema.get("type")
    if isinstance(t, str) and not _is_type(value, t):
        return [f"{where}: not of type {t}"]
    if isinstance(t, list) and not any(_is_type(value, x) for x in t):
        return [f"{where}: not of type {' or '.join(t)}"]
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of the enum")
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} is not {schema['const']!r}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            out.append(f"{where}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{where}: longer than {schema['maxLength']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            out.append(f"{where}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{where}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), Mapping):
            for i, v in enumerate(value):
                out += schema_problems(v, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{where}: no {k!r}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            out += [f"{where}: {k!r} is not allowed" for k in value if k not in props]
        for k, sub in props.items():
            if k in value:
                out += schema_problems(value[k], sub, f"{where}.{k}")
    return out


# ---------------------------------------------------------------------------- the check


def _secrets_in(spec: str) -> list[str]:
    """The secrets a spec's URLs carry (their query's keys, userinfo), long enough to look for."""
    found: list[str] = []
    for url in _URL.findall(spec):
        found += [s for s in url_secrets(url) if len(s) >= 4]
    return found


def _hidden(text: str, secrets: Sequence[str]) -> str:
    for s in sorted(secrets, key=len, reverse=True):
        text = re.sub(re.escape(s), "***", text, flags=re.IGNORECASE) if s else text
    return text


def _leaks(text: str, secrets: Sequence[str]) -> list[str]:
    return [s for s in secrets if s and s.lower() in text.lower()]


def _one_line(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\n" not in value and "\r" not in value


def _check_kind(kind: BackendKind, spec: str, model: str | None, secrets: Sequence[str], problems: list[str]) -> None:
    for attr, typ in (("name", str), ("usage", str), ("help", str), ("preflight_subject", str),
                      ("takes_argument", bool), ("listed", bool), ("in_process", bool), ("constrains_json", bool),
                      ("has_model", bool), ("seeded", bool)):
        if not isinstance(getattr(kind, attr, None), typ):
            problems.append(f"kind attribute {attr} is not a {typ.__name__}")
    if not _one_line(kind.help):
        problems.append("kind.help is not one line of text (it goes into --llm's help)")
    found = find_backend_kind(spec)
    if found is not None and found is not kind:
        problems.append(f"the registry answers {spec!r} with another kind ({found!r})")
    if not kind.matches(spec):
        problems.append(f"kind.matches({kind.redact(spec)!r}) is False")
    described = kind.describe(spec, model)
    if not _one_line(described):
        problems.append(f"describe() is not one line of text: {described!r}")
    redacted = kind.redact(spec)
    for where, text in (("describe()", described), ("redact()", redacted)):
        problems += [f"{where} shows the spec's secret {s[:3]}..." for s in _leaks(text, secrets)]
    if kind.takes_argument:  # a secret in a URL's query is never shown
        probe = f"{kind.name}:http://127.0.0.1:9/v1?api_key={PROBE_SECRET}&model=x"
        for where, text in (("redact", kind.redact(probe)), ("describe", kind.describe(probe, model))):
            if PROBE_SECRET in text:
                problems.append(f"{where}() shows the secret in a URL's query: {text!r}")
    batched = kind.decodes_batched(spec)
    if not isinstance(batched, bool):
        problems.append("decodes_batched() is not a bool")
    elif batched and not kind.in_process:
        problems.append("decodes_batched() is True for a kind that is not in process")
    path = kind.model_file(spec)
    if path is not None and (not isinstance(path, str) or not kind.in_process):
        problems.append(f"model_file() is {path!r}: a str for an in-process kind, else None")


def _check_output(out: Any, llm: Any, what: str, problems: list[str]) -> None:
    if not isinstance(out, Output):
        problems.append(f"{what}: generate returned a {type(out).__name__}, not an Output")
        return
    if not isinstance(out.text, str):
        problems.append(f"{what}: Output.text is a {type(out.text).__name__}, not a str")
    for name in ("prompt_tokens", "completion_tokens"):
        v = getattr(out, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            problems.append(f"{what}: Output.{name} is {v!r}, not an int >= 0")
    ev = out.prompt_tokens_evaluated
    if ev is not None and (not isinstance(ev, int) or isinstance(ev, bool) or ev < 0):
        problems.append(f"{what}: Output.prompt_tokens_evaluated is {ev!r}, not None or an int >= 0")
    elif isinstance(ev, int) and isinstance(out.prompt_tokens, int) and ev > out.prompt_tokens:
        problems.append(f"{what}: Output.prompt_tokens_evaluated ({ev}) is more than prompt_tokens "
                        f"({out.prompt_tokens})")
    lat = out.latency_s
    if not isinstance(lat, float) or not math.isfinite(lat) or lat < 0:
        problems.append(f"{what}: Output.latency_s is {lat!r}, not a finite float >= 0")
    if out.model != llm.name:
        problems.append(f"{what}: Output.model {out.model!r} is not the backend's name {llm.name!r}")
    if not _one_line(out.finish_reason):
        problems.append(f"{what}: Output.finish_reason {out.finish_reason!r} is not a word")
    if not isinstance(out.note, str):
        problems.append(f"{what}: Output.note is a {type(out.note).__name__}, not a str")


def _check_error(e: LLMError, what: str, secrets: Sequence[str], problems: list[str]) -> None:
    if not isinstance(e.transient, bool):
        problems.append(f"{what}: LLMError.transient is {e.transient!r}, not a bool")
    if not isinstance(e.backend, str) or not e.backend:
        problems.append(f"{what}: LLMError.backend is {e.backend!r}, not the backend's name")
    problems += [f"{what}: the error message shows a secret {s[:3]}..." for s in _leaks(str(e), secrets)]


def check_backend(backend: str | BackendKind | LLM, spec: str | None = None, *, model: str | None = None,
                  cases: Mapping[str, Any] | None = None, seed: int = 0, pool: Any = None,
                  ctx: CallContext | None = None, messages: Sequence[Message] | None = None,
                  schema: Mapping[str, Any] | None = None, expect: str | None = None, constrains: bool | None = None,
                  timeout_s: float = 30.0, max_tokens: int = 48) -> ConformanceReport:
    """Check a backend the way medsim uses it; raise :class:`BackendConformanceError`
    listing every problem found, or return what was checked.

    Args:
        backend: a spec (``"scripted"``, ``"openai:URL"``: its kind comes from the
            registry), a :class:`BackendKind` (with ``spec``; a kind without an argument
            defaults to its name), or an :class:`LLM` already built (only its calls and
            name are checked).
        spec: the spec, with a kind given as ``backend``.
        model: the role's model name (``openai:`` needs one).
        cases: the cases by id the backend is built with (the scripted fake plays from them).
        seed, pool: as a run builds backends; an in-process kind without ``pool`` gets a
            small ``LlamaPool``, closed afterwards.
        ctx, messages: the call (default: a doctor, two plain messages).
        schema: the JSON schema of the second call (default :data:`DEFAULT_SCHEMA`).
        expect: ``"output"`` (the calls must answer) or ``"error"`` (they must raise an
            LLMError); default ``"output"``, ``"error"`` for a kind without a model.
        constrains: whether the second reply must follow the schema (default: the kind's
            ``constrains_json``; False for an LLM given built).
        timeout_s, max_tokens: each call's ``GenerateParams``.

    Returns:
        A :class:`ConformanceReport`.
    """
    problems: list[str] = []
    kind: BackendKind | None = None
    if isinstance(backend, str):
        spec = backend
        kind = find_backend_kind(spec)
        if kind is None:
            raise BackendConformanceError(f"backend {spec!r}", ["no registered kind answers this spec"],
                                          _secrets_in(spec))
    elif isinstance(backend, BackendKind):
        kind = backend
        if spec is None:
            if kind.takes_argument:
                raise ValueError(f"check_backend({kind!r}) needs the spec to build, e.g. {kind.shown_usage()!r}")
            spec = kind.name
    secrets = _secrets_in(spec or "")
    what = f"backend {spec if spec is not None else getattr(backend, 'name', backend)!r}"  # secrets hidden when raised
    own_pool = None
    if kind is not None and spec is not None:
        _check_kind(kind, spec, model, secrets, problems)
        try:
            kind.check(spec, model)
        except BackendSpecError as e:
            raise BackendConformanceError(what, [*problems, f"check() refuses the spec: {e}"], secrets) from None
        if pool is None:  # nothing heavy: llama.cpp loads a model on its first call
            pool = own_pool = LlamaPool(n_ctx=2048, n_threads=2)
        try:
            llm = kind.build(spec, model=model, cases=dict(cases or {}), seed=seed, pool=pool)
        except BackendSpecError as e:
            if own_pool is not None:
                own_pool.close()
            raise BackendConformanceError(what, [*problems, f"build() fails: {e}"], secrets) from None
    else:
        llm = backend
    try:
        return _check_calls(llm, kind, what, problems, secrets, ctx=ctx, messages=messages, schema=schema,
                            expect=expect, constrains=constrains, seed=seed, timeout_s=timeout_s,
                            max_tokens=max_tokens, cases=cases)
    finally:
        if own_pool is not None:
            own_pool.close()


def _check_calls(llm: Any, kind: BackendKind | None, what: str, problems: list[str], secrets: Sequence[str], *,
                 ctx: CallContext | None, messages: Sequence[Message] | None, schema: Mapping[str, Any] | None,
                 expect: str | None, constrains: bool | None, seed: int, timeout_s: float, max_tokens: int,
                 cases: Mapping[str, Any] | None) -> ConformanceReport:
    if not isinstance(llm, LLM):
        raise BackendConformanceError(what, [*problems, f"{type(llm).__name__} has no name and generate(): not an LLM"],
                                      secrets)
    name = getattr(llm, "name", None)
    if not _one_line(name):
        problems.append(f"the backend's name {name!r} is not one line of text")
    else:
        problems += [f"the backend's name shows a secret {s[:3]}..." for s in _leaks(name, secrets)]
        if kind is not None and not name.startswith(kind.name):
            problems.append(f"the backend's name {name!r} does not name its kind {kind.name!r}")
    expect = expect or ("error" if kind is not None and not kind.has_model else "output")
    if expect not in ("output", "error"):
        raise ValueError(f"expect is 'output' or 'error', got {expect!r}")
    constrains = (kind.constrains_json if kind is not None else False) if constrains is None else constrains
    schema = DEFAULT_SCHEMA if schema is None else schema
    ctx = ctx or CallContext("doctor", next(iter(cases or {}), "conformance"))
    messages = list(messages or [Message("system", "You are a helpful assistant. Answer in a few words."),
                                 Message("user", "Say hello, and name one colour.")])
    report = ConformanceReport(backend=name if isinstance(name, str) else repr(name),
                               kind=kind.name if kind is not None else None)
    plain = GenerateParams(temperature=0.0, max_tokens=max_tokens, seed=seed, timeout_s=timeout_s)
    shaped = GenerateParams(temperature=0.0, max_tokens=max_tokens, seed=seed, timeout_s=timeout_s,
                            response_schema=json.dumps(schema))
    for label, params in (("plain call", plain), ("JSON-schema call", shaped)):
        try:
            out = llm.generate(messages, params, ctx)
        except LLMError as e:
            report.calls.append(f"LLMError ({'transient' if e.transient else 'not transient'})")
            _check_error(e, label, secrets, problems)
            if expect == "output":
                problems.append(f"{label}: raised {e}")
            continue
        except Exception as e:  # noqa: BLE001 - the check's point: anything but an LLMError is a finding
            report.calls.append(f"{type(e).__name__}")
            problems.append(f"{label}: raised {type(e).__name__} ({e}), not an LLMError")
            continue
        report.calls.append("output")
        if expect == "error":
            problems.append(f"{label}: returned an Output where an LLMError was expected")
        _check_output(out, llm, label, problems)
        if isinstance(out, Output) and isinstance(out.text, str):
            problems += [f"{label}: the reply shows a secret {s[:3]}..." for s in _leaks(out.text, secrets)]
            if constrains and params.response_schema:
                try:
                    value = json.loads(out.text, strict=False)
                except ValueError:
                    problems.append(f"{label}: the kind constrains replies to a schema, and this is not JSON: "
                                    f"{out.text[:120]!r}")
                else:
                    problems += [f"{label}: {p}" for p in schema_problems(value, schema)]
    if problems:
        raise BackendConformanceError(what, problems, secrets)
    return report
