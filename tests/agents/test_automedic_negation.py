"""AutoMedic's polarity check: what the vignette negates stays negated in the patient's profile."""
from __future__ import annotations

import json

import pytest

from agents.events import DictSink
from agents.llm.base import Output
from agents.suites.automedic_convert import Conversion, parse_item, restore_polarity, rule_extract
from agents.suites.automedic_scripted import AutomedicScriptedLLM
from agents.suites.negation import conflicts, negations, stem
from tests.automedic_items import SUITABLE

PYELO = SUITABLE[0]["question"]  # "... She does not smoke and works as a teacher. ..."
CHEST = ("A 52-year-old man comes to the clinic because of shortness of breath on exertion for 3 weeks. He denies "
         "chest pain. He has high blood pressure. Which of the following is the most likely diagnosis?")
DIABETES = ("A 45-year-old woman comes to the clinic because of tiredness for 2 months. She has no history of "
            "diabetes. She takes ibuprofen for back pain. Which of the following is the most likely diagnosis?")
QUERY = " Which of the following is the most likely diagnosis?"


def _profile(**basic):
    p = {"demographics": "x", "chief_complaint": "Cough", "duration": "5 days", "history": "Nothing else.",
         "past_medical_history": "None.", "lifestyle": "Works in an office.", "imputed": []}
    p.update(basic)
    return p


# -- the negation finder -----------------------------------------------------------------
@pytest.mark.parametrize("text,phrases", [
    ("She does not smoke and works as a teacher.", ["does not smoke"]),  # "and works": a new predicate
    ("She has no fever, chills or rash.", ["has no fever, chills or rash"]),  # a list stays negated
    ("No fever yesterday, fever today.", ["No fever yesterday"]),  # a repeated concept is a contrast
    ("He neither smokes nor drinks alcohol.", ["neither smokes nor drinks alcohol"]),
    ("She denies chest pain and reports dyspnea.", ["denies chest pain"]),
    ("She doesn't drink alcohol, smoke, or use illicit drugs.",
     ["doesn't drink alcohol, smoke, or use illicit drugs"]),
    ("He has never smoked and drinks 2 beers a day.", ["has never smoked"]),
    ("Smoking: no, alcohol: occasional.", ["Smoking: no"]),
    ("She is a non-smoker.", ["non-smoker"]),
    ("Rebound tenderness is absent.", ["Rebound tenderness is absent"]),
    ("The pain is not only in the chest but also in the arm.", []),  # a look-alike, no cue
    ("She had no fever yesterday but has a fever today.", ["had no fever yesterday"]),
    # an adverb between the cue and what it negates (seen: "I am not currently taking any medications"
    # read as taking medicines, and the patient asked again for inventing them)
    ("I am not currently taking any medications.", ["not currently taking any medications"]),
    ("I have not recently had a fever.", ["have not recently had a fever"]),
    ("No fever currently, but a cough now.", ["No fever"]),  # after a word of the scope it still ends it
])
def test_negated_scopes(text, phrases):
    assert [g.phrase for g in negations(text)] == phrases


def test_stems_join_word_forms():
    assert {stem(w) for w in ("smoke", "smokes", "smoking", "smoker", "smoked")} == {"smok"}
    assert stem("diabetes") == stem("diabetic") and stem("drank") == stem("drinks")


# -- the check on the basic fields ---------------------------------------------------------
def test_pyelo_smokes_becomes_does_not_smoke_and_the_teacher_stays():
    p = _profile(lifestyle="smokes, works as a teacher")  # the embedded 1.5B model's extraction
    repairs = restore_polarity(p, PYELO)
    assert p["lifestyle"] == "does not smoke, works as a teacher"
    assert [(r["field"], r["reason"]) for r in repairs] == [("lifestyle", "negation_restored")]
    assert p["imputed"] == []


def test_denied_chest_pain_is_not_a_complaint():
    p = _profile(chief_complaint="shortness of breath on exertion and chest pain", history="Chest pain.")
    restore_polarity(p, CHEST)
    assert p["chief_complaint"] == "shortness of breath on exertion and denies chest pain"
    assert p["history"] == "Denies chest pain."
    assert not conflicts(p["chief_complaint"], CHEST)


def test_no_history_of_diabetes_is_not_diabetes():
    p = _profile(past_medical_history="diabetes; takes ibuprofen for back pain")
    restore_polarity(p, DIABETES)
    assert p["past_medical_history"] == "has no history of diabetes; takes ibuprofen for back pain"


def test_no_clean_repair_imputes_the_field():
    # one clause holds both the false "chest pain" and the true "shortness of breath":
    # rewriting it would lose a fact, so the plain imputed value replaces it, named as imputed
    p = _profile(chief_complaint="chest pain with shortness of breath")
    repairs = restore_polarity(p, CHEST)
    assert p["chief_complaint"] == "I have not been feeling well."
    assert p["imputed"] == ["chief_complaint"] and repairs[0]["reason"] == "negation_imputed"


@pytest.mark.parametrize("positive_too", [
    " He had no fever yesterday, but he has had a fever since this morning.",
    " No fever yesterday, fever today.",
])
def test_a_concept_also_stated_positively_is_left_alone(positive_too):
    base = "A 30-year-old man comes to the clinic because of a cough for 5 days."
    only_negated = base + " He had no fever yesterday." + QUERY
    p = _profile(history="fever since this morning")
    assert restore_polarity(p, only_negated) and "no fever" in p["history"]  # the control: flagged
    p = _profile(history="fever since this morning")
    assert restore_polarity(p, base + positive_too + QUERY) == []
    assert p["history"] == "fever since this morning"


def test_a_correct_negation_in_the_extraction_is_untouched():
    right = {"lifestyle": "Teacher; she does not smoke.", "past_medical_history": "No medicines, no other problems.",
             "history": "Smoking: no. Burning on urination for 4 days."}
    p = _profile(**right, chief_complaint="fever, chills and smoking")  # one wrong field beside them
    repairs = restore_polarity(p, PYELO)
    assert [r["field"] for r in repairs] == ["chief_complaint"]  # the wrong one is repaired ...
    assert {k: p[k] for k in right} == right  # ... the right ones are not
    assert restore_polarity(_profile(lifestyle="non-smoker, teacher"), PYELO) == []


# -- through the conversion ---------------------------------------------------------------
_BAD = {"chief_complaint": "fever, chills, pain in right flank for 2 days", "demographics": "45-year-old woman",
        "duration": "2 days", "exam": [{"name": "tenderness", "value": "right costovertebral angle"}],
        "history": "burning on urination for 4 days", "imaging": [], "imputed": [],
        "labs": [{"name": "leukocyte count", "value": "16,500/mm3"}], "lifestyle": "smokes, works as a teacher",
        "past_medical_history": "", "vitals": [{"name": "temperature", "value": "39.1°C (102.4°F)"}]}


class _LosesTheNegation:
    """The converter model's replies for the pyelo item as the embedded 1.5B model gave them
    (runs/mcq-local-cases.log.jsonl)."""

    name = "fake"

    def generate(self, messages, params, ctx):
        if "You screen" in messages[0].content:
            return Output('{"note": "one patient", "reason": "suitable", "suitable": true}', "fake")
        return Output(json.dumps(_BAD), "fake")


def test_conversion_repairs_the_record_and_logs_the_repair():
    sink = DictSink()
    rec = Conversion(_LosesTheNegation(), sink).convert(parse_item(SUITABLE[0], 1), "t:1")
    patient = rec["OSCE_Examination"]["Patient_Actor"]
    assert patient["Social_History"] == "does not smoke, works as a teacher"
    assert "smokes" not in json.dumps(patient)
    e = next(e for e in sink.events if e["type"] == "automedic_item")
    assert e["kept"] and e["repairs"] == [{"stage": "polarity", "reason": "negation_restored", "field": "lifestyle",
                                           "before": "smokes, works as a teacher",
                                           "after": "does not smoke, works as a teacher", "concepts": ["smokes"]}]
    assert "negation_restored in lifestyle" in e["note"]
    json.dumps(e)  # the log can hold it


def test_rule_extraction_keeps_a_negation_out_of_the_complaint():
    q = ("A 4-year-old boy who has not been vaccinated for measles is brought to the clinic because of fever and a "
         "rash for 3 days. He has no other medical problems." + QUERY)
    assert rule_extract(q)["chief_complaint"] == "fever and a rash for 3 days"  # not "measles is brought ..."
    item = parse_item({"id": "m", "question": q, "options": ["Measles", "Roseola"], "answer": "A"}, 1)
    sink = DictSink()
    rec = Conversion(AutomedicScriptedLLM(None), sink).convert(item, "t:1")
    assert rec["OSCE_Examination"]["Patient_Actor"]["Symptoms"]["Primary_Symptom"] == "fever and a rash for 3 days"
    # the rule-based extraction of the handmade items needs no repair (no false alarms)
    for i, raw in enumerate(SUITABLE, 2):
        Conversion(AutomedicScriptedLLM(None), sink).convert(parse_item(raw, i), "t:1")
    assert all(e["repairs"] == [] for e in sink.events if e["type"] == "automedic_item")
