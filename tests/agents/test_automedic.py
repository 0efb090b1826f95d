"""AutoMedic: conversion, the tagged protocol's parsing, and the CARE metric."""
from __future__ import annotations

import json

import pytest

from agents.events import DictSink
from agents.llm.base import Output
from agents.scorers import Transcript
from agents.suites.automedic import parse_choice, parse_rating, parse_tagged_turn
from agents.suites.automedic_convert import (Conversion, McqItem, grounded, parse_item, prefilter, rule_extract,
                                             scrub)
from agents.suites.automedic_scripted import AutomedicScriptedLLM
from agents.suites.care import care_details, care_summary, count_words
from tests.automedic_items import MALFORMED, SUITABLE, UNSUITABLE, write_items


# -- CARE on handmade rows -----------------------------------------------------------------
def _row(conv, static, wpt=10.0, empathy=3, failure=None, error=None):
    return {"case_id": "x", "error": error, "care": {"conv_correct": conv, "static_correct": static,
                                                     "words_per_turn": wpt, "empathy": empathy, "failure": failure}}


def test_care_math_on_handmade_rows():
    rows = [_row(True, True, 10.0, 5), _row(True, False, 20.0, 1), _row(False, True, 5.0, 3, "short_dialogue"),
            _row(False, True, 8.0, None, "answer_not_in_options")]
    c = care_summary(rows)
    assert c["conv_acc"] == 0.5 and c["static_acc"] == 0.75
    assert c["accuracy"] == pytest.approx(round(0.5 * 0.5 / 0.75, 4))
    # efficiency: right answers only, 100 x mean of 1 / words per turn
    assert c["efficiency"] == pytest.approx(100 * (1 / 10 + 1 / 20) / 2)
    assert c["empathy"] == pytest.approx(((5 - 1) / 4 + 0 + (3 - 1) / 4) / 3, abs=1e-4) and c["unrated"] == 1
    assert c["robustness"] == 0.5 and c["failures"] == {"short_dialogue": 1, "answer_not_in_options": 1}


def test_care_edge_cases():
    # static accuracy 0: accuracy undefined, never a division by zero
    c = care_summary([_row(True, False), _row(False, False)])
    assert c["accuracy"] is None and c["accuracy_clipped"] is None and "undefined" in c["notes"][0]
    # the conversation beats the static answer: not clipped, clipped beside it
    c = care_summary([_row(True, False), _row(True, True)])
    assert c["accuracy"] == 2.0 and c["accuracy_clipped"] == 1.0
    # no right answer: no efficiency; errors are not cases
    c = care_summary([_row(False, True), _row(True, True, error="backend down")])
    assert c["cases"] == 1 and c["efficiency"] is None and c["conv_acc"] == 0.0
    # a right case whose doctor said nothing is left out of efficiency (1/0)
    assert care_summary([_row(True, True, wpt=None)])["efficiency"] is None
    assert care_summary([{"case_id": "y"}]) is None


def _events(turns, *, end_turn=None, conv="B", static="B", rating=4, status="diagnosed"):
    ev = [{"type": "case_started", "case_id": "c"}]
    for t, text in enumerate(turns, 1):
        ev.append({"type": "utterance", "turn": t, "speaker": "doctor", "addressee": "patient", "text": text})
        ev.append({"type": "utterance", "turn": t, "speaker": "patient", "addressee": "doctor", "text": "words " * 30})
    if end_turn:
        ev.append({"type": "utterance", "turn": end_turn, "speaker": "doctor", "addressee": "all", "text": "Thanks."})
        ev.append({"type": "automedic_dialogue_ended", "turn": end_turn, "rule": "tag_end"})
    for mode, letter in (("conversation", conv), ("static", static)):
        if letter is not False:
            ev.append({"type": "automedic_answer", "mode": mode, "letter": letter, "answer_letter": "B", "raw": ""})
    ev.append({"type": "automedic_empathy", "rating": rating})
    ev.append({"type": "consultation_ended", "status": status, "turns": end_turn or len(turns),
               "diagnosis": None, "tests_requested": [], "error": None, "failure": None})
    return Transcript.from_events(ev, case_id="c")


def test_care_details_from_a_log():
    d = care_details(_events(["<patient> How long has it hurt?", "Any fever?", "Do you smoke?", "Any travel?"],
                             end_turn=5))
    assert d["conv_correct"] and d["static_correct"] and d["failure"] is None
    assert d["doctor_turns"] == 4 and d["doctor_words"] == 5 + 2 + 3 + 2 and d["dialogue_turns"] == 5
    assert count_words("<clinical> Blood pressure, please; it's well-known") == 5
    assert care_details(_events(["Hi?", "Fever?"], end_turn=3))["failure"] == "short_dialogue"
    d = care_details(_events(["a?", "b?", "c?", "d?"], end_turn=5, conv=None))
    assert d["failure"] == "answer_not_in_options" and d["conv_correct"] is False
    assert care_details(_events(["a?"] * 5, status="failed", conv=False))["failure"] == "role_break"


# -- parsing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,kind,payload,rule", [
    ("<patient> How long have you had the pain?", "ask", "How long have you had the pain?", "tag_patient"),
    ("<Clinical>Vital signs, please</clinical>", "test", "Vital signs, please", "tag_clinical"),
    ("[patient] Any fever?", "ask", "Any fever?", "tag_patient"),
    ("Thank you. </end>", "diagnose", "</end>", "tag_end"),
    ("< end >", "diagnose", "</end>", "tag_end"),
    ("REQUEST TEST: Chest X-ray", "test", "Chest X-ray", "untagged_clinical:test_marker"),
    ("Do you smoke?", "ask", "Do you smoke?", "untagged_patient"),
])
def test_tagged_turns(text, kind, payload, rule):
    a = parse_tagged_turn(text)
    assert (a.kind, a.text, a.rule) == (kind, payload, rule)


def test_choices_and_ratings():
    opts = {"A": "Acute cystitis", "B": "Acute pyelonephritis", "C": "Renal colic"}
    assert parse_choice('{"answer": "B"}', opts) == ("B", "json")
    assert parse_choice("(C)", opts) == ("C", "letter")
    assert parse_choice("Answer: A.", opts) == ("A", "letter")
    assert parse_choice("I think acute pyelonephritis.", opts) == ("B", "option_text")
    assert parse_choice("Appendicitis", opts) == (None, "not_in_options")
    assert parse_choice("A lot of things", opts) == (None, "not_in_options")
    assert parse_rating('{"rating": 4}') == (4, "json") and parse_rating("3/5") == (3, "number")
    assert parse_rating('{"rating": 9}')[0] is None


# -- conversion ------------------------------------------------------------------------------
def _conv(llm=None):
    sink = DictSink()
    return Conversion(llm or AutomedicScriptedLLM(None), sink), sink


def test_unsuitable_items_are_filtered_with_reasons():
    conv, sink = _conv()
    for raw, reason in UNSUITABLE:
        item = parse_item(raw, 1)
        assert prefilter(item) == reason
        assert conv.convert(item, "t:1") is None
    decided = [(e["item_id"], e["stage"], e["reason"]) for e in sink.events if e["type"] == "automedic_item"]
    assert decided == [(u["id"], "rules", r) for u, r in UNSUITABLE]
    with pytest.raises(ValueError, match="options"):
        parse_item(MALFORMED, 1)
    with pytest.raises(ValueError, match="neither an option"):
        parse_item({**SUITABLE[0], "answer": "Z"}, 1)


class _ScreenSays:
    """A converter model: the screen says 'not suitable'."""

    name = "fake"

    def generate(self, messages, params, ctx):
        return Output(json.dumps({"suitable": False, "reason": "other", "note": "not one patient"}), "fake")


class _Leaky:
    """A converter model that puts staff findings and the answer in the patient's words
    and invents a vital sign and a lab."""

    name = "fake"

    def generate(self, messages, params, ctx):
        if "You screen" in messages[0].content:
            return Output('{"suitable": true, "reason": "suitable"}', "fake")
        return Output(json.dumps({
            "demographics": "34-year-old woman", "chief_complaint": "Fever and right flank pain",
            "duration": "2 days", "history": "Burning on urination for 4 days. My temperature is 39.1°C. "
            "My urinalysis shows white cell casts. The doctor said it was acute pyelonephritis.",
            "past_medical_history": "", "lifestyle": "Teacher; does not smoke.", "imputed": [],
            "vitals": [{"name": "Temperature", "value": "39.1°C (102.4°F)"},
                       {"name": "Oxygen saturation", "value": "97% on room air"}],
            "exam": [{"name": "Back", "value": "tenderness at the right costovertebral angle"}],
            "labs": [{"name": "Urinalysis", "value": "many white blood cells and white cell casts"},
                     {"name": "Creatinine", "value": "1.9 mg/dL"}], "imaging": []}), "fake")


def test_conversion_keeps_staff_information_out_of_the_patient():
    item = parse_item(SUITABLE[0], 1)
    for llm in (None, _Leaky()):
        conv, sink = _conv(llm)
        rec = conv.convert(item, "t:1")
        osce = rec["OSCE_Examination"]
        patient = json.dumps(osce["Patient_Actor"])
        staff = json.dumps([osce["Physical_Examination_Findings"], osce["Test_Results"]])
        for held in ("39.1", "16,500", "costovertebral", "casts", "112/min", "pyelonephritis"):
            assert held not in patient, (llm, held)
        assert "39.1" in staff and "casts" in staff
        assert osce["Correct_Diagnosis"] == "Acute pyelonephritis"
        assert osce["AutoMedic"]["answer_letter"] == "B" and osce["AutoMedic"]["options"]["B"] == "Acute pyelonephritis"
        assert osce["AutoMedic"]["query"] == "Which of the following is the most likely diagnosis?"
    # never invented: the saturation and creatinine the question does not hold are dropped, and said
    assert "97%" not in staff and "1.9 mg" not in staff
    note = next(e["note"] for e in sink.events if e["type"] == "automedic_item")
    assert "ungrounded" in note and "imputed: past_medical_history" in note
    assert osce["Patient_Actor"]["Past_Medical_History"]  # imputed, not empty


def test_the_model_screen_can_drop_an_item():
    conv, sink = _conv(_ScreenSays())
    assert conv.convert(parse_item(SUITABLE[1], 2), "t:2") is None
    e = next(e for e in sink.events if e["type"] == "automedic_item")
    assert (e["stage"], e["reason"], e["note"]) == ("screen", "other", "not one patient")
    assert any(e["type"] == "llm_call" and e["role"] == "converter" for e in sink.events)


def test_rule_extraction_and_checks():
    p = rule_extract(SUITABLE[2]["question"])
    assert p["demographics"] == "17-year-old boy"
    assert any("540 mg/dL" in x["value"] for x in p["labs"]) and not any("540" in p[k] for k in ("history",))
    assert grounded("glucose 540 mg/dL", SUITABLE[2]["question"]) and not grounded("glucose 600", SUITABLE[2]["question"])
    text, removed = scrub("It hurts. My pulse was 124/min.", [], "x")
    assert text == "It hurts." and removed


def test_conversion_file_is_deterministic(tmp_path):
    from medsim.automedic import convert_file

    src = write_items(tmp_path / "items.jsonl")
    a = convert_file(src, tmp_path / "a.jsonl")
    convert_file(src, tmp_path / "b.jsonl")
    assert a.kept == len(SUITABLE) and sorted(a.reasons().items()) == sorted(
        {**{r: 1 for _, r in UNSUITABLE}, "malformed": 1}.items())
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    from agents.cases.registry import load_cases

    cases, errors = load_cases(str(tmp_path / "a.jsonl"))
    assert [c.id for c in cases] == [s["id"] for s in SUITABLE] and errors == []
    assert isinstance(McqItem, type)


class _WrongAge(_Leaky):
    """As the embedded model did: the right findings, a made-up age."""

    def generate(self, messages, params, ctx):
        out = super().generate(messages, params, ctx)
        return Output(out.text.replace("34-year-old woman", "45-year-old woman"), "fake")


def test_the_vignettes_age_and_sex_win_over_the_models():
    conv, sink = _conv(_WrongAge())
    rec = conv.convert(parse_item(SUITABLE[0], 1), "t:1")
    assert rec["OSCE_Examination"]["Patient_Actor"]["Demographics"] == "34-year-old woman"
    note = next(e["note"] for e in sink.events if e["type"] == "automedic_item")
    assert "not the model's ('45-year-old woman')" in note
