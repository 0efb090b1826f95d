"""The faithful patient (issue 21, item 3): the case's facts in the patient's voice, the
facts that answer each question, a guard that asks again a reply contradicting the case,
in the third person, naming the diagnosis or inventing, the facts themselves when the
retries are spent, and a caregiver who answers for an infant."""
import re
from dataclasses import replace
from pathlib import Path

import pytest

from agents.cases import load_cases
from agents.cases.model import Case
from agents.fidelity.facts import case_facts
from agents.fidelity.patient import check_patient
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig
from agents.participants.grounded import Grounded
from agents.patient_voice import facts_for, first_person, voice_of, voiced_facts
from agents.roles import patient_system
from tests.helpers import Script, consult, of, roles

AGENTCLINIC = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "agentclinic" / "agentclinic_medqa.jsonl"


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


def _all_cases():
    cases = list(load_cases("demo")[0])
    if AGENTCLINIC.is_file():
        cases += list(load_cases(str(AGENTCLINIC))[0])
    return cases


def _infant() -> Case:
    return Case(id="infant-1", source="test", objective="Evaluate a 3-week-old girl who feeds poorly.",
                demographics="3-week-old girl", diagnosis="Pyloric stenosis",
                patient={"Demographics": "3-week-old girl",
                         "History": "The patient has been vomiting after every feed for 4 days. Her mother reports "
                                    "that she seems hungry straight after.",
                         "Symptoms": {"Primary_Symptom": "Vomiting after feeds",
                                      "Secondary_Symptoms": ["Hungry after vomiting"]},
                         "Past_Medical_History": "Born at term.",
                         "Review_of_Systems": "No fever. No diarrhoea."},
                exam={}, tests={})


def test_every_known_case_is_voiced_in_the_first_person_or_the_caregivers():
    """Over every shipped (and AgentClinic) case: no voiced fact of a patient who speaks for
    themselves reads as the third person to the fidelity check, and no caregiver calls the
    child "the patient"."""
    bad = []
    n = 0
    for case in _all_cases():
        cf = case_facts(case)
        for f in voiced_facts(case):
            n += 1
            voice = check_patient(case, "", f.text).voice
            if voice == "third_person" or "the patient" in f.text.lower():
                bad.append((case.id, cf.facts[f.index].text, f.text, voice))
    assert n > 100
    assert not bad, bad[:5]


def test_no_voiced_fact_joins_a_third_person_verb_to_the_patients_own():
    """Over every shipped (and AgentClinic) case: "when I lie flat or takes a deep breath",
    "I keep vomiting and feels drowsy" read as a patient who cannot speak; a verb joined
    to the patient's "I" by "and" / "or" is in the first person as well."""
    from agents.patient_voice import _ACTS, base_form as _base

    acts = "|".join(sorted(a for a in _ACTS if _base(a) != a and a not in ("is", "was", "has", "does")))
    joined = re.compile(rf"\bI\s+(?:{'|'.join(sorted({_base(a) for a in _ACTS}))})\b((?:(?!\b(?:I|it|that|which|"
                        rf"when|while|if)\b)[^,.;])*?)\s(?:and|or)\s+({acts})\b")
    bad = [(case.id, f.text) for case in _all_cases() if voice_of(case).caregiver is None
           for f in voiced_facts(case) if joined.search(f.text)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("text,section,sex,expected", [
    ("The patient reports a 1-month history of double vision", "history", "f",
     "I report a 1-month history of double vision."),
    ("She notes that it worsens after activity", "history", "f", "I note that it worsens after activity."),
    ("He has a cough and feels tired", "history", "m", "I have a cough and feel tired."),
    ("Denies fever, cough, or recent travel", "ros", "m", "I deny fever, cough, or recent travel."),
    ("Non-smoker, drinks wine occasionally", "social", "f", "Non-smoker, I drink wine occasionally."),
    ("His wife says she is worried", "history", "m", "My wife says she is worried."),
    ("Her mother gave her the tablets", "history", "f", "My mother gave me the tablets."),
    ("Double vision", "complaint", "f", "My main problem is double vision."),
    ("Feeling feverish", "symptoms", "m", "I have also been feeling feverish."),
    ("The pain started yesterday and has been worsening", "history", "m",
     "The pain started yesterday and has been worsening."),
    # a verb joined to the patient's own takes the first person too, a list of them as well
    ("He gets short of breath when he climbs stairs or carries shopping", "history", "m",
     "I get short of breath when I climb stairs or carry shopping."),
    ("She sits, stands and walks with difficulty", "history", "f", "I sit, stand and walk with difficulty."),
    ("He coughs, sneezes, and vomits", "symptoms", "m", "I cough, sneeze, and vomit."),
    # ... but not another subject's verb
    ("The ache worsens when she carries her daughter and is eased by rest", "history", "f",
     "The ache worsens when I carry my daughter and is eased by rest."),
    ("He noticed the rash gets worse and spreads", "history", "m", "I noticed the rash gets worse and spreads."),
    ("He takes vitamins and minerals", "history", "m", "I take vitamins and minerals."),
    # a verb joined far from the patient's "I" (demo-021, demo-005 said "and struggles", "and gets")
    ("He lost his appetite and 5 kg in weight over a month, and struggles at work", "history", "m",
     "I lost my appetite and 5 kg in weight over a month, and struggle at work."),
    ("He noticed his son gets tired and falls asleep", "history", "m", "I noticed my son gets tired and falls asleep."),
    # a singular verb after a clause of "they" is not that clause's (demo-021's "but has made no plans")
    ("He had thoughts that they would leave, but has made no plans", "history", "m",
     "I had thoughts that they would leave, but I have made no plans."),
    ("He has a cough that started last week, but has improved", "history", "m",
     "I have a cough that started last week, but has improved."),
    # a pronoun object of the patient's own verb is someone else's ("I visited me" cannot be)
    ("He says his brother was sick and he visited him", "history", "m", "I say my brother was sick and I visited him."),
    ("She says her mother called her and she told her about the pain", "history", "f",
     "I say my mother called me and I told her about the pain."),
    ("He asked his brother to drive him home", "history", "m", "I asked my brother to drive me home."),
    ("He says the pills make him dizzy", "history", "m", "I say the pills make me dizzy."),
    # an adverb after "and" (AgentClinic MedQA 079's "and currently feels"); a verb no list holds,
    # known by its object
    ("She works as a nurse and often lifts patients", "social", "f", "I work as a nurse and often lift patients."),
    ("He lost his appetite and 5 kg in weight over a month, and still struggles at work", "history", "m",
     "I lost my appetite and 5 kg in weight over a month, and still struggle at work."),
    ("Her husband noticed that she has become forgetful and repeats herself", "history", "f",
     "My husband noticed that I have become forgetful and repeat myself."),
    ("He has headaches and cramps the day after exercise", "history", "m",
     "I have headaches and cramps the day after exercise."),
    ("He noticed the rash itches and spreads to his arms", "history", "m",
     "I noticed the rash itches and spreads to my arms."),
])
def test_first_person(text, section, sex, expected):
    assert first_person(text, section, voice_of_sex(sex)) == expected


def voice_of_sex(sex):
    from agents.patient_voice import Voice

    return Voice(None, "", sex)


def test_placeholders_are_not_facts():
    v = voice_of_sex("f")
    assert first_person("Information not provided.", "social", v) is None
    assert first_person("No additional symptoms provided", "ros", v) is None
    assert first_person("No fever", "ros", v) == "No fever."


def test_the_facts_that_answer_a_question(demo):
    case = demo["demo-007"]
    voiced = {f.index: f for f in voiced_facts(case)}
    meds = facts_for(case, "Do you have any medical problems, or take any medicines?")
    assert meds and all(voiced[f.index].section == "pmh" for f in meds)
    first = facts_for(case, "What brings you in today?")
    assert first and any(f.section == "complaint" for f in first)
    again = facts_for(case, "Is there anything else?", told={f.index for f in first})
    assert again and not {f.index for f in again} & {f.index for f in first}
    assert len(facts_for(case, "Tell me everything.")) <= 4


def test_a_grounded_patient_is_given_only_the_facts_that_answer_and_logs_them(demo):
    row, events = consult(demo["demo-007"], roles(ScriptedLLM(demo)))
    system = of(events, "llm_call", role="patient")[0]["messages"][0]["content"]
    assert "I am a 24-year-old man" not in system and "24-year-old man" in system  # who speaks, not the list
    assert "No regular medications" not in system  # a fact comes with the question that asks for it
    grounded = of(events, "patient_grounded")
    assert grounded and len(grounded) == len(of(events, "utterance", speaker="patient"))
    first_q = of(events, "llm_call", role="patient")[0]["messages"][-1]["content"]
    assert "(What you know that answers this:" in first_q
    assert row["status"] == "diagnosed"


def test_a_contradicting_reply_is_asked_again(demo):
    case = demo["demo-007"]  # the complaint is abdominal pain
    llm = Script(ScriptedLLM(demo), repeat=False, patient=["I have no pain at all in my tummy.",
                                             "A dull ache started around my belly button yesterday."])
    row, events = consult(case, roles(llm))
    rej = of(events, "reply_rejected", role="patient")
    assert [e["problem"] for e in rej] == ["contradicted"]
    calls = of(events, "llm_call", role="patient")
    assert "does not match what you know" in calls[1]["messages"][-1]["content"]
    said = [e["text"] for e in of(events, "utterance", speaker="patient")]
    assert said[0].startswith("A dull ache") and all("no pain at all" not in s for s in said)
    assert row["status"] == "diagnosed"


@pytest.mark.parametrize("bad,problem", [
    ("The patient has had pain around the navel since yesterday.", "third_person"),
    ("I think I have appendicitis, doctor.", "leak"),
])
def test_a_third_person_or_leaking_reply_is_asked_again(demo, bad, problem):
    llm = Script(ScriptedLLM(demo), repeat=False, patient=[bad, "It began around my belly button yesterday and moved."])
    row, events = consult(demo["demo-007"], roles(llm))
    assert [e["problem"] for e in of(events, "reply_rejected", role="patient")] == [problem]
    assert all(bad != e["text"] for e in of(events, "utterance", speaker="patient"))


def test_the_facts_are_the_reply_when_the_retries_are_spent(demo):
    llm = Script(ScriptedLLM(demo), patient=["The patient is feeling generally well today."])
    row, events = consult(demo["demo-007"], roles(llm))
    assert row["status"] == "diagnosed"  # the patient never fails the consultation
    fallbacks = of(events, "fallback_reply", role="patient")
    assert fallbacks
    said = of(events, "utterance", speaker="patient")
    assert all(e["source"] == "fallback" for e in said)
    voiced = {f.text for f in voiced_facts(demo["demo-007"])}
    first = fallbacks[0]["text"]
    assert any(v in first for v in voiced) and "the patient" not in first.lower()
    # what the doctor heard is what the patient's own conversation holds
    later = of(events, "llm_call", role="patient")[-1]["messages"]
    assert any(m["role"] == "assistant" and m["content"] == first for m in later)


def test_a_caregiver_answers_for_an_infant():
    case = _infant()
    v = voice_of(case)
    assert v.caregiver == "mother" and v.child == "my baby"
    system = patient_system(case, grounded=True)
    assert "the mother of a patient" in system
    texts = [f.text for f in voiced_facts(case)]
    assert "My baby has been vomiting after every feed for 4 days." in texts
    assert any(t.startswith("I report that she seems hungry") for t in texts)
    cases = {case.id: case}
    llm = Script(ScriptedLLM(cases), repeat=False, patient=["I have been vomiting after every feed.",
                                              "She has been vomiting after every feed for four days."])
    row, events = consult(case, roles(llm))
    assert [e["problem"] for e in of(events, "reply_rejected", role="patient")] == ["not_caregiver"]
    assert "what you have seen in your child" in of(events, "llm_call", role="patient")[1]["messages"][-1]["content"]


def test_agentclinic_protocol_and_the_switch_keep_the_case_facts_patient(demo):
    case = demo["demo-007"]
    for cfg in (CastConfig(prompt_style="agentclinic", guard_retries=None), CastConfig(patient_grounding=False)):
        row, events = consult(case, roles(ScriptedLLM(demo)), cast=cfg)
        assert not of(events, "patient_grounded")
        system = of(events, "llm_call", role="patient")[0]["messages"][0]["content"]
        assert "No regular medications" in system


def test_the_run_spec_key(demo):
    from medsim.spec import build_spec

    assert build_spec(None, {}).protocol.patient_grounding is True
    assert build_spec(None, {"protocol.name": "agentclinic"}).protocol.patient_grounding is False
    assert build_spec(None, {"protocol.patient_grounding": False}).protocol.patient_grounding is False


def test_grounded_wraps_any_participant(demo):
    """Grounded needs only a participant: a fallback with no conversation to commit to."""
    from agents.events import ListSink
    from agents.participants.base import Observation, RoleFailure

    class Failing:
        role = "patient"

        def act(self, obs):
            raise RoleFailure("patient", "refusal", 3)

    sink = ListSink()
    turn = Grounded(Failing(), demo["demo-007"], sink).act(Observation(turn=1, text="What brings you in today?"))
    assert turn.source == "fallback" and ("navel" in turn.text.lower() or "belly" in turn.text.lower())


def test_the_mothers_own_history_is_the_caregivers_voice():
    """"I had gestational diabetes" is the mother telling her own pregnancy (caregiver
    voice); "I have been vomiting" is the infant's symptom told as hers (not_caregiver)."""
    from dataclasses import replace as dc_replace

    base = _infant()
    case = dc_replace(base, id="infant-2", patient={**base.patient, "Past_Medical_History":
                                                   "Born at term. The mother had gestational diabetes."})
    assert check_patient(case, "Any problems in the pregnancy?", "I had gestational diabetes.").voice == "caregiver"
    assert check_patient(case, "What is the matter?", "I have been vomiting after every feed.").voice == "not_caregiver"
    assert "I had gestational diabetes." in [f.text for f in voiced_facts(case)]


def test_a_bare_no_that_denies_the_facts_given_is_asked_again(demo):
    """"No." to "Any other symptoms?" when the facts given say there are: contradicted; "No."
    to "Do you smoke?" for a non-smoker stands."""
    from agents.participants.base import Observation
    from agents.participants.grounded import faithful
    from agents.patient_voice import grounded_message

    case = demo["demo-007"]
    check = faithful(case)
    q = "Do you have any other symptoms?"
    obs = Observation(turn=2, text=grounded_message(q, facts_for(case, q)), answering=q)
    assert check("No.", obs) == "contradicted"
    assert check("I do not have any other symptoms.", obs) == "contradicted"  # (a live run's reply)
    assert check("Nothing else, doctor.", obs) == "contradicted"
    assert check("No cough.", obs) is None  # a denial of something in particular: the pre-check judges it (the case says so)
    q3 = "Is there anything else you would like to tell me about your symptoms?"  # (a live run's question)
    obs3 = Observation(turn=2, text=grounded_message(q3, facts_for(case, q3)), answering=q3)
    assert check("No.", obs3) == "contradicted"
    q2 = "Do you smoke?"
    obs2 = Observation(turn=3, text=grounded_message(q2, facts_for(case, q2)), answering=q2)
    assert check("No.", obs2) is None


def test_a_patient_speaking_as_the_helper_is_a_role_break():
    from agents.guards import check_reply

    assert check_reply("patient", "I'm here to help you with your Crohn disease.", [], "Hello") == "role_break"
    assert check_reply("patient", "I came in because my Crohn disease is worse.", [], "Hello") is None


@pytest.mark.parametrize("reply,problem", [
    ("Hello, how are you feeling? My main problem is tummy pain.", "echo"),  # the doctor's question said back
    ("You have not noticed any information on the baby's name.", "echo"),  # the instruction said back
    ("I haven't noticed that.", None),
])
def test_a_patient_echoing_the_question_or_its_instruction_is_asked_again(reply, problem):
    from agents.guards import check_reply

    assert check_reply("patient", reply, [], "Hello, how are you feeling?\n(What you know that answers this:") == problem


def test_a_measured_value_the_case_does_not_give_is_invented(demo):
    case = demo["demo-007"]
    assert check_patient(case, "What is your temperature?", "My temperature is 98.6°F.").claim_verdict == "unsupported"
    assert check_patient(case, "What is your temperature?", "I feel feverish.").claim_verdict == "supported"


@pytest.mark.parametrize("pmh", [
    {},  # the medicine in the history, known by its name's stem
    {"Past_Medical_History": {"Conditions": "Crohn disease", "Medications": ["Mesalamine"]}},  # a list of medicines
])
def test_a_medicine_named_in_the_case_answers_a_question_about_medicines(pmh):
    # seen: "Yes, I have Crohn disease ..., and I take natalizumab" rejected as invented (no fact
    # held 'medicine'), then "No medical conditions, ..." accepted; a medicine's name is one
    history = "It began a week ago." if pmh else "She has been on natalizumab for the past year."
    case = Case(id="med-1", source="test", objective="Evaluate new unsteadiness.", demographics="35-year-old woman",
                diagnosis="Progressive multifocal leukoencephalopathy",
                patient={"Demographics": "35-year-old woman", "History": history,
                         "Symptoms": {"Primary_Symptom": "Unsteady walking"}, **pmh},
                exam={}, tests={})
    q = "Do you take any medicines?"
    assert check_patient(case, q, "Yes.").claim_verdict == "supported"
    assert check_patient(case, q, "I don't take any medicines.").claim_verdict == "contradicted"
    # a case that names no medicine: the same denial is what the case allows, and "Yes" is invented
    plain = replace(case, patient={"Demographics": "35-year-old woman", "History": "It began a week ago.",
                                   "Symptoms": {"Primary_Symptom": "Unsteady walking"}})
    assert check_patient(plain, q, "I don't take any medicines.").claim_verdict == "supported"
    assert check_patient(plain, q, "Yes.").claim_verdict == "unsupported"


@pytest.mark.parametrize("frame", ["I came in today because {}", "Additionally, {}", "Well, basically, {}",
                                   "Honestly, especially lately, {}"])
def test_a_fact_said_with_a_connective_is_still_the_fact(frame):
    """Over every shipped (and AgentClinic) case: a voiced fact joined or softened as people
    talk is what the case says (seen: "I came in today because I've been experiencing
    fatigue, ..." rejected as invented for "because", then the patient, told to say only
    the facts, spoke of "the fact given in the question" for four turns); a fact the
    check already doubts on its own is left out."""
    bad, n = [], 0
    for case in _all_cases():
        for f in voiced_facts(case):
            if f.section == "demographics" or check_patient(case, "Tell me more.", f.text).claim_verdict in (
                    "unsupported", "contradicted"):
                continue
            n += 1
            said = frame.format(f.text[0].lower() + f.text[1:])
            got = check_patient(case, "Tell me more.", said)
            if got.claim_verdict in ("unsupported", "contradicted"):
                bad.append((case.id, said, [c.why for c in got.claims if c.verdict == got.claim_verdict]))
    assert n > 100
    assert not bad, bad[:5]


@pytest.mark.parametrize("reply", ["I have no significant past medical history.", "No significant past medical history.",
                                   "I don't have any serious previous medical problems."])
def test_no_past_history_is_what_a_case_without_one_says(reply):
    # seen: "I have no significant past medical history." read as "I have" (a yes) plus an
    # unknown 'medicine', and rejected as invented, in a case whose history is "No significant
    # past medical history"
    case = Case(id="pmh-1", source="test", objective="Evaluate double vision.", demographics="35-year-old woman",
                diagnosis="Myasthenia gravis",
                patient={"Demographics": "35-year-old woman", "History": "Double vision for a month.",
                         "Past_Medical_History": "No significant past medical history."}, exam={}, tests={})
    assert check_patient(case, "Do you have any medical conditions, or take any medicines?",
                         reply).claim_verdict == "supported"
    ill = replace(case, patient={**case.patient, "Past_Medical_History": "Type 2 diabetes."})
    assert check_patient(ill, "Do you have any medical conditions?", "Yes, I have diabetes.").claim_verdict == "supported"
    # however many words qualify it, a denial of any past history is never what such a case supports
    assert check_patient(ill, "Do you have any medical conditions?", reply).claim_verdict != "supported"
