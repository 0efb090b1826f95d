import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.bench import BenchConfig, BenchError, read_results, run_bench
from agents.cli import main
from agents.events import read_events

ROLES = ("doctor", "patient", "measurement", "judge")


def _cfg(tmp_path, **kw):
    kw.setdefault("progress", False)
    return BenchConfig(cases=kw.pop("cases", "demo"), out=kw.pop("out", tmp_path / "run"), **kw)


def test_all_agentclinic_cases_scripted_zero_errors(agentclinic_path, tmp_path):
    out = tmp_path / "ac"
    o = run_bench(_cfg(tmp_path, cases=str(agentclinic_path), out=out, workers=4))
    s = o.summary
    assert s["cases"] == 107 and s["errors"] == 0 and o.exit_code == 0
    assert 0 < s["correct"] < 107  # the scripted doctor is right for some, wrong for others
    assert s["ci95"][0] < s["accuracy"] < s["ci95"][1]
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 107 and len({r["case_id"] for r in rows}) == 107
    for key in ("case_id", "diagnosis", "correct", "error", "turns", "tests_requested",
                "prompt_tokens", "completion_tokens", "wall_s"):
        assert key in rows[0]
    assert len(list((out / "events").glob("*.jsonl"))) == 107
    summary = json.loads((out / "summary.json").read_text())
    for key in ("cases", "correct", "accuracy", "ci95", "errors"):
        assert key in summary
    assert "accuracy" in (out / "report.md").read_text()
    ev = read_events(out / "events" / "agentclinic_medqa-001.jsonl")
    h = ev[0]
    assert h["type"] == "header" and h["seed"] == 0 and set(h["models"]) == set(ROLES)
    assert h["git_revision"] and "python" in h["packages"]
    assert [e["seq"] for e in ev] == list(range(len(ev)))
    assert ev[-1]["type"] == "case_finished"
    assert {"utterance", "route", "test_requested", "test_result", "llm_call", "judge"} <= {e["type"] for e in ev}


def test_same_seed_gives_byte_identical_logs(tmp_path):
    a = run_bench(_cfg(tmp_path, out=tmp_path / "a", seed=7, workers=3)).out
    b = run_bench(_cfg(tmp_path, out=tmp_path / "b", seed=7, workers=1)).out
    c = run_bench(_cfg(tmp_path, out=tmp_path / "c", seed=8)).out
    names = sorted(p.name for p in (a / "events").iterdir())
    assert len(names) == 22
    for n in names:
        assert (a / "events" / n).read_bytes() == (b / "events" / n).read_bytes(), n
    assert any((a / "events" / n).read_bytes() != (c / "events" / n).read_bytes() for n in names)
    assert b"wall" not in (a / "events" / names[0]).read_bytes()


def test_out_dir_with_a_run_needs_resume(tmp_path):
    run_bench(_cfg(tmp_path, limit=2))
    with pytest.raises(BenchError, match="--resume"):
        run_bench(_cfg(tmp_path, limit=2))
    with pytest.raises(BenchError, match="different settings"):
        run_bench(_cfg(tmp_path, limit=2, seed=5, resume=True))


def test_resume_after_crash_loses_and_repeats_nothing(tmp_path):
    seen = []

    def crash_after_5(row):
        seen.append(row["case_id"])
        if len(seen) == 5:
            raise KeyboardInterrupt  # as if the process were stopped
    with pytest.raises(KeyboardInterrupt):
        run_bench(_cfg(tmp_path), on_row=crash_after_5)
    before = read_results(tmp_path / "run" / "results.jsonl")
    assert len(before) == 5
    # a torn line as from a kill mid-write
    with (tmp_path / "run" / "results.jsonl").open("a") as fh:
        fh.write('{"case_id": "demo-0')
    rerun = []
    o = run_bench(_cfg(tmp_path, resume=True), on_row=lambda r: rerun.append(r["case_id"]))
    rows = read_results(tmp_path / "run" / "results.jsonl")
    ids = [r["case_id"] for r in rows]
    assert len(ids) == 22 == len(set(ids)) and o.summary["cases"] == 22
    assert not set(rerun) & {r["case_id"] for r in before}
    assert rows[:5] == before


def _medsim(*args, **kw):
    return subprocess.run([sys.executable, "-m", "agents.cli", *args], capture_output=True, text=True, **kw)


def test_resume_after_sigkill(tmp_path, fake_openai):
    url, server = fake_openai
    server.delay_s = 0.02
    out = tmp_path / "k"
    args = ["bench", "--cases", "demo", "--llm", f"openai:{url}", "--model", "fake", "--out", str(out),
            "--workers", "2", "--no-progress"]
    p = subprocess.Popen([sys.executable, "-m", "agents.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if results.is_file() and len(results.read_text().splitlines()) >= 3:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = read_results(results)
    assert 3 <= len(before) < 22
    r = _medsim(*args, "--resume")
    assert r.returncode == 0, r.stderr
    ids = [row["case_id"] for row in read_results(results)]
    assert len(ids) == 22 == len(set(ids))
    assert json.loads((out / "summary.json").read_text())["cases"] == 22


def test_dead_server_retries_then_errors_and_run_goes_on(tmp_path, dead_url):
    out = tmp_path / "dead"
    r = _medsim("bench", "--cases", "demo", "--limit", "3", "--llm", "scripted", "--patient-llm", f"openai:{dead_url}",
                "--model", "m", "--retries", "2", "--backoff", "0.01", "--out", str(out), "--no-progress")
    assert r.returncode == 1
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 3 and all(row["error"] and "cannot reach" in row["error"] for row in rows)
    assert all(row["correct"] is None for row in rows)
    s = json.loads((out / "summary.json").read_text())
    assert s["errors"] == 3 and s["scored"] == 0
    ev = read_events(out / "events" / "demo-001.jsonl")
    assert [e["attempt"] for e in ev if e["type"] == "llm_retry"] == [1, 2]
    assert ev[-1]["status"] == "error"


def test_workers_against_a_server(tmp_path, fake_openai, monkeypatch):
    url, server = fake_openai
    monkeypatch.setenv("MEDSIM_API_KEY", "sk-secret-123")
    out = tmp_path / "srv"
    o = run_bench(_cfg(tmp_path, out=out, llm={r: f"openai:{url}" for r in ROLES}, model="fake", workers=8))
    assert o.summary["cases"] == 22 and o.summary["errors"] == 0
    rows = read_results(out / "results.jsonl")
    assert all(r["n_tests"] == 1 and r["diagnosis"] == "Pneumonia" for r in rows)
    # the fake server's judge says "No." to everything the pre-check leaves to it
    assert all(r["correct"] is False and r["judge_method"] == "llm" for r in rows)
    assert all(r["prompt_tokens_evaluated"] == r["prompt_tokens"] for r in rows)
    assert server.requests[0]["auth"] == "Bearer sk-secret-123"
    assert all(req["path"] == "/v1/chat/completions" for req in server.requests)
    assert "sk-secret-123" not in "".join(p.read_text() for p in (out / "events").iterdir())


def test_malformed_case_file_stops_before_running(tmp_path, capsys):
    bad = tmp_path / "cases.jsonl"
    good = json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x", "Patient_Actor": {"Demographics": "30-year-old"},
                                            "Correct_Diagnosis": "Flu"}})
    bad.write_text(good + "\n{broken\n" + json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x"}}) + "\n")
    out = tmp_path / "m"
    rc = main(["bench", "--cases", str(bad), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}:2: field '<json>'" in err and f"{bad}:3: field 'OSCE_Examination.Correct_Diagnosis'" in err
    assert not (out / "results.jsonl").exists()
    rc = main(["bench", "--cases", str(bad), "--out", str(out), "--no-progress", "--skip-invalid"])
    assert rc == 0 and len(read_results(out / "results.jsonl")) == 1


def test_bad_backend_spec_is_a_clear_error(tmp_path, capsys):
    rc = main(["bench", "--cases", "demo", "--llm", "bogus", "--out", str(tmp_path / "x"), "--no-progress"])
    assert rc == 2 and "unknown backend spec 'bogus'" in capsys.readouterr().err


def test_server_doctor_gets_the_json_schema_in_structured_mode(tmp_path, fake_openai):
    url, server = fake_openai
    o = run_bench(_cfg(tmp_path, out=tmp_path / "s", llm={r: f"openai:{url}" for r in ROLES}, model="fake",
                       limit=1, doctor_mode="structured"))
    assert o.summary["errors"] == 0
    doctor_bodies = [q["body"] for q in server.requests if q["body"]["messages"][0]["content"].startswith("You are Dr.")]
    fmt = doctor_bodies[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["properties"]["action"]["enum"]
    # the fake server ignores the schema and answers in markers: parsed by the recorded fallback
    ev = read_events(tmp_path / "s" / "events" / "demo-001.jsonl")
    assert any(e["type"] == "route" and e["rule"].startswith("structured_fallback") for e in ev)
    # markers by default for server doctors
    n = len(server.requests)
    run_bench(_cfg(tmp_path, out=tmp_path / "m", llm={r: f"openai:{url}" for r in ROLES}, model="fake", limit=1))
    assert all("response_format" not in q["body"] for q in server.requests[n:])
