"""``medsim study``: a reader study. A person (here a script through the HumanIO protocol)
plays the doctor through a blinded, shuffled list of cases; nothing they are shown and no
file of the run directory holds an answer key, a verdict or an accuracy until the study
ends; then the run is scored as a bench run is, and ``medsim compare`` pairs it with a
model run by case."""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.cases.registry import load_cases
from agents.events import read_events
from agents.participants.human import InputEnded, ask, diagnose, order
from agents.participants.base import Observation
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.compare import compare_runs, load_run
from medsim.errors import BenchError
from medsim.spec import SpecError, build_spec
from medsim.study import StudyOptions, run_study, study_order
from medsim.study_state import StudyInProgress

LIMIT = 6
KEYS = {c.id: c.diagnosis for c in load_cases("demo")[0][:LIMIT]}
# what the scripted reader answers: right without the key's words for two cases (the judge's
# pre-check takes "Pericarditis" for "Acute pericarditis"), wrong for the rest; none holds a key
ANSWERS = {"demo-002": "Pericarditis", "demo-006": "Pancreatitis"}


def study_spec(label: str = "reader-1", seed: int = 3, **over: Any):
    return build_spec(None, {"cases": "demo", "limit": LIMIT, "roles.doctor.backend": "human",
                             "study.label": label, "study.order_seed": seed, **over})


class Reader:
    """A person, scripted: begins each case (until ``stop_before``), asks two questions,
    orders vital signs, diagnoses; records everything the study hands them. ``leave_in``:
    the case in whose second turn the input ends; ``interrupt_in``: where Ctrl-C comes."""

    def __init__(self, out: Path, *, stop_before: int | None = None, leave_in: int | None = None,
                 interrupt_in: int | None = None):
        self.out = out
        self.stop_before, self.leave_in, self.interrupt_in = stop_before, leave_in, interrupt_in
        self.seen: list[str] = []  # every text handed to the person
        self.cases: list[int] = []  # the k of each case begun
        self.case_ids: list[str] = []
        self.turn = 0
        self.snapshots: list[dict[str, bytes]] = []  # the run directory before each case

    def show(self, text: str) -> None:
        self.seen.append(text)
        if text.startswith("Case ") and "(" in text and ":" in text and text.split("(")[1].split(")")[0] in KEYS:
            self.case_ids.append(text.split("(")[1].split(")")[0])

    def next_case(self, k: int, n: int) -> bool:
        self.seen.append(f"next {k} of {n}")
        self.snapshots.append(files(self.out))
        if self.stop_before is not None and k >= self.stop_before:
            return False
        self.cases.append(k)
        self.turn = 0
        return True

    def doctor_action(self, obs: Observation):
        self.seen.append(obs.text)
        self.turn += 1
        k = self.cases[-1]
        if self.leave_in == k and self.turn == 2:
            raise InputEnded()
        if self.interrupt_in == k and self.turn == 2:
            raise KeyboardInterrupt()
        if obs.final or self.turn >= 4:
            return diagnose(ANSWERS.get(self.case_ids[-1], "Acute gout"))
        return [ask("What brings you in today?"), ask("Any fever or chills?"), order("Vital signs")][self.turn - 1]

    def reply(self, role: str, obs: Observation) -> str:  # pragma: no cover - the person is the doctor
        raise AssertionError("the reader plays the doctor only")


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def leaks(texts: dict[str, str] | list[str]) -> list[tuple[str, str]]:
    """(where, key) for every answer key of the study found in ``texts`` (case-insensitive)."""
    items = texts.items() if isinstance(texts, dict) else enumerate(texts)
    return [(str(where), key) for where, t in items for key in KEYS.values() if key.lower() in str(t).lower()]


def file_leaks(snapshot: dict[str, bytes]) -> list[tuple[str, str]]:
    return leaks({k: v.decode("utf-8", "replace") for k, v in snapshot.items()})


def test_a_whole_study_is_blinded_until_it_ends_then_scored_and_paired_with_a_model_run(tmp_path):
    out = tmp_path / "study"
    reader = Reader(out)
    outcome = run_study(study_spec(), StudyOptions(out), reader)
    # every screen and every file the person could open before the end: no answer key
    assert len(reader.snapshots) == LIMIT
    assert set(reader.snapshots[0]) == {".lock", "run.json", "study.json"}
    assert len([f for f in reader.snapshots[-1] if f.startswith("events/")]) == LIMIT - 1
    for snap in reader.snapshots:
        assert file_leaks(snap) == [], "an answer key in the run directory while the study was in progress"
        assert not {"results.jsonl", "summary.json", "report.md", "report.html", "results.csv"} & set(snap)
        assert not any('"type":"judge"' in v.decode() or '"type":"scored"' in v.decode() for v in snap.values())
    assert leaks(reader.seen) == [], "an answer key handed to the person"
    assert not [t for t in reader.seen if "correct" in t.lower() or "accuracy" in t.lower() or "wrong" in t.lower()]
    assert sum("your diagnosis is recorded" in t for t in reader.seen) == LIMIT
    # the order: the case set's, shuffled by the seed
    ids = list(KEYS)
    assert reader.case_ids == study_order(ids, 3) != ids
    assert study_order(ids, 4) != study_order(ids, 3)
    # the end: scored as a bench run is, the person named by their label only
    assert outcome.finished and outcome.played == LIMIT
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["case_id"] for r in rows} == set(KEYS)
    assert all(r["truth"] == KEYS[r["case_id"]] for r in rows)
    right = {r["case_id"] for r in rows if r["correct"]}
    assert right == set(ANSWERS)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"] == 2 and summary["scored"] == LIMIT
    assert summary["study"]["label"] == "reader-1" and summary["study"]["not_read"] == []
    for r in rows:
        ev = read_events(out / r["events"])
        assert ev[0]["spec"]["study"] == {"label": "reader-1", "order_seed": 3}
        assert ev[0]["models"]["doctor"] == "human (reader-1)"
        types = [e["type"] for e in ev]
        assert types.index("consultation_ended") < types.index("judge") and types[-1] == "case_finished"
        assert [e["seq"] for e in ev] == list(range(len(ev)))
    assert json.loads((out / "study.json").read_text())["finished"]
    assert (out / "report.html").is_file() and (out / "results.csv").is_file()
    # a model run on the same cases pairs with the study case by case
    model = tmp_path / "model"
    run_bench(build_spec(None, {"cases": "demo", "limit": LIMIT}), BenchOptions(out=model, progress=False))
    report = compare_runs([load_run(str(out)), load_run(str(model))])
    c = report.comparisons[0]
    assert c.shared == LIMIT and c.paired == LIMIT and c.only_a == c.only_b == 0
    assert c.both_right + c.only_a_right == 2


def test_stop_between_cases_and_go_on_with_the_same_command(tmp_path):
    out = tmp_path / "study"
    first = Reader(out, stop_before=3)
    outcome = run_study(study_spec(), StudyOptions(out), first)
    assert not outcome.finished and outcome.played == 2 and first.cases == [1, 2]
    assert "2 of 6 cases read" in outcome.headline and "correct" not in outcome.headline
    assert file_leaks(files(out)) == [] and not (out / "results.jsonl").exists()
    second = Reader(out)
    outcome = run_study(study_spec(), StudyOptions(out, resume=True), second)
    assert second.cases == [3, 4, 5, 6]
    assert first.case_ids + second.case_ids == study_order(list(KEYS), 3)  # each case once, in the order
    assert outcome.finished and outcome.played == LIMIT
    study = json.loads((out / "study.json").read_text())
    assert len(study["sessions"]) == 2 and set(study["played"]) == set(KEYS)
    run = json.loads((out / "run.json").read_text())
    assert len(run["earlier"]) == 1  # the first session's command line is kept


def test_a_case_left_midway_is_recorded_as_abandoned_never_as_wrong(tmp_path):
    out = tmp_path / "study"
    reader = Reader(out, leave_in=2)
    outcome = run_study(study_spec(), StudyOptions(out), reader)
    assert reader.cases == [1, 2] and not outcome.finished and outcome.abandoned == 1
    assert any("abandoned" in t for t in reader.seen)
    left = reader.case_ids[1]
    ev = read_events(next((out / "events").glob(f"{left}-*.jsonl")))
    assert ev[-1]["type"] == "consultation_ended" and ev[-1]["status"] == "failed"
    again = Reader(out)
    run_study(study_spec(), StudyOptions(out), again)  # the same command goes on: the abandoned case is not shown again
    assert left not in again.case_ids and len(again.case_ids) == LIMIT - 2
    rows = {r["case_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows[left]["abandoned"] is True and rows[left]["status"] == "failed" and rows[left]["correct"] is None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["scored"] == LIMIT - 1 and summary["study"]["abandoned"] == 1


def test_a_study_stopped_mid_case_seals_the_case_as_abandoned_and_an_unbegun_one_comes_again(tmp_path):
    from agents.names import event_file_name

    out = tmp_path / "study"
    order = study_order(list(KEYS), 3)
    reader = Reader(out, interrupt_in=2)
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C while the second case is read
        run_study(study_spec(), StudyOptions(out), reader)
    left = reader.case_ids[1]
    lines = (out / "events" / event_file_name(left, 0, "base")).read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "consultation_ended" and "stopped mid-case" in json.loads(lines[-1])["failure"]
    # a process killed mid-case (no ending written) while the third case was read, and one killed as
    # the fourth opened (a header, no turn of the person's)
    head = [x for x in lines if json.loads(x)["type"] not in ("consultation_failed", "consultation_ended")]
    killed = [json.dumps({**json.loads(head[0]), "case_id": order[2]}), *head[1:]]
    assert any('"source": "human"' in x or '"source":"human"' in x for x in killed)
    (out / "events" / event_file_name(order[2], 0, "base")).write_text("\n".join(killed) + "\n")
    (out / "events" / event_file_name(order[3], 0, "base")).write_text(killed[0] + "\n")
    again = Reader(out, stop_before=5)
    run_study(study_spec(), StudyOptions(out), again)
    assert again.case_ids == [order[3]]  # the unbegun one comes again; the killed one does not
    ev = read_events(out / "events" / event_file_name(order[2], 0, "base"))
    assert [e["type"] for e in ev[-2:]] == ["consultation_failed", "consultation_ended"]
    assert ev[-1]["status"] == "failed" and [e["seq"] for e in ev] == list(range(len(ev)))
    played = json.loads((out / "study.json").read_text())["played"]
    assert played[left]["status"] == played[order[2]]["status"] == "abandoned"
    assert played[order[3]]["status"] == "played"


def test_commands_that_would_show_a_verdict_refuse_a_study_in_progress(tmp_path, capsys):
    from medsim.play import build_replay
    from medsim.score import rescore
    from game.runner import InlineRunner

    out = tmp_path / "study"
    run_study(study_spec(), StudyOptions(out), Reader(out, stop_before=2))
    with pytest.raises(StudyInProgress, match="in progress"):
        load_run(str(out))
    with pytest.raises(StudyInProgress):
        rescore(out, {"backend": "scripted"})
    with pytest.raises(StudyInProgress):
        build_replay(out, None, runner=InlineRunner(), log=None)
    assert main(["view", str(out), "--port", "0"]) == 2
    assert "--finish" in capsys.readouterr().err
    assert main(["compare", str(out), str(out)]) == 2
    assert not (out / "scores").exists() and not (out / "report.html").exists() and not (out / "compare").exists()
    # --finish ends it with the cases read (the others have no row), and then they work
    assert main(["study", "--out", str(out), "--finish"]) == 0
    assert "1 of 6 cases read" in capsys.readouterr().out
    assert len(load_run(str(out)).rows) == 1
    assert json.loads((out / "summary.json").read_text())["study"]["not_read"] == study_order(list(KEYS), 3)[1:]


def test_a_study_in_the_terminal_never_prints_a_key_until_its_results(tmp_path, monkeypatch, capsys):
    per = "\n1\nWhat brings you in?\n1\nAny fever?\n2\n1\n3\nAcute gout\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(per * 3))
    out = tmp_path / "s"
    assert main(["study", "--cases", "demo", "--limit", "3", "--label", "r2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    head, _, results = text.partition("study r2 ended")
    assert head.count("your diagnosis is recorded") == 3 and "Patient:" in head and "Technician:" in head
    assert leaks([head]) == [] and "accuracy" not in head and "correct" not in head.lower()
    assert "accuracy" in results


@pytest.mark.parametrize("argv, message", [
    (["--label", "Dr Jane Smith"], "--label"),
    (["--label", "r1", "--cases", "nosuchset"], "--cases nosuchset: case set"),
    (["--label", "r1", "--cases", "demo", "--max-turns", "0"], "--max-turns"),
    (["--cases", "demo"], "--label: required"),
])
def test_bad_input_names_the_flag(tmp_path, capsys, argv, message):
    assert main(["study", "--out", str(tmp_path / "s"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_flags_a_study_has_no_use_for_are_not_offered(capsys):
    with pytest.raises(SystemExit):
        main(["study", "--label", "r1", "--doctor-llm", "local"])
    assert "unrecognized arguments: --doctor-llm" in capsys.readouterr().err


def test_another_study_or_a_bench_run_in_the_directory_is_refused(tmp_path):
    out = tmp_path / "s"
    run_study(study_spec(), StudyOptions(out), Reader(out, stop_before=2))
    before = files(out)
    with pytest.raises(BenchError, match=r'study.label: "reader-2" here, "reader-1" in the run'):
        run_study(study_spec("reader-2"), StudyOptions(out), Reader(out))
    with pytest.raises(BenchError, match="study.order_seed"):
        run_study(study_spec(seed=9), StudyOptions(out), Reader(out))
    assert files(out) == before  # refused: nothing written
    bench = tmp_path / "b"
    run_bench(build_spec(None, {"cases": "demo", "limit": 2}), BenchOptions(out=bench, progress=False))
    with pytest.raises(BenchError, match="not a study"):
        run_study(study_spec(), StudyOptions(bench), Reader(bench))
    with pytest.raises(BenchError, match="no study to go on with"):
        run_study(study_spec(), StudyOptions(tmp_path / "new", resume=True), Reader(tmp_path / "new"))


def test_the_study_spec_is_checked():
    with pytest.raises(SpecError, match="study.label"):
        study_spec(label="a/b")
    with pytest.raises(SpecError, match="roles.doctor.backend"):
        build_spec(None, {"study.label": "r1"})
    with pytest.raises(SpecError, match="diagnosis.cot"):
        study_spec(**{"diagnosis.cot": True})
    with pytest.raises(SpecError, match="roles.patient.backend"):
        study_spec(**{"roles.patient.backend": "human"})
    with pytest.raises(SpecError, match="seeds"):
        build_spec(None, {"roles.doctor.backend": "human", "study.label": "r1", "seeds": [0, 1]})
    spec = study_spec()
    from medsim.spec import RunSpec

    assert RunSpec.from_dict(spec.to_dict()).study == spec.study  # a header's spec reads back


def test_a_finish_that_was_stopped_goes_on_without_scoring_a_case_twice(tmp_path):
    out = tmp_path / "study"
    run_study(study_spec(), StudyOptions(out), Reader(out))
    rows = (out / "results.jsonl").read_text()
    # stopped after the logs were scored, before the results were written and the ledger closed
    ledger = json.loads((out / "study.json").read_text())
    (out / "study.json").write_text(json.dumps({**ledger, "finished": None}))
    for f in ("results.jsonl", "summary.json", "report.md", "report.html"):
        (out / f).unlink()
    with pytest.raises(StudyInProgress):
        load_run(str(out))
    outcome = run_study(study_spec(), StudyOptions(out, finish=True))
    assert outcome.finished and (out / "results.jsonl").read_text() == rows
    for log in (out / "events").glob("*.jsonl"):
        assert [e["type"] for e in read_events(log)].count("case_finished") == 1


def test_no_display_for_the_window_is_said_before_anything_is_written(tmp_path, monkeypatch, capsys):
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(var, raising=False)
    assert main(["study", "--label", "r1", "--limit", "2", "--ui", "window", "--out", str(tmp_path / "s")]) == 2
    assert "no display" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_finished_study_replays_in_the_hospital_with_the_persons_turns(tmp_path):
    from game.runner import InlineRunner
    from medsim.play import build_replay

    out = tmp_path / "study"
    run_study(study_spec(), StudyOptions(out), Reader(out))
    world, rows = build_replay(out, None, runner=InlineRunner(), log=None)
    world.run(dt=0.5)
    replayed = {r["case_id"]: (r["status"], r["diagnosis"], r["correct"]) for r in world.finished}
    assert replayed == {r["case_id"]: (r["status"], r["diagnosis"], r["correct"]) for r in rows}
    assert len(replayed) == LIMIT and {c for c, v in replayed.items() if v[2]} == set(ANSWERS)
