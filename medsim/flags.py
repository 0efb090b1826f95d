"""The command line's run-spec flags, in one table.

Each :class:`Flag` names the spec key it sets, so the one table generates the parser of
every command that builds a run spec (:func:`add_spec_flags`), the overrides a command
line makes (:func:`overrides`), and the flag an error is about (:func:`flag_for`: a
:class:`~agents.settings.SpecError` carries its key). Role flags (``--doctor-llm``,
``--technician-model``, ...) come from the role registry and a suite's flags from its
:class:`~agents.suites.contract.Option` rows, so a registered role or suite has its flags
with no edit here.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from agents.llm.registry import kinds_help
from agents.behaviours import BehaviourError, behaviour_conditions, parse_grid
from agents.biases import BiasError, bias_conditions, parse_bias_list
from agents.protocol import DOCTOR_STRATEGIES
from agents.roles import flag_name, get_role, role_names
from agents.settings import SpecError
from agents.suites.contract import Suite
from agents.suites.registry import all_suites, get_suite, suite_names
from medsim.ladder import ladder_conditions
from medsim.spec import RUN_KEYS, SECTIONS, seeds_arg

__all__ = ["Flag", "FLAGS", "add_spec_flags", "overrides", "flag_for", "check_flags_for_suite", "SPEC_COMMANDS",
           "STAR", "STUDY", "NOT_IN_STUDY"]

# the commands that build a run spec, and those that run a grid of cells
STUDY = "study"
SPEC_COMMANDS = frozenset({"bench", "consult", "play", "config", "osce", STUDY})
GRID = frozenset({"bench", "config", "osce"})
WORLD = frozenset({"play", "config"})
STAR = "*"  # roles.*.timeout_s: every role of the run's suite (expanded by medsim.cli.spec_from_args)


@dataclass(frozen=True)
class Flag:
    """One flag. ``key``: the dotted spec key it sets (``protocol.max_turns``); ``value``:
    what a switch sets (``--no-guards`` sets False); ``to_spec(value, args)``: for a flag
    whose value is not one key's (``--ladder``, ``--repeats``), the overrides it makes."""

    names: tuple[str, ...]
    key: str | None
    help: str
    group: str = "run"
    type: Callable[[str], Any] | None = str
    value: Any = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    commands: frozenset[str] = SPEC_COMMANDS
    to_spec: Callable[[Any, argparse.Namespace], dict[str, Any]] | None = None
    hidden: tuple[str, ...] = ()  # other spellings, accepted and not listed

    @property
    def dest(self) -> str:
        return self.names[0].lstrip("-").replace("-", "_")

    @property
    def switch(self) -> bool:
        return self.type is None

    def key_in(self, suite: str | None) -> str | None:
        """The key this flag sets in a run of ``suite``: a suite may keep a shared key in its
        own section (:attr:`agents.suites.contract.Suite.keeps`: OSCE's guards)."""
        if self.key is None or not suite or suite not in suite_names():
            return self.key
        s = get_suite(suite)
        return f"{s.section}.{s.keeps[self.key]}" if self.key in s.keeps and s.section else self.key


# -- flags whose value is not one key's ----------------------------------------------------
def _repeats(value: int, args: argparse.Namespace) -> dict[str, Any]:
    if value < 1:
        raise SpecError(f"repeats: must be at least 1, got {value}", key="repeats")
    return {"seeds": list(range(value))}


def _ladder(value: bool, args: argparse.Namespace) -> dict[str, Any]:
    return {"conditions": ladder_conditions(memory=bool(getattr(args, "learn_cases", None)),
                                            ensemble=getattr(args, "ensemble", None) or 5)}


def _protocol(value: str, args: argparse.Namespace) -> dict[str, Any]:
    if value in {s.name for s in all_suites()} - {"diagnosis", "automedic"}:
        return {"suite": value}  # --protocol osce: the OSCE suite
    return {"protocol.name": value}


def _ladder_given(args: argparse.Namespace) -> bool:
    """Whether --ladder was given (a switch: its value is kept under its switch's dest)."""
    return bool(getattr(args, "switch__ladder", None) or getattr(args, "ladder", None))


def biases(args: argparse.Namespace) -> dict[str, Any]:
    """--doctor-bias / --patient-bias: one bias is the protocol's; several (or 'all') are a
    grid of conditions (an unbiased one first), so the report breaks accuracy down by bias."""
    names: dict[str, list[str]] = {}
    for role in ("doctor", "patient"):
        given = getattr(args, f"{role}_bias", None)
        if given:
            try:
                names[role] = parse_bias_list(role, given)
            except BiasError as e:
                raise SpecError(f"{e} (--{role}-bias)", key=f"protocol.{role}_bias") from None
    if not names:
        return {}
    if sum(len(v) for v in names.values()) == 1 or all(len(v) == 1 for v in names.values()):
        return {f"protocol.{r}_bias": v[0] for r, v in names.items()}
    if _ladder_given(args):
        raise SpecError("several biases make a grid of conditions, and so does --ladder: give one or the other",
                        key="conditions")
    return {"conditions": bias_conditions(names.get("doctor", ()), names.get("patient", ()))}


def _behaviour_grid(value: str, args: argparse.Namespace) -> dict[str, Any]:
    """--behaviour-grid: a grid of patient behaviours, the cooperative patient first, then
    one condition per behaviour and level."""
    try:
        items = parse_grid(value, where="--behaviour-grid: ")
    except BehaviourError as e:
        raise SpecError(str(e), key="conditions") from None
    other = ("--ladder" if _ladder_given(args) else
             "--patient-behaviour" if getattr(args, "patient_behaviour", None) else
             "--doctor-bias/--patient-bias with several names" if "conditions" in biases(args) else None)
    if other:
        raise SpecError(f"--behaviour-grid makes a grid of conditions, and so does {other}: give one or the other "
                        "(a run spec's [conditions] can combine them)", key="conditions")
    return {"conditions": behaviour_conditions(items)}


def _every_role(key: str) -> Callable[[Any, argparse.Namespace], dict[str, Any]]:
    return lambda value, args: {f"roles.{STAR}.{key}": value}


def _suite_names() -> str:
    return ", ".join(s.name for s in all_suites())


def _protocol_choices() -> tuple[str, ...]:
    return ("medsim", "agentclinic", "automedic", *(s.name for s in all_suites()
                                                   if s.name not in ("diagnosis", "automedic")))


FLAGS: tuple[Flag, ...] = (
    # cases
    Flag(("--cases",), "cases", "registered case set (demo) or a JSONL path (default: demo)", "cases"),
    Flag(("--limit",), "limit", "the first N cases only (default: all)", "cases", int),
    Flag(("--skip-invalid",), "skip_invalid", "run the valid records of a case set that has invalid ones", "cases",
         None, True),
    Flag(("--seed",), "seed", "the run's seed (default 0)", "run", int, commands=SPEC_COMMANDS - {STUDY}),
    Flag(("--seeds",), "seeds", "several seeds, e.g. 0,1,2: each case runs once per seed (default: --seed)", "run",
         seeds_arg, commands=GRID),
    Flag(("--workers",), "workers", "cases run at once (default 1)", "run", int, commands=GRID),
    Flag(("--batched",), "batched", "with --workers N and an in-process model: the cases' model calls decode together "
         "in one llama.cpp context (default: on with --workers > 1 and an in-process model, off otherwise; given where "
         "it can do nothing, an error)", "run", None, True, commands=GRID),
    Flag(("--no-batched",), "batched", "one model call at a time (replies then equal a --workers 1 run's more often; "
         "batched replies may differ a little, a row's logits depending slightly on the batch)", "run", None, False,
         commands=GRID),
    Flag(("--no-jump-forward",), "jump_forward", "in-process models decode one token per step (default: a draft of the "
         "next tokens goes with each step and is kept as far as the sampler agrees; replies are the same but at near "
         "ties)", "run", None, False),
    Flag(("--executor",), "executor", "where cases run: local threads, or ray: --workers actors on a Ray cluster, each "
         "building its own models (pip install 'medsim[ray]'; default: local)", "run", choices=("local", "ray"),
         commands=GRID),
    Flag(("--ray-address",), "ray_address", "with --executor ray: the cluster to join (auto: the one running here; "
         "default: start a local Ray instance for the run)", "run", metavar="ADDRESS", commands=GRID),
    # models
    Flag(("--llm",), "llm", "backend of every role that does not name its own: {kinds} (default: {default_llm})",
         "models", metavar="SPEC"),
    Flag(("--model",), "model", "model name of every openai: role that does not name its own (required for openai: "
         "backends; default: none)", "models"),
    Flag(("--vision",), "roles.vision.backend", "a vision model that reads returned images: gguf:MODEL,PROJECTOR | "
         "openai:URL (with --vision-model) | scripted | none (default: none, the doctor gets the report alone)", "models",
         metavar="SPEC"),
    Flag(("--timeout",), None, "whole-call timeout of every role, seconds (default 120)", "models", float,
         to_spec=_every_role("timeout_s")),
    Flag(("--retries",), None, "retries per model call on transient errors (default 3)", "models", int,
         to_spec=_every_role("retries")),
    Flag(("--backoff",), None, "first retry wait in seconds, doubling (default 1)", "models", float,
         to_spec=_every_role("backoff_s")),
    Flag(("--no-preflight",), "preflight", "do not check each server once before the run starts", "models", None, False),
    # the suite and its protocol
    Flag(("--suite",), "suite", "the evaluation suite: {suites} (default: from --protocol, else diagnosis)", "protocol",
         metavar="NAME", commands=SPEC_COMMANDS - {"osce"}),
    Flag(("--protocol",), None, "agentclinic: AgentClinic's marker protocol and prompt style, no minimum gathering, no "
         "detectors; automedic: AutoMedic's tagged dialogue (<patient>, <clinical>, </end>), then the case's "
         "multiple-choice question and the static baseline, scored by CARE (cases from `medsim automedic convert`); "
         "osce: OSCE treatment-persuasion encounters over --personas, the run `medsim osce` makes (default: medsim)",
         "protocol", choices=None, to_spec=_protocol, commands=SPEC_COMMANDS - {"osce"}),
    Flag(("--doctor-bias",), None, "AgentClinic's doctor biases, appended to the doctor's prompt only: one name, or "
         "several (comma-separated, or 'all') as a grid of conditions with an unbiased one (default: none)", "protocol",
         metavar="NAMES", to_spec=lambda v, a: {}),
    Flag(("--patient-bias",), None, "the patient's biases, likewise (default: none)", "protocol", metavar="NAMES",
         to_spec=lambda v, a: {}),
    Flag(("--patient-behaviour",), "protocol.patient_behaviour", "how the patient behaves, written into its "
         "instructions only: NAME=LEVEL,... with levels 0-3 (0: the cooperative patient), e.g. withhold=2,fabricate=1; "
         "names: withhold, fabricate, inconsistent, cognition, expression, attitude, proficiency, recall, confusion "
         "(default: none)", "protocol", metavar="NAME=LEVEL,...", hidden=("--patient-behavior",)),
    Flag(("--behaviour-grid",), None, "patient behaviours as a grid of conditions: the cooperative patient, then each "
         "behaviour at levels 1-3 (NAME=2 or NAME=1-2 for some levels; 'all': every behaviour), e.g. withhold,fabricate; "
         "the report's behaviour table compares each with level 0 (default: none)", "protocol", metavar="NAMES",
         to_spec=_behaviour_grid, commands=GRID - {"osce"}, hidden=("--behavior-grid",)),
    Flag(("--doctor-mode",), "protocol.doctor_mode", "structured (JSON actions, grammar-constrained) or markers; auto: "
         "structured, markers for openai: and a2a: doctors (default: auto)", "protocol",
         choices=("structured", "markers", "auto")),
    Flag(("--doctor-strategy",), "protocol.doctor_strategy", "turns: the doctor decides each turn from the dialogue; "
         "focused: the chief complaint first, a running differential chooses each question or test, the diagnosis "
         "(a ranked differential with confidences) from the summarised record (default: turns)", "protocol",
         choices=DOCTOR_STRATEGIES),
    Flag(("--min-gathering",), "protocol.min_gathering", "questions/tests required before a diagnosis is accepted (0: "
         "AgentClinic's rule; default 3)", "protocol", int),
    Flag(("--no-guards",), "protocol.guards", "turn off the refusal / role-break / loop detectors (OSCE: take every "
         "reply as it is; default: guarded, a role that keeps failing ends the consultation as failed)", "protocol",
         None, False),
    Flag(("--max-turns",), "protocol.max_turns", "turn limit (default 20)", "protocol", int),
    Flag(("--no-technician",), "protocol.measurement", "no technician: every order is refused (the ladder's baseline)",
         "protocol", None, False, hidden=("--no-measurement",)),
    Flag(("--static",), "protocol.static", "static QA: the doctor reads the whole case and answers at once",
         "protocol", None, True),
    Flag(("--budget",), "protocol.budget", "the most a case may spend on its visit and tests (prices: "
         "agents/costs.toml; default: no limit)", "protocol", float),
    # diagnosis
    Flag(("--cot",), "diagnosis.cot", "reason step by step before the final diagnosis", "diagnosis", None, True),
    Flag(("--ensemble",), "diagnosis.ensemble", "a panel of N doctors voting (N >= 2; default: 0, one doctor)",
         "diagnosis", int),
    Flag(("--panel",), "diagnosis.panel", "roles: a role-split panel (hypothesis keeper, test chooser, challenger, "
         "cost steward, checklist; default: off)", "diagnosis", choices=("off", "roles")),
    Flag(("--ladder",), None, "MedAgentSim's ladder as conditions: static, baseline, +measurement, +memory (with "
         "--learn-cases), +CoT, +ensemble, role-split panel", "diagnosis", None, True, to_spec=_ladder,
         commands=GRID - {"osce"}),
    Flag(("--repeats",), None, "seeds per case (0..R-1); intervals are over cases (default: --seeds)", "diagnosis", int,
         to_spec=_repeats, commands=GRID),
    # memory
    Flag(("--memory",), "memory.mode", "past cases before each diagnosis: off (default), learn (and learn from each "
         "case), frozen", "memory", choices=("off", "learn", "frozen")),
    Flag(("--memory-dir",), "memory.dir", "where the memory lives, SQLite + FAISS (default: none; needed with "
         "--memory)", "memory"),
    Flag(("--memory-k",), "memory.k", "past cases (and insights) retrieved per buffer (default 3)", "memory", int),
    Flag(("--embedder",), "memory.embedder", "auto: CLIP when --clip-checkpoint is given, else MiniLM (default: auto)",
         "memory", choices=("auto", "minilm", "clip", "clip-tiny", "hash")),
    Flag(("--clip-checkpoint",), "memory.clip_checkpoint", "a local open_clip checkpoint file (default: none)", "memory"),
    Flag(("--learn-cases",), "memory.learn_cases", "a learning split: learned from first, then the scored cases run "
         "with the memory frozen (default: none)", "memory", commands=GRID - {"osce"}),
    Flag(("--learn-limit",), "memory.learn_limit", "the learning split's first N cases (default: all)", "memory", int,
         commands=GRID - {"osce"}),
    # world
    Flag(("--doctors",), "world.doctors", "doctors on shift (default 2)", "world", int, commands=WORLD),
    Flag(("--patients",), "world.patients", "patients in the shift (default 6)", "world", int, commands=WORLD),
    Flag(("--map",), "world.map", "Tiled .tmx map (default maps/hospital.tmx)", "world", commands=WORLD),
    # a reader study
    Flag(("--label",), "study.label", "who plays the doctor, as a code such as reader-1 (required, no default; 1-40 "
         "letters, digits, '.', '_', '-'): the label is all that says who the person is", "study", commands=frozenset({STUDY})),
    Flag(("--seed",), "study.order_seed", "the seed the case order is shuffled by (default 0); the cells keep the "
         "run's seed, so a study pairs case by case with a model run of the same cases", "study", int,
         commands=frozenset({STUDY})),
)

# flags a reader study does not take: the doctor is a person (no doctor model, strategy, bias,
# deliberation nor memory), and one suite (the diagnostic consultation)
NOT_IN_STUDY = frozenset({"--doctor-llm", "--doctor-model", "--doctor-bias", "--doctor-mode", "--doctor-strategy",
                          "--static", "--cot", "--ensemble", "--panel", "--memory", "--memory-dir", "--memory-k",
                          "--embedder", "--clip-checkpoint", "--suite", "--vision", "--vision-llm", "--vision-model",
                          "--reflector-llm", "--reflector-model"})


def _role_flags() -> list[Flag]:
    """``--<role>-llm`` and ``--<role>-model`` for every registered role (its name on the
    command line: ``--technician-llm``; its spec name still accepted, unlisted)."""
    out = []
    for r in role_names():
        name, own = flag_name(r), get_role(r).backend
        hidden = (f"--{r}-llm",) if name != r else ()
        out.append(Flag((f"--{name}-llm",), f"roles.{r}.backend", f"backend of the {name} role (default: "
                        f"{own or 'the --llm backend'})", "models", metavar="SPEC", hidden=hidden))
        out.append(Flag((f"--{name}-model",), f"roles.{r}.model", f"model name of the {name} role, openai: backends "
                        "(default: --model)", "models", metavar="NAME",
                        hidden=(f"--{r}-model",) if name != r else ()))
    return out


def _suite_flags() -> list[Flag]:
    """Each registered suite's own flags (:class:`~agents.suites.contract.Option`)."""
    out = []
    for s in all_suites():
        for o in s.options:
            out.append(Flag((o.flag,), f"{s.section}.{o.key}", f"{o.help} (the {s.name} suite)", f"suite:{s.name}",
                            None if o.type is bool else o.type, o.value if o.type is bool else None,
                            metavar=o.metavar, commands=frozenset({"bench", "config", "consult", s.name})))
    return out


def all_flags(command: str) -> list[Flag]:
    return [f for f in (*FLAGS, *_role_flags(), *_suite_flags())
            if command in f.commands and not (command == STUDY and f.names[0] in NOT_IN_STUDY)]


def add_spec_flags(p: argparse.ArgumentParser, command: str, default_llm: str, *, suite: Suite | None = None) -> None:
    """The run-spec flags of ``command`` (a suite's own command, ``medsim osce``, gets the
    flags of what that suite reads). Every flag defaults to None: not given."""
    p.set_defaults(default_llm=default_llm, preset_suite=suite.name if suite else None)
    p.add_argument("--config", type=Path, default=None,
                   help="run spec TOML file; flags override it (default: none, flags and built-in defaults)")
    groups: dict[str, Any] = {}
    for f in all_flags(command):
        if suite is not None and not _reads(suite, f):
            continue
        title = f"the {f.group[6:]} suite" if f.group.startswith("suite:") else f.group
        g = groups.setdefault(f.group, p.add_argument_group(title))
        kw: dict[str, Any] = {"default": None,
                              "help": f.help.replace("{default_llm}", default_llm).replace("{suites}", _suite_names())
                              .replace("{kinds}", kinds_help())}
        if f.switch:
            kw.update(action="store_const", const=f.value, dest=_switch_dest(f))
        else:
            kw.update(type=f.type, dest=f.dest)
            if f.metavar:
                kw["metavar"] = f.metavar
            choices = _protocol_choices() if f.names[0] == "--protocol" else f.choices
            if choices:
                kw["choices"] = choices
        g.add_argument(*f.names, **kw)
        for alias in f.hidden:
            g.add_argument(alias, **{**kw, "help": argparse.SUPPRESS})


def _switch_dest(f: Flag) -> str:
    return "switch__" + f.names[0].lstrip("-").replace("-", "_")


def _reads(suite: Suite, f: Flag) -> bool:
    """Whether ``f`` sets something ``suite`` reads (for its own command's parser)."""
    key = f.key_in(suite.name)
    if key is None:
        return f.names[0] in ("--timeout", "--retries", "--backoff", "--repeats")
    top = key.split(".")[0]
    if top == "roles":
        return key.split(".")[1] in suite.role_names()
    own = {k for sec in suite.reads for k in SECTIONS.get(sec, ())}
    return top in RUN_KEYS - {"suite"} or top in own or top == suite.section


def _given(args: argparse.Namespace, f: Flag) -> Any:
    return getattr(args, _switch_dest(f) if f.switch else f.dest, None)


class Overrides(dict):
    """The dotted spec keys a command line sets, and (``flags``) the flag that set each."""

    def __init__(self) -> None:
        super().__init__()
        self.flags: dict[str, str] = {}

    def set(self, key: str, value: Any, flag: str) -> None:
        self[key] = value
        self.flags[key] = flag


def overrides(args: argparse.Namespace, command: str) -> Overrides:
    """The dotted spec keys a command line sets (flags not given are left out). A flag
    whose suite keeps its key elsewhere (``--no-guards``: ``osce.guards``) sets that key
    when the suite is known (``--protocol``, ``--suite`` or the command's own)."""
    suite = getattr(args, "preset_suite", None) or getattr(args, "suite", None)
    if getattr(args, "protocol", None) and not suite:
        suite = _protocol(args.protocol, args).get("suite")
    o = Overrides()
    if getattr(args, "preset_suite", None):
        o.set("suite", args.preset_suite, f"medsim {args.preset_suite}")
    for f in all_flags(command):
        value = _given(args, f)
        if value is None:
            continue
        if f.to_spec is not None:
            for k, v in f.to_spec(value, args).items():
                o.set(k, v, f.names[0])
        elif f.key is not None:
            o.set(f.key_in(suite), value, f.names[0])
    if getattr(args, "repeats", None) is not None:
        o.pop("seed", None)  # --repeats R: the seeds 0..R-1
    for k, v in biases(args).items():
        o.set(k, v, "--doctor-bias" if getattr(args, "doctor_bias", None) and "doctor" in k else
              "--patient-bias" if "patient" in k else "--doctor-bias/--patient-bias")
    return o


def _flag_of_key() -> dict[str, str]:
    out = {"roles.*.timeout_s": "--timeout", "roles.*.retries": "--retries", "roles.*.backoff_s": "--backoff",
           "conditions": "--ladder/--doctor-bias/--patient-bias/--behaviour-grid", "protocol.name": "--protocol",
           "suite": "--protocol/--suite"}
    for f in (*FLAGS, *_role_flags(), *_suite_flags()):
        for k in (f.key, *(f"{s.section}.{s.keeps[f.key]}" for s in all_suites() if f.key in s.keeps and s.section)):
            if k is not None:
                out.setdefault(k, f.names[0])
    return out


def flag_for(key: str | None, given: Mapping[str, Any]) -> str | None:
    """The flag that set ``key`` (or a key under it: ``protocol`` for ``--max-turns``)
    among the ``given`` overrides; None when no flag did."""
    if not key:
        return None
    by = getattr(given, "flags", None) or {}
    names = {**_flag_of_key(), **by}
    for k in sorted(given, key=len, reverse=True):
        if k == key or k.startswith(key + ".") or key.startswith(k + "."):
            if k in names:
                return names[k]
    return None


def check_flags_for_suite(given: Mapping[str, Any], suite: Suite) -> None:
    """Flags that set something ``suite`` does not read are an error naming them (and the
    flags the suite does take)."""
    own = {k for sec in suite.reads for k in SECTIONS.get(sec, ())}
    others = {s.section: s.name for s in all_suites() if s.section and s.name != suite.name}
    unused: list[str] = []
    elsewhere: dict[str, str] = {}
    for key in given:
        top = key.split(".")[0]
        flag = flag_for(key, given) or key
        if top == "roles":
            role = key.split(".")[1]
            if role not in (STAR, *suite.role_names()):
                unused.append(flag)
            continue
        if top in RUN_KEYS or top in own or top == suite.section:
            continue
        if top in others:
            elsewhere.setdefault(flag, others[top])
        elif flag not in unused:
            unused.append(flag)
    if elsewhere:
        flag, name = next(iter(elsewhere.items()))
        raise SpecError(f"{', '.join(elsewhere)}: only with --protocol {name} (or --suite {name})", key="suite")
    if unused:
        takes = [o.flag for o in suite.options]
        roles = ", ".join(flag_name(r) for r in suite.role_names())
        raise SpecError(f"{', '.join(sorted(set(unused), key=unused.index))}: not used by the {suite.name} suite "
                        f"(its roles: {roles}; its own flags: {', '.join(takes) or 'none'}; see `medsim bench --help`)",
                        key=None)
