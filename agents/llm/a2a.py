"""An external agent over the A2A protocol (Agent2Agent: JSON-RPC 2.0 over HTTP) as a
role's backend: ``a2a:URL`` brings your own doctor the way OSCE-Project's leaderboard
talks to one.

Two protocol versions are spoken (:class:`Dialect`): **1.0** (a2a-sdk 1.x: methods
``SendMessage``, ``GetTask``, ``SendStreamingMessage``, an ``A2A-Version: 1.0`` header,
results wrapped as ``{"message": ...}`` / ``{"task": ...}``, parts without ``kind``,
enum names such as ``TASK_STATE_COMPLETED``) and **0.3** (``message/send``,
``tasks/get``, ``message/stream``). The preflight (:func:`check_agent`) reads the card's
interfaces (1.0's ``supportedInterfaces``; 0.3's ``url``, ``preferredTransport``,
``protocolVersion`` and ``additionalInterfaces``) and picks the newest JSON-RPC
interface medsim speaks; a card that offers only gRPC, HTTP+JSON (REST) or another
protocol version is refused before the run, naming what it offers. A backend used
without a preflight reads the card on its first call (no card: 0.3, as before cards
named versions); its name stays the one the run recorded.

Each call POSTs to the URL as given (never to the URL the agent's card names, never
after a redirect). The result is a Message (its text parts are the reply) or a Task:
``completed`` or ``input-required`` gives the text of its artifacts (the text parts of
one artifact concatenated, as the chunks of a streamed artifact are pieces of one text;
separate artifacts on separate lines), else of its status message; ``submitted`` or
``working`` is polled until it ends or the call's deadline (``GenerateParams.timeout_s``,
for the whole call) passes; ``failed``, ``rejected``, ``canceled`` and ``auth-required``
are errors. Where the card advertises streaming the call is the streaming method and
its server-sent events are read as they arrive (:class:`_StreamView`: task snapshots,
status updates, artifact chunks with ``append``) up to the event that answers, within
the same deadline and byte cap; a stream that closes before it answers is polled. A
JSON-RPC error is an :class:`LLMError` naming its code and message (internal and server
errors are transient: the role's RetryPolicy retries them).

An agent keeps its own conversation per ``contextId``, while medsim's participants send
the whole chat each call. So the backend keeps, per (role, case) of the
:class:`CallContext`, the conversations it has had: what the caller had sent up to the
agent's last reply, and the contextId the agent gave. A call whose messages extend one
of them sends only what is new, with that contextId; a call that asks the last message
again (a guard's correction: ``message`` + ``\\n(correction)``) sends only the
correction, in the same context; anything else starts a new context whose first message
carries the system prompt between ``[INSTRUCTIONS]`` / ``[END OF INSTRUCTIONS]`` lines
and any earlier turns as a ``[CONVERSATION SO FAR]`` block. An agent that returns no
contextId is sent the whole conversation every time, and so is every agent of a role
whose spec says ``history = "full"`` (an agent that keeps no history per context, as
OSCE-Project's doctor: each call a new context with the instructions and the dialogue). Two encounters whose
conversations are the same so far may swap contexts: they have shown the agent the same
messages.

Transport is the one the OpenAI backend uses too (:mod:`agents.llm.transport`): a
whole-call deadline, a cap on the bytes read (:func:`body_limit`) and on the text kept
(:func:`text_limit`, ``finish_reason`` "length"), transport faults and malformed replies
transient, proxies from the environment. The key comes from ``MEDSIM_API_KEY`` only and
goes in an ``Authorization: Bearer`` header; every message, and the reply text, is
scrubbed of it and of any secret in the URL (:mod:`agents.llm.scrub`), and the URL is
shown redacted. Reply text is otherwise kept as the agent sent it (the shells
escape control characters when they show it, as for any model's text); nothing the
agent returns is executed or used as a path.

:func:`check_agent` fetches the agent card (``/.well-known/agent-card.json``, else the
older ``/.well-known/agent.json``; under the URL's path, then at its root) once before a
run; :meth:`A2ALLM.check` also keeps it, so the backend's name (what each call's event
and the run's ``models`` record) becomes ``a2a:URL#NAME@VERSION``.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output
# the hardened transport and scrubbing the OpenAI backend uses too
from agents.llm.scrub import SNIPPET_CHARS, scrub, scrub_reply, scrubbed_error, secrets_of, snippet
from agents.llm.transport import (BaseURL, Reply, TransportFailure, auth_headers, body_limit, body_text, http_error,
                                  post_text, request, seconds_text, text_limit)
from agents.llm.url_secrets import redact_url
from agents.textsafe import printable

__all__ = ["A2A_KEY_ENV", "A2ALLM", "AgentCard", "CARD_PATHS", "Dialect", "HISTORIES", "HISTORY_CLOSE",
           "HISTORY_OPEN", "INSTRUCTIONS_CLOSE", "INSTRUCTIONS_OPEN", "check_agent", "parse_agent_url"]

A2A_KEY_ENV: tuple[str, ...] = ("MEDSIM_API_KEY",)
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")  # the current name, then the older one

INSTRUCTIONS_OPEN = "[INSTRUCTIONS]"
INSTRUCTIONS_CLOSE = "[END OF INSTRUCTIONS]"
HISTORY_OPEN = "[CONVERSATION SO FAR]"
HISTORY_CLOSE = "[END OF CONVERSATION SO FAR]"

_CARD_BYTES = 1 << 20
_ID_CHARS = 200  # a contextId or task id longer than this is not sent back
_LABEL_CHARS = 60  # of an agent's name and version, in names and reports
_POLL_FIRST_S, _POLL_MAX_S = 0.05, 1.0
_PER_KEY = 8  # conversations kept per (role, case)
_KEYS = 512  # (role, case) pairs kept
_WAITING = frozenset({"submitted", "working"})
_ANSWERED = frozenset({"completed", "input-required"})
# task states that end a call with an error, and whether a retry may help
_FAILED = {"failed": True, "unknown": True, "rejected": False, "canceled": False, "auth-required": False}
# JSON-RPC codes a retry may cure: internal error, and the implementation-defined server error
_TRANSIENT_CODES = frozenset({-32603, -32000})
HISTORIES = ("agent", "full")  # who keeps the conversation: the agent (per contextId), or no one (send it all)


# ---------------------------------------------------------------------------- the URL and the card


def parse_agent_url(url: str) -> BaseURL:
    """The agent's URL, its path kept as given (a JSON-RPC route may need its trailing
    slash). Raises ValueError with a message that never repeats a secret."""
    given = url.strip()
    try:
        parts = urlsplit(given)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        raise ValueError(f"a2a: the agent's URL cannot be read (a bad port or address?): "
                         f"'a2a:{redact_url(given)[:200]}'") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError("a2a: the URL holds credentials; put the key in MEDSIM_API_KEY instead")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"a2a: needs the agent's URL, like a2a:http://127.0.0.1:9999/, got "
                         f"'a2a:{redact_url(given)[:200]}'")
    base = BaseURL.parse(given)
    return replace(base, path=parts.path, shown=redact_url(given))


def _label(value: Any, secrets: Sequence[str] = ()) -> str:
    """Text from the agent for names and reports: scrubbed, then on one line, escaped, cut
    short (scrubbed first: a secret across the cut is gone whole)."""
    return printable(scrub(str(value), secrets), single_line=True).strip()[:_LABEL_CHARS]


def _quote(value: str, secrets: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """The agent's text quoted in a message: scrubbed, then escaped on one line and cut."""
    return printable(scrub(value, secrets), single_line=True)[:limit]


@dataclass(frozen=True)
class Dialect:
    """How one protocol version of A2A's JSON-RPC binding is spoken: its method names,
    the header that names the version, and the shapes of what is sent and returned."""

    version: str  # "1.0" or "0.3"
    send: str
    get: str
    stream: str
    headers: tuple[tuple[str, str], ...] = ()

    def message(self, text: str, *, context_id: str | None, task_id: str | None) -> dict[str, Any]:
        """A user message carrying ``text`` (1.0: no ``kind``, protobuf enum names)."""
        msg: dict[str, Any] = ({"role": "ROLE_USER", "parts": [{"text": text}]} if self.version == "1.0"
                               else {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}]})
        msg["messageId"] = str(uuid.uuid4())
        if context_id:
            msg["contextId"] = context_id
        if task_id:
            msg["taskId"] = task_id
        return msg


V1_0 = Dialect("1.0", "SendMessage", "GetTask", "SendStreamingMessage", (("A2A-Version", "1.0"),))
V0_3 = Dialect("0.3", "message/send", "tasks/get", "message/stream")


def _dialect_of(version: str) -> Dialect | None:
    """1.x -> 1.0; 0.3.x -> 0.3; anything else: not spoken."""
    parts = version.strip().lstrip("vV").split(".")
    if parts[0] == "1":
        return V1_0
    if parts[0] == "0" and len(parts) > 1 and parts[1] == "3":
        return V0_3
    return None


@dataclass(frozen=True)
class AgentCard:
    """What an agent's card says about it (shown text: escaped, cut short, scrubbed)."""

    name: str
    version: str
    url: str  # the endpoint the card names (redacted); medsim posts to the URL it was given
    protocol_version: str  # as the card gives it for the interface medsim speaks to ("1.0", "0.3.0")
    card_path: str  # where the card was found
    interfaces: tuple[str, ...] = ()  # what the card offers, "BINDING VERSION" each
    streaming: bool = False  # the card advertises streamed replies (SSE)

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name

    @property
    def dialect(self) -> Dialect:
        """How medsim speaks to it (a card from before versions were named: 0.3)."""
        return _dialect_of(self.protocol_version) or V0_3


def _card_targets(base: BaseURL) -> list[str]:
    path = base.path.rstrip("/")
    out = [path + p for p in CARD_PATHS]
    if path:
        out += list(CARD_PATHS)
    return list(dict.fromkeys(out))


class _Unspeakable(LLMError):
    """A card that offers nothing medsim speaks (not: no card at all)."""


def _read_card(reply: Reply, where: str, *, backend: str, secrets: Sequence[str], target: str) -> AgentCard:
    text = body_text(reply)
    try:
        card = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        card = None
    if not isinstance(card, dict):
        raise scrubbed_error(f"{where} is not an A2A agent card (not a JSON object)", backend=backend, secrets=secrets,
                             transient=False)
    name = card.get("name")
    if not isinstance(name, str) or not name.strip():
        raise scrubbed_error(f"{where} is not an A2A agent card (no name)", backend=backend, secrets=secrets,
                             transient=False)
    if "capabilities" in card and not isinstance(card["capabilities"], dict):
        raise scrubbed_error(f"{where} is not an A2A agent card (capabilities is not an object)", backend=backend,
                             secrets=secrets, transient=False)

    def field_(key: str) -> str:
        v = card.get(key)
        return _label(v, secrets) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else ""

    offered = _interfaces(card)
    speakable = [(b, v, u) for b, v, u in offered if b.upper() == "JSONRPC" and _dialect_of(v) is not None]
    shown = tuple(dict.fromkeys(f"{_label(b, secrets) or '?'} {_label(v, secrets) or '?'}" for b, v, _ in offered))
    if not speakable:
        raise _Unspeakable(scrub(f"{where}: the agent offers {', '.join(shown) or 'no interface'}; medsim's a2a "
                                 f"backend speaks JSON-RPC with protocol 1.0 or 0.3 (not gRPC, not HTTP+JSON/REST)",
                                 secrets), backend=backend, transient=False)
    # the newest version it serves; the endpoint stays the URL medsim was given
    binding, version, url = min(speakable, key=lambda x: 0 if _dialect_of(x[1]) is V1_0 else 1)
    caps = card.get("capabilities")
    return AgentCard(name=_label(name, secrets), version=field_("version"),
                     url=scrub(redact_url(url), secrets)[:200] if url else "",
                     protocol_version=_label(version, secrets),
                     card_path=target, interfaces=shown,
                     streaming=isinstance(caps, dict) and caps.get("streaming") is True)


def _interfaces(card: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(binding, protocol version, URL) of each interface the card offers: protocol 1.0's
    ``supportedInterfaces``, else 0.3's ``url`` with ``preferredTransport`` and
    ``protocolVersion`` and its ``additionalInterfaces``. A card that names neither (an
    agent from before either) is taken as JSON-RPC 0.3, as medsim always spoke to it."""
    out: list[tuple[str, str, str]] = []
    listed = card.get("supportedInterfaces")
    for i in listed if isinstance(listed, list) else []:
        if isinstance(i, dict):
            out.append((_text(i.get("protocolBinding")) or "JSONRPC", _text(i.get("protocolVersion")) or "0.3",
                        _text(i.get("url"))))
    if out:
        return out
    version = _text(card.get("protocolVersion")) or "0.3"
    if "url" in card or "preferredTransport" in card or "protocolVersion" in card or not listed:
        out.append((_text(card.get("preferredTransport")) or "JSONRPC", version, _text(card.get("url"))))
    more = card.get("additionalInterfaces")
    for i in more if isinstance(more, list) else []:
        if isinstance(i, dict):
            out.append((_text(i.get("transport")) or "JSONRPC", version, _text(i.get("url"))))
    return out


def _text(v: Any) -> str:
    return v.strip() if isinstance(v, str) else ""


def check_agent(url: str, *, timeout_s: float = 10.0, api_key_env: tuple[str, ...] = A2A_KEY_ENV) -> AgentCard:
    """Fetch the agent's card once, before a run. Raises a non-transient
    :class:`LLMError` when the agent cannot be reached, refuses the key (401, 403),
    serves no card at any of :data:`CARD_PATHS` or serves something that is not one."""
    try:
        base = parse_agent_url(url)
    except ValueError as e:
        raise LLMError(str(e), backend="a2a", transient=False) from None
    backend = f"a2a:{base.shown}"
    auth, key = auth_headers(api_key_env, backend)
    secrets = secrets_of(key, base.secrets)
    deadline = time.monotonic() + timeout_s
    tried: list[str] = []
    for target in _card_targets(base):
        where = redact_url(replace(base, path=target).url + (f"?{base.query}" if base.query else ""))
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TransportFailure("timeout", "deadline passed")
            reply = request(replace(base, path=target), "GET", "", body=None,
                            headers={"Accept": "application/json", **auth}, timeout_s=left, max_body=_CARD_BYTES)
        except TransportFailure as f:
            reason = f"no reply within {seconds_text(timeout_s)} s" if f.kind == "timeout" else f.reason
            verb = "cannot reach" if f.kind != "transport" else "bad reply from"
            raise scrubbed_error(f"{verb} {where}: {reason}", backend=backend, secrets=secrets,
                                 transient=False) from None
        if reply.status in (401, 403):
            names = " or ".join(api_key_env)
            msg = (f"{where} wants an API key (HTTP {reply.status}) and none is set: put it in {names}" if key is None
                   else f"{where} refused the API key (HTTP {reply.status}): check the key in {names}")
            raise scrubbed_error(msg, backend=backend, secrets=secrets, transient=False)
        if reply.status in (404, 405, 410):
            tried.append(where)
            continue
        if reply.status != 200:
            err = http_error(reply, where, backend=backend, secrets=secrets)
            err.transient = False
            raise err
        return _read_card(reply, where, backend=backend, secrets=secrets, target=target)
    raise scrubbed_error(f"no A2A agent card at {' or '.join(tried)} (HTTP 404): is {base.shown} an A2A agent?",
                         backend=backend, secrets=secrets, transient=False)


# ---------------------------------------------------------------------------- conversations


def _key(m: Message) -> tuple[str, str]:
    """A message as compared between calls: a committed reply is the draft stripped."""
    return (m.role, m.content.strip() if m.role == "assistant" else m.content)


@dataclass
class _Conversation:
    context_id: str | None = None
    task_id: str | None = None  # an input-required task the next message continues
    known: tuple[tuple[str, str], ...] = ()  # the caller's messages up to and with the agent's last reply
    busy: bool = False


def _correction(before: str, now: str) -> str:
    """What a re-asked message adds to the one the agent answered: ``message`` then
    ``message\\n(correction)`` -> the correction; a message whose first lines it saw ->
    the rest; else the message again."""
    if now.startswith(before) and now[len(before):].strip():
        return now[len(before):].strip()
    common = ""
    for a, b in zip(before, now):
        if a != b:
            break
        common += a
    cut = common.rfind("\n") + 1
    return now[cut:].strip() if cut > 0 and now[cut:].strip() else now


def _follow_up(known: Sequence[tuple[str, str]], msgs: Sequence[Message]) -> str | None:
    """The text that continues a conversation the agent has seen as ``known``, or None
    where ``msgs`` is not a continuation of it."""
    keys = [_key(m) for m in msgs]
    n = len(known)
    if n and len(keys) > n and tuple(keys[:n]) == tuple(known):
        new = list(msgs[n:])
        if new[-1].role == "assistant":
            return None
        return _render(new, system=None)
    # the last message asked again (a guard's correction): the same conversation before it
    if (n >= 2 and known[-1][0] == "assistant" and known[-2][0] == "user" and keys and keys[-1][0] == "user"
            and tuple(keys[:-1]) == tuple(known[:-2])):
        return _correction(known[-2][1], msgs[-1].content)
    return None


def _render(msgs: Sequence[Message], *, system: str | None) -> str:
    """One A2A message's text: the instructions (a new context's first message), the
    turns before the last run of non-reply messages as a transcript, then those."""
    i = len(msgs)
    while i > 0 and msgs[i - 1].role != "assistant":
        i -= 1
    earlier, new = msgs[:i], msgs[i:]
    parts = [f"{INSTRUCTIONS_OPEN}\n{system}\n{INSTRUCTIONS_CLOSE}"] if system else []
    if earlier:
        who = {"assistant": "You", "system": "Instructions"}
        lines = "\n\n".join(f"{who.get(m.role, 'User')}: {m.content}" for m in earlier)
        parts.append(f"{HISTORY_OPEN}\n{lines}\n{HISTORY_CLOSE}")
    parts += [m.content for m in new]
    return "\n\n".join(parts)


def _first(msgs: Sequence[Message]) -> str:
    """A new context's first message: the system prompt delimited, then the rest."""
    if msgs and msgs[0].role == "system":
        return _render(msgs[1:], system=msgs[0].content)
    return _render(msgs, system=None)


# ---------------------------------------------------------------------------- replies


@dataclass
class _Result:
    text: str
    context_id: str | None
    task_id: str | None
    state: str | None  # None: a Message
    texts: int = 0  # text parts read
    others: int = 0  # parts that are not text (files, data), left out


def _state(raw: str) -> str:
    """A task state in 0.3's spelling, also from 1.0's protobuf one (TASK_STATE_INPUT_REQUIRED)."""
    return raw.strip().lower().removeprefix("task_state_").replace("_", "-")


def _ident(v: Any) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= _ID_CHARS and v.isprintable() else None


def _parts_text(parts: Any, r: _Result) -> list[str]:
    out: list[str] = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            r.others += 1
            continue
        kind = p.get("kind", p.get("type"))  # "type": the protocol's earlier name; 1.0 has none
        if kind in ("text", None) and isinstance(p.get("text"), str):
            out.append(p["text"])
            r.texts += 1
        else:
            r.others += 1
    return out


def _unwrap(result: Any) -> Any:
    """Protocol 1.0 wraps a result (``{"message": ...}``, ``{"task": ...}``); 0.3 does not."""
    if isinstance(result, dict) and "kind" not in result and len(result) == 1:
        (key, inner), = result.items()
        if key in ("message", "task") and isinstance(inner, dict):
            return inner
    return result


def _artifact_text(artifact: Any, r: _Result) -> str:
    """The text of one artifact: its text parts concatenated, as a streamed artifact's
    chunks (``append``) are pieces of one text."""
    return "".join(_parts_text(artifact.get("parts") if isinstance(artifact, dict) else None, r))


def _read_result(result: Any) -> _Result | None:
    """A Message or a Task (either protocol's shape), or None for anything else."""
    result = _unwrap(result)
    if not isinstance(result, dict):
        return None
    kind = result.get("kind")
    if kind == "message" or (kind is None and "parts" in result and "status" not in result):
        r = _Result("", _ident(result.get("contextId")), _ident(result.get("taskId")), None)
        r.text = "\n".join(_parts_text(result.get("parts"), r))
        return r
    if kind == "task" or (kind is None and "status" in result):
        status = result.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        if not isinstance(state, str):
            return None
        state = _state(state)
        r = _Result("", _ident(result.get("contextId")), _ident(result.get("id")), state)
        texts: list[str] = []
        artifacts = result.get("artifacts")
        for a in artifacts if isinstance(artifacts, list) else []:
            texts.append(_artifact_text(a, r))  # separate artifacts stay separate lines
        texts = [t for t in texts if t]
        if not texts:
            msg = status.get("message") if isinstance(status, dict) else None
            texts = _parts_text(msg.get("parts") if isinstance(msg, dict) else None, r)
        r.text = "\n".join(texts)
        return r
    return None


# ---------------------------------------------------------------------------- streamed replies


class _SSE:
    """Server-sent events read as they arrive: :meth:`feed` takes bytes and gives the
    ``data`` of each event completed by them (its ``data:`` lines joined)."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buf += chunk
        out: list[str] = []
        while True:
            cut = self._buf.find(b"\n")
            if cut < 0:
                return out
            raw, self._buf = self._buf[:cut], self._buf[cut + 1:]
            line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
            if not line:  # an event ends
                if self._data:
                    out.append("\n".join(self._data))
                self._data = []
            elif line.startswith("data:"):
                self._data.append(line[5:].removeprefix(" "))
            # comments (":"), "event:", "id:" and "retry:" lines say nothing medsim reads


_ENDED = frozenset({"completed", "input-required", "failed", "rejected", "canceled", "auth-required", "unknown"})


class _StreamView:
    """What a streamed reply's events have said so far: a Message ends it; else a task
    whose snapshots, status updates and artifact updates (``append``: more parts of an
    artifact already sent) are kept until its state ends the call (0.3 also says
    ``final``). Both protocols' event shapes (1.0: ``{"statusUpdate": ...}``; 0.3:
    ``"kind": "status-update"``)."""

    def __init__(self) -> None:
        self.message: Any = None
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.state: str | None = None
        self.status: Any = None
        self.artifacts: dict[str, dict[str, Any]] = {}
        self.done = False

    def add_all(self, results: Sequence[Any]) -> bool:
        for r in results:
            self.add(r)
        return self.done

    def add(self, result: Any) -> None:
        if not isinstance(result, dict) or self.done:
            return
        kind = result.get("kind")
        body: Any = result
        if kind is None and len(result) == 1:  # 1.0: the event's type is its one key
            (kind, body), = result.items()
        kind = {"statusUpdate": "status-update", "artifactUpdate": "artifact-update"}.get(kind, kind)
        if not isinstance(body, dict):
            return
        self.task_id = _ident(body.get("taskId") or (body.get("id") if kind == "task" else None)) or self.task_id
        self.context_id = _ident(body.get("contextId")) or self.context_id
        if kind == "message":
            self.message, self.done = body, True
        elif kind == "task":
            self._status(body.get("status"))
            arts = body.get("artifacts")
            for a in arts if isinstance(arts, list) else []:
                if isinstance(a, dict):
                    self.artifacts[str(a.get("artifactId", len(self.artifacts)))] = {"parts": list(a.get("parts") or [])}
        elif kind == "status-update":
            self._status(body.get("status"))
            if body.get("final") is True:
                self.done = True
        elif kind == "artifact-update":
            a = body.get("artifact")
            if isinstance(a, dict):
                key = str(a.get("artifactId", ""))
                parts = a.get("parts") if isinstance(a.get("parts"), list) else []
                if body.get("append") is True and key in self.artifacts:
                    self.artifacts[key]["parts"] += parts
                else:
                    self.artifacts[key] = {"parts": list(parts)}

    def _status(self, status: Any) -> None:
        if isinstance(status, dict):
            self.status = status
            state = status.get("state")
            if isinstance(state, str):
                self.state = _state(state)
                if self.state in _ENDED:
                    self.done = True

    def result(self) -> _Result | None:
        if self.message is not None:
            return _read_result({**self.message, "kind": "message"})
        if self.state is None:
            return None
        return _read_result({"kind": "task", "id": self.task_id, "contextId": self.context_id,
                             "status": {**(self.status or {}), "state": self.state},
                             "artifacts": list(self.artifacts.values())})


# ---------------------------------------------------------------------------- the backend


class A2ALLM:
    """A role played by an A2A agent at ``url`` (JSON-RPC ``message/send``)."""

    def __init__(self, url: str, *, api_key_env: tuple[str, ...] = A2A_KEY_ENV,
                 poll_s: tuple[float, float] = (_POLL_FIRST_S, _POLL_MAX_S), history: str = "agent"):
        if history not in HISTORIES:
            raise ValueError(f"a2a: history must be one of {', '.join(HISTORIES)}, not {history!r}")
        self._base = parse_agent_url(url)  # refuses credentials without repeating them
        self._given = url.strip()
        self.url = self._base.shown
        self.name = f"a2a:{self.url}"
        self.history = history  # "full": the whole conversation every call (an agent that keeps none)
        self.card: AgentCard | None = None
        self._card_tried = False
        self._key_env = api_key_env
        self._poll = poll_s
        self._lock = threading.Lock()
        self._ids = 0
        self._convs: OrderedDict[tuple[str, str], list[_Conversation]] = OrderedDict()

    def check(self, *, timeout_s: float = 10.0) -> AgentCard:
        """:func:`check_agent`, keeping the card: the name becomes ``a2a:URL#NAME@VERSION``."""
        card = check_agent(self._given, timeout_s=timeout_s, api_key_env=self._key_env)
        with self._lock:
            self.card, self._card_tried = card, True
            self.name = f"a2a:{self.url}#{card.label}"
        return card

    def _card(self, timeout_s: float) -> AgentCard | None:
        """The card, read once on the first call where no preflight read it. An agent
        that serves no card is spoken to as before cards named versions (JSON-RPC 0.3,
        no streaming); one whose card offers nothing medsim speaks is refused."""
        with self._lock:
            if self._card_tried:
                return self.card
        try:  # the name stays: the run's header has recorded it already
            card: AgentCard | None = check_agent(self._given, timeout_s=min(timeout_s, 10.0),
                                                 api_key_env=self._key_env)
        except _Unspeakable:
            raise
        except LLMError:  # no card: spoken to as before cards named versions
            card = None
        with self._lock:
            self.card, self._card_tried = card, True
        return card

    # -- conversation state ------------------------------------------------------
    def _take(self, key: tuple[str, str], msgs: Sequence[Message]) -> tuple[_Conversation, str, bool]:
        """(the conversation, the text to send, whether it is new); marks it busy."""
        if self.history == "full":  # nothing is kept: every call is a new context with all of it
            return _Conversation(busy=True), _first(msgs), True
        with self._lock:
            convs = self._convs.get(key, [])
            for conv in reversed(convs):  # the most recent first
                if conv.busy or conv.context_id is None:
                    continue
                text = _follow_up(conv.known, msgs)
                if text is not None:
                    conv.busy = True
                    convs.remove(conv)
                    convs.append(conv)
                    self._convs.move_to_end(key)
                    return conv, text, False
            conv = _Conversation(busy=True)
            return conv, _first(msgs), True

    def _keep(self, key: tuple[str, str], conv: _Conversation, new: bool) -> None:
        with self._lock:
            conv.busy = False
            if not new or conv.context_id is None or self.history == "full":
                return
            convs = self._convs.setdefault(key, [])
            convs.append(conv)
            del convs[:-_PER_KEY]
            self._convs.move_to_end(key)
            while len(self._convs) > _KEYS:
                self._convs.popitem(last=False)

    def _release(self, conv: _Conversation) -> None:
        with self._lock:
            conv.busy = False

    # -- JSON-RPC --------------------------------------------------------------------
    def _rpc(self, method: str, params: dict, *, deadline: float, timeout_s: float, max_body: int,
             headers: dict[str, str], secrets: Sequence[str], stream: _StreamView | None = None) -> Any:
        """One JSON-RPC call; its result. ``stream``: the reply is an SSE stream whose
        events are read into it as they arrive, until it has its answer (the result is
        then the view); a plain JSON reply to a stream request is read as one response."""
        with self._lock:
            self._ids += 1
            rid = self._ids
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        url = self.url
        sse = _SSE()

        def feed(chunk: bytes) -> bool:  # the stream's events so far, into the view: whether it has its answer
            assert stream is not None
            return stream.add_all([self._payload(t, method, rid, secrets) for t in sse.feed(chunk)])

        reply, text = post_text(self._base, "", body, headers, timeout_s=deadline - time.monotonic(),
                                max_body=max_body, url=url, backend=self.name, secrets=secrets, what=f" to {method}",
                                said_timeout_s=timeout_s, until=feed if stream is not None else None)
        if stream is not None and "event-stream" in (reply.headers.get("Content-Type") or ""):
            if not stream.done:  # the stream ended: what is left in the buffer, then what it said
                feed(b"\n\n")
            return stream
        return self._payload(text, method, rid, secrets)

    def _payload(self, text: str, method: str, rid: int, secrets: Sequence[str]) -> Any:
        """The result of one JSON-RPC response (a reply's body, or an SSE event's data)."""
        url = self.url
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as e:
            raise scrubbed_error(f"the reply to {method} from {url} is not JSON ({e.msg} at character {e.pos}): "
                                 f"{snippet(text, secrets)}", backend=self.name, secrets=secrets,
                                 transient=True) from None
        except (ValueError, RecursionError) as e:
            raise scrubbed_error(f"the reply to {method} from {url} is JSON that cannot be read ({type(e).__name__})",
                                 backend=self.name, secrets=secrets, transient=True) from None
        if not isinstance(payload, dict) or ("result" not in payload and "error" not in payload):
            raise scrubbed_error(f"the reply to {method} from {url} is not a JSON-RPC response: "
                                 f"{snippet(text, secrets)}", backend=self.name, secrets=secrets, transient=True)
        if str(payload.get("id")) != str(rid):  # the same id (a server may echo it as a string)
            raise scrubbed_error(f"the reply to {method} from {url} answers another request (id "
                                 f"{snippet(str(payload.get('id')), secrets, 40)!r}, not {rid})", backend=self.name,
                                 secrets=secrets, transient=True)
        err = payload.get("error")
        if err is not None:
            code = err.get("code") if isinstance(err, dict) else None
            message = err.get("message") if isinstance(err, dict) else None
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            words = _quote(message if isinstance(message, str) else json.dumps(err), secrets)
            raise scrubbed_error(f"the agent at {url} answered {method} with JSON-RPC error "
                                 f"{code if code is not None else '(no code)'}: {words}", backend=self.name,
                                 secrets=secrets, transient=code in _TRANSIENT_CODES)
        return payload["result"]

    # -- LLM -------------------------------------------------------------------------
    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        auth, key = auth_headers(self._key_env, self.name)
        secrets = secrets_of(key, self._base.secrets)
        headers = {"Content-Type": "application/json", "Accept": "application/json", **auth}
        max_body = body_limit(params.max_tokens)
        t0 = time.perf_counter()
        deadline = time.monotonic() + params.timeout_s
        card = self._card(params.timeout_s)
        dialect = card.dialect if card is not None else V0_3
        headers.update(dialect.headers)
        conv_key = (ctx.role, ctx.case_id)
        conv, text, new = self._take(conv_key, messages)
        try:
            message = dialect.message(text, context_id=conv.context_id, task_id=conv.task_id)
            rpc = dict(deadline=deadline, timeout_s=params.timeout_s, max_body=max_body, headers=headers,
                       secrets=secrets)
            if card is not None and card.streaming:
                view = self._rpc(dialect.stream, {"message": message},
                                 **{**rpc, "headers": {**headers, "Accept": "text/event-stream"}}, stream=_StreamView())
                result = view.result() if isinstance(view, _StreamView) else self._result(view, dialect.stream,
                                                                                             secrets)
                if result is None:
                    raise scrubbed_error(f"the stream from {self.url} ended with no message and no task",
                                         backend=self.name, secrets=secrets, transient=True)
            else:
                result = self._result(self._rpc(dialect.send, {"message": message}, **rpc), dialect.send, secrets)
            wait, polls = self._poll[0], 0
            while result.state in _WAITING:
                if result.task_id is None:
                    raise scrubbed_error(f"the agent at {self.url} says its task is {result.state} but gives no task "
                                         "id to ask about", backend=self.name, secrets=secrets, transient=True)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise scrubbed_error(f"the agent's task at {self.url} was still {result.state} after "
                                         f"{seconds_text(params.timeout_s)} s (whole-call timeout; {polls} polls)",
                                         backend=self.name, secrets=secrets, transient=True)
                time.sleep(min(wait, left))
                wait = min(wait * 2, self._poll[1])
                polls += 1
                if deadline - time.monotonic() <= 0:
                    continue  # reported above, with the state last seen
                result = self._result(self._rpc(dialect.get, {"id": result.task_id}, **rpc), dialect.get, secrets)
            if result.state is not None and result.state not in _ANSWERED:
                said = f": {_quote(result.text, secrets)}" if result.text else ""
                raise scrubbed_error(f"the agent's task ended {_label(result.state, secrets)}{said}", backend=self.name,
                                     secrets=secrets, transient=_FAILED.get(result.state, False))
        except BaseException:
            self._release(conv)
            raise
        latency = time.perf_counter() - t0
        reply = scrub_reply(result.text, secrets)
        notes: list[str] = []
        finish = "stop"
        if not result.texts:
            notes.append("the agent sent no text part")
        if result.others:
            notes.append(f"{result.others} part(s) that are not text left out")
        images = sum(len(m.images) for m in messages)
        if images:
            notes.append(f"{images} image(s) not sent: the A2A backend sends text only")
        if params.response_schema:
            notes.append("the reply's JSON schema cannot be enforced over A2A")
        cap = text_limit(params.max_tokens)
        if len(reply) > cap:
            notes.append(f"reply truncated: {len(reply)} characters, more than the {cap} that max_tokens="
                         f"{params.max_tokens} allows")
            reply, finish = reply[:cap], "length"
        # an agent that gives no contextId keeps no conversation: its next call sends the whole of it
        conv.context_id = result.context_id or conv.context_id
        conv.task_id = result.task_id if result.state == "input-required" else None
        conv.known = tuple(_key(m) for m in messages) + (("assistant", reply.strip()),)
        self._keep(conv_key, conv, new)
        return Output(text=reply, model=self.name, latency_s=latency, finish_reason=finish, note="; ".join(notes))

    def _result(self, raw: Any, method: str, secrets: Sequence[str]) -> _Result:
        r = _read_result(raw)
        if r is None:
            shown = snippet(json.dumps(raw) if not isinstance(raw, str) else raw, secrets)
            raise scrubbed_error(f"the result of {method} from {self.url} is neither an A2A Message nor a Task: "
                                 f"{shown}", backend=self.name, secrets=secrets, transient=True)
        return r
