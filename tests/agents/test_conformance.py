"""The conformance checks that ship with the package, over every registration in the
repository: each suite passes ``check_suite``, each kind of participant (and each wrapper
around one) passes ``check_participant``; and each check catches what it is for.
(``check_backend`` and ``check_map`` run over their registrations in
tests/agents/test_backend_registry.py and tests/game/test_conformance.py.)"""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.cases import load_cases
from agents.events import ListSink
from agents.llm.scripted import ScriptedLLM
from agents.participants import (CastConfig, Guarded, HumanParticipant, LLMDoctor, ReplayedParticipant,
                                 ScriptedParticipant, Switchable, llm_cast)
from agents.participants.base import Observation, Turn
from agents.participants.conformance import ParticipantConformanceError, check_participant
from agents.protocol import DoctorAction
from agents.suites.conformance import SuiteConformanceError, check_suite
from agents.suites.diagnosis import DiagnosisSuite
from agents.suites.registry import all_suites
from medsim.spec import build_spec

SPECS = {"diagnosis": {}, "automedic": {"protocol.name": "automedic"},
         "osce": {"suite": "osce", "osce.personas": "INTJ_M_PNEUMO"}}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_shipped_suite_passes_check_suite(name):
    spec = build_spec(None, SPECS[name])
    suite = spec.suite
    assert suite.name == name
    check_suite(suite, suite.load(spec).units[0])


def test_every_registered_suite_is_one_the_checks_cover():
    assert {s.name for s in all_suites()} <= set(SPECS) | {"triage"}  # triage: its own test registers it


def test_check_suite_catches_a_broken_registration():
    spec = build_spec(None, {})
    unit = DiagnosisSuite().load(spec).units[0]

    class NoRows(DiagnosisSuite):
        name = "no-rows"

        def row(self, unit, events, **kw):
            return {"case_id": unit.id}

        def role_names(self):
            return ("doctor", "surgeon")

    with pytest.raises(SuiteConformanceError) as e:
        check_suite(NoRows(), unit)
    assert "roles surgeon are not registered" in str(e.value) and "its row lacks seed" in str(e.value)


@pytest.fixture(scope="module")
def case():
    cases, _ = load_cases("demo")
    return cases[0]


def _llm_cast(case, **cfg):
    llm = ScriptedLLM({case.id: case})
    llms = {r: llm for r in ("doctor", "patient", "measurement", "judge")}
    return llm_cast(case, llms, CastConfig(**cfg), ListSink())


@pytest.mark.parametrize("mode", ["structured", "markers"])
def test_llm_participants_and_their_wrappers_pass(case, mode):
    cast = _llm_cast(case, doctor_mode=mode)
    for role, p in cast.items():  # Guarded doctor and patient, a Hinted technician
        check_participant(p, final=role == "doctor")
    bare = _llm_cast(case, doctor_mode=mode, guard_retries=None, measurement_hints=False)
    assert isinstance(bare["doctor"], LLMDoctor)
    check_participant(bare["doctor"])


def test_scripted_replayed_human_and_switchable_participants_pass(case):
    check_participant(ScriptedParticipant("doctor", ["What brings you in?", DoctorAction("diagnose", "Angina", "x")]))
    events = [{"type": "route", "turn": t, "route": r, "extracted": x, "rule": "r"}
              for t, r, x in ((1, "patient", "Where?"), (2, "patient", "Since?"), (3, "diagnosis", "Angina"))]
    events += [{"type": "utterance", "turn": t, "speaker": "doctor", "text": x}
               for t, x in ((1, "Where?"), (2, "Since?"), (3, "DIAGNOSIS READY: Angina"))]
    check_participant(ReplayedParticipant("doctor", events))

    class Person:
        def doctor_action(self, obs):
            return DoctorAction("diagnose", "Angina", "human") if obs.final else DoctorAction("ask", "Where?", "human")

        def reply(self, role, obs):
            return "Here."

    check_participant(HumanParticipant("doctor", Person()))
    check_participant(HumanParticipant("patient", Person()), final=False)
    ai = _llm_cast(case)["doctor"]
    check_participant(Switchable("doctor", ai, HumanParticipant("doctor", Person()), lambda: False))


def test_check_participant_catches_what_the_engine_cannot_take():
    class NoDiagnosis:
        role = "doctor"

        def act(self, obs):
            return Turn(text="REQUEST TEST: CBC", source="llm")

    class Raises:
        role = "patient"

        def act(self, obs):
            raise KeyError("oops")

    class WrongSource:
        role = "patient"

        def act(self, obs):
            return Turn(text="fine", source="telepathy")

    for p, said in ((NoDiagnosis(), "must diagnose"), (Raises(), "raised KeyError"), (WrongSource(), "telepathy")):
        with pytest.raises(ParticipantConformanceError, match=said):
            check_participant(p, final=p.role == "doctor")


def test_a_guarded_participant_that_keeps_failing_is_a_role_failure_not_a_bug(case):
    """Guarded ends in RoleFailure after its retries: the engine's way, which passes."""
    cast = _llm_cast(case)
    looping = replace(cast["measurement"].inner.inner, llm=_Looper())
    check_participant(Guarded(looping, retries=1), final=False)


def test_the_grounded_patient_passes_and_a_failing_model_behind_it_is_its_facts(case):
    """The grounded patient (agents.participants.grounded) conforms; a model that keeps
    refusing behind it gives the case's facts, not a RoleFailure."""
    cast = _llm_cast(case)
    check_participant(cast["patient"], final=False)
    grounded = cast["patient"]
    grounded.inner.inner = replace(grounded.inner.inner, llm=_Looper())
    turn = grounded.act(Observation(turn=1, text="What brings you in today?"))
    assert turn.source == "fallback" and "AI" not in turn.text


class _Looper:
    name = "looper"

    def generate(self, messages, params, ctx):
        from agents.llm.base import Output

        return Output(text="As an AI I cannot help with that.", model="looper", prompt_tokens=1,
                      prompt_tokens_evaluated=1, completion_tokens=1, latency_s=0.0)
