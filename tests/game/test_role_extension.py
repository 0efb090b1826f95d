"""A new role by one registration (PettingZoo's roster as data): a nurse who takes vital
signs. Registered here and nowhere else, the run spec resolves a backend for it, the
command line has its flags, the cast builds it, the scripted backend plays it, the
consultation sends the doctor's vital-signs order to it (and every other order to the
technician), and the hospital world shows it walking to the bedside to take them."""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.cases import load_cases
from agents.consultation import ConsultationConfig, run_consultation
from agents.events import EventLog, ListSink, read_events
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, llm_cast
from agents.roles import STAFF, Presence, Role, measurement_system, order_words, register_role, unregister_role
from agents.scorers import DiagnosisScorer
from game.hospital_map import load_map
from game.resources import default_map_path
from game.world import World, WorldConfig

NURSE = Role("nurse", label="Nurse", kind=STAFF, temperature=0.0, max_tokens=120,
             answers=order_words("vital signs", "blood pressure", "pulse", "temperature"), priority=10,
             system=measurement_system, world=Presence(sprite="technician", home="technician_spawn", actor="nurse"))


@pytest.fixture
def nurse():
    register_role(NURSE)
    yield NURSE
    unregister_role("nurse")


def _cases():
    """Demo cases whose first recorded test is their vital signs (the scripted doctor orders
    a case's tests in order)."""
    cases, _ = load_cases("demo")
    return [replace(c, tests={"Vital_Signs": c.exam["Vital_Signs"], **c.tests}) for c in cases[:3]]


def test_the_vital_signs_order_goes_to_the_nurse_and_the_rest_to_the_technician(nurse):
    from medsim.flags import overrides
    from medsim.cli import build_parser
    from medsim.spec import build_spec

    spec = build_spec(None, {"roles.nurse.temperature": 0.1})  # the spec knows the role
    assert spec.roles["nurse"].temperature == 0.1 and spec.roles["nurse"].max_tokens == 120
    args = build_parser().parse_args(["bench", "--nurse-llm", "scripted"])  # and so does the command line
    assert overrides(args, "bench") == {"roles.nurse.backend": "scripted"}
    case = _cases()[0]
    llm = ScriptedLLM({case.id: case})
    llms = {r: llm for r in ("doctor", "patient", "measurement", "nurse", "judge")}
    sink = ListSink()
    cast = llm_cast(case, llms, CastConfig(), sink)
    assert "nurse" in cast
    out = run_consultation(case, cast, ConsultationConfig(), sink)
    ev = [e.to_dict() for e in sink.events]
    routes = {e["extracted"].lower(): e["route"] for e in ev
              if e["type"] == "route" and e["route"] not in ("patient", "diagnosis")}
    assert routes["vital signs"] == "nurse" and len(routes) >= 3
    assert {r for t, r in routes.items() if t != "vital signs"} == {"measurement"}
    said = [e for e in ev if e["type"] == "utterance" and e["speaker"] == "nurse"]
    assert len(said) == 1 and case.exam["Vital_Signs"]["Blood_Pressure"] in said[0]["text"]
    assert any(e["role"] == "nurse" for e in ev if e["type"] == "llm_call")
    assert out.status == "diagnosed"


def test_without_the_registration_the_technician_answers_every_order():
    case = _cases()[0]
    llm = ScriptedLLM({case.id: case})
    sink = ListSink()
    cast = llm_cast(case, {r: llm for r in ("doctor", "patient", "measurement", "judge")}, CastConfig(), sink)
    run_consultation(case, cast, ConsultationConfig(), sink)
    assert {e.route for e in sink.events if getattr(e, "type", "") == "route"
            and e.route not in ("patient", "diagnosis")} == {"measurement"}


def test_the_world_shows_the_nurse_taking_vital_signs_at_the_bedside(nurse, tmp_path):
    cases = _cases()
    llm = ScriptedLLM({c.id: c for c in cases})
    llms = {r: llm for r in ("doctor", "patient", "measurement", "nurse", "judge")}
    cfg = WorldConfig(doctors=1, patients=2, arrival_interval_s=5.0, seed=0)
    with EventLog(tmp_path / "shift.jsonl") as log:
        w = World(load_map(default_map_path()), cases, lambda case, sink: llm_cast(case, llms, CastConfig(), sink),
                  [DiagnosisScorer(llm)], cfg, log=log)
        w.reset(0)
        nurse_spoke = False
        bp = cases[0].exam["Vital_Signs"]["Blood_Pressure"]
        while not w.done and w.t < 20000:
            w.step(0.5)
            n = w.actors.get("nurse")
            nurse_spoke = nurse_spoke or bool(n and n.speech and bp in n.speech)
    assert w.done and w.stats()["errors"] == 0
    ev = read_events(tmp_path / "shift.jsonl")
    assert any(e["type"] == "spawned" and e["actor"] == "nurse" for e in ev)
    # the nurse went to each patient's consultation room for the vital signs; the technician did the rest
    nurse_rooms = [e["room"] for e in ev if e["type"] == "arrived" and e["actor"] == "nurse" and e.get("room")]
    assert sum(1 for r in nurse_rooms if r.startswith("consult")) >= 2
    trips = [e for e in ev if e["type"] == "test_trip"]
    assert {e["bedside"] for e in trips if e["test"].lower() == "vital signs"} == {True}
    assert nurse_spoke
