"""The consultation engine (AgentClinic-compatible turns).

The engine asks participants for turns (``agents.participants``): the doctor speaks; a
test request goes to the staff role that answers it (the measurement technician, or a
registered role that claims the order: :func:`agents.roles.staff_for`), a diagnosis ends
the case, anything else goes to the patient. It owns only the protocol's rules (turn limit, minimum
gathering before a diagnosis) and the events; who the participants are (a model, a
script, a replay, a person) and how they are guarded is the cast's business, and
judging is a scorer's (``agents.scorers``), run over the finished log.

The engine is steppable (``doctor_turn()`` then ``answer()``) so the world can add
walking and time between the two halves; the bench just calls :func:`run_consultation`.
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.cases.model import Case
from agents.costs import PriceTable, price_table
from agents.imaging import inspect_image, studies_for
from agents.events import (
    BudgetRefused, CaseError, CaseStarted, ConsultationEnded, ConsultationFailed, DiagnosisGiven, DifferentialGiven, EventSink,
    ImageError, ImageNotRead, ImageRead, ImageReturned, PrematureDiagnosis, RouteDecision, TestRefused, TestRequested,
    TestResult, TurnLimitReached, Utterance,
)
from agents.llm.base import LLMError
from agents.participants.base import Observation, Participant, RoleFailure, Turn
from agents.protocol import DoctorAction, parse_doctor_turn
from agents.roles import speaker_label, staff_for

__all__ = ["ConsultationConfig", "PendingTurn", "TurnRecord", "ConsultationOutcome", "Consultation",
           "run_consultation", "OPENING", "GO_ON", "LAST_TURN"]

OPENING = "The patient has come in and sits down. Begin the consultation."
GO_ON = ("Not yet: you have asked {gathered} question(s) or test(s) so far. Ask the patient "
         "a question or order a test before you give a diagnosis.")
LAST_TURN = "(This is your last turn: give your diagnosis now, as DIAGNOSIS READY: [diagnosis].)"
NO_TECHNICIAN = ("There is no technician today: no test or examination can be done. Ask the patient a question "
                 "or give your diagnosis.")
OVER_BUDGET = ("Not done: {test} would cost {price:.0f} {currency} and this case has {left:.0f} {currency} left of its "
               "budget of {budget:.0f}. Order something cheaper, ask the patient, or give your diagnosis.")
_ROUTE = {"ask": "patient", "diagnose": "diagnosis"}  # an order: the staff role that answers it
_ADDRESSEE = {"ask": "patient", "diagnose": "all"}
TECHNICIAN = "measurement"  # the staff role that answers an order no other one claims


@dataclass(frozen=True)
class ConsultationConfig:
    """The protocol's rules."""

    max_turns: int = 20
    # questions + tests required before a diagnosis is accepted (0 = AgentClinic's rule:
    # accept at any turn). A premature diagnosis is recorded and the doctor told to go on;
    # the last turn always accepts one.
    min_gathering: int = 3
    measurement: bool = True  # a technician does the tests (False: every order is refused)
    budget: float | None = None  # the most a case may spend (visit + tests), priced by ``prices``
    prices: PriceTable | None = None  # agents/costs.toml unless given

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {self.max_turns}")
        if self.min_gathering < 0:
            raise ValueError(f"min_gathering must be 0 or more, got {self.min_gathering}")


@dataclass(frozen=True)
class TurnRecord:
    turn: int
    doctor_text: str
    action: DoctorAction
    reply_speaker: str | None  # patient | the staff role that answered (measurement) | None (diagnosis)
    reply_text: str | None


@dataclass(frozen=True)
class PendingTurn:
    turn: int
    doctor_text: str  # the doctor's raw turn
    spoken: str  # what the doctor says aloud (the question, the order, the diagnosis)
    action: DoctorAction
    premature: bool  # a diagnosis before the minimum gathering: the doctor is told to go on
    source: str = "llm"


@dataclass(frozen=True)
class ConsultationOutcome:
    case_id: str
    status: str  # diagnosed | no_diagnosis | failed (a role kept breaking) | error (backend)
    diagnosis: str | None
    turns: int
    tests_requested: list[str]
    error: str | None
    failure: str | None


class Consultation:
    def __init__(self, case: Case, cast: "dict[str, Participant] | object", config: ConsultationConfig,
                 sink: EventSink):
        missing = [r for r in ("doctor", "patient", TECHNICIAN) if r not in cast]  # type: ignore[operator]
        if missing:
            raise ValueError(f"the cast has no {', '.join(missing)}")
        self.case, self.cast, self.config, self.sink = case, cast, config, sink
        self.turn = 0
        self.diagnosis: str | None = None
        self.error: str | None = None
        self.failure: str | None = None  # a role kept breaking: failed, not wrong
        self.tests_requested: list[str] = []
        self.transcript: list[TurnRecord] = []
        self._next_doctor_input = OPENING
        self._started = False
        self._pending: PendingTurn | None = None
        self._outcome: ConsultationOutcome | None = None
        self._spent = 0.0  # the visit and the tests done so far (for the budget)

    @property
    def done(self) -> bool:
        if self._pending is not None:
            return False
        return (self.diagnosis is not None or self.error is not None or self.failure is not None
                or self.turn >= self.config.max_turns)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._spent = self._prices().visit
            self.sink.emit(CaseStarted(case_id=self.case.id, objective=self.case.objective,
                                       demographics=self.case.demographics))

    @property
    def pending(self) -> PendingTurn | None:
        """The doctor's current turn, spoken but not yet answered (the world walks the
        patient to the lab between :meth:`doctor_turn` and :meth:`answer`)."""
        return self._pending

    def _gathered(self) -> int:
        return sum(1 for r in self.transcript if r.reply_speaker is not None)

    def doctor_turn(self) -> PendingTurn | None:
        """First half of a turn: the doctor speaks and the turn is routed. Returns None
        when the consultation is already done or the turn failed."""
        self.start()
        if self.done:
            return None
        if self._pending is not None:
            return self._pending
        self.turn += 1
        t = self.turn
        final = t == self.config.max_turns
        incoming = f"{self._next_doctor_input}\n{LAST_TURN}" if final else self._next_doctor_input
        may = final or self._gathered() >= self.config.min_gathering
        try:
            turn = self.cast["doctor"].act(Observation(turn=t, text=incoming, final=final, may_diagnose=may))
        except (LLMError, RoleFailure) as e:
            self._stop(t, e)
            return None
        action = turn.action
        if action is None:  # a participant that only speaks: parse its words as AgentClinic's markers
            action = parse_doctor_turn(turn.text)
        spoken = turn.said
        to = self.staff_for(action.text) if action.kind == "test" else _ROUTE[action.kind]
        self.sink.emit(Utterance(turn=t, speaker="doctor", addressee=_ADDRESSEE.get(action.kind, to), text=spoken,
                                 source=turn.source))
        self.sink.emit(RouteDecision(turn=t, route=to, rule=action.rule, extracted=action.text, note=action.note))
        gathered = self._gathered()
        premature = action.kind == "diagnose" and gathered < self.config.min_gathering and not final
        if premature:
            self.sink.emit(PrematureDiagnosis(turn=t, diagnosis=action.text, gathered=gathered,
                                              required=self.config.min_gathering))
        elif action.kind == "test":
            self.tests_requested.append(action.text)
            self.sink.emit(TestRequested(turn=t, test=action.text))
        self._pending = PendingTurn(t, turn.text.strip(), spoken, action, premature, turn.source)
        return self._pending

    def staff_for(self, order: str) -> str:
        """The role of the cast that answers ``order``: the registered staff role that claims
        it (highest priority first), else the technician."""
        role = staff_for(order, present=lambda name: name in self.cast)  # type: ignore[operator]
        return role.name if role is not None else TECHNICIAN

    def _prices(self) -> PriceTable:
        return self.config.prices or price_table()

    def _refusal(self, t: int, test: str) -> str | None:
        """Why an order is not carried out (no technician; over the budget), or None."""
        if not self.config.measurement:
            self.sink.emit(TestRefused(turn=t, test=test, reason="no technician"))
            return NO_TECHNICIAN
        if self.config.budget is not None:
            p = self._prices()
            price, _ = p.test_price(test)
            left = self.config.budget - self._spent
            if price > left:
                self.sink.emit(BudgetRefused(turn=t, test=test, price=price, spent=round(self._spent, 2),
                                             budget=self.config.budget))
                return OVER_BUDGET.format(test=test, price=price, currency=p.currency, left=max(0.0, left),
                                          budget=self.config.budget)
            self._spent += price
        return None

    def _images(self, t: int, order: str) -> list[str]:
        """The images of the studies an order matched: returned (path and hash logged) or
        an error for that study; read by the vision participant when there is one, else
        the doctor has the report alone (and the log says so). Returns the lines the
        doctor reads after the technician's."""
        notes: list[str] = []
        for st in studies_for(self.case, order):
            sha, problem = inspect_image(st.image)
            if problem is not None:
                self.sink.emit(ImageError(turn=t, study=st.test, image=st.image, error=problem))
                notes.append(f"(The {st.modality} image could not be shown: {problem}. Its report stands.)")
                continue
            self.sink.emit(ImageReturned(turn=t, study=st.test, modality=st.modality, body_part=st.body_part,
                                         image=st.image, sha256=sha))
            reader = self.cast.get("vision") if hasattr(self.cast, "get") else None
            if reader is None:
                self.sink.emit(ImageNotRead(turn=t, study=st.test,
                                            reason="no vision model is configured: the doctor has the report alone"))
                continue
            what = f"{st.modality} of the {st.body_part}" if st.body_part else st.modality
            read = reader.act(Observation(turn=t, text=f"Read this image: a {what}.", order=st.test,
                                          images=(st.image,)))
            text = " ".join(read.text.split())
            self.sink.emit(ImageRead(turn=t, study=st.test, text=text, source=read.source))
            notes.append(f"Reading of the {what} image: {text}")
        return notes

    def _reply(self, role: str, obs: Observation) -> Turn:
        return self.cast[role].act(obs)

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
                self._next_doctor_input = GO_ON.format(gathered=self._gathered())
            elif action.kind == "diagnose":
                self.diagnosis = action.text
                self.sink.emit(DiagnosisGiven(turn=t, diagnosis=action.text))
                if action.differential:
                    self.sink.emit(DifferentialGiven.of(t, action.differential))
            elif action.kind == "test" and (refused := self._refusal(t, action.text)) is not None:
                self._next_doctor_input = refused
            elif action.kind == "test":
                staff = self.staff_for(action.text)
                turn = self._reply(staff, Observation(turn=t, text=f"The doctor orders: {action.text}",
                                                      order=action.text))
                reply = turn.text.strip()
                self.sink.emit(TestResult(turn=t, test=action.text, result=reply))
                self.sink.emit(Utterance(turn=t, speaker=staff, addressee="doctor", text=reply, source=turn.source))
                reply_speaker = staff
                notes = self._images(t, action.text)
                self._next_doctor_input = f"{speaker_label(staff)}: {reply}" + "".join(f"\n{n}" for n in notes)
            else:
                turn = self._reply("patient", Observation(turn=t, text=action.text or "(The doctor says nothing.)"))
                reply = turn.text.strip()
                self.sink.emit(Utterance(turn=t, speaker="patient", addressee="doctor", text=reply,
                                         source=turn.source))
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

    def _stop(self, turn: int, e: LLMError | RoleFailure) -> None:
        """A backend error ends the case as an error; a role that kept breaking ends it
        as a failed consultation (never a wrong diagnosis)."""
        self._pending = None
        if isinstance(e, RoleFailure):
            self.failure = str(e)
            self.sink.emit(ConsultationFailed(turn=turn, role=e.role, problem=e.problem, reason=self.failure))
        else:
            self.error = str(e)
            self.sink.emit(CaseError(turn=turn, error=self.error))

    def fail(self, message: str) -> None:
        """End the consultation as an error from outside (a bug, an interrupted run)."""
        if self._outcome is None and self.error is None:
            self.error = message
            self._pending = None
            self.sink.emit(CaseError(turn=self.turn, error=message))

    def finish(self) -> ConsultationOutcome:
        """Close the consultation (judging is a scorer's job, over the log)."""
        if self._outcome is not None:
            return self._outcome
        status = ("error" if self.error else "failed" if self.failure
                  else "diagnosed" if self.diagnosis else "no_diagnosis")
        self.sink.emit(ConsultationEnded(status=status, turns=self.turn, diagnosis=self.diagnosis,
                                         tests_requested=list(self.tests_requested), error=self.error,
                                         failure=self.failure))
        self._outcome = ConsultationOutcome(self.case.id, status, self.diagnosis, self.turn,
                                            list(self.tests_requested), self.error, self.failure)
        return self._outcome


def run_consultation(case: Case, cast: "dict[str, Participant]", config: ConsultationConfig,
                     sink: EventSink) -> ConsultationOutcome:
    c = Consultation(case, cast, config, sink)
    c.start()
    while not c.done:
        c.step()
    return c.finish()
