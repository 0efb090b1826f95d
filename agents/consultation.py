"""The consultation engine (AgentClinic-compatible turns).

The doctor speaks; a test request goes to the measurement technician, a diagnosis ends
the case, anything else goes to the patient. The engine is steppable (``step()`` runs one
doctor turn and its answer) so the world can add walking and time between turns; the
headless bench just calls :func:`run_consultation`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from agents.cases.model import Case
from agents.events import (
    CaseError, CaseFinished, CaseStarted, ConsultationFailed, FallbackReply, DiagnosisGiven, Event, EventSink, LLMCall, PrematureDiagnosis, RouteDecision,
    TestRequested, TestResult, TurnLimitReached, Utterance,
)
from agents.judge import JudgeUnparsed, judge_diagnosis
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy
from agents.findings import match_findings
from agents.guards import normalise_line
from agents.protocol import DIAGNOSE_SCHEMA, DOCTOR_SCHEMA, DoctorAction, parse_doctor_turn, parse_structured_turn, say
from agents.roles import RoleAgent, RoleFailure, doctor_system, measurement_system, patient_system

__all__ = ["ConsultationConfig", "RoleModels", "PendingTurn", "TurnRecord", "ConsultationResult", "Consultation", "run_consultation"]

OPENING = "The patient has come in and sits down. Begin the consultation."
GO_ON = ("Not yet: you have asked {gathered} question(s) or test(s) so far. Ask the patient "
         "a question or order a test before you give a diagnosis.")
LAST_TURN = "(This is your last turn: give your diagnosis now, as DIAGNOSIS READY: [diagnosis].)"


@dataclass(frozen=True)
class ConsultationConfig:
    max_turns: int = 20
    # questions + tests required before a diagnosis is accepted (0 = AgentClinic's rule:
    # accept at any turn). A premature diagnosis is recorded and the doctor told to go on;
    # the last turn always accepts one.
    min_gathering: int = 3
    seed: int = 0
    doctor: GenerateParams = GenerateParams(temperature=0.2, max_tokens=120, stop=("\nPatient:", "\nTechnician:"))
    patient: GenerateParams = GenerateParams(temperature=0.2, max_tokens=100, stop=("\nDoctor:",))
    measurement: GenerateParams = GenerateParams(temperature=0.0, max_tokens=160, stop=("\nDoctor:",))
    judge: GenerateParams = GenerateParams(temperature=0.0, max_tokens=60)
    retry: RetryPolicy = RetryPolicy()
    # "structured": each doctor turn is a schema-constrained JSON action; "markers":
    # AgentClinic's free text with REQUEST TEST: / DIAGNOSIS READY:
    doctor_mode: str = "structured"
    prompt_style: str = "medsim"  # or "agentclinic" (AgentClinic-style role prompts)
    # retries of a reply flagged as refusal / role break / loop / echo / empty; None
    # turns the detectors off (AgentClinic behaviour)
    guard_retries: int | None = 2
    # the technician is shown the records that match the order (helps small models)
    measurement_hints: bool = True

    @classmethod
    def agentclinic(cls, **kw: object) -> "ConsultationConfig":
        """AgentClinic's protocol: marker turns, its style of prompts, a diagnosis
        accepted at any turn, no detectors, no hints."""
        base = dict(doctor_mode="markers", prompt_style="agentclinic", min_gathering=0, guard_retries=None,
                    measurement_hints=False)
        base.update(kw)
        return cls(**base)  # type: ignore[arg-type]

    def with_seed(self, seed: int) -> "ConsultationConfig":
        return replace(
            self, seed=seed,
            doctor=replace(self.doctor, seed=seed), patient=replace(self.patient, seed=seed),
            measurement=replace(self.measurement, seed=seed), judge=replace(self.judge, seed=seed),
        )


@dataclass(frozen=True)
class RoleModels:
    doctor: LLM
    patient: LLM
    measurement: LLM
    judge: LLM


@dataclass(frozen=True)
class TurnRecord:
    turn: int
    doctor_text: str
    action: DoctorAction
    reply_speaker: str | None  # patient | measurement | None (diagnosis)
    reply_text: str | None


@dataclass(frozen=True)
class PendingTurn:
    turn: int
    doctor_text: str  # the model's raw reply
    spoken: str  # what the doctor says aloud (the question, the order, the diagnosis)
    action: DoctorAction
    premature: bool  # a diagnosis before the minimum gathering: the doctor is told to go on


@dataclass(frozen=True)
class ConsultationResult:
    case_id: str
    status: str  # diagnosed | no_diagnosis | failed (a role kept breaking) | error (backend)
    diagnosis: str | None
    correct: bool | None  # None when the case errored
    truth: str
    turns: int
    tests_requested: list[str]
    error: str | None
    failure: str | None
    judge_method: str | None
    judge_rationale: str | None
    llm_calls: int
    prompt_tokens: int
    prompt_tokens_evaluated: int | None
    completion_tokens: int
    model_latency_s: float


class _CallTally:
    """Forwards every event and keeps the LLM calls, for the result's token counts."""

    def __init__(self, inner: EventSink):
        self.inner = inner
        self.calls: list[LLMCall] = []

    def emit(self, event: Event) -> None:
        if isinstance(event, LLMCall):
            self.calls.append(event)
        self.inner.emit(event)


class Consultation:
    def __init__(self, case: Case, models: RoleModels, config: ConsultationConfig, sink: EventSink):
        self.case, self.models, self.config = case, models, config
        self.sink = _CallTally(sink)
        self.turn = 0
        self.diagnosis: str | None = None
        self.error: str | None = None
        self.failure: str | None = None  # a role kept breaking: failed, not wrong
        self.tests_requested: list[str] = []
        self.transcript: list[TurnRecord] = []
        self._next_doctor_input = OPENING
        self._started = False
        self._pending: PendingTurn | None = None
        if config.doctor_mode not in ("structured", "markers"):
            raise ValueError(f"doctor_mode must be 'structured' or 'markers', got {config.doctor_mode!r}")
        mk = lambda role, llm, system, params: RoleAgent(role, llm, system, params, case.id, self.sink,  # noqa: E731
                                                         config.retry, guard_retries=config.guard_retries)
        style = config.prompt_style
        doctor_params = config.doctor
        if config.doctor_mode == "structured":
            doctor_params = replace(doctor_params, response_schema=json.dumps(DOCTOR_SCHEMA, sort_keys=True),
                                    stop=())
        self.doctor = mk("doctor", models.doctor,
                         doctor_system(case, config.max_turns, mode=config.doctor_mode, style=style), doctor_params)
        self.patient = mk("patient", models.patient, patient_system(case, style=style), config.patient)
        self.measurement = mk("measurement", models.measurement, measurement_system(case, style=style, hinted=config.measurement_hints),
                              config.measurement)
        if config.guard_retries is not None:
            # one retry for the technician: when it ignores the records, the records
            # themselves are the recorded fallback (see _run_order)
            self.measurement.guard_retries = min(1, config.guard_retries)
        self._parse = parse_structured_turn if config.doctor_mode == "structured" else parse_doctor_turn


    @property
    def done(self) -> bool:
        if self._pending is not None:
            return False
        return (self.diagnosis is not None or self.error is not None or self.failure is not None or self.turn >= self.config.max_turns)

    def start(self) -> None:
        self._started = True
        self.sink.emit(CaseStarted(case_id=self.case.id, objective=self.case.objective, demographics=self.case.demographics))

    def _respond(self, agent: RoleAgent, incoming: str) -> str:
        return agent.respond(incoming, self.turn).text.strip()

    @property
    def pending(self) -> "PendingTurn | None":
        """The doctor's current turn, spoken but not yet answered (the world walks the
        patient to the lab between :meth:`doctor_turn` and :meth:`answer`)."""
        return self._pending

    def doctor_turn(self) -> "PendingTurn | None":
        """First half of a turn: the doctor speaks and the turn is parsed and routed.
        Returns None when the consultation is already done or the model failed."""
        if not self._started:
            self.start()
        if self.done:
            return None
        if self._pending is not None:
            return self._pending
        self.turn += 1
        t = self.turn
        incoming = self._next_doctor_input
        if t == self.config.max_turns:
            incoming = f"{incoming}\n{LAST_TURN}"
        last_params = None
        if t == self.config.max_turns and self.config.doctor_mode == "structured":
            # the grammar itself demands the diagnosis on the last turn
            last_params = replace(self.doctor.params, response_schema=json.dumps(DIAGNOSE_SCHEMA, sort_keys=True))
        try:
            doctor_text = self.doctor.respond(incoming, self.turn, last_params).text.strip()
        except (LLMError, RoleFailure) as e:
            self._stop(t, e)
            return None
        action = self._parse(doctor_text)
        spoken = say(action) if self.config.doctor_mode == "structured" else doctor_text
        self.sink.emit(Utterance(turn=t, speaker="doctor",
                                 addressee={"ask": "patient", "test": "measurement", "diagnose": "all"}[action.kind],
                                 text=spoken))
        route = {"ask": "patient", "test": "measurement", "diagnose": "diagnosis"}[action.kind]
        self.sink.emit(RouteDecision(turn=t, route=route, rule=action.rule, extracted=action.text, note=action.note))
        gathered = sum(1 for r in self.transcript if r.reply_speaker is not None)
        premature = (action.kind == "diagnose" and gathered < self.config.min_gathering
                     and t < self.config.max_turns)
        if premature:
            self.sink.emit(PrematureDiagnosis(turn=t, diagnosis=action.text, gathered=gathered,
                                              required=self.config.min_gathering))
        elif action.kind == "test":
            self.tests_requested.append(action.text)
            self.sink.emit(TestRequested(turn=t, test=action.text))
        self._pending = PendingTurn(t, doctor_text, spoken, action, premature)
        return self._pending

    def answer(self) -> TurnRecord | None:
        """Second half: the patient or technician answers (or the diagnosis is taken)."""
        p = self._pending
        if p is None:
            return None
        self._pending = None
        t, action = p.turn, p.action
        reply_speaker: str | None = None
        reply: str | None = None
        try:
            if p.premature:
                gathered = sum(1 for r in self.transcript if r.reply_speaker is not None)
                self._next_doctor_input = GO_ON.format(gathered=gathered)
            elif action.kind == "diagnose":
                self.diagnosis = action.text
                self.sink.emit(DiagnosisGiven(turn=t, diagnosis=action.text))
            elif action.kind == "test":
                reply = self._run_order(t, action.text)
                self.sink.emit(TestResult(turn=t, test=action.text, result=reply))
                self.sink.emit(Utterance(turn=t, speaker="measurement", addressee="doctor", text=reply))
                reply_speaker = "measurement"
                self._next_doctor_input = f"Technician: {reply}"
            else:
                reply = self._respond(self.patient, action.text or "(The doctor says nothing.)")
                self.sink.emit(Utterance(turn=t, speaker="patient", addressee="doctor", text=reply))
                reply_speaker = "patient"
                self._next_doctor_input = f"Patient: {reply}"
        except (LLMError, RoleFailure) as e:
            self._stop(t, e)
            return None
        rec = TurnRecord(t, p.doctor_text, action, reply_speaker, reply)
        self.transcript.append(rec)
        if self.diagnosis is None and t >= self.config.max_turns:
            self.sink.emit(TurnLimitReached(turn=t, max_turns=self.config.max_turns))
        return rec

    def step(self) -> TurnRecord | None:
        """One whole turn: the doctor speaks and gets the answer. None when done."""
        if self.doctor_turn() is None:
            return None
        return self.answer()

    def _order_hits(self, test: str) -> list[tuple[str, str]]:
        # an order may name several tests ("CBC, chest X-ray and a CT"): match each
        parts = [p for p in re.split(r"\s*(?:,|;|\band\b|\+|/)\s*", test) if p.strip()] or [test]
        hits: list[tuple[str, str]] = []
        for part in parts:
            for h in match_findings(self.case, part):
                if h not in hits:
                    hits.append(h)
        return hits

    def _run_order(self, turn: int, test: str) -> str:
        """The technician's answer to an order. With hints, the technician is shown the
        matching records and a reply that ignores them is rejected (``ignored_records``);
        if it still ignores them after its retries, the records are reported verbatim and
        the fallback is recorded."""
        if not self.config.measurement_hints:
            return self._respond(self.measurement, f"The doctor orders: {test}")
        hits = self._order_hits(test)
        if not hits:
            return self._respond(self.measurement, f"The doctor orders: {test}\nNo record matches this order.")
        rec = "\n".join(f"- {path}: {value}" for path, value in hits)

        def uses_records(text: str, previous: list[str], incoming: str) -> str | None:
            low = normalise_line(text)
            return None if any(normalise_line(v)[:24] in low for _, v in hits) else "ignored_records"

        self.measurement.check = uses_records
        try:
            return self._respond(self.measurement, f"The doctor orders: {test}\nRecords that match this order:\n{rec}")
        except RoleFailure as e:
            if e.problem != "ignored_records":
                raise
            reply = "RESULTS: " + "; ".join(f"{path}: {value}" for path, value in hits)
            self.sink.emit(FallbackReply(role="measurement", turn=turn, reason=str(e), text=reply))
            return reply
        finally:
            self.measurement.check = None

    def _stop(self, turn: int, e: LLMError | RoleFailure) -> None:
        """A backend error ends the case as an error; a role that kept breaking ends it
        as a failed consultation."""
        if isinstance(e, RoleFailure):
            self._role_failed(turn, e)
        else:
            self._fail(turn, e)

    def _role_failed(self, turn: int, e: RoleFailure) -> None:
        self.failure = str(e)
        self._pending = None
        self.sink.emit(ConsultationFailed(turn=turn, role=e.role, problem=e.problem, reason=self.failure))

    def _fail(self, turn: int, e: Exception) -> None:
        self.error = str(e)
        self._pending = None
        self.sink.emit(CaseError(turn=turn, error=self.error))

    def finish(self) -> ConsultationResult:
        """Judge (unless errored) and close the case."""
        correct: bool | None = None
        method = rationale = None
        if self.error is None and self.failure is None:
            try:
                v = judge_diagnosis(self.diagnosis, self.case.diagnosis, llm=self.models.judge,
                                    params=self.config.judge, case_id=self.case.id, turn=self.turn,
                                    sink=self.sink, policy=self.config.retry)
                correct, method, rationale = v.correct, v.method, v.rationale
            except (LLMError, JudgeUnparsed) as e:
                self.error = f"judge failed: {e}"
                self.sink.emit(CaseError(turn=self.turn, error=self.error))
        status = ("error" if self.error else "failed" if self.failure
                  else "diagnosed" if self.diagnosis else "no_diagnosis")
        if status in ("error", "failed"):
            correct = None
        self.sink.emit(CaseFinished(status=status, turns=self.turn, diagnosis=self.diagnosis, correct=correct))
        calls = self.sink.calls
        evals = [c.prompt_tokens_evaluated for c in calls]
        return ConsultationResult(
            case_id=self.case.id, status=status, diagnosis=self.diagnosis, correct=correct,
            truth=self.case.diagnosis, turns=self.turn, tests_requested=list(self.tests_requested),
            error=self.error, failure=self.failure, judge_method=method, judge_rationale=rationale,
            llm_calls=len(calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            prompt_tokens_evaluated=None if any(e is None for e in evals) else sum(e for e in evals if e is not None),
            completion_tokens=sum(c.completion_tokens for c in calls),
            model_latency_s=round(sum(c.latency_s for c in calls), 4),
        )


def run_consultation(case: Case, models: RoleModels, config: ConsultationConfig, sink: EventSink) -> ConsultationResult:
    c = Consultation(case, models, config, sink)
    c.start()
    while not c.done:
        c.step()
    return c.finish()
