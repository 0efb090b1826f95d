"""Patient behaviours: each reaches the patient's prompt only and is recorded; level 0 is
today's patient; a fabricating patient's invented symptoms are recorded and scored as
unsupported; a withholding one releases only what is asked directly; and each behaviour's
manipulation check moves the expected way on the scripted patient that plays it."""
from __future__ import annotations

import pytest

from agents.behaviour_checks import CHECKS, behaviour_table, cell_value
from agents.behaviours import (BEHAVIOURS, HEADING, BehaviourError, behaviour_check, behaviour_conditions,
                               behaviour_text, format_profile, instructions, invented_facts, licensed, parse_grid,
                               parse_profile, profile_in, released_facts, with_behaviour)
from agents.cases.registry import load_cases
from agents.consultation import ConsultationConfig, run_consultation
from agents.events import DictSink
from agents.fidelity.facts import case_facts, speaks_for
from agents.fidelity.patient import check_patient, directly_asked
from agents.fidelity.scorer import FidelityScorer
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, llm_cast
from agents.participants.base import Observation
from agents.participants.grounded import faithful
from agents.scorers import DiagnosisScorer, Transcript, score_case
from agents.suites.contract import Unit
from agents.suites.diagnosis import DiagnosisSuite
from tests.helpers import roles

CASES = {c.id: c for c in load_cases("demo")[0]}


def _run(case, profile=(), **cast):
    """One scripted consultation with the patient's ``profile``, scored as a bench cell is
    (diagnosis and fidelity); the row and the events."""
    llm = ScriptedLLM({case.id: case})
    llms = roles(llm)
    sink = DictSink()
    run_consultation(case, dict(llm_cast(case, llms, CastConfig(patient_behaviour=profile, **cast), sink)),
                     ConsultationConfig(), sink)
    score_case(case, Transcript.from_events(sink.events, case_id=case.id),
               [DiagnosisScorer(llms["judge"]), FidelityScorer(None)], sink)
    row = DiagnosisSuite().row(Unit(case.id, case.source, case), sink.events, seed=0, condition="c", events_file="",
                               wall_s=0.0)
    return row, sink.events


def _systems(events, role):
    return [e["messages"][0]["content"] for e in events if e["type"] == "llm_call" and e["role"] == role]


def test_every_behaviour_has_three_texts_a_source_and_a_check():
    texts = [behaviour_text(b, lv) for b in BEHAVIOURS for lv in (1, 2, 3)]
    assert len(set(texts)) == 3 * len(BEHAVIOURS) and all(len(t) > 40 for t in texts)  # three texts each, none shared
    assert parse_profile(",".join(f"{b}=3" for b in reversed(BEHAVIOURS))) == tuple((b, 3) for b in BEHAVIOURS)
    assert {behaviour_check(b) for b in BEHAVIOURS} == set(CHECKS)  # one check each, every check used
    assert licensed((("fabricate", 1),)) == {"invented"} and licensed((("withhold", 3), ("proficiency", 2))) == set()
    with pytest.raises(BehaviourError, match="0 adds nothing"):
        behaviour_text("withhold", 0)


def test_a_profile_reads_and_writes_back():
    assert parse_profile("fabricate=1, Withhold=2") == (("withhold", 2), ("fabricate", 1))  # behaviour order
    assert parse_profile({"recall": 0, "proficiency": "3"}) == (("proficiency", 3),)  # a zero is nothing
    assert parse_profile("none") == parse_profile("withhold=0") == parse_profile(None) == ()
    assert format_profile(parse_profile("fabricate=1,withhold=2")) == "withhold=2,fabricate=1"
    assert format_profile(()) == "none"
    for bad, said in [("witheld=2", "did you mean 'withhold'"), ("withhold=4", "outside 0-3"), ("withhold=-1", "outside"),
                      ("withhold", "not NAME=LEVEL"), ("withhold=2,,recall=1", "empty item"),
                      ("withhold=1,withhold=2", "given twice"), ("recall=two", "0, 1, 2 or 3"),
                      ({"recall": True}, "0, 1, 2 or 3"), (3, "expected NAME=LEVEL")]:
        with pytest.raises(BehaviourError, match=said):
            parse_profile(bad)


def test_a_grid_of_levels():
    assert parse_grid("withhold,fabricate=2,recall=1-2") == [("withhold", 1), ("withhold", 2), ("withhold", 3),
                                                              ("fabricate", 2), ("recall", 1), ("recall", 2)]
    assert len(parse_grid("all")) == 27
    conds = behaviour_conditions(parse_grid("withhold=2,confusion=3"))
    assert list(conds) == ["cooperative", "withhold-2", "confusion-3"]
    assert conds["cooperative"]["protocol"]["patient_behaviour"] == "none"
    for bad, said in [("withold", "did you mean 'withhold'"), ("withhold=0", "no behaviour level above 0"),
                      ("recall=3-1", "backwards"), ("recall=1-5", "outside 0-3")]:
        with pytest.raises(BehaviourError, match=said):
            parse_grid(bad)


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_each_behaviour_reaches_the_patient_only_and_is_recorded(behaviour):
    case = CASES["demo-005"]
    row, events = _run(case, ((behaviour, 2),))
    plain_row, plain = _run(case)
    text = behaviour_text(behaviour, 2)
    patient = _systems(events, "patient")
    assert patient and all(s == _systems(plain, "patient")[0] + "\n\n" + instructions(((behaviour, 2),),
                                                                                   invented_facts(case, 2 if behaviour == "fabricate" else 0))
                           for s in patient)
    assert all(text in s for s in patient) and profile_in(patient[0]) == {behaviour: 2}
    others = [s for r in ("doctor", "measurement", "judge") for s in _systems(events, r)]
    assert others and not any(text in s or HEADING in s for s in others)
    # every other role's prompts are the cooperative run's, word for word
    for r in ("doctor", "measurement"):
        assert _systems(events, r)[0] == _systems(plain, r)[0]
    recorded = [e for e in events if e["type"] == "patient_behaviour"]
    assert len(recorded) == 1 and recorded[0]["behaviour"] == f"{behaviour}=2" and recorded[0]["levels"] == {behaviour: 2}
    assert recorded[0]["text"] in patient[0]
    assert row["patient_behaviour"] == f"{behaviour}=2" and row[f"behaviour_{behaviour}"] == 2
    assert "patient_behaviour" not in plain_row and not [e for e in plain if e["type"] == "patient_behaviour"]


def test_level_zero_is_todays_patient_byte_for_byte():
    case = CASES["demo-001"]
    _, plain = _run(case)
    _, zero = _run(case, parse_profile("withhold=0,fabricate=0,proficiency=0"))
    assert zero == plain  # every event, every prompt, every reply
    # and today's events: none of a behaviour's fields or events at level 0
    assert not [e for e in plain if e["type"] == "patient_behaviour" or "withheld" in e or "invented" in e]
    assert {frozenset(e) for e in plain if e["type"] == "patient_grounded"} == {frozenset({"type", "turn", "facts", "seq"})}
    assert with_behaviour("S", ()) == "S" and instructions(()) == ""


def test_a_scripted_fabricating_patient_records_what_it_invents_and_it_is_scored_unsupported():
    case = CASES["demo-005"]
    row, events = _run(case, (("fabricate", 3),))
    planned = next(e for e in events if e["type"] == "patient_behaviour")["invented"]
    assert len(planned) == 3 and row["invented_planned"] == 3
    assert all(check_patient(case, "", t).claim_verdict == "unsupported" for t in planned)
    given = [t for e in events if e["type"] == "patient_grounded" for t in e.get("invented", [])]
    said = [e for e in events if e["type"] == "utterance" and e["speaker"] == "patient"]
    told = [t for t in planned if any(t in u["text"] for u in said)]
    assert told and set(told) <= set(given)  # what it said it was given, and the record holds it
    items = next(e for e in events if e["type"] == "scored" and e["scorer"] == "fidelity")["details"]["items"]
    carrying = [i for i in items if i["role"] == "patient" and any(t in i["text"] for t in told)]
    assert carrying and all("invented" in i["labels"] for i in carrying)
    others = [i for i in items if i["role"] == "patient" and i not in carrying]
    assert all("invented" not in i["labels"] for i in others)  # only what it made up is unsupported
    assert cell_value(row, "invented") == len(carrying) / row["fidelity"]["patient"]["n"] > 0
    # the guard let it through because the behaviour asks for it; without that licence it is refused
    assert not [e for e in events if e["type"] == "reply_rejected" and e["role"] == "patient"]
    question = next(e["text"] for e in events if e["type"] == "utterance" and e["speaker"] == "doctor")
    obs = Observation(turn=1, text=question, answering=question)
    assert faithful(case)(told[0], obs) == "invented" and faithful(case, {"invented"})(told[0], obs) is None


def test_invented_symptoms_are_seeded_plausible_and_a_caregiver_reports_only_what_can_be_seen():
    case = CASES["demo-001"]
    import random

    random.seed(1)
    first = invented_facts(case, 2, seed=0)
    random.seed(2)  # the seed argument alone decides, not the process's random state
    assert len(first) == 2 and invented_facts(case, 2, seed=0) == first
    assert len({invented_facts(case, 3, seed=s) for s in range(6)}) > 1
    assert invented_facts(case, 0) == ()
    child = CASES["demo-017"]
    assert speaks_for(child) is not None
    made = invented_facts(child, 3, seed=1)
    assert len(made) == 3 and all(t.startswith("My son ") for t in made)
    assert not any(w in " ".join(made) for w in ("headache", "ringing", "pins and needles", "dry mouth"))


def test_a_withholding_patient_tells_only_what_is_asked_directly():
    case = CASES["demo-001"]
    facts = case_facts(case).facts
    opener = "What brings you in today?"
    assert [f.section for f in released_facts(case, opener, (), 2)] == ["complaint"]
    smoke = "Do you smoke?"
    assert all(directly_asked(facts[f.index], smoke) for f in released_facts(case, smoke, (), 3))
    coop_row, _ = _run(case)
    row, events = _run(case, (("withhold", 2),))
    assert coop_row["speech"]["volunteered"] > 0 and row["speech"]["volunteered"] == 0
    withheld = [i for e in events if e["type"] == "patient_grounded" for i in e.get("withheld", [])]
    assert withheld  # the record says what it kept back
    assert row["fidelity"]["patient"]["labelled"]["contradicted"] == 0  # it holds back; it does not deny


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_each_manipulation_check_moves_the_expected_way_and_level_zero_stays(behaviour):
    """On the scripted patient that plays each behaviour, over six cases: level 3 against
    level 0 moves the check the way the behaviour should; a second run of level 0 moves
    it not at all (the table's paired difference is exactly zero)."""
    cases = [CASES[f"demo-{i:03d}"] for i in (1, 2, 5, 9, 13, 16)]
    rows = []
    for cond, profile in (("cooperative", ()), (f"{behaviour}-3", ((behaviour, 3),)), ("again", ())):
        for case in cases:
            row, _ = _run(case, profile)
            rows.append({**row, "condition": cond})
    table = behaviour_table(rows, ["cooperative", f"{behaviour}-3", "again"])
    assert table["reference"] == "cooperative"
    ref, line = table["lines"]
    assert ref["reference"] and ref["level"] == 0 and line["level"] == 3 and line["check"] == behaviour_check(behaviour)
    assert line["moved"] == "yes", line
    assert (line["check_diff"] > 0) == (CHECKS[line["check"]].direction > 0)
    again = behaviour_table([{**r, "patient_behaviour": f"{behaviour}=1"} if r["condition"] == "again" else r
                             for r in rows if r["condition"] != f"{behaviour}-3"], ["cooperative", "again"])
    assert again["lines"][1]["check_diff"] == 0 and again["lines"][1]["accuracy_diff"] == 0
