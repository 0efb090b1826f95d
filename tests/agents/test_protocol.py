import pytest

from agents.protocol import parse_doctor_turn


@pytest.mark.parametrize("text,kind,payload,rule", [
    ("REQUEST TEST: Chest_X-Ray", "test", "Chest_X-Ray", "test_marker"),
    ("Let's check. REQUEST TEST: [Complete Blood Count].", "test", "Complete Blood Count", "test_marker"),
    ("**Request test:** ECG", "test", "ECG", "test_variant"),
    ("request_test: troponin", "test", "troponin", "test_variant"),
    ("I'd like to order tests: MRI brain", "test", "MRI brain", "test_variant"),
    ("DIAGNOSIS READY: Myasthenia gravis", "diagnose", "Myasthenia gravis", "diagnosis_marker"),
    ("**Diagnosis ready:** Pulmonary embolism.", "diagnose", "Pulmonary embolism", "diagnosis_variant"),
    ("Diagnosis Ready - [Gout]", "diagnose", "Gout", "diagnosis_variant"),
    ("Final diagnosis: acute appendicitis", "diagnose", "acute appendicitis", "diagnosis_variant"),
    ("DIAGNOSIS READY:\n\nGraves disease\nThanks.", "diagnose", "Graves disease", "diagnosis_marker"),
    ("REQUEST TEST: ECG\nDIAGNOSIS READY: STEMI", "diagnose", "STEMI", "diagnosis_marker"),
    ("How long have you had the pain?", "ask", "How long have you had the pain?", "default_patient"),
    ("What tests have you had before?", "ask", "What tests have you had before?", "default_patient"),
    ("Before I make a diagnosis, do you smoke?", "ask", "Before I make a diagnosis, do you smoke?", "default_patient"),
])
def test_routes(text, kind, payload, rule):
    a = parse_doctor_turn(text)
    assert (a.kind, a.text, a.rule) == (kind, payload, rule)


def test_fallbacks_are_explicit():
    a = parse_doctor_turn("DIAGNOSIS READY:")
    assert a.kind == "ask" and a.rule == "empty_diagnosis_marker" and a.note
    b = parse_doctor_turn("REQUEST TEST:")
    assert b.kind == "test" and b.rule == "empty_test_marker" and b.note
    c = parse_doctor_turn("   ")
    assert c.kind == "ask" and c.rule == "empty_turn"


@pytest.mark.parametrize("payload,clean", [
    ("Interstitial lung disease (ILD)", "Interstitial lung disease (ILD)"),
    ("Complete blood count (CBC).", "Complete blood count (CBC)"),
    ("[Gout]", "Gout"), ("[Gout].", "Gout"), ('"Gout"', "Gout"), ("“Pulmonary embolism”", "Pulmonary embolism"),
    ("[Gout", "Gout"), ("Gout]", "Gout"), ("(ILD) pneumonitis", "(ILD) pneumonitis"),
    ("[Lyme disease (stage 2)]", "Lyme disease (stage 2)"), ("Lyme disease (stage 2)!", "Lyme disease (stage 2)"),
])
def test_payload_brackets_that_belong_to_the_text_are_kept(payload, clean):
    from agents.protocol import clean_marker_text, parse_structured_turn
    import json

    assert clean_marker_text(payload) == clean
    assert parse_doctor_turn(f"DIAGNOSIS READY: {payload}").text == clean
    assert parse_structured_turn(json.dumps({"action": "diagnose", "text": payload})).text == clean
    assert parse_structured_turn(json.dumps({"action": "order_test", "text": payload})).text == clean
