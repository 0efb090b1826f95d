import json

from agents.events import read_events
from agents.results import read_results
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import build_spec


def _snapshot(out):
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "scores" not in p.parts}


def test_rescoring_a_run_with_another_judge(tmp_path, fake_openai, capsys):
    url, server = fake_openai
    out = tmp_path / "run"
    run_bench(build_spec(None, {"seeds": [0, 1]}), BenchOptions(out=out, progress=False))
    before = _snapshot(out)
    original = {(r["case_id"], r["seed"]): r for r in read_results(out / "results.jsonl")}
    n_llm = sum(1 for r in original.values() if r["judge_method"] == "llm")
    assert n_llm >= 3  # cases the pre-check leaves to the model judge

    rc = main(["score", str(out), "--judge-llm", f"openai:{url}", "--judge-model", "big-judge", "--label", "big"])
    assert rc == 0
    assert _snapshot(out) == before  # the run's own files are untouched
    sdir = out / "scores" / "big"
    rows = read_results(sdir / "scores.jsonl")
    assert len(rows) == len(original) == 44
    judged_by_server = [q for q in server.requests if q["path"] == "/v1/chat/completions"
                        and "final diagnosis" in q["body"]["messages"][0]["content"]]  # not the fidelity checker's
    assert len(judged_by_server) == n_llm and all(q["body"]["model"] == "big-judge" for q in judged_by_server)
    for r in rows:
        o = original[(r["case_id"], r["seed"])]
        # the consultation is the run's; only the judgement is new
        assert (r["diagnosis"], r["turns"], r["tests_requested"], r["status"]) == \
               (o["diagnosis"], o["turns"], o["tests_requested"], o["status"])
        ev = read_events(out / r["events"])
        assert ev[0]["type"] == "judge" or ev[0]["type"] == "llm_call"
        if o["judge_method"] == "llm":
            assert r["correct"] is False  # the fake server's judge says "No." to everything
            assert any(e["type"] == "llm_call" and e["model"].endswith("#big-judge") for e in ev)
        else:
            assert r["correct"] == o["correct"]  # the pre-check decides alike
    summary = json.loads((sdir / "summary.json").read_text())
    assert summary["cases"] == 44 and summary["correct"] == sum(1 for r in rows if r["correct"])
    report = (sdir / "report.md").read_text()
    assert "re-judged by openai:" in report and "big-judge" in report
    printed = capsys.readouterr().out
    assert "re-scored 44 cases" in printed and "the run's judge" in printed

    # run again: nothing to do, nothing repeated
    n = len(server.requests)
    assert main(["score", str(out), "--judge-llm", f"openai:{url}", "--judge-model", "big-judge", "--label", "big"]) == 0
    assert len(server.requests) == n and len(read_results(sdir / "scores.jsonl")) == 44


def test_scoring_something_that_is_not_a_run_is_a_clear_error(tmp_path, capsys):
    assert main(["score", str(tmp_path), "--judge-llm", "scripted"]) == 2
    assert "not a medsim bench run" in capsys.readouterr().err
    assert main(["score", str(tmp_path), "--judge-llm", "bogus"]) == 2
    assert "unknown backend 'bogus'" in capsys.readouterr().err


def test_logs_of_unfinished_cells_are_left_out(tmp_path, capsys):
    out = tmp_path / "run"
    run_bench(build_spec(None, {"limit": 3}), BenchOptions(out=out, progress=False))
    victim = sorted((out / "events").iterdir())[0]
    lines = victim.read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"consultation_ended"' in line)
    victim.write_text("\n".join(lines[:cut]) + "\n")  # as a kill mid-consultation leaves it
    assert main(["score", str(out), "--judge-llm", "scripted", "--label", "again"]) == 0
    assert len(read_results(out / "scores" / "again" / "scores.jsonl")) == 2
    assert "1 log(s) of unfinished consultations" in capsys.readouterr().err


def test_a_second_rescoring_into_one_label_is_refused_while_the_first_runs(tmp_path, capsys):
    """Two `medsim score` with the same label would append to one scores.jsonl: the
    second is refused at once, naming the holder, and writes nothing; the folder is
    free again afterwards (the lock file goes with the first)."""
    from medsim.runlock import LOCK_NAME, RunLock

    out = tmp_path / "run"
    run_bench(build_spec(None, {"limit": 2}), BenchOptions(out=out, progress=False))
    sdir = out / "scores" / "again"
    with RunLock(sdir):  # another medsim score holding it
        assert main(["score", str(out), "--judge-llm", "scripted", "--label", "again"]) == 2
        assert "in use by another medsim process" in capsys.readouterr().err
        assert sorted(p.name for p in sdir.iterdir()) == [LOCK_NAME]
    assert main(["score", str(out), "--judge-llm", "scripted", "--label", "again"]) == 0
    assert len(read_results(sdir / "scores.jsonl")) == 2 and not (sdir / LOCK_NAME).exists()


def test_rescoring_only_the_judges_scorers_copies_the_others_from_the_run(tmp_path, fake_openai, capsys):
    """`--scorers diagnosis,differential` re-judges without the fidelity checker's calls:
    the judge's figures are the new judge's, every other scorer's block is the run's
    own, and judge.toml says which is which."""
    url, server = fake_openai
    out = tmp_path / "run"
    run_bench(build_spec(None, {"limit": 12}), BenchOptions(out=out, progress=False))
    original = {r["case_id"]: r for r in read_results(out / "results.jsonl")}
    assert any(r["judge_method"] == "llm" for r in original.values())
    rc = main(["score", str(out), "--judge-llm", f"openai:{url}", "--judge-model", "big-judge",
               "--scorers", "diagnosis,differential"])
    assert rc == 0
    chats = [q for q in server.requests if q["path"] == "/v1/chat/completions"]
    assert chats and all("final diagnosis" in q["body"]["messages"][0]["content"] for q in chats)  # the judge's only
    sdir = next((out / "scores").iterdir())
    assert sdir.name.endswith("diagnosis-differential")
    rows = read_results(sdir / "scores.jsonl")
    assert len(rows) == len(original) == 12
    for r in rows:
        o = original[r["case_id"]]
        for carried in ("fidelity", "elicited", "orders"):
            assert r.get(carried) == o.get(carried) and o.get(carried) is not None
        if o["judge_method"] == "llm":
            assert r["correct"] is False  # the fake judge says no
    toml = (sdir / "judge.toml").read_text()
    assert 'rescored = ["diagnosis", "differential"]' in toml
    assert 'carried_from_run = ["fidelity", "elicited", "orders"]' in toml

    assert main(["score", str(out), "--judge-llm", "scripted", "--scorers", "diagnosis,typo"]) == 2
    err = capsys.readouterr().err
    assert "no scorer named 'typo'" in err and "its scorers: diagnosis, fidelity, differential" in err
    assert len(list((out / "scores").iterdir())) == 1  # nothing written for the refused one
