import pytest

from agents.events import EventLog, read_events
from agents.results import read_results
from game.runner import InlineRunner
from medsim.bench import BenchOptions, run_bench
from medsim.play import ReplayError, build_replay
from medsim.spec import build_spec
from tests.game.tmx import small_hospital


def _bench(tmp_path, name="run", **over):
    out = tmp_path / name
    run_bench(build_spec(None, over), BenchOptions(out=out, progress=False))
    return out


def _utterances(events, case_id=None):
    return [(e["turn"], e["speaker"], e["text"]) for e in events
            if e["type"] == "utterance" and (case_id is None or e.get("case_id") == case_id)]


@pytest.mark.parametrize("protocol,mode", [("medsim", "structured"), ("medsim", "markers"),
                                           ("agentclinic", "markers"), ("agentclinic", "structured")])
def test_replay_reproduces_every_utterance(tmp_path, protocol, mode):
    """Replay rebuilds the run from the spec in the header: each protocol and doctor
    mode replays with the same prompts (checked call by call) and the same lines."""
    out = _bench(tmp_path, limit=4, seed=2, **{"protocol.name": protocol, "protocol.doctor_mode": mode})
    with EventLog(tmp_path / "replay.jsonl") as log:
        world, rows = build_replay(out, None, map_path=small_hospital(tmp_path), runner=InlineRunner(), log=log)
        world.run(dt=0.25, max_sim_s=20000)
    assert world.done and len(rows) == 4
    assert all(r["error"] is None for r in world.finished), [r["error"] for r in world.finished]
    key = ("case_id", "status", "diagnosis", "correct", "turns", "tests_requested", "judge_method", "llm_calls")
    assert sorted(tuple(r[k] for k in key) for r in world.finished) == sorted(tuple(r[k] for k in key) for r in rows)
    replayed = read_events(tmp_path / "replay.jsonl")
    for r in rows:
        logged = _utterances(read_events(out / r["events"]))
        assert logged and _utterances(replayed, r["case_id"]) == logged


def test_replay_of_one_case(tmp_path):
    out = _bench(tmp_path, limit=3)
    world, rows = build_replay(out, "demo-002", map_path=small_hospital(tmp_path), runner=InlineRunner(), log=None)
    world.run(dt=0.5, max_sim_s=20000)
    assert [r["case_id"] for r in world.finished] == ["demo-002"] == [r["case_id"] for r in rows]
    assert world.finished[0]["diagnosis"] == rows[0]["diagnosis"]
    with pytest.raises(ReplayError, match="no event log for case 'nope'"):
        build_replay(out, "nope", map_path=small_hospital(tmp_path), runner=InlineRunner(), log=None)


def test_a_replay_that_diverges_is_an_error_not_a_guess(tmp_path):
    """Edit the stored spec (another prompt style): the first prompt differs from the
    recorded one, and the case is an error naming the divergence."""
    import json

    out = _bench(tmp_path, limit=1)
    row = read_results(out / "results.jsonl")[0]
    p = out / row["events"]
    lines = p.read_text().splitlines()
    h = json.loads(lines[0])
    h["spec"]["protocol"]["prompt_style"] = "agentclinic"
    p.write_text("\n".join([json.dumps(h)] + lines[1:]) + "\n")
    world, _ = build_replay(out, None, map_path=small_hospital(tmp_path), runner=InlineRunner(), log=None)
    world.run(dt=0.5, max_sim_s=20000)
    assert "replay diverged" in world.finished[0]["error"] and "doctor" in world.finished[0]["error"]


def test_turns_without_model_calls_replay_as_recorded(tmp_path):
    """A role played without a model (a script here, a person later) is replayed from its
    recorded turns, marked with their source."""
    from agents.cases import load_cases
    from agents.llm.scripted import ScriptedLLM
    from agents.participants import ScriptedParticipant
    from medsim import assemble

    cases, _ = load_cases("demo")
    case = cases[0]
    original = assemble.RunPlan.cast

    def cast_with_scripted_patient(self, c, sink):
        cast = original(self, c, sink)
        cast["patient"] = ScriptedParticipant("patient", ["It started this morning.", "No, nothing else."])
        return cast
    assemble.RunPlan.cast = cast_with_scripted_patient
    try:
        out = _bench(tmp_path, limit=1)
    finally:
        assemble.RunPlan.cast = original
    logged = read_events(out / read_results(out / "results.jsonl")[0]["events"])
    assert {e["source"] for e in logged if e["type"] == "utterance" and e["speaker"] == "patient"} == {"scripted"}
    with EventLog(tmp_path / "replay.jsonl") as log:
        world, _ = build_replay(out, None, map_path=small_hospital(tmp_path), runner=InlineRunner(), log=log)
        world.run(dt=0.5, max_sim_s=20000)
    assert world.finished[0]["error"] is None
    replayed = read_events(tmp_path / "replay.jsonl")
    assert _utterances(replayed, case.id) == _utterances(logged)
    assert {e["source"] for e in replayed if e["type"] == "utterance" and e["speaker"] == "patient"} == {"scripted"}
    _ = ScriptedLLM
