"""A cast: the participants of one consultation, by role name, built for a case.

:func:`llm_cast` builds LLM participants from per-role models and settings and wraps
them as the protocol asks (guards, technician hints). A run spec (``medsim.spec``)
decides the settings; the world and the bench call the same builder.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from agents.behaviours import (PatientBehaviour, Profile, format_profile, instructions, invented_facts, licensed,
                               with_behaviour)
from agents.biases import NO_BIAS, BiasApplied, bias_text, with_bias
from agents.cases.model import Case
from agents.events import EventSink
from agents.llm.base import LLM, GenerateParams
from agents.llm.calls import RetryPolicy
from agents.participants.base import Participant
from agents.participants.focused import FocusedDoctor
from agents.participants.grounded import Grounded, faithful, patient_corrections
from agents.participants.llm import LLMDoctor, LLMParticipant
from agents.participants.wrappers import Guarded, Hinted, ignored_records, names_a_condition
from agents.protocol import DOCTOR_STRATEGIES
from agents.roles import (CONSULTATION_KINDS, READER, STAFF, doctor_system, patient_system, role_defaults,
                          roles_of_kind)

__all__ = ["CastConfig", "Cast", "CastBuilder", "llm_cast", "default_params", "biased", "behaved"]

Cast = Mapping[str, Participant]
# (case, sink) -> the participants of that case's consultation
CastBuilder = Callable[[Case, EventSink], Cast]


def default_params(role: str, seed: int = 0) -> GenerateParams:
    d = role_defaults(role)
    return GenerateParams(temperature=d.temperature, max_tokens=d.max_tokens, stop=d.stop, seed=seed)


@dataclass(frozen=True)
class CastConfig:
    """How LLM participants are built: the doctor's mode, the prompt style, guards,
    hints, and per-role generation settings and retry policies."""

    doctor_mode: str = "structured"  # structured | markers
    # turns: the doctor decides each turn from the dialogue (LLMDoctor); focused: a running
    # differential and a diagnosis from the summarised record (agents.participants.focused)
    doctor_strategy: str = "turns"
    prompt_style: str = "medsim"  # medsim | agentclinic
    # retries of a reply flagged as refusal / role break / loop / echo / empty; None
    # turns the detectors off (AgentClinic behaviour)
    guard_retries: int | None = 2
    measurement_hints: bool = True  # the technician is shown the records matching an order
    # the patient is given the facts answering each question in its own voice, and a reply the
    # fidelity pre-check finds unfaithful is asked again (agents.participants.grounded)
    patient_grounding: bool = True
    max_turns: int = 20  # told to the doctor
    measurement: bool = True  # a technician is there (the doctor is offered tests)
    static: bool = False  # static QA: the doctor reads the whole case and answers once
    params: Mapping[str, GenerateParams] = field(default_factory=dict)
    retry: Mapping[str, RetryPolicy] = field(default_factory=dict)
    # AgentClinic's bias conditions (agents.biases): appended to that role's system prompt only
    doctor_bias: str | None = None
    patient_bias: str | None = None
    # patient behaviours (agents.behaviours): the patient's profile, () for the cooperative
    # patient (level 0: nothing added anywhere)
    patient_behaviour: Profile = ()

    def params_for(self, role: str) -> GenerateParams:
        return self.params.get(role) or default_params(role)

    def retry_for(self, role: str) -> RetryPolicy:
        return self.retry.get(role) or RetryPolicy()

    def with_seed(self, seed: int) -> "CastConfig":
        roles = set(self.params) | {r.name for r in roles_of_kind(*CONSULTATION_KINDS)}
        return replace(self, params={r: replace(self.params_for(r), seed=seed) for r in roles})


def biased(cfg: CastConfig, role: str, system: str, sink: EventSink) -> str:
    """``system`` with the role's bias appended (``cfg.doctor_bias`` / ``patient_bias``),
    recorded as a ``bias_applied`` event; unchanged without one."""
    name = getattr(cfg, f"{role}_bias", None)
    if not name or name == NO_BIAS:
        return system
    sink.emit(BiasApplied(role=role, bias=name, text=bias_text(role, name)))
    return with_bias(system, role, name)


def behaved(cfg: CastConfig, case: Case, system: str, sink: EventSink) -> tuple[str, tuple[str, ...]]:
    """The patient's ``system`` prompt with its behaviours' texts appended
    (``cfg.patient_behaviour``), recorded as a ``patient_behaviour`` event with the symptoms
    a fabricating patient adds (drawn by the patient's seed); and those symptoms. Unchanged,
    nothing recorded, for the cooperative patient."""
    profile = cfg.patient_behaviour
    if not profile:
        return system, ()
    invented = invented_facts(case, dict(profile).get("fabricate", 0), seed=cfg.params_for("patient").seed)
    sink.emit(PatientBehaviour(behaviour=format_profile(profile), levels=dict(profile),
                               text=instructions(profile, invented), invented=invented,
                               licensed=tuple(sorted(licensed(profile)))))
    return with_behaviour(system, profile, invented), invented


def llm_cast(case: Case, llms: Mapping[str, LLM], cfg: CastConfig, sink: EventSink) -> dict[str, Participant]:
    """The doctor, the patient, every registered staff role (the technician, a nurse) and
    a reader of images (when one is configured) as LLM participants, wrapped per ``cfg``."""
    style = cfg.prompt_style

    def make(role: str, system: str, cls: type = LLMParticipant, **kw: object) -> LLMParticipant:
        return cls(role=role, llm=llms[role], system=system, params=cfg.params_for(role), case_id=case.id,
                   sink=sink, policy=cfg.retry_for(role), **kw)

    system = biased(cfg, "doctor", doctor_system(case, cfg.max_turns, mode=cfg.doctor_mode, style=style,
                                                 measurement=cfg.measurement, static=cfg.static), sink)
    focused = cfg.doctor_strategy == "focused"
    if focused:
        doctor = make("doctor", system, FocusedDoctor, measurement=cfg.measurement, static=cfg.static, case=case)
    elif cfg.doctor_strategy == "turns":
        doctor = make("doctor", system, LLMDoctor, mode=cfg.doctor_mode, measurement=cfg.measurement,
                      static=cfg.static)
    else:
        raise ValueError(f"doctor strategy must be one of {', '.join(DOCTOR_STRATEGIES)}, got {cfg.doctor_strategy!r}")
    grounded = cfg.patient_grounding and style != "agentclinic"
    patient_prompt, invented = behaved(cfg, case, biased(cfg, "patient", patient_system(case, style=style,
                                                                                     grounded=grounded), sink), sink)
    patient = make("patient", patient_prompt)
    cast: dict[str, Participant] = {"doctor": doctor, "patient": patient}
    staff = [r for r in roles_of_kind(STAFF) if r.name in llms and r.system is not None]
    for r in staff:
        cast[r.name] = make(r.name, r.system(case, style, cfg.measurement_hints))  # type: ignore[misc]
    for r in roles_of_kind(READER):  # reads returned images for the doctor, when a model is configured
        reader = llms.get(r.name)
        if reader is not None and r.system is not None and getattr(reader, "name", "") not in ("none", "human"):
            cast[r.name] = make(r.name, r.system(case, style, False))
    if cfg.guard_retries is not None and not focused:  # the focused doctor checks its own diagnosis
        cast["doctor"] = Guarded(doctor, retries=cfg.guard_retries, checks=(names_a_condition(doctor.parse),),
                                 last_stands=("not_a_condition",))
    if cfg.guard_retries is not None:
        cast["patient"] = (Guarded(patient, retries=cfg.guard_retries,
                                   checks=(faithful(case, licensed(cfg.patient_behaviour)),),
                                   corrections=patient_corrections(case)) if grounded
                           else Guarded(patient, retries=cfg.guard_retries))
        # one retry for a staff role: when it ignores the records, the records
        # themselves are the recorded fallback (see Hinted)
        for r in staff:
            cast[r.name] = Guarded(cast[r.name], retries=min(1, cfg.guard_retries),  # type: ignore[arg-type]
                                   checks=(ignored_records,))
    if grounded:
        cast["patient"] = Grounded(cast["patient"], case, sink, profile=cfg.patient_behaviour, invented=invented)
    if cfg.measurement_hints:
        for r in staff:
            cast[r.name] = Hinted(cast[r.name], case, sink)
    return cast
