"""The OSCE suite through ``medsim bench --protocol osce``: the same run directory as
``medsim osce``, resume, workers, seeds, re-scoring with ``medsim score``, bench flags an
OSCE run has no use for refused; and the guards as a run setting (``--no-guards``)."""
from __future__ import annotations

import json

import pytest

from agents.events import read_events
from agents.results import read_results, row_key
from medsim.bench import BenchOptions
from medsim.cli import main
from medsim.bench import run_bench as run_osce
from medsim.spec import RunSpec
from tests.helpers import osce_spec as build_osce_spec
from tests.agents.test_osce_guards import LoopingDoctor
from tests.helpers import log_bytes

PERSONAS = "INTJ_M_PNEUMO,ESFP_F_LUNG,ISTP_LUNG"
RUN = ["--personas", PERSONAS, "--llm", "scripted", "--seeds", "0,1", "--max-rounds", "6", "--no-progress"]


def _older(spec):
    """A spec as medsim wrote an OSCE run's before OSCE was a suite of the run spec and before
    the guards: every OSCE key at the top, no ``guards``."""
    flat = {k: v for k, v in spec.items() if k != "osce"}
    flat.update({k: v for k, v in spec["osce"].items() if k != "guards"})
    return flat


def _rows(path):
    return {row_key(r): {k: v for k, v in r.items() if k != "wall_s"} for r in read_results(path)}


def test_bench_protocol_osce_is_the_osce_run_and_resumes_and_rescores(tmp_path, capsys):
    bench, osce = tmp_path / "bench", tmp_path / "osce"
    assert main(["bench", "--protocol", "osce", *RUN, "--workers", "2", "--out", str(bench)]) == 0
    assert "6 encounters" in capsys.readouterr().out
    assert main(["osce", *RUN, "--out", str(osce)]) == 0
    capsys.readouterr()
    for f in ("run.json", "results.jsonl", "results.csv", "summary.json", "report.md"):
        assert (bench / f).is_file(), f
    b, o = (json.loads((d / "run.json").read_text()) for d in (bench, osce))
    assert b["identity"] == o["identity"] and b["spec"]["suite"] == "osce" and b["spec"]["workers"] == 2
    assert b["spec"]["seeds"] == [0, 1] and b["spec"]["osce"]["max_rounds"] == 6 and b["spec"]["osce"]["guards"] is True
    assert b["command"][:3] == ["medsim", "bench", "--protocol"]
    # the same cells, rows and event logs as `medsim osce` (workers change nothing)
    assert _rows(bench / "results.jsonl") == _rows(osce / "results.jsonl")
    assert len(_rows(bench / "results.jsonl")) == 6
    files = sorted(p.name for p in (bench / "events").iterdir())
    assert files == sorted(p.name for p in (osce / "events").iterdir())
    for f in files:
        assert log_bytes(bench / "events" / f) == log_bytes(osce / "events" / f)
    # --resume of a finished run runs no cell again
    stamps = {f: (bench / "events" / f).stat().st_mtime_ns for f in files}
    before = (bench / "results.jsonl").read_bytes()
    assert main(["bench", "--protocol", "osce", *RUN, "--out", str(bench), "--resume"]) == 0
    assert "6 encounters" in capsys.readouterr().out
    assert {f: (bench / "events" / f).stat().st_mtime_ns for f in files} == stamps
    assert (bench / "results.jsonl").read_bytes() == before
    assert len(json.loads((bench / "run.json").read_text())["earlier"]) == 1
    # a run cut short: --resume runs only the missing cells
    lines = before.decode().splitlines(keepends=True)
    (bench / "results.jsonl").write_text("".join(lines[:4]))
    assert main(["bench", "--protocol", "osce", *RUN, "--out", str(bench), "--resume"]) == 0
    capsys.readouterr()
    changed = {f for f in files if (bench / "events" / f).stat().st_mtime_ns != stamps[f]}
    assert len(changed) == 2 and _rows(bench / "results.jsonl") == _rows(osce / "results.jsonl")
    # settings that differ from the run are refused on --resume
    assert main(["bench", "--protocol", "osce", *RUN[:-3], "--max-rounds", "5", "--no-progress", "--out", str(bench),
                 "--resume"]) == 2
    assert "max_rounds" in capsys.readouterr().err
    # medsim score re-scores it from the logs
    assert main(["score", str(bench), "--judge-llm", "scripted"]) == 0
    assert "re-scored 6 encounters" in capsys.readouterr().out
    again = _rows(bench / "scores" / "scripted" / "scores.jsonl")
    original = _rows(bench / "results.jsonl")
    assert again.keys() == original.keys()
    assert all(again[k]["total"] == original[k]["total"] for k in original)


@pytest.mark.parametrize("flags, named", [
    (["--cases", "demo"], "--cases"),
    (["--max-turns", "5"], "--max-turns"),
    (["--technician-llm", "scripted"], "--technician-llm"),
    (["--ladder"], "--ladder"),
    (["--memory", "frozen", "--memory-dir", "m"], "--memory, --memory-dir"),
    (["--doctor-bias", "recency"], "--doctor-bias"),
])
def test_bench_flags_an_osce_run_does_not_use_are_refused(tmp_path, capsys, flags, named):
    out = tmp_path / "run"
    assert main(["bench", "--protocol", "osce", "--personas", "INTJ_M_PNEUMO", *flags, "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{named}: not used by the osce suite" in err and "--personas" in err
    assert not out.exists()


@pytest.mark.parametrize("flags", [["--personas", "INTJ_M_PNEUMO"], ["--max-rounds", "3"], ["--no-stop-classifier"]])
def test_osce_flags_need_protocol_osce(tmp_path, capsys, flags):
    out = tmp_path / "run"
    assert main(["bench", *flags, "--out", str(out), "--no-progress"]) == 2
    assert f"{flags[0]}: only with --protocol osce" in capsys.readouterr().err
    assert not out.exists()


def test_one_osce_encounter_is_consulted_live(capsys):
    """Every suite can be consulted: one encounter of the run loop, printed as it goes."""
    assert main(["consult", "--protocol", "osce", "--llm", "scripted", "--personas", "ESFP_F_LUNG", "--max-rounds", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Encounter ESFP_F_LUNG") and "Doctor:" in out and "stop detector:" in out
    assert "Status: " in out


def test_bad_persona_through_bench_is_a_clear_error(tmp_path, capsys):
    assert main(["bench", "--protocol", "osce", "--personas", "INTJ_M_PNEUMA", "--out", str(tmp_path / "x"),
                 "--no-progress"]) == 2
    assert "did you mean PNEUMO" in capsys.readouterr().err and not (tmp_path / "x").exists()


# -- the guards as a run setting ---------------------------------------------------------------
def test_no_guards_flag_in_the_spec_and_the_report(tmp_path, capsys):
    for cmd in (["osce"], ["bench", "--protocol", "osce"]):
        out = tmp_path / cmd[0]
        assert main([*cmd, "--personas", "INTJ_M_PNEUMO", "--no-guards", "--out", str(out), "--no-progress"]) == 0
        run = json.loads((out / "run.json").read_text())
        assert run["identity"]["osce"]["guards"] is False
        assert "guards off" in (out / "report.md").read_text()
        assert RunSpec.from_dict(run["spec"]).options.guards is False
    capsys.readouterr()
    # a run made before the guards existed (no key, and the OSCE keys at the top) was unguarded
    assert RunSpec.from_dict(_older(run["spec"])).options.guards is False
    assert build_osce_spec("INTJ_M_PNEUMO").options.guards is True


def test_a_failed_encounter_is_reported_with_its_reason(tmp_path):
    out = tmp_path / "run"
    o = run_osce(build_osce_spec("ISTP_M_LUNG,ESFP_F_LUNG", max_rounds=5), BenchOptions(out=out, progress=False),
                 backends={"doctor": LoopingDoctor(seed=0)})
    assert o.summary["failed"] == 2 and o.summary["errors"] == 0 and o.exit_code == 0
    rows = read_results(out / "results.jsonl")
    assert {(r["status"], r["rounds"]) for r in rows} == {("failed", 2)}
    assert all("doctor reply still loop after 3 attempts" in r["failure"] for r in rows)
    report = (out / "report.md").read_text()
    assert "## Failed encounters" in report and "doctor reply still loop" in report and "guards on" in report
    ev = read_events(out / rows[0]["events"])
    assert [e["attempt"] for e in ev if e["type"] == "reply_rejected"] == [1, 2, 3]
    # unguarded, the same doctor runs to the round limit
    o = run_osce(build_osce_spec("ISTP_M_LUNG", max_rounds=5, guards=False), BenchOptions(out=tmp_path / "off",
                                                                                          progress=False),
                 backends={"doctor": LoopingDoctor(seed=0)})
    assert o.summary["failed"] == 0


def test_a_run_made_before_the_guards_resumes_unguarded_only(tmp_path, capsys):
    """An older run.json has no 'guards' key: it was unguarded, so --resume --no-guards
    continues it and a guarded resume is refused (naming the key)."""
    out = tmp_path / "old"
    base = ["osce", "--personas", "INTJ_M_PNEUMO,ESFP_F_LUNG", "--llm", "scripted", "--max-rounds", "4",
            "--no-progress", "--out", str(out)]
    assert main([*base, "--no-guards"]) == 0
    run = json.loads((out / "run.json").read_text())
    for part in ("identity", "spec"):
        run[part] = _older(run[part])
    (out / "run.json").write_text(json.dumps(run))
    rows = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(rows[0] + "\n")  # one encounter left to run
    capsys.readouterr()
    assert main([*base, "--resume"]) == 2
    assert "guards" in capsys.readouterr().err
    assert main([*base, "--resume", "--no-guards"]) == 0
    assert len(read_results(out / "results.jsonl")) == 2


def test_a_second_osce_run_on_one_directory_is_refused(tmp_path, capsys):
    from medsim.runlock import RunLock

    out = tmp_path / "held"
    out.mkdir()
    with RunLock(out):
        assert main(["osce", "--personas", "INTJ_M_PNEUMO", "--llm", "scripted", "--no-progress",
                     "--out", str(out)]) == 2
    assert "in use by another medsim process" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == []
