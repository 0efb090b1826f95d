"""A person takes agents over in the world (no pygame): their turns are answered through
the PlayerIO, the AI carries on from the same transcript when they hand back."""
import json
import time

import pytest

from agents.cases import load_cases
from agents.llm.scripted import ScriptedLLM
from agents.participants.human import ask, diagnose, order
from agents.scorers import DiagnosisScorer
from game.control import PlayerIO
from game.hospital_map import load_map
from game.runner import ThreadRunner
from game.world import World, WorldConfig
from tests.game.tmx import small_hospital
from tests.helpers import cast_builder, roles


def _world(tmp_path, *, patients=1, doctors=1):
    cases, _ = load_cases("demo")
    llms = roles(ScriptedLLM({c.id: c for c in cases}))
    player = PlayerIO()
    runner = ThreadRunner(2)
    w = World(load_map(small_hospital(tmp_path)), cases, cast_builder(llms), [DiagnosisScorer(llms["judge"])],
              WorldConfig(doctors=doctors, patients=patients, think_s=0.0), runner=runner, player=player)
    w.reset(0)
    return w, player, runner


def _run(w, answer, limit_s=60):
    """Step the world; ``answer(request)`` is called for each request the person sees."""
    deadline = time.time() + limit_s
    while not w.done and time.time() < deadline:
        w.step(0.5)
        for req in w.requests_for_player():
            answer(req)
        time.sleep(0.001)
    assert w.done, "the shift did not finish"


def _events(w):
    return [e for e in w._log_events]


@pytest.fixture
def recorded(monkeypatch):
    """Keep every world event as a dict."""
    from game import world as world_mod

    original = world_mod.World._emit

    def emit(self, event, case_id=None):
        d = event.to_dict()
        d["case_id"] = case_id
        self.__dict__.setdefault("_log_events", []).append(d)
        original(self, event, case_id)
    monkeypatch.setattr(world_mod.World, "_emit", emit)


def test_a_person_plays_the_doctor_through_a_whole_case(tmp_path, recorded):
    w, player, runner = _world(tmp_path)
    try:
        w.take_control("doctor-1")
        case = w.cases[w._case_order[0]]
        script = [ask("What brings you in today?"), ask("Any medicines?"), order("Complete blood count"),
                  diagnose(case.diagnosis)]

        def answer(req):
            assert req.kind == "doctor" and req.case_id == case.id
            player.answer(req.id, script.pop(0))
        _run(w, answer)
    finally:
        player.close()
        runner.close()
    row = w.finished[0]
    assert row["status"] == "diagnosed" and row["correct"] is True and row["tests_requested"] == ["Complete blood count"]
    doctor = [e for e in _events(w) if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert [e["source"] for e in doctor] == ["human"] * 4
    assert any(e["type"] == "test_trip" for e in _events(w))  # the order walked to the lab like an AI's
    assert [e["controller"] for e in _events(w) if e["type"] == "control"] == ["human"]


def test_control_switched_mid_consultation_keeps_one_transcript(tmp_path, recorded):
    w, player, runner = _world(tmp_path)
    turns = []
    try:
        w.take_control("doctor-1")

        def answer(req):
            turns.append(req.obs.turn)
            if len(turns) == 1:
                player.answer(req.id, ask("Where exactly does it hurt?"))
            elif len(turns) == 2:
                player.answer(req.id, order("Vital signs"))
            else:
                w.release_control()  # hand back while a turn is asked: the AI takes it
        _run(w, answer)
    finally:
        player.close()
        runner.close()
    ev = _events(w)
    doctor = [e for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert [e["source"] for e in doctor[:2]] == ["human", "human"] and {e["source"] for e in doctor[2:]} == {"llm"}
    assert [e["turn"] for e in doctor] == list(range(1, len(doctor) + 1))  # one transcript, no turn lost
    # the AI picked up from the person's turns: its first call carries them as its own
    first_ai = next(e for e in ev if e["type"] == "llm_call" and e["role"] == "doctor")
    said = [json.loads(m["content"]) for m in first_ai["messages"] if m["role"] == "assistant"]
    assert said == [{"action": "ask_patient", "text": "Where exactly does it hurt?"},
                    {"action": "order_test", "text": "Vital signs"}]
    assert first_ai["turn"] == 3
    assert w.finished[0]["status"] == "diagnosed"
    assert [e["controller"] for e in ev if e["type"] == "control"] == ["human", "ai"]


def test_a_person_plays_the_patient(tmp_path, recorded):
    w, player, runner = _world(tmp_path)
    answers = iter(["It started yesterday evening.", "", "Ça me fait mal 😣"])
    try:
        w.take_control("patient-1")
        _run(w, lambda req: player.answer(req.id, next(answers, "No.")))
    finally:
        player.close()
        runner.close()
    said = [e for e in _events(w) if e["type"] == "utterance" and e["speaker"] == "patient"]
    assert [e["text"] for e in said[:3]] == ["It started yesterday evening.", "(says nothing)", "Ça me fait mal 😣"]
    assert {e["source"] for e in said} == {"human"} and w.finished[0]["status"] == "diagnosed"


def test_closing_while_a_person_is_asked_fails_that_case_only(tmp_path):
    w, player, runner = _world(tmp_path)
    try:
        w.take_control("doctor-1")
        deadline = time.time() + 30
        while not w.requests_for_player() and time.time() < deadline:
            w.step(0.5)
        assert w.requests_for_player()
        player.close()  # the window closes
        deadline = time.time() + 30
        while not w.finished and time.time() < deadline:
            w.step(0.5)
    finally:
        runner.close()
    assert w.finished[0]["status"] == "failed" and "input ended" in w.finished[0]["failure"]


def test_taking_over_needs_a_player_and_an_agent(tmp_path):
    w, player, runner = _world(tmp_path)
    try:
        with pytest.raises(ValueError, match="no agent"):
            w.take_control("nobody")
        w.take_control("technician")
        w.take_control("doctor-1")
        assert w.controlled == "doctor-1"
    finally:
        player.close()
        runner.close()
