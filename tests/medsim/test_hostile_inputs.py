"""Hostile inputs get a clear message, not a traceback (issue 23): a TOML spec nested
thousands deep, a port out of range, a request to ``medsim view`` naming another host (DNS
rebinding), a connection that never speaks, and a reader that leaves the pipe early."""
from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from medsim import report_server
from medsim.cli import main
from medsim.report_server import make_server
from medsim.spec import RunSpec, SpecError

REPO = Path(__file__).resolve().parents[2]
DEEP = 5000


@pytest.mark.parametrize("text", [
    "seeds = " + "[" * DEEP + "]" * DEEP,  # the parser's own recursion
    "x = " + "{a = " * DEEP + "1" + "}" * DEEP,
    'cases = "demo"\n[conditions.x.roles.doctor.' + ".".join(["a"] * DEEP) + "]\nb = 1",  # parsed; walked later
])
@pytest.mark.parametrize("command", ["bench", "config"])
def test_a_spec_nested_thousands_deep_is_a_clear_error_naming_the_file(tmp_path, caplog, capsys, text, command):
    f = tmp_path / "deep.toml"
    f.write_text(text, encoding="utf-8")
    argv = [command, "--config", str(f)] + (["--out", str(tmp_path / "run"), "--no-progress"] if command == "bench"
                                             else [])
    assert main(argv) == 2
    said = caplog.text + capsys.readouterr().err
    assert str(f) in said and "nested" in said and "Traceback" not in said
    assert not (tmp_path / "run").exists()


def test_a_spec_dict_nested_too_deep_is_refused_before_it_is_walked():
    d: dict = {}
    cur = d
    for _ in range(DEEP):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(SpecError, match="nested more than"):
        RunSpec.from_dict({"cases": "demo", "conditions": {"x": {"roles": {"doctor": d}}}})


@pytest.mark.parametrize("port, says", [("70000", "a port is 1-65535"), ("-1", "a port is 1-65535"),
                                        ("65536", "a port is 1-65535"), ("http", "expected a port number")])
def test_a_bad_port_is_an_argparse_error(tmp_path, capsys, port, says):
    with pytest.raises(SystemExit) as e:
        main(["view", str(tmp_path), f"--port={port}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --port" in err and says in err and "Traceback" not in err


def test_port_arg_takes_0_to_65535():
    assert [report_server.port_arg(x) for x in ("0", "1", "8000", "65535")] == [0, 1, 8000, 65535]


@pytest.fixture
def served(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.html").write_text("<p>the answer keys</p>", encoding="utf-8")
    server = make_server(run, 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _get(port: int, host: str | None) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.putrequest("GET", "/report.html", skip_host=True)
        if host is not None:
            c.putheader("Host", host)
        c.endheaders()
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_view_answers_only_requests_for_its_own_loopback_address(served):
    port = served.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert _get(port, host) == (200, b"<p>the answer keys</p>"), host
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", f"127.0.0.1:{port + 1}",
                 "127.0.0.1", "localhost", "", f"[::1]:{port}", None):
        status, body = _get(port, host)
        assert status == 403 and b"answer keys" not in body, host


def test_view_closes_a_connection_that_sends_nothing(served, monkeypatch):
    limit = report_server.RunHandler.timeout  # the socket timeout each connection gets (None: wait for ever)
    assert isinstance(limit, (int, float)) and 0 < limit <= 60, limit
    monkeypatch.setattr(report_server.RunHandler, "timeout", 0.5)  # the same mechanism, faster
    t0 = time.monotonic()
    with socket.create_connection(served.server_address, timeout=10) as s:
        try:
            got = s.recv(100)  # the server closes it: b""
        except socket.timeout:
            pytest.fail("an idle connection was kept open")
    assert got == b"" and time.monotonic() - t0 < 5


def test_a_reader_that_leaves_early_is_no_error(tmp_path):
    """``medsim cases ... | head -1``: the reader leaves; medsim ends quietly (on main:
    "medsim: error: Broken pipe")."""
    rec = json.loads((REPO / "agents" / "casesets" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0])
    cases = tmp_path / "many.jsonl"
    cases.write_text("".join(json.dumps({**rec, "id": f"case-{i:05d}"}) + "\n" for i in range(3000)),
                     encoding="utf-8")
    p = subprocess.Popen([sys.executable, "-m", "medsim", "cases", str(cases)], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"case-00000")
    p.stdout.close()  # as `head -1` does
    err = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert rc in (0, 141) and "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err
