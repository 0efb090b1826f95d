"""Secrets in URLs, kept out of everything medsim writes or prints.

A server's base URL may carry a secret the server needs: a key in the query string
(``?api_key=``, ``?key=``, ``?token=``, ``?sig=`` ...) or, refused elsewhere, a password
in the userinfo part (``http://user:KEY@host``). :func:`redact_url` is the one function
that makes a URL safe to show: the userinfo's password (or a lone user name, often a
token) and the values of secret-looking query and fragment parameters become ``***``;
everything else is kept character for character, so a run stays identifiable.
:func:`redact_urls` does that to every URL inside a text (a backend spec such as
``openai:http://host/v1?key=K``, a command line argument, an error message) and
:func:`redact_spec` to a backend spec of any kind.

The request itself still sends the URL as given: only what is shown is redacted.
"""
from __future__ import annotations

import re
import urllib.parse
from typing import Any

__all__ = ["REDACTED", "SECRET_WORDS", "is_secret_param", "redact_spec", "redact_url", "redact_urls", "redact_tree",
           "url_secrets"]

REDACTED = "***"

# a parameter is secret when one of the words of its name is one of these ("api_key",
# "apiKey", "X-Amz-Signature", "subscription-key", "access_token", "auth")
SECRET_WORDS = frozenset({
    "key", "apikey", "token", "accesstoken", "apitoken", "authtoken", "secret", "clientsecret", "sig", "signature",
    "hmac", "password", "passwd", "pwd", "pass", "auth", "authorization", "credential", "credentials", "session",
    "sessionid", "jwt", "bearer", "privatekey",
})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
# a URL inside text: a scheme, "://", then up to white space, a quote or a bracket that
# ends it in prose, markdown, HTML or a Python repr
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>(){}`\\]+")


def is_secret_param(name: str) -> bool:
    """Whether a query parameter's name (percent-encoded or not, any case) looks like it
    holds a secret: ``api_key``, ``apiKey``, ``KEY``, ``access_token``, ``sig``; not
    ``model``, ``api-version``, ``keyword``."""
    plain = urllib.parse.unquote_plus(name)
    words = _WORD_SPLIT.split(_CAMEL.sub("_", plain).lower())
    return any(w in SECRET_WORDS for w in words)


def _split(url: str) -> tuple[str, str, str, str, str, str]:
    """(scheme with "://", userinfo, host and port, path, query, fragment), the URL's own
    characters, so that joining them gives it back. Without "://" everything before the
    query is the path (a relative URL, a Location header)."""
    rest, hash_, fragment = url.partition("#")
    fragment = hash_ + fragment
    rest, q, query = rest.partition("?")
    query = q + query
    scheme, sep, after = rest.partition("://")
    if not sep or "/" in scheme:
        return "", "", "", rest, query, fragment
    netloc, slash, path = after.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    return scheme + sep, userinfo + at, host, slash + path, query, fragment


def _params(part: str) -> list[tuple[str, str | None]]:
    """A query or fragment (without its "?" or "#") as (name, value or None) pairs."""
    out: list[tuple[str, str | None]] = []
    for item in part.split("&"):
        name, eq, value = item.partition("=")
        out.append((name, value if eq else None))
    return out


def _redact_params(part: str) -> str:
    """A query or fragment, its leading "?" or "#" kept, with each secret value ``***``."""
    if len(part) < 2 or "=" not in part:
        return part
    pairs = _params(part[1:])
    return part[0] + "&".join(
        name if value is None else f"{name}={REDACTED if value and is_secret_param(name) else value}"
        for name, value in pairs)


def _redact_userinfo(userinfo: str) -> str:
    """``user:password@`` -> ``user:***@``; a lone ``name@`` (often a token) -> ``***@``."""
    if not userinfo:
        return ""
    info = userinfo[:-1]
    user, colon, password = info.partition(":")
    if colon and password:
        return f"{user}:{REDACTED}@"
    return f"{REDACTED}{colon}@"


def redact_url(url: str) -> str:
    """The URL with its secrets replaced by ``***`` and nothing else changed:
    ``http://u:K@h:8000/v1?api_key=K&model=m`` -> ``http://u:***@h:8000/v1?api_key=***&model=m``."""
    scheme, userinfo, host, path, query, fragment = _split(url)
    return scheme + _redact_userinfo(userinfo) + host + path + _redact_params(query) + _redact_params(fragment)


def redact_urls(text: str) -> str:
    """``text`` with :func:`redact_url` applied to every ``scheme://...`` URL in it."""
    if "://" not in text:
        return text

    def one(m: re.Match[str]) -> str:  # punctuation closing a sentence ("from URL: refused") stays put
        url = m.group(0)
        core = url.rstrip(".,;:!?")
        return redact_url(core) + url[len(core):]

    return _URL_IN_TEXT.sub(one, text)


def redact_spec(spec: str) -> str:
    """A backend spec as shown, whatever its kind: ``NAME:ARGUMENT`` with the argument
    redacted as a URL even where it is not a well-formed ``scheme://`` one (a spec that is
    refused is still quoted: ``openai:h/v1?key=K`` -> ``openai:h/v1?key=***``), and every
    URL inside it. A path without a query is kept as it is (``gguf:models/key=S.gguf``).
    The default of :meth:`agents.llm.backend_kind.BackendKind.redact`."""
    name, colon, argument = spec.partition(":")
    if not colon or argument.startswith("//"):  # no kind's prefix: a bare URL or name
        return redact_urls(spec)
    return name + colon + redact_urls(redact_url(argument))


def redact_tree(obj: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with :func:`redact_urls` applied
    to every string in it, keys included: a document about to be written."""
    if isinstance(obj, str):
        return redact_urls(obj)
    if isinstance(obj, dict):
        return {redact_tree(k): redact_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_tree(v) for v in obj]
    return obj


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets :func:`redact_url` hides, as written and percent-decoded: what a text
    a server sent back (an error body, an echo) is scrubbed of."""
    _, userinfo, _, _, query, fragment = _split(url)
    found: list[str] = []
    if userinfo:
        user, colon, password = userinfo[:-1].partition(":")
        found.append(password if colon and password else user)
    for part in (query, fragment):
        for name, value in _params(part[1:]) if len(part) > 1 else []:
            if value and is_secret_param(name):
                found.append(value)
    out: list[str] = []
    for s in found:
        for v in (s, urllib.parse.unquote(s), urllib.parse.unquote_plus(s)):
            if v and v not in out:
                out.append(v)
    return tuple(out)
