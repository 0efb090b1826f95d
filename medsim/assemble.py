"""Run assembly: a :class:`~medsim.spec.RunSpec` -> backends, participants, scorers.

Everything that runs consultations (bench, consult, play, replay, score, the benchmark
scripts) builds them here from a spec and nothing else, so a run is exactly what its
spec (stored in every log header) says.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from agents.cases.model import Case
from agents.events import EventSink, Header
from agents.provenance import git_revision, package_versions
from agents.llm.a2a import A2ALLM
from agents.llm.backend_kind import BackendKind
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.llm.registry import backend_kind, find_backend_kind
from agents.llm.spec import BackendSpecError, build_backend, describe_spec
from agents.learning import Learner
from agents.participants import HumanIO
from agents.roles import role_defaults
from agents.scorers import Scorer
from agents.suites.contract import Suite, Unit, Units
from medsim.spec import RoleSpec, RunSpec

__all__ = ["AssemblyError", "Backends", "RunPlan", "plan_for", "pool_for", "batched_roles",
           "role_params", "preflight", "preflight_roles", "describe_roles"]


class AssemblyError(RuntimeError):
    """The run cannot be assembled (a missing model file, a dead server): nothing ran."""


def role_params(role: str, rs: RoleSpec, seed: int, suite: Suite | None = None) -> GenerateParams:
    """A role's generation settings: its spec's, with the stop sequences of the role (or
    the suite's for it: OSCE's roles have none)."""
    stop = (suite.role_defaults(role) if suite is not None else {}).get("stop", role_defaults(role).stop)
    return GenerateParams(temperature=rs.temperature, max_tokens=rs.max_tokens, stop=tuple(stop), seed=seed,
                          timeout_s=rs.timeout_s)


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
        return LlamaPool(n_ctx=n_ctx, n_threads=n_threads, jump_forward=spec.jump_forward)
    from agents.llm.batched import batch_shape

    shapes = {path: batch_shape(spec.workers, roles, n_ctx) for path, roles in batched_roles(spec).items()}
    return LlamaPool(n_ctx=n_ctx, n_threads=n_threads, shapes=shapes, jump_forward=spec.jump_forward)


def describe_roles(spec: RunSpec) -> dict[str, str]:
    """Each role's backend as logs and reports name it; in a study, the doctor is the
    person, by their label."""
    out = {r: describe_spec(rs.backend, rs.model) for r, rs in spec.roles.items()}
    if spec.study is not None:
        out["doctor"] = f"human ({spec.study.label})"
    return out


class Backends:
    """One backend per distinct (backend, model) across the spec's roles and conditions
    (the scripted fake also per seed); built, and so checked, when asked for.
    ``override``: backends by role name that replace the spec's (tests inject fakes;
    replay injects the recorded outputs); ``scripted(seed)``: the suite's own fake for the
    ``scripted`` backend (default: the case-playing one over ``cases``). ``wrap(kind, llm)``:
    what each built backend becomes (the live hospital passes its in-process model's calls
    through a :class:`~agents.llm.schedule.ModelGate`)."""

    def __init__(self, cases: Mapping[str, Case], pool: LlamaPool, *, override: Mapping[str, LLM] | None = None,
                 scripted: Callable[[int], LLM | None] | None = None,
                 wrap: Callable[[BackendKind, LLM], LLM] | None = None):
        self.cases, self.pool = dict(cases), pool
        self.override = dict(override or {})
        self.scripted = scripted
        self.wrap = wrap
        self._built: dict[tuple[str, str | None, int, str | None], LLM] = {}  # backend, model, seed, history

    @classmethod
    def for_run(cls, spec: RunSpec, units: Units, pool: LlamaPool, *, override: Mapping[str, LLM] | None = None,
                extra: Sequence[Unit] = (), wrap: Callable[[BackendKind, LLM], LLM] | None = None) -> "Backends":
        """The backends of a run of ``spec``'s suite over ``units`` (and ``extra``: a
        learning split, which the scripted fake plays too)."""
        suite = spec.suite
        known = Units(tuple([*units.units, *extra]), units.invalid, units.seeded)
        cases = {u.id: u.item for u in known.units if isinstance(u.item, Case)}
        return cls(cases, pool, override=override, scripted=lambda seed: suite.scripted(known, seed), wrap=wrap)

    def get(self, role: str, rs: RoleSpec, seed: int) -> LLM:
        if role in self.override:
            return self.override[role]
        try:
            kind = backend_kind(rs.backend)
            key = (rs.backend, rs.model, seed if kind.seeded else 0, rs.history)
            if key not in self._built:
                llm = None
                if rs.backend == "scripted" and self.scripted is not None:
                    llm = self.scripted(seed)  # the suite's own fake (OSCE's)
                if llm is None:  # its kind checks what it names (a gguf: path is a GGUF file)
                    llm = build_backend(rs.backend, model=rs.model, cases=self.cases, seed=seed, pool=self.pool,
                                        **({"history": rs.history} if rs.history else {}))
                self._built[key] = llm if self.wrap is None else self.wrap(kind, llm)
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
    """One (condition, seed) of a spec, assembled: what a cell of that condition and seed
    needs (the :class:`agents.suites.contract.CellPlan` a suite is handed)."""

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
    # what each record its cells learn carries under meta["learned_by"] beside the cell (the
    # run's id and results file: medsim.memory.learned_by); empty: untagged. Set by the caller
    learned_by: dict = field(default_factory=dict)
    suite: Suite = field(init=False)
    scorers: list[Scorer] = field(init=False)
    models: dict[str, str] = field(init=False)
    learner: Learner | None = field(init=False)

    def __post_init__(self) -> None:
        self.suite = self.spec.suite
        if self.spec.memory.mode == "off" or "memory" not in self.suite.reads:
            self.memory = None
        self.scorers = self.suite.scorers(self)
        self.models = describe_roles(self.spec)
        self.learner = None
        if self.learn and self.memory is not None:
            self.learner = Learner(self.memory, self.llms["reflector"], self.params("reflector"), self.llms["doctor"],
                                   self.llms["judge"], self.params("judge"), self.retry("reflector"))
        for role, llm in self.llms.items():
            name = getattr(llm, "name", "")
            if name.startswith("replay"):
                self.models[role] = f"replay of {self.models.get(role, '?')}"
            elif isinstance(llm, A2ALLM):  # a2a:URL#NAME@VERSION once its card was read (preflight)
                self.models[role] = llm.name
            elif self.spec.roles[role].backend == "scripted" and name and name != "scripted":
                self.models[role] = name  # the suite's own fake (scripted-osce)

    # -- agents.suites.contract.CellPlan ------------------------------------------------
    def params(self, role: str) -> GenerateParams:
        return role_params(role, self.spec.role(role), self.seed, self.suite)

    def retry(self, role: str) -> RetryPolicy:
        rs = self.spec.role(role)
        return RetryPolicy(retries=rs.retries, backoff_s=rs.backoff_s)

    def header(self, unit: Unit) -> Header:
        """The first line of the log of this plan's cell on ``unit``."""
        return Header(case_id=unit.id, case_source=unit.source, seed=self.seed, condition=self.condition,
                      spec=self.header_spec, models=self.models, git_revision=git_revision(),
                      packages=package_versions(), **self.provenance)

    # -- for the world and consult ---------------------------------------------------------
    def cast(self, case: Case, sink: EventSink) -> Any:
        """The participants of a live suite's cell on ``case``."""
        return self.suite.cast(self, Unit(case.id, case.source, case), sink)

    def engine(self, case: Case, sink: EventSink, cast: Any = None) -> Any:
        """The engine of a live suite's cell on ``case`` (with ``cast``: participants the
        world built and wrapped)."""
        return self.suite.engine(self, Unit(case.id, case.source, case), sink, cast)


def plan_for(spec: RunSpec, condition: str, seed: int, backends: Backends, *,
             human_io: HumanIO | None = None, memory: Any = None, learn: bool = False) -> RunPlan:
    s = spec.for_condition(condition)
    llms = {role: backends.get(role, rs, seed) for role, rs in s.roles.items()}
    # the header holds the spec but where and beside how many others the cell ran: a cell's log is
    # the same on any executor and with any number of workers (batched decoding, which changes
    # the logits a little, is in it when on)
    header = spec.to_dict(executor=False)
    header.pop("workers", None)
    return RunPlan(s, condition, seed, llms, header, human_io, memory, learn)
