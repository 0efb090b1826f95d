"""A newcomer's rough edges (issue 23), each as a new user met it: a flag taken for another,
a mistyped role table accepted, two strategies where one silently runs, a vision "reader"
that is never shown the image, cases counted twice in a shift, messages that say nothing."""
from __future__ import annotations

import pytest

from medsim.cli import main
from medsim.spec import SpecError, build_spec


def test_a_mistyped_role_table_is_an_error_naming_the_role(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('[roles.docter]\nbackend = "local"\n')
    with pytest.raises(SpecError, match=r"roles\.docter: no such role .*did you mean 'roles\.doctor'"):
        build_spec(toml)


def test_a_flag_is_never_taken_for_a_longer_one(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--case", "demo-001", "--out", str(tmp_path / "x")])
    assert "unrecognized arguments: --case demo-001 (did you mean --cases?)" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_role_split_panel_with_an_ensemble_is_refused_not_dropped(capsys):
    assert main(["config", "--panel", "roles", "--ensemble", "5"]) == 2
    assert "two strategies" in capsys.readouterr().err
    assert main(["config", "--ladder", "--ensemble", "5"]) == 0  # the ladder runs each as its own condition


@pytest.mark.parametrize("backend", ["local", "smollm2", "gguf:model.gguf"])
def test_a_vision_reader_that_cannot_see_images_is_refused(backend, capsys):
    assert main(["config", "--vision", backend]) == 2
    assert "cannot see images" in capsys.readouterr().err


def test_a_vision_reader_that_can_is_taken():
    assert build_spec(None, {"roles.vision.backend": "gguf:m.gguf,proj.gguf"}).roles["vision"].backend.endswith("proj.gguf")


def test_consult_prints_the_deliberation_and_a_readable_verdict(capsys):
    assert main(["consult", "--cases", "demo", "--case", "demo-003", "--llm", "scripted", "--cot", "--ensemble", "3"]) == 0
    out = capsys.readouterr().out
    assert "(reasoning, ensemble, member 1:" in out and "(panel vote:" in out
    verdict = next(line for line in out.splitlines() if line.startswith("Judge ("))
    assert "{" not in verdict  # never the judge's raw JSON


def test_a_person_who_stops_answering_is_said_in_words(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("1\nWhere does it hurt?\n"))
    assert main(["consult", "--cases", "demo", "--case", "demo-007", "--llm", "scripted", "--as", "doctor"]) == 0
    out = capsys.readouterr().out
    assert "the person playing the doctor stopped answering" in out and "after 1 attempts" not in out
    assert "Status: failed" in out


def test_more_patients_than_cases_never_counts_a_case_twice(tmp_path, caplog):
    from agents.events import EventLog
    from agents.llm.llamacpp import LlamaPool
    from game.runner import InlineRunner
    from medsim.play import build_shift

    spec = build_spec(None, {"limit": 2, "world.patients": 5})
    with EventLog(tmp_path / "shift.jsonl") as log:
        world = build_shift(spec, runner=InlineRunner(), log=log, pool=LlamaPool())
        world.run(dt=0.5, max_sim_s=20000)
    ids = [r["case_id"] for r in world.finished]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert "5 patients asked for" in caplog.text


def test_report_md_says_the_memory_was_on(tmp_path):
    from medsim.bench import BenchOptions, run_bench

    spec = build_spec(None, {"limit": 2, "memory.mode": "learn", "memory.dir": str(tmp_path / "mem"),
                             "memory.embedder": "hash"})
    run_bench(spec, BenchOptions(out=tmp_path / "run", progress=False))
    assert "- memory: learn (" in (tmp_path / "run" / "report.md").read_text()
    assert "- memory:" not in _report(tmp_path)


def _report(tmp_path):
    from medsim.bench import BenchOptions, run_bench

    run_bench(build_spec(None, {"limit": 1}), BenchOptions(out=tmp_path / "plain", progress=False))
    return (tmp_path / "plain" / "report.md").read_text()


def test_every_command_defaults_to_the_same_backend_and_says_what_it_is(capsys, caplog):
    from medsim.cli import build_parser

    p = build_parser()
    assert {p.parse_args([c]).default_llm for c in ("bench", "consult", "play", "osce", "config")} == {"scripted"}
    caplog.set_level("INFO")
    assert main(["consult", "--case", "demo-001"]) == 0
    assert "scripted oracle" in caplog.text and "--llm local" in caplog.text
