"""The measures beyond right or wrong (agents.measures), on handmade logs: a known
differential gives known top-k, Brier and ECE; a transcript that elicits 3 of 6 facts
gives recall 0.5; a known order list gives known precision, recall and F1."""
from __future__ import annotations

import math

import pytest

from agents.cases.model import Case
from agents.events import DictSink
from agents.llm.base import Output
from agents.measures.calibration import brier, ece, reliability_bins
from agents.measures.differential import DifferentialScorer, differential_row, differential_summary, final_differential
from agents.measures.elicited import ElicitationScorer, case_items, elicited_row, elicited_summary
from agents.measures.ordered import OrdersScorer, order_scores, recorded_tests, orders_row, orders_summary
from agents.scorers import Transcript

CASE = Case(
    id="m1", objective="Assess the patient.", demographics="40-year-old man",
    patient={"Demographics": "40-year-old man",
             "History": "Crushing chest pain for two hours.",
             "Symptoms": {"Primary_Symptom": "Chest pain", "Secondary_Symptoms": ["Sweating", "Nausea"]},
             "Past_Medical_History": "High blood pressure.",
             "Social_History": "Smokes twenty cigarettes a day."},
    exam={"Vital_Signs": {"Heart_Rate": "110 bpm"}},
    tests={"ECG": {"Findings": "ST elevation in leads II, III and aVF"},
           "Blood_Tests": {"Troponin": "412 ng/L", "Complete_Blood_Count": "Haemoglobin 14.6 g/dL"},
           "Imaging": {"Chest_X-Ray": "Clear lungs"}},
    diagnosis="Inferior myocardial infarction", source="test:1")


class Judge:
    """A judge that says "same" only for the names it is given (and logs nothing)."""

    name = "fake-judge"

    def __init__(self, right: set[str]):
        self.right, self.calls = right, []

    def generate(self, messages, params, ctx):
        said = messages[-1].content
        dx = said.split("Doctor's diagnosis:", 1)[-1].strip().splitlines()[0] if "Doctor's diagnosis:" in said else said
        self.calls.append(dx)
        same = any(r.lower() in said.lower() for r in self.right)
        text = '{"relation": "same", "why": "x"}' if same else '{"relation": "different", "why": "x"}'
        return Output(text=text, model=self.name, prompt_tokens=1, prompt_tokens_evaluated=1, completion_tokens=1,
                      latency_s=0.0)


def log(*events: dict, diagnosis: str | None = "X", tests: tuple[str, ...] = (), static: bool = False) -> Transcript:
    ev = [{"type": "header", "spec": {"protocol": {"static": static}}}, {"type": "case_started", "case_id": "m1"},
          *events,
          {"type": "consultation_ended", "status": "diagnosed" if diagnosis else "no_diagnosis", "turns": 3,
           "diagnosis": diagnosis, "tests_requested": list(tests), "error": None, "failure": None}]
    return Transcript.from_events(ev, case_id="m1")


def diff_event(*items: tuple[str, float | None], final: bool = True) -> dict:
    return {"type": "differential", "turn": 3, "final": final,
            "items": [{"diagnosis": d, "confidence": c} for d, c in items]}


# -- differential ------------------------------------------------------------------------
def test_the_rank_of_the_first_right_item_gives_top_k_and_the_judge_stops_there(monkeypatch, tmp_path):
    import agents.judge as judge_module
    from agents.condition_thesaurus import ConditionThesaurus

    # the fake model's "same" stands: medsim's thesaurus (which holds these apart) is not read here
    monkeypatch.setattr(judge_module, "_THESAURUS", ConditionThesaurus(judge_module._vocab_key, tmp_path / "none.txt"))
    judge = Judge({"Pericarditis"})  # the truth is not named: the model decides, "same" only for this one
    t = log(diff_event(("Unstable angina", 0.6), ("Aortic dissection", 0.2), ("Pericarditis", 0.1), ("GERD", 0.05)),
            diagnosis="Unstable angina")
    s = DifferentialScorer(judge)(CASE, t, DictSink())
    assert s.value == 3 and s.details["rank"] == 3 and s.details["top1_confidence"] == 0.6
    assert [i["correct"] for i in s.details["items"]] == [False, False, True, None]  # GERD never judged
    # three items judged, and the model's "same" asked the other way round (the key as the diagnosis)
    assert judge.calls == ["Unstable angina", "Aortic dissection", "Pericarditis", CASE.diagnosis]


def test_one_diagnosis_is_a_differential_of_one_without_a_confidence():
    t = log(diagnosis="Inferior myocardial infarction")
    assert final_differential(t.events, t.diagnosis) == [("Inferior myocardial infarction", None)]
    s = DifferentialScorer(Judge(set()))(CASE, t, DictSink())
    assert s.value == 1 and s.details["n"] == 1 and s.details["top1_confidence"] is None
    # a working differential (never final) is not the answer
    t2 = log(diff_event(("Pericarditis", 0.9), final=False), diagnosis="Pericarditis")
    assert final_differential(t2.events, t2.diagnosis) == [("Pericarditis", None)]


def test_no_diagnosis_is_wrong_at_every_k_and_a_failed_consultation_is_not_scored():
    s = DifferentialScorer(Judge(set()))(CASE, log(diagnosis=None), DictSink())
    assert s.value == 0 and s.details["rank"] is None
    ev = [{"type": "case_started"}, {"type": "consultation_ended", "status": "failed", "turns": 1, "diagnosis": None,
                                     "tests_requested": [], "error": None, "failure": "loop"}]
    assert DifferentialScorer(Judge(set()))(CASE, Transcript.from_events(ev, case_id="m1"), DictSink()).value is None


def _rows(ranks_conf: list[tuple[int | None, float | None]]) -> list[dict]:
    return [{"case_id": f"c{i}", "status": "diagnosed", "differential": {"scored": True, "rank": r, "n": 5,
                                                                           "top1_confidence": c, "judge": "j"}}
            for i, (r, c) in enumerate(ranks_conf)]


def test_known_ranks_and_confidences_give_known_top_k_brier_and_ece():
    rows = _rows([(1, 0.9), (1, 0.7), (2, 0.8), (4, 0.6), (0, 0.3)])
    d = differential_summary(rows)["differential"]
    assert (d["top1"]["hits"], d["top3"]["hits"], d["top5"]["hits"], d["n"]) == (2, 3, 4, 5)
    # Brier: (0.9-1)^2 + (0.7-1)^2 + 0.8^2 + 0.6^2 + 0.3^2 = 0.01 + 0.09 + 0.64 + 0.36 + 0.09 = 1.19 / 5
    assert d["calibration"]["brier"] == pytest.approx(0.238)
    # ECE over 10 bins: bins 0.9 (1 right), 0.7 (1 right), 0.8 (0), 0.6 (0), 0.3 (0), one each:
    # (0.1 + 0.3 + 0.8 + 0.6 + 0.3) / 5 = 0.42
    assert d["calibration"]["ece"] == pytest.approx(0.42)
    assert d["calibration"]["n"] == 5 and d["judge"] == "j"
    lo, hi = d["top1"]["ci95"]
    assert lo < 0.4 < hi


def test_ece_pools_a_bin_and_calibrated_confidence_has_no_error():
    pairs = [(0.75, True), (0.75, True), (0.75, True), (0.75, False)]
    assert ece(pairs) == pytest.approx(0.0) and brier(pairs) == pytest.approx((3 * 0.0625 + 0.5625) / 4)
    bins = reliability_bins([(0.05, False), (0.95, True), (1.0, True)])
    assert [(b["lo"], b["n"], b["accuracy"]) for b in bins] == [(0.0, 1, 0.0), (0.9, 2, 1.0)]
    assert brier([]) is None and ece([]) is None


def test_rows_without_a_confidence_give_top_k_but_no_calibration():
    d = differential_summary(_rows([(1, None), (0, None)]))["differential"]
    assert d["top1"]["hits"] == 1 and d["calibration"]["n"] == 0 and d["calibration"]["brier"] is None


def test_the_row_reads_the_scored_event():
    sink = DictSink()
    s = DifferentialScorer(Judge(set()))(CASE, log(diff_event(("Inferior myocardial infarction", 0.8), ("GERD", 0.1)),
                                                   diagnosis="Inferior myocardial infarction"), sink)
    ev = [{"type": "scored", "scorer": "differential", "value": s.value, "details": s.details}]
    row = differential_row(ev)
    assert row["rank"] == 1 and row["top1_confidence"] == 0.8 and row["items"][1]["correct"] is None


# -- information elicited ------------------------------------------------------------------
SIX = Case(id="six", objective="Assess.", demographics="30-year-old woman",
           patient={"Demographics": "30-year-old woman", "History": "Headache for three days.",
                    "Symptoms": {"Primary_Symptom": "Headache", "Secondary_Symptoms": ["Vomiting"]},
                    "Past_Medical_History": "Asthma.", "Social_History": "Works as a teacher."},
           exam={"Neck": "Stiffness on flexion"}, tests={}, diagnosis="Meningitis", source="t:1")


def said(text: str) -> dict:
    return {"type": "utterance", "turn": 1, "speaker": "patient", "addressee": "doctor", "text": text}


def test_a_transcript_that_elicits_three_of_six_facts_has_recall_one_half():
    items = case_items(SIX)
    assert len(items) == 6, [i.text for i in items]
    t = log(said("I've had a headache for three days."), said("I have been vomiting too."),
            said("I have asthma."))
    s = ElicitationScorer()(SIX, t, DictSink())
    # the history and the complaint (both in the first answer), the vomiting and the asthma: 4 of 6
    got = {k: v["reached"] for k, v in s.details["categories"].items()}
    assert got == {"history": 1, "complaint": 1, "symptoms": 1, "past history": 1, "social history": 0,
                   "examination": 0}
    assert s.details["facts"] == 6 and s.value == pytest.approx(4 / 6, abs=1e-4)
    t3 = log(said("I have been vomiting."), said("I have asthma."), said("I work as a teacher."))
    s3 = ElicitationScorer()(SIX, t3, DictSink())
    assert s3.value == pytest.approx(0.5) and s3.details["reached"] == 3


def test_a_record_reaches_the_doctor_only_through_an_order_that_matched_it():
    result = [{"type": "test_result", "turn": 2, "test": "Neurological examination", "result": "Neck: Stiffness on flexion"}]
    elsewhere = [{"type": "test_result", "turn": 2, "test": "Chest X-ray", "result": "Stiffness on flexion"}]
    assert ElicitationScorer()(SIX, log(*result), DictSink()).details["categories"]["examination"]["reached"] in (0, 1)
    on_target = [{"type": "test_result", "turn": 2, "test": "Neck", "result": "RESULTS: Neck: Stiffness on flexion"}]
    assert ElicitationScorer()(SIX, log(*on_target), DictSink()).details["categories"]["examination"]["reached"] == 1
    assert ElicitationScorer()(SIX, log(*elsewhere), DictSink()).details["categories"]["examination"]["reached"] == 0


def test_a_patient_who_says_nothing_of_a_fact_did_not_tell_it_and_static_is_not_scored():
    s = ElicitationScorer()(SIX, log(said("I don't know.")), DictSink())
    assert s.value == 0.0
    assert ElicitationScorer()(SIX, log(static=True), DictSink()).value is None


def test_recall_pools_per_category_with_intervals():
    rows = [{"elicited": {"scored": True, "recall": 0.5, "reached": 1, "facts": 2,
                          "categories": {"history": {"reached": 1, "facts": 2}}}},
            {"elicited": {"scored": True, "recall": 1.0, "reached": 2, "facts": 2,
                          "categories": {"history": {"reached": 2, "facts": 2}}}},
            {"elicited": {"scored": False, "why": "static"}}]
    e = elicited_summary(rows)["elicited"]
    assert e["cases"] == 2 and e["mean_recall"] == 0.75 and e["pooled"]["recall"] == 0.75
    assert e["categories"]["history"]["reached"] == 3


# -- tests ordered -------------------------------------------------------------------------
def test_recorded_tests_open_a_group_and_keep_a_test_whole():
    assert recorded_tests(CASE) == ["ECG", "Blood Tests > Troponin", "Blood Tests > Complete Blood Count",
                                    "Imaging > Chest X-Ray"]


def test_a_known_order_list_gives_known_precision_recall_and_f1():
    # ECG and troponin are recorded; a D-dimer is not; vital signs are the examination, not a test
    got = order_scores(CASE, ["12-lead ECG", "Troponin", "D-dimer", "Vital signs", "troponin"])
    assert (got["ordered"], got["hits"], got["recorded"], got["matched"], got["examinations"]) == (3, 2, 4, 2, 1)
    assert got["precision"] == pytest.approx(2 / 3, abs=1e-4) and got["recall"] == pytest.approx(0.5)
    assert got["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5), abs=1e-4)
    assert got["off_record"] == ["D-dimer"]


def test_nothing_ordered_is_f1_zero_and_nothing_recorded_is_undefined():
    none = order_scores(CASE, [])
    assert none["precision"] is None and none["recall"] == 0.0 and none["f1"] == 0.0
    assert order_scores(SIX, ["CBC"])["f1"] is None


def test_the_scorer_adds_the_cost_and_the_summary_averages_with_n():
    s = OrdersScorer()(CASE, log(tests=("12-lead ECG", "Troponin")), DictSink())
    assert s.value == pytest.approx(2 * 1.0 * 0.5 / 1.5, abs=1e-4) and s.details["cost"] > 0
    row = orders_row([{"type": "scored", "scorer": "orders", "value": s.value, "details": s.details}])
    t = orders_summary([{"orders": row}, {"orders": {**row, "f1": None, "precision": None}}])["orders"]
    assert t["f1_n"] == 1 and t["precision_n"] == 1 and t["recall_n"] == 2 and not math.isnan(t["mean_cost"])
    assert OrdersScorer()(CASE, log(static=True), DictSink()).value is None


def test_ece_weights_each_bin_by_its_cases():
    pairs = [(0.75, True), (0.75, True), (0.75, False), (0.75, False), (0.15, True)]
    # bin 0.7: 4 cases, half right at 0.75 stated (0.25 off); bin 0.1: 1 case, right at 0.15 (0.85 off)
    assert ece(pairs) == pytest.approx(4 / 5 * 0.25 + 1 / 5 * 0.85)


def test_a_fact_needs_half_its_concepts_in_one_answer():
    # "Crushing chest pain for two hours": crush, chest, pain; "my back aches" shares one of three
    partial = ElicitationScorer()(CASE, log(said("My back aches a bit.")), DictSink())
    assert partial.details["categories"]["history"]["reached"] == 0
    whole = ElicitationScorer()(CASE, log(said("A crushing pain in my chest.")), DictSink())
    assert whole.details["categories"]["history"]["reached"] == 1


def test_an_order_of_several_tests_counts_each_of_them():
    # one order naming three tests: two recorded (ECG, troponin), one not (D-dimer)
    got = order_scores(CASE, ["12-lead ECG; Troponin; D-dimer"])
    assert (got["ordered"], got["hits"], got["matched"]) == (3, 2, 2)
    assert got["precision"] == pytest.approx(2 / 3, abs=1e-4) and got["off_record"] == ["D-dimer"]
    # the same tests ordered one by one score the same
    one_by_one = order_scores(CASE, ["12-lead ECG", "Troponin", "D-dimer"])
    assert {k: one_by_one[k] for k in ("ordered", "hits", "precision", "recall")} == \
        {k: got[k] for k in ("ordered", "hits", "precision", "recall")}


def test_an_order_of_several_tests_costs_each_of_them():
    from agents.costs import case_cost, price_table

    t = price_table()
    one = [{"type": "test_requested", "turn": 2, "test": "12-lead ECG; Troponin; D-dimer"}]
    apart = [{"type": "test_requested", "turn": i, "test": x} for i, x in enumerate(("12-lead ECG", "Troponin", "D-dimer"), 2)]
    assert case_cost(one)["cost_tests"] == case_cost(apart)["cost_tests"] == pytest.approx(
        sum(t.test_price(x)[0] for x in ("12-lead ECG", "Troponin", "D-dimer")))
