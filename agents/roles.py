"""Role agents: a named role, its model, its system prompt and its own prefix-stable
conversation (so llama.cpp's KV cache is reused from turn to turn)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from agents.cases.model import Case, format_facts
from agents.events import EventSink, ReplyRejected
from agents.guards import CORRECTIONS, check_reply
from agents.llm.base import LLM, CallContext, GenerateParams, Message, Output
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render

__all__ = ["RoleAgent", "RoleFailure", "doctor_system", "patient_system", "measurement_system", "ROLES"]

ROLES = ("doctor", "patient", "measurement", "judge")


def doctor_system(case: Case, max_turns: int, *, mode: str = "markers", style: str = "medsim") -> str:
    """The doctor's system prompt: ``mode`` structured (JSON actions) or markers
    (REQUEST TEST / DIAGNOSIS READY); ``style`` medsim or agentclinic (markers only)."""
    name = "doctor_agentclinic" if style == "agentclinic" else "doctor_structured" if mode == "structured" else "doctor"
    return render(name, objective=case.objective, demographics=case.demographics, max_turns=max_turns)


def patient_system(case: Case, *, style: str = "medsim") -> str:
    facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
    name = "patient_agentclinic" if style == "agentclinic" else "patient"
    return render(name, demographics=case.demographics, facts=format_facts(facts, indent="- "))


def measurement_system(case: Case, *, style: str = "medsim", hinted: bool = False) -> str:
    """With ``hinted`` the records come with each order (only the matching ones), so the
    system prompt does not carry all of them: fewer tokens evaluated per case."""
    if hinted and style != "agentclinic":
        return render("measurement_hinted", demographics=case.demographics)
    return render(
        "measurement_agentclinic" if style == "agentclinic" else "measurement",
        demographics=case.demographics,
        exam=format_facts(case.exam, indent="- ") or "- none recorded",
        tests=format_facts(case.tests, indent="- ") or "- none recorded",
    )


class RoleFailure(RuntimeError):
    """A role kept producing unusable replies after its retries: the consultation failed
    (this is not a wrong diagnosis)."""

    def __init__(self, role: str, problem: str, attempts: int):
        super().__init__(f"{role} reply still {problem} after {attempts} attempts")
        self.role, self.problem, self.attempts = role, problem, attempts


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
    guard_retries: int | None = 2  # None: no detectors (AgentClinic behaviour)
    check: Callable[[str, list[str], str], str | None] | None = None  # extra check (e.g. parse)

    def respond(self, incoming: str, turn: int, params: GenerateParams | None = None) -> Output:
        """Append ``incoming`` as the user message, generate, append the reply. The
        history only grows, so each call's prompt extends the previous one. With guards
        on, a flagged reply is not kept: the role is asked again with a corrective
        instruction added to the same user message (another seed, temperature at least
        0.7); after
        ``guard_retries`` retries :class:`RoleFailure` is raised."""
        previous = [m.content for m in self.history if m.role == "assistant"]
        attempts = 1 + (self.guard_retries or 0)
        base = params or self.params
        sent, params = incoming, base
        for attempt in range(1, attempts + 1):
            messages = [Message("system", self.system), *self.history, Message("user", sent)]
            out = generate_logged(
                self.llm, messages, params, CallContext(self.role, self.case_id, turn), self.sink, self.policy
            )
            if self.guard_retries is None:
                break
            problem = check_reply(self.role, out.text, previous, incoming)
            if problem is None and self.check is not None:
                problem = self.check(out.text, previous, incoming)
            if problem is None:
                break
            self.sink.emit(ReplyRejected(role=self.role, turn=turn, problem=problem, text=out.text, attempt=attempt))
            if attempt == attempts:
                raise RoleFailure(self.role, problem, attempts)
            fix = CORRECTIONS.get(self.role, {}).get(problem, "(Please answer again.)")
            sent = f"{incoming}\n{fix}"
            # another seed and a hotter sample: at low temperature a looping model repeats itself
            params = replace(base, seed=base.seed + attempt, temperature=max(base.temperature, 0.7))
        self.history += [Message("user", sent), Message("assistant", out.text.strip())]
        return out
