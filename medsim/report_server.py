"""``medsim view RUN_DIR``: a run's report.html and transcripts served on 127.0.0.1.

The handler serves regular files inside the run directory and nothing else: a path
with ``..``, ``.`` or empty segments (encoded or not), a backslash, a NUL, or one that
resolves (symlinks followed) outside the directory is refused with 403; a file that is
not there is 404. GET and HEAD only, no directory listings. Pages are sent with a
Content-Security-Policy that allows no script and no network (the pages need neither).

A request whose ``Host`` is not ``127.0.0.1:PORT`` or ``localhost:PORT`` (this server's
port) is refused with 403: a page on another site that rebinds its own name to 127.0.0.1
(DNS rebinding) sends its own name and cannot read the run's prompts and answer keys. A
connection that sends nothing for :data:`IDLE_TIMEOUT_S` is closed.
"""
from __future__ import annotations

import argparse
import logging
import mimetypes
import signal
import threading
import webbrowser
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote

__all__ = ["RunHandler", "make_server", "serve", "resolve_request", "url_of", "port_arg", "host_allowed",
           "IDLE_TIMEOUT_S"]

logger = logging.getLogger(__name__)  # one INFO line per request (a request line is escaped there)

IDLE_TIMEOUT_S = 20.0  # a connection silent this long (a request never finished, a kept socket) is closed
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'"
_TEXT = {".jsonl": "text/plain; charset=utf-8", ".json": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8",
         ".toml": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8", ".csv": "text/plain; charset=utf-8",
         ".html": "text/html; charset=utf-8", ".png": "image/png"}


def resolve_request(root: Path, raw_path: str) -> tuple[Path | None, HTTPStatus]:
    """The file a request path names inside ``root`` (resolved), or None with the status
    to answer. ``/`` is report.html."""
    path = raw_path.split("?", 1)[0].split("#", 1)[0]  # the target as sent: never a host, never normalised
    if not path.startswith("/") or "\\" in path:
        return None, HTTPStatus.FORBIDDEN
    rel = unquote(path[1:], errors="strict") if path != "/" else "report.html"
    parts = rel.split("/")
    if any(p in ("", ".", "..") or "\x00" in p or "\\" in p for p in parts):
        return None, HTTPStatus.FORBIDDEN
    root = root.resolve()
    target = root.joinpath(*parts)
    try:
        real = target.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return None, HTTPStatus.NOT_FOUND
    if not real.is_relative_to(root):
        return None, HTTPStatus.FORBIDDEN
    if not real.is_file():
        return None, HTTPStatus.NOT_FOUND
    return real, HTTPStatus.OK


def port_arg(text: str) -> int:
    """``--port`` for argparse: 1-65535, or 0 for any free port; an argparse error that
    says what was wrong otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535, or 0 for any free port), got {text!r}") \
            from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535 (or 0 for any free port), got {port}")
    return port


def host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's ``Host`` header names this server: ``127.0.0.1:PORT`` or
    ``localhost:PORT`` (case aside; the port may be left out only where it is 80)."""
    if not host:
        return False
    names = ("127.0.0.1", "localhost")
    h = host.strip().lower()
    return h in {f"{n}:{port}" for n in names} or (port == 80 and h in names)


class RunHandler(BaseHTTPRequestHandler):
    """Serves one run directory (``root``), read-only, to requests that name it by its
    loopback address (:func:`host_allowed`)."""

    server_version = "medsim-view"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S  # the socket's timeout: an idle connection ends instead of holding a thread

    def __init__(self, *args: Any, root: Path, quiet: bool = False, **kwargs: Any):
        self.root, self.quiet = root, quiet
        super().__init__(*args, **kwargs)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if not self.quiet:
            logger.info("%s %s", self.address_string(), format % args)

    def _refuse(self, status: HTTPStatus) -> None:
        body = f"{status.value} {status.phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if not host_allowed(self.headers.get("Host"), self.server.server_address[1]):
            self._refuse(HTTPStatus.FORBIDDEN)
            return
        try:
            path, status = resolve_request(self.root, self.path)
        except UnicodeDecodeError:
            path, status = None, HTTPStatus.BAD_REQUEST
        if path is None:
            self._refuse(status)
            return
        try:
            data = path.read_bytes()
        except OSError:
            self._refuse(HTTPStatus.NOT_FOUND)
            return
        ctype = _TEXT.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_HEAD = do_GET

    def _not_allowed(self) -> None:
        self._refuse(HTTPStatus.METHOD_NOT_ALLOWED)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed


def make_server(run_dir: Path, port: int = 0, *, quiet: bool = False) -> ThreadingHTTPServer:
    """A server for ``run_dir`` bound to 127.0.0.1 (port 0: any free port), not yet serving."""
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(RunHandler, root=Path(run_dir).resolve(), quiet=quiet))
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer, page: str = "report.html") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/{page}"


def serve(run_dir: Path, port: int = 0, *, open_browser: bool = False, quiet: bool = False,
          on_ready: Callable[[str], None] | None = None, stop: threading.Event | None = None,
          page: str = "report.html") -> None:
    """Serve ``run_dir`` until Ctrl-C (or ``stop`` is set); ``on_ready`` gets the URL of
    ``page`` (a path under ``run_dir``: a re-scoring's ``scores/<label>/report.html``)."""
    server = make_server(run_dir, port, quiet=quiet)
    url = url_of(server, page)
    try:
        if on_ready:
            on_ready(url)
        if open_browser:
            webbrowser.open(url)
        if stop is not None:
            threading.Thread(target=lambda: (stop.wait(), server.shutdown()), daemon=True).start()
        if threading.current_thread() is threading.main_thread():
            # `kill` (SIGTERM, a service manager's stop) ends it like Ctrl-C: the socket closed, exit 0
            signal.signal(signal.SIGTERM, signal.default_int_handler)
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
