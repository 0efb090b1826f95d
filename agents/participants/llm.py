"""LLM participants: a role's model, system prompt and its own prefix-stable
conversation (so llama.cpp's KV cache is reused from turn to turn).

:class:`LLMParticipant` separates drafting a reply (one logged model call, nothing kept)
from committing it to the conversation, so that wrappers (guards) can ask again with
a correction without the rejected reply entering the history.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from agents.addressing import to_patient
from agents.events import EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.participants.base import Observation, Turn
from agents.protocol import DIAGNOSE_SCHEMA, DoctorAction, doctor_schema, parse_doctor_turn, parse_structured_turn, say

__all__ = ["LLMParticipant", "LLMDoctor", "addressed"]


@dataclass
class LLMParticipant:
    role: str
    llm: LLM
    system: str
    params: GenerateParams
    case_id: str
    sink: EventSink
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    history: list[Message] = field(default_factory=list)

    # -- the two halves a wrapper may use --------------------------------------
    def params_for(self, obs: Observation) -> GenerateParams:
        return self.params

    def draft(self, obs: Observation, message: str, params: GenerateParams) -> str:
        """One logged model call on the conversation so far plus ``message``; the
        history is not changed."""
        messages = [Message("system", self.system), *self.history, Message("user", message, images=obs.images)]
        out = generate_logged(self.llm, messages, params, CallContext(self.role, self.case_id, obs.turn),
                              self.sink, self.policy)
        return out.text

    def commit(self, message: str, reply: str) -> None:
        """Keep an accepted exchange: the history only grows, so each call's prompt
        extends the previous one."""
        self.history += [Message("user", message), Message("assistant", reply.strip())]

    def previous_replies(self) -> list[str]:
        return [m.content for m in self.history if m.role == "assistant"]

    def to_turn(self, obs: Observation, reply: str) -> Turn:
        return Turn(text=reply.strip())

    # -- Participant -------------------------------------------------------------
    def act(self, obs: Observation) -> Turn:
        reply = self.draft(obs, obs.text, self.params_for(obs))
        self.commit(obs.text, reply)
        return self.to_turn(obs, reply)


@dataclass
class LLMDoctor(LLMParticipant):
    """The doctor: ``mode`` "structured" constrains each turn to a bounded JSON action
    (a llama.cpp grammar; ``response_format`` for servers) and on the last turn admits
    only a diagnosis; "markers" is AgentClinic's free text (REQUEST TEST: / DIAGNOSIS
    READY:). Every parse names the rule that fired."""

    mode: str = "structured"
    measurement: bool = True  # False: no technician, so no order shape in the schema
    static: bool = False  # static QA: one answer, a diagnosis

    def __post_init__(self) -> None:
        if self.mode not in ("structured", "markers"):
            raise ValueError(f"doctor mode must be 'structured' or 'markers', got {self.mode!r}")
        if self.mode == "structured" or self.static:
            schema = DIAGNOSE_SCHEMA if self.static else doctor_schema(self.measurement)
            self.params = replace(self.params, response_schema=json.dumps(schema, sort_keys=True), stop=())

    def params_for(self, obs: Observation) -> GenerateParams:
        if obs.final and (self.mode == "structured" or self.static):
            return replace(self.params, response_schema=json.dumps(DIAGNOSE_SCHEMA, sort_keys=True))
        return self.params

    def parse(self, reply: str) -> DoctorAction:
        if self.mode == "markers" and not self.static:  # AgentClinic's doctor: its words as it says them
            return parse_doctor_turn(reply)
        return addressed(parse_structured_turn(reply))

    def to_turn(self, obs: Observation, reply: str) -> Turn:
        text = reply.strip()
        action = self.parse(text)
        spoken = say(action) if self.mode == "structured" or self.static else text
        return Turn(text=text, action=action, spoken=spoken)


def addressed(action: DoctorAction) -> DoctorAction:
    """A question of medsim's own doctor as said to the patient: "the patient" as "you"
    (:func:`agents.addressing.to_patient`), the change named in the action's note."""
    if action.kind != "ask":
        return action
    said = to_patient(action.text)
    if said == action.text:
        return action
    note = "; ".join(n for n in (action.note, "'the patient' said as 'you' to the patient") if n)
    return replace(action, text=said, note=note)

