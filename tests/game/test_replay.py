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
    from agents.suites.diagnosis import ConsultationSuite

    cases, _ = load_cases("demo")
    case = cases[0]
    original = ConsultationSuite.cast

    def cast_with_scripted_patient(self, plan, unit, sink):
        cast = original(self, plan, unit, sink)
        cast["patient"] = ScriptedParticipant("patient", ["It started this morning.", "No, nothing else."])
        return cast
    ConsultationSuite.cast = cast_with_scripted_patient
    try:
        out = _bench(tmp_path, limit=1)
    finally:
        ConsultationSuite.cast = original
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


def test_a_play_log_with_a_persons_turns_replays(tmp_path):
    """A `medsim play` shift in which a person played the doctor for two turns of a
    consultation and handed back: its log replays with every utterance, the person's
    turns marked as theirs, the AI's prompts matching the recorded ones call by call."""
    import time

    from agents.llm.llamacpp import LlamaPool
    from agents.participants.human import ask, order
    from game.control import PlayerIO
    from game.runner import ThreadRunner
    from medsim.play import build_shift

    spec = build_spec(None, {"world.doctors": 1, "world.patients": 2, "world.arrival_interval_s": 1.0})
    player, runner = PlayerIO(), ThreadRunner(3)
    shift = tmp_path / "shift.jsonl"
    answered = []
    try:
        with EventLog(shift) as log:
            w = build_shift(spec, runner=runner, log=log, pool=LlamaPool(), map_path=small_hospital(tmp_path),
                            player=player)
            w.take_control("doctor-1")
            deadline = time.time() + 60
            while not w.done and time.time() < deadline:
                w.step(0.5)
                for req in w.requests_for_player():
                    answered.append(req.obs.turn)
                    if len(answered) == 1:
                        player.answer(req.id, ask("Where exactly is the pain?"))
                    elif len(answered) == 2:
                        player.answer(req.id, order("Vital signs"))
                        w.release_control()
                time.sleep(0.001)
            assert w.done
    finally:
        player.close()
        runner.close()
    with EventLog(tmp_path / "replay.jsonl") as log:
        world, rows = build_replay(shift, None, map_path=small_hospital(tmp_path), runner=InlineRunner(), log=log)
        world.run(dt=0.25, max_sim_s=20000)
    assert world.done and len(world.finished) == 2
    assert all(r["error"] is None for r in world.finished), [r["error"] for r in world.finished]
    live, again = read_events(shift), read_events(tmp_path / "replay.jsonl")
    h = live[0]  # the shift log's header carries the run's provenance
    assert h["type"] == "shift_header" and h["command"] and h["started"] and h["cases_sha256"]
    for cid in {r["case_id"] for r in rows}:
        a = [(e["turn"], e["speaker"], e["text"], e["source"]) for e in live if e["type"] == "utterance" and e.get("case_id") == cid]
        b = [(e["turn"], e["speaker"], e["text"], e["source"]) for e in again if e["type"] == "utterance" and e.get("case_id") == cid]
        assert a and a == b
    sources = [e["source"] for e in again if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert sources.count("human") == 2 and "llm" in sources


def test_replay_controls_step_by_event_turn_and_case(tmp_path):
    import os

    os.environ["SDL_VIDEODRIVER"] = "dummy"
    import pygame

    from game.resources import assets_dir
    from game.view.app import SimulationScreen

    out = _bench(tmp_path, limit=2)
    pygame.init()
    pygame.display.set_mode((1280, 720))
    try:
        from game.resources import default_map_path

        world, _ = build_replay(out, None, runner=InlineRunner(), log=None)
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720), replay=True)
        assert ui.advance_until("event") >= 1 and ui.paused
        assert ui.advance_until("case") >= 1
        assert any(e.type == "encounter_started" for e in ui.seen.events)
        n = sum(1 for e in ui.seen.events if e.type == "utterance")
        ui.advance_until("turn")
        assert sum(1 for e in ui.seen.events if e.type == "utterance") > n
    finally:
        pygame.quit()
