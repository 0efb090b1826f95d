"""Role agents: a named role, its model, its system prompt and its own prefix-stable
conversation (so llama.cpp's KV cache is reused from turn to turn)."""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.cases.model import Case, format_facts
from agents.events import EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, Message, Output
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render

__all__ = ["RoleAgent", "doctor_system", "patient_system", "measurement_system", "ROLES"]

ROLES = ("doctor", "patient", "measurement", "judge")


def doctor_system(case: Case, max_turns: int) -> str:
    return render("doctor", objective=case.objective, demographics=case.demographics, max_turns=max_turns)


def patient_system(case: Case) -> str:
    facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
    return render("patient", demographics=case.demographics, facts=format_facts(facts, indent="- "))


def measurement_system(case: Case) -> str:
    return render(
        "measurement",
        demographics=case.demographics,
        exam=format_facts(case.exam, indent="- ") or "- none recorded",
        tests=format_facts(case.tests, indent="- ") or "- none recorded",
    )


@dataclass
class RoleAgent:
    role: str
    llm: LLM
    system: str
    params: GenerateParams
    case_id: str
    sink: EventSink
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    history: list[Message] = field(default_factory=list)

    def respond(self, incoming: str, turn: int) -> Output:
        """Append ``incoming`` as the user message, generate, append the reply. The
        history only grows, so each call's prompt extends the previous one."""
        messages = [Message("system", self.system), *self.history, Message("user", incoming)]
        out = generate_logged(
            self.llm, messages, self.params, CallContext(self.role, self.case_id, turn), self.sink, self.policy
        )
        self.history += [Message("user", incoming), Message("assistant", out.text.strip())]
        return out
