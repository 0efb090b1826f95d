"""The fidelity scorer (issue 21, item 1): each label fires on a handmade transcript and
stays silent on its clean twin; the checker model decides only what the pre-check left
open; the run's rates carry Wilson intervals and name the checker."""
from __future__ import annotations

import json

import pytest

from agents.cases.registry import load_cases
from agents.events import DictSink
from agents.fidelity.scorer import FidelityScorer, fidelity_markdown, fidelity_row, fidelity_summary
from agents.llm.base import Output
from agents.scorers import Transcript


@pytest.fixture(scope="module")
def demo():
    return {c.id: c for c in load_cases("demo")[0]}


def transcript(*turns: tuple) -> Transcript:
    """A finished consultation from (speaker, text) pairs: ("ask", q), ("patient", r),
    ("order", test), ("result", text), ("synth", text) marks the turn's result synthesised."""
    ev: list[dict] = [{"type": "case_started", "case_id": "x"}]
    turn = 0
    for kind, text, *more in turns:
        if kind in ("ask", "order"):
            turn += 1
            ev.append({"type": "utterance", "turn": turn, "speaker": "doctor",
                       "addressee": "patient" if kind == "ask" else "measurement", "text": text, "source": "llm"})
            if kind == "order":
                ev.append({"type": "test_requested", "turn": turn, "test": text})
        elif kind == "patient":
            ev.append({"type": "utterance", "turn": turn, "speaker": "patient", "addressee": "doctor", "text": text,
                       "source": more[0] if more else "llm"})
        elif kind in ("result", "synth"):
            test = next(e["test"] for e in reversed(ev) if e["type"] == "test_requested")
            if kind == "synth":
                ev.append({"type": "synthesised_result", "turn": turn, "test": test, "text": text})
            ev.append({"type": "test_result", "turn": turn, "test": test, "result": text})
            ev.append({"type": "utterance", "turn": turn, "speaker": "measurement", "addressee": "doctor",
                       "text": text, "source": "llm"})
    ev.append({"type": "consultation_ended", "status": "diagnosed", "turns": turn, "diagnosis": "X",
               "tests_requested": [], "error": None, "failure": None})
    return Transcript.from_events(ev, case_id="x")


def labels(case, *turns, checker=None) -> list[set[str]]:
    score = FidelityScorer(checker)(case, transcript(*turns), DictSink())
    return [set(i["labels"]) for i in score.details["items"]]


PATIENT_PAIRS = [
    # label, question, the faulty reply, its clean twin
    ("contradicted", "Do you have diarrhoea?", "Yes, I have had diarrhoea all night.", "No, no diarrhoea."),
    ("contradicted", "How are you feeling?", "I feel fine, no problems at all.", "My tummy really hurts on the right."),
    ("contradicted", "Any pain?", "No, I don't have any pain.", "Yes, a sharp pain low on the right side."),
    ("invented", "What brings you in?", "I have had a bad headache and blurred vision.",
     "I have pain in my lower right tummy."),
    ("third_person", "What brings you in?", "The patient's main complaint is abdominal pain.",
     "My main complaint is abdominal pain."),
    ("third_person", "What brings you in?", "He has pain on the lower right side of his tummy.",
     "I have pain on the lower right side of my tummy."),
    ("leak", "What do you think it is?", "I think I have appendicitis.", "I really don't know what it is."),
    ("leak", "Any fever?", "Yes, my temperature was 38.1 this morning.", "Yes, I have been feeling feverish."),
    ("overshare", "Do you smoke?",
     "No, I don't smoke. I vomited twice this morning and I have lost my appetite.", "No, I don't smoke."),
]


@pytest.mark.parametrize("label, question, bad, clean", PATIENT_PAIRS, ids=[p[0] + str(i) for i, p in
                                                                            enumerate(PATIENT_PAIRS)])
def test_each_patient_label_fires_and_its_clean_twin_is_silent(demo, label, question, bad, clean):
    case = demo["demo-007"]
    assert label in labels(case, ("ask", question), ("patient", bad))[0]
    assert label not in labels(case, ("ask", question), ("patient", clean))[0]


def test_supported_fires_on_what_the_case_says_and_not_on_an_invention(demo):
    case = demo["demo-007"]
    assert "supported" in labels(case, ("ask", "What brings you in?"),
                                 ("patient", "The pain started around my belly button and moved to the right."))[0]
    assert "supported" not in labels(case, ("ask", "What brings you in?"), ("patient", "I broke my leg skiing."))[0]


def test_an_infant_needs_a_caregiver_voice(demo):
    case = demo["demo-017"]  # a 3-year-old, the history given by his mother
    bad = labels(case, ("ask", "What has been happening?"), ("patient", "I have had a fever for five days."))[0]
    good = labels(case, ("ask", "What has been happening?"), ("patient", "He has had a fever for five days."))[0]
    assert "not_caregiver" in bad and "not_caregiver" not in good and "third_person" not in good
    adult = labels(demo["demo-007"], ("ask", "What is wrong?"), ("patient", "I have had a fever for a day."))[0]
    assert "not_caregiver" not in adult  # an adult speaks for himself


def test_a_person_playing_the_patient_is_not_checked(demo):
    assert labels(demo["demo-007"], ("ask", "Hi?"), ("patient", "The patient is fine.", "human")) == []


TECH_PAIRS = [
    ("wrong_record", "Blood cultures", "RESULTS: WBC 15.4 x10^9/L (high), Neutrophils 12.9 x10^9/L (high)",
     "RESULTS: Blood cultures: No growth after 48 hours", True),
    ("unmarked", "Complete blood count", "RESULTS: WBC 9.0, haemoglobin 13.1 g/dL",
     "RESULTS: WBC 15.4 x10^9/L (high); Neutrophils 12.9 x10^9/L (high); Hemoglobin 15.2 g/dL", False),
    ("implausible", "Wells score", "RESULTS: Wells score: Within normal limits",
     "RESULTS: Wells score: No abnormality recorded", True),
    ("missed_record", "C-reactive protein", "RESULTS: C-reactive protein: CRP 3 mg/L (normal < 5)",
     "RESULTS: C-Reactive Protein > Result: 68 mg/L (high)", "bad_only"),
]


@pytest.mark.parametrize("label, test, bad, clean, clean_synth", TECH_PAIRS, ids=[p[0] for p in TECH_PAIRS])
def test_each_technician_label_fires_and_its_clean_twin_is_silent(demo, label, test, bad, clean, clean_synth):
    case = demo["demo-007"]
    bad_kind = "synth" if label in ("implausible", "missed_record") else "result"
    clean_kind = "synth" if clean_synth is True else "result"
    got = labels(case, ("order", test), (bad_kind, bad))[0]
    assert label in got, got
    twin = labels(case, ("order", test), (clean_kind, clean))[0]
    assert label not in twin, twin
    assert not twin & {"wrong_record", "unmarked", "implausible", "missed_record"}


def test_a_marked_synthesised_result_is_synthesised_and_an_unmarked_one_is_not(demo):
    case = demo["demo-007"]
    text = "RESULTS: Blood cultures: No growth after 48 hours"
    assert labels(case, ("order", "Blood cultures"), ("synth", text))[0] == {"synthesised"}
    assert "synthesised" not in labels(case, ("order", "Blood cultures"), ("result", text))[0]


def test_the_records_of_the_order_are_from_the_case(demo):
    case = demo["demo-007"]
    got = labels(case, ("order", "CBC"), ("result", "RESULTS: Complete Blood Count > WBC: 15.4 x10^9/L (high)"))[0]
    assert got == {"from_case"}


def test_an_order_whose_records_are_all_short_values_is_reported_from_the_case():
    """"RESULTS: pending" for a blood count whose records all say Pending (a live run's
    reply the checker model took for another test's record)."""
    from agents.cases.model import Case
    from agents.fidelity.technician import check_technician

    case = Case(id="p-1", source="t", objective="x", demographics="24-year-old woman", diagnosis="Endometritis",
                patient={"Demographics": "24-year-old woman"}, exam={},
                tests={"Complete_Blood_Count": {"WBC": "Pending", "Hemoglobin": "Pending"}, "Urinalysis": "Positive"})
    assert check_technician(case, "Complete blood count", "RESULTS: pending").verdict == "from_case"
    assert check_technician(case, "Complete blood count", "RESULTS: Pending for all").verdict == "from_case"
    assert check_technician(case, "Complete blood count", "RESULTS: positive").verdict != "from_case"


class FakeChecker:
    """A checker model that answers every prompt with one JSON object."""

    name = "fake-checker"

    def __init__(self, patient: dict, technician: dict | None = None):
        self.patient, self.technician, self.calls = patient, technician or {"verdict": "ordered_record", "why": "x"}, 0

    def generate(self, messages, params, ctx):
        self.calls += 1
        assert ctx.role == "judge" and params.response_schema  # a bounded JSON verdict
        body = self.technician if "technician" in messages[0].content else self.patient
        return Output(json.dumps(body), self.name)


def test_the_checker_model_decides_only_what_the_pre_check_left_open(demo):
    case = demo["demo-007"]
    fake = FakeChecker({"claims": "contradicted", "voice": "third_person", "leak": True, "overshare": True,
                        "why": "made up"})
    # decided by the pre-check: no call, and the model's (wrong) opinion is not taken
    clean = labels(case, ("ask", "Do you have diarrhoea?"), ("patient", "No."), checker=fake)[0]
    assert fake.calls == 0 and "contradicted" not in clean and "third_person" not in clean
    # partly in the case: the claim is undecided, the model says contradicted
    score = FidelityScorer(fake)(case, transcript(("ask", "Where is the pain?"),
                                                  ("patient", "It is a burning pain in my chest and my back.")),
                                 sink := DictSink())
    item = score.details["items"][0]
    assert fake.calls == 1 and "claims" in item["model"] and "contradicted" in item["labels"]
    assert "third_person" not in item["labels"]  # voice was decided by the pre-check (first person)
    assert score.details["checker"] == "pre-check + fake-checker"
    assert [e["role"] for e in sink.events if e["type"] == "llm_call"] == ["judge"]


def test_the_scripted_oracle_is_no_checker(demo):
    from agents.llm.scripted import ScriptedLLM

    s = FidelityScorer(ScriptedLLM(demo))
    assert s.checker is None and s.label == "pre-check"


def test_rates_with_wilson_intervals_and_the_checker_in_the_summary_and_report(demo):
    case = demo["demo-007"]
    rows = []
    for i, reply in enumerate(["The patient has pain.", "I have pain on the right.", "I think it's appendicitis."]):
        sink = DictSink()
        score = FidelityScorer(None)(case, transcript(("ask", "What brings you in?"), ("patient", reply)), sink)
        ev = [{"type": "scored", "scorer": "fidelity", "value": score.value, "details": score.details}]
        rows.append({"case_id": f"c{i}", "seed": 0, "condition": "base", "fidelity": fidelity_row(ev)})
    f = fidelity_summary(rows)["fidelity"]
    assert f["checker"] == "pre-check" and f["patient"]["items"] == 3
    third = f["patient"]["third_person"]
    assert third["k"] == 1 and third["n"] == 3 and third["ci95"][0] < 1 / 3 < third["ci95"][1]
    md = "\n".join(fidelity_markdown({"fidelity": f}))
    assert "## Simulator fidelity" in md and "pre-check" in md and "appendicitis" in md


def test_the_worst_utterances_are_escaped_in_the_report(demo):
    case = demo["demo-007"]
    reply = "The patient | has \x1b[31mpain\u202e."
    score = FidelityScorer(None)(case, transcript(("ask", "Hi?"), ("patient", reply)), DictSink())
    ev = [{"type": "scored", "scorer": "fidelity", "value": score.value, "details": score.details}]
    md = "\n".join(fidelity_markdown(fidelity_summary([{"case_id": "c", "fidelity": fidelity_row(ev)}])))
    assert "\x1b" not in md and "\u202e" not in md and "\\x1b" in md and "\\|" in md
