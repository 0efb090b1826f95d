"""Run assembly: a :class:`~medsim.spec.RunSpec` -> backends, participants, scorers.

Everything that runs consultations (bench, consult, play, replay, score, the benchmark
scripts) builds them here from a spec and nothing else, so a run is exactly what its
spec (stored in every log header) says.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.consultation import Consultation, ConsultationConfig
from agents.events import EventSink
from agents.llm.a2a import A2ALLM
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.llm.registry import backend_kind, find_backend_kind
from agents.llm.spec import BackendSpecError, build_backend, describe_spec
from agents.learning import Learner
from agents.participants import CastConfig, HumanIO, HumanParticipant, Participant, llm_cast
from agents.deliberation import DeliberationConfig, Deliberating
from agents.roles import role_defaults
from agents.scorers import DiagnosisScorer, Scorer
from medsim.spec import RoleSpec, RunSpec

__all__ = ["AssemblyError", "Backends", "RunPlan", "plan_for", "cast_config", "consultation_config", "scorers_for",
           "is_automedic", "pool_for", "batched_roles",
           "role_params", "preflight", "preflight_roles", "describe_roles"]


class AssemblyError(RuntimeError):
    """The run cannot be assembled (a missing model file, a dead server): nothing ran."""


def role_params(role: str, rs: RoleSpec, seed: int) -> GenerateParams:
    return GenerateParams(temperature=rs.temperature, max_tokens=rs.max_tokens, stop=role_defaults(role).stop,
                          seed=seed, timeout_s=rs.timeout_s)


def consultation_config(spec: RunSpec) -> ConsultationConfig:
    p = spec.protocol
    if p.static:  # static QA: one turn, a diagnosis, nothing to gather
        return ConsultationConfig(max_turns=1, min_gathering=0, measurement=False)
    return ConsultationConfig(max_turns=p.max_turns, min_gathering=p.min_gathering, measurement=p.measurement,
                              budget=p.budget)


def cast_config(spec: RunSpec, seed: int) -> CastConfig:
    p = spec.protocol
    return CastConfig(
        doctor_mode=p.doctor_mode, prompt_style=p.prompt_style,
        guard_retries=p.guard_retries if p.guards else None, measurement_hints=p.measurement_hints,
        max_turns=1 if p.static else p.max_turns, measurement=p.measurement and not p.static, static=p.static,
        params={r: role_params(r, rs, seed) for r, rs in spec.roles.items()},
        retry={r: RetryPolicy(retries=rs.retries, backoff_s=rs.backoff_s) for r, rs in spec.roles.items()},
        doctor_bias=p.doctor_bias, patient_bias=p.patient_bias,
    )


def is_automedic(spec: RunSpec) -> bool:
    """AutoMedic's protocol (agents.suites.automedic): a tagged dialogue, then the question."""
    return spec.protocol.name == "automedic" and not spec.protocol.static


def scorers_for(spec: RunSpec, judge: LLM, params: GenerateParams, policy: RetryPolicy) -> list[Scorer]:
    """The scorers of a run: the judged diagnosis, or for AutoMedic's protocol the option
    letter against the key and CARE (no judge: the scorers are deterministic)."""
    if is_automedic(spec):
        from agents.suites.care import CareScorer, McqScorer

        return [McqScorer(), CareScorer()]
    return [DiagnosisScorer(judge, params, policy)]


def _model_file(backend: str) -> str | None:
    """The model file an in-process backend loads (resolved as LlamaCppLLM resolves it),
    or None: not in process, served by the serial path (a projector's model), or not
    installed (the backend's own check says so when the run is assembled): its kind's
    :meth:`~agents.llm.backend_kind.BackendKind.model_file`."""
    kind = find_backend_kind(backend)
    if kind is None or not kind.in_process or not kind.decodes_batched(backend):
        return None
    return kind.model_file(backend)


def batched_roles(spec: RunSpec) -> dict[str, int]:
    """Per in-process model file, the roles of one case that call it: the most over the
    spec's conditions (the reflector only when a condition learns)."""
    out: dict[str, int] = {}
    for name in spec.condition_names():
        s = spec.for_condition(name)
        per: dict[str, int] = {}
        for role, rs in s.roles.items():
            if role == "reflector" and s.memory.mode != "learn":
                continue
            path = _model_file(rs.backend)
            if path is not None:
                per[path] = per.get(path, 0) + 1
        for path, n in per.items():
            out[path] = max(out.get(path, 0), n)
    return out


def pool_for(spec: RunSpec, *, n_ctx: int = 4096, n_threads: int | None = None) -> LlamaPool:
    """The run's llama.cpp pool. Serial (one call at a time per model file, a context per
    role) unless ``spec.decodes_batched`` with ``workers > 1``: then each in-process model file
    gets one context of a sequence per (case running at once, role calling that file),
    :func:`~agents.llm.batched.batch_shape`, and the cases' calls decode together."""
    if not spec.decodes_batched or spec.workers < 2 or spec.executor != "local":
        return LlamaPool(n_ctx=n_ctx, n_threads=n_threads)
    from agents.llm.batched import batch_shape

    shapes = {path: batch_shape(spec.workers, roles, n_ctx) for path, roles in batched_roles(spec).items()}
    return LlamaPool(n_ctx=n_ctx, n_threads=n_threads, shapes=shapes)


def describe_roles(spec: RunSpec) -> dict[str, str]:
    return {r: describe_spec(rs.backend, rs.model) for r, rs in spec.roles.items()}


class Backends:
    """One backend per distinct (backend, model) across the spec's roles and conditions
    (the scripted fake also per seed); built, and so checked, when asked for.
    ``override``: backends by role name that replace the spec's (tests inject fakes;
    replay injects the recorded outputs)."""

    def __init__(self, cases: Mapping[str, Case], pool: LlamaPool, *, override: Mapping[str, LLM] | None = None):
        self.cases, self.pool = dict(cases), pool
        self.override = dict(override or {})
        self._built: dict[tuple[str, str | None, int], LLM] = {}

    def get(self, role: str, rs: RoleSpec, seed: int) -> LLM:
        if role in self.override:
            return self.override[role]
        try:
            kind = backend_kind(rs.backend)
            key = (rs.backend, rs.model, seed if kind.seeded else 0)
            if key not in self._built:  # its kind checks what it names (a gguf: path is a GGUF file)
                self._built[key] = build_backend(rs.backend, model=rs.model, cases=self.cases, seed=seed,
                                                 pool=self.pool)
        except BackendSpecError as e:
            raise AssemblyError(f"roles.{role}.backend: {e}") from None
        return self._built[key]

    def check(self, spec: RunSpec) -> None:
        """Build every backend the spec names (missing model files and uninstalled
        models are found here, before anything is written)."""
        for name in spec.condition_names():
            s = spec.for_condition(name)
            for role, rs in s.roles.items():
                self.get(role, rs, spec.seeds[0])


def preflight_roles(roles: Mapping[str, RoleSpec], llms: Mapping[str, LLM] | None = None) -> None:
    """Ask each backend the roles name, once, whether it is there (its kind's
    :meth:`~agents.llm.backend_kind.BackendKind.preflight`: a server whether it serves the
    model, an A2A agent for its card); fail fast naming the role, the URL and the reason.
    An agent's backend among ``llms`` keeps its card (its name then records the agent's
    name and version: :meth:`agents.llm.a2a.A2ALLM.check`)."""
    seen: set[tuple[str, str | None]] = set()
    for role, rs in roles.items():
        if (rs.backend, rs.model) in seen:
            continue
        seen.add((rs.backend, rs.model))
        kind = backend_kind(rs.backend)
        try:
            kind.preflight(rs.backend, rs.model, timeout_s=min(10.0, rs.timeout_s), llm=(llms or {}).get(role))
        except LLMError as e:
            raise AssemblyError(f"roles.{role}: the {kind.preflight_subject} check failed before the run: "
                                f"{e}") from None


def preflight(spec: RunSpec, *, skip_roles: Sequence[str] = (), backends: "Backends | None" = None) -> None:
    """:func:`preflight_roles` for every role of every condition of ``spec`` (but
    ``skip_roles``, whose backends a caller replaced); ``backends``: the run's, whose A2A
    agents keep their cards."""
    for name in spec.condition_names():
        roles = {r: rs for r, rs in spec.for_condition(name).roles.items() if r not in skip_roles}
        llms = {r: backends.get(r, rs, spec.seeds[0]) for r, rs in roles.items()} if backends is not None else None
        preflight_roles(roles, llms)


@dataclass
class RunPlan:
    """One (condition, seed) of a spec, assembled: what a consultation of that cell
    needs."""

    spec: RunSpec  # the condition's view (its protocol and roles)
    condition: str
    seed: int
    llms: dict[str, LLM]
    header_spec: dict  # the whole spec (every condition) as stored in each log header
    human_io: HumanIO | None = None  # how a person playing a role is asked (terminal, game)
    memory: Any = None  # the case memory the doctor consults (agents.recall.Recall), or None
    learn: bool = False  # finished cases teach the memory (agents.learning.Learner)
    # what each log header records beyond the spec (agents.provenance.run_provenance); set by the caller
    provenance: dict = field(default_factory=dict)
    consultation: ConsultationConfig = field(init=False)
    cast_cfg: CastConfig = field(init=False)
    scorers: list[Scorer] = field(init=False)
    models: dict[str, str] = field(init=False)
    learner: Learner | None = field(init=False)

    def __post_init__(self) -> None:
        self.consultation = consultation_config(self.spec)
        self.cast_cfg = cast_config(self.spec, self.seed)
        judge = self.spec.role("judge")
        self.scorers = scorers_for(self.spec, self.llms["judge"], role_params("judge", judge, self.seed),
                                   RetryPolicy(retries=judge.retries, backoff_s=judge.backoff_s))
        self.models = describe_roles(self.spec)
        if self.spec.memory.mode == "off":
            self.memory = None
        self.learner = None
        if self.learn and self.memory is not None:
            reflector = self.spec.role("reflector")
            self.learner = Learner(self.memory, self.llms["reflector"], role_params("reflector", reflector, self.seed),
                                   self.llms["doctor"], self.llms["judge"], role_params("judge", judge, self.seed),
                                   RetryPolicy(retries=reflector.retries, backoff_s=reflector.backoff_s))
        for role, llm in self.llms.items():
            if getattr(llm, "name", "").startswith("replay"):
                self.models[role] = f"replay of {self.models.get(role, '?')}"
            elif isinstance(llm, A2ALLM):  # a2a:URL#NAME@VERSION once its card was read (preflight)
                self.models[role] = llm.name

    def consultation_for(self, case: Case, sink: EventSink) -> Consultation:
        """The case's consultation engine with its cast: AutoMedic's for that protocol."""
        if is_automedic(self.spec):
            from agents.suites.automedic import AutomedicConsultation, automedic_cast

            return AutomedicConsultation(case, automedic_cast(case, self.llms, self.cast_cfg, sink), self.consultation,
                                         sink)
        return Consultation(case, self.cast(case, sink), self.consultation, sink)

    def cast(self, case: Case, sink: EventSink) -> dict[str, Participant]:
        cast = llm_cast(case, self.llms, self.cast_cfg, sink)
        for role in self.spec.human_roles():
            if self.human_io is None:
                raise AssemblyError(f"roles.{role} is played by a person: use `medsim consult --as {role}` "
                                    f"or `medsim play --as {role}`")
            cast[role] = HumanParticipant(role, self.human_io)
        d = self.spec.diagnosis
        dcfg = DeliberationConfig(cot=d.cot, ensemble=d.ensemble, panel=d.panel, k=self.spec.memory.k)
        if self.memory is not None or dcfg.active:
            cast["doctor"] = Deliberating(cast["doctor"], case, sink, dcfg, self.memory)
        return cast


def plan_for(spec: RunSpec, condition: str, seed: int, backends: Backends, *,
             human_io: HumanIO | None = None, memory: Any = None, learn: bool = False) -> RunPlan:
    s = spec.for_condition(condition)
    llms = {role: backends.get(role, rs, seed) for role, rs in s.roles.items()}
    # the header holds the spec but where the cell ran: a cell's log is the same on any executor
    return RunPlan(s, condition, seed, llms, spec.to_dict(executor=False), human_io, memory, learn)

