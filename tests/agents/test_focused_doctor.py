"""The focused doctor (agents.participants.focused): the complaint first, a running
differential it keeps to itself, a checklist when it would repeat itself, a stop when
settled, and the diagnosis from the summarised record as a ranked differential."""
from __future__ import annotations

import json

import pytest

from agents.cases.registry import load_cases
from agents.consultation import ConsultationConfig
from agents.llm.base import Output
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig
from agents.orders import is_examination
from agents.participants import focused
from agents.participants.focused import CHECKLIST, EXAMINATION, FIRST_LINE, FocusedDoctor, ranked
from tests.helpers import consult, of, roles


@pytest.fixture(scope="module")
def case():
    return load_cases("demo")[0][0]


@pytest.fixture
def no_order_sets(monkeypatch):
    """The work-up as the model chooses it alone (the complaint's order sets are tested on
    their own below)."""
    monkeypatch.setattr(focused, "order_set_tests", lambda texts, limit=2: [])


class Doctor:
    """A doctor model that answers the focused doctor's two calls: the update (a working
    differential with the given confidences, and ``next``) and the final differential."""

    name = "fake-doctor"

    def __init__(self, confidences=(50, 40), nxt=None, final=("Myocardial infarction", "Pericarditis", "GERD",
                                                                "Aortic dissection", "Pneumonia"),
                 leaders=("Myocardial infarction",), tests=("Complete blood count", "12-lead ECG")):
        self.confidences, self.nxt, self.final, self.prompts = confidences, nxt, final, []
        self.tests = tests  # what the work-up orders
        self.leaders = leaders  # the working differential's leader, update by update (cycled)

    def generate(self, messages, params, ctx):
        schema = json.loads(params.response_schema or "{}")
        self.prompts.append((schema.get("properties", {}).keys(), [m.content for m in messages]))
        props = schema.get("properties", {})
        if "action" in props and props["action"].get("enum") == ["diagnose"]:  # a strategy's final answer
            return Output(text=json.dumps({"action": "diagnose", "text": "Pericarditis"}), model=self.name,
                          prompt_tokens=1, prompt_tokens_evaluated=1, completion_tokens=1, latency_s=0.0)
        if not props and not schema.get("anyOf"):  # reasoning (chain of thought)
            return Output(text="The pain is pleuritic.", model=self.name, prompt_tokens=1, prompt_tokens_evaluated=1,
                          completion_tokens=1, latency_s=0.0)
        if "test" in props.get("differential", {}).get("items", {}).get("properties", {}):
            # the work-up: the working differential, each condition with the test that would confirm it
            self.prompts[-1] = (("differential", "workup"), self.prompts[-1][1])
            u = sum(1 for p in self.prompts if len(p[0]) == 2)
            out = {"differential": [{"diagnosis": d, "confidence": c, "test": t} for d, c, t in zip(
                (self.leaders[(u - 1) % len(self.leaders)], "Pericarditis"), self.confidences, self.tests)]}
        elif "next" in props:
            k = sum(1 for p in self.prompts if "next" in p[0])
            nxt = self.nxt or {"action": "ask_patient", "text": f"Question number {k}?"}
            u = sum(1 for p in self.prompts if len(p[0]) == 2)  # the updates and the work-up
            out = {"differential": [{"diagnosis": self.leaders[(u - 1) % len(self.leaders)],
                                     "confidence": self.confidences[0]},
                                    {"diagnosis": "Pericarditis", "confidence": self.confidences[1]}], "next": nxt}
        else:
            out = {"differential": [{"diagnosis": d, "confidence": 80 - 15 * i} for i, d in enumerate(self.final)]}
        text = json.dumps(out)
        return Output(text=text, model=self.name, prompt_tokens=1, prompt_tokens_evaluated=1, completion_tokens=1,
                      latency_s=0.0)


def run(case, doctor, max_turns=8):
    scripted = ScriptedLLM({case.id: case})
    return consult(case, roles(scripted, doctor=doctor), cast=CastConfig(doctor_strategy="focused", max_turns=max_turns),
                   rules=ConsultationConfig(max_turns=max_turns))


def test_the_complaint_first_then_the_history_and_the_examination_then_the_differential_chooses(case, no_order_sets):
    doc = Doctor()
    row, events = run(case, doc, max_turns=10)
    routes = of(events, "route")
    history = len(CHECKLIST) - 1  # the family question is kept for when the model would repeat itself
    assert [r["extracted"] for r in routes[:history]] == list(CHECKLIST[:history])
    assert [r["rule"] for r in routes[:history + 1]] == ["focused_opening"] + ["focused_history"] * history
    exam = routes[history]
    assert exam["route"] == "measurement" and exam["extracted"] == EXAMINATION
    got = of(events, "test_result")[0]
    assert all(v.split()[0] in got["result"] for v in (f.split(": ", 1)[1] for f in _exam_findings(case)))
    # then the first-line blood tests, one order
    first = routes[history + 1]
    assert first["route"] == "measurement" and first["extracted"] == "; ".join(FIRST_LINE)
    assert first["rule"] == "focused_history"
    # no model call of the doctor's before the history, the examination and the first-line tests
    first_call = of(events, "llm_call", role="doctor")[0]
    assert first_call["turn"] == history + 3
    # then one order of the tests its working differential picks, each answered, none again
    # (the complete blood count it names is done already)
    workup = routes[history + 2]
    assert workup["route"] == "measurement" and workup["extracted"] == "12-lead ECG"
    assert workup["rule"] == "focused_workup"
    assert of(events, "test_result")[2]["turn"] == history + 3
    assert routes[history + 3]["extracted"] == "Question number 1?"
    working = of(events, "differential", final=False)
    assert working and working[0]["items"][0] == {"diagnosis": "Myocardial infarction", "confidence": 0.5}
    for e in of(events, "llm_call", role="patient"):  # nothing of the working differential reaches the patient
        assert "Pericarditis" not in json.dumps(e["messages"])
    assert not any("Pericarditis" in e["text"] for e in of(events, "utterance", speaker="patient"))


def _exam_findings(case):
    from agents.cases.model import flatten

    return [f"{' > '.join(p)}: {v}" for p, v in flatten(case.exam)]


def test_the_diagnosis_is_a_ranked_differential_from_the_record_not_the_dialogue(case):
    doc = Doctor()
    row, events = run(case, doc, max_turns=10)
    final = of(events, "differential", final=True)
    assert len(final) == 1 and [i["diagnosis"] for i in final[0]["items"]][:2] == ["Myocardial infarction", "Pericarditis"]
    # pooled with the last running differential: (0.8 + 0.5) / 2
    assert final[0]["items"][0]["confidence"] == 0.65 and row["diagnosis"] == "Myocardial infarction"
    _, last = doc.prompts[-1]
    assert len(last) == 1 and "What the patient reports:" in last[0] and "Test results:" in last[0]
    first_answer = of(events, "utterance", speaker="patient")[0]["text"]
    assert first_answer.split(".")[0] in last[0]  # the patient's answer is in the record...
    assert '"action"' not in last[0] and "Question number" in last[0]  # ...with its question, not the raw turns


def test_a_settled_differential_stops_early_and_an_open_one_uses_the_budget(case):
    _, settled = run(case, Doctor(confidences=(95, 10)), max_turns=10)
    _, open_ = run(case, Doctor(confidences=(50, 45)), max_turns=10)
    first_update = len(CHECKLIST) + 2  # after the history, the examination and the first-line tests
    # one confident update is not enough: the same leader twice in a row settles it
    assert of(settled, "diagnosis")[0]["turn"] == first_update + 1
    assert len(of(settled, "differential", final=False)) == 2
    assert of(open_, "diagnosis")[0]["turn"] == 10
    # confident each time, but of another leader each time: not settled
    _, wavering = run(case, Doctor(confidences=(95, 10), leaders=("Myocardial infarction", "Aortic dissection")),
                      max_turns=10)
    assert of(wavering, "diagnosis")[0]["turn"] == 10


def test_a_repeated_question_is_replaced_by_the_next_checklist_item(case):
    doc = Doctor(nxt={"action": "ask_patient", "text": CHECKLIST[0]})  # the model asks the opening again and again
    _, events = run(case, doc, max_turns=10)
    routes = of(events, "route")
    asked = [r["extracted"] for r in routes if r["route"] == "patient"]
    assert asked == list(CHECKLIST)  # the family question, kept for this, comes after the examination
    assert routes[len(CHECKLIST) + 1]["rule"] == "focused_workup"
    assert routes[len(CHECKLIST) + 2]["rule"] == "focused_checklist"
    # then nothing new is left to ask: it diagnoses rather than ask the same again
    assert routes[-1]["route"] == "diagnosis" and routes[-1]["turn"] == len(CHECKLIST) + 4


@pytest.mark.parametrize("again", ["Complete physical examination", "Cardiovascular examination"])
def test_the_model_ordering_the_examination_or_a_part_of_it_again_is_a_repeat(case, again):
    # seen: "Cardiovascular examination" ordered after the whole examination had returned the
    # "Cardiac Examination > Murmur" finding, which came back again
    doc = Doctor(nxt={"action": "order_test", "test": again})
    _, events = run(case, doc, max_turns=10)
    exams = [r for r in of(events, "route") if r["route"] == "measurement" and is_examination(r["extracted"])]
    assert [r["extracted"] for r in exams] == [EXAMINATION]


def test_a_final_answer_that_names_no_condition_falls_back_to_the_running_differential(case):
    doc = Doctor(final=("Chest pain", "Tachycardia"))  # findings, not conditions
    row, events = run(case, doc, max_turns=len(CHECKLIST) + 3)
    assert row["diagnosis"] == "Myocardial infarction"
    assert of(events, "route")[-1]["rule"] == "focused_working"


def test_ranked_drops_non_conditions_and_repeats_and_clips_confidence():
    got = ranked({"differential": [{"diagnosis": "Pneumonia", "confidence": 130}, {"diagnosis": "pneumonia",
                                                                                     "confidence": 20},
                                   {"diagnosis": "Fever", "confidence": 50}, {"diagnosis": "Asthma"}]})
    assert got == [("Pneumonia", 1.0), ("Asthma", None)]
    assert ranked(None) == [] and ranked({"differential": "x"}) == []


def test_the_scripted_oracle_plays_it_through_a_whole_run(case):
    row, events = run(case, ScriptedLLM({case.id: case}), max_turns=12)
    assert row["status"] == "diagnosed" and len(of(events, "differential", final=True)[0]["items"]) == 5


def test_it_needs_its_case():
    with pytest.raises(ValueError, match="needs its case"):
        FocusedDoctor(role="doctor", llm=None, system="", params=None, case_id="x", sink=None)  # type: ignore[arg-type]


def test_chain_of_thought_and_the_panel_read_the_record_and_keep_the_differential(case):
    from agents.deliberation import DeliberationConfig, Deliberating
    from agents.events import DictSink
    from agents.participants import llm_cast
    from agents.consultation import run_consultation

    doc = Doctor()
    scripted = ScriptedLLM({case.id: case})
    for cfg in (DeliberationConfig(cot=True), DeliberationConfig(panel="roles")):
        sink = DictSink()
        cast = dict(llm_cast(case, roles(scripted, doctor=doc), CastConfig(doctor_strategy="focused", max_turns=5), sink))
        cast["doctor"] = Deliberating(cast["doctor"], case, sink, cfg)
        doc.prompts.clear()
        run_consultation(case, cast, ConsultationConfig(max_turns=5), sink)
        after = [msgs for keys, msgs in doc.prompts if "differential" not in keys]  # the strategy's own calls
        assert after and all(msgs[0].startswith("You are Dr. Reyes, a doctor reading a patient's record")
                             and "What the patient reports:" in msgs[0] and len(msgs) >= 2 for msgs in after)
        final = of(sink.events, "differential", final=True)
        dx = of(sink.events, "diagnosis")[0]["diagnosis"]
        assert dx == "Pericarditis"  # the strategy's answer, moved to the head of the doctor's differential
        assert [i["diagnosis"] for i in final[0]["items"]][:2] == ["Pericarditis", "Myocardial infarction"]
        assert final[0]["items"][0]["confidence"] == 0.65 and len(final[0]["items"]) == 5


def test_consult_prints_the_diagnosis_once_and_the_differential_s_other_items_as_lines(capsys):
    from medsim.cli import main

    assert main(["consult", "--cases", "demo", "--case", "demo-003", "--llm", "scripted", "--doctor-strategy", "focused",
                 "--max-turns", "6"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nDiagnosis: ") == 1 and out.count("(differential: ") == 4


def test_a_condition_the_patient_already_has_goes_to_the_end_of_the_differential():
    from agents.participants.focused import demote_known

    items = [("Crohn disease", 0.9), ("Progressive multifocal leukoencephalopathy", 0.8), ("Multiple sclerosis", 0.5)]
    known = "Crohn disease diagnosed 2 years ago. Current treatment includes natalizumab for the past year."
    assert [d for d, _ in demote_known(items, known)] == ["Progressive multifocal leukoencephalopathy",
                                                         "Multiple sclerosis", "Crohn disease"]
    assert demote_known(items, "") == items and demote_known(items, "No medical problems.") == items
    assert demote_known(items, "I have never had Crohn disease.") == items  # denied: not a condition they have
    assert demote_known(items, "No illnesses. My mother has Crohn disease.") == items  # a relative's
    # a complication of the known condition is new: all of a condition's words must be what they said
    dka = [("Type 2 diabetes", 0.9), ("Diabetic ketoacidosis", 0.8), ("Pneumonia", 0.3)]
    assert [d for d, _ in demote_known(dka, "Type 2 diabetes on insulin.")] == ["Diabetic ketoacidosis", "Pneumonia",
                                                                               "Type 2 diabetes"]


def test_the_focused_doctor_diagnoses_the_new_problem_not_the_history_it_was_told():
    pneumonia = next(c for c in load_cases("demo")[0] if c.id == "demo-005")  # "Type 2 diabetes on metformin. ..."
    doc = Doctor(final=("Type 2 diabetes", "Community-acquired pneumonia", "Pulmonary embolism", "Sepsis",
                        "Chronic kidney disease"), leaders=("Type 2 diabetes",))
    row, events = run(pneumonia, doc, max_turns=10)
    told = next(e["text"] for e in of(events, "utterance", speaker="patient") if e["turn"] == 4)
    assert "type 2 diabetes" in told.lower() and "chronic kidney disease" in told.lower()
    assert row["diagnosis"] == "Community-acquired pneumonia"
    items = [i["diagnosis"] for i in of(events, "differential", final=True)[0]["items"]]
    # pooled (type 2 diabetes led both reads), then the history it was told goes last
    assert items == ["Community-acquired pneumonia", "Pulmonary embolism", "Pericarditis", "Sepsis",
                     "Type 2 diabetes"]


def test_the_work_up_orders_each_candidate_test_once_and_never_the_examination_again(case, no_order_sets):
    doc = Doctor(tests=("Complete physical examination", "12-lead ECG"))
    _, events = run(case, doc, max_turns=10)
    workup = [r for r in of(events, "route") if r["rule"] == "focused_workup"]
    assert [r["extracted"] for r in workup] == ["12-lead ECG"]
    # every test it names already done (or none named): no work-up order, the update chooses
    _, again = run(case, Doctor(tests=("Physical examination", "Neurological examination")), max_turns=10)
    assert not [r for r in of(again, "route") if r["rule"] == "focused_workup"]
    assert of(again, "route")[len(CHECKLIST) + 1]["extracted"] == "Question number 1?"
    # nor a test of the first-line order, however spelled
    _, done = run(case, Doctor(tests=("CBC", "Liver function tests")), max_turns=10)
    assert not [r for r in of(done, "route") if r["rule"] == "focused_workup"]


def test_two_reads_of_the_record_are_pooled_by_mean_confidence():
    from agents.participants.focused import pooled

    final = [("Crohn disease", 0.5), ("Multiple sclerosis", 0.4), ("Parkinson disease", 0.3)]
    working = [("PML", 0.8), ("crohn disease", 0.2)]
    # PML (0.8 + 0) / 2 = 0.4 leads Crohn (0.5 + 0.2) / 2 = 0.35, MS 0.2, Parkinson 0.15
    assert pooled(final, working) == [("PML", 0.4), ("Crohn disease", 0.35), ("Multiple sclerosis", 0.2),
                                      ("Parkinson disease", 0.15)]
    assert pooled(final, working, limit=2) == [("PML", 0.4), ("Crohn disease", 0.35)]
    assert pooled(final, []) == final  # no running differential: the final call alone
    # the same condition with its initialism is one condition, in the final call's words
    assert pooled([("Cerebral palsy", 0.6)], [("Cerebral Palsy (CP)", 0.4)]) == [("Cerebral palsy", 0.5)]
    # a missing confidence counts as none; ties keep the final call's order
    assert [d for d, _ in pooled([("A", None), ("B", 0.2)], [("C", 0.2)])] == ["B", "C", "A"]


def test_the_running_differential_keeps_its_names_short_and_leaves_tokens_for_its_next_step():
    """A condition name in a running differential is bounded (a small model that wrote a
    sentence there used up the reply before its next step); the final answer may name a
    long condition."""
    from agents.participants.focused import FocusedConfig, final_schema, update_schema, workup_schema

    long_name = "Acute inflammatory demyelinating polyradiculoneuropathy"  # 55 characters
    for schema in (update_schema(True, 3), workup_schema(4)):
        name = schema["properties"]["differential"]["items"]["properties"]["diagnosis"]
        assert len(long_name) <= name["maxLength"] <= 60
        worst = schema["properties"]["differential"]["maxItems"] * (name["maxLength"] + 40) // 4
        assert worst + 40 <= FocusedConfig().update_tokens + (40 if "next" not in schema["properties"] else 0)
    assert final_schema(5)["properties"]["differential"]["items"]["properties"]["diagnosis"]["maxLength"] >= 80


def test_a_confident_leader_is_not_settled_while_the_doctor_asks_for_a_test_it_has_not_done(case, no_order_sets):
    # seen: the same confident leader twice, the update asking for an MRI brain, and a diagnosis
    # made instead of the MRI (which held the answer)
    doc = Doctor(confidences=(95, 10), nxt={"action": "order_test", "test": "Chest X-ray"})
    _, events = run(case, doc, max_turns=12)
    asked = [r for r in of(events, "route") if r["route"] == "measurement" and r["rule"].startswith("focused:")]
    assert [r["extracted"] for r in asked] == ["Chest X-ray"]
    # the next update asks for it again (done): nothing new, so the settled leader stands, early
    diagnosis = of(events, "diagnosis")[0]
    assert asked[0]["turn"] < diagnosis["turn"] < 12


def test_a_part_of_a_result_already_returned_is_not_ordered_again(case, no_order_sets):
    # seen: a work-up ordering "Cranial Nerves; Motor Strength; Reflexes" after the examination
    # returned "Neurological Examination > Cranial Nerves: ..." and the rest
    part = _exam_findings(case)[0].split(": ", 1)[0].split(" > ")[-1]
    doc = Doctor(tests=(part, "12-lead ECG"))
    _, events = run(case, doc, max_turns=10)
    workup = [r["extracted"] for r in of(events, "route") if r["rule"] == "focused_workup"]
    assert workup == ["12-lead ECG"]
    # nor chosen by an update: the checklist's next item is asked instead
    _, again = run(case, Doctor(nxt={"action": "order_test", "test": part}), max_turns=10)
    assert not [r for r in of(again, "route") if r["rule"].startswith("focused:") and r["extracted"] == part]


def test_the_work_up_adds_the_order_set_of_the_complaint(case):
    # the demo case's complaint is central chest pain: its order set is a chest X-ray, which the
    # model's work-up (a blood count, done already, and an ECG) does not name
    doc = Doctor(tests=("Complete blood count", "12-lead ECG"))
    _, events = run(case, doc, max_turns=10)
    workup = [r["extracted"] for r in of(events, "route") if r["rule"] == "focused_workup"]
    assert workup == ["12-lead ECG; Chest X-ray"]
    assert any("Chest X-ray" in e["test"] for e in of(events, "test_requested"))


def test_order_sets_follow_the_words_of_the_complaint_outside_a_negation():
    from agents.order_sets import order_set_tests

    assert order_set_tests(["Evaluate knee pain after a fall."]) == ["X-ray of the knee", "MRI of the knee"]
    # a negated mention orders nothing; sets in the order first said, at most two
    assert order_set_tests(["No chest pain. A lump in the left breast.", "I have had a cough and a rash."]) == [
        "Mammography", "Breast biopsy", "Chest X-ray"]
    assert order_set_tests(["A lump in the breast.", "A cough and a rash."], limit=1) == ["Mammography",
                                                                                          "Breast biopsy"]
    assert order_set_tests(["Feeling tired all the time."]) == []


def test_the_record_is_read_as_the_static_prompt_lays_a_case_out():
    """The diagnosis call's record: the checklist's answers under labels, another question
    with its question, and one line per result (a technician's reply split at each
    RESULTS: and at each "Section > Item:" finding; a result without a label of its own
    under what was ordered)."""
    from agents.cases.model import Case
    from agents.participants.focused import Learned, record_vignette

    case = Case(id="x", objective="Diagnose the cough.", demographics="40-year-old man", patient={}, exam={}, tests={},
                diagnosis="Pneumonia", source="test:1")
    learned = [
        Learned("patient", CHECKLIST[0], "I have had a cough for a week."),
        Learned("patient", "Do you keep birds?", "Yes, two parrots."),
        Learned("exam", EXAMINATION, "RESULTS: Vital Signs > Temperature: 38.9 C, Vital Signs > Heart Rate: 104, "
                                     "Chest > Auscultation: Crackles, left base"),
        Learned("test", "Chest X-ray; Complete blood count",
                "RESULTS: Consolidation of the left lower lobe. RESULTS: Complete blood count: WBC 15.1; platelets 300"),
        Learned("note", "Biopsy", "Not possible here."),
    ]
    text = record_vignette(case, learned)
    lines = text.splitlines()
    assert "- Presenting complaint: I have had a cough for a week." in lines
    assert '- (asked "Do you keep birds?") Yes, two parrots.' in lines
    assert lines[lines.index("Examination findings:") + 1:lines.index("Test results:")] == [
        "- Vital Signs > Temperature: 38.9 C", "- Vital Signs > Heart Rate: 104", "- Chest > Auscultation: Crackles, left base"]
    tests = lines[lines.index("Test results:") + 1:]
    assert tests[:2] == ["- Chest X-ray; Complete blood count: Consolidation of the left lower lobe.",
                         "- Complete blood count: WBC 15.1; platelets 300"]
    assert "RESULTS" not in text and "Biopsy" not in text and text.count("(asked") == 1


def test_the_record_a_finished_runs_log_holds_is_the_one_its_doctor_read(case, no_order_sets):
    """A replay of the diagnosis call (benchmarks/focused_final_replay.py) renders what the
    doctor learned from the log's routes and replies: the very prompt the doctor sent."""
    from agents.participants.focused import learned_from_events, record_vignette

    doc = Doctor()
    _, events = run(case, doc, max_turns=10)
    _, last = doc.prompts[-1]
    learned = learned_from_events(events)
    assert {x.kind for x in learned} == {"patient", "exam", "test"}
    assert record_vignette(case, learned) == last[0]


def test_a_condition_a_result_concludes_goes_first_and_a_weaker_cue_or_another_name_does_not():
    from agents.participants.focused import Learned, concluded_by_results, final_order

    items = [("Multiple sclerosis (MS)", 0.8), ("Crohn disease", 0.6), ("PML (Progressive multifocal encephalopathy)", 0.4),
             ("Ascites", 0.3)]
    mri = Learned("test", "MRI brain", "RESULTS: Lesions consistent with progressive multifocal encephalopathy (PML).")
    assert [d for d, _ in concluded_by_results(items, [mri])][:2] == ["PML (Progressive multifocal encephalopathy)",
                                                                     "Multiple sclerosis (MS)"]
    weak = Learned("test", "Abdominal ultrasound", "RESULTS: Fluid suggestive of ascites")  # a finding, not read
    said_by_patient = Learned("patient", CHECKLIST[0], "My neighbour said it is consistent with ascites")
    assert concluded_by_results(items, [weak, said_by_patient]) == items
    # the patient's own condition still goes last, whatever a result says of it
    known = "I have Crohn disease."
    crohn = Learned("test", "Colonoscopy", "RESULTS: Findings consistent with Crohn disease")
    got = final_order(items, [], known, [mri, crohn])
    assert got[0][0].startswith("PML") and got[-1][0] == "Crohn disease"
