import pytest

from agents.cases import load_cases
from agents.cases.model import format_facts, flatten
from agents.consultation import LAST_TURN, ConsultationConfig, run_consultation
from agents.events import DictSink
from agents.findings import match_findings
from agents.guards import normalise_line
from agents.llm.base import LLMError, Output
from agents.llm.calls import RetryPolicy
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, ScriptedParticipant, llm_cast
from agents.roles import doctor_system, measurement_system, patient_system
from tests.helpers import consult, of, roles


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


def leaked_facts(text: str, case) -> list[str]:
    """Examination findings and test results of ``case`` that appear in ``text``
    (values of 16+ characters, compared without case and punctuation), but those the
    patient knows anyway (a symptom recorded in both places)."""
    low = normalise_line(text)
    own = normalise_line(format_facts(case.patient))
    out = []
    for _, value in flatten(case.tests) + flatten(case.exam):
        v = normalise_line(value)
        if len(v) >= 16 and v in low and v not in own:
            out.append(value)
    return out


def names_diagnosis(text: str, case) -> bool:
    return normalise_line(case.diagnosis) in normalise_line(text)


def test_leak_checks_can_fail(demo):
    """The checks below would catch a leak: fed a prompt that leaks, they fire."""
    case = demo["demo-001"]
    leaky = patient_system(case) + "\n" + format_facts(case.tests)
    assert leaked_facts(leaky, case)
    assert names_diagnosis(doctor_system(case, 20) + f" (answer: {case.diagnosis})", case)


@pytest.mark.parametrize("style", ["medsim", "agentclinic"])
def test_information_asymmetry_in_the_prompts(demo, style):
    for case in demo.values():
        doc = doctor_system(case, 20, mode="structured", style=style)
        pat = patient_system(case, style=style)
        tech = measurement_system(case, style=style)
        assert not names_diagnosis(doc, case) and not names_diagnosis(pat, case)
        assert leaked_facts(doc, case) == [] and leaked_facts(pat, case) == [], case.id
        assert case.patient["History"][:40] not in doc
        assert len(leaked_facts(tech, case)) >= 1  # the technician holds them


def _told(call: dict) -> str:
    """What a call told its role, but the technician's results (a result may name the
    condition when the case's record does: an ECG read as "inferior STEMI")."""
    return " ".join(m["content"] for m in call["messages"]
                    if m["role"] != "assistant" and not m["content"].startswith("Technician:"))


def test_the_diagnosis_never_reaches_the_doctor(demo):
    """Over whole consultations, nothing the doctor or the patient is told names the
    answer key, except test results whose case record itself names it."""
    for case in demo.values():
        _, events = consult(case, roles(ScriptedLLM(demo)))
        records = format_facts(case.tests) + format_facts(case.exam)
        for call in of(events, "llm_call"):
            if call["role"] not in ("doctor", "patient"):
                continue
            assert not names_diagnosis(_told(call), case), (case.id, call["role"])
            for m in call["messages"]:
                if m["content"].startswith("Technician:") and names_diagnosis(m["content"], case):
                    assert names_diagnosis(records, case), case.id
    # and the check fires when a patient does say it
    case = demo["demo-005"]
    _, events = consult(case, roles(ScriptedLLM(demo)), participants={
        "patient": ScriptedParticipant("patient", [f"My last doctor said it was {case.diagnosis}."])})
    assert any(names_diagnosis(_told(c), case) for c in of(events, "llm_call", role="doctor"))


def test_scripted_consultation_routes_and_logs(demo):
    case = demo["demo-003"]
    row, events = consult(case, roles(ScriptedLLM(demo)))
    assert row["status"] == "diagnosed" and row["error"] is None
    assert row["tests_requested"] == [e["test"] for e in of(events, "test_requested")]
    assert row["tests_requested"] and len(row["tests_requested"]) == min(4, len(case.tests))
    routes = of(events, "route")
    assert [e["route"] for e in routes[:3]] == ["patient"] * 3
    assert routes[-1]["route"] == "diagnosis"
    assert {e["route"] for e in routes} == {"patient", "measurement", "diagnosis"}
    # each role's prompts are prefix-stable: every call extends that role's previous call
    by_role: dict = {}
    for e in of(events, "llm_call"):
        if e["role"] == "judge":
            continue
        prev = by_role.get(e["role"])
        if prev is not None:
            assert e["messages"][: len(prev["messages"])] == prev["messages"]
            assert e["messages"][len(prev["messages"])]["content"] == prev["output"].strip()
        by_role[e["role"]] = e
    # the consultation ends before scoring starts
    types = [e["type"] for e in events]
    assert types.index("consultation_ended") < types.index("judge") < types.index("scored")


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
    row, events = consult(demo["demo-001"], roles(NeverDiagnoses()), cast=CastConfig(doctor_mode="markers", max_turns=5),
                          rules=ConsultationConfig(max_turns=5))
    assert row["status"] == "no_diagnosis" and row["correct"] is False and row["turns"] == 5 and row["error"] is None
    assert of(events, "turn_limit")
    doctor_inputs = [e["messages"][-1]["content"] for e in of(events, "llm_call", role="doctor")]
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
    cfg = CastConfig(retry={"patient": RetryPolicy(retries=2, backoff_s=0.0)})
    row, events = consult(demo["demo-001"], roles(ScriptedLLM(demo), patient=Flaky(ScriptedLLM(demo), 2)), cast=cfg)
    assert row["error"] is None and len(of(events, "llm_retry")) == 2
    row, events = consult(demo["demo-001"], roles(ScriptedLLM(demo), patient=Flaky(ScriptedLLM(demo), 5)), cast=cfg)
    assert row["status"] == "error" and row["correct"] is None and "connection reset" in row["error"]
    assert not of(events, "judge")  # an errored consultation is not judged


def test_verdicts_follow_the_answer_key_not_the_fake(demo):
    """The scripted doctor is right for some cases and wrong for others; the scored
    verdict must agree with an independent comparison against the answer key."""
    rows = [consult(c, roles(ScriptedLLM(demo, seed=1)))[0] for c in demo.values()]
    for r in rows:
        said = normalise_line(r["diagnosis"])
        assert r["correct"] == (normalise_line(r["truth"]) in said), r
    assert any(r["correct"] for r in rows) and any(r["correct"] is False for r in rows)


class AlwaysDiagnoses:
    name = "hasty"

    def generate(self, messages, params, ctx):
        return Output("No." if ctx.role == "judge" else "DIAGNOSIS READY: Gout", self.name)


def test_minimum_gathering_rule(demo):
    cast = CastConfig(doctor_mode="markers", guard_retries=None, max_turns=5)
    row, events = consult(demo["demo-016"], roles(AlwaysDiagnoses()), cast=cast, rules=ConsultationConfig(max_turns=5))
    prem = of(events, "premature_diagnosis")
    assert [e["turn"] for e in prem] == [1, 2, 3, 4] and all(e["required"] == 3 for e in prem)
    assert row["turns"] == 5 and row["diagnosis"] == "Gout"  # the last turn accepts it
    doctor_inputs = [e["messages"][-1]["content"] for e in of(events, "llm_call", role="doctor")]
    assert doctor_inputs[1].startswith("Not yet")
    row, events = consult(demo["demo-016"], roles(AlwaysDiagnoses()), cast=cast,
                          rules=ConsultationConfig(min_gathering=0))
    assert row["turns"] == 1 and not of(events, "premature_diagnosis")


def test_a_scripted_participant_takes_a_role(demo):
    """Participants are interchangeable: a fixed-script doctor drives the same engine,
    and its turns are marked as scripted in the log."""
    case = demo["demo-001"]
    doctor = ScriptedParticipant("doctor", ["What brings you in?", "REQUEST TEST: ECG", "Any chest pain?",
                                            f"DIAGNOSIS READY: {case.diagnosis}"])
    row, events = consult(case, roles(ScriptedLLM(demo)), participants={"doctor": doctor})
    assert row["status"] == "diagnosed" and row["correct"] is True and row["tests_requested"] == ["ECG"]
    assert {e["source"] for e in of(events, "utterance", speaker="doctor")} == {"scripted"}
    assert not of(events, "llm_call", role="doctor")


def test_the_engine_asks_for_the_cast_it_needs(demo):
    with pytest.raises(ValueError, match="measurement"):
        from agents.consultation import Consultation

        Consultation(demo["demo-001"], {"doctor": None, "patient": None}, ConsultationConfig(), DictSink())
    with pytest.raises(ValueError):
        ConsultationConfig(max_turns=0)
    with pytest.raises(ValueError):
        ConsultationConfig(min_gathering=-1)
    # the whole cast comes from one builder
    cast = llm_cast(demo["demo-001"], roles(ScriptedLLM(demo)), CastConfig(), DictSink())
    assert set(cast) == {"doctor", "patient", "measurement"}
    run_consultation(demo["demo-001"], cast, ConsultationConfig(), DictSink())
