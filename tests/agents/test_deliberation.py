"""The diagnosis strategies (CoT, a voting panel, the role-split panel), costs and the
budget, no technician, static QA: each switch and what it leaves in the log."""
import json

import pytest

from agents.cases import load_cases
from agents.consultation import ConsultationConfig
from agents.costs import case_cost, price_table
from agents.deliberation import DeliberationConfig, Deliberating, ROLE_PANEL, group_votes
from agents.llm.base import Output
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, llm_cast
from tests.helpers import consult, of, roles


@pytest.fixture(scope="module")
def demo():
    cases, _ = load_cases("demo")
    return {c.id: c for c in cases}


class Panel:
    """A doctor model for panel tests: the consultation from the scripted fake, the
    panel's answers from the given lists (by what the prompt asks)."""

    name = "panel"

    def __init__(self, inner, votes, consensus="Chair's pick", differential=("A", "B", "C")):
        self.inner, self.votes, self.consensus, self.differential = inner, list(votes), consensus, differential
        self.asked = []

    def generate(self, messages, params, ctx):
        last = messages[-1].content
        schema = json.loads(params.response_schema) if params.response_schema else {}
        props = schema.get("properties", {})
        if "differential" in props:
            self.asked.append("differential")
            return Output(json.dumps({"differential": list(self.differential)}), self.name)
        if "reasoning" in props:
            self.asked.append("member")
            return Output(json.dumps({"reasoning": "because", "diagnosis": self.votes.pop(0)}), self.name)
        if "The votes are split" in last:
            self.asked.append("consensus")
            return Output(json.dumps({"action": "diagnose", "text": self.consensus}), self.name)
        return self.inner.generate(messages, params, ctx)


def _run(demo, case_id, llm, *, cot=False, ensemble=0, panel="off", rules=ConsultationConfig(), cast=CastConfig()):
    case = demo[case_id]
    from agents.events import DictSink

    sink = DictSink()
    members = llm_cast(case, roles(ScriptedLLM(demo), doctor=llm), cast, sink)
    members["doctor"] = Deliberating(members["doctor"], case, sink, DeliberationConfig(cot=cot, ensemble=ensemble,
                                                                                         panel=panel))
    from agents.consultation import run_consultation

    out = run_consultation(case, members, rules, sink)
    return out, sink.events


def test_votes_are_grouped_by_meaning():
    groups = group_votes(["Pulmonary embolism", "PE", "pulmonary emboli, bilateral", "Pneumonia", "Pneumonia."])
    assert [(g["diagnosis"], g["votes"]) for g in groups] == [("Pulmonary embolism", 3), ("Pneumonia", 2)]


def test_a_five_member_panel_with_three_agreeing_votes_in_other_words(demo):
    llm = Panel(ScriptedLLM(demo), ["Acute appendicitis", "Gastroenteritis", "appendicitis, acute",
                                    "Ovarian torsion", "Appendicitis"])
    out, ev = _run(demo, "demo-007", llm, ensemble=5)
    vote = of(ev, "panel_vote")[0]
    assert not vote["tie"] and vote["groups"][0]["votes"] == 3 and vote["decision"] == "Acute appendicitis"
    assert out.diagnosis == "Acute appendicitis" and llm.asked.count("member") == 5 and "consensus" not in llm.asked
    assert len(of(ev, "reasoning")) == 5
    # members saw the differential in different orders
    orders = [c["messages"][-1]["content"] for c in of(ev, "llm_call", role="doctor") if "You are doctor" in
              c["messages"][-1]["content"]]
    assert len({o.split("in this order: ")[1].split(".")[0] for o in orders}) >= 3


def test_a_tie_goes_to_the_chairs_consensus(demo):
    llm = Panel(ScriptedLLM(demo), ["Gout", "Gout", "Septic arthritis", "septic arthritis"], consensus="Gout")
    out, ev = _run(demo, "demo-016", llm, ensemble=4)
    vote = of(ev, "panel_vote")[0]
    assert vote["tie"] and "consensus" in llm.asked and vote["decision"] == "Gout" == out.diagnosis
    consensus_prompt = [c for c in of(ev, "llm_call", role="doctor") if "The votes are split" in c["messages"][-1]["content"]]
    assert "Septic arthritis" in consensus_prompt[0]["messages"][-1]["content"]


def test_a_vote_that_names_a_symptom_is_set_aside(demo):
    # three members vote for symptoms or a test; the two real diagnoses decide, no tie
    llm = Panel(ScriptedLLM(demo), ["Upper limb weakness", "Gout", "Joint pain", "Gout", "Synovial fluid analysis"])
    out, ev = _run(demo, "demo-016", llm, ensemble=5)
    vote = of(ev, "panel_vote")[0]
    assert [v.get("set_aside") for v in vote["votes"]] == ["not_a_condition", None, "not_a_condition", None,
                                                          "not_a_condition"]
    assert [(g["diagnosis"], g["votes"]) for g in vote["groups"]] == [("Gout", 2)]
    assert not vote["tie"] and vote["decision"] == "Gout" == out.diagnosis and "consensus" not in llm.asked


def test_a_panel_answer_that_is_no_condition_leaves_the_doctors_own(demo):
    # a tie, and the chair's consensus names a symptom: the doctor's own diagnosis stands
    llm = Panel(ScriptedLLM(demo), ["Gout", "Septic arthritis"], consensus="Knee pain")
    own, _ = _run(demo, "demo-016", ScriptedLLM(demo))
    out, ev = _run(demo, "demo-016", llm, ensemble=2)
    assert of(ev, "panel_vote")[0]["decision"] == "Knee pain"
    fb = of(ev, "fallback_reply", role="doctor")
    assert len(fb) == 1 and "'Knee pain' is not a condition's name" in fb[0]["reason"]
    assert out.diagnosis == own.diagnosis and own.diagnosis != "Knee pain"


def test_cot_reasons_in_a_separate_call_that_never_reaches_the_patient(demo):
    out, ev = _run(demo, "demo-001", ScriptedLLM(demo), cot=True)
    reasoning = of(ev, "reasoning")
    assert len(reasoning) == 1 and reasoning[0]["strategy"] == "cot" and reasoning[0]["text"]
    think = [c for c in of(ev, "llm_call", role="doctor") if "think it through" in c["messages"][-1]["content"]]
    assert len(think) == 1 and think[0]["params"]["max_tokens"] >= 200 and think[0]["params"]["response_schema"] is None
    told_patient = " ".join(m["content"] for c in of(ev, "llm_call", role="patient") for m in c["messages"])
    assert reasoning[0]["text"] not in told_patient
    assert all(reasoning[0]["text"] not in u["text"] for u in of(ev, "utterance"))
    assert out.status == "diagnosed"


def test_the_role_split_panel_speaks_in_order_and_logs_each(demo):
    out, ev = _run(demo, "demo-001", ScriptedLLM(demo), panel="roles")
    steps = of(ev, "panel_step")
    assert [s["role"] for s in steps] == [r for r, _, _ in ROLE_PANEL]
    assert steps[1]["text"].startswith("Complete blood count")  # the test chooser picks from the catalogue
    last = [c for c in of(ev, "llm_call", role="doctor") if "checklist" in c["messages"][-1]["content"]][0]
    assert "challenger" in last["messages"][-1]["content"]  # later roles hear the earlier ones
    assert out.diagnosis and out.status == "diagnosed"


def test_switches_leave_their_mark_in_the_log(demo):
    case = demo["demo-001"]
    base_row, base = consult(case, roles(ScriptedLLM(demo)))
    assert not of(base, "test_refused") and not of(base, "reasoning") and of(base, "test_result")
    # no technician: orders refused, the doctor told so, no technician call
    row, ev = consult(case, roles(ScriptedLLM(demo)), cast=CastConfig(measurement=False),
                      rules=ConsultationConfig(measurement=False))
    assert of(ev, "test_refused") and not of(ev, "test_result") and not of(ev, "llm_call", role="measurement")
    assert "no technician" in of(ev, "llm_call", role="doctor")[0]["messages"][0]["content"]
    # static QA: one turn with the whole record
    row, ev = consult(case, roles(ScriptedLLM(demo)), cast=CastConfig(static=True, max_turns=1, measurement=False),
                      rules=ConsultationConfig(max_turns=1, min_gathering=0, measurement=False))
    calls = of(ev, "llm_call", role="doctor")
    assert row["turns"] == 1 and len(calls) == 1 and "Test results:" in calls[0]["messages"][0]["content"]
    assert row["diagnosis"]


def test_costs_add_up_from_the_table_and_the_budget_caps_them(demo):
    case = demo["demo-001"]
    t = price_table()
    row, ev = consult(case, roles(ScriptedLLM(demo)))
    tests = [e["test"] for e in of(ev, "test_requested")]
    assert row["cost"] == pytest.approx(t.visit + sum(t.test_price(x)[0] for x in tests))
    assert row["cost_tests"] == pytest.approx(sum(t.test_price(x)[0] for x in tests)) and row["cost_tests"] > 0
    # a budget that covers the visit and one cheap test
    budget = t.visit + 30
    row, ev = consult(case, roles(ScriptedLLM(demo)), rules=ConsultationConfig(budget=budget))
    refused = of(ev, "budget_refused")
    assert refused and row["cost"] <= budget
    assert all(e["spent"] + e["price"] > budget for e in refused)
    over = [c for c in of(ev, "llm_call", role="doctor") if c["messages"][-1]["content"].startswith("Not done:")]
    assert over and "budget" in over[0]["messages"][-1]["content"]
    assert case_cost(ev)["cost"] == row["cost"]


def test_the_panel_costs_short_continuations_on_a_shared_prefix(demo):
    """Members run on the doctor's conversation: each call sends the whole prompt but an
    in-process model would evaluate only the new tokens (here: members send the same prefix)."""
    out, ev = _run(demo, "demo-007", ScriptedLLM(demo), ensemble=5)
    member_calls = [c for c in of(ev, "llm_call", role="doctor") if "You are doctor" in c["messages"][-1]["content"]]
    prefixes = {json.dumps(c["messages"][:-1]) for c in member_calls}
    assert len(member_calls) == 5 and len(prefixes) == 1
