"""A person plays a role from standard input: ``medsim consult --as doctor|patient``."""
import json
import subprocess
import sys

from agents.events import read_events
from agents.participants import HumanParticipant, InputEnded, Observation
from agents.participants.human import clean_typed


def _consult(stdin: str, *args: str, tmp_path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    log = tmp_path / "c.jsonl"
    r = subprocess.run([sys.executable, "-m", "medsim", "consult", "--llm", "scripted", "--log", str(log), *args],
                       input=stdin, capture_output=True, text=True, timeout=60)
    return r, read_events(log) if log.is_file() else []


def _menu_number(test: str) -> str:
    from game.catalogue import test_menu
    from game.hospital_map import load_map
    from game.resources import default_map_path

    tests = [t for g in test_menu(load_map(default_map_path())) for t in g.tests]
    return str(tests.index(test) + 1)


def test_a_person_plays_the_doctor_from_stdin_and_is_judged(tmp_path):
    answers = "\n".join(["1", "What brings you in today?",
                         "9", "2",  # a bad menu choice, then: order a test
                         "x", _menu_number("Complete blood count"),  # a bad test number, then a good one
                         "2", "o", "CT abdomen (with contrast)",  # a test by name
                         "3", "Acute appendicitis"]) + "\n"
    r, ev = _consult(answers, "--as", "doctor", "--case", "demo-007", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(type 1, 2 or 3)" in r.stdout and "(a number from 1 to" in r.stdout
    doctor = [e for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert [e["source"] for e in doctor] == ["human"] * 4
    assert [e["text"] for e in doctor] == ["What brings you in today?", "I'd like to order: Complete blood count.",
                                           "I'd like to order: CT abdomen (with contrast).",
                                           "My diagnosis is: Acute appendicitis."]
    assert [e["rule"] for e in ev if e["type"] == "route"] == ["human_question", "human_menu", "human_menu",
                                                               "human_diagnosis"]
    assert not [e for e in ev if e["type"] == "llm_call" and e["role"] == "doctor"]
    judge = [e for e in ev if e["type"] == "judge"]
    assert judge and judge[0]["correct"] is True and "CORRECT" in r.stdout
    assert ev[0]["spec"]["roles"]["doctor"]["backend"] == "human"


def test_typed_markers_are_words_not_protocol(tmp_path):
    """A question that looks like a marker is still a question: only the menu orders or
    diagnoses."""
    answers = "1\nDIAGNOSIS READY: Gout\n1\nREQUEST TEST: ECG\n1\nAnything else?\n3\nGout\n"
    r, ev = _consult(answers, "--as", "doctor", "--case", "demo-016", "--no-guards", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    routes = [e["route"] for e in ev if e["type"] == "route"]
    assert routes == ["patient", "patient", "patient", "diagnosis"]
    assert not [e for e in ev if e["type"] == "test_requested"]


def test_a_person_plays_the_patient(tmp_path):
    answers = "\n".join(["Ça fait très mal — 😣, since yesterday.", "", "x" * 2000] + ["No."] * 20) + "\n"
    r, ev = _consult(answers, "--as", "patient", "--case", "demo-007", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "You are the patient" in r.stdout
    said = [e["text"] for e in ev if e["type"] == "utterance" and e["speaker"] == "patient"]
    assert said[:2] == ["Ça fait très mal — 😣, since yesterday.", "(says nothing)"]
    assert len(said[2]) == 500 and "kept the first 500 characters" in r.stdout
    assert {e["source"] for e in ev if e["type"] == "utterance" and e["speaker"] == "patient"} == {"human"}
    # the run loop's own cell: judged, then closed as a bench cell is
    assert [e["type"] for e in ev[-2:]] == ["scored", "case_finished"]


def test_input_that_ends_early_is_a_failed_consultation_not_a_wrong_answer(tmp_path):
    r, ev = _consult("1\nWhere does it hurt?\n", "--as", "doctor", "--case", "demo-007", tmp_path=tmp_path)
    assert r.returncode == 0
    end = [e for e in ev if e["type"] == "consultation_ended"][0]
    assert end["status"] == "failed" and "input ended" in end["failure"]
    assert not [e for e in ev if e["type"] == "judge"]
    assert "Status: failed" in r.stdout


def test_a_human_role_in_a_benchmark_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "medsim", "bench", "--doctor-llm", "human", "--out", str(tmp_path / "b"),
                        "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 2 and "runs no people" in r.stderr and not (tmp_path / "b").exists()


class _Script:
    def __init__(self, actions):
        self.actions = list(actions)

    def doctor_action(self, obs):
        if not self.actions:
            raise InputEnded()
        return self.actions.pop(0)

    def reply(self, role, obs):
        return self.actions.pop(0)


def test_the_human_participant_enforces_the_protocol():
    from agents.participants.human import ask, diagnose
    from agents.participants import RoleFailure
    import pytest

    doc = HumanParticipant("doctor", _Script([ask("Where?"), ask("Still asking?"), diagnose("  ")]))
    t = doc.act(Observation(turn=1, text="Begin."))
    assert (t.action.kind, t.spoken, t.source) == ("ask", "Where?", "human")
    with pytest.raises(RoleFailure, match="no diagnosis on the last turn"):
        doc.act(Observation(turn=2, text="Last.", final=True))
    with pytest.raises(RoleFailure, match="empty diagnose"):
        doc.act(Observation(turn=3, text="x"))
    with pytest.raises(RoleFailure, match="input ended"):
        doc.act(Observation(turn=4, text="x"))
    assert clean_typed("a\x00b\u202e c\n\td") == "a b c d"
    assert json.dumps(clean_typed("\ud800x")) == '"x"'
