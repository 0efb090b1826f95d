import json
import signal
import subprocess
import sys
import time

import pytest

from agents.events import read_events
from agents.judge import precheck
from agents.results import read_results
from medsim.bench import BenchError, BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import build_spec
from tests.helpers import log_bytes

from agents.roles import role_names

ROLES = role_names()


def _run(tmp_path, out="run", *, progress=False, resume=False, **over):
    spec = build_spec(None, over)
    return run_bench(spec, BenchOptions(out=tmp_path / out, progress=progress, resume=resume))


def _events(out, row):
    return read_events(out / row["events"])


def test_all_agentclinic_cases_scripted_zero_errors(agentclinic_path, tmp_path):
    o = _run(tmp_path, "ac", cases=str(agentclinic_path), workers=4)
    out = o.out
    s = o.summary
    assert s["cases"] == 107 and s["errors"] == 0 and o.exit_code == 0
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 107 and len({r["case_id"] for r in rows}) == 107
    assert s["ci95"][0] <= s["accuracy"] <= s["ci95"][1]
    assert s["correct"] == sum(1 for r in rows if r["correct"])
    for key in ("case_id", "seed", "condition", "diagnosis", "correct", "error", "turns", "tests_requested",
                "prompt_tokens", "completion_tokens", "wall_s", "events"):
        assert key in rows[0]
    assert len(list((out / "events").glob("*.jsonl"))) == 107
    summary = json.loads((out / "summary.json").read_text())
    for key in ("cases", "correct", "accuracy", "ci95", "errors"):
        assert key in summary
    assert "accuracy" in (out / "report.md").read_text()
    for r in rows:
        ev = _events(out, r)
        h = ev[0]
        assert h["type"] == "header" and h["case_id"] == r["case_id"] and h["seed"] == 0 and h["condition"] == "base"
        assert set(h["models"]) == set(ROLES) and h["spec"]["cases"] == str(agentclinic_path)
        assert h["git_revision"] and "python" in h["packages"]
        assert [e["seq"] for e in ev] == list(range(len(ev)))
        assert ev[-1]["type"] == "case_finished" and ev[-1]["correct"] == r["correct"]
        # the row is what the log says: tests ordered, the diagnosis given, the verdict
        assert r["tests_requested"] == [e["test"] for e in ev if e["type"] == "test_requested"]
        assert r["diagnosis"] == next((e["diagnosis"] for e in ev if e["type"] == "diagnosis"), None)
        judge = [e for e in ev if e["type"] == "judge"]
        assert len(judge) == 1 and judge[0]["correct"] == r["correct"]
        # a pre-check verdict must agree with the pre-check run independently
        if judge[0]["method"] == "precheck":
            assert precheck(r["diagnosis"], r["truth"]).correct == r["correct"]


def test_same_seed_gives_byte_identical_logs(tmp_path):
    a = _run(tmp_path, "a", seed=7, workers=3).out
    b = _run(tmp_path, "b", seed=7, workers=3).out
    c = _run(tmp_path, "c", seed=8).out
    d = _run(tmp_path, "d", seed=7, workers=1).out
    names = sorted(p.name for p in (a / "events").iterdir())
    assert len(names) == 22
    for n in names:
        # byte for byte but the header's command line and start time (the invocation's stamp)
        assert log_bytes(a / "events" / n) == log_bytes(b / "events" / n), n
        # another worker count changes nothing: the header holds the spec but how many cells ran at once
        assert log_bytes(a / "events" / n) == log_bytes(d / "events" / n), n
    c_names = sorted(p.name for p in (c / "events").iterdir())
    assert c_names != names  # the seed is part of the file name
    assert any((a / "events" / n).read_bytes().split(b"\n", 1)[1] != (c / "events" / m).read_bytes().split(b"\n", 1)[1]
               for n, m in zip(names, c_names))
    assert b"wall" not in (a / "events" / names[0]).read_bytes()


def test_out_dir_with_a_run_needs_resume(tmp_path):
    _run(tmp_path, limit=2)
    with pytest.raises(BenchError, match="--resume"):
        _run(tmp_path, limit=2)
    with pytest.raises(BenchError, match="differ") as e:
        _run(tmp_path, limit=2, seed=5, resume=True)
    msg = str(e.value)
    # only what differs, not two whole dicts
    assert "seeds: [5] here, [0] in the run" in msg and "roles" not in msg and len(msg) < 300
    # another worker count is the same run
    _run(tmp_path, limit=2, workers=3, resume=True)


def test_resume_after_crash_loses_and_repeats_nothing(tmp_path):
    seen = []

    def crash_after_5(row):
        seen.append(row["case_id"])
        if len(seen) == 5:
            raise KeyboardInterrupt  # as if the process were stopped
    spec = build_spec(None, {})
    with pytest.raises(KeyboardInterrupt):
        run_bench(spec, BenchOptions(out=tmp_path / "run", progress=False), on_row=crash_after_5)
    before = read_results(tmp_path / "run" / "results.jsonl")
    assert len(before) == 5
    # a torn line as from a kill mid-write
    with (tmp_path / "run" / "results.jsonl").open("a") as fh:
        fh.write('{"case_id": "demo-0')
    rerun = []
    o = run_bench(spec, BenchOptions(out=tmp_path / "run", progress=False, resume=True),
                  on_row=lambda r: rerun.append(r["case_id"]))
    rows = read_results(tmp_path / "run" / "results.jsonl")
    ids = [r["case_id"] for r in rows]
    assert len(ids) == 22 == len(set(ids)) and o.summary["cases"] == 22
    assert not set(rerun) & {r["case_id"] for r in before}
    assert rows[:5] == before


def test_grid_of_conditions_and_seeds_resumes_by_cell(tmp_path):
    """Rows are keyed by (case, seed, condition): a grid resumes cell by cell."""
    toml = tmp_path / "grid.toml"
    toml.write_text('cases = "demo"\nlimit = 3\nseeds = [0, 1]\n'
                    '[conditions.structured]\n[conditions.markers]\nprotocol = { doctor_mode = "markers" }\n')
    spec = build_spec(toml)
    assert spec.condition_names() == ["structured", "markers"]
    n = []

    def stop_after_7(row):
        n.append(row)
        if len(n) == 7:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_bench(spec, BenchOptions(out=tmp_path / "g", progress=False), on_row=stop_after_7)
    o = run_bench(spec, BenchOptions(out=tmp_path / "g", progress=False, resume=True))
    rows = read_results(tmp_path / "g" / "results.jsonl")
    keys = [(r["case_id"], r["seed"], r["condition"]) for r in rows]
    assert len(keys) == 12 == len(set(keys))
    assert set(o.summary["conditions"]) == {"structured", "markers"} and o.summary["seeds"] == [0, 1]
    # each cell ran with its own protocol
    for r in rows:
        rules = {e["rule"] for e in read_events(tmp_path / "g" / r["events"]) if e["type"] == "route"}
        assert all(x.startswith("structured") for x in rules) == (r["condition"] == "structured"), (r["condition"], rules)
    assert len(list((tmp_path / "g" / "events").iterdir())) == 12


def _medsim(*args, **kw):
    return subprocess.run([sys.executable, "-m", "medsim", *args], capture_output=True, text=True, **kw)


def test_resume_after_sigkill(tmp_path, fake_openai):
    url, server = fake_openai
    server.delay_s = 0.02
    out = tmp_path / "k"
    args = ["bench", "--cases", "demo", "--llm", f"openai:{url}", "--model", "fake", "--out", str(out),
            "--workers", "2", "--no-progress"]
    p = subprocess.Popen([sys.executable, "-m", "medsim", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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


def test_dead_server_fails_fast_before_the_run(tmp_path, dead_url):
    out = tmp_path / "dead"
    t0 = time.perf_counter()
    r = _medsim("bench", "--cases", "demo", "--llm", "scripted", "--patient-llm", f"openai:{dead_url}",
                "--model", "m", "--out", str(out), "--no-progress")
    assert r.returncode == 2 and dead_url in r.stderr and "roles.patient" in r.stderr
    assert time.perf_counter() - t0 < 20
    assert not out.exists()  # nothing written


def test_dead_server_without_preflight_retries_then_errors_and_run_goes_on(tmp_path, dead_url):
    out = tmp_path / "dead"
    r = _medsim("bench", "--cases", "demo", "--limit", "3", "--llm", "scripted", "--patient-llm", f"openai:{dead_url}",
                "--model", "m", "--retries", "2", "--backoff", "0.01", "--out", str(out), "--no-progress",
                "--no-preflight")
    assert r.returncode == 1
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 3 and all(row["error"] and "cannot reach" in row["error"] for row in rows)
    assert all(row["correct"] is None for row in rows)
    s = json.loads((out / "summary.json").read_text())
    assert s["errors"] == 3 and s["scored"] == 0
    ev = read_events(out / rows[0]["events"])
    assert [e["attempt"] for e in ev if e["type"] == "llm_retry"] == [1, 2]
    assert ev[-1]["status"] == "error"


def test_workers_against_a_server(tmp_path, fake_openai, monkeypatch):
    url, server = fake_openai
    monkeypatch.setenv("MEDSIM_API_KEY", "sk-secret-123")
    o = _run(tmp_path, "srv", llm=f"openai:{url}", model="fake", workers=8)
    out = o.out
    assert o.summary["cases"] == 22 and o.summary["errors"] == 0
    rows = read_results(out / "results.jsonl")
    for r in rows:
        ev = _events(out, r)
        routes = [e for e in ev if e["type"] == "route"]
        # the row counts what the server's doctor did, as the log shows it
        assert r["n_tests"] == sum(1 for e in routes if e["route"] == "measurement")
        assert r["diagnosis"] == next(e["extracted"] for e in routes if e["route"] == "diagnosis")
        # the pre-check cannot decide "Pneumonia" against these keys, so the server's judge did
        judge = next(e for e in ev if e["type"] == "judge")
        assert r["judge_method"] == judge["method"] == "llm" and r["correct"] is (judge["rationale"].startswith("Yes"))
    assert all(r["prompt_tokens_evaluated"] == r["prompt_tokens"] for r in rows)
    chats = [q for q in server.requests if q["path"] == "/v1/chat/completions"]
    assert chats and all(q["auth"] == "Bearer sk-secret-123" for q in chats)
    everything = "".join(p.read_text() for p in (out / "events").iterdir())
    everything += (out / "results.jsonl").read_text() + (out / "run.json").read_text() + (out / "report.md").read_text()
    assert "sk-secret-123" not in everything


def test_malformed_case_file_stops_before_running(tmp_path, capsys):
    bad = tmp_path / "cases.jsonl"
    good = json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x", "Patient_Actor": {"Demographics": "30-year-old"},
                                            "Correct_Diagnosis": "Flu"}})
    bad.write_text(good + "\n{broken\n" + json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x"}}) + "\n")
    out = tmp_path / "m"
    rc = main(["bench", "--cases", str(bad), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}:2: field '<json>'" in err and f"{bad}:3: field 'OSCE_Examination.Correct_Diagnosis'" in err
    assert not out.exists()
    rc = main(["bench", "--cases", str(bad), "--out", str(out), "--no-progress", "--skip-invalid"])
    # the valid record runs; its patient has nothing to say but says so (the grounded
    # patient: "I haven't noticed anything like that"), and the consultation is scored
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 1 and rows[0]["status"] == "diagnosed" and rc == 0


def test_server_doctor_gets_the_json_schema_in_structured_mode(tmp_path, fake_openai):
    url, server = fake_openai
    o = _run(tmp_path, "s", llm=f"openai:{url}", model="fake", limit=1, **{"protocol.doctor_mode": "structured"})
    assert o.summary["errors"] == 0
    doctor_bodies = [q["body"] for q in server.requests
                     if q["body"] and q["body"]["messages"][0]["content"].startswith("You are Dr.")]
    fmt = doctor_bodies[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["anyOf"][0]["properties"]["action"]["enum"]
    # the fake server ignores the schema and answers in markers: parsed by the recorded fallback
    row = read_results(o.out / "results.jsonl")[0]
    assert any(e["type"] == "route" and e["rule"].startswith("structured_fallback") for e in _events(o.out, row))
    # markers by default for server doctors
    n = len(server.requests)
    _run(tmp_path, "m", llm=f"openai:{url}", model="fake", limit=1)
    doctor = [q for q in server.requests[n:] if q["body"] and q["body"]["messages"][0]["content"].startswith("You are Dr.")]
    assert doctor and all("response_format" not in q["body"] for q in doctor)


def test_row_text_with_line_separators_resumes(tmp_path):
    """U+2028 / U+0085 in case text that reaches results.jsonl must not split a row
    (every later --resume failed with "corrupt results row")."""
    cases = tmp_path / "odd.jsonl"
    recs = []
    for i in range(3):
        recs.append(json.dumps({"id": f"odd\u2028{i}", "OSCE_Examination": {
            "Objective_for_Doctor": "Assess the patient.", "Patient_Actor": {"Demographics": "40-year-old",
                                                                             "History": "Tired\u0085 for weeks"},
            "Correct_Diagnosis": f"Iron\u2028deficiency anaemia\u0085 {i}"}}, ensure_ascii=False))
    cases.write_text("\n".join(recs) + "\n", encoding="utf-8")
    spec = build_spec(None, {"cases": str(cases)})
    run_bench(spec, BenchOptions(out=tmp_path / "u", progress=False))
    rows = read_results(tmp_path / "u" / "results.jsonl")
    assert len(rows) == 3 and all("\u2028" in r["truth"] for r in rows)
    o = run_bench(spec, BenchOptions(out=tmp_path / "u", progress=False, resume=True))
    assert o.summary["cases"] == 3
