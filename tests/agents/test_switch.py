from agents.cases import load_cases
from agents.consultation import ConsultationConfig, run_consultation
from agents.events import DictSink
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, Handback, HumanParticipant, Switchable, llm_cast
from agents.participants.human import ask, order
from tests.helpers import of, roles


class Desk:
    """A person at a desk: answers from a list; None hands the role back mid-turn."""

    def __init__(self, answers):
        self.answers = list(answers)

    def doctor_action(self, obs):
        a = self.answers.pop(0)
        if a is None:
            raise Handback()
        return a

    def reply(self, role, obs):
        return self.answers.pop(0)


def _run(mode, answers, human_turns):
    cases, _ = load_cases("demo")
    case = cases[0]
    sink = DictSink()
    cast = llm_cast(case, roles(ScriptedLLM({c.id: c for c in cases})), CastConfig(doctor_mode=mode), sink)
    turn = {"n": 0}

    def human_on():
        turn["n"] += 1
        return turn["n"] in human_turns
    cast["doctor"] = Switchable("doctor", cast["doctor"], HumanParticipant("doctor", Desk(answers)), human_on)
    run_consultation(case, cast, ConsultationConfig(), sink)
    return sink.events


def test_the_ai_inherits_the_persons_turns_in_its_own_words():
    for mode, want in (("structured", ['{"action": "ask_patient", "text": "Since when?"}',
                                       '{"action": "order_test", "text": "Vital signs"}']),
                       ("markers", ["Since when?", "REQUEST TEST: Vital signs"])):
        ev = _run(mode, [ask("Since when?"), order("Vital signs")], human_turns={1, 2})
        sources = [e["source"] for e in of(ev, "utterance", speaker="doctor")]
        assert sources[:2] == ["human", "human"] and set(sources[2:]) == {"llm"}
        first_ai = of(ev, "llm_call", role="doctor")[0]
        assert [m["content"] for m in first_ai["messages"] if m["role"] == "assistant"] == want
        assert of(ev, "consultation_ended")[0]["status"] == "diagnosed"


def test_handing_back_mid_turn_leaves_that_turn_to_the_ai():
    ev = _run("structured", [ask("Since when?"), None], human_turns={1, 2})
    doctor = of(ev, "utterance", speaker="doctor")
    assert [e["source"] for e in doctor[:2]] == ["human", "llm"] and doctor[1]["turn"] == 2
