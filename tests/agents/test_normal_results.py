"""A made-up normal value never contradicts what the case records (agents.normal_results):
a part of it whose analyte the case measured in blood under another test is given as
recorded, named with that test; parts the case does not measure stay normal; another
specimen's value (CSF, urine) is another analyte. Through the technician (Hinted) and the
fidelity pre-check as well as directly."""
from __future__ import annotations

import pytest

from agents.cases.model import Case
from agents.events import ListSink
from agents.fidelity.technician import check_technician
from agents.findings import case_records, match_order
from agents.normal_results import NORMAL_VALUES, analyte, synthesised_result
from agents.participants.base import Observation, Turn
from agents.participants.wrappers import Hinted


def _case(tests: dict) -> Case:
    return Case(id="n-1", source="t", objective="x", demographics="19-year-old woman", diagnosis="Something",
                patient={"Demographics": "19-year-old woman"}, exam={}, tests=tests)


DKA = _case({"Venous_Blood_Gas": {"pH": "7.08", "Bicarbonate": "7 mmol/L", "PCO2": "2.6 kPa (20 mmHg)"},
             "Basic_Metabolic_Panel": {"Sodium": "131 mmol/L", "Potassium": "5.6 mmol/L", "Urea": "10.2 mmol/L",
                                       "Creatinine": "118 µmol/L", "Glucose": "29.4 mmol/L"},
             "Urinalysis": {"Sodium": "20 mmol/L"},
             "Cerebrospinal_Fluid": {"Glucose": "1.1 mmol/L"}})


@pytest.mark.parametrize("label, same", [("PaCO2", "PCO2"), ("Serum potassium", "K"), ("bicarbonate", "HCO3"),
                                         ("Hemoglobin", "Haemoglobin"), ("WBC", "White cell count"),
                                         ("Adjusted calcium", "Calcium")])
def test_one_analyte_has_one_name(label, same):
    assert analyte(label) == analyte(same)


@pytest.mark.parametrize("one, other", [("pH", "PCO2"), ("Sodium", "Potassium"), ("PaO2", "PaCO2"),
                                        ("Serum glucose", "HbA1c")])
def test_two_analytes_keep_two_names(one, other):
    assert analyte(one) != analyte(other)


@pytest.mark.parametrize("order, recorded, made_up", [
    ("Arterial blood gas", ["pH 7.08", "Bicarbonate 7 mmol/L", "PCO2 2.6 kPa"], ["pH 7.40", "bicarbonate 24", "PaCO2 5.2"]),
    ("Serum electrolytes", ["Sodium 131 mmol/L", "Potassium 5.6 mmol/L"], ["Sodium 140", "potassium 4.2"]),
    ("Renal function tests", ["Urea 10.2 mmol/L", "Creatinine 118 µmol/L"], ["Urea 5.0", "creatinine 80"]),
])
def test_a_normal_value_gives_what_the_case_records_of_its_analytes(order, recorded, made_up):
    assert not match_order(DKA, order)  # no record of the order itself: the technician makes its result up
    s = synthesised_result(order, DKA.demographics, case_records(DKA))
    assert s.policy == "normal_value" and s.recorded
    for value in recorded:
        assert value in s.text, s.text
    for value in made_up:
        assert value not in s.text, s.text
    assert "as recorded under" in s.text
    if order == "Arterial blood gas":
        assert "PaO2 12.5 kPa" in s.text  # the case has no oxygen tension: that part stays normal
        assert "Venous Blood Gas" in s.text


def test_another_specimen_or_no_records_leaves_the_normal_value_as_it_is():
    records = case_records(DKA)
    lp = synthesised_result("Lumbar puncture", DKA.demographics, records)  # CSF glucose is not blood glucose
    assert lp.text == NORMAL_VALUES["Lumbar puncture"] and not lp.recorded
    urine_only = _case({"Urine_Chemistry": {"Sodium": "20 mmol/L"}, "Urinalysis": {"Potassium": "40 mmol/L"}})
    s = synthesised_result("Serum electrolytes", urine_only.demographics, case_records(urine_only))
    assert s.text == NORMAL_VALUES["Serum electrolytes"]
    assert synthesised_result("Serum electrolytes", "19-year-old woman").text == NORMAL_VALUES["Serum electrolytes"]
    cbc = synthesised_result("Complete blood count", DKA.demographics, records)  # nothing of it recorded
    assert cbc.text == NORMAL_VALUES["Complete blood count"] and not cbc.recorded


class _Never:
    role = "measurement"

    def act(self, obs):
        raise AssertionError("a result the case has no record of is not asked of the model")


def test_the_technician_reports_it_and_the_fidelity_pre_check_holds_a_contradiction_implausible():
    sink = ListSink()
    turn = Hinted(_Never(), DKA, sink).act(Observation(turn=3, text="Arterial blood gas", order="Arterial blood gas"))
    assert isinstance(turn, Turn) and turn.source == "synthesised"
    assert "pH 7.08" in turn.text and "pH 7.40" not in turn.text
    event = next(e for e in sink.events if e.type == "synthesised_result")
    assert event.text == turn.text
    ok = check_technician(DKA, "Arterial blood gas", turn.text, {"text": turn.text})
    assert ok.verdict == "synthesised" and ok.plausible is True
    plain = f"RESULTS: Arterial blood gas: {NORMAL_VALUES['Arterial blood gas']}"  # what it said before
    bad = check_technician(DKA, "Arterial blood gas", plain, {"text": plain})
    assert bad.verdict == "synthesised" and bad.plausible is False


@pytest.mark.parametrize("demographics, story, expected, policy", [
    ("32-year-old woman, gravida 2, para 1, at 38 weeks' gestation", "", "Positive", "implied_by_case"),
    ("22-year-old female", "She is currently pregnant, at 30 weeks.", "Positive", "implied_by_case"),
    ("27-year-old woman", "The patient is at her 12th week of pregnancy.", "Positive", "implied_by_case"),
    ("16-year-old female", "Her mother reports that during pregnancy she had hair growth on her chin.", "Negative",
     "normal_value"),
    ("34-year-old woman", "No recent pregnancy or viral illness. She denies that she is pregnant.", "Negative",
     "normal_value"),
    ("Newborn, born at 33 weeks of gestation", "", "Not indicated (a child)", "not_indicated"),
    ("2-week-old female newborn", "", "Not indicated (a child)", "not_indicated"),
    ("6-year-old girl", "", "Not indicated (a child)", "not_indicated"),
    ("41-year-old man", "His wife is pregnant.", "Not indicated (male patient)", "not_indicated"),
])
def test_a_pregnancy_test_says_what_the_case_says_of_the_patient(demographics, story, expected, policy):
    for order in ("Pregnancy test", "Urine beta-hCG", "Serum hCG"):
        s = synthesised_result(order, demographics, (), story)
        assert (s.text, s.policy) == (expected, policy), (order, s)


def test_a_negative_pregnancy_test_for_a_pregnant_patient_is_implausible_to_the_fidelity_pre_check():
    case = Case(id="n-2", source="t", objective="x", demographics="32-year-old woman", diagnosis="Placental abruption",
                patient={"Demographics": "32-year-old woman",
                         "History": "She is 38 weeks pregnant and has had vaginal bleeding for an hour."},
                exam={}, tests={"Complete_Blood_Count": {"Hemoglobin": "10.1 g/dL"}})
    turn = Hinted(_Never(), case, ListSink()).act(Observation(turn=2, text="Pregnancy test", order="Pregnancy test"))
    assert turn.text == "RESULTS: Pregnancy test: Positive"
    assert check_technician(case, "Pregnancy test", turn.text, {"text": turn.text}).plausible is True
    for said in ("RESULTS: Pregnancy test: Negative", "RESULTS: Pregnancy test: Not indicated (male patient)",
                 "RESULTS: Pregnancy test: No abnormality recorded"):
        assert check_technician(case, "Pregnancy test", said, {"text": said}).plausible is False, said


@pytest.mark.parametrize("order, story, known", [
    ("HbA1c", "She has had insulin-treated diabetes since she was 11.", "diabetes"),
    ("Blood glucose", "He has a history of type 2 diabetes mellitus, hypertension and gout.", "diabetes"),
    ("HIV antibody test", "Known history of HIV, on antiretroviral therapy.", "HIV"),
    ("Thyroid function tests", "She takes levothyroxine every morning.", "levothyroxine"),
    ("Thyroid function tests", "Past history: Hashimoto thyroiditis.", "Hashimoto thyroiditis"),
    ("Urine drug screen", "He uses cocaine at weekends and drinks alcohol socially.", "cocaine"),
    ("INR", "He takes warfarin for atrial fibrillation.", "warfarin"),
    ("Renal function tests", "Mild chronic kidney disease.", "chronic kidney disease"),
])
def test_a_marker_of_a_condition_the_patient_has_is_not_made_up_normal(order, story, known):
    s = synthesised_result(order, "50-year-old woman", (), story)
    assert s.policy == "known_condition" and s.text.endswith(f"known {known}"), s
    assert not any(v in s.text for v in NORMAL_VALUES.values())


@pytest.mark.parametrize("order, story", [
    ("HbA1c", "No history of diabetes."),
    ("HbA1c", "Her mother has type 2 diabetes."),
    ("HbA1c", "She denies diabetes or hypertension."),
    ("HIV test", "He was HIV-negative last year."),
    ("Urine drug screen", "He does not use illicit drugs."),
    ("HbA1c", "She has hypertension and asthma."),
    ("Complete blood count", "He has type 2 diabetes."),  # another condition's marker
])
def test_a_condition_negated_of_a_relative_or_not_measured_by_the_test_leaves_the_normal_value(order, story):
    assert synthesised_result(order, "50-year-old woman", (), story).policy == "normal_value"


def test_the_technician_says_so_and_the_fidelity_pre_check_holds_a_normal_value_implausible():
    from agents.cases.registry import load_cases

    dka = next(c for c in load_cases("demo")[0] if c.id == "demo-011")  # insulin-treated diabetes since she was 11
    turn = Hinted(_Never(), dka, ListSink()).act(Observation(turn=2, text="HbA1c", order="HbA1c"))
    assert turn.source == "synthesised" and "not assumed normal" in turn.text and turn.text.endswith("known diabetes")
    assert check_technician(dka, "HbA1c", turn.text, {"text": turn.text}).plausible is True
    for said in (f"RESULTS: HbA1c: {NORMAL_VALUES['HbA1c']}", "RESULTS: HbA1c: No abnormality recorded"):
        assert check_technician(dka, "HbA1c", said, {"text": said}).plausible is False, said


class _Records:
    role = "measurement"

    def act(self, obs):  # the technician model: reports the records it was shown
        return Turn(text="RESULTS: " + "; ".join(f"{p}: {v}" for p, v in obs.records))


def test_an_order_of_several_tests_answers_each_and_marks_the_ones_made_up():
    from agents.fidelity.scorer import FidelityScorer
    from agents.scorers import Transcript

    sink = ListSink()
    order = "Basic metabolic panel; Troponin; Lipase"  # the case records the first only
    turn = Hinted(_Records(), DKA, sink).act(Observation(turn=4, text=order, order=order))
    assert "Glucose: 29.4 mmol/L" in turn.text  # the record
    made = [e for e in sink.events if e.type == "synthesised_result"]
    assert [e.test for e in made] == ["Troponin", "Lipase"]  # each test it has no record of, on its own
    for e in made:
        assert e.text in turn.text and e.turn == 4
    # the fidelity pre-check: the records are the case's, each made-up part is checked as a test of its own
    events = [{"type": "utterance", "speaker": "doctor", "turn": 4, "text": order},
              *({"type": "synthesised_result", "turn": e.turn, "test": e.test, "text": e.text, "policy": e.policy,
                 "kind": e.kind} for e in made),
              {"type": "test_result", "turn": 4, "test": order, "result": turn.text}]
    transcript = Transcript(case_id=DKA.id, status="diagnosed", diagnosis="x", turns=4, tests_requested=(order,),
                            error=None, failure=None, events=tuple(events))
    items = FidelityScorer()(DKA, transcript, ListSink()).details["items"]
    assert [i["text"].split(":")[0] for i in items] == ["Troponin", "Lipase", order]
    assert [i["labels"] for i in items] == [["synthesised"], ["synthesised"], ["from_case"]]
    # an order of one test the case records is answered from the record alone
    alone = ListSink()
    Hinted(_Records(), DKA, alone).act(Observation(turn=5, text="Basic metabolic panel", order="Basic metabolic panel"))
    assert not [e for e in alone.events if e.type == "synthesised_result"]


def test_an_order_of_several_tests_none_recorded_answers_each_on_its_own():
    from agents.fidelity.scorer import FidelityScorer
    from agents.scorers import Transcript

    sink = ListSink()
    order = "Troponin; Lipase"
    turn = Hinted(_Never(), DKA, sink).act(Observation(turn=2, text=order, order=order))
    made = [e for e in sink.events if e.type == "synthesised_result"]
    assert [e.test for e in made] == ["Troponin", "Lipase"] and turn.source == "synthesised"
    assert turn.text.splitlines() == [e.text for e in made]
    events = [*({"type": "synthesised_result", "turn": 2, "test": e.test, "text": e.text, "policy": e.policy,
                 "kind": e.kind} for e in made), {"type": "test_result", "turn": 2, "test": order, "result": turn.text}]
    transcript = Transcript(case_id=DKA.id, status="diagnosed", diagnosis="x", turns=2, tests_requested=(order,),
                            error=None, failure=None, events=tuple(events))
    items = FidelityScorer()(DKA, transcript, ListSink()).details["items"]
    assert [i["labels"] for i in items] == [["synthesised"], ["synthesised"]]  # nothing unmarked


class _Told:
    role = "measurement"

    def __init__(self):
        self.seen = []

    def act(self, obs):
        self.seen.append(obs.text)
        return Turn(text="RESULTS: " + "; ".join(f"{p}: {v}" for p, v in obs.records))


def test_the_technician_model_is_told_only_the_tests_of_an_order_that_the_records_answer():
    inner = _Told()
    Hinted(inner, DKA, ListSink()).act(Observation(turn=2, text="Troponin; Basic metabolic panel",
                                                   order="Troponin; Basic metabolic panel"))
    assert inner.seen[0].splitlines()[0] == "The doctor orders: Basic metabolic panel"
    Hinted(inner, DKA, ListSink()).act(Observation(turn=3, text="Basic metabolic panel", order="Basic metabolic panel"))
    assert inner.seen[1].splitlines()[0] == "The doctor orders: Basic metabolic panel"


@pytest.mark.parametrize("story, order, known", [
    # a case's fields are lines: a denial in one field says nothing of the next
    ("Decreased vision in the right eye\nNo pain\nAIDS, fungal esophagitis treated with fluconazole", "HIV test",
     "AIDS"),
    ("Type 2 diabetes on metformin, no complications.", "HbA1c", "diabetes"),
    ("He has AIDS and has not been taking his medicines.", "HIV test", "AIDS"),
])
def test_a_known_condition_beside_a_denial_is_still_known(story, order, known):
    got = synthesised_result(order, "34-year-old man", (), story)
    assert got.policy == "known_condition" and got.text.endswith(f"known {known}")


@pytest.mark.parametrize("story, order", [("No history of diabetes.", "HbA1c"), ("He is non-diabetic.", "HbA1c"),
                                          ("Hepatitis C negative.", "Hepatitis serology"),
                                          ("Denies drug use.", "Urine drug screen")])
def test_a_negated_condition_is_not_known(story, order):
    assert synthesised_result(order, "34-year-old man", (), story).policy == "normal_value"


def test_an_order_naming_what_no_entry_measures_gets_no_other_entrys_normal_value():
    # "serology" is an analyte, "lymphoma" no table knows: not hepatitis serology's normal value
    got = synthesised_result("Lymphoma serology", "60-year-old man")
    assert got.entry is None and got.text == "No abnormality recorded"
    assert synthesised_result("Fasting lipid profile").entry == "Lipid panel"  # a close name still finds its own
    # a vague order is no particular test's: "Serology" is not hepatitis serology, "Ultrasound" not an abdominal one
    for vague in ("Serology", "Ultrasound", "Antibodies"):
        got = synthesised_result(vague, "60-year-old man")
        assert got.entry is None and got.text == "No abnormality recorded", (vague, got)
    assert synthesised_result("Hepatitis B serology").entry == "Hepatitis serology"  # more specific: still its own


@pytest.mark.parametrize("order, entry, text", [
    ("TSH", "Thyroid function tests", "TSH 1.8 mU/L"),
    ("Serum sodium", "Basic metabolic panel", "Sodium 140 mmol/L"),
    ("Platelet count", "Complete blood count", "platelets 250 x10^9/L"),
    ("ALT", "Liver function tests", "ALT 25 U/L"),
])
def test_one_analyte_of_a_panel_gets_that_part_of_the_panels_normal_value(order, entry, text):
    got = synthesised_result(order, "40-year-old woman")
    assert (got.policy, got.entry, got.text) == ("normal_value", entry, text)


def test_a_cases_fields_reach_the_technician_as_lines():
    from agents.findings import case_story

    case = Case(id="n-2", source="t", objective="x", demographics="34-year-old man", diagnosis="CMV retinitis",
                patient={"Demographics": "34-year-old man", "Symptoms": {"Primary": "Black spots in the right eye",
                                                                         "Secondary": "No pain"},
                         "Past_Medical_History": "AIDS, fungal esophagitis"}, exam={}, tests={})
    assert case_story(case).splitlines()[-2:] == ["No pain", "AIDS, fungal esophagitis"]
    made = Hinted(_Never(), case, ListSink()).act(Observation(turn=2, text="HIV test", order="HIV test"))
    assert "not assumed normal, as the patient has known AIDS" in made.text


class _Cut:
    role = "measurement"

    def act(self, obs):  # the technician model, cut at its token limit after the first record
        p, v = obs.records[0]
        return Turn(text=f"RESULTS: {p}: {v}; {obs.records[1][0]}: 5.")


def test_a_technician_reply_cut_short_loses_no_record():
    """Each record that answers an order reaches the doctor: those the technician model's
    reply left out (cut at its token limit) are appended verbatim, once."""
    order = "Basic metabolic panel"
    turn = Hinted(_Cut(), DKA, ListSink()).act(Observation(turn=4, text=order, order=order))
    for value in ("131 mmol/L", "5.6 mmol/L", "10.2 mmol/L", "118 µmol/L", "29.4 mmol/L"):
        assert turn.text.count(value) == 1, (value, turn.text)
    from agents.participants.wrappers import omitted

    assert not omitted(turn.text, [("Basic Metabolic Panel > Sodium", "131 mmol/L")])
    # a short value counts as reported only beside its record's name
    assert omitted("RESULTS: Troponin: normal", [("ECG", "Normal")]) == [("ECG", "Normal")]
    assert not omitted("RESULTS: ECG: normal", [("ECG", "Normal")])
