"""medsim's doctor asks the patient in the second person (agents.addressing): "the
patient" said to the patient's face is "you", with the verb made to agree."""
from __future__ import annotations

import json

import pytest

from agents.addressing import to_patient
from agents.events import DictSink
from agents.llm.base import GenerateParams, Output
from agents.participants.base import Observation
from agents.participants.llm import LLMDoctor


@pytest.mark.parametrize("asked, said", [
    ("What is the patient's name?", "What is your name?"),
    ("How long has the patient been experiencing wrist pain?", "How long have you been experiencing wrist pain?"),
    ("Does the patient have any other symptoms?", "Do you have any other symptoms?"),
    ("How is the patient feeling today?", "How are you feeling today?"),
    ("Is the patient experiencing any nausea?", "Are you experiencing any nausea?"),
    ("Was the patient ever hospitalised?", "Were you ever hospitalised?"),
    ("Isn't the patient allergic to anything?", "Aren't you allergic to anything?"),
    ("When did the patient first notice the rash?", "When did you first notice the rash?"),
    ("Can this patient walk upstairs?", "Can you walk upstairs?"),
    ("What brings the patient here today?", "What brings you here today?"),
    ("Does anything make the patient feel better?", "Does anything make you feel better?"),
    ("Which medicines the patient takes daily?", "Which medicines you take daily?"),
    ("Tell me whether the patient smokes.", "Tell me whether you smoke."),
    ("Is the patient's pain worse at night?", "Is your pain worse at night?"),
    ("The patient's father: is he alive?", "Your father: is he alive?"),
    ("Has the patient hurt himself?", "Have you hurt yourself?"),
])
def test_the_patient_is_you(asked, said):
    assert to_patient(asked) == said


@pytest.mark.parametrize("asked", [
    "Have you noticed any weight loss?", "Does your mother have diabetes?", "Is your sister a patient here?",
    "Did your brother hurt himself?", "Any patients at your work with the same cough?", "",
])
def test_a_question_without_the_patient_is_left_as_it_is(asked):
    assert to_patient(asked) == asked


class _Says:
    """An LLM that answers every call with one reply."""
    name = "says"

    def __init__(self, reply: str):
        self.reply = reply

    def generate(self, messages, params, ctx):
        return Output(text=self.reply, model=self.name)


def _doctor(reply: str, mode: str) -> LLMDoctor:
    return LLMDoctor("doctor", _Says(reply), "system", GenerateParams(), "c1", DictSink(), mode=mode)


def test_medsim_s_doctor_asks_in_the_second_person_and_the_note_says_so():
    reply = json.dumps({"action": "ask_patient", "text": "How long has the patient had the cough?"})
    doctor = _doctor(reply, "structured")
    turn = doctor.act(Observation(turn=1, text="Patient: hello"))
    assert turn.action.text == turn.said == "How long have you had the cough?"
    assert "you" in turn.action.note
    assert doctor.history[-1].content == reply  # its own conversation keeps what the model wrote


def test_agentclinic_s_doctor_is_left_as_it_speaks():
    reply = "How long has the patient had the cough?"
    turn = _doctor(reply, "markers").act(Observation(turn=1, text="Patient: hello"))
    assert turn.action.text == reply
