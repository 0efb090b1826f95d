import json

import pytest

from agents.cases import load_cases
from agents.consultation import LAST_TURN, ConsultationConfig, RoleModels, run_consultation
from agents.events import LLMCall, LLMRetry, ListSink, RouteDecision, TurnLimitReached
from agents.findings import match_findings
from agents.llm.base import LLMError, Output
from agents.llm.calls import RetryPolicy
from agents.llm.scripted import ScriptedLLM
from agents.roles import doctor_system, measurement_system, patient_system


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


def _models(llm, **over):
    d = dict(doctor=llm, patient=llm, measurement=llm, judge=llm)
    d.update(over)
    return RoleModels(**d)


def test_information_asymmetry(demo):
    for case in demo.values():
        doc = doctor_system(case, 20)
        pat = patient_system(case)
        tech = measurement_system(case)
        assert case.diagnosis.lower() not in doc.lower()
        assert case.diagnosis.lower() not in pat.lower()
        assert case.patient["History"][:40] not in doc
        for path, value in [(k, v) for k, v in case.tests.items()]:
            assert json.dumps(value)[:30] not in pat
        first_test = next(iter(case.tests))
        assert first_test.replace("_", " ") in tech
        assert first_test.replace("_", " ") not in doc and first_test.replace("_", " ") not in pat


def test_scripted_consultation_routes_and_logs(demo):
    case = demo["demo-003"]
    sink = ListSink()
    r = run_consultation(case, _models(ScriptedLLM(demo)), ConsultationConfig(), sink)
    assert r.status == "diagnosed" and r.error is None
    assert r.tests_requested and len(r.tests_requested) == min(4, len(case.tests))
    routes = [e for e in sink.events if isinstance(e, RouteDecision)]
    assert [e.route for e in routes[:3]] == ["patient"] * 3
    assert routes[-1].route == "diagnosis"
    assert {e.route for e in routes} == {"patient", "measurement", "diagnosis"}
    # each role's prompts are prefix-stable: every call extends that role's previous call
    by_role = {}
    for e in sink.events:
        if isinstance(e, LLMCall) and e.role != "judge":
            prev = by_role.get(e.role)
            if prev is not None:
                assert e.messages[: len(prev.messages)] == prev.messages
                assert e.messages[len(prev.messages)]["content"] == prev.output.strip()
            by_role[e.role] = e


def test_technician_releases_only_what_was_asked(demo):
    case = demo["demo-001"]
    hits = match_findings(case, "CBC")
    assert hits and all(p.startswith("Complete Blood Count") for p, _ in hits)
    xr = match_findings(case, "chest x-ray please")
    assert xr and all(p.startswith("Chest X-Ray") for p, _ in xr)
    assert match_findings(case, "EKG")[0][0].startswith("ECG")
    assert match_findings(case, "colonoscopy") == []


class NeverDiagnoses:
    name = "chatty"

    def __init__(self):
        self.n = 0

    def generate(self, messages, params, ctx):
        self.n += 1
        if ctx.role == "judge":
            return Output("No.", self.name)
        return Output(f"Tell me more about symptom number {self.n}." if ctx.role == "doctor" else "It hurts.", self.name)


def test_turn_limit_demands_diagnosis_and_records_none(demo):
    llm = NeverDiagnoses()
    sink = ListSink()
    r = run_consultation(demo["demo-001"], _models(llm), ConsultationConfig(max_turns=5), sink)
    assert r.status == "no_diagnosis" and r.correct is False and r.turns == 5 and r.error is None
    assert any(isinstance(e, TurnLimitReached) for e in sink.events)
    doctor_inputs = [e.messages[-1]["content"] for e in sink.events if isinstance(e, LLMCall) and e.role == "doctor"]
    assert LAST_TURN in doctor_inputs[-1] and all(LAST_TURN not in d for d in doctor_inputs[:-1])


class Flaky:
    name = "flaky"

    def __init__(self, inner, failures):
        self.inner, self.failures = inner, failures

    def generate(self, messages, params, ctx):
        if self.failures > 0:
            self.failures -= 1
            raise LLMError("connection reset", backend=self.name)
        return self.inner.generate(messages, params, ctx)


def test_retries_then_success_and_then_error(demo):
    cfg = ConsultationConfig(retry=RetryPolicy(retries=2, backoff_s=0.0))
    sink = ListSink()
    r = run_consultation(demo["demo-001"], _models(ScriptedLLM(demo), patient=Flaky(ScriptedLLM(demo), 2)), cfg, sink)
    assert r.error is None and len([e for e in sink.events if isinstance(e, LLMRetry)]) == 2
    sink = ListSink()
    r = run_consultation(demo["demo-001"], _models(ScriptedLLM(demo), patient=Flaky(ScriptedLLM(demo), 5)), cfg, sink)
    assert r.status == "error" and r.correct is None and "connection reset" in r.error


def test_scripted_gets_some_right_and_some_wrong(demo):
    results = [run_consultation(c, _models(ScriptedLLM(demo, seed=1)), ConsultationConfig(), ListSink())
               for c in demo.values()]
    assert any(r.correct for r in results) and any(r.correct is False for r in results)
    assert {r.judge_method for r in results} == {"precheck", "llm"}


class AlwaysDiagnoses:
    name = "hasty"

    def generate(self, messages, params, ctx):
        return Output("No." if ctx.role == "judge" else "DIAGNOSIS READY: Gout", self.name)


def test_minimum_gathering_rule(demo):
    from agents.events import PrematureDiagnosis

    sink = ListSink()
    r = run_consultation(demo["demo-016"], _models(AlwaysDiagnoses()),
                         ConsultationConfig(max_turns=5, doctor_mode="markers", guard_retries=None), sink)
    prem = [e for e in sink.events if isinstance(e, PrematureDiagnosis)]
    assert [e.turn for e in prem] == [1, 2, 3, 4] and all(e.required == 3 for e in prem)
    assert r.turns == 5 and r.diagnosis == "Gout"  # the last turn accepts it
    doctor_inputs = [e.messages[-1]["content"] for e in sink.events if isinstance(e, LLMCall) and e.role == "doctor"]
    assert doctor_inputs[1].startswith("Not yet")
    sink = ListSink()
    r = run_consultation(demo["demo-016"], _models(AlwaysDiagnoses()),
                         ConsultationConfig(min_gathering=0, doctor_mode="markers"), sink)
    assert r.turns == 1 and not [e for e in sink.events if isinstance(e, PrematureDiagnosis)]
