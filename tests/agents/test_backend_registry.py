"""The backend registry (agents.llm.registry) and the conformance check that ships with it
(agents.llm.conformance.check_backend), run over every built-in kind that can run here:
scripted, human and none; smollm2 and gguf: with the small test model (llama-marked);
openai: against the loopback fake server, a2a: against the loopback fake agent, and a dead
server, whose calls must fail as LLMErrors."""
from __future__ import annotations

import json
import math

import pytest

from agents.cases import load_cases
from agents.llm.backend_kind import BackendKind, BackendSpecError
from agents.llm.base import CallContext, LLMError, Message, Output
from agents.llm.conformance import BackendConformanceError, check_backend, schema_problems
from agents.llm.providers import BUILTIN_KINDS, check_gguf_file
from agents.llm.registry import (backend_kind, backend_kinds, find_backend_kind, kinds_help, register_backend,
                                 unregister_backend)
from agents.llm import spec as llm_spec
from agents.protocol import doctor_schema
from medsim.spec import ProtocolSpec
from tests.a2a_server import a2a_agent
from tests.helpers import clean_http_env

KEY = "sk-registry-SECRET-0123456789"
URL_SECRET = "URLSECRET-REGISTRY-4242"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_http_env(monkeypatch, KEY)


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


# -- the registry -------------------------------------------------------------------------------
def test_every_spec_finds_its_one_kind_and_an_unknown_one_is_refused_with_the_list():
    names = {"scripted": "scripted", "local": "local", "smollm2": "smollm2", "gguf:m.gguf": "gguf",
             "gguf:m.gguf,p.gguf": "gguf", "openai:http://h/v1": "openai", "a2a:http://h/": "a2a", "human": "human",
             "none": "none"}
    for spec, name in names.items():
        assert backend_kind(spec).name == name, spec
    for bad in ("bogus", "local:x", "scripted:", "gguf", "openai", f"nope:http://h/?api_key={URL_SECRET}"):
        assert find_backend_kind(bad) is None, bad
        with pytest.raises(BackendSpecError) as e:
            backend_kind(bad)
        assert "unknown backend" in str(e.value) and URL_SECRET not in str(e.value)
        assert "scripted, local, smollm2, gguf:PATH, openai:URL, a2a:URL or human" in str(e.value)
    assert [k.name for k in backend_kinds()][:len(BUILTIN_KINDS)] == [k.name for k in BUILTIN_KINDS]
    assert llm_spec.KINDS == kinds_help() == "scripted, local, smollm2, gguf:PATH, openai:URL, a2a:URL or human"
    assert "openai:URL: any OpenAI-compatible server" in kinds_help(long=True)


def test_a_kind_registers_once_under_a_proper_name_and_is_listed_until_unregistered():
    class Extra(BackendKind):
        name = "extra"
        takes_argument = True
        usage = "extra:WHAT"
        help = "a kind for this test"

    kind = register_backend(Extra())
    try:
        assert backend_kind("extra:x") is kind and kinds_help().endswith("human or extra:WHAT")
        assert "extra:WHAT" in str(pytest.raises(BackendSpecError, backend_kind, "bogus").value)
        with pytest.raises(ValueError, match="registered already"):
            register_backend(Extra())
        assert register_backend(Extra(), replace=True) is not kind
    finally:
        unregister_backend("extra")
    assert find_backend_kind("extra:x") is None and "extra" not in kinds_help()
    for bad in ("", "Upper", "has space", "a:b"):
        Bad = type("Bad", (BackendKind,), {"name": bad})
        with pytest.raises(ValueError, match="lower-case word"):
            register_backend(Bad())
    with pytest.raises(TypeError):
        register_backend(Extra)  # the class, not an instance
    with pytest.raises(KeyError):
        unregister_backend("extra")


def test_what_the_spec_functions_read_from_the_kinds():
    assert [s for s in ("scripted", "local", "smollm2", "gguf:a", "gguf:a,b", "openai:http://h/v1", "a2a:http://h/",
                        "human", "none", "bogus") if llm_spec.is_in_process(s)] == ["local", "smollm2", "gguf:a",
                                                                                    "gguf:a,b"]
    assert not llm_spec.decodes_batched("gguf:a,b") and llm_spec.decodes_batched("gguf:a")  # a projector: serial
    assert llm_spec.describe_spec(f"openai:http://h/v1?api_key={URL_SECRET}", "m") == "openai:http://h/v1?api_key=***#m"
    assert llm_spec.describe_spec("local", None).startswith("local:qwen")


def test_the_auto_doctor_mode_follows_whether_the_kind_constrains_replies_to_a_schema():
    modes = {spec: ProtocolSpec.parse({}, doctor_backend=spec).doctor_mode
             for spec in ("scripted", "local", "smollm2", "gguf:a", "openai:http://h/v1", "a2a:http://h/", "human")}
    assert modes == {"scripted": "structured", "local": "structured", "smollm2": "structured", "gguf:a": "structured",
                     "openai:http://h/v1": "markers", "a2a:http://h/": "markers", "human": "structured"}


def test_a_gguf_path_must_be_a_regular_file_that_starts_with_the_magic_bytes(tmp_path):
    good, text, empty = tmp_path / "m.gguf", tmp_path / "passwd", tmp_path / "empty.gguf"
    good.write_bytes(b"GGUF" + bytes(64))
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    empty.write_bytes(b"")
    assert check_gguf_file(good) == good
    for path, words in ((text, "is not a GGUF model file"), (empty, "is not a GGUF model file"),
                        (tmp_path, "not a regular file"), (tmp_path / "nope.gguf", "GGUF model file not found")):
        with pytest.raises(BackendSpecError, match=words) as e:
            llm_spec.build_backend(f"gguf:{path}", model=None, cases={}, seed=0, pool=None)
        assert str(path) in str(e.value)
    with pytest.raises(BackendSpecError, match="GGUF projector file not found"):
        llm_spec.build_backend(f"gguf:{good},{tmp_path / 'proj.gguf'}", model=None, cases={}, seed=0, pool=None)


# -- the conformance check over the built-in kinds -------------------------------------------------
def test_scripted_conforms_with_the_doctor_schema(demo):
    first = next(iter(demo))
    report = check_backend("scripted", cases=demo, ctx=CallContext("doctor", first), schema=doctor_schema())
    assert report.calls == ["output", "output"] and report.kind == "scripted"


@pytest.mark.parametrize("spec", ["human", "none"])
def test_a_kind_without_a_model_conforms_by_failing_every_call_plainly(spec):
    assert check_backend(spec).calls == ["LLMError (not transient)"] * 2
    with pytest.raises(BackendConformanceError, match="raised"):
        check_backend(spec, expect="output")


def test_openai_conforms_against_the_fake_server_and_hides_the_urls_key(fake_openai):
    url, server = fake_openai
    report = check_backend(f"openai:{url}?api_key={URL_SECRET}", model="fake")
    assert report.calls == ["output", "output"] and URL_SECRET not in report.backend
    assert len(server.requests) == 2 and "response_format" in server.requests[1]["body"]
    assert server.requests[0]["auth"] == f"Bearer {KEY}"


def test_a_dead_servers_backend_conforms_by_failing_transiently(dead_url):
    report = check_backend(f"openai:{dead_url}?api_key={URL_SECRET}", model="fake", expect="error", timeout_s=2)
    assert report.calls == ["LLMError (transient)"] * 2
    with pytest.raises(BackendConformanceError, match="cannot reach"):
        check_backend(f"openai:{dead_url}", model="fake", timeout_s=2)


def test_a2a_conforms_against_the_fake_agent():
    with a2a_agent() as agent:
        report = check_backend(f"a2a:{agent.url}?api_key={URL_SECRET}")
        assert report.calls == ["output", "output"] and len(agent.sent()) == 2


@pytest.mark.llama
def test_smollm2_and_gguf_conform_with_a_schema_they_hold_to(smol):
    """The real in-process path: a JSON schema becomes a llama.cpp grammar, so even the
    135M model's second reply follows it."""
    assert check_backend("smollm2", pool=smol.pool, max_tokens=40).calls == ["output", "output"]
    assert check_backend(f"gguf:{smol.path}", pool=smol.pool, max_tokens=40).calls == ["output", "output"]


# -- the check can fail ---------------------------------------------------------------------------
class _Sloppy:
    """A backend that gets everything wrong: what check_backend is for."""

    def __init__(self, how: str):
        self.how = how
        self.name = f"sloppy?api_key={URL_SECRET}" if how == "name" else "sloppy"

    def generate(self, messages, params, ctx):
        if self.how == "raises":
            raise ValueError("boom")
        if self.how == "error":
            err = LLMError("down", backend=self.name)
            err.transient = "maybe"
            raise err
        if self.how == "fields":
            return Output(text=None, model="other", prompt_tokens=-1, prompt_tokens_evaluated=5, completion_tokens=1.5,
                          latency_s=math.nan, finish_reason="")
        return Output(text="not json" if params.response_schema else "hi", model=self.name, latency_s=0.1)


@pytest.mark.parametrize("how, words", [
    ("raises", "raised ValueError (boom), not an LLMError"),
    ("error", "LLMError.transient is 'maybe', not a bool"),
    ("fields", "Output.text is a NoneType"),
    ("fields", "Output.prompt_tokens is -1"),
    ("fields", "Output.completion_tokens is 1.5"),
    ("fields", "Output.latency_s is nan"),
    ("fields", "is not the backend's name"),
    ("json", "this is not JSON"),
])
def test_the_check_finds_what_a_backend_gets_wrong(how, words):
    with pytest.raises(BackendConformanceError) as e:
        check_backend(_Sloppy(how), constrains=True, expect="error" if how == "error" else None)
    assert words in str(e.value), str(e.value)


def test_the_check_finds_a_kind_that_shows_a_secret_or_names_another_kind():
    class Leaky(BackendKind):
        name = "leaky"
        takes_argument = True
        help = "shows what it should not"

        def redact(self, spec):
            return spec

        def build(self, spec, *, model, cases, seed, pool):
            return _Sloppy("name")

    with pytest.raises(BackendConformanceError) as e:
        check_backend(Leaky(), f"leaky:http://h/?api_key={URL_SECRET}")
    msg = str(e.value)
    assert "redact() shows the spec's secret" in msg and "describe() shows the secret in a URL's query" in msg
    assert "the backend's name shows a secret" in msg and "does not name its kind" in msg
    assert URL_SECRET not in msg


def test_the_schema_check_reads_the_keywords_medsim_uses():
    schema = doctor_schema()
    assert schema_problems({"action": "ask_patient", "text": "How long?"}, schema) == []
    assert schema_problems({"action": "order_test", "test": "Complete blood count"}, schema) == []
    assert schema_problems({"action": "ask_patient", "text": "x"}, schema)  # minLength 2
    assert schema_problems({"action": "diagnose", "text": "Flu", "extra": 1}, schema)  # additionalProperties
    assert schema_problems({"action": "order_test", "test": "a haircut"}, schema)  # enum
    assert schema_problems(json.loads('{"answer": true}'), {"properties": {"answer": {"type": "string"}}})
