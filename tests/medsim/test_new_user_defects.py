"""Regressions for the defects found when the project was tried as a new user would
(issue "Core v2"). Each test drives the command line only, so the same file also runs
against an older checkout (``MEDSIM_CLI`` = the module to run, e.g. ``agents.cli``, and
``MEDSIM_CLI_CWD`` = its checkout), where these tests fail: that is how they were
checked to catch the defects."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CLI = os.environ.get("MEDSIM_CLI", "medsim")
CWD = os.environ.get("MEDSIM_CLI_CWD") or None
ENV = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYTHONPATH": CWD or ""}


def medsim(*args: str, timeout: float = 120, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", CLI, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or CWD, env=ENV)


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").split("\n") if line.strip()]


def no_traceback(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stderr, r.stderr[-2000:]


# -- a scriptable OpenAI-compatible server ----------------------------------------------
class _Chat(BaseHTTPRequestHandler):
    def log_message(self, *a):  # silence
        pass

    def do_GET(self):  # noqa: N802 - the model listing
        data = json.dumps({"data": [{"id": m} for m in self.server.served]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        msgs = body["messages"]
        system = msgs[0]["content"]
        role = ("doctor" if "Dr." in system or "doctor called" in system else "judge" if "physician" in system
                else "measurement" if "technician" in system or "measurement" in system else "patient")
        self.server.seen.append((role, body["model"]))
        if self.server.trickle:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(400):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass
            return
        script = self.server.script.get(role) or ["OK."]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        text = script[min(n, len(script) - 1)]
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    s = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    s.daemon_threads = True
    s.script, s.seen, s.trickle, s.served = {}, [], False, ["m", "doc-model", "judge-model"]
    threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield s, f"http://127.0.0.1:{s.server_address[1]}/v1"
    finally:
        s.shutdown()
        s.server_close()


def _case(id_: str, truth: str) -> str:
    return json.dumps({"id": id_, "OSCE_Examination": {
        "Objective_for_Doctor": "Assess the patient.", "Patient_Actor": {"Demographics": "50-year-old man",
                                                                         "History": "Short of breath."},
        "Test_Results": {"Complete_Blood_Count": {"WBC": "7.0"}}, "Correct_Diagnosis": truth}})


# -- replay ------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [["--protocol", "agentclinic"], ["--doctor-mode", "markers"]])
def test_replay_of_agentclinic_and_markers_runs(tmp_path, flags):
    out = tmp_path / "run"
    r = medsim("bench", "--cases", "demo", "--limit", "3", "--out", str(out), "--no-progress", *flags)
    assert r.returncode == 0, r.stderr
    r = medsim("replay", str(out), "--headless", "--frames", "6000", "--fixed-dt", "0.5", "--speed", "8")
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("demo-")]
    assert len(lines) == 3 and not any(": error" in x for x in lines), r.stdout
    want = {row["case_id"]: row["diagnosis"] for row in rows(out)}
    for x in lines:
        cid = x.split(":")[0]
        assert repr(want[cid]) in x, (x, want[cid])


# -- timeouts ----------------------------------------------------------------------------
def test_timeout_caps_a_whole_call_in_consult(tmp_path, server):
    s, url = server
    s.trickle = True
    t0 = time.perf_counter()
    try:
        r = medsim("consult", "--cases", "demo", "--llm", f"openai:{url}", "--model", "m", "--timeout", "2",
                   "--retries", "0", timeout=40)
    except subprocess.TimeoutExpired:
        pytest.fail("consult ignored --timeout: a trickling server held it for 40 s")
    wall = time.perf_counter() - t0
    assert r.returncode != 0 and wall < 20, (wall, r.stdout[-500:], r.stderr[-500:])
    assert "timeout" in (r.stdout + r.stderr).lower()


# -- the judge -----------------------------------------------------------------------------
def test_a_hedge_after_a_right_answer_is_right(agentclinic_path, tmp_path):
    out = tmp_path / "ac"
    r = medsim("bench", "--cases", str(agentclinic_path), "--out", str(out), "--no-progress", "--workers", "4",
               timeout=300)
    assert r.returncode == 0, r.stderr
    hedged = [x for x in rows(out) if x["diagnosis"] and x["diagnosis"].endswith(", I think")
              and x["diagnosis"][: -len(", I think")].strip().lower() == x["truth"].strip().lower()]
    assert len(hedged) >= 5
    assert [x["case_id"] for x in hedged if not x["correct"]] == []


def _served_case(tmp_path, server, truth, doctor_lines, judge_reply, extra=()):
    s, url = server
    cases = tmp_path / "c.jsonl"
    cases.write_text(_case("c1", truth) + "\n", encoding="utf-8")
    s.script = {"doctor": doctor_lines, "judge": [judge_reply], "patient": ["I feel breathless."],
                "measurement": ["RESULTS: WBC 7.0"]}
    out = tmp_path / "o"
    r = medsim("bench", "--cases", str(cases), "--llm", f"openai:{url}", "--model", "m", "--out", str(out),
               "--no-progress", "--min-gathering", "0", *extra)
    assert r.returncode == 0, r.stderr
    return rows(out)[0]


def test_a_more_specific_right_answer_is_right(tmp_path, server):
    dx = "Acute bilateral pulmonary emboli with small right lower lobe infarct, no CT evidence of right heart strain"
    row = _served_case(tmp_path, server, "Pulmonary embolism", [f"DIAGNOSIS READY: {dx}"], "No.")
    assert row["correct"] is True, row


def test_structured_text_keeps_its_closing_parenthesis(tmp_path, server):
    lines = [json.dumps({"action": "order_test", "text": "Complete blood count (CBC)"}),
             json.dumps({"action": "diagnose", "text": "Interstitial lung disease (ILD)"})]
    row = _served_case(tmp_path, server, "Silicosis", lines, "No.", extra=("--doctor-mode", "structured"))
    assert row["tests_requested"] == ["Complete blood count (CBC)"]
    assert row["diagnosis"] == "Interstitial lung disease (ILD)"


# -- case ids are data, not paths --------------------------------------------------------------
def test_case_ids_never_become_paths(tmp_path):
    outside = tmp_path / "outside"
    ids = [str(outside / "abs"), "../results", "../../escape", "x", "./x", "a\u0000b", "y" * 300, "semi;colon|pipe"]
    cases = tmp_path / "ids.jsonl"
    cases.write_text("\n".join(_case(i, "Asthma") for i in ids) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    r = medsim("bench", "--cases", str(cases), "--out", str(out), "--no-progress")
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    got = rows(out)
    assert sorted(x["case_id"] for x in got) == sorted(ids)
    assert not outside.exists() and not (tmp_path / "escape.jsonl").exists()
    files = list((out / "events").iterdir())
    assert len(files) == len(ids) and all(f.parent == out / "events" for f in files)
    assert sorted(p.name for p in out.iterdir()) == ["events", "report.html", "report.md", "results.csv", "results.jsonl",
                                                     "run.json", "summary.json", "transcripts"]
    assert sorted(p.name for p in (out / "transcripts").iterdir()) == sorted(f.stem + ".html" for f in files)
    r = medsim("bench", "--cases", str(cases), "--out", str(out), "--no-progress", "--resume")
    assert r.returncode == 0 and len(rows(out)) == len(ids), r.stderr


# -- bad input gets a clear message and nothing written ---------------------------------------------
def test_a_mistyped_llm_writes_nothing(tmp_path):
    out = tmp_path / "x"
    r = medsim("bench", "--cases", "demo", "--llm", "scriptd", "--out", str(out), "--no-progress")
    assert r.returncode == 2 and "scriptd" in r.stderr and not out.exists()
    no_traceback(r)
    r = medsim("bench", "--cases", "demo", "--limit", "2", "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args", [["bench", "--limit", "-1"], ["bench", "--limit", "0"], ["bench", "--workers", "0"],
                                  ["bench", "--max-turns", "0"], ["bench", "--min-gathering", "-2"],
                                  ["play", "--llm", "scripted", "--headless", "--frames", "5", "--doctors", "0"],
                                  ["play", "--llm", "scripted", "--headless", "--frames", "5", "--patients", "0"]])
def test_out_of_range_numbers_are_refused(tmp_path, args):
    out = tmp_path / "n"
    extra = ["--out", str(out), "--no-progress"] if args[0] == "bench" else ["--log", str(tmp_path / "s.jsonl")]
    r = medsim(*args, *extra, timeout=60)
    assert r.returncode == 2, (args, r.returncode, r.stdout[-300:])
    assert "must be at least" in r.stderr and not out.exists()
    no_traceback(r)


def test_a_bad_out_is_a_clear_message(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    for out in (f, f / "sub"):
        r = medsim("bench", "--cases", "demo", "--limit", "1", "--out", str(out), "--no-progress")
        assert r.returncode == 2 and str(f) in r.stderr and "[Errno" not in r.stderr, r.stderr
        no_traceback(r)


def test_a_non_utf8_cases_file_names_the_line(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(_case("ok", "Gout").encode() + b"\n" + _case("bad", "Caf\xe9 coronary").replace("\\u00e9", "\xe9").encode("latin-1") + b"\n")
    r = medsim("bench", "--cases", str(p), "--out", str(tmp_path / "o"), "--no-progress")
    no_traceback(r)
    assert r.returncode == 2 and f"{p}:2" in r.stderr and "UTF-8" in r.stderr


def test_resume_with_other_settings_names_the_difference(tmp_path):
    out = tmp_path / "r"
    assert medsim("bench", "--cases", "demo", "--limit", "2", "--out", str(out), "--no-progress").returncode == 0
    r = medsim("bench", "--cases", "demo", "--limit", "2", "--seed", "4", "--out", str(out), "--no-progress", "--resume")
    assert r.returncode == 2 and "seed" in r.stderr and len(r.stderr) < 400, r.stderr


# -- models per role ------------------------------------------------------------------------
def test_each_openai_role_has_its_own_model(tmp_path, server):
    s, url = server
    s.script = {"doctor": ["What brings you in?", "DIAGNOSIS READY: Asthma"], "judge": ["Yes."]}
    cases = tmp_path / "c.jsonl"
    cases.write_text(_case("c1", "Bronchial asthma exacerbation") + "\n")
    r = medsim("bench", "--cases", str(cases), "--llm", f"openai:{url}", "--doctor-model", "doc-model",
               "--judge-model", "judge-model", "--model", "m", "--out", str(tmp_path / "o"), "--no-progress",
               "--min-gathering", "0")
    assert r.returncode == 0, r.stderr
    by_role = {}
    for role, model in s.seen:
        by_role.setdefault(role, set()).add(model)
    assert by_role["doctor"] == {"doc-model"} and by_role["judge"] == {"judge-model"} and by_role["patient"] == {"m"}


def test_naming_one_role_says_what_the_others_use(tmp_path, server):
    s, url = server
    # a doctor that gets to a diagnosis: a run that scores nothing exits 1
    s.script = {"doctor": ["What brings you in?", "DIAGNOSIS READY: Asthma"]}
    r = medsim("bench", "--cases", "demo", "--limit", "1", "--doctor-llm", f"openai:{url}", "--doctor-model", "m",
               "--out", str(tmp_path / "o"), "--no-progress", "--min-gathering", "0")
    assert r.returncode == 0, r.stderr
    note = r.stderr.lower()
    assert "patient" in note and "judge" in note and "scripted" in note


# -- a dead server -----------------------------------------------------------------------------
def test_a_dead_server_is_found_before_the_run(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sock.close()
    out = tmp_path / "d"
    t0 = time.perf_counter()
    r = medsim("bench", "--cases", "demo", "--limit", "5", "--llm", f"openai:{url}", "--model", "m", "--out", str(out),
               "--no-progress", timeout=120)
    assert time.perf_counter() - t0 < 15 and r.returncode == 2 and url in r.stderr, r.stderr
    assert not (out / "results.jsonl").exists()
