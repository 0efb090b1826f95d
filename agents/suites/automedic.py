"""The AutoMedic protocol: a tagged dialogue, then the multiple-choice question.

A case converted from a multiple-choice item (``agents.suites.automedic_convert``) holds
the original question, options and answer in ``case.extra["AutoMedic"]``. The doctor is
told the demographics only and talks, one tag per turn, to the patient (``<patient>``)
or the clinical staff (``<clinical>``: the technician, who holds vitals, exam, labs and
imaging) and ends with ``</end>``, in at most ``max_turns`` turns (20). Then, with the
dialogue in its context, it answers the question's last sentence and the options (the
vignette left out); the patient rates its empathy 1-5; and the same model, in a fresh
context, answers the whole question (the static baseline). Everything is logged before
``consultation_ended``; the CARE scorer (``agents.suites.care``) reads it.

Tags are read leniently (``<Patient>``, ``< clinical >``, ``<end>``, ``[patient]``) and
an untagged turn falls back to AgentClinic's markers (``REQUEST TEST:`` -> staff,
``DIAGNOSIS READY:`` -> end) or goes to the patient; every rule is in the ``route`` event.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from agents.cases.model import Case
from agents.consultation import LAST_TURN, Consultation, ConsultationConfig, ConsultationOutcome, TurnRecord
from agents.events import DiagnosisGiven, EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import generate_logged
from agents.participants.base import Observation, RoleFailure, Turn
from agents.participants.cast import CastConfig, biased, llm_cast
from agents.participants.llm import LLMParticipant
from agents.participants.wrappers import Guarded
from agents.prompts import render
from agents.protocol import DoctorAction, parse_doctor_turn
from agents.suites.automedic_events import DialogueEnded, EmpathyRated, McqAnswered

__all__ = ["MCQ_KEY", "Mcq", "mcq_of", "parse_tagged_turn", "parse_choice", "parse_rating", "answer_schema",
           "RATING_SCHEMA", "AutomedicDoctor", "AutomedicCast", "automedic_cast", "AutomedicConsultation",
           "format_options", "strip_tags", "AUTOMEDIC_LAST_TURN"]

MCQ_KEY = "AutoMedic"  # the case's extra field holding the original item
AUTOMEDIC_LAST_TURN = "(This is your last turn: end the dialogue now with </end>.)"


@dataclass(frozen=True)
class Mcq:
    question: str  # the whole item (vignette and question)
    query: str  # the question without the vignette (its last sentence)
    options: dict[str, str]  # letter -> text
    answer_letter: str

    @property
    def answer(self) -> str:
        return self.options[self.answer_letter]


class McqMissing(ValueError):
    """A case without the multiple-choice item the AutoMedic protocol asks about."""


def mcq_of(case: Case) -> Mcq:
    d = case.extra.get(MCQ_KEY)
    if not isinstance(d, Mapping):
        raise McqMissing(f"case {case.id} has no '{MCQ_KEY}' field (the multiple-choice item): the automedic "
                         "protocol runs cases made by `medsim automedic convert`")
    opts = d.get("options")
    letter = d.get("answer_letter")
    if (not isinstance(opts, Mapping) or not opts or not all(isinstance(v, str) for v in opts.values())
            or letter not in opts or not isinstance(d.get("question"), str)):
        raise McqMissing(f"case {case.id}: '{MCQ_KEY}' needs question, options (letter -> text) and answer_letter "
                         "(one of the options)")
    query = d.get("query") if isinstance(d.get("query"), str) and d.get("query") else d["question"]
    return Mcq(d["question"], query, {str(k): v for k, v in opts.items()}, str(letter))


def format_options(options: Mapping[str, str]) -> str:
    return "\n".join(f"{k}. {v}" for k, v in options.items())


# -- the doctor's tags ----------------------------------------------------------------
_END = re.compile(r"<\s*/\s*end\s*>|<\s*end\s*/?\s*>|\[\s*/?\s*end\s*\]", re.IGNORECASE)
_TAG = re.compile(r"<\s*(patient|clinical)\s*>|\[\s*(patient|clinical)\s*\]", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*(patient|clinical)\s*>|\[\s*/\s*(patient|clinical)\s*\]", re.IGNORECASE)


def strip_tags(text: str) -> str:
    return " ".join(_CLOSE.sub(" ", _TAG.sub(" ", _END.sub(" ", text))).split())


def parse_tagged_turn(text: str) -> DoctorAction:
    """A doctor turn -> ask (``<patient>``), test (``<clinical>``; the staff answer it) or
    diagnose (``</end>``: the dialogue is over; its text is ``</end>``). The first tag
    decides; ``</end>`` wins over a question in the same turn."""
    if _END.search(text):
        return DoctorAction("diagnose", "</end>", "tag_end")
    m = _TAG.search(text)
    if m:
        who = (m.group(1) or m.group(2)).lower()
        rest = text[m.end():]
        nxt = _TAG.search(rest)  # a second tag starts another message: the first one is the turn
        payload = " ".join(_CLOSE.sub(" ", rest[: nxt.start()] if nxt else rest).split())
        note = "a second tag in the turn was dropped" if nxt else ""
        if not payload:
            return DoctorAction("ask", "", "tag_empty", note=f"<{who}> with nothing after it")
        return DoctorAction("test" if who == "clinical" else "ask", payload, f"tag_{who}", note=note)
    fb = parse_doctor_turn(text)
    if fb.kind == "diagnose":
        return DoctorAction("diagnose", "</end>", f"untagged_end:{fb.rule}", note="a diagnosis marker ends the dialogue")
    if fb.kind == "test":
        return DoctorAction("test", fb.text, f"untagged_clinical:{fb.rule}", note="a test marker goes to the staff")
    return DoctorAction("ask", fb.text, "untagged_patient", note="no tag: sent to the patient")


# -- answers ----------------------------------------------------------------------------
def answer_schema(options: Mapping[str, str]) -> dict[str, Any]:
    """The bounded answer (an enum of the letters keeps a small model's reply valid)."""
    return {"type": "object", "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"], "additionalProperties": False}


RATING_SCHEMA = {"type": "object", "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5},
                                                  "reason": {"type": "string", "maxLength": 160}},
                 "required": ["rating"], "additionalProperties": False}

_LETTER = re.compile(r"^\W*(?:(?:the\s+)?(?:final\s+)?answer(?:\s+is)?\s*[:\-]?\s*)?\(?([A-Za-z])\)?(?:[.):]|\s*$)",
                     re.IGNORECASE)


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())


def parse_choice(text: str, options: Mapping[str, str]) -> tuple[str | None, str]:
    """A reply -> (option letter, rule): JSON ``{"answer": "C"}``, a bare or lead-in
    letter ("C", "(C)", "Answer: C."), or exactly one option's text; else (None,
    ``not_in_options``)."""
    raw = text.strip()
    try:
        obj = json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("answer"), str):
        raw = obj["answer"].strip()
        if raw in options:
            return raw, "json"
    letters = {k.upper(): k for k in options}
    m = _LETTER.match(raw)
    if m and m.group(1).upper() in letters:
        return letters[m.group(1).upper()], "letter"
    low = _norm(raw)
    hits = [k for k, v in options.items() if _norm(v) and _norm(v) in low]
    if len(hits) == 1:
        return hits[0], "option_text"
    if len(hits) > 1:  # "B. Aortic stenosis" against "Aortic stenosis" and "Stenosis": the longest
        best = max(hits, key=lambda k: len(_norm(options[k])))
        if all(_norm(options[k]) in _norm(options[best]) for k in hits):
            return best, "option_text"
    return None, "not_in_options"


def parse_rating(text: str) -> tuple[int | None, str]:
    raw = text.strip()
    try:
        obj = json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("rating"), (int, float)) and not isinstance(obj["rating"], bool):
        v = obj["rating"]
        if 1 <= v <= 5 and float(v).is_integer():
            return int(v), "json"
    m = re.search(r"\b([1-5])\s*(?:/|out of)\s*5\b", raw) or re.fullmatch(r"\W*([1-5])\W*", raw)
    if m:
        return int(m.group(1)), "number"
    return None, "unparsed"


# -- participants -------------------------------------------------------------------------
class AutomedicDoctor(LLMParticipant):
    """The doctor of the tagged dialogue. The engine's last-turn line (AgentClinic's
    "give your diagnosis now") is replaced by the protocol's ("end with </end>")."""

    def draft(self, obs: Observation, message: str, params: GenerateParams) -> str:
        return super().draft(obs, message.replace(LAST_TURN, AUTOMEDIC_LAST_TURN), params)

    def commit(self, message: str, reply: str) -> None:
        super().commit(message.replace(LAST_TURN, AUTOMEDIC_LAST_TURN), reply)

    def to_turn(self, obs: Observation, reply: str) -> Turn:
        text = reply.strip()
        action = parse_tagged_turn(text)
        spoken = strip_tags(text) if action.kind == "diagnose" else action.text
        return Turn(text=text, action=action, spoken=spoken)


class AutomedicCast(dict):
    """The cast (role -> participant) with the doctor's and the patient's own LLM
    participants, which the engine asks after the dialogue (unguarded: a reply that
    names no option is a robustness failure, not a retry)."""

    doctor_llm: LLMParticipant
    patient_llm: LLMParticipant
    mcq: Mcq


def automedic_cast(case: Case, llms: Mapping[str, LLM], cfg: CastConfig, sink: EventSink) -> AutomedicCast:
    """Patient and staff as in :func:`agents.participants.llm_cast` (biases included); the
    doctor is the tagged one. The scripted backend plays the protocol through
    :class:`agents.suites.automedic_scripted.AutomedicScriptedLLM`."""
    from agents.suites.automedic_scripted import for_automedic

    mcq = mcq_of(case)
    llms = {r: for_automedic(m) for r, m in llms.items()}
    base = llm_cast(case, llms, replace(cfg, doctor_bias=None), sink)  # the doctor's bias goes to its own prompt
    system = biased(cfg, "doctor", render("automedic_doctor", demographics=case.demographics,
                                          objective=case.objective, max_turns=cfg.max_turns), sink)
    doctor = AutomedicDoctor(role="doctor", llm=llms["doctor"], system=system, params=cfg.params_for("doctor"),
                             case_id=case.id, sink=sink, policy=cfg.retry_for("doctor"))
    cast = AutomedicCast(base)
    cast["doctor"] = Guarded(doctor, retries=cfg.guard_retries) if cfg.guard_retries is not None else doctor
    patient = base["patient"]
    cast.doctor_llm = doctor
    while not isinstance(patient, LLMParticipant) and hasattr(patient, "inner"):  # Grounded, Guarded: the model itself
        patient = patient.inner
    cast.patient_llm = patient  # type: ignore[assignment]
    cast.mcq = mcq
    return cast


# -- the engine -------------------------------------------------------------------------
class AutomedicConsultation(Consultation):
    """A consultation whose doctor ends the dialogue with ``</end>``; then the questions
    (see the module's docstring). ``diagnosis`` is the chosen option ("C. text"), or the
    raw reply when it named none."""

    def __init__(self, case: Case, cast: AutomedicCast, config: ConsultationConfig, sink: EventSink):
        super().__init__(case, cast, config, sink)
        self.kit = cast
        self._ended = False

    @property
    def done(self) -> bool:
        return super().done or (self._ended and self._pending is None)

    def answer(self) -> TurnRecord | None:
        p = self._pending
        if p is None or p.action.kind != "diagnose":
            return super().answer()
        self._pending = None
        self._ended = True
        self.sink.emit(DialogueEnded(turn=p.turn, rule=p.action.rule))
        rec = TurnRecord(p.turn, p.doctor_text, p.action, None, None)
        self.transcript.append(rec)
        return rec

    def finish(self) -> ConsultationOutcome:
        if self._outcome is None and self.error is None:
            try:
                self._questions()
            except (LLMError, RoleFailure) as e:
                self._stop(self.turn, e)
        return super().finish()

    def _questions(self) -> None:
        kit, mcq, t = self.kit, self.kit.mcq, self.turn
        schema = json.dumps(answer_schema(mcq.options), sort_keys=True)
        if self.failure is None:
            if not self._ended:
                self.sink.emit(DialogueEnded(turn=t, rule="turn_limit"))
            doc = kit.doctor_llm
            msg = render("automedic_question", query=mcq.query, options=format_options(mcq.options))
            obs = Observation(turn=t, text=msg, final=True)
            reply = doc.draft(obs, msg, replace(doc.params, response_schema=schema, stop=(), max_tokens=40))
            doc.commit(msg, reply)
            letter, rule = parse_choice(reply, mcq.options)
            self.sink.emit(McqAnswered(turn=t, mode="conversation", raw=reply.strip(), letter=letter, rule=rule,
                                       answer_letter=mcq.answer_letter))
            self.diagnosis = f"{letter}. {mcq.options[letter]}" if letter else (" ".join(reply.split())[:200] or None)
            if self.diagnosis:
                self.sink.emit(DiagnosisGiven(turn=t, diagnosis=self.diagnosis))
            pat = kit.patient_llm
            rmsg = render("automedic_rating")
            rating_params = replace(pat.params, response_schema=json.dumps(RATING_SCHEMA, sort_keys=True), stop=(),
                                    max_tokens=80)
            rreply = pat.draft(Observation(turn=t, text=rmsg), rmsg, rating_params)
            value, rrule = parse_rating(rreply)
            self.sink.emit(EmpathyRated(turn=t, rating=value, rule=rrule, raw=rreply.strip()[:400]))
        # the static baseline: the same model, a fresh context, the whole question
        doc = kit.doctor_llm
        messages = [Message("system", render("automedic_static")),
                    Message("user", render("automedic_static_user", question=mcq.question,
                                           options=format_options(mcq.options)))]
        out = generate_logged(doc.llm, messages, replace(doc.params, response_schema=schema, stop=(), max_tokens=40),
                              CallContext("doctor", self.case.id, t), self.sink, doc.policy)
        letter, rule = parse_choice(out.text, mcq.options)
        self.sink.emit(McqAnswered(turn=t, mode="static", raw=out.text.strip(), letter=letter, rule=rule,
                                   answer_letter=mcq.answer_letter))
