import json

import pytest

from agents.cases import load_cases
from agents.consultation import ConsultationConfig
from agents.guards import check_reply
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig
from agents.protocol import parse_structured_turn
from tests.helpers import Script, consult, of, roles


@pytest.mark.parametrize("role,text,previous,incoming,problem", [
    ("patient", "I'm sorry, but I can't assist with that.", [], "Any pain?", "refusal"),
    ("patient", "As an AI, I don't have symptoms.", [], "Any pain?", "refusal"),
    ("patient", "My chest hurts.\nDoctor: How long?\nPatient: Two days.", [], "Any pain?", "role_break"),
    ("patient", "What brings you in today?", [], "Hello", "role_break"),
    # a parent speaking of the child as the doctor would (seen: "Your baby has been very fussy")
    ("patient", "Your daughter has had a rash since Monday.", [], "What brings you in?", "role_break"),
    ("patient", "My son has a fever; your nurse took it.", [], "What brings you in?", None),
    # the patient speaking of the facts it is given as a document (seen: "The fact given brings me in today")
    ("patient", "The fact given brings me in today: my main problem is double vision.", [], "What brings you in?", "echo"),
    ("patient", "According to the information provided, I have had a cough.", [], "Any cough?", "echo"),
    ("patient", "Based on the details listed, it started on Monday.", [], "When?", "echo"),
    ("patient", "I told my boss the facts about my back.", [], "What work do you do?", None),
    # the patient describing itself as "you", as its instruction does (seen: "You are a smoker, drink
    # alcohol socially, and work in a construction company")
    ("patient", "You are a smoker, drink alcohol socially, and work in construction.", [], "Do you smoke?",
     "second_person"),
    ("patient", "I stopped last year. You smoke every day?", [], "Do you smoke?", None),
    ("patient", "No. You work in a lab, so you know.", [], "What work do you do?", "second_person"),
    ("patient", "You have to help me, doctor, the pain is awful.", [], "How bad is it?", None),
    ("doctor", "How long?\nPatient: two days", [], "Patient: it hurts", "role_break"),
    ("doctor", "Not yet: you have asked 1 question(s) or test(s) so far.", [], "Not yet: you have asked 1", "echo"),
    ("doctor", "When did the pain start exactly?", ["When did the pain start exactly?"], "x", "loop"),
    ("patient", "The pain started two days ago after lifting boxes at work.",
     ["The pain started two days ago after lifting boxes at work."], "x", "loop"),
    ("doctor", "   ", [], "x", "empty"),
    ("measurement", "RESULTS: not available", ["RESULTS: not available"], "x", None),
    ("patient", "No.", ["No."], "x", None),
    ("patient", "It started on Monday and gets worse when I walk.", [], "When?", None),
    ("doctor", "REQUEST TEST: ECG", [], "Patient: my chest hurts", None),
])
def test_detectors(role, text, previous, incoming, problem):
    assert check_reply(role, text, previous, incoming) == problem


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


def test_refusal_is_retried_with_a_correction_then_accepted(demo):
    llm = Script(ScriptedLLM(demo), patient=["I'm sorry, but I can't assist with that.", "It started two days ago."])
    row, events = consult(demo["demo-003"], roles(llm))
    rej = of(events, "reply_rejected")
    assert [(e["role"], e["problem"], e["attempt"]) for e in rej] == [("patient", "refusal", 1)]
    patient_calls = of(events, "llm_call", role="patient")
    assert "Stay in character" in patient_calls[1]["messages"][-1]["content"]
    assert patient_calls[1]["params"]["seed"] != patient_calls[0]["params"]["seed"]
    # the rejected reply never enters the conversation
    assert all("can't assist" not in m["content"] for c in patient_calls[2:] for m in c["messages"])
    assert row["status"] == "diagnosed" and row["error"] is None


def test_unfixable_role_is_a_failed_consultation_not_a_wrong_answer(demo):
    # (the patient of the case's facts: a grounded patient never fails, it gives its facts,
    # tests/agents/test_faithful_patient.py)
    llm = Script(ScriptedLLM(demo), patient=["I can't help with that, as an AI."])
    row, events = consult(demo["demo-003"], roles(llm), cast=CastConfig(guard_retries=2, patient_grounding=False))
    assert row["status"] == "failed" and row["correct"] is None and row["diagnosis"] is None and row["error"] is None
    assert len(of(events, "reply_rejected")) == 3
    assert [e["problem"] for e in of(events, "consultation_failed")] == ["refusal"]
    assert not of(events, "judge")
    # the same with detectors off (AgentClinic): the refusal goes through as dialogue
    row2, _ = consult(demo["demo-003"], roles(llm), cast=CastConfig(guard_retries=None, patient_grounding=False))
    assert row2["status"] == "diagnosed"


def test_failed_consultations_are_counted_apart_in_the_bench(demo, tmp_path):
    from medsim.bench import BenchOptions, run_bench
    from medsim.spec import build_spec

    llm = Script(ScriptedLLM(demo), patient=["As an AI I cannot do that."])
    o = run_bench(build_spec(None, {"limit": 3, "protocol.patient_grounding": False}),
                  BenchOptions(out=tmp_path / "r", progress=False),
                  backends=roles(llm))
    s = o.summary
    assert s["failed"] == 3 and s["scored"] == 0 and s["errors"] == 0 and s["accuracy"] is None
    assert s["accuracy_all"] == 0.0


def test_structured_orders_come_from_the_catalogue_or_other():
    a = parse_structured_turn(json.dumps({"action": "order_test", "test": "Chest X-ray"}))
    assert (a.kind, a.text, a.rule) == ("test", "Chest X-ray", "structured_catalogue")
    b = parse_structured_turn(json.dumps({"action": "order_test", "test": "other", "text": "Sweat chloride test"}))
    assert (b.kind, b.text, b.rule) == ("test", "Sweat chloride test", "structured_other_test")
    c = parse_structured_turn(json.dumps({"action": "order_test", "test": "other"}))
    assert c.rule == "structured_empty_text"


def test_the_doctor_prompt_lists_the_catalogue_not_an_example_to_copy(demo):
    from agents.catalogue import CATALOGUE
    from agents.roles import doctor_system

    p = doctor_system(demo["demo-001"], 20, mode="structured")
    assert "for example" not in p.lower() and all(t in p for t in CATALOGUE)


def test_structured_turns_parse_and_fall_back():
    a = parse_structured_turn(json.dumps({"action": "order_test", "text": "Chest X-ray."}))
    assert (a.kind, a.text, a.rule) == ("test", "Chest X-ray", "structured")
    b = parse_structured_turn('{"action": "diagnose", "text": "[Gout]"}')
    assert (b.kind, b.text) == ("diagnose", "Gout")
    c = parse_structured_turn("REQUEST TEST: ECG")
    assert c.kind == "test" and c.rule == "structured_fallback:test_marker" and c.note
    d = parse_structured_turn('{"action": "dance", "text": "x"}')
    assert d.rule.startswith("structured_fallback")


def test_structured_mode_sends_a_bounded_schema_and_demands_a_diagnosis_last(demo):
    row, events = consult(demo["demo-001"], roles(ScriptedLLM(demo)), cast=CastConfig(max_turns=4),
                          rules=ConsultationConfig(max_turns=4))
    doctor = of(events, "llm_call", role="doctor")
    schemas = [json.loads(e["params"]["response_schema"]) for e in doctor]
    shapes = schemas[0]["anyOf"]
    assert [s["properties"]["action"]["enum"] for s in shapes] == [["ask_patient"], ["order_test"], ["diagnose"]]
    assert all(s["properties"]["text"]["maxLength"] <= 200 for s in shapes)
    from agents.catalogue import CATALOGUE

    assert shapes[1]["properties"]["test"]["enum"] == [*CATALOGUE, "other"]  # tests come from the catalogue
    assert schemas[-1]["properties"]["action"]["enum"] == ["diagnose"]
    assert all(r["rule"] == "structured" for r in of(events, "route"))


def test_agentclinic_protocol(demo):
    from agents.suites.diagnosis import cast_config, consultation_config
    from medsim.assemble import Backends, plan_for
    from medsim.spec import build_spec

    spec = build_spec(None, {"protocol.name": "agentclinic"})
    plan = plan_for(spec, "base", 0, Backends(demo, None))  # type: ignore[arg-type] - scripted: no pool
    cc, rules = cast_config(plan), consultation_config(spec.protocol)
    assert (cc.doctor_mode, cc.prompt_style, rules.min_gathering, cc.guard_retries, cc.measurement_hints) == \
        ("markers", "agentclinic", 0, None, False)
    row, events = consult(demo["demo-001"], roles(ScriptedLLM(demo)), cast=cc, rules=rules)
    doctor = of(events, "llm_call", role="doctor")
    assert "DIAGNOSIS READY" in doctor[0]["messages"][0]["content"] and doctor[0]["params"]["response_schema"] is None
    assert row["status"] == "diagnosed"


def test_technician_ignoring_matching_records_is_retried_then_falls_back(demo):
    llm = Script(ScriptedLLM(demo), measurement=["RESULTS: normal readings"])
    row, events = consult(demo["demo-001"], roles(llm))
    rej = of(events, "reply_rejected", role="measurement")
    assert rej and all(e["problem"] == "ignored_records" for e in rej)
    fb = of(events, "fallback_reply")
    results = of(events, "test_result")
    assert fb and results[0]["result"] == fb[0]["text"] and results[0]["result"].startswith("RESULTS: ")
    assert of(events, "utterance", speaker="measurement")[0]["source"] == "fallback"
    assert row["status"] == "diagnosed"
    # an order with no matching record: "not available" is fine, nothing rejected
    llm2 = Script(ScriptedLLM(demo), doctor=[json.dumps({"action": "order_test", "text": "Colonoscopy"}),
                                             json.dumps({"action": "diagnose", "text": "Gout"})],
                  measurement=["RESULTS: not available"])
    _, events2 = consult(demo["demo-016"], roles(llm2), rules=ConsultationConfig(min_gathering=0))
    assert not of(events2, "reply_rejected") and not of(events2, "fallback_reply")


def test_technician_breaking_its_role_once_corrected_still_reports_the_records(demo):
    """Seen with the embedded model on AgentClinic cases: the records ignored, then, told to
    report them, the prompt said back under a "Patient:" label. The records are known: they
    are the reply (a recorded fallback), and the consultation goes on instead of failing."""
    said_back = "RESULTS: report the results\n\nPatient: 35-year-old male\nThe doctor orders: Blood pressure"
    llm = Script(ScriptedLLM(demo), measurement=["RESULTS: not available", said_back])
    row, events = consult(demo["demo-001"], roles(llm))
    assert [e["problem"] for e in of(events, "reply_rejected", role="measurement")][:2] == ["ignored_records", "role_break"]
    fb = of(events, "fallback_reply", role="measurement")
    assert fb and "role_break" in fb[0]["reason"]
    from agents.participants.wrappers import order_hits

    result = of(events, "test_result")[0]
    hits = order_hits(demo["demo-001"], result["test"])
    assert hits and result["result"] == fb[0]["text"] == "RESULTS: " + "; ".join(f"{p}: {v}" for p, v in hits)
    assert row["status"] == "diagnosed"


def test_a_diagnosis_must_be_a_condition_name(demo):
    """Sentences and symptom lists the embedded model wrote as 'diagnoses' are asked
    again; a condition name goes through."""
    sentence = json.dumps({"action": "diagnose", "text": "Gastrointestinal symptoms and right arm pain are not "
                                                          "directly related to the results of the tests"})
    possible = json.dumps({"action": "diagnose", "text": "Based on your symptoms, it's possible that you have a condition"})
    symptoms = json.dumps({"action": "diagnose", "text": "fever, cough, weight loss"})
    good = json.dumps({"action": "diagnose", "text": "Gout"})
    llm = Script(ScriptedLLM(demo), doctor=[sentence, possible, good])
    row, events = consult(demo["demo-016"], roles(llm), rules=ConsultationConfig(min_gathering=0))
    rej = of(events, "reply_rejected", role="doctor")
    assert [e["problem"] for e in rej] == ["not_a_condition", "not_a_condition"]
    assert row["diagnosis"] == "Gout"
    assert "textbook" in of(events, "llm_call", role="doctor")[1]["messages"][-1]["content"]
    llm = Script(ScriptedLLM(demo), doctor=[symptoms, good])
    row, events = consult(demo["demo-016"], roles(llm), rules=ConsultationConfig(min_gathering=0))
    assert [e["problem"] for e in of(events, "reply_rejected", role="doctor")] == ["not_a_condition"]
    # the name of a test (the embedded model 'diagnosed' "Tissue biopsy" after ordering one)
    tests = [json.dumps({"action": "diagnose", "text": t}) for t in ("Tissue biopsy", "Chest X-ray")]
    llm = Script(ScriptedLLM(demo), doctor=[*tests, good])
    row, events = consult(demo["demo-016"], roles(llm), rules=ConsultationConfig(min_gathering=0))
    assert [e["problem"] for e in of(events, "reply_rejected", role="doctor")] == ["not_a_condition"] * 2
    assert row["diagnosis"] == "Gout"


def test_a_diagnosis_still_no_condition_after_the_retries_is_judged_as_given(demo):
    """Three drafts that name no condition: the consultation is not failed (which would
    drop the case from the accuracy); the last draft stands, logged, and is judged."""
    drafts = [json.dumps({"action": "diagnose", "text": t}) for t in
              ("Severe pruritus and fatigue could be indicative of liver dysfunction, especially if severe.",
               "Joint pain", "Cord compression or disc prolapse")]
    llm = Script(ScriptedLLM(demo), doctor=drafts)
    row, events = consult(demo["demo-016"], roles(llm), rules=ConsultationConfig(min_gathering=0))
    assert [e["problem"] for e in of(events, "reply_rejected", role="doctor")] == ["not_a_condition"] * 3
    fb = of(events, "fallback_reply", role="doctor")
    assert len(fb) == 1 and "still not_a_condition after 3 attempts" in fb[0]["reason"]
    assert row["status"] == "diagnosed" and row["diagnosis"] == "Cord compression or disc prolapse"
    assert row["correct"] is False


def test_a_marker_echoed_inside_the_json_is_not_part_of_the_diagnosis():
    from agents.protocol import parse_structured_turn

    a = parse_structured_turn('{"action": "diagnose", "text": "Diagnosis READY: Adhesive capsulitis"}')
    assert (a.kind, a.text, a.rule) == ("diagnose", "Adhesive capsulitis", "structured_marker_echo")
    a = parse_structured_turn('{"action": "diagnose", "text": "Diagnosis ready"}')
    assert a.text == "Diagnosis ready"  # nothing after it: the text is kept as it came


def test_test_names_are_not_conditions_and_conditions_with_test_words_are():
    from agents.condition_names import names_a_test as _test_name

    for t in ("Tissue biopsy", "Complete blood count", "CT head", "Urine culture", "thyroid function tests",
              "Echocardiogram", "Abnormal liver function tests", "Lumbar puncture."):
        assert _test_name(t), t
    for t in ("Gout", "Culture-negative endocarditis", "Lead poisoning", "Myasthenia gravis", "Tension headache",
              "Acute pyelonephritis", "Hirschsprung disease", "Testicular torsion", "Countertransference"):
        assert not _test_name(t), t


def test_a_diagnosis_given_again_after_it_came_too_early_is_not_a_loop(demo):
    """The embedded model, told its diagnosis came before enough was gathered, gives the
    same diagnosis again: that is no loop (9 of 16 cases failed on it, batched), the
    consultation goes on and the diagnosis is taken once enough is gathered."""
    dx = json.dumps({"action": "diagnose", "text": "Gout"})
    ask = [json.dumps({"action": "ask_patient", "text": t}) for t in ("Which joint hurts?", "Any fever?")]
    llm = Script(ScriptedLLM(demo), doctor=[ask[0], dx, dx, ask[1], dx])
    row, events = consult(demo["demo-016"], roles(llm), rules=ConsultationConfig(min_gathering=2, max_turns=8))
    assert not of(events, "reply_rejected", role="doctor")
    assert len(of(events, "premature_diagnosis")) == 2
    assert row["status"] == "diagnosed" and row["diagnosis"] == "Gout"
    assert check_reply("doctor", dx, [dx], "x") is None
    assert check_reply("doctor", "DIAGNOSIS READY: Gout", ["DIAGNOSIS READY: Gout"], "x") is None


def test_symptoms_are_not_conditions_and_conditions_named_after_symptoms_are():
    from agents.cases import load_cases
    from agents.participants.wrappers import not_a_condition_name

    for t in ("Upper limb weakness", "Chest pain", "Fatigue", "Shortness of breath", "Abdominal pain.",
              "Palpitations", "Unintentional weight loss"):
        assert not_a_condition_name(t), t
    for t in ("Scarlet fever", "Whooping cough", "Tension headache", "Complex regional pain syndrome",
              "Sickle cell pain crisis", "Painful diabetic neuropathy", "Nausea and vomiting of pregnancy",
              "Benign paroxysmal positional vertigo", "Diaper rash", "Gout"):
        assert not not_a_condition_name(t), t
    cases, _ = load_cases("demo")  # no true diagnosis may be refused as the doctor's answer
    assert not [c.diagnosis for c in cases if not_a_condition_name(c.diagnosis)]


def test_a_test_the_case_has_no_record_of_gets_a_normal_result_marked_as_synthesised(demo):
    from agents.normal_results import normal_result

    orders = [json.dumps({"action": "order_test", "test": "Lipid panel"}),
              json.dumps({"action": "order_test", "test": "other", "text": "Colonoscopy"}),
              json.dumps({"action": "order_test", "test": "Pregnancy test"}),
              json.dumps({"action": "diagnose", "text": "Gout"})]
    llm = Script(ScriptedLLM(demo), doctor=orders)
    case = demo["demo-016"]
    row, events = consult(case, roles(llm), rules=ConsultationConfig(min_gathering=0))
    synth = of(events, "synthesised_result")
    assert [e["test"] for e in synth] == ["Lipid panel", "Colonoscopy", "Pregnancy test"]
    results = of(events, "test_result")
    assert results[0]["result"] == f"RESULTS: Lipid panel: {normal_result('Lipid panel')}" and "LDL" in results[0]["result"]
    assert results[1]["result"].endswith("No abnormality recorded")  # an endoscopy has no normal value (issue 21)
    assert [e["policy"] for e in synth][:2] == ["normal_value", "no_abnormality_recorded"]
    male = "man" in case.demographics or "male" in case.demographics
    assert ("Not indicated" in results[2]["result"]) == male
    assert {e["source"] for e in of(events, "utterance", speaker="measurement")} == {"synthesised"}
    assert not of(events, "llm_call", role="measurement")  # the model technician was not asked
