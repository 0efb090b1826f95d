"""The OSCE treatment-persuasion encounter (after OSCE-Project).

Per round the doctor speaks and the patient answers in character; after each answer a
stop detector (:mod:`agents.suites.osce_stop`) decides whether the patient accepted,
left (a second opinion counts) or goes on; the encounter also ends after
``max_rounds``. The doctor is told the demographics, diagnosis, recommended treatment,
its risks, benefits, prognosis and alternatives; the patient's personality, symptoms and
fears are in the patient's prompt only. Both are guarded by default
(:mod:`agents.suites.osce_guards`): a reply that is empty, refuses, breaks role, echoes the
other side or repeats one of the role's own turns is recorded (``reply_rejected``) and
asked again a bounded number of times; a role that keeps failing ends the encounter as
``failed`` (``consultation_failed``) instead of looping to the round limit.

The events go to the same log as a consultation's (``case_started``, ``utterance``,
``llm_call``, ``consultation_ended`` with status accepted | left | undecided | error |
failed); the rubric judge is a scorer over the finished log
(:class:`agents.suites.osce_judge.OsceRubricScorer`), so a run is re-scored from its logs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Mapping

from agents.events import (CaseError, CaseStarted, ConsultationEnded, ConsultationFailed, EventSink, ReplyRejected,
                           TurnLimitReached, Utterance)
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.participants.base import Observation, Participant, RoleFailure
from agents.participants.llm import LLMParticipant
from agents.participants.wrappers import Guarded
from agents.prompts import render
from agents.suites.osce_events import OsceStarted, StopDecision
from agents.suites.osce_guards import OSCE_CORRECTIONS, osce_checks, osce_detect
from agents.suites.osce_personas import Persona
from agents.suites.osce_stop import STOP_SCHEMA, StopVerdict, detect_by_rules, parse_stop_reply, split_marker, stop_messages_text

__all__ = ["EncounterConfig", "Encounter", "EncounterOutcome", "doctor_system", "patient_system", "doctor_brief",
           "osce_cast", "StopDetector", "OPENING", "OUTCOMES"]

OPENING = ("The patient, a {demographics}, has come in to talk about the treatment you recommend. "
           "Begin the conversation.")
LAST_ROUND = "(This is the last exchange: the patient will decide after your reply.)"
NO_SPEECH = ("(You gave no answer in words. Say aloud, in one to four sentences and in character, what you think of "
             "what the doctor said; add a decision marker only if you have really decided.)")
OUTCOMES = ("accepted", "left", "undecided")


@dataclass(frozen=True)
class EncounterConfig:
    max_rounds: int = 10
    stop_classifier: bool = True  # a classifier call when no rule decides

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {self.max_rounds}")


@dataclass(frozen=True)
class EncounterOutcome:
    case_id: str
    status: str  # accepted | left | undecided | error | failed
    rounds: int
    error: str | None
    failure: str | None


def _bullets(items) -> str:
    return "\n".join(f"  - {x}" for x in items) or "  - none stated"


def doctor_brief(persona: Persona) -> dict[str, object]:
    """Everything the doctor is told (and nothing else)."""
    c = persona.case
    return {"demographics": persona.demographics, "diagnosis": c.diagnosis, "treatment": c.treatment,
            "risks": list(c.risks), "benefits": list(c.benefits), "prognosis": c.prognosis,
            "alternatives": list(c.alternatives)}


def doctor_system(persona: Persona, max_rounds: int) -> str:
    b = doctor_brief(persona)
    return render("osce_doctor", demographics=b["demographics"], diagnosis=b["diagnosis"], treatment=b["treatment"],
                  risks=_bullets(b["risks"]), benefits=_bullets(b["benefits"]), prognosis=b["prognosis"],
                  alternatives=_bullets(b["alternatives"]), max_rounds=max_rounds)


def patient_system(persona: Persona) -> str:
    c = persona.case
    return render("osce_patient", demographics=persona.demographics, gender=persona.gender_text, trait=persona.trait,
                  situation=c.situation, symptoms=_bullets(c.symptoms), fears=_bullets(c.fears), told=c.told)


def osce_cast(persona: Persona, llms: Mapping[str, LLM], params: Mapping[str, GenerateParams],
              retry: Mapping[str, RetryPolicy], sink: EventSink, *, max_rounds: int,
              guard_retries: int | None = 2) -> dict[str, Participant]:
    """The doctor and the patient as LLM participants, each with its own conversation.
    ``guard_retries``: each wrapped in :class:`Guarded` with the OSCE checks
    (:mod:`agents.suites.osce_guards`), a flagged reply asked again that many times
    before the encounter fails; None: unguarded (every reply taken as it is)."""
    cast: dict[str, Participant] = {
        "doctor": LLMParticipant("doctor", llms["doctor"], doctor_system(persona, max_rounds), params["doctor"],
                                 persona.id, sink, retry.get("doctor", RetryPolicy())),
        "patient": LLMParticipant("patient", llms["patient"], patient_system(persona), params["patient"], persona.id,
                                  sink, retry.get("patient", RetryPolicy())),
    }
    if guard_retries is not None:
        for role, inner in list(cast.items()):
            assert isinstance(inner, LLMParticipant)
            cast[role] = Guarded(inner, retries=guard_retries, checks=osce_checks(role, inner.previous_replies),
                                 corrections=OSCE_CORRECTIONS[role], detect=osce_detect)
    return cast


class StopDetector:
    """Rules (:func:`agents.suites.osce_stop.detect_by_rules`), then, if a model is
    given, one bounded-JSON classifier call (logged as role ``stop``)."""

    def __init__(self, llm: LLM | None = None, params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=20),
                 policy: RetryPolicy = RetryPolicy()):
        self.llm, self.policy = llm, policy
        self.params = replace(params, response_schema=json.dumps(STOP_SCHEMA, sort_keys=True), stop=())

    def __call__(self, reply: str, *, case_id: str, turn: int, sink: EventSink) -> StopVerdict:
        v = detect_by_rules(reply)
        if v is not None and v.rule == "marker" and self.llm is not None:
            # a marker is checked against the words: the embedded 1.5B patient wrote "I should ask
            # for more details before making a decision. [DECISION: LEAVE]". Words that a phrase rule
            # reads the same way (or no words) let the marker stand; otherwise the classifier reads
            # the words alone and its reading wins.
            spoken = split_marker(reply)[0]
            said = detect_by_rules(spoken) if spoken else None
            if spoken and (said is None or said.decision != v.decision):
                got, raw = self._classify(spoken, case_id, turn, sink)
                if got is not None and got != v.decision:
                    return StopVerdict(got, "marker_overruled", f"{v.evidence} / {raw}")
            return v
        if v is not None or self.llm is None:
            return v or StopVerdict("continue", "none", "")
        got, raw = self._classify(reply, case_id, turn, sink)
        if got is None:
            return StopVerdict("continue", "classifier_unparsed", raw)
        return StopVerdict(got, "classifier", raw)

    def _classify(self, text: str, case_id: str, turn: int, sink: EventSink) -> tuple[str | None, str]:
        out = generate_logged(self.llm, [Message("user", stop_messages_text(text))], self.params,
                              CallContext("stop", case_id, turn), sink, self.policy)
        return parse_stop_reply(out.text), out.text[:200]


def _clean(text: str, label: str) -> str:
    t = text.strip()
    for lab in (f"{label}:", f"**{label}:**", f"{label.upper()}:"):
        if t.startswith(lab):
            t = t[len(lab):].strip()
    return t


class Encounter:
    """A steppable treatment discussion: :meth:`step` is one round."""

    def __init__(self, persona: Persona, cast: Mapping[str, Participant], config: EncounterConfig, sink: EventSink,
                 stop: StopDetector):
        missing = [r for r in ("doctor", "patient") if r not in cast]
        if missing:
            raise ValueError(f"the cast has no {', '.join(missing)}")
        self.persona, self.cast, self.config, self.sink, self.stop = persona, cast, config, sink, stop
        self.round = 0
        self.decision: str | None = None  # accepted | left
        self.error: str | None = None
        self.failure: str | None = None
        self._next = OPENING.format(demographics=persona.demographics)
        self._started = False
        self._outcome: EncounterOutcome | None = None

    @property
    def done(self) -> bool:
        return (self.decision is not None or self.error is not None or self.failure is not None
                or self.round >= self.config.max_rounds)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        p = self.persona
        self.sink.emit(CaseStarted(case_id=p.id, objective=f"Discuss the recommended treatment: {p.case.treatment}",
                                   demographics=p.demographics))
        self.sink.emit(OsceStarted(case_id=p.id, persona={"mbti": p.mbti, "gender": p.gender,
                                                          "gender_drawn": p.gender_drawn, "case": p.case.code,
                                                          "title": p.case.title, "case_source": p.case.source},
                                   doctor_brief=doctor_brief(p), max_rounds=self.config.max_rounds))

    def step(self) -> None:
        self.start()
        if self.done:
            return
        self.round += 1
        r = self.round
        final = r == self.config.max_rounds
        try:
            d = self.cast["doctor"].act(Observation(turn=r, text=f"{self._next}\n{LAST_ROUND}" if final else self._next,
                                                    final=final))
            said = _clean(d.said, "Doctor") or "(The doctor says nothing.)"
            self.sink.emit(Utterance(turn=r, speaker="doctor", addressee="patient", text=said, source=d.source))
            p = self.cast["patient"].act(Observation(turn=r, text=f"Doctor: {said}"))
            raw = _clean(p.text, "Patient")
            if not split_marker(raw)[0]:
                # a bare marker (or nothing) is no answer: the embedded 1.5B patient "accepted" in round
                # one with "[DECISION: ACCEPT]" alone. Asked once more to speak; a second bare reply
                # stands if it repeats the first decision. A bare marker that reverses it is no
                # decision (the embedded patient wrote ACCEPT, then LEAVE, and not a word): the round
                # goes on, the marker kept in the log.
                first = split_marker(raw)[1]
                self.sink.emit(ReplyRejected(role="patient", turn=r, problem="no_speech", text=raw[:200], attempt=1))
                p = self.cast["patient"].act(Observation(turn=r, text=NO_SPEECH, answering=f"Doctor: {said}"))
                raw = _clean(p.text, "Patient")
                spoken_again, second, _ = split_marker(raw)
                if not spoken_again and second is not None and first is not None and second != first:
                    self.sink.emit(ReplyRejected(role="patient", turn=r, problem="contradicting_markers",
                                                 text=raw[:200], attempt=2))
                    raw = ""
            spoken = split_marker(raw)[0] or "(The patient says nothing.)"
            self.sink.emit(Utterance(turn=r, speaker="patient", addressee="doctor", text=spoken, source=p.source))
            v = self.stop(raw, case_id=self.persona.id, turn=r, sink=self.sink)
        except RoleFailure as e:
            self.failure = str(e)
            self.sink.emit(ConsultationFailed(turn=r, role=e.role, problem=e.problem, reason=self.failure))
            return
        except LLMError as e:
            self.error = str(e)
            self.sink.emit(CaseError(turn=r, error=self.error))
            return
        self.sink.emit(StopDecision(turn=r, decision=v.decision, rule=v.rule, evidence=v.evidence))
        if v.decision in ("accepted", "left"):
            self.decision = v.decision
        elif final:
            self.sink.emit(TurnLimitReached(turn=r, max_turns=self.config.max_rounds))
        self._next = f"Patient: {spoken}"

    def fail(self, message: str) -> None:
        if self._outcome is None and self.error is None:
            self.error = message
            self.sink.emit(CaseError(turn=self.round, error=message))

    def finish(self) -> EncounterOutcome:
        if self._outcome is not None:
            return self._outcome
        status = ("error" if self.error else "failed" if self.failure else self.decision or "undecided")
        self.sink.emit(ConsultationEnded(status=status, turns=self.round, diagnosis=None, tests_requested=[],
                                         error=self.error, failure=self.failure))
        self._outcome = EncounterOutcome(self.persona.id, status, self.round, self.error, self.failure)
        return self._outcome

    def run(self) -> EncounterOutcome:
        self.start()
        while not self.done:
            self.step()
        return self.finish()
