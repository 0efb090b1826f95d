"""HTTP transport shared by the backends that talk to a server (:mod:`agents.llm.openai_compat`,
:mod:`agents.llm.a2a`): httpcore (the HTTP/1.1 client under httpx, maintained by the same
project) does the connections, keep-alive, proxies and reads; medsim adds the whole-call
deadline, the reply caps and the words of its errors.

``BaseURL`` is a server's URL as parsed once: where requests go, what messages show
(redacted) and which of its parts are secrets. :func:`request` is one HTTP exchange with a
deadline for the whole of it (connect, TLS, send, status line, headers, body): every
socket operation httpcore makes goes through :class:`_DeadlineStream`, which gives it the
call's time left as its timeout and hands the socket to a watchdog that shuts it down at
the deadline, so a server that trickles bytes cannot hold a call past it (only the DNS
lookup escapes the watchdog); the body is read as it arrives with the deadline checked
after each chunk. httpx itself is not used: its client gives no way to hold each socket
operation to one deadline (``HTTPTransport`` takes no network backend), and with a
transport of one's own it no longer reads proxies from the environment. It reads at most
``max_body`` bytes (checked as bytes arrive) and raises :class:`TransportFailure` in
plain words that hold nothing the server sent. :func:`post_text` turns a POST's failures,
a status other than 200 and a body that is not UTF-8 into the :class:`LLMError` a
backend raises (scrubbed of the key and the URL's secrets: :mod:`agents.llm.scrub`).

Proxies are taken from the environment (``http_proxy``, ``https_proxy``, ``no_proxy``)
as ``urllib`` does, once per request. Connections are kept alive (HTTP/1.1) in one pool
per server (and proxy), shared by the threads: a kept connection the server has closed
meanwhile is dropped before it is used; one that fails, times out or whose body was
left unread is closed, not kept; so is one whose reply said ``Connection: close``
(:func:`close_kept_connections` closes them all).

A reply's size is capped twice, for servers that ignore ``max_tokens``: the body read
stops at :func:`body_limit` bytes, and a backend cuts the text to :func:`text_limit`
characters.
"""
from __future__ import annotations

import base64
import datetime
import email.utils
import http.client
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import httpcore

from agents.llm.base import LLMError
from agents.llm.scrub import scrubbed_error, snippet
from agents.secrets import add_secrets
from agents.llm.url_secrets import redact_url, url_secrets

__all__ = ["BaseURL", "Reply", "TransportFailure", "auth_headers", "body_limit", "body_text", "close_kept_connections",
           "http_error", "post_text", "request", "seconds_text", "text_limit"]

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_CHUNK = 64 * 1024
_MAX_BODY = 32 * 1024 * 1024  # a model list is far smaller


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


def seconds_text(t: float) -> str:
    """Seconds as messages write them: ``3`` -> ``"3.0"``, ``0.05`` -> ``"0.05"``."""
    return str(float(t))


# ---------------------------------------------------------------------------- URLs and keys


@dataclass(frozen=True)
class BaseURL:
    """A server's URL, parsed once: where requests go (``url``, :meth:`target`), what
    messages and names show (``shown``) and what showing it hid (``secrets``)."""

    scheme: str
    host: str
    port: int | None
    path: str  # without a trailing slash, e.g. "/v1" or ""
    query: str
    shown: str  # the URL as messages and names show it: without a trailing slash, secrets redacted
    secrets: tuple[str, ...]  # what redacting it hid (url_secrets)

    @classmethod
    def parse(cls, url: str) -> "BaseURL":
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
        secrets = url_secrets(given)
        add_secrets(*secrets)  # the writers scrub them too (agents.secrets), whatever a server or model echoes
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), parts.query, shown, secrets)

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


def auth_headers(env_vars: Sequence[str], backend: str) -> tuple[dict[str, str], str | None]:
    """The ``Authorization: Bearer`` header from the first of ``env_vars`` that is set, and
    the key (to scrub from what the server sends back); ``({}, None)`` when none is set.
    Raises a non-transient :class:`LLMError` for a key holding a control character."""
    key, var = _api_key(env_vars)
    if key is None:
        return {}, None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        # http.client would refuse the header with the key in its message
        raise LLMError(f"the API key in {var} contains a line break or control character",
                       backend=backend, transient=False)
    return {"Authorization": f"Bearer {key}"}, key


# ---------------------------------------------------------------------------- transport


class TransportFailure(Exception):
    """The request produced no usable HTTP reply. ``kind``: "timeout", "unreachable"
    (connection refused, DNS, TLS, reset) or "transport" (the server answered badly).
    ``reason`` is plain words and holds nothing the server sent."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class Reply:
    """An HTTP reply, its body read whole."""

    status: int
    reason: str
    headers: http.client.HTTPMessage
    body: bytes


class _Watchdog:
    """Shuts the connection's socket down at the deadline, so that a blocking read, write
    or TLS handshake in the calling thread ends at once (with EOF or an error).

    It keeps its own duplicate of the socket's descriptor (``ssl`` detaches the plain
    socket before the handshake); ``shutdown`` acts on the connection, so shutting the
    duplicate down ends reads on every descriptor. The connection is then dead, and the
    pool drops it."""

    def __init__(self, timeout_s: float):
        self.fired = False
        self._dup: socket.socket | None = None
        self._watched: int | None = None
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, timeout_s), self._fire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if self._watched == id(sock) or self._done:
                return
            if self._dup is not None:
                self._dup.close()
            # a duplicate of the descriptor (an SSLSocket cannot dup() itself)
            self._watched, self._dup = id(sock), socket.fromfd(sock.fileno(), sock.family, sock.type)
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


class _Call:
    """The call a thread is making: its deadline and its watchdog."""

    def __init__(self, timeout_s: float):
        self.deadline = time.monotonic() + timeout_s
        self.watchdog = _Watchdog(timeout_s)

    def left(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TransportFailure("timeout", "deadline passed")
        return remaining


_calls = threading.local()  # .call: the _Call of the request the thread is in, if any


def _held(timeout: float | None, sock: socket.socket | None) -> float | None:
    """A socket operation's timeout held to the current call's time left; the socket
    goes to the call's watchdog (a connection taken from the pool too)."""
    call: _Call | None = getattr(_calls, "call", None)
    if call is None:
        return timeout
    call.watchdog.watch(sock)
    left = call.left()
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection as httpcore reads and writes it, every operation (and the TLS
    handshake) held to the deadline of the call using it."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def _sock(self) -> socket.socket | None:
        return self._inner.get_extra_info("socket")

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _held(timeout, self._sock()))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _held(timeout, self._sock()))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _held(timeout, self._sock())))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    """httpcore's blocking sockets, each connection a :class:`_DeadlineStream`. The TCP
    connect (and the DNS lookup in it, which no watchdog can cut) gets the time left."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        stream = super().connect_tcp(host, port, _held(timeout, None), local_address, socket_options)
        return _DeadlineStream(stream)


_Proxy = tuple[str, int | None, dict[str, str]] | None  # (host, port, headers) of the proxy, or none


def _proxy_for(base: BaseURL) -> _Proxy:
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


_pools: dict[tuple[Any, ...], httpcore.ConnectionInterface] = {}
_pools_lock = threading.Lock()
_KEPT_PER_SERVER = 16  # idle kept-alive connections a server's pool holds at most
_KEEPALIVE_S = 60.0  # an idle connection older than this is closed, not reused


def _pool_key(base: BaseURL, proxy: _Proxy) -> tuple[Any, ...]:
    """One pool per server (and the proxy it goes through, and the trust store named in
    the environment, which the pool's TLS context was made with)."""
    return (base.scheme, base.host, base.port,
            None if proxy is None else (proxy[0], proxy[1], tuple(sorted(proxy[2].items()))),
            os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


def _pool(base: BaseURL, proxy: _Proxy) -> httpcore.ConnectionInterface:
    """The server's connection pool (httpcore: HTTP/1.1 keep-alive; a kept connection the
    server has closed meanwhile is dropped before it is used)."""
    key = _pool_key(base, proxy)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            kw: dict[str, Any] = dict(ssl_context=ssl.create_default_context(), max_connections=None,
                                      max_keepalive_connections=_KEPT_PER_SERVER, keepalive_expiry=_KEEPALIVE_S,
                                      network_backend=_DeadlineBackend())
            if proxy is None:
                pool = httpcore.ConnectionPool(**kw)
            else:
                host, port, headers = proxy
                pool = httpcore.HTTPProxy(proxy_url=httpcore.URL(scheme=b"http", host=host.encode(),
                                                                 port=port or 8080, target=b"/"),
                                          proxy_headers=list(headers.items()), **kw)
            _pools[key] = pool
        return pool


def close_kept_connections() -> None:
    """Close every kept-alive connection (every server's pool)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for p in pools:
        p.close()


def _headers(raw: Sequence[tuple[bytes, bytes]]) -> http.client.HTTPMessage:
    msg = http.client.HTTPMessage()
    for k, v in raw:
        msg[k.decode("latin-1")] = v.decode("latin-1")
    return msg


def request(base: BaseURL, method: str, suffix: str, *, body: bytes | None,
            headers: dict[str, str], timeout_s: float, max_body: int = _MAX_BODY,
            until: Callable[[bytes], bool] | None = None) -> Reply:
    """One HTTP exchange that ends within ``timeout_s`` of its start, whatever the server
    does, reading at most ``max_body`` bytes of body. ``until``: a streamed body (SSE) is
    read as it arrives, each chunk handed to it, and the read ends, with the body so far,
    once it returns True (the connection is then closed, not kept). Raises
    :class:`TransportFailure`."""
    call = _Call(timeout_s)
    proxy = _proxy_for(base)  # read from the environment once per request
    pool = _pool(base, proxy)
    url = base.url + suffix + (f"?{base.query}" if base.query else "")
    t = max(0.001, timeout_s)
    _calls.call = call
    try:
        with call.watchdog:
            try:
                with pool.stream(method, url, headers=list(headers.items()), content=body,
                                 extensions={"timeout": {"connect": t, "read": t, "write": t, "pool": t}}) as resp:
                    head = _headers(resp.headers)
                    reason = resp.extensions.get("reason_phrase", b"").decode("latin-1")
                    length = head.get("Content-Length")
                    if length is not None and length.strip().isdigit() and int(length) > max_body:
                        raise TransportFailure("transport", f"the reply announces {int(length)} bytes, more than the "
                                               f"{max_body} bytes read at most")
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in resp.iter_stream():
                        call.left()  # the deadline, checked after each chunk
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > max_body:
                            raise TransportFailure("transport",
                                                   f"the reply is larger than the {max_body} bytes read at most")
                        if until is not None and until(chunk):
                            break  # leaving the stream unread closes the connection
                    else:  # the body ended: by itself, or by the watchdog's shutdown at the deadline
                        if call.watchdog.fired:
                            raise TransportFailure("timeout", "deadline passed")
                        call.left()
                    return Reply(resp.status, reason, head, b"".join(chunks))
            except TransportFailure:
                raise
            except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
                    OSError, ValueError) as e:
                # after the watchdog has fired, any error is the deadline's doing
                if call.watchdog.fired or time.monotonic() >= call.deadline:
                    raise TransportFailure("timeout", "deadline passed") from None
                raise _classify(e) from None
    finally:
        _calls.call = None


_SHORT_BODY = re.compile(r"received (\d+) bytes, expected (\d+)")


def _classify(e: BaseException) -> TransportFailure:
    """Plain words for a transport fault; never the exception's text where that may hold
    bytes the server sent (a status line, a partial body). httpcore wraps the socket's
    error in its own (as its argument); h11's protocol errors are told apart by their words."""
    if isinstance(e, (httpcore.NetworkError, httpcore.TimeoutException)):
        inner = e.args[0] if e.args and isinstance(e.args[0], BaseException) else e.__cause__ or e.__context__
        if isinstance(inner, BaseException):
            e = inner
    if isinstance(e, (httpcore.TimeoutException, socket.timeout, TimeoutError)):
        return TransportFailure("timeout", "deadline passed")
    if isinstance(e, ConnectionRefusedError):
        return TransportFailure("unreachable", "connection refused")
    if isinstance(e, socket.gaierror):
        return TransportFailure("unreachable", f"DNS lookup failed ({e.strerror or e})")
    if isinstance(e, ssl.SSLCertVerificationError):
        return TransportFailure("unreachable", f"TLS error: certificate not trusted ({e.verify_message or e.reason})")
    if isinstance(e, ssl.SSLError):
        return TransportFailure("unreachable", f"TLS error ({e.reason or e.__class__.__name__})")
    if isinstance(e, httpcore.ProxyError):
        return TransportFailure("unreachable", "the proxy refused the tunnel")
    if isinstance(e, httpcore.RemoteProtocolError):
        words = str(e)
        if "without sending a response" in words:
            return TransportFailure("transport", "the server closed the connection without sending a reply")
        short = _SHORT_BODY.search(words)
        if short:
            got, expected = int(short.group(1)), int(short.group(2))
            return TransportFailure("transport", f"the reply body was cut short ({got} bytes received, "
                                    f"{expected - got} bytes missing)")
        if "without sending complete message body" in words:
            return TransportFailure("transport", "the reply body was cut short")
        if "status line" in words or "illegal" in words.lower() and "status" in words.lower():
            return TransportFailure("transport", "the reply does not start with an HTTP status line")
        if "too long" in words or "buffer" in words.lower():
            return TransportFailure("transport", "the reply has a header line that is too long")
        return TransportFailure("transport", "malformed HTTP reply (RemoteProtocolError)")
    if isinstance(e, httpcore.ProtocolError):
        return TransportFailure("transport", f"malformed HTTP reply ({e.__class__.__name__})")
    if isinstance(e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return TransportFailure("unreachable", "the connection was reset")
    if isinstance(e, OSError):
        # a proxy's refusal of the tunnel comes as OSError("Tunnel connection failed: ...")
        return TransportFailure("unreachable", e.strerror or str(e) or e.__class__.__name__)
    return TransportFailure("transport", f"{e.__class__.__name__}")


def body_text(reply: Reply) -> str | None:
    """The body as UTF-8 text, or None where it is not."""
    try:
        return reply.body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _quoted(reply: Reply, secrets: Sequence[str]) -> str:
    """": BODY" for a message: the body scrubbed, then cut (:func:`agents.llm.scrub.snippet`)."""
    text = snippet(body_text(reply) or "", secrets)
    return f": {text}" if text else ""


def post_text(base: BaseURL, suffix: str, body: bytes, headers: Mapping[str, str], *, timeout_s: float,
              max_body: int, url: str, backend: str, secrets: Sequence[str], what: str = "",
              said_timeout_s: float | None = None, until: Callable[[bytes], bool] | None = None
              ) -> tuple[Reply, str]:
    """POST ``body`` to the server; the reply and its text. A transport failure (also no
    time left: ``timeout_s <= 0``), a status other than 200 and a body that is not UTF-8
    are raised as the :class:`LLMError` the OpenAI and A2A clients give (``what``: " to
    METHOD" in the messages; ``said_timeout_s``: the whole-call timeout the messages name,
    default ``timeout_s``)."""
    try:
        if timeout_s <= 0:
            raise TransportFailure("timeout", "deadline passed")
        reply = request(base, "POST", suffix, body=body, headers=dict(headers), timeout_s=timeout_s, max_body=max_body,
                        until=until)
    except TransportFailure as f:
        if f.kind == "timeout":
            msg = (f"no complete reply{what} within {seconds_text(said_timeout_s or timeout_s)} s "
                   f"(whole-call timeout) from {url}")
        elif f.kind == "unreachable":
            msg = f"cannot reach {url}: {f.reason}"
        else:
            msg = f"bad reply{what} from {url}: {f.reason}"
        raise scrubbed_error(msg, backend=backend, secrets=secrets, transient=True) from None
    if reply.status != 200:
        raise http_error(reply, url, backend=backend, secrets=secrets)
    text = body_text(reply)
    if text is None:
        raise scrubbed_error(f"bad reply{what} from {url}: the body is not UTF-8 text", backend=backend,
                             secrets=secrets, transient=True)
    return reply, text


def http_error(reply: Reply, url: str, *, backend: str, secrets: Sequence[str]) -> LLMError:
    """The :class:`LLMError` for a reply whose status is not 200: a redirect names where to
    (not transient); else the status, reason and the body's start, scrubbed before it is
    cut; 408, 409, 425, 429 and 5xx are transient, waiting for a Retry-After if sent."""
    if 300 <= reply.status < 400:
        where = redact_url(reply.headers.get("Location", "elsewhere"))
        return scrubbed_error(f"HTTP {reply.status} from {url}: redirects to {where}; use that as the base URL",
                              backend=backend, secrets=secrets, transient=False)
    err = scrubbed_error(f"HTTP {reply.status} from {url}: {reply.reason}{_quoted(reply, secrets)}",
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

