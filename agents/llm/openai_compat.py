"""Any OpenAI-compatible chat completions server (vLLM, llama.cpp server, Ollama,
hosted APIs), with the standard library only. The API key comes from an environment
variable (``MEDSIM_API_KEY``, else ``OPENAI_API_KEY``) and is never logged: it goes into
the Authorization header only, and every error message is scrubbed of it (a server may
echo it back). A key a server wants in the base URL's query string (``?api_key=``,
``?key=``, ``?sig=`` ...) is sent as given and shown nowhere: the backend's name and
every message carry the URL redacted (:func:`agents.llm.url_secrets.redact_url`), and
text the server sends back is scrubbed of those values as of the key.

``GenerateParams.timeout_s`` is a deadline for the whole call (connect, TLS, send, status
line, headers, body), not for each socket read: each operation gets the time left as its
socket timeout, the body is read in chunks with the deadline checked after each, and a
watchdog shuts the socket down at the deadline, so a server that trickles bytes cannot
hold a call past it. Only the DNS lookup escapes the watchdog (the system resolver has
its own timeouts).

:func:`check_server` asks ``GET {base_url}/models`` once before a run, so that a dead
server, a refused key or a wrong model name is reported once instead of per case.

Proxies are taken from the environment (``http_proxy``, ``https_proxy``, ``no_proxy``)
as ``urllib`` does.

Connections are kept alive (HTTP/1.1): each thread keeps the connection of its last
complete exchange with a server and sends its next request there, as a bench worker
calls the same server turn after turn. A kept connection the server has closed meanwhile
(readable while idle: EOF) is dropped before it is used; one that fails or times out is
never kept; one whose reply said ``Connection: close`` is not kept either.

A reply's size is capped twice, for servers that ignore ``max_tokens``: the body read
from the socket stops at :func:`body_limit` bytes (a transient transport error), and the
text is cut to :func:`text_limit` characters (``finish_reason`` "length", with a note in
the call's event). Every transport fault and malformed reply (cut-short or non-UTF-8
body, bad status line, closed connection, not JSON, no message, content that is not
text) is a transient :class:`LLMError`, retried by the caller's policy. Missing or
invalid ``usage`` leaves the text standing: the counts are 0 and the note says why.
"""
from __future__ import annotations

import base64
import datetime
import email.utils
import http.client
import json
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agents.llm.base import chat_message, CallContext, GenerateParams, LLMError, Message, Output
from agents.llm.url_secrets import redact_url, url_secrets

__all__ = ["API_KEY_ENV", "OpenAICompatLLM", "body_limit", "check_server", "text_limit"]

API_KEY_ENV: tuple[str, ...] = ("MEDSIM_API_KEY", "OPENAI_API_KEY")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_NO_MODEL_LISTING = frozenset({404, 405, 501})
_CHUNK = 64 * 1024
_MAX_BODY = 32 * 1024 * 1024  # a model list is far smaller
_MIN_KEY_SCRUB = 8  # model text is scrubbed of keys this long or longer (not "EMPTY", "x", "ollama")
_SNIPPET = 200  # characters of a server's error body quoted in a message


def body_limit(max_tokens: int) -> int:
    """Bytes of a chat reply read at most: 1 MiB, more for a large ``max_tokens`` (64
    bytes a token covers JSON escapes and the envelope)."""
    return min(_MAX_BODY, max(1 << 20, 64 * max(0, max_tokens)))


def text_limit(max_tokens: int) -> int:
    """Characters of reply text kept at most: 16 a token, and 256 more (a token is
    rarely over 8 characters)."""
    return 16 * max(0, max_tokens) + 256


def _transient_status(status: int) -> bool:
    return status in _TRANSIENT_STATUS or status >= 500


def _seconds(t: float) -> str:
    return str(float(t))  # 3 -> "3.0", 0.05 -> "0.05"


# ---------------------------------------------------------------------------- URLs and keys


@dataclass(frozen=True)
class _BaseURL:
    scheme: str
    host: str
    port: int | None
    path: str  # without a trailing slash, e.g. "/v1" or ""
    query: str
    shown: str  # the URL as messages and names show it: without a trailing slash, secrets redacted
    secrets: tuple[str, ...]  # what redacting it hid (url_secrets)

    @classmethod
    def parse(cls, url: str) -> "_BaseURL":
        """Raises ValueError with a message that never repeats credentials."""
        parts = urllib.parse.urlsplit(url.strip())
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise ValueError("the base URL has credentials in it (user:password@host); remove them "
                             "and put the API key in MEDSIM_API_KEY (or OPENAI_API_KEY) instead")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the base URL must look like http://host:port/v1, got {redact_url(url)!r}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"the base URL has an invalid port: {redact_url(url)!r}") from None
        given = url.strip()
        shown = redact_url(given.rstrip("/") if not (parts.query or parts.fragment) else given)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), parts.query, shown, url_secrets(given))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{host}{port}{self.path}"

    def target(self, suffix: str) -> str:
        """The request target for ``{base}{suffix}``, keeping a query string if any."""
        path = (self.path + suffix) or "/"
        return f"{path}?{self.query}" if self.query else path


def _api_key(env_vars: Sequence[str]) -> tuple[str, str] | tuple[None, None]:
    """(key, the variable it came from), or (None, None)."""
    for var in env_vars:
        value = os.environ.get(var, "").strip()
        if value:
            return value, var
    return None, None


def _auth_headers(env_vars: Sequence[str], backend: str) -> tuple[dict[str, str], str | None]:
    key, var = _api_key(env_vars)
    if key is None:
        return {}, None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        # http.client would refuse the header with the key in its message
        raise LLMError(f"the API key in {var} contains a line break or control character",
                       backend=backend, transient=False)
    return {"Authorization": f"Bearer {key}"}, key


def _secrets(key: str | None, base: _BaseURL) -> tuple[str, ...]:
    """What text from the server is scrubbed of: the API key and the URL's own secrets
    (a query string's key), the longest first (one may hold another)."""
    return tuple(sorted({s for s in (key, *base.secrets) if s}, key=len, reverse=True))


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        text = text.replace(s, "***")
    return text


def _scrub_reply(text: str, secrets: Sequence[str]) -> str:
    """Model text without the secrets long enough to be secrets (scrubbing "x" or
    "EMPTY", placeholder keys for local servers, would garble the text)."""
    return _scrub(text, [s for s in secrets if len(s) >= _MIN_KEY_SCRUB])


def _error(message: str, *, backend: str, secrets: Sequence[str], transient: bool) -> LLMError:
    return LLMError(_scrub(message, secrets), backend=backend, transient=transient)


# ---------------------------------------------------------------------------- transport


class _Failure(Exception):
    """The request produced no usable HTTP reply. ``kind``: "timeout", "unreachable"
    (connection refused, DNS, TLS, reset) or "transport" (the server answered badly).
    ``reason`` is plain words and holds nothing the server sent."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class _Reply:
    status: int
    reason: str
    headers: http.client.HTTPMessage
    body: bytes


class _Watchdog:
    """Shuts the connection's socket down at the deadline, so that a blocking read, write
    or TLS handshake in the calling thread ends at once (with EOF or an error).

    It keeps its own duplicate of the socket's descriptor, taken as soon as the TCP
    connection exists: ``ssl`` detaches the plain socket before the handshake, and
    http.client drops ``conn.sock`` once the response owns the socket. ``shutdown`` acts
    on the connection, so shutting the duplicate down ends reads on every descriptor."""

    def __init__(self, timeout_s: float):
        self.fired = False
        self._dup: socket.socket | None = None
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, timeout_s), self._fire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._dup = sock.dup()
            if self.fired:
                self._shutdown()

    def __enter__(self) -> "_Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            if self._dup is not None:
                self._dup.close()
                self._dup = None

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                self._shutdown()

    def _shutdown(self) -> None:
        if self._dup is not None:
            try:
                self._dup.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_Proxy = tuple[str, int | None, dict[str, str]] | None  # (host, port, headers) of the proxy, or none


def _proxy_for(base: _BaseURL) -> _Proxy:
    """(proxy host, port, proxy headers) from the environment, as urllib would pick it."""
    proxy = urllib.request.getproxies().get(base.scheme)
    if not proxy or urllib.request.proxy_bypass(base.host):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    p = urllib.parse.urlsplit(proxy)
    if not p.hostname:
        return None
    headers = {}
    if p.username is not None:
        cred = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
    try:
        port = p.port
    except ValueError:
        return None
    return p.hostname, port, headers


def _target(base: _BaseURL, suffix: str, proxy: _Proxy) -> tuple[str, dict[str, str]]:
    """The request target and extra headers (a plain-HTTP proxy's) of a request to ``base``."""
    if proxy is None or base.scheme == "https":
        return base.target(suffix), {}
    return base.url + suffix + (f"?{base.query}" if base.query else ""), proxy[2]


def _connection(base: _BaseURL, suffix: str, timeout_s: float,
                proxy: _Proxy) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """A new connection, the request target and extra headers (a proxy's)."""
    target, extra = _target(base, suffix, proxy)
    if base.scheme == "https":
        context = ssl.create_default_context()
        if proxy is None:
            return http.client.HTTPSConnection(base.host, base.port, timeout=timeout_s, context=context), target, {}
        conn = http.client.HTTPSConnection(proxy[0], proxy[1] or 8080, timeout=timeout_s, context=context)
        conn.set_tunnel(base.host, base.port, headers=proxy[2])
        return conn, target, {}
    if proxy is None:
        return http.client.HTTPConnection(base.host, base.port, timeout=timeout_s), target, {}
    return http.client.HTTPConnection(proxy[0], proxy[1] or 8080, timeout=timeout_s), target, extra


_KEPT_PER_THREAD = 8  # servers (and proxies) a thread keeps a connection to
_kept = threading.local()  # .conns: {key: HTTPConnection}, the thread's idle kept-alive connections


def _pool_key(base: _BaseURL, proxy: _Proxy) -> tuple[Any, ...]:
    """What a kept connection must match: the server, and the proxy it goes through."""
    return (base.scheme, base.host, base.port,
            None if proxy is None else (proxy[0], proxy[1], tuple(sorted(proxy[2].items()))))


def _idle_connection(key: tuple[Any, ...]) -> http.client.HTTPConnection | None:
    """The thread's kept connection for ``key``, taken out of the pool, if the server has
    not closed it meanwhile (an idle HTTP/1.1 connection is readable only at EOF or when
    the server sent something unasked: either way it is not reusable)."""
    conns: dict[tuple[Any, ...], http.client.HTTPConnection] = getattr(_kept, "conns", {})
    conn = conns.pop(key, None)
    if conn is None or conn.sock is None:
        return None
    try:
        readable, _, _ = select.select([conn.sock], [], [], 0)
    except (OSError, ValueError):
        readable = [conn.sock]
    if readable:
        conn.close()
        return None
    return conn


def _keep(key: tuple[Any, ...], conn: http.client.HTTPConnection) -> None:
    conns = getattr(_kept, "conns", None)
    if conns is None:
        conns = _kept.conns = {}
    old = conns.pop(key, None)
    if old is not None:
        old.close()
    while len(conns) >= _KEPT_PER_THREAD:
        conns.pop(next(iter(conns))).close()
    conns[key] = conn


def close_kept_connections() -> None:
    """Close the calling thread's kept-alive connections."""
    conns = getattr(_kept, "conns", {})
    while conns:
        conns.popitem()[1].close()


def _request(base: _BaseURL, method: str, suffix: str, *, body: bytes | None,
             headers: dict[str, str], timeout_s: float, max_body: int = _MAX_BODY) -> _Reply:
    """One HTTP exchange that ends within ``timeout_s`` of its start, whatever the server
    does, reading at most ``max_body`` bytes of body. Raises :class:`_Failure`."""
    deadline = time.monotonic() + timeout_s

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Failure("timeout", "deadline passed")
        return remaining

    proxy = _proxy_for(base)  # read from the environment once per request
    key = _pool_key(base, proxy)
    kept = _idle_connection(key)
    conn, target, extra = (_connection(base, suffix, timeout_s, proxy) if kept is None
                           else (kept, *_target(base, suffix, proxy)))
    watchdog = _Watchdog(timeout_s)

    def create_connection(*args: Any, **kwargs: Any) -> socket.socket:
        sock = socket.create_connection(*args, **kwargs)  # the DNS lookup in here is not cut
        watchdog.watch(sock)
        return sock

    # http.client's hook for opening the TCP connection (to the server or to a proxy)
    conn._create_connection = create_connection  # type: ignore[attr-defined]
    response: http.client.HTTPResponse | None = None
    reusable = False
    try:
        with watchdog:
            try:
                conn.timeout = left()
                if kept is None:
                    conn.connect()  # TCP, then the proxy tunnel and TLS where they apply
                else:
                    watchdog.watch(conn.sock)
                sock = conn.sock
                sock.settimeout(left())
                conn.request(method, target, body=body, headers={**headers, **extra})
                sock.settimeout(left())
                response = conn.getresponse()  # status line and headers
                if response.length is not None and response.length > max_body:
                    raise _Failure("transport", f"the reply announces {response.length} bytes, more than the "
                                                f"{max_body} bytes read at most")
                chunks: list[bytes] = []
                size = 0
                while True:
                    sock.settimeout(left())
                    chunk = response.read1(_CHUNK)
                    left()  # the deadline, checked after each chunk
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > max_body:
                        raise _Failure("transport", f"the reply is larger than the {max_body} bytes read at most")
                if response.length:  # http.client's read1 ends a short body without a word
                    raise http.client.IncompleteRead(b"".join(chunks), response.length)
                # the whole body read and the server not closing: the connection can take another request
                reusable = (not response.will_close and conn.sock is not None
                            and (response.length == 0 or response.isclosed()))
                return _Reply(response.status, response.reason or "", response.headers, b"".join(chunks))
            except _Failure:
                raise
            except (OSError, http.client.HTTPException, ValueError) as e:
                # after the watchdog has fired, any error is the deadline's doing
                if watchdog.fired or time.monotonic() >= deadline:
                    raise _Failure("timeout", "deadline passed") from None
                raise _classify(e) from None
    finally:
        if response is not None:
            response.close()
        if reusable and not watchdog.fired:
            conn._create_connection = socket.create_connection  # type: ignore[attr-defined]
            _keep(key, conn)
        else:
            conn.close()


def _classify(e: BaseException) -> _Failure:
    """Plain words for a transport fault; never the exception's text where that may hold
    bytes the server sent (a status line, a partial body)."""
    if isinstance(e, (socket.timeout, TimeoutError)):
        return _Failure("timeout", "deadline passed")
    if isinstance(e, ConnectionRefusedError):
        return _Failure("unreachable", "connection refused")
    if isinstance(e, socket.gaierror):
        return _Failure("unreachable", f"DNS lookup failed ({e.strerror or e})")
    if isinstance(e, ssl.SSLCertVerificationError):
        return _Failure("unreachable", f"TLS error: certificate not trusted ({e.verify_message or e.reason})")
    if isinstance(e, ssl.SSLError):
        return _Failure("unreachable", f"TLS error ({e.reason or e.__class__.__name__})")
    if isinstance(e, http.client.RemoteDisconnected):
        return _Failure("transport", "the server closed the connection without sending a reply")
    if isinstance(e, http.client.IncompleteRead):
        got = len(e.partial)
        return _Failure("transport", f"the reply body was cut short ({got} bytes received, "
                                     f"{e.expected if e.expected is not None else 'more'} bytes missing)")
    if isinstance(e, http.client.BadStatusLine):
        return _Failure("transport", "the reply does not start with an HTTP status line")
    if isinstance(e, http.client.LineTooLong):
        return _Failure("transport", "the reply has a header line that is too long")
    if isinstance(e, http.client.HTTPException):
        return _Failure("transport", f"malformed HTTP reply ({e.__class__.__name__})")
    if isinstance(e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return _Failure("unreachable", "the connection was reset")
    if isinstance(e, OSError):
        # a proxy's refusal of the tunnel comes as OSError("Tunnel connection failed: ...")
        return _Failure("unreachable", e.strerror or str(e) or e.__class__.__name__)
    return _Failure("transport", f"{e.__class__.__name__}")


def _body_text(reply: _Reply) -> str | None:
    try:
        return reply.body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _snippet(reply: _Reply) -> str:
    text = (_body_text(reply) or "").strip().replace("\n", " ")
    return f": {text[:_SNIPPET]}" if text else ""


def _post_text(base: _BaseURL, suffix: str, body: bytes, headers: Mapping[str, str], *, timeout_s: float,
               max_body: int, url: str, backend: str, secrets: Sequence[str], what: str = "",
               said_timeout_s: float | None = None) -> tuple[_Reply, str]:
    """POST ``body`` to the server; the reply and its text. A transport failure (also no
    time left: ``timeout_s <= 0``), a status other than 200 and a body that is not UTF-8
    are raised as the :class:`LLMError` the OpenAI and A2A clients give (``what``: " to
    METHOD" in the messages; ``said_timeout_s``: the whole-call timeout the messages name,
    default ``timeout_s``)."""
    try:
        if timeout_s <= 0:
            raise _Failure("timeout", "deadline passed")
        reply = _request(base, "POST", suffix, body=body, headers=headers, timeout_s=timeout_s, max_body=max_body)
    except _Failure as f:
        if f.kind == "timeout":
            msg = (f"no complete reply{what} within {_seconds(said_timeout_s or timeout_s)} s (whole-call timeout) "
                   f"from {url}")
        elif f.kind == "unreachable":
            msg = f"cannot reach {url}: {f.reason}"
        else:
            msg = f"bad reply{what} from {url}: {f.reason}"
        raise _error(msg, backend=backend, secrets=secrets, transient=True) from None
    if reply.status != 200:
        raise _http_error(reply, url, backend=backend, secrets=secrets)
    text = _body_text(reply)
    if text is None:
        raise _error(f"bad reply{what} from {url}: the body is not UTF-8 text", backend=backend, secrets=secrets,
                     transient=True)
    return reply, text


def _http_error(reply: _Reply, url: str, *, backend: str, secrets: Sequence[str]) -> LLMError:
    if 300 <= reply.status < 400:
        where = redact_url(reply.headers.get("Location", "elsewhere"))
        return _error(f"HTTP {reply.status} from {url}: redirects to {where}; use that as the base URL",
                      backend=backend, secrets=secrets, transient=False)
    err = _error(f"HTTP {reply.status} from {url}: {reply.reason}{_snippet(reply)}",
                 backend=backend, secrets=secrets, transient=_transient_status(reply.status))
    err.retry_after_s = _retry_after(reply.headers.get("Retry-After"))
    return err


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number of seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        s = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        s = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    if s != s or s in (float("inf"), float("-inf")):  # NaN, inf
        return None
    return max(0.0, s)


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
        self._base = _BaseURL.parse(base_url)  # refuses credentials without repeating them
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
        auth, key = _auth_headers(self._key_env, self.name)
        secrets = _secrets(key, self._base)
        headers = {"Content-Type": "application/json", "Accept": "application/json", **auth}
        url = self.base_url
        t0 = time.perf_counter()
        reply, text = _post_text(self._base, "/chat/completions", json.dumps(body).encode(), headers,
                                 timeout_s=params.timeout_s, max_body=body_limit(params.max_tokens), url=url,
                                 backend=self.name, secrets=secrets)
        latency = time.perf_counter() - t0
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as e:
            raise _error(f"response from {url} is not JSON ({e.msg} at character {e.pos}): {text[:_SNIPPET]}",
                         backend=self.name, secrets=secrets, transient=True) from None
        except (ValueError, RecursionError) as e:  # a number of over 4300 digits; nesting too deep
            raise _error(f"response from {url} is JSON that cannot be read ({type(e).__name__})",
                         backend=self.name, secrets=secrets, transient=True) from None
        choice = None
        if isinstance(payload, dict) and isinstance(payload.get("choices"), list) and payload["choices"]:
            choice = payload["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise _error(f"unexpected response shape from {url} (no choices[0].message): {text[:_SNIPPET]}",
                         backend=self.name, secrets=secrets, transient=True)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise _error(f"unexpected response shape from {url}: choices[0].message.content is a "
                         f"{type(content).__name__}, not text", backend=self.name, secrets=secrets, transient=True)
        pt, evaluated, ct, usage_note = _usage(payload)
        notes = [usage_note] if usage_note else []
        finish = choice.get("finish_reason")
        finish = _scrub_reply(finish, secrets)[:40] if isinstance(finish, str) and finish else "stop"
        text = _scrub_reply(content or "", secrets)
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
        base = _BaseURL.parse(base_url)
    except ValueError as e:
        raise LLMError(str(e), backend="openai", transient=False) from None
    url = base.shown
    backend = f"openai:{url}"
    auth, key = _auth_headers(api_key_env, backend)
    secrets = _secrets(key, base)
    try:
        reply = _request(base, "GET", "/models", body=None, headers={"Accept": "application/json", **auth},
                         timeout_s=timeout_s)
    except _Failure as f:
        reason = f"no reply within {_seconds(timeout_s)} s" if f.kind == "timeout" else f.reason
        verb = "cannot reach" if f.kind != "transport" else "bad reply from"
        raise _error(f"{verb} {url}: {reason}", backend=backend, secrets=secrets, transient=False) from None
    names = " or ".join(api_key_env)
    if reply.status in (401, 403):
        if key is None:
            msg = f"{url} wants an API key (HTTP {reply.status}) and none is set: put it in {names}"
        else:
            msg = f"{url} refused the API key (HTTP {reply.status}): check the key in {names}"
        raise _error(msg, backend=backend, secrets=secrets, transient=False)
    if reply.status in _NO_MODEL_LISTING:
        return None
    if reply.status != 200:
        raise _http_error(reply, url, backend=backend, secrets=secrets)
    text = _body_text(reply)
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
    raise _error(f"{url} does not serve model '{model}'; it serves: {', '.join(ids[:10])}{more}",
                 backend=backend, secrets=secrets, transient=False)
