"""The run spec: everything a run is, typed, validated and serialisable.

A spec is built from a TOML file (``--config run.toml``) with command-line flags
overriding it, validated completely before anything is written, stored whole in every
event-log header and in ``run.json``, and it is the only way bench, consult, play,
replay, score and the benchmark scripts build a run (``medsim.assemble``). Replay and
re-scoring rebuild the run from a header with :meth:`RunSpec.from_dict`.

Input shorthands (TOML top level or flags): ``llm`` (every role's backend unless the
role names its own), ``model`` (every role's model name), ``seed`` (one seed). The
resolved spec spells every role out and leaves no "auto" value, so
``medsim config --show`` prints exactly what runs.
"""
from __future__ import annotations

import argparse
import copy
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import agents.suites.builtin  # noqa: F401 - registers the suites medsim ships
from agents.llm.a2a import HISTORIES as A2A_HISTORIES
from agents.llm.registry import backend_kind
from agents.protocol import DOCTOR_STRATEGIES
from agents.llm.spec import (BackendSpecError, check_backend_spec, decodes_batched, describe_spec, is_in_process,
                             redact_backend_spec)
from agents.roles import READER, Role, get_role, role_defaults, role_names
from agents.settings import SpecError, check_keys, get_bool, get_float, get_int, get_str, near_name
from agents.suites.contract import Suite
from agents.suites.registry import all_suites, get_suite
from medsim.toml_out import dumps as toml_dumps

__all__ = ["SpecError", "RoleSpec", "ProtocolSpec", "WorldSpec", "MemorySpec", "DiagnosisSpec", "StudySpec", "RunSpec",
           "load_toml",
           "set_dotted", "build_spec", "spec_from_raw", "upgrade", "check_depth", "MAX_DEPTH", "PROTOCOLS",
           "DOCTOR_MODES", "RUN_KEYS", "suite_of"]

PROTOCOLS = ("medsim", "agentclinic", "automedic")
PROMPT_STYLES = ("medsim", "agentclinic")
DOCTOR_MODES = ("structured", "markers")
BASE_CONDITION = "base"

_int, _float, _bool, _str, _check_keys = get_int, get_float, get_bool, get_str, check_keys


def _registered() -> list[Role]:
    return [get_role(n) for n in role_names()]


# -- the spec -------------------------------------------------------------------------
@dataclass(frozen=True)
class RoleSpec:
    """A role's backend, model name and generation settings."""

    backend: str
    model: str | None = None
    temperature: float = 0.2
    max_tokens: int = 200
    timeout_s: float = 120.0  # the whole model call
    retries: int = 3  # after the first attempt, on transient backend errors
    backoff_s: float = 1.0  # first retry wait; doubles
    history: str | None = None  # a2a: only: "full" sends the whole conversation each call (None: the agent keeps it)

    KEYS = ("backend", "model", "temperature", "max_tokens", "timeout_s", "retries", "backoff_s", "history")

    @classmethod
    def parse(cls, role: str, d: Mapping[str, Any], *, llm: str, model: str | None,
              defaults: Mapping[str, Any] | None = None, people: bool = True, suite: str = "diagnosis") -> "RoleSpec":
        """Validate a role's table. ``defaults``: the suite's generation defaults for it
        (over the role's own); ``people``: whether the suite lets a person play a role."""
        path = f"roles.{role}."
        _check_keys(d, set(cls.KEYS), path)
        dflt = role_defaults(role)
        own = dict(defaults or {})
        backend = _str(d, "backend", path, default=dflt.backend or llm)
        mdl = _str(d, "model", path, default=model, optional=True)
        try:
            check_backend_spec(backend, mdl)
        except BackendSpecError as e:
            raise SpecError(f"{path}backend: {e}", key=path + "backend") from None
        if backend == "none" and not dflt.optional:
            optional = [r.name for r in _registered() if r.optional]
            raise SpecError(f"{path}backend: 'none' is only for {', '.join(optional)}", key=path + "backend")
        if backend == "human" and not (dflt.playable and people):
            if not people:
                raise SpecError(f"{path}backend: a person cannot play a role of the {suite} suite",
                                key=path + "backend")
            playable = [r.name for r in _registered() if r.playable]
            raise SpecError(f"{path}backend: a person can play {', '.join(playable)}, not the {role}",
                            key=path + "backend")
        if dflt.kind == READER and backend not in ("none", "human") and not backend_kind(backend).sees_images(backend):
            raise SpecError(f"{path}backend: {redact_backend_spec(backend)} cannot see images (a model with no image "
                            "projector is never shown one), so it cannot read them: use gguf:MODEL,PROJECTOR, an "
                            "openai: server with a vision model, or none", key=path + "backend")
        if backend == "none" and not people:
            raise SpecError(f"{path}backend: the {suite} suite needs a model for the {role}, not 'none'",
                          key=path + "backend")
        history = _str(d, "history", path, optional=True, default=None)
        if history is not None and history not in A2A_HISTORIES:
            raise SpecError(f"{path}history: one of {', '.join(A2A_HISTORIES)} ('full': the whole conversation is "
                            f"sent each turn, for an agent that keeps none), not {history!r}", key=path + "history")
        if history is not None and backend_kind(backend).name != "a2a":
            raise SpecError(f"{path}history: only an a2a: backend keeps a conversation to choose for, not "
                            f"{redact_backend_spec(backend)}", key=path + "history")
        return cls(
            backend=backend, model=mdl,
            temperature=_float(d, "temperature", path, lo=0.0, hi=2.0, default=own.get("temperature", dflt.temperature)),
            max_tokens=_int(d, "max_tokens", path, lo=1, default=own.get("max_tokens", dflt.max_tokens)),
            timeout_s=_float(d, "timeout_s", path, lo=0.0, default=120.0, strict_lo=True),
            retries=_int(d, "retries", path, lo=0, default=3),
            backoff_s=_float(d, "backoff_s", path, lo=0.0, default=1.0),
            history=None if history == "agent" else history,
        )

    def to_dict(self, *, secrets: bool = False) -> dict[str, Any]:
        """The role as a dict; a secret in the backend's URL (a query string's key) is
        redacted unless ``secrets`` (what a Ray worker rebuilds the backend from): the
        dict goes into run.json, log headers and printed specs."""
        d = {k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None}
        if not secrets:
            d["backend"] = redact_backend_spec(self.backend)
        return d

    def describe(self) -> str:
        """The backend as logs and reports show it (its kind's describe: secrets redacted)."""
        return describe_spec(self.backend, self.model)


@dataclass(frozen=True)
class ProtocolSpec:
    """The consultation protocol: ``name`` is a preset (medsim's default or
    AgentClinic's), whose values every other key may override."""

    name: str = "medsim"
    doctor_mode: str = "structured"  # structured | markers
    # the doctor strategy: None is "turns" (the model decides each turn from the dialogue; left
    # out of the dict, so a run made before there was a choice keeps its identity); "focused":
    # a running differential, the diagnosis from the summarised record (agents.participants.focused)
    doctor_strategy: str | None = None
    prompt_style: str = "medsim"  # medsim | agentclinic
    min_gathering: int = 3
    guards: bool = True
    guard_retries: int = 2
    measurement_hints: bool = True
    # the faithful patient: the facts answering each question in the patient's voice, unfaithful
    # replies asked again (agents.participants.grounded); off under AgentClinic's protocol
    patient_grounding: bool = True
    max_turns: int = 20
    measurement: bool = True  # the technician is there (MedAgentSim's "+measurement" rung)
    static: bool = False  # static QA: the doctor sees the whole case at once and answers in one turn
    budget: float | None = None  # the most a case may spend on tests and visits (agents/costs.toml)
    # AgentClinic's bias conditions (agents.biases): None is no bias (and is left out of
    # the dict, so the identity of a run made without biases is unchanged)
    doctor_bias: str | None = None
    patient_bias: str | None = None
    # patient behaviours (agents.behaviours): (name, level) pairs above level 0; None is the
    # cooperative patient (left out of the dict: a run without behaviours keeps its identity)
    patient_behaviour: tuple[tuple[str, int], ...] | None = None

    KEYS = ("name", "doctor_mode", "doctor_strategy", "prompt_style", "min_gathering", "guards", "guard_retries",
            "measurement_hints", "patient_grounding", "max_turns", "measurement", "static", "budget", "doctor_bias",
            "patient_bias", "patient_behaviour")

    @classmethod
    def parse(cls, d: Mapping[str, Any], *, doctor_backend: str) -> "ProtocolSpec":
        path = "protocol."
        _check_keys(d, set(cls.KEYS), path)
        name = _str(d, "name", path, default="medsim", choices=PROTOCOLS)
        ac = name == "agentclinic"
        am = name == "automedic"  # AutoMedic: a tagged dialogue (the doctor mode is unused), then the question
        # "auto" doctor mode: structured, except for a doctor model whose backend kind cannot
        # hold its replies to a JSON schema (a server, not every one of which enforces one; an
        # A2A agent), which uses markers
        strategy = _str(d, "doctor_strategy", path, optional=True, choices=DOCTOR_STRATEGIES)
        mode = d.get("doctor_mode", "auto")
        if mode == "auto" and strategy not in (None, "turns"):
            mode = "structured"  # the focused doctor's turns are JSON actions
        if mode == "auto":
            kind = backend_kind(doctor_backend)
            mode = "markers" if (ac or am or (kind.has_model and not kind.constrains_json)) else "structured"
        mode = _str({"doctor_mode": mode}, "doctor_mode", path, choices=DOCTOR_MODES)
        style = d.get("prompt_style", "auto")
        if style == "auto":
            style = "medsim" if am else name
        style = _str({"prompt_style": style}, "prompt_style", path, choices=PROMPT_STYLES)
        if strategy is not None and strategy != "turns" and (am or mode != "structured"):
            raise SpecError(f"{path}doctor_strategy: the {strategy} doctor acts in structured turns; it cannot run "
                            f"with {'AutoMedic' if am else 'the markers doctor mode'}", key=path + "doctor_strategy")
        return cls(
            name=name, doctor_mode=mode, prompt_style=style,
            doctor_strategy=None if strategy in (None, "turns") else strategy,
            min_gathering=_int(d, "min_gathering", path, lo=0, default=0 if (ac or am) else 3),
            guards=_bool(d, "guards", path, default=not ac),
            guard_retries=_int(d, "guard_retries", path, lo=0, default=2),
            measurement_hints=_bool(d, "measurement_hints", path, default=not ac),
            patient_grounding=_bool(d, "patient_grounding", path, default=not ac),
            max_turns=_int(d, "max_turns", path, lo=1, default=20),
            measurement=_bool(d, "measurement", path, default=True),
            static=_bool(d, "static", path, default=False),
            budget=(_float(d, "budget", path, lo=0.0, strict_lo=True) if d.get("budget") is not None else None),
            doctor_bias=_bias(d, "doctor", path), patient_bias=_bias(d, "patient", path),
            patient_behaviour=_behaviour(d, path),
        )

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None}
        if self.patient_behaviour is not None:
            d["patient_behaviour"] = dict(self.patient_behaviour)
        return d


def _bias(d: Mapping[str, Any], role: str, path: str) -> str | None:
    """``protocol.<role>_bias``: a bias name (agents.biases) or "none"/absent."""
    from agents.biases import NO_BIAS, BiasError, bias_text

    key = f"{role}_bias"
    v = _str(d, key, path, optional=True)
    if v is None or v.strip().lower() == NO_BIAS:
        return None
    try:
        bias_text(role, v)
    except BiasError as e:
        raise SpecError(f"{path}{key}: {e}", key=path + key) from None
    return v.strip().lower().replace("-", "_").replace(" ", "_")


def _behaviour(d: Mapping[str, Any], path: str) -> tuple[tuple[str, int], ...] | None:
    """``protocol.patient_behaviour``: a table of levels (``{withhold = 2}``) or the text
    ``"withhold=2,fabricate=1"`` (``"none"``: the cooperative patient); levels 0-3, zeros
    dropped (agents.behaviours)."""
    from agents.behaviours import BehaviourError, parse_profile

    key = "patient_behaviour"
    try:
        profile = parse_profile(d.get(key), where=f"{path}{key}: ")
    except BehaviourError as e:
        raise SpecError(str(e), key=path + key) from None
    return profile or None


@dataclass(frozen=True)
class DiagnosisSpec:
    """How the final diagnosis is reached once the doctor is ready to give one: alone,
    after reasoning step by step (``cot``), by a panel of ``ensemble`` doctors voting
    (majority, a chair's consensus on a tie), or by a role-split panel (``panel =
    "roles"``: hypothesis keeper, test chooser, challenger, cost steward, checklist)."""

    cot: bool = False
    ensemble: int = 0  # 0: one doctor; N >= 2: a panel of N voting
    panel: str = "off"  # off | roles

    KEYS = ("cot", "ensemble", "panel")

    @classmethod
    def parse(cls, d: Mapping[str, Any], path: str = "diagnosis.") -> "DiagnosisSpec":
        _check_keys(d, set(cls.KEYS), path)
        n = _int(d, "ensemble", path, lo=0, default=0)
        if n >= 2 and d.get("panel") == "roles":
            raise SpecError(f"{path}ensemble: the role-split panel (panel = \"roles\") and a voting panel of {n} are "
                            "two strategies, and the role-split panel would run alone; give one (--ladder runs each "
                            "as its own condition)", key=path + "ensemble")
        if n == 1:
            raise SpecError(f"{path}ensemble: a panel has at least 2 members (0: one doctor), got 1", key=path + "ensemble")
        return cls(cot=_bool(d, "cot", path, default=False), ensemble=n,
                   panel=_str(d, "panel", path, default="off", choices=("off", "roles")))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}


@dataclass(frozen=True)
class WorldSpec:
    """The hospital world (``medsim play``)."""

    doctors: int = 2
    patients: int = 6
    map: str | None = None  # a Tiled .tmx; None: the shipped hospital
    arrival_interval_s: float = 15.0  # sim seconds between arrivals

    KEYS = ("doctors", "patients", "map", "arrival_interval_s")

    @classmethod
    def parse(cls, d: Mapping[str, Any]) -> "WorldSpec":
        path = "world."
        _check_keys(d, set(cls.KEYS), path)
        return cls(doctors=_int(d, "doctors", path, lo=1, default=2),
                   patients=_int(d, "patients", path, lo=1, default=6),
                   map=_str(d, "map", path, optional=True),
                   arrival_interval_s=_float(d, "arrival_interval_s", path, lo=0.0, default=15.0))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None}


MEMORY_MODES = ("off", "learn", "frozen")
EMBEDDERS = ("auto", "minilm", "clip", "clip-tiny", "hash")


@dataclass(frozen=True)
class MemorySpec:
    """The case memory (MedAgentSim's records and experience buffers). ``off``: none;
    ``learn``: retrieval before each diagnosis, and every finished case teaches the
    memory (a right diagnosis is filed; a wrong one is reflected on); ``frozen``:
    retrieval only. With ``learn_cases`` a learning split runs first (learn), then the
    scored cases run with the memory frozen."""

    mode: str = "off"
    dir: str | None = None  # where the memory lives (SQLite + FAISS)
    k: int = 3  # nearest past cases (and insights) retrieved from each buffer
    embedder: str = "auto"  # auto | minilm | clip | clip-tiny | hash
    clip_checkpoint: str | None = None  # a local open_clip checkpoint (auto then picks clip)
    learn_cases: str | None = None  # a learning split (registered name or JSONL path)
    learn_limit: int | None = None  # its first N cases

    KEYS = ("mode", "dir", "k", "embedder", "clip_checkpoint", "learn_cases", "learn_limit")

    @classmethod
    def parse(cls, d: Mapping[str, Any], path: str = "memory.") -> "MemorySpec":
        _check_keys(d, set(cls.KEYS), path)
        learn = _str(d, "learn_cases", path, optional=True)
        mode = _str(d, "mode", path, default="learn" if learn else "off", choices=MEMORY_MODES)
        m = cls(mode=mode, dir=_str(d, "dir", path, optional=True), k=_int(d, "k", path, lo=1, default=3),
                embedder=_str(d, "embedder", path, default="auto", choices=EMBEDDERS),
                clip_checkpoint=_str(d, "clip_checkpoint", path, optional=True), learn_cases=learn,
                learn_limit=_int(d, "learn_limit", path, lo=1, optional=True))
        if m.mode != "off" and not m.dir:
            raise SpecError(f"{path}dir: memory mode '{m.mode}' needs a directory (--memory-dir DIR)", key=path + "dir")
        if m.learn_cases and m.mode != "learn":
            raise SpecError(f"{path}learn_cases: a learning split needs mode 'learn' (the scored cases then run frozen)", key=path + "learn_cases")
        if m.embedder == "clip" and not m.clip_checkpoint:
            raise SpecError(f"{path}embedder: 'clip' needs {path}clip_checkpoint (no CLIP weights can be downloaded "
                            "here); 'clip-tiny' is random-init, for tests", key=path + "embedder")
        return m

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None}


LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")  # a study's label: a code, never a name


@dataclass(frozen=True)
class StudySpec:
    """A reader study (``medsim study``): a person plays the doctor through the run's
    cases, one after another, in an order shuffled by ``order_seed``; ``label`` is all
    that says who they are (a code such as ``reader-1``). The cells keep the run's seed,
    so a study pairs with a model run of the same cases case by case (``medsim compare``)."""

    label: str
    order_seed: int = 0

    KEYS = ("label", "order_seed")

    @classmethod
    def parse(cls, d: Any, path: str = "study.") -> "StudySpec":
        if not isinstance(d, Mapping):
            raise SpecError(f"study: expected a table, got {d!r}", key="study")
        _check_keys(d, set(cls.KEYS), path)
        label = d.get("label")
        if not isinstance(label, str) or not LABEL.fullmatch(label):
            raise SpecError(f"{path}label: 1 to 40 letters, digits, '.', '_' or '-', starting with a letter or digit "
                            f"(a code such as reader-1: the label is all that says who the person is), got {label!r}",
                            key=path + "label")
        return cls(label=label, order_seed=_int(d, "order_seed", path, lo=0, default=0))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}


def _check_study(study: "StudySpec", suite: Suite, roles: Mapping[str, RoleSpec], seeds: tuple[int, ...],
                 conditions: Mapping[str, Any], d: Mapping[str, Any]) -> None:
    """A study is one condition, one seed, of a live consultation suite, with a person as
    the doctor and nothing that only a doctor model would use."""
    if not suite.live or "doctor" not in suite.role_names():
        raise SpecError(f"study: a reader study runs the diagnostic consultation, not the {suite.name} suite", key="study")
    doctor = roles["doctor"]
    if doctor.backend != "human":
        raise SpecError(f"roles.doctor.backend: in a study the doctor is a person ('human'), not "
                        f"{redact_backend_spec(doctor.backend)}", key="roles.doctor.backend")
    others = [r for r, rs in roles.items() if r != "doctor" and rs.backend == "human"]
    if others:
        raise SpecError(f"roles.{others[0]}.backend: in a study the person is the doctor, and only the doctor",
                        key=f"roles.{others[0]}.backend")
    if conditions:
        raise SpecError("conditions: a study runs one condition (a person reads each case once)", key="conditions")
    if len(seeds) != 1:
        raise SpecError(f"seeds: a study runs one seed (a person reads each case once), got {list(seeds)}", key="seeds")
    for section, keys in (("protocol", ("static", "doctor_strategy", "doctor_bias")),
                          ("diagnosis", ("cot", "ensemble", "panel")), ("memory", ("mode",))):
        table = d.get(section) or {}
        given = [k for k in keys if isinstance(table, Mapping) and table.get(k) not in (None, False, 0, "off", "turns")]
        if given:
            raise SpecError(f"{section}.{given[0]}: a doctor model's setting, and in a study a person is the doctor",
                            key=f"{section}.{given[0]}")


@dataclass(frozen=True)
class Condition:
    """One condition of a grid: its own protocol, roles and memory mode (resolved)."""

    protocol: ProtocolSpec
    roles: Mapping[str, RoleSpec]
    memory: MemorySpec = MemorySpec()
    diagnosis: DiagnosisSpec = DiagnosisSpec()


# the run's own keys, whatever its suite; then the sections a suite may read (Suite.reads)
RUN_KEYS = frozenset({"suite", "seed", "seeds", "workers", "batched", "jump_forward", "preflight", "llm", "model",
                      "executor", "ray_address", "roles", "study"})
SECTIONS = {"cases": ("cases", "limit", "skip_invalid"), "protocol": ("protocol",), "world": ("world",),
            "memory": ("memory",), "diagnosis": ("diagnosis",), "conditions": ("conditions",)}
_CONDITION_KEYS = {"llm", "model", "roles", "protocol", "memory", "diagnosis"}


def upgrade(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A spec's dict as an older medsim wrote it, in today's layout (each suite's
    :meth:`~agents.suites.contract.Suite.upgrade`)."""
    d: Mapping[str, Any] = raw
    for s in all_suites():
        d = s.upgrade(d)
    return dict(d)


def suite_of(raw: Mapping[str, Any]) -> Suite:
    """The suite a spec's dict runs: its ``suite`` key, else its protocol's (``protocol.name =
    "automedic"`` and not static: AutoMedic's), else the diagnostic consultation."""
    name = raw.get("suite")
    if name is not None:
        return get_suite(_str(raw, "suite", ""))
    p = raw.get("protocol") or {}
    if isinstance(p, Mapping) and p.get("name") == "automedic" and not p.get("static"):
        return get_suite("automedic")
    return get_suite("diagnosis")


def _check_top(raw: Mapping[str, Any], suite: Suite) -> None:
    """Every top-level key is the run's, a section the suite reads, or the suite's own."""
    if not isinstance(raw, Mapping):
        raise SpecError(f"spec: expected a table, got {raw!r}")
    own = {k for sec in suite.reads for k in SECTIONS.get(sec, ())}
    allowed = RUN_KEYS | own | ({suite.section} if suite.section else set())
    others = {s.section: s.name for s in all_suites() if s.section and s.name != suite.name}
    readers = {k for sec in SECTIONS for k in SECTIONS[sec]}
    for k in raw:
        if k in allowed:
            continue
        if k in others:
            raise SpecError(f"{k}: the {others[k]} suite's section, and this run's suite is {suite.name} "
                            f"(suite = \"{others[k]}\" runs it)", key=k)
        if k in readers:
            raise SpecError(f"{k}: not read by the {suite.name} suite (it reads: "
                            f"{', '.join(sorted(allowed - RUN_KEYS))})", key=k)
        near = near_name(str(k), allowed)
        hint = f" (did you mean '{near}'?)" if near else f" (known: {', '.join(sorted(allowed))})"
        raise SpecError(f"unknown key '{k}'{hint}", key=str(k))


@dataclass(frozen=True)
class RunSpec:
    cases: str = "demo"
    limit: int | None = None  # the first N cases
    skip_invalid: bool = False  # run the valid records of a case set with invalid ones
    seeds: tuple[int, ...] = (0,)  # each case runs once per seed
    workers: int = 1  # cases run at once (not part of the run's identity)
    # with workers > 1, the calls of the cases running at once to an in-process model decode
    # together in one llama.cpp context (agents.llm.batched, medsim.assemble.pool_for). None:
    # auto, on where it wins (decodes_batched); True/False: as asked. Not part of the identity,
    # but in every log header when on (a row's logits may differ a little)
    batched: bool | None = None
    # in-process models decode a draft of the reply's next tokens with the token just sampled
    # and keep it as far as the sampler agrees (agents.llm.drafts): fewer decode steps, the same
    # replies but at near ties. Not part of the identity; in the header when off
    jump_forward: bool = True
    preflight: bool = True  # check each server once before the run starts
    # where cells run (medsim.executors): "local" threads, or "ray" actors on a Ray cluster at
    # ray_address (None: a local instance started for the run; "auto": a running cluster)
    executor: str = "local"
    ray_address: str | None = None
    roles: Mapping[str, RoleSpec] = field(default_factory=dict)
    protocol: ProtocolSpec = ProtocolSpec()
    world: WorldSpec = WorldSpec()
    memory: MemorySpec = MemorySpec()
    diagnosis: DiagnosisSpec = DiagnosisSpec()
    # named conditions of a grid (each its own protocol and roles); empty: one
    # condition, "base", which is the spec's own protocol and roles
    conditions: Mapping[str, Condition] = field(default_factory=dict)
    # the suite, when the spec names one (None: from the protocol, see suite_of), and its
    # own section as the suite parsed it (agents.suites.contract.Suite.parse_options)
    suite_name: str | None = None
    options: Any = None
    study: StudySpec | None = None  # a reader study (medsim study): a person is the doctor

    # -- building -----------------------------------------------------------------
    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, default_llm: str = "scripted") -> "RunSpec":
        """Validate and resolve a spec from its dict form (TOML, flags, or a header)."""
        if not isinstance(raw, Mapping):
            raise SpecError(f"spec: expected a table, got {raw!r}")
        if (where := check_depth(raw)) is not None:
            raise SpecError(_too_deep(where))
        d = upgrade(raw)
        suite = suite_of(d)
        _check_top(d, suite)
        reads = suite.reads
        cases = _str(d, "cases", "", default="demo")
        limit = _int(d, "limit", "", lo=1, optional=True)
        if "seed" in d and "seeds" in d:
            raise SpecError("give 'seed' or 'seeds', not both", key="seeds")
        if "seeds" in d:
            seeds = d["seeds"]
            if not isinstance(seeds, (list, tuple)) or not seeds:
                raise SpecError(f"seeds: expected a non-empty list of integers, got {seeds!r}", key="seeds")
            for s in seeds:
                _int({"seeds": s}, "seeds", "", lo=0)
            if len(set(seeds)) != len(seeds):
                raise SpecError(f"seeds: each seed once, got {list(seeds)}", key="seeds")
            seeds_t = tuple(int(s) for s in seeds)
        else:
            seeds_t = (_int(d, "seed", "", lo=0, default=0),)
        base_protocol, base_roles = _resolve_roles_protocol(d, default_llm, suite)
        base_memory = MemorySpec.parse(d.get("memory", {}) or {})
        base_diagnosis = DiagnosisSpec.parse(d.get("diagnosis", {}) or {})
        conditions = _conditions(d, default_llm, suite)
        options = suite.parse_options(d.get(suite.section) or {}, seeds=seeds_t) if suite.section else None
        executor = _executor(d)
        batched = _bool(d, "batched", "", optional=True)  # absent: auto (RunSpec.decodes_batched)
        if batched is True:  # asked for where it can do nothing: an error (auto just stays off)
            _check_batched(executor["executor"], [*base_roles.values(), *(r for c in conditions.values()
                                                                          for r in c.roles.values())])
        explicit = d.get("suite")
        derived = suite_of({k: v for k, v in d.items() if k != "suite"}).name
        study = StudySpec.parse(d["study"]) if d.get("study") is not None else None
        if study is not None:
            _check_study(study, suite, base_roles, seeds_t, conditions, d)
        return cls(
            cases=cases, limit=limit, skip_invalid=_bool(d, "skip_invalid", "", default=False), seeds=seeds_t,
            workers=_int(d, "workers", "", lo=1, default=1), batched=batched,
            jump_forward=_bool(d, "jump_forward", "", default=True),
            preflight=_bool(d, "preflight", "", default=True),
            **executor, roles=base_roles, protocol=base_protocol,
            world=WorldSpec.parse(d.get("world", {}) or {}) if "world" in reads else WorldSpec(),
            memory=base_memory, diagnosis=base_diagnosis, conditions=conditions,
            suite_name=explicit if explicit is not None and explicit != derived else None, options=options,
            study=study,
        )

    # -- views ----------------------------------------------------------------------
    @property
    def decodes_batched(self) -> bool:
        """Whether the cases' calls to an in-process model decode together: ``batched`` as
        given, or (auto) with ``workers > 1`` run by local threads and an in-process role in
        any condition. Measured on the embedded model, 2 cores (benchmarks/batched_bench.py):
        serial ``--workers 4`` ran at 0.39x the cases/hour of ``--workers 1``, batched at 1.23x."""
        if self.batched is not None:
            return self.batched
        # not with online learning (its cases run one at a time), nor for models with an image
        # projector only (served by the serial path)
        return (self.workers > 1 and self.executor == "local" and not self.learns_online
                and any(decodes_batched(r.backend) for r in self.all_roles()))

    @property
    def learns_online(self) -> bool:
        """Some condition learns case by case (memory mode learn with no learning split):
        its cells run one at a time, so that the memory grows in a reproducible order."""
        return (any(self.for_condition(c).memory.mode == "learn" for c in self.condition_names())
                and not self.memory.learn_cases)

    @property
    def suite(self) -> Suite:
        """The suite this spec (or this condition's view of it) runs."""
        if self.suite_name is not None:
            return get_suite(self.suite_name)
        return suite_of({"protocol": {"name": self.protocol.name, "static": self.protocol.static}})

    def condition_names(self) -> list[str]:
        return list(self.conditions) or [BASE_CONDITION]

    def for_condition(self, name: str) -> "RunSpec":
        """The spec with one condition's protocol and roles (and no grid)."""
        if not self.conditions and name == BASE_CONDITION:
            return self
        if name not in self.conditions:
            raise SpecError(f"no condition '{name}' (have: {', '.join(self.condition_names())})")
        c = self.conditions[name]
        return replace(self, protocol=c.protocol, roles=c.roles, memory=c.memory, diagnosis=c.diagnosis, conditions={})

    def role(self, name: str) -> RoleSpec:
        try:
            return self.roles[name]
        except KeyError:
            raise SpecError(f"the spec has no role '{name}' (roles: {', '.join(self.roles)})") from None

    def human_roles(self) -> list[str]:
        """Roles a person plays (in any condition)."""
        out = [r for r, rs in self.roles.items() if rs.backend == "human"]
        for c in self.conditions.values():
            out += [r for r, rs in c.roles.items() if rs.backend == "human" and r not in out]
        return out

    def all_roles(self) -> list[RoleSpec]:
        """Every role spec of every condition."""
        out = list(self.roles.values())
        for c in self.conditions.values():
            out.extend(c.roles.values())
        return out

    def to_dict(self, *, executor: bool = True, secrets: bool = False) -> dict[str, Any]:
        """The spec as a dict (``from_dict`` reads it back). ``executor=False`` leaves out
        where the cells run: an event log's header is the same wherever its cell ran.
        A secret in a backend URL is redacted unless ``secrets`` (:meth:`RoleSpec.to_dict`)."""
        reads = self.suite.reads
        d: dict[str, Any] = {}
        if self.suite_name is not None:
            d["suite"] = self.suite_name
        if "cases" in reads:
            d["cases"] = self.cases
            if self.limit is not None:
                d["limit"] = self.limit
            d["skip_invalid"] = self.skip_invalid
        d.update(seeds=list(self.seeds), workers=self.workers)
        # resolved: true when it decodes batched (auto or asked), false when turned off; an
        # auto spec that stays serial (one worker, no in-process model) reads as it always did
        if self.decodes_batched:
            d["batched"] = True
        elif self.batched is False:
            d["batched"] = False
        if not self.jump_forward:  # on reads as a spec always did
            d["jump_forward"] = False
        d["preflight"] = self.preflight
        if executor and self.executor != "local":  # a local run's spec reads as it always did
            d["executor"] = self.executor
            if self.ray_address is not None:
                d["ray_address"] = self.ray_address
        if "protocol" in reads:
            d["protocol"] = self.protocol.to_dict()
        d["roles"] = {r: s.to_dict(secrets=secrets) for r, s in self.roles.items()}
        if "world" in reads:
            d["world"] = self.world.to_dict()
        if "memory" in reads and self.memory != MemorySpec():
            d["memory"] = self.memory.to_dict()
        if "diagnosis" in reads:
            d["diagnosis"] = self.diagnosis.to_dict()
        if self.conditions:
            d["conditions"] = {n: {"protocol": c.protocol.to_dict(),
                                   "roles": {r: s.to_dict(secrets=secrets) for r, s in c.roles.items()},
                                   "diagnosis": c.diagnosis.to_dict(),
                                   **({"memory": {"mode": c.memory.mode, "k": c.memory.k}} if c.memory != self.memory else {})}
                               for n, c in self.conditions.items()}
        suite = self.suite
        if suite.section is not None:
            d[suite.section] = suite.options_dict(self.options)
        if self.study is not None:
            d["study"] = self.study.to_dict()
        return d

    def to_toml(self) -> str:
        return toml_dumps(self.to_dict())

    def identity(self) -> dict[str, Any]:
        """What must match for ``--resume`` to continue a run: the spec without how it
        is executed (workers, batched decoding, jump-forward, the server check, the executor)."""
        d = self.to_dict(executor=False)
        d.pop("workers"), d.pop("preflight"), d.pop("batched", None), d.pop("jump_forward", None)
        return d


EXECUTORS = ("local", "ray")


def _check_batched(executor: str, roles: list[RoleSpec]) -> None:
    """An explicit ``batched = true`` needs an in-process model (local, smollm2, gguf:) run
    by local threads: asked for where it could do nothing, it is an error, not a silent no-op
    (left out, batched is auto and just stays off there)."""
    if executor != "local":
        raise SpecError(f"batched: decodes the calls of cases run by local threads together; executor {executor!r} "
                        "runs each case on its own worker (drop batched, or use executor = \"local\")", key="batched")
    if not any(is_in_process(r.backend) for r in roles):
        raise SpecError("batched: decodes the calls to an in-process model (local, smollm2, gguf:PATH) together, and no "
                        "role runs one (servers batch their own calls: vLLM does); drop batched", key="batched")


def _executor(d: Mapping[str, Any]) -> dict[str, Any]:
    executor = _str(d, "executor", "", default="local", choices=EXECUTORS)
    address = _str(d, "ray_address", "", optional=True)
    if address is not None and executor != "ray":
        raise SpecError(f"ray_address: only with executor = \"ray\" (executor is {executor!r})", key="ray_address")
    return {"executor": executor, "ray_address": address}


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _resolve_roles_protocol(d: Mapping[str, Any], default_llm: str, suite: Suite
                            ) -> tuple[ProtocolSpec, dict[str, RoleSpec]]:
    """The suite's roles, each resolved (a role table the suite has no role for is an
    error naming the nearest one), and the protocol (its default, for a suite that does
    not read it)."""
    llm = _str(d, "llm", "", default=default_llm)
    model = _str(d, "model", "", optional=True)
    roles_raw = d.get("roles", {}) or {}
    if not isinstance(roles_raw, Mapping):
        raise SpecError(f"roles: expected a table of roles, got {roles_raw!r}", key="roles")
    names = list(suite.role_names())
    for name in roles_raw:
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise SpecError(f"roles: a role name is letters, digits and '_', got {name!r}", key="roles")
        if name not in names:
            near = near_name(name, names)
            hint = f"did you mean 'roles.{near}'? " if near else ""
            raise SpecError(f"roles.{name}: no such role in the {suite.name} suite ({hint}its roles: "
                            f"{', '.join(names)})", key=f"roles.{name}")
    roles = {r: RoleSpec.parse(r, roles_raw.get(r, {}) or {}, llm=llm, model=model, defaults=suite.role_defaults(r),
                               people=suite.people, suite=suite.name) for r in names}
    doctor = roles.get("doctor")
    protocol = (ProtocolSpec.parse(d.get("protocol", {}) or {}, doctor_backend=doctor.backend if doctor else llm)
                if "protocol" in suite.reads else ProtocolSpec())
    return protocol, roles


def _conditions(d: Mapping[str, Any], default_llm: str, suite: Suite) -> dict[str, Condition]:
    """The named conditions of a grid, each its own protocol, roles, memory mode and
    diagnosis strategy over the run's."""
    conds_raw = d.get("conditions", {}) or {}
    if not isinstance(conds_raw, Mapping):
        raise SpecError(f"conditions: expected a table of named conditions, got {conds_raw!r}", key="conditions")
    conditions: dict[str, Condition] = {}
    for name, over in conds_raw.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 64:
            raise SpecError(f"conditions: a condition name must be a short non-empty string, got {name!r}",
                            key="conditions")
        if not isinstance(over, Mapping):
            raise SpecError(f"conditions.{name}: expected a table, got {over!r}", key=f"conditions.{name}")
        _check_keys(over, _CONDITION_KEYS, f"conditions.{name}.")
        merged = _merge({k: d[k] for k in ("llm", "model", "roles", "protocol", "memory", "diagnosis") if k in d}, over)
        mem_over = over.get("memory") or {}
        if isinstance(mem_over, Mapping):
            _check_keys(mem_over, {"mode", "k"}, f"conditions.{name}.memory.")  # the rest is the run's
        try:
            cond_suite = suite if d.get("suite") is not None else suite_of(merged)
            p, r = _resolve_roles_protocol(merged, default_llm, cond_suite)
            # the learning split is the run's: a condition only says whether it consults the memory
            mem_in = {k: v for k, v in (merged.get("memory", {}) or {}).items() if k not in ("learn_cases", "learn_limit")}
            if mem_in.get("mode") == "learn" and (merged.get("memory") or {}).get("learn_cases"):
                mem_in["mode"] = "frozen"
            mem = MemorySpec.parse(mem_in)
            dia = DiagnosisSpec.parse(merged.get("diagnosis", {}) or {})
        except SpecError as e:
            raise SpecError(f"conditions.{name}: {e}", key=e.key) from None
        conditions[name] = Condition(p, r, mem, dia)
    return conditions


# -- inputs ---------------------------------------------------------------------------
MAX_DEPTH = 32  # a spec is a few tables deep (conditions.NAME.roles.ROLE.KEY); deeper is a broken file


def check_depth(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The dotted key of the first table or array nested deeper than ``limit``, or None.
    Iterative: the value may be nested as deep as its parser allowed, and every later
    walk over a spec (merging conditions, copying, writing TOML or JSON) recurses."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, where, depth = stack.pop()
        if depth > limit:
            return where or "<top>"
        if isinstance(v, Mapping):
            stack.extend((x, f"{where}.{k}" if where else str(k), depth + 1) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v))
    return None


def _too_deep(where: str) -> str:
    shown = where if len(where) <= 60 else where[:60] + "..."
    return f"nested more than {MAX_DEPTH} levels deep (at {shown}); a run spec is a few tables deep"


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict, with clear errors (missing file, bad UTF-8, bad TOML,
    nesting deeper than :data:`MAX_DEPTH`)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise SpecError(f"{p}: cannot read the config file ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{p}: not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{p}: invalid TOML: {e}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep: the parser's own stack
        raise SpecError(f"{p}: invalid TOML: nested more than Python can parse; a run spec is a few tables "
                        "deep") from None
    where = check_depth(data)
    if where is not None:
        raise SpecError(f"{p}: {_too_deep(where)}")
    return data


def set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    """``set_dotted(d, "roles.doctor.backend", "local")``."""
    parts = key.split(".")
    cur = d
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = {} if nxt is None else dict(nxt) if isinstance(nxt, Mapping) else nxt
            if not isinstance(nxt, dict):
                raise SpecError(f"{'.'.join(parts[:-1])}: expected a table, got {nxt!r}", key=".".join(parts[:-1]))
            cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value


def spec_from_raw(raw: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, *, source: str | None = None,
                  default_llm: str = "scripted") -> RunSpec:
    """A spec's dict (a TOML file's, read once), then overrides as dotted keys (flags),
    validated and resolved. A ``seed``/``seeds`` override replaces the file's other one.
    ``source`` (the file) prefixes an error's message; its ``key`` stays the key."""
    d: dict[str, Any] = copy.deepcopy(dict(raw))
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "seed":
            d.pop("seeds", None)
        elif key == "seeds":
            d.pop("seed", None)
        set_dotted(d, key, value)
    try:
        return RunSpec.from_dict(d, default_llm=default_llm)
    except SpecError as e:
        raise (e.where(source) if source else e) from None


def build_spec(config: Path | None = None, overrides: Mapping[str, Any] | None = None, *,
               default_llm: str = "scripted") -> RunSpec:
    """A TOML file (optional), then flag overrides as dotted keys (:func:`spec_from_raw`)."""
    raw: dict[str, Any] = load_toml(config) if config is not None else {}
    return spec_from_raw(raw, overrides, source=str(config) if config is not None else None, default_llm=default_llm)


def seeds_arg(text: str) -> list[int]:
    """``--seeds 0,1,2`` for argparse: the seeds, or an argparse error that says what was wrong."""
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0,1,2, got {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one seed")
    return out
