"""medsim's ``a2a:`` backend against doctors built on the reference A2A SDK, not only
against medsim's own fake: a2a-sdk 1.x (protocol 1.0) in this process, without and with
its 0.3 compatibility layer, and a2a-sdk 0.3 in a process of its own (one environment
holds one version of the ``a2a`` package; ``make`` installs 0.3 under .venv/a2a-sdk-0.3).
Each mode of tests/a2a_sdk1_agent.py (a Message, a Task with an artifact, a chunked
artifact, input-required turns, a streamed reply, a stateless agent) runs one
``medsim bench`` consultation that must end diagnosed and judged; the preflight refuses
an agent it cannot speak to before anything is written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from agents.events import read_events
from agents.llm.a2a import HISTORY_OPEN, INSTRUCTIONS_OPEN, A2ALLM, check_agent
from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.results import read_results
from medsim.cli import main
from tests import a2a_doctor
from tests.helpers import clean_http_env

REQUIRED = os.environ.get("MEDSIM_REQUIRE_A2A") == "1"  # make test: the SDKs are installed, never skipped
ROOT = Path(__file__).resolve().parents[2]
SDK03 = Path(sys.prefix) / "a2a-sdk-0.3"  # pip install --target (Makefile)
MODES = a2a_doctor.MODES

try:
    from tests.a2a_sdk1_agent import sdk1_agent
except ImportError as e:  # pragma: no cover - only without the test extra
    if REQUIRED:
        raise
    pytest.skip(f"a2a-sdk 1.x is not installed ({e}); pip install -e '.[test]'", allow_module_level=True)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_http_env(monkeypatch)


def _bench(tmp_path: Path, url: str, *, history: str | None = None, name: str = "run") -> tuple[int, Path]:
    out = tmp_path / name
    argv = ["bench", "--cases", "demo", "--limit", "1", "--doctor-llm", f"a2a:{url}", "--llm", "scripted",
            "--min-gathering", "0", "--max-turns", "6", "--out", str(out), "--no-progress"]
    if history:
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(f'[roles.doctor]\nbackend = "a2a:{url}"\nhistory = "{history}"\n')
        argv += ["--config", str(cfg)]
    return main(argv), out


def _judged(out: Path) -> dict:
    [row] = read_results(out / "results.jsonl")
    assert row["error"] is None, row["error"]
    assert row["status"] == "diagnosed" and row["diagnosis"] == "Pneumonia", row
    assert row["correct"] in (True, False)  # the judge decided
    ev = read_events(out / row["events"])
    said = [e["text"] for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert said[:2] == list(a2a_doctor.LINES[:2]), said  # the agent's own words, whole (chunks joined)
    return row


def _check_received(mode: str, received: list[dict], protocol: str) -> None:
    assert len(received) == 3, received
    methods = {("1.0", False): "SendMessage", ("1.0", True): "SendStreamingMessage", ("0.3", False): "message/send",
               ("0.3", True): "message/stream"}
    assert {r["method"] for r in received} == {methods[protocol, mode == "streaming"]}  # streamed where offered
    if mode == "stateless":  # the whole conversation every turn, in a new context
        assert all(r["text"].startswith(INSTRUCTIONS_OPEN) for r in received)
        assert HISTORY_OPEN in received[2]["text"]
        assert len({r["contextId"] for r in received}) == 3  # none continued: the agent would not know it
        return
    assert received[0]["text"].startswith(INSTRUCTIONS_OPEN)
    assert all(INSTRUCTIONS_OPEN not in r["text"] for r in received[1:])  # only the new turns after the first
    assert len({r["contextId"] for r in received}) == 1  # the context the agent opened, continued
    # an input-required task is continued by its id; every other turn is a task of its own
    assert len({r["taskId"] for r in received}) == (1 if mode == "input_required" else 3)


# -- a2a-sdk 1.x, protocol 1.0 -------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_a_consultation_with_an_sdk_1_agent_completes_and_is_judged(tmp_path, mode, capsys):
    with sdk1_agent(mode) as agent:
        card = check_agent(agent.url)
        assert card.dialect.version == "1.0" and card.streaming == (mode == "streaming")
        rc, out = _bench(tmp_path, agent.url, history="full" if mode == "stateless" else None)
        assert rc in (0, 1), capsys.readouterr().err
        _judged(out)
        _check_received(mode, agent.received, "1.0")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocols", [("1.0", "0.3"), ("0.3",)])
def test_an_sdk_1_agent_with_its_0_3_layer_is_spoken_to_in_the_newest_protocol_it_offers(tmp_path, protocols, mode,
                                                                                          capsys):
    """The layer on: a card offering both is spoken 1.0 to; one offering only 0.3 (an
    author who kept the old interface) goes through the SDK's 0.3 layer."""
    with sdk1_agent(mode, compat=True, protocols=protocols) as agent:
        assert check_agent(agent.url).dialect.version == protocols[0]
        rc, out = _bench(tmp_path, agent.url, history="full" if mode == "stateless" else None)
        assert rc in (0, 1), capsys.readouterr().err
        _judged(out)
        _check_received(mode, agent.received, protocols[0])


def test_without_the_layer_an_sdk_1_agent_refuses_0_3_which_medsim_then_does_not_send(tmp_path):
    """What broke every case before: 0.3's method names to a 1.x agent without the layer."""
    with sdk1_agent("message") as agent:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}}}).encode()
        req = urllib.request.Request(agent.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310 - 127.0.0.1
            assert json.loads(r.read())["error"]["code"] == -32601  # Method not found
        llm = A2ALLM(agent.url)  # no preflight: the card is read on the first call
        out = llm.generate([Message("user", "hello")], GenerateParams(max_tokens=100, timeout_s=10),
                           CallContext("doctor", "c1", 1))
        assert out.text == a2a_doctor.LINES[0]


@pytest.mark.parametrize("protocols, words", [(("GRPC 1.0",), "GRPC 1.0"), (("HTTP+JSON 1.0",), "HTTP+JSON 1.0"),
                                               (("2.0",), "JSONRPC 2.0")])
def test_the_preflight_refuses_an_agent_medsim_cannot_speak_to_before_anything_is_written(tmp_path, protocols,
                                                                                            words, capsys):
    with sdk1_agent("message", protocols=protocols) as agent:
        with pytest.raises(LLMError) as e:
            check_agent(agent.url)
        assert words in str(e.value) and "JSON-RPC with protocol 1.0 or 0.3" in str(e.value)
        rc, out = _bench(tmp_path, agent.url)
        err = capsys.readouterr().err
        assert rc == 2 and "the agent check failed before the run" in err and words in err, err
        assert not out.exists() and not agent.received
        with pytest.raises(LLMError) as e:  # without a preflight: refused at the first call, nothing sent
            A2ALLM(agent.url).generate([Message("user", "hello")], GenerateParams(max_tokens=50, timeout_s=10),
                                       CallContext("doctor", "c1", 1))
        assert words in str(e.value) and not e.value.transient and not agent.received


# -- a2a-sdk 0.3, protocol 0.3 -------------------------------------------------------------
@contextmanager
def sdk03_agent(mode: str):
    if not (SDK03 / "a2a").is_dir():
        if REQUIRED:
            raise AssertionError(f"a2a-sdk 0.3 is not installed under {SDK03}: run make venv")
        pytest.skip(f"a2a-sdk 0.3 is not installed under {SDK03} (make venv installs it)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SDK03), str(ROOT)]))
    p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "a2a_sdk03_agent.py"), mode], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        assert first.startswith("PORT "), (first, p.stderr.read() if p.poll() is not None else "")
        url = f"http://127.0.0.1:{int(first.split()[1])}/"
        received: list[dict] = []

        def read():
            for line in p.stdout:
                if line.startswith("GOT "):
                    received.append(json.loads(line[4:]))

        threading.Thread(target=read, daemon=True).start()
        for _ in range(300):  # until it serves its card
            try:
                urllib.request.urlopen(url + ".well-known/agent-card.json", timeout=1).close()  # noqa: S310
                break
            except OSError:
                time.sleep(0.05)
        yield url, received
    finally:
        p.kill()
        p.wait(10)


@pytest.mark.parametrize("mode", MODES)
def test_a_consultation_with_an_sdk_0_3_agent_completes_and_is_judged(tmp_path, mode, capsys):
    with sdk03_agent(mode) as (url, received):
        card = check_agent(url)
        assert card.dialect.version == "0.3" and card.streaming == (mode == "streaming")
        rc, out = _bench(tmp_path, url, history="full" if mode == "stateless" else None)
        assert rc in (0, 1), capsys.readouterr().err
        _judged(out)
        time.sleep(0.2)  # the agent's last GOT line
        _check_received(mode, received, "0.3")
