"""The OSCE suite's core: personas, rubric math, the judge scorer, the stop detector,
the encounter and the information asymmetry."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.events import ConsultationEnded, DictSink, Utterance
from agents.llm.base import GenerateParams, LLMError, Output
from agents.scorers import Transcript, score_case
from agents.suites.osce import Encounter, EncounterConfig, StopDetector, doctor_system, osce_cast
from agents.suites.osce_judge import OsceRubricScorer, parse_judgement
from agents.suites.osce_personas import (GENDERS, MBTI_TYPES, PersonaError, load_osce_cases, load_traits,
                                         parse_personas, resolve_persona)
from agents.suites.osce_rubric import category_scores, cumulative, load_rubric, weighted_total
from agents.suites.osce_scripted import OsceScriptedLLM
from agents.suites.osce_stop import detect_by_rules, split_marker

REF = Path(__file__).resolve().parents[3] / "shared" / "data" / "osce"
CODES = ["LUNG", "PNEUMO"]


# -- personas -----------------------------------------------------------------------------
def test_shipped_cases_and_traits():
    cases = load_osce_cases()
    assert sorted(cases) == CODES
    t = load_traits()
    assert sorted(t.mbti) == sorted(MBTI_TYPES) and sorted(t.gender) == sorted(GENDERS)
    assert "VATS" in cases["PNEUMO"].treatment and "lobectomy" in cases["LUNG"].treatment.lower()


def test_persona_ids():
    assert [r.id for r in parse_personas("INTJ_M_PNEUMO, esfp_f_lung", CODES)] == ["INTJ_M_PNEUMO", "ESFP_F_LUNG"]
    r = parse_personas("INTJ_PNEUMO", CODES)[0]
    assert (r.mbti, r.gender, r.case) == ("INTJ", None, "PNEUMO")
    every = parse_personas("all", CODES)
    assert len(every) == 16 * 2 * 2 and len({r.id for r in every}) == 64 and all(r.gender for r in every)
    no_g = parse_personas("all_no_gender", CODES)
    assert len(no_g) == 32 and all(r.gender is None for r in no_g)
    assert len(parse_personas("all,INTJ_M_PNEUMO", CODES)) == 64  # each once
    a, b = parse_personas("random", CODES, seed=1), parse_personas("random", CODES, seed=1)
    assert a == b and a[0].mbti in MBTI_TYPES and a[0].gender in GENDERS and a[0].case in CODES
    assert {parse_personas("random", CODES, seed=s)[0].id for s in range(20)} != {a[0].id}  # the seed draws
    assert parse_personas("random_no_gender", CODES, seed=2)[0].gender is None


def test_gender_drawn_from_seed():
    cases, traits = load_osce_cases(), load_traits()
    ref = parse_personas("INTJ_PNEUMO", CODES)[0]
    got = {s: resolve_persona(ref, cases, traits, seed=s).gender for s in range(12)}
    assert got == {s: resolve_persona(ref, cases, traits, seed=s).gender for s in range(12)}
    assert set(got.values()) == {"M", "F"}
    p = resolve_persona(ref, cases, traits, seed=0)
    assert p.gender_drawn and p.demographics.startswith("24-year-old ")


@pytest.mark.parametrize("bad, says", [
    ("INTX_M_PNEUMO", "did you mean INTP"),
    ("INTJ_M_PNEUMA", "did you mean PNEUMO"),
    ("al", "did you mean all"),
    ("all_no_gendr", "did you mean all_no_gender"),
    ("INTJ_Q_LUNG", "unknown gender 'Q'"),
    ("", "no personas given"),
])
def test_bad_persona_ids(bad, says):
    with pytest.raises(PersonaError, match=says):
        parse_personas(bad, CODES)


def test_osce_project_case_template():
    if not (REF / "prompts" / "cases").is_dir():
        pytest.skip(f"reference data not present at {REF}")
    cases = load_osce_cases(REF / "prompts")  # the prompts/ folder or prompts/cases/ itself
    assert {"PNEUMO", "LUNG"} <= set(cases)
    c = cases["PNEUMO"]
    assert c.treatment and c.benefits and c.alternatives and c.fears
    brief = " ".join([c.diagnosis, c.treatment, *c.benefits, *c.alternatives])
    assert not any(f in brief for f in c.fears)
    assert c.told not in brief  # the closing line, written to the patient, stays with the patient
    assert len(parse_personas("all", list(cases))) == 16 * 2 * len(cases)


# -- rubric and scoring math ---------------------------------------------------------------
def test_shipped_rubric():
    r = load_rubric()
    assert [c.number for c in r.criteria] == list(range(1, 31))
    assert {c.category for c in r.criteria if c.number <= 10} == {"empathy"}
    assert {c.category for c in r.criteria if 11 <= c.number <= 20} == {"persuasion"}
    assert {c.category for c in r.criteria if c.number >= 21} == {"safety"}
    assert all(c.good and c.bad for c in r.criteria)


def test_reference_rubric_reads():
    f = REF / "agent_context" / "judge_criteria.csv"
    if not f.is_file():
        pytest.skip(f"reference data not present at {f}")
    r = load_rubric(f)
    assert len(r.criteria) == 30 and len(r.by_category("safety")) == 10


def test_one_time_item_stays_met():
    # allergies (25) asked in round 2 only; a judge that looks at the latest message says not_met afterwards
    rounds = [{25: "not_relevant", 22: "not_met"}, {25: "met"}, {25: "not_met", 22: "met"}, {}]
    states = cumulative(rounds)
    assert [s[25] for s in states] == ["not_relevant", "met", "met", "met"]
    assert [s[22] for s in states] == ["not_met", "not_met", "met", "met"]


def test_category_scores_and_denominator_zero():
    rubric = load_rubric()
    state = {1: "met", 2: "met", 3: "not_met", 4: "not_relevant", 11: "not_met", 25: "met"}
    s = category_scores(state, rubric)
    assert s["empathy"] == {"score": round(2 / 3 * 10, 3), "met": 2, "not_met": 1, "not_relevant": 7}
    assert s["persuasion"]["score"] == 0.0
    assert s["safety"]["score"] == 10.0
    assert category_scores({}, rubric)["empathy"]["score"] is None  # nothing relevant yet: not assessable


def test_weighted_total():
    assert weighted_total({"empathy": 10.0, "persuasion": 5.0, "safety": 0.0}) == 5.0  # 3 + 2 + 0
    assert weighted_total({"empathy": 10.0, "persuasion": None, "safety": 5.0}) == 7.5  # (3 + 1.5) / 0.6
    assert weighted_total({"empathy": None, "persuasion": None, "safety": None}) is None


def test_parse_judgement_variants():
    crit = load_rubric().by_category("safety")[:3]  # 21, 22, 23
    assert parse_judgement('```json\n{"c21": "Met", "c22": "not met", "c23": "N/A"}\n```', crit) == (
        {21: "met", 22: "not_met", 23: "not_relevant"}, [])
    assert parse_judgement('{"c21": "met", "c22": "not_', crit) == ({21: "met"}, [22, 23])  # cut off
    assert parse_judgement("I think so.", crit) == ({}, [21, 22, 23])


# -- the judge scorer over a handmade log -----------------------------------------------------
def _log(lines: list[tuple[str, str]], status: str = "undecided") -> list[dict]:
    sink = DictSink()
    for i, (doc, pat) in enumerate(lines, start=1):
        sink.emit(Utterance(turn=i, speaker="doctor", addressee="patient", text=doc))
        sink.emit(Utterance(turn=i, speaker="patient", addressee="doctor", text=pat))
    sink.emit(ConsultationEnded(status=status, turns=len(lines), diagnosis=None, tests_requested=[], error=None,
                                failure=None))
    return sink.events


class LatestMessageJudge:
    """Judges only the doctor's latest words (as OSCE-Project does): allergies are met
    only in the round they are asked."""

    name = "latest"

    def __init__(self):
        self.asked: list[list[str]] = []

    def generate(self, messages, params, ctx):
        keys = list(json.loads(params.response_schema)["properties"])
        self.asked.append(keys)
        last = [ln for ln in messages[-1].content.splitlines() if ln.startswith("Doctor: ")][-1].lower()
        out = {k: ("met" if (k == "c25" and "allerg" in last) or (k == "c22" and "risk" in last) else "not_met")
               for k in keys}
        return Output(text=json.dumps(out), model="latest")


def test_scorer_keeps_one_time_item_met():
    events = _log([("Hello, how can I help?", "I'm scared."),
                   ("Do you have any allergies?", "No."),
                   ("The main risks are bleeding and infection.", "I see.")])
    judge = LatestMessageJudge()
    sink = DictSink()
    s = OsceRubricScorer(judge)(None, Transcript.from_events(events, case_id="X"), sink)
    assert s.details["criteria"]["25"] == "met" and s.details["criteria"]["22"] == "met"
    per = s.details["per_round"]
    assert per[0]["safety"] == 0.0
    assert per[1]["safety"] == 1.0 and per[2]["safety"] == 2.0  # 25 stays met in round 3
    assert "c25" in judge.asked[5] and not any("c25" in keys for keys in judge.asked[6:])  # met: not asked again
    assert s.value == per[-1]["total"]
    assert s.details["feedback_method"] == "rule-derived from the criteria"
    assert any("allergies" in x for x in s.details["strengths"]) and s.details["suggestions"]
    assert any(x.startswith("round 2: met 25") for x in s.details["key_moments"])
    rounds = [e for e in sink.events if e["type"] == "osce_round"]
    assert len(rounds) == 9 and {e["method"] for e in rounds} == {"llm"}


class Garbage:
    name = "garbage"

    def generate(self, messages, params, ctx):
        return Output(text="I'd rather not say.", model="garbage")


class Dead:
    name = "dead"

    def generate(self, messages, params, ctx):
        raise LLMError("connection refused", backend="dead", transient=False)


def test_scorer_unreadable_judge_is_an_error_not_a_score():
    events = _log([("Hello.", "Hi.")])
    for judge in (Garbage(), Dead()):
        sink = DictSink()
        s = OsceRubricScorer(judge)(None, Transcript.from_events(events, case_id="X"), sink)
        assert s.value is None and s.error and s.error.startswith("judge failed")
        assert {e["method"] for e in sink.events if e["type"] == "osce_round"} == {"unjudged"}
    s = OsceRubricScorer(Dead())(None, Transcript.from_events(_log([("a", "b")], status="error"), case_id="X"), DictSink())
    assert s.value is None and s.error is None and "skipped" in s.details


# -- the stop detector -------------------------------------------------------------------------
@pytest.mark.parametrize("line, decision", [
    ("Okay. I'll do it. [DECISION: ACCEPT]", "accepted"),
    ("Fine then **Decision: accept**", "accepted"),
    ("(decision - accepted)", "accepted"),
    ("I need to think. [DECISION: LEAVE]", "left"),
    ("[decision: leave]", "left"),
    ("Thank you, but I'll get a second opinion first.", "left"),
    ("I want to get a second opinion before anything else.", "left"),
    ("I won't have the operation. Goodbye.", "left"),
    ("All right, I'll go ahead with the surgery.", "accepted"),
    ("Okay, let's go ahead.", "accepted"),
    ("The keyhole operation seems a good option, and I think it would be best to proceed with it.", "accepted"),
    ("I'll proceed with the operation.", "accepted"),
    ("Should I get a second opinion?", None),
    ("I'm not sure I'll have the surgery.", None),
    ("If the risks are that low, maybe I'll go ahead with it.", None),
    ("What happens if I refuse?", None),
    ("That's a lot to take in.", None),
])
def test_stop_rules(line, decision):
    v = detect_by_rules(line)
    assert (v.decision if v else None) == decision


def test_marker_is_not_spoken():
    spoken, decision, marker = split_marker("Yes, let's book it. [DECISION: ACCEPT]")
    assert spoken == "Yes, let's book it." and decision == "accepted" and marker == "[DECISION: ACCEPT]"


class Classifier:
    name = "clf"

    def __init__(self, text):
        self.text, self.calls = text, []

    def generate(self, messages, params, ctx):
        self.calls.append((ctx.role, json.loads(params.response_schema)))
        return Output(text=self.text, model="clf")


def test_stop_classifier_bounded_and_logged():
    clf = Classifier('{"decision": "accepted"}')
    sink = DictSink()
    v = StopDetector(clf)("Fine, you've convinced me, book me in.", case_id="X", turn=2, sink=sink)
    assert (v.decision, v.rule) == ("accepted", "classifier")
    role, schema = clf.calls[0]
    assert role == "stop" and schema["properties"]["decision"]["enum"] == ["accepted", "left", "continue"]
    assert [e["role"] for e in sink.events if e["type"] == "llm_call"] == ["stop"]
    v = StopDetector(Classifier("hmm"))("Fine, book me in.", case_id="X", turn=2, sink=DictSink())
    assert (v.decision, v.rule) == ("continue", "classifier_unparsed")
    clf = Classifier("{}")
    assert StopDetector(clf)("[DECISION: LEAVE]", case_id="X", turn=1, sink=DictSink()).rule == "marker"
    assert clf.calls == []  # a rule decided: no call
    assert StopDetector(None)("Fine, book me in.", case_id="X", turn=1, sink=DictSink()).rule == "none"


# -- the encounter --------------------------------------------------------------------------
def _encounter(pid: str, seed: int = 0, max_rounds: int = 10, llm=None):
    cases, traits = load_osce_cases(), load_traits()
    p = resolve_persona(parse_personas(pid, CODES)[0], cases, traits, seed=seed)
    llm = llm or OsceScriptedLLM(seed=seed)
    sink = DictSink()
    cast = osce_cast(p, {"doctor": llm, "patient": llm}, {"doctor": GenerateParams(), "patient": GenerateParams()}, {},
                     sink, max_rounds=max_rounds)
    out = Encounter(p, cast, EncounterConfig(max_rounds), sink, StopDetector(llm)).run()
    return p, out, sink.events, llm


def test_encounter_outcomes_follow_the_patient():
    seen = set()
    for pid in ("INTJ_M_PNEUMO", "ESFP_F_LUNG", "ISTP_LUNG", "ENFJ_F_PNEUMO", "ISFJ_M_LUNG", "ENTP_F_LUNG"):
        p, out, events, llm = _encounter(pid)
        kind, at = llm.plan(p.id)
        want = {"accept": ("accepted", at), "leave": ("left", at), "undecided": ("undecided", 10)}[kind]
        assert (out.status, out.rounds) == want
        ends = [e for e in events if e["type"] == "consultation_ended"]
        assert ends[0]["status"] == out.status
        stops = [e for e in events if e["type"] == "osce_stop"]
        assert len(stops) == out.rounds and stops[-1]["decision"] == ("continue" if kind == "undecided" else out.status)
        if kind == "undecided":
            assert [e for e in events if e["type"] == "turn_limit"]
        seen.add(kind)
        assert not any("[DECISION" in e["text"] for e in events if e["type"] == "utterance")
    assert seen == {"accept", "leave", "undecided"}


def test_max_rounds_default_is_ten():
    assert EncounterConfig().max_rounds == 10


def test_hidden_persona_never_reaches_the_doctor():
    for pid in ("INTJ_M_PNEUMO", "ESFP_F_LUNG"):
        p, _, events, _ = _encounter(pid)
        doctor_calls = [e for e in events if e["type"] == "llm_call" and e["role"] == "doctor"]
        patient_calls = [e for e in events if e["type"] == "llm_call" and e["role"] == "patient"]
        assert doctor_calls and patient_calls
        hidden = [h for h in p.hidden_texts() if h]
        for call in doctor_calls:
            text = "\n".join(m["content"] for m in call["messages"])
            assert not [h for h in hidden if h in text]
            assert p.mbti not in text
        system = patient_calls[0]["messages"][0]["content"]
        assert p.trait in system and all(f in system for f in p.case.fears)
        assert p.case.treatment in doctor_system(p, 10) and p.case.diagnosis in doctor_system(p, 10)


def test_encounter_is_deterministic():
    a, b = _encounter("ISTP_LUNG", seed=3)[2], _encounter("ISTP_LUNG", seed=3)[2]
    assert a == b


def test_scripted_end_to_end_scores():
    p, _, events, llm = _encounter("INTJ_M_PNEUMO")
    sink = DictSink()
    sink.events = list(events)
    [s] = score_case(p, Transcript.from_events(events, case_id=p.id), [OsceRubricScorer(llm)], sink)
    assert s.scorer == "osce" and 0 <= s.value <= 10
    assert len(s.details["per_round"]) == 10 and s.details["outcome"] == "undecided"
    assert [e for e in sink.events if e["type"] == "scored"][0]["value"] == s.value


class _BareMarkerPatient(OsceScriptedLLM):
    """A patient that first answers with a marker alone, as the embedded 1.5B model did."""

    def generate(self, messages, params, ctx):
        if ctx.role == "patient" and not any(m.role == "assistant" for m in messages):
            return self._out("[DECISION: ACCEPT]", messages)
        return super().generate(messages, params, ctx)


def test_a_bare_marker_is_no_answer_the_patient_is_asked_to_speak():
    p, out, events, llm = _encounter("INTJ_M_PNEUMO", llm=_BareMarkerPatient(seed=0))
    rejected = [e for e in events if e["type"] == "reply_rejected"]
    assert [(e["role"], e["problem"], e["turn"]) for e in rejected] == [("patient", "no_speech", 1)]
    first = next(e for e in events if e["type"] == "utterance" and e["speaker"] == "patient")
    assert first["text"] != "(The patient says nothing.)"  # it spoke when asked again
    kind, at = llm.plan(p.id)
    assert (out.status, out.rounds) != ("accepted", 1)  # the bare "accept" in round one did not end it


def test_a_marker_the_words_contradict_is_overruled_by_the_classifier():
    """The embedded patient wrote a LEAVE marker after words that defer the decision."""
    reply = "I think I should ask for more details before making a decision. [DECISION: LEAVE]"
    clf = Classifier('{"decision": "continue"}')
    v = StopDetector(clf)(reply, case_id="X", turn=1, sink=DictSink())
    assert (v.decision, v.rule) == ("continue", "marker_overruled") and len(clf.calls) == 1
    # words that say the same as the marker: it stands, no call
    clf = Classifier('{"decision": "continue"}')
    v = StopDetector(clf)("I'll get a second opinion first. [DECISION: LEAVE]", case_id="X", turn=1, sink=DictSink())
    assert (v.decision, v.rule) == ("left", "marker") and clf.calls == []
    # the classifier agrees with the marker: it stands
    v = StopDetector(Classifier('{"decision": "left"}'))("This is too much for me. [DECISION: LEAVE]", case_id="X",
                                                           turn=1, sink=DictSink())
    assert (v.decision, v.rule) == ("left", "marker")
    # without a classifier the marker is taken as written
    assert StopDetector(None)(reply, case_id="X", turn=1, sink=DictSink()).rule == "marker"
