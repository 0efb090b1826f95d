"""The scripted fake as a partner for a person: asked in a person's own words, the
patient goes through the case's facts instead of repeating one answer (the loop guard
would end the consultation)."""
from agents.cases.registry import load_cases
from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.scripted import ScriptedLLM


def test_scripted_patient_never_repeats_itself_to_free_questions():
    cases, _ = load_cases("demo")
    case = next(c for c in cases if c.id == "demo-007")
    llm = ScriptedLLM({c.id: c for c in cases})
    messages = [Message("system", "You are the patient.")]
    answers = []
    for q in ["Where does it hurt?", "Since when?", "Any fever?", "Anything else?", "And?", "Really?", "Sure?"]:
        messages.append(Message("user", q))
        out = llm.generate(messages, GenerateParams(), CallContext("patient", case.id))
        answers.append(out.text)
        messages.append(Message("assistant", out.text))
    assert len(set(answers)) == len(answers), answers
    assert answers[0].startswith("I have also noticed")  # the first unrecognised question: the other symptoms
