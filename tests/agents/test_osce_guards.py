"""The OSCE encounter's guards: a looping, echoing or role-breaking reply is rejected
(recorded) and asked again with a correction; a role that keeps failing ends the
encounter as failed early; without guards every reply is taken as it is."""
from __future__ import annotations

import pytest

from agents.events import DictSink
from agents.llm.base import GenerateParams
from agents.participants.base import Observation
from agents.suites.osce import Encounter, EncounterConfig, StopDetector, osce_cast
from agents.suites.osce_guards import OSCE_CORRECTIONS, echo_of_other, near_repeat, speaks_for_other
from agents.suites.osce_personas import load_osce_cases, load_traits, parse_personas, resolve_persona
from agents.suites.osce_scripted import OsceScriptedLLM

LOOP = "I'm really worried about the operation, and I don't think I can face going through with it right now."
FIXED = {2: "How long would I be in hospital afterwards?", 3: "Would my family be able to visit me there?",
         4: "And when could I go back to work, roughly?"}


class Patient(OsceScriptedLLM):
    """The scripted OSCE backend with the patient's replies replaced: ``first`` in round
    one, then ``again(round)`` on each later round; told to correct itself (the last
    message holds a correction) it says ``fixed(round)``, unless ``stubborn``."""

    def __init__(self, again, *, first=LOOP, stubborn=False, seed=0):
        super().__init__(seed=seed)
        self.again, self.first, self.stubborn = again, first, stubborn
        self.calls = 0

    def generate(self, messages, params, ctx):
        if ctx.role != "patient":
            return super().generate(messages, params, ctx)
        self.calls += 1
        done = sum(1 for m in messages if m.role == "assistant")
        corrected = any(fix in messages[-1].content for fix in OSCE_CORRECTIONS["patient"].values())
        if done == 0:
            text = self.first
        elif corrected and not self.stubborn:
            text = FIXED[done + 1]
        else:
            text = self.again(done + 1)
        return self._out(text, messages)


def _run(llm, *, guard_retries=2, max_rounds=6, pid="INTJ_M_PNEUMO"):
    cases, traits = load_osce_cases(), load_traits()
    p = resolve_persona(parse_personas(pid, ["LUNG", "PNEUMO"])[0], cases, traits, seed=0)
    sink = DictSink()
    cast = osce_cast(p, {"doctor": llm, "patient": llm}, {"doctor": GenerateParams(), "patient": GenerateParams()}, {},
                     sink, max_rounds=max_rounds, guard_retries=guard_retries)
    out = Encounter(p, cast, EncounterConfig(max_rounds), sink, StopDetector(None)).run()
    return out, sink.events


def _of(events, kind):
    return [e for e in events if e["type"] == kind]


def _said(events, speaker):
    return [e["text"] for e in events if e["type"] == "utterance" and e["speaker"] == speaker]


# -- the encounter ---------------------------------------------------------------------------
def test_a_looping_patient_is_rejected_and_asked_again_and_the_fixed_reply_is_taken():
    llm = Patient(lambda r: LOOP)
    out, events = _run(llm, max_rounds=4)
    rej = _of(events, "reply_rejected")
    assert [(e["role"], e["problem"], e["turn"], e["attempt"]) for e in rej] == [
        ("patient", "loop", r, 1) for r in (2, 3, 4)]
    assert all(e["text"] == LOOP for e in rej)
    said = _said(events, "patient")
    assert said == [LOOP, FIXED[2], FIXED[3], FIXED[4]]
    assert (out.status, out.rounds, out.failure) == ("undecided", 4, None)
    # the correction went to the patient's model, the rejected reply never entered its conversation
    calls = [e for e in _of(events, "llm_call") if e["role"] == "patient"]
    assert len(calls) == 1 + 2 * 3
    assert OSCE_CORRECTIONS["patient"]["loop"] in calls[2]["messages"][-1]["content"]
    last = calls[-1]["messages"]
    assert sum(1 for m in last if m["role"] == "assistant" and m["content"] == LOOP) == 1
    assert calls[2]["params"]["seed"] != calls[1]["params"]["seed"]  # another seed for the retry


@pytest.mark.parametrize("again, problem", [
    # near-identical, not the same words: the 1.5B model's loop
    (lambda r: LOOP.replace("really ", "so ").replace("right now", "now"), "loop"),
    # the patient writes the doctor's next line too
    (lambda r: "I see.\nDoctor: So shall we book the operation?\nPatient: Yes.", "role_break"),
    (lambda r: "I see what you mean. Doctor: So shall we book it for next week then?", "role_break"),
    (lambda r: "As your surgeon, I recommend the operation.", "role_break"),
    (lambda r: "As an AI language model, I have no feelings about surgery.", "refusal"),
    (lambda r: "   ", "empty"),
])
def test_each_kind_of_bad_patient_reply_is_rejected(again, problem):
    out, events = _run(Patient(again), max_rounds=2)
    assert [(e["problem"], e["turn"]) for e in _of(events, "reply_rejected")] == [(problem, 2)]
    assert out.status == "undecided" and _said(events, "patient")[1] == FIXED[2]


class EchoingPatient(OsceScriptedLLM):
    """Repeats the doctor's last words back, until corrected."""

    def generate(self, messages, params, ctx):
        if ctx.role == "patient":
            last = messages[-1].content
            if any(fix in last for fix in OSCE_CORRECTIONS["patient"].values()):
                return self._out(FIXED[2 + sum(1 for m in messages if m.role == "assistant")], messages)
            return self._out(last.removeprefix("Doctor: "), messages)
        return super().generate(messages, params, ctx)


def test_a_patient_echoing_the_doctor_is_rejected():
    out, events = _run(EchoingPatient(seed=0), max_rounds=2)
    rej = _of(events, "reply_rejected")
    assert [(e["problem"], e["turn"]) for e in rej] == [("echo", 1), ("echo", 2)]
    assert _said(events, "patient") == [FIXED[2], FIXED[3]]


def test_a_patient_that_always_loops_ends_the_encounter_as_failed_early():
    out, events = _run(Patient(lambda r: LOOP, stubborn=True), max_rounds=10)
    assert (out.status, out.rounds) == ("failed", 2)
    assert "patient reply still loop after 3 attempts" in out.failure
    rej = _of(events, "reply_rejected")
    assert [(e["turn"], e["attempt"]) for e in rej] == [(2, 1), (2, 2), (2, 3)]
    [failed] = _of(events, "consultation_failed")
    assert (failed["role"], failed["problem"], failed["turn"]) == ("patient", "loop", 2)
    [end] = _of(events, "consultation_ended")
    assert end["status"] == "failed" and end["turns"] == 2
    assert not _of(events, "turn_limit") and len(_of(events, "osce_stop")) == 1


class LoopingDoctor(OsceScriptedLLM):
    def generate(self, messages, params, ctx):
        if ctx.role == "doctor":
            return self._out("The operation is the best option for you, and I strongly recommend that you have it.",
                             messages)
        return super().generate(messages, params, ctx)


def test_a_looping_doctor_fails_the_encounter_with_guards_and_runs_on_without():
    out, events = _run(LoopingDoctor(seed=0), max_rounds=5, pid="ISTP_M_LUNG")
    assert (out.status, out.rounds) == ("failed", 2)
    assert _of(events, "consultation_failed")[0]["role"] == "doctor"
    assert {e["role"] for e in _of(events, "reply_rejected")} == {"doctor"}
    out, events = _run(LoopingDoctor(seed=0), max_rounds=5, pid="ISTP_M_LUNG", guard_retries=None)
    assert out.status != "failed" and not _of(events, "reply_rejected")


def test_guards_off_takes_every_reply_as_before():
    out, events = _run(Patient(lambda r: LOOP, stubborn=True), max_rounds=6, guard_retries=None)
    assert (out.status, out.rounds) == ("undecided", 6)
    assert not _of(events, "reply_rejected") and not _of(events, "consultation_failed")
    assert _said(events, "patient") == [LOOP] * 6


@pytest.mark.parametrize("pid", ["INTJ_M_PNEUMO", "ESFP_F_LUNG", "ISTP_M_LUNG"])
def test_guards_change_nothing_when_nothing_is_flagged(pid):
    """The scripted encounter (10 rounds, every outcome) logs the same events guarded or not."""
    a = _run(OsceScriptedLLM(seed=0), max_rounds=10, pid=pid)[1]
    b = _run(OsceScriptedLLM(seed=0), max_rounds=10, pid=pid, guard_retries=None)[1]
    assert a == b and not _of(a, "reply_rejected")


def test_the_scripted_doctor_does_not_loop_past_its_script():
    out, events = _run(OsceScriptedLLM(seed=0), max_rounds=13, pid="ISTP_M_LUNG")
    assert not _of(events, "reply_rejected") and out.status != "failed"


# -- the checks ------------------------------------------------------------------------------
def _obs(text):
    return Observation(turn=2, text=text)


def test_near_repeat():
    check = near_repeat(lambda: [LOOP])
    assert check(LOOP.replace("really", "so"), _obs("Doctor: x")) == "loop"
    assert check("I see. Go on.", _obs("Doctor: x")) is None  # short turns may come back
    assert check(f"{LOOP} [DECISION: LEAVE]", _obs("Doctor: x")) is None  # a decision ends it: no loop to stop
    assert check("What are the chances that the lung collapses again if I wait and do nothing?", _obs("x")) is None


def test_echo_of_the_other_side_not_a_quoted_phrase():
    doc = "Doctor: The main risks are bleeding, infection and the anaesthetic, but most people do very well."
    assert echo_of_other(doc.removeprefix("Doctor: "), _obs(doc)) == "echo"
    assert echo_of_other("Hmm. " + doc.removeprefix("Doctor: ") + " Okay?", _obs(doc)) == "echo"
    assert echo_of_other("Bleeding and infection? That frightens me more than the anaesthetic.", _obs(doc)) is None
    note = "Patient: I'm scared of the pain after the surgery, honestly.\n(This is the last exchange: ...)"
    assert echo_of_other("I'm scared of the pain after the surgery, honestly.", _obs(note)) == "echo"


def test_speaker_labels_inside_a_line():
    assert speaks_for_other("patient")("Okay. Dr. Smith: then we book it.", _obs("x")) == "role_break"
    assert speaks_for_other("doctor")("I understand. Patient: yes.", _obs("x")) == "role_break"
    assert speaks_for_other("patient")("My doctor said it was a small leak.", _obs("x")) is None
    assert speaks_for_other("doctor")("As your surgeon, I recommend it.", _obs("x")) is None


@pytest.mark.parametrize("text, problem", [
    ("I'm sorry, but I can't do that. The operation frightens me too much.", None),  # declining, in character
    ("I can't answer that yet, I need to talk to my wife.", None),
    ("Can you tell me more about your experience with this operation?", None),  # the patient's question
    ("I'm sorry, but I can't assist with that.", "refusal"),  # the model's refusal
    ("I'm sorry, but I can't help with that.", "refusal"),
    ("I can't do that. As an AI, I have no body.", "refusal"),
    ("Can you tell me more about your symptoms?\nDoctor: Sure.", "role_break"),
    ("What brings you in today?", "role_break"),
])
def test_osce_detect_reads_the_patient_in_character(text, problem):
    from agents.guards import check_reply
    from agents.suites.osce_guards import osce_detect

    assert osce_detect("patient", text, [], "Doctor: I recommend the operation.") == problem
    if problem is None:
        assert check_reply("patient", text, [], "x") is not None  # what the consultation's detectors would reject
    assert osce_detect("doctor", "I'm sorry, but I can't do that.", [], "x") == "refusal"  # the doctor: as before


def test_a_patient_declining_in_character_is_not_asked_again():
    out, events = _run(Patient(lambda r: "I'm sorry, but I can't do that. I won't have the operation."), max_rounds=3)
    assert not _of(events, "reply_rejected")
    assert (out.status, out.rounds) == ("left", 2)  # the refusal stands and ends the encounter


def test_the_embedded_patients_echo_and_service_lines_are_caught():
    """Seen on the embedded model: the patient gave back the doctor's line with its
    contraction undone, and spoke the clinician's closing courtesies."""
    doc = "Doctor: You're welcome! I'm glad I could help. If you have any other questions, feel free to ask."
    echo = "You are welcome! I am glad I could help. If you have any other questions, feel free to ask."
    assert echo_of_other(echo, _obs(doc)) == "echo"
    assert speaks_for_other("patient")("Thank you! I'm glad I could help. If you have any other questions, feel free "
                                       "to ask.", _obs("Doctor: Thank you for your patience.")) == "role_break"
    assert speaks_for_other("patient")("How can I help you, doctor?", _obs("x")) == "role_break"
    assert speaks_for_other("doctor")("If you have any other questions, feel free to ask.", _obs("x")) is None
    assert speaks_for_other("patient")("I'm glad you explained it; I feel freer now.", _obs("x")) is None
    assert near_repeat(lambda: ["I don't understand the doctor's explanation and I need more details first."])(
        "I do not understand the doctor's explanation, and I need more details first.", _obs("x")) == "loop"


def test_an_echo_after_the_bare_marker_reask_is_still_caught():
    """The embedded patient answered a bare [DECISION: ACCEPT]; asked to speak, it gave
    back the doctor's line. The re-ask's text is an instruction, so the echo check reads
    the doctor's words the patient is still answering."""

    class EchoAfterMarker(OsceScriptedLLM):
        echoed = False

        def generate(self, messages, params, ctx):
            if ctx.role != "patient":
                return super().generate(messages, params, ctx)
            last = messages[-1].content
            if last.startswith("Doctor: "):
                return self._out("[DECISION: ACCEPT]", messages)
            if not self.echoed:  # the re-ask to speak: the doctor's words back
                self.echoed = True
                doctor = next(m.content for m in reversed(messages) if m.content.startswith("Doctor: "))
                return self._out(doctor.removeprefix("Doctor: "), messages)
            return self._out("How long would I be in hospital afterwards?", messages)

    _, events = _run(EchoAfterMarker(), max_rounds=1)
    problems = [(e["role"], e["problem"]) for e in _of(events, "reply_rejected")]
    assert ("patient", "no_speech") in problems and ("patient", "echo") in problems
    assert _said(events, "patient") == ["How long would I be in hospital afterwards?"]


def test_bare_markers_that_reverse_each_other_are_no_decision():
    """The embedded patient answered a bare [DECISION: ACCEPT], then, asked to speak, a
    bare [DECISION: LEAVE]: it left without a word. Now the round goes on; a bare marker
    that repeats the first decision still stands."""

    class BareMarkers(OsceScriptedLLM):
        def __init__(self, markers):
            super().__init__()
            self.markers = list(markers)

        def generate(self, messages, params, ctx):
            if ctx.role != "patient" or not self.markers:
                return super().generate(messages, params, ctx)
            return self._out(self.markers.pop(0), messages)

    out, events = _run(BareMarkers(["[DECISION: ACCEPT]", "[DECISION: LEAVE]"]), max_rounds=3)
    problems = [e["problem"] for e in _of(events, "reply_rejected")]
    assert problems[:2] == ["no_speech", "contradicting_markers"]
    stops = _of(events, "osce_stop")
    assert stops[0]["decision"] == "continue" and len(_said(events, "doctor")) >= 2
    out, events = _run(BareMarkers(["[DECISION: LEAVE]", "[DECISION: LEAVE]"]), max_rounds=3)
    assert [e["problem"] for e in _of(events, "reply_rejected")] == ["no_speech"]
    assert _of(events, "osce_stop")[0]["decision"] == "left" and len(_said(events, "doctor")) == 1
