import pytest

from agents.events import JudgeDecision, ListSink
from agents.judge import JudgeUnparsed, judge_diagnosis, parse_verdict, precheck
from agents.llm.base import GenerateParams, Output


@pytest.mark.parametrize("dx,truth,correct,rule", [
    (None, "Gout", False, "no_diagnosis"),
    ("  ", "Gout", False, "no_diagnosis"),
    ("myasthenia gravis.", "Myasthenia gravis", True, "normalised_equal"),
    ("Acute appendicitis", "Appendicitis", True, "core_equal"),
    ("PML", "Progressive multifocal encephalopathy (PML)", True, "abbreviation"),
    ("Progressive multifocal encephalopathy", "Progressive multifocal encephalopathy (PML)", True, "core_equal"),
    ("Tension headache", "Migraine", None, "undecided"),
    ("I'm here to talk about something on my mind", "Migraine", False, "not_a_diagnosis"),
    ("No pulmonary embolism", "Pulmonary embolism", False, "not_a_diagnosis"),
    ("Could it be a migraine?", "Migraine", False, "not_a_diagnosis"),
    ("My diagnosis is a suspected case of migraine", "Migraine", True, "normalised_equal"),
    ("The patient is diagnosed with pain which could be due to causes such as appendicitis, pancreatitis",
     "Acute pancreatitis", False, "not_a_diagnosis"),
    ("Acute bilateral pulmonary emboli with small right lower lobe infarct, no CT evidence of right heart strain",
     "Pulmonary embolism", None, "undecided"),
])
def test_precheck(dx, truth, correct, rule):
    v = precheck(dx, truth)
    assert (v.correct, v.rule) == (correct, rule)


@pytest.mark.parametrize("reply,verdict", [
    ("Yes.", True), ("yes, they match", True), ("**Yes** - same condition", True), ("YES", True),
    ("Correct: both describe PE.", True), ("No.", False), ("no, they differ", False),
    ("Not the same: one is viral.", False), ("The diagnoses do not match.", False),
    ("They match; the same condition.", True), ("Hmm, hard to say.", None),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply)[0] is verdict


class Canned:
    name = "canned"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = 0

    def generate(self, messages, params, ctx):
        self.calls += 1
        return Output(text=self.replies.pop(0), model=self.name)


def _judge(dx, truth, llm):
    sink = ListSink()
    v = judge_diagnosis(dx, truth, llm=llm, params=GenerateParams(), case_id="c", turn=3, sink=sink)
    return v, sink


def test_no_diagnosis_never_correct_even_if_judge_says_yes():
    llm = Canned("Yes.")
    v, sink = _judge(None, "Gout", llm)
    assert v.correct is False and llm.calls == 0
    assert [e for e in sink.events if isinstance(e, JudgeDecision)][0].correct is False


def test_llm_judge_rationale_is_logged_and_retry_on_garbage():
    llm = Canned("Well...", "Yes, they match: both are PE.")
    v, sink = _judge("Lung clot", "Pulmonary embolism", llm)
    assert v.correct is True and v.method == "llm" and llm.calls == 2
    dec = [e for e in sink.events if isinstance(e, JudgeDecision)][0]
    assert "both are PE" in dec.rationale


def test_unparseable_judge_raises():
    with pytest.raises(JudgeUnparsed):
        _judge("Lung clot", "Pulmonary embolism", Canned("Hmm", "Perhaps"))
