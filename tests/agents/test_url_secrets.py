"""A key in a server URL's query string (``?api_key=``, ``?key=``, ``?sig=`` ...) is sent to
the server and shown nowhere: :func:`agents.llm.url_secrets.redact_url` hides it (and a
userinfo password) and keeps the rest of the URL; the backend's name, its errors, specs,
command lines and every file of a ``medsim bench`` run carry the redacted URL. The fault
server (tests/fault_server.py) listens on 127.0.0.1 only."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.openai_compat import OpenAICompatLLM, check_server
from agents.llm.spec import BackendSpecError, check_backend_spec, describe_spec
from agents.llm.url_secrets import (is_secret_param, redact_spec, redact_tree, redact_url, redact_urls,
                                    url_secrets)
from agents.provenance import run_provenance
from medsim.spec import build_spec
from tests.fault_server import fault_server
from tests.helpers import clean_http_env

ROOT = Path(__file__).resolve().parents[2]
SECRET = "SECRETVALUE123"
ENV_KEY = "sk-env-key-0123456789"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_http_env(monkeypatch, ENV_KEY)


# ---------------------------------------------------------------------------- the function


@pytest.mark.parametrize("url, shown", [
    ("http://h/v1?api_key=S", "http://h/v1?api_key=***"),
    ("http://h/v1?API_KEY=S", "http://h/v1?API_KEY=***"),
    ("http://h/v1?key=S", "http://h/v1?key=***"),
    ("http://h/v1?Key=S", "http://h/v1?Key=***"),
    ("http://h/v1?apiKey=S", "http://h/v1?apiKey=***"),
    ("http://h/v1?apikey=S", "http://h/v1?apikey=***"),
    ("http://h/v1?api-key=S", "http://h/v1?api-key=***"),
    ("http://h/v1?token=S", "http://h/v1?token=***"),
    ("http://h/v1?access_token=S", "http://h/v1?access_token=***"),
    ("http://h/v1?accessToken=S", "http://h/v1?accessToken=***"),
    ("http://h/v1?sig=S", "http://h/v1?sig=***"),
    ("http://h/v1?X-Amz-Signature=S", "http://h/v1?X-Amz-Signature=***"),
    ("http://h/v1?subscription-key=S", "http://h/v1?subscription-key=***"),
    ("http://h/v1?client_secret=S", "http://h/v1?client_secret=***"),
    ("http://h/v1?auth=S", "http://h/v1?auth=***"),
    ("http://h/v1?password=S", "http://h/v1?password=***"),
    ("http://h/v1?api%5Fkey=S", "http://h/v1?api%5Fkey=***"),  # a percent-encoded name
    # the rest of the URL is kept character for character
    ("https://h:8443/v1?model=x&key=S&a=b%20c", "https://h:8443/v1?model=x&key=***&a=b%20c"),
    ("http://[::1]:8000/v1?key=S", "http://[::1]:8000/v1?key=***"),
    ("http://h/v1#access_token=S", "http://h/v1#access_token=***"),
    ("http://h/v1?key=S#model", "http://h/v1?key=***#model"),
    # userinfo: the password, or a lone user name (often the token itself)
    ("http://u:S@h/v1", "http://u:***@h/v1"),
    ("http://S@h/v1", "http://***@h/v1"),
    ("http://:S@h/v1?key=S", "http://:***@h/v1?key=***"),
    # a relative URL (a Location header) and a URL without a scheme
    ("/v1?key=S", "/v1?key=***"),
    ("h:8000/v1?token=S", "h:8000/v1?token=***"),
])
def test_secrets_in_a_url_are_redacted_and_the_rest_kept(url, shown):
    assert redact_url(url) == shown
    assert redact_url(shown) == shown  # idempotent
    assert "S" in url_secrets(url)


@pytest.mark.parametrize("url", [
    "http://h:8000/v1",
    "http://h/v1?model=x",
    "http://h/v1?api-version=2024-02-01&deployment=gpt&max_tokens=5&keyword=chest&monkey=1&tokens=3",
    "http://h/v1?key=",  # an empty value holds nothing
    "http://h/v1?key",
    "http://h/v1?",
    "http://h/v1#fake",
])
def test_ordinary_urls_and_parameters_are_left_alone(url):
    assert redact_url(url) == url
    assert url_secrets(url) == ()


@pytest.mark.parametrize("name, secret", [
    ("api_key", True), ("APIKEY", True), ("x-api-key", True), ("sessionId", True), ("hf_token", True),
    ("model", False), ("api-version", False), ("keyword", False), ("max_tokens", False), ("sv", False),
])
def test_which_parameter_names_are_secret(name, secret):
    assert is_secret_param(name) is secret


def test_urls_inside_text_and_documents_are_redacted():
    text = "cannot reach http://h/v1?key=S: refused; see https://x/y?sig=T. (or 'http://u:P@h')"
    assert redact_urls(text) == ("cannot reach http://h/v1?key=***: refused; see https://x/y?sig=***. "
                                 "(or 'http://u:***@h')")
    assert redact_urls("no url here ?key=S") == "no url here ?key=S"
    doc = {"command": ["medsim", "--llm=openai:http://h/v1?api_key=S"], "n": 3, "k": [None, True],
           "http://h?token=S": "x"}
    assert redact_tree(doc) == {"command": ["medsim", "--llm=openai:http://h/v1?api_key=***"], "n": 3,
                                "k": [None, True], "http://h?token=***": "x"}
    assert redact_spec("openai:http://h/v1?key=S") == "openai:http://h/v1?key=***"
    assert redact_spec("openai:h/v1?key=S") == "openai:h/v1?key=***"  # malformed: refused, but quoted safely
    assert redact_spec("gguf:models/key=S.gguf") == "gguf:models/key=S.gguf"


def test_url_secrets_lists_the_values_as_written_and_decoded():
    assert url_secrets("http://h/v1?key=a%2Fb&model=m") == ("a%2Fb", "a/b")


# ---------------------------------------------------------------------------- where it is used


def test_specs_and_command_lines_show_the_url_redacted():
    spec = f"openai:http://h:1/v1?api_key={SECRET}&model=x"
    assert describe_spec(spec, "m") == "openai:http://h:1/v1?api_key=***&model=x#m"
    with pytest.raises(BackendSpecError) as e:
        check_backend_spec(f"openai:h/v1?api_key={SECRET}", "m")  # no scheme: refused
    assert SECRET not in str(e.value) and "api_key=***" in str(e.value)
    rs = build_spec(None, {"llm": spec, "model": "m"})
    assert SECRET not in json.dumps(rs.to_dict()) + json.dumps(rs.identity()) + rs.to_toml()
    assert rs.roles["doctor"].to_dict()["backend"] == "openai:http://h:1/v1?api_key=***&model=x"
    assert rs.roles["judge"].describe() == "openai:http://h:1/v1?api_key=***&model=x#m"
    # the one place that needs the key (a Ray worker rebuilds the backends from the dict) asks for it
    assert rs.to_dict(secrets=True)["roles"]["doctor"]["backend"] == spec
    prov = run_provenance(cases_file=None, models={}, llms={}, command=["medsim", "bench", "--llm", spec])
    assert prov["command"][-1] == "openai:http://h:1/v1?api_key=***&model=x"


def _ask(llm: OpenAICompatLLM):
    return llm.generate([Message("system", "You are a patient."), Message("user", "Hello")],
                        GenerateParams(max_tokens=50, timeout_s=5.0), CallContext("patient", "c1"))


def test_the_request_sends_the_query_and_the_backend_shows_it_redacted():
    with fault_server("key_echo") as srv:  # the reply quotes the request line, key and all
        llm = OpenAICompatLLM(f"{srv.url}?api_key={SECRET}&model=x", "fake")
        out = _ask(llm)
        check_server(f"{srv.url}?api_key={SECRET}&model=x", "fake")  # (this server lists models only without a query)
    assert [r["path"] for r in srv.requests] == [f"/v1/chat/completions?api_key={SECRET}&model=x",
                                                 f"/v1/models?api_key={SECRET}&model=x"]
    assert srv.requests[0]["auth"] == f"Bearer {ENV_KEY}"
    assert llm.name == f"openai:{srv.url}?api_key=***&model=x#fake" and out.model == llm.name
    assert SECRET not in out.text and ENV_KEY not in out.text and "api_key=***" in out.text


@pytest.mark.parametrize("fault", ["500", "key_in_error", "disconnect"])
def test_errors_show_the_url_redacted(fault):
    with fault_server(fault) as srv:
        with pytest.raises(LLMError) as e:
            _ask(OpenAICompatLLM(f"{srv.url}?key={SECRET}", "fake"))
    assert SECRET not in str(e.value) and f"{srv.url}?key=***" in str(e.value)


def test_a_server_check_that_fails_shows_the_url_redacted(dead_url):
    with pytest.raises(LLMError) as e:
        check_server(f"{dead_url}?token={SECRET}", "fake", timeout_s=2)
    assert SECRET not in str(e.value) and f"{dead_url}?token=***" in str(e.value)
    with pytest.raises(ValueError) as v:
        OpenAICompatLLM(f"ftp://h/v1?token={SECRET}", "fake")
    assert SECRET not in str(v.value)


# ---------------------------------------------------------------------------- a whole run


def _bench(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["MEDSIM_API_KEY"] = ENV_KEY
    return subprocess.run([sys.executable, "-m", "medsim", "bench", "--cases", "demo", "--limit", "1", "--llm",
                           f"openai:{url}", "--model", "fake", "--out", str(out), "--no-progress", "--retries", "0",
                           "--backoff", "0", *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _files_holding(out: Path, secret: str) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes())


@pytest.mark.parametrize("fault", [None, "500"])
def test_a_key_in_the_query_string_reaches_no_file_of_a_run(tmp_path, fault):
    out = tmp_path / "run"
    with fault_server(fault, after=2) as srv:  # "500": the case ends in an error that names the URL
        r = _bench(f"{srv.url}?api_key={SECRET}&model=x", out)
        # a resume with another key continues the same run: the key is not part of its identity
        r2 = _bench(f"{srv.url}?api_key=OTHERVALUE456&model=x", out, "--resume", "--retry-errors")
    assert r.returncode == (0 if fault is None else 1), r.stderr
    assert r2.returncode == r.returncode, r2.stderr
    chats = [q for q in srv.requests if q["method"] == "POST"]
    assert chats and all(q["path"].endswith(f"?api_key={SECRET}&model=x") for q in chats[:3])
    for name in ("run.json", "results.jsonl", "summary.json", "report.md", "report.html"):
        assert (out / name).is_file(), name
    assert _files_holding(out, SECRET) == [] and _files_holding(out, "OTHERVALUE456") == []
    assert SECRET not in r.stdout + r.stderr + r2.stdout + r2.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["spec"]["roles"]["doctor"]["backend"] == f"openai:{srv.url}?api_key=***&model=x"  # still identifiable
    if fault == "500":
        assert f"{srv.url}?api_key=***&model=x" in r.stderr


def test_a_url_with_userinfo_and_a_query_key_is_refused_and_never_echoed(tmp_path):
    out = tmp_path / "run"
    with fault_server() as srv:
        r = _bench(srv.url.replace("http://", f"http://user:{SECRET}@") + f"?api_key={SECRET}", out)
    assert r.returncode == 2 and "credentials" in r.stderr
    assert SECRET not in r.stdout + r.stderr and srv.requests == [] and not out.exists()
