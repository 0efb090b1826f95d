"""The ``medsim`` command. Every subcommand that runs consultations builds one run spec
(``--config run.toml`` with flags overriding it; ``medsim config --show`` prints it) and
assembles the run from it."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from agents.roles import ROLE_DEFAULTS, SPEAKER_LABELS, role_defaults
from agents.textsafe import printable
from medsim.report_server import port_arg
from medsim.spec import seeds_arg


def role_default_backend(role: str) -> str | None:
    return role_defaults(role).backend

__all__ = ["main", "build_parser", "spec_from_args"]

ROLE_FLAGS = tuple(ROLE_DEFAULTS)  # --doctor-llm, --judge-model, ... (one per registered role)
# a role's name on the command line and on screen where it differs from its name in run
# specs and event logs; the spec name still works as a hidden flag (--measurement-llm)
FLAG_NAMES = {"measurement": "technician"}
# people a consultation can have at the keyboard, by their flag name
PLAYABLE = ("doctor", "patient", "technician")

logger = logging.getLogger(__name__)


def flag_name(role: str) -> str:
    """``technician`` for the ``measurement`` role, else the role's own name."""
    return FLAG_NAMES.get(role, role)


def _role_of(name: str) -> str:
    """The spec's role name for a flag name (``technician`` -> ``measurement``)."""
    return next((r for r, f in FLAG_NAMES.items() if f == name), name)


def _as_role(text: str) -> str:
    """``--as``: a flag name; the spec name (``measurement``) is taken as the same person."""
    return flag_name(text)


# -- the run-spec flags -------------------------------------------------------------------
def _add_spec_args(p: argparse.ArgumentParser, default_llm: str, *, grid: bool = True, world: bool = False,
                   osce: bool = False) -> None:
    p.set_defaults(default_llm=default_llm)
    p.add_argument("--config", type=Path, default=None,
                   help="run spec TOML file; flags override it (default: none, flags and built-in defaults)")
    g = p.add_argument_group("cases")
    g.add_argument("--cases", default=None, help="registered case set (demo) or a JSONL path (default: demo)")
    g.add_argument("--limit", type=int, default=None, help="the first N cases only (default: all)")
    g.add_argument("--skip-invalid", action="store_true", default=None,
                   help="run the valid records of a case set that has invalid ones")
    g.add_argument("--seed", type=int, default=None, help="the run's seed (default 0)")
    if grid:
        g.add_argument("--seeds", type=seeds_arg, default=None,
                       help="several seeds, e.g. 0,1,2: each case runs once per seed (default: --seed)")
        g.add_argument("--workers", type=int, default=None, help="cases run at once (default 1)")
        g.add_argument("--batched", dest="batched", action="store_true", default=None,
                       help="with --workers N and an in-process model: the cases' model calls decode together in one "
                            "llama.cpp context (default: on with --workers > 1 and an in-process model, off otherwise; "
                            "given where it can do nothing, an error)")
        g.add_argument("--no-batched", dest="batched", action="store_false", default=None,
                       help="one model call at a time (replies then equal a --workers 1 run's more often; batched "
                            "replies may differ a little, a row's logits depending slightly on the batch)")
        g.add_argument("--executor", default=None, choices=("local", "ray"),
                       help="where cases run: local threads, or ray: --workers actors on a Ray cluster, each building "
                            "its own models (pip install 'medsim[ray]'; default: local)")
        g.add_argument("--ray-address", default=None, metavar="ADDRESS",
                       help="with --executor ray: the cluster to join (auto: the one running here; default: start a "
                            "local Ray instance for the run)")
    m = p.add_argument_group("models")
    m.add_argument("--llm", default=None,
                   help=f"backend of every role that does not name its own: scripted | local | smollm2 | gguf:PATH | "
                        f"openai:BASE_URL | a2a:URL (an A2A agent) (default: {default_llm})")
    m.add_argument("--model", default=None,
                   help="model name of every openai: role that does not name its own (default: the server's)")
    m.add_argument("--vision", dest="vision_llm_alias", default=None,
                   help="a vision model that reads returned images: gguf:MODEL,PROJECTOR | openai:URL (with "
                        "--vision-model) | scripted | none (default: none, the doctor gets the report alone)")
    for r in ROLE_FLAGS:
        name, own = flag_name(r), role_default_backend(r)
        m.add_argument(f"--{name}-llm", dest=f"{r}_llm", default=None, metavar="SPEC",
                       help=f"backend of the {name} role (default: {own or 'the --llm backend'})")
        m.add_argument(f"--{name}-model", dest=f"{r}_model", default=None, metavar="NAME",
                       help=f"model name of the {name} role, openai: backends (default: --model)")
        if name != r:  # the role's name in run specs and logs: still accepted, not listed
            m.add_argument(f"--{r}-llm", dest=f"{r}_llm", default=None, help=argparse.SUPPRESS)
            m.add_argument(f"--{r}-model", dest=f"{r}_model", default=None, help=argparse.SUPPRESS)
    m.add_argument("--timeout", type=float, default=None, help="whole-call timeout of every role, seconds (default 120)")
    m.add_argument("--retries", type=int, default=None, help="retries per model call on transient errors (default 3)")
    m.add_argument("--backoff", type=float, default=None, help="first retry wait in seconds, doubling (default 1)")
    m.add_argument("--no-preflight", action="store_true", default=None,
                   help="do not check each server once before the run starts")
    c = p.add_argument_group("protocol")
    c.add_argument("--protocol", default=None, choices=("medsim", "agentclinic", "automedic") + (("osce",) if osce else ()),
                   help="agentclinic: AgentClinic's marker protocol and prompt style, no minimum gathering, no detectors; "
                        "automedic: AutoMedic's tagged dialogue (<patient>, <clinical>, </end>), then the case's "
                        "multiple-choice question and the static baseline, scored by CARE (cases from `medsim automedic "
                        "convert`)" + ("; osce: OSCE treatment-persuasion encounters over --personas, the run `medsim "
                                       "osce` makes" if osce else "") + " (default: medsim)")
    c.add_argument("--doctor-bias", default=None, metavar="NAMES",
                   help="AgentClinic's doctor biases, appended to the doctor's prompt only: one name, or several "
                        "(comma-separated, or 'all') as a grid of conditions with an unbiased one (default: none)")
    c.add_argument("--patient-bias", default=None, metavar="NAMES",
                   help="the patient's biases, likewise (default: none)")
    c.add_argument("--doctor-mode", default=None, choices=("structured", "markers", "auto"),
                   help="structured (JSON actions, grammar-constrained) or markers; auto: structured, markers for openai: "
                        "and a2a: doctors (default: auto)")
    c.add_argument("--min-gathering", type=int, default=None,
                   help="questions/tests required before a diagnosis is accepted (0: AgentClinic's rule; default 3)")
    c.add_argument("--no-guards", action="store_true", default=None, help="turn off the refusal / role-break / loop detectors")
    c.add_argument("--max-turns", type=int, default=None, help="turn limit (default 20)")
    c.add_argument("--no-technician", dest="no_measurement", action="store_true", default=None,
                   help="no technician: every order is refused (the ladder's baseline)")
    c.add_argument("--no-measurement", dest="no_measurement", action="store_true", default=None, help=argparse.SUPPRESS)
    c.add_argument("--static", action="store_true", default=None,
                   help="static QA: the doctor reads the whole case and answers at once")
    c.add_argument("--budget", type=float, default=None,
                   help="the most a case may spend on its visit and tests (prices: agents/costs.toml; default: no limit)")
    dg = p.add_argument_group("diagnosis")
    dg.add_argument("--cot", action="store_true", default=None, help="reason step by step before the final diagnosis")
    dg.add_argument("--ensemble", type=int, default=None,
                    help="a panel of N doctors voting (N >= 2; default: 0, one doctor)")
    dg.add_argument("--panel", default=None, choices=("off", "roles"),
                    help="roles: a role-split panel (hypothesis keeper, test chooser, challenger, cost steward, checklist; "
                         "default: off)")
    if grid:
        dg.add_argument("--ladder", action="store_true",
                        help="MedAgentSim's ladder as conditions: static, baseline, +measurement, +memory (with "
                             "--learn-cases), +CoT, +ensemble, role-split panel")
        dg.add_argument("--repeats", type=int, default=None,
                        help="seeds per case (0..R-1); intervals are over cases (default: --seeds)")
    mm = p.add_argument_group("memory")
    mm.add_argument("--memory", default=None, choices=("off", "learn", "frozen"),
                    help="past cases before each diagnosis: off (default), learn (and learn from each case), frozen")
    mm.add_argument("--memory-dir", default=None,
                    help="where the memory lives, SQLite + FAISS (default: none; needed with --memory)")
    mm.add_argument("--memory-k", type=int, default=None, help="past cases (and insights) retrieved per buffer (default 3)")
    mm.add_argument("--embedder", default=None, choices=("auto", "minilm", "clip", "clip-tiny", "hash"),
                    help="auto: CLIP when --clip-checkpoint is given, else MiniLM (default: auto)")
    mm.add_argument("--clip-checkpoint", default=None, help="a local open_clip checkpoint file (default: none)")
    if grid:
        mm.add_argument("--learn-cases", default=None,
                        help="a learning split: learned from first, then the scored cases run with the memory frozen "
                             "(default: none)")
        mm.add_argument("--learn-limit", type=int, default=None, help="the learning split's first N cases (default: all)")
    if world:
        w = p.add_argument_group("world")
        w.add_argument("--doctors", type=int, default=None, help="doctors on shift (default 2)")
        w.add_argument("--patients", type=int, default=None, help="patients in the shift (default 6)")
        w.add_argument("--map", default=None, help="Tiled .tmx map (default maps/hospital.tmx)")


def _overrides(args: argparse.Namespace, roles: Sequence[str]) -> dict[str, Any]:
    a = vars(args)
    o: dict[str, Any] = {"cases": a.get("cases"), "limit": a.get("limit"), "seed": a.get("seed"),
                         "seeds": a.get("seeds"), "workers": a.get("workers"), "llm": a.get("llm"),
                         "executor": a.get("executor"), "ray_address": a.get("ray_address"),
                         "model": a.get("model"), "protocol.name": a.get("protocol"),
                         "protocol.doctor_mode": a.get("doctor_mode"), "protocol.min_gathering": a.get("min_gathering"),
                         "protocol.max_turns": a.get("max_turns"), "world.doctors": a.get("doctors"),
                         "world.patients": a.get("patients"), "world.map": a.get("map"),
                         "memory.mode": a.get("memory"), "memory.dir": a.get("memory_dir"), "memory.k": a.get("memory_k"),
                         "memory.embedder": a.get("embedder"), "memory.clip_checkpoint": a.get("clip_checkpoint"),
                         "memory.learn_cases": a.get("learn_cases"), "memory.learn_limit": a.get("learn_limit")}
    if a.get("skip_invalid"):
        o["skip_invalid"] = True
    if a.get("batched") is not None:  # None: auto (RunSpec.decodes_batched)
        o["batched"] = a["batched"]
    if a.get("no_preflight"):
        o["preflight"] = False
    if a.get("no_guards"):
        o["protocol.guards"] = False
    if a.get("no_measurement"):
        o["protocol.measurement"] = False
    if a.get("static"):
        o["protocol.static"] = True
    if a.get("budget") is not None:
        o["protocol.budget"] = a["budget"]
    if a.get("cot"):
        o["diagnosis.cot"] = True
    if a.get("ensemble") is not None:
        o["diagnosis.ensemble"] = a["ensemble"]
    if a.get("panel") is not None:
        o["diagnosis.panel"] = a["panel"]
    if a.get("repeats") is not None:
        if a["repeats"] < 1:
            from medsim.spec import SpecError
            raise SpecError(f"repeats: must be at least 1, got {a['repeats']} (--repeats)")
        o["seeds"] = list(range(a["repeats"]))
        o.pop("seed", None)
    if a.get("ladder"):
        from medsim.ladder import ladder_conditions

        o["conditions"] = ladder_conditions(memory=bool(a.get("learn_cases")), ensemble=a.get("ensemble") or 5)
    o.update(_bias_overrides(a))
    for r in ROLE_FLAGS:
        o[f"roles.{r}.backend"] = a.get(f"{r}_llm")
        o[f"roles.{r}.model"] = a.get(f"{r}_model")
    if a.get("vision_llm_alias"):
        o["roles.vision.backend"] = a["vision_llm_alias"]
    for flag, key in (("timeout", "timeout_s"), ("retries", "retries"), ("backoff", "backoff_s")):
        if a.get(flag) is not None:
            for r in roles:
                o[f"roles.{r}.{key}"] = a[flag]
    return {k: v for k, v in o.items() if v is not None}


def _bias_overrides(a: dict[str, Any]) -> dict[str, Any]:
    """--doctor-bias / --patient-bias: one bias is the protocol's; several (or 'all') are a
    grid of conditions (an unbiased one first), so the report breaks accuracy down by bias."""
    from agents.suites.biases import BiasError, bias_conditions, parse_bias_list
    from medsim.spec import SpecError

    names: dict[str, list[str]] = {}
    for role in ("doctor", "patient"):
        if a.get(f"{role}_bias"):
            try:
                names[role] = parse_bias_list(role, a[f"{role}_bias"])
            except BiasError as e:
                raise SpecError(f"{e} (--{role}-bias)") from None
    if not names:
        return {}
    if sum(len(v) for v in names.values()) == 1 or all(len(v) == 1 for v in names.values()):
        return {f"protocol.{r}_bias": v[0] for r, v in names.items()}
    if a.get("ladder"):
        raise SpecError("several biases make a grid of conditions, and so does --ladder: give one or the other")
    return {"conditions": bias_conditions(names.get("doctor", ()), names.get("patient", ()))}


def spec_from_args(args: argparse.Namespace):  # -> RunSpec
    """The run spec of a command line: the TOML file (if any), then the flags."""
    from medsim.spec import SpecError, build_spec, load_toml

    raw = load_toml(args.config) if args.config is not None else {}
    file_roles = list((raw.get("roles") or {}) if isinstance(raw.get("roles"), dict) else {})
    roles = list(ROLE_FLAGS) + [r for r in file_roles if r not in ROLE_FLAGS]
    overrides = _overrides(args, roles)
    try:
        spec = build_spec(args.config, overrides, default_llm=args.default_llm)
    except SpecError as e:
        # name the flag when a flag gave the bad value
        msg = str(e)
        key = next((k for k in sorted(overrides, key=len, reverse=True) if f"{k}:" in msg or f"'{k}'" in msg), None)
        if key is not None:
            raise SpecError(f"{msg} ({_flag_of(key)})") from None
        raise
    # a role left on the command's default because only some roles were named: say so
    named = [r for r in ROLE_FLAGS if getattr(args, f"{r}_llm", None)]
    if named and not args.llm and "llm" not in raw:
        left = [r for r in ROLE_FLAGS if r not in named and r not in file_roles and not role_default_backend(r)]
        if left:
            what = ("the scripted backend, an oracle that plays from the case and its answer key"
                    if args.default_llm == "scripted" else f"the default backend '{args.default_llm}'")
            names = [flag_name(r) for r in left]
            logger.warning("%s use %s; pass --llm SPEC (or --%s-llm ...) to set them", ", ".join(names), what, names[0])
    return spec


def _flag_of(key: str) -> str:
    special = {"seeds": "--seeds", "preflight": "--no-preflight", "protocol.guards": "--no-guards",
               "protocol.name": "--protocol", "llm": "--llm", "model": "--model", "memory.mode": "--memory",
               "memory.dir": "--memory-dir", "memory.k": "--memory-k"}
    if key in special:
        return special[key]
    parts = key.split(".")
    if parts[0] == "roles" and len(parts) == 3:
        flag = {"backend": "llm", "model": "model"}.get(parts[2])
        return f"--{flag_name(parts[1])}-{flag}" if flag else {"timeout_s": "--timeout", "retries": "--retries",
                                                         "backoff_s": "--backoff"}.get(parts[2], key)
    return "--" + parts[-1].replace("_", "-")


# -- the parser -------------------------------------------------------------------------
def _add_view_args(p: argparse.ArgumentParser, speed: int) -> None:
    v = p.add_argument_group("view")
    v.add_argument("--speed", type=int, default=speed, choices=(1, 2, 4, 8),
                   help="simulation speed (default: %(default)s)")
    v.add_argument("--headless", action="store_true", help="no window (SDL dummy driver)")
    v.add_argument("--frames", type=int, default=None, help="stop after N frames (default: run until closed)")
    v.add_argument("--screenshot", type=Path, default=None, help="save the last frame as PNG (default: none)")
    v.add_argument("--fixed-dt", type=float, default=None, help="real seconds per frame (default: measured)")
    v.add_argument("--zoom", type=float, default=None, help="0.5, 0.75, 1, 1.5 or 2 (default: 1)")


def _version() -> str:
    """The installed distribution's version; a source tree run without installing has no
    metadata to read."""
    from importlib import metadata

    try:
        return metadata.version("medsim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: no package metadata)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="medsim", description="Simulate and evaluate AI doctors.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _add_log_args(p, top=True)
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="run a headless benchmark over a case set")
    _add_spec_args(b, "scripted", osce=True)
    b.add_argument("--out", type=Path, default=None, help="output directory (default runs/<cases>-<llm>-s<seed>)")
    b.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    b.add_argument("--retry-errors", action="store_true", help="with --resume: run errored cases again")
    b.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) nor progress lines (in a file or a pipe)")
    from medsim.osce_cli import add_osce_bench_args

    add_osce_bench_args(b)  # --protocol osce: --personas, --max-rounds, ... (last: it lists the flags above)

    c = sub.add_parser("consult", help="run one consultation and print it live")
    _add_spec_args(c, "local", grid=False)
    c.add_argument("--case", default=None, help="case id (default: the first case)")
    c.add_argument("--log", type=Path, default=None, help="also write the event log here (default: none)")
    c.add_argument("--as", dest="as_role", default=None, type=_as_role, choices=PLAYABLE,
                   help="play this role yourself, one answer per line on standard input (scriptable; "
                        "default: models play every role)")

    pl = sub.add_parser("play", help="open the hospital: several consultations at once, live")
    _add_spec_args(pl, "local", grid=False, world=True)
    pl.add_argument("--log", type=Path, default=None, help="shift event log (default runs/shift-s<seed>.jsonl)")
    pl.add_argument("--follow", default=None, help="select and follow an agent, e.g. doctor-1 (default: none)")
    pl.add_argument("--as", dest="as_role", default=None, type=_as_role, choices=PLAYABLE,
                    help="start in control of the first doctor, the first patient or the technician "
                         "(T takes over any agent at run time, G gives it back; default: watch)")
    _add_view_args(pl, 2)

    rp = sub.add_parser("replay", help="play a benchmarked case (or a whole run) in the hospital")
    rp.add_argument("run_dir", type=Path)
    rp.add_argument("case_id", nargs="?", default=None)
    rp.add_argument("--seed", type=int, default=None, help="which seed of a multi-seed run (default: the first)")
    rp.add_argument("--condition", default=None, help="which condition of a grid (default: base or the first)")
    rp.add_argument("--map", type=Path, default=None, help="Tiled .tmx map (default maps/hospital.tmx)")
    _add_view_args(rp, 4)

    v = sub.add_parser("cases", help="validate a case set and list its cases")
    v.add_argument("spec", nargs="?", default=None, help="registered name or JSONL path (the same as --cases)")
    v.add_argument("--cases", default=None, help="registered case set (demo) or a JSONL path (default: demo)")

    s = sub.add_parser("score", help="re-score a finished run from its logs (e.g. with another judge)")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--judge-llm", required=True,
                   help="the judge's backend (scripted | local | gguf:PATH | openai:URL; required, no default)")
    s.add_argument("--judge-model", default=None, help="the judge's model name, openai: backends (default: the server's)")
    s.add_argument("--timeout", type=float, default=None, help="whole-call timeout, seconds (default 120)")
    s.add_argument("--retries", type=int, default=None, help="retries per call on transient errors (default 3)")
    s.add_argument("--label", default=None, help="name of the scores folder (default: from the judge)")
    from medsim.osce_cli import add_osce_parser

    add_osce_parser(sub)  # medsim osce: OSCE treatment-persuasion encounters
    from medsim.automedic import add_automedic_parser

    add_automedic_parser(sub)  # medsim automedic convert: multiple-choice items -> profiles

    cm = sub.add_parser("compare", help="compare finished bench runs case by case (paired accuracy, McNemar, flips, "
                                        "token and time ratios)")
    cm.add_argument("runs", nargs="+", metavar="RUN",
                    help="bench run directories (RUN or RUN:CONDITION); each is compared with the first")
    cm.add_argument("--out", type=Path, default=None,
                    help="where compare.md/.html/.json/.png go (default RUN_A/compare/<the other runs>)")

    j = sub.add_parser("judge", help="judge diagnoses against answer keys (one pair, or a labelled JSONL set)")
    j.add_argument("--truth", default=None, help="the answer key (default: none; with --diagnosis)")
    j.add_argument("--diagnosis", default=None, help="the diagnosis to judge (default: none; with --truth)")
    j.add_argument("--pairs", default=None,
                   help="JSONL of {truth, diagnosis, optional label}; 'shipped' for medsim's own labelled set "
                        "(default: none; instead of --truth/--diagnosis)")
    j.add_argument("--judge-llm", default=None, help="model judge backend (default: the pre-check alone)")
    j.add_argument("--judge-model", default=None, help="the judge's model name, openai: backends (default: the server's)")
    j.add_argument("--timeout", type=float, default=None, help="whole-call timeout, seconds (default 120)")
    j.add_argument("--show", choices=("all", "errors", "none"), default="errors",
                   help="with --pairs: which pairs to list (default: the ones the judge gets wrong)")

    mem = sub.add_parser("memory", help="look into a case memory: stats, search TEXT, show ID, export, clear")
    mem.add_argument("action", choices=("stats", "search", "show", "export", "clear"))
    mem.add_argument("text", nargs="*", help="search: the text; show: the record id")
    mem.add_argument("--memory-dir", required=True, help="the memory's directory (required, no default)")
    mem.add_argument("-k", type=int, default=3, help="search: results per buffer (default: %(default)s)")
    mem.add_argument("--yes", action="store_true", help="clear: really")

    cf = sub.add_parser("config", help="print the resolved run spec (TOML) for a config file and flags")
    cf.add_argument("--show", action="store_true", help="print the resolved spec (the default action)")
    _add_spec_args(cf, "scripted", world=True)

    vw = sub.add_parser("view", help="serve a bench run's report.html and transcripts on 127.0.0.1")
    vw.add_argument("run_dir", type=Path)
    vw.add_argument("--port", type=port_arg, default=8000, help="port on 127.0.0.1 (0: any free port; default 8000)")
    bw = vw.add_mutually_exclusive_group()
    bw.add_argument("--browser", dest="open_browser", action="store_true", default=False,
                    help="also open the report in a web browser")
    bw.add_argument("--no-browser", dest="open_browser", action="store_false", help="only print the URL (the default)")
    vw.add_argument("--rebuild", action="store_true", help="write report.html again even if it is up to date")
    # -q (every command's): no line per request
    for sp in sub.choices.values():
        _add_log_args(sp, top=False)
    return p


def _add_log_args(p: argparse.ArgumentParser, *, top: bool) -> None:
    """-v / -q, before or after the subcommand (a subcommand's copy sets nothing unless given,
    so ``medsim -q bench`` and ``medsim bench -q`` both work)."""
    g = p.add_argument_group("logging").add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="debug messages too (each case as it finishes, ...)")
    g.add_argument("-q", "--quiet", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="warnings and errors only: no progress, no status lines (nor, in view, a line per request)")


# -- commands -----------------------------------------------------------------------------
def _cmd_bench(args: argparse.Namespace) -> int:
    from medsim.bench import BenchOptions, run_bench
    from agents.llm.url_secrets import redact_spec
    from agents.names import slug
    from medsim.osce_cli import osce_flags_given, run_bench_osce

    if args.protocol == "osce":  # the OSCE suite: the same run as `medsim osce`
        return run_bench_osce(args)
    if given := osce_flags_given(args):
        from medsim.spec import SpecError

        raise SpecError(f"{', '.join(given)}: only with --protocol osce")

    spec = spec_from_args(args)
    doc = spec.roles["doctor"].backend
    out = args.out or Path("runs") / f"{slug(Path(spec.cases).stem)}-{slug(redact_spec(doc))}-s{spec.seeds[0]}"
    from medsim.automedic import materialise_generated

    spec = materialise_generated(spec, out, resume=args.resume)  # --cases generate:N[:specialty]
    outcome = run_bench(spec, BenchOptions(out=out, resume=args.resume, retry_errors=args.retry_errors,
                                           progress=not args.no_progress, command=args.argv))
    s = outcome.summary
    for e in outcome.invalid_records:
        logger.warning("skipped invalid record: %s", e)
    print(printable(f"{s['cases']} cases: {s['correct']}/{s['scored']} correct, accuracy {_acc(s)}, "
                    f"{s['failed']} failed, {s['errors']} errors -> {outcome.out}"))
    for name, cs in (s.get("conditions") or {}).items():
        print(printable(f"  {name}: {cs['correct']}/{cs['scored']} correct, accuracy {_acc(cs)}, {cs['errors']} errors"))
    if (loud := outcome.nothing_scored_message()) is not None:
        logger.error("%s", loud.removeprefix("error: "))
    return outcome.exit_code


def _acc(s: dict[str, Any]) -> str:
    return "n/a" if s["accuracy"] is None else f"{s['accuracy']:.1%} [{s['ci95'][0]:.1%}, {s['ci95'][1]:.1%}]"


class _LivePrinter:
    """Prints a consultation as it happens. Model text is escaped (``agents.textsafe``):
    a transcript keeps its line breaks, never a terminal control."""

    def emit(self, event: Any, **_: Any) -> None:
        line = self._line(event)
        if line is not None:
            print(printable(line), flush=True)

    @staticmethod
    def _line(event: Any) -> str | None:
        from agents.events import (ConsultationFailed, ImageError, ImageNotRead, ImageRead, ImageReturned, JudgeDecision,
                                   LLMRetry, PrematureDiagnosis, ReplyRejected, RouteDecision, TurnLimitReached,
                                   Utterance)

        if isinstance(event, Utterance):
            who = SPEAKER_LABELS.get(event.speaker, event.speaker)
            return f"[{event.turn:>2}] {who}: {event.text}"
        elif isinstance(event, RouteDecision) and event.note:
            return f"     ({event.rule}: {event.note})"
        elif isinstance(event, LLMRetry):
            return f"     (retry {event.attempt} for {event.role}: {event.error})"
        elif isinstance(event, ReplyRejected):
            return f"     ({event.role} reply rejected as {event.problem}, attempt {event.attempt}: {event.text[:80]!r})"
        elif isinstance(event, ConsultationFailed):
            return f"     (consultation failed: {event.reason})"
        elif isinstance(event, PrematureDiagnosis):
            return (f"     (premature diagnosis after {event.gathered} of {event.required} questions/tests: "
                    "the doctor is told to go on)")
        elif isinstance(event, TurnLimitReached):
            return f"     (turn limit {event.max_turns} reached)"
        elif isinstance(event, ImageReturned):
            return f"     (image returned: {event.study}, {event.image}, sha256 {(event.sha256 or 'url')[:12]})"
        elif isinstance(event, ImageRead):
            return f"     (image read by the vision model: {event.text})"
        elif isinstance(event, ImageNotRead):
            return f"     (image not read: {event.reason})"
        elif isinstance(event, ImageError):
            return f"     (image error for {event.study}: {event.error})"
        elif isinstance(event, JudgeDecision):
            verdict = "CORRECT" if event.correct else "WRONG"
            return (f"\nDiagnosis: {event.diagnosis!s}\nCorrect:   {event.truth}\nJudge ({event.method}): {verdict} - "
                    f"{event.rationale}")
        return None


def _cmd_consult(args: argparse.Namespace) -> int:
    from agents.cases.registry import load_cases, resolve_case_path
    from agents.consultation import run_consultation
    from agents.events import DictSink, EventLog, Header, TeeSink
    from agents.llm.llamacpp import LlamaPool
    from agents.provenance import git_revision, package_versions, run_provenance
    from agents.results import case_row
    from agents.scorers import Transcript, score_case
    from medsim.assemble import Backends, plan_for, preflight

    if args.as_role:
        setattr(args, f"{_role_of(args.as_role)}_llm", "human")
    spec = spec_from_args(args)
    cases, _ = load_cases(spec.cases, skip_invalid=spec.skip_invalid)
    by_id = {c.id: c for c in cases}
    case = by_id.get(args.case) if args.case else cases[0]
    if case is None:
        shown = ", ".join(list(by_id)[:8])
        logger.error("no case '%s' in %s (ids: %s%s)", args.case, spec.cases, shown, ", ..." if len(by_id) > 8 else "")
        return 2
    pool = LlamaPool()
    memory = None
    t0 = time.perf_counter()
    try:
        backends = Backends(by_id, pool)
        backends.check(spec)
        if spec.preflight:
            preflight(spec, backends=backends)
        human_io = None
        if spec.human_roles():
            from game.catalogue import test_menu
            from game.hospital_map import load_map
            from game.resources import default_map_path
            from medsim.terminal import TerminalIO

            human_io = TerminalIO(test_menu(load_map(Path(spec.world.map) if spec.world.map else default_map_path())))
        mode = spec.memory.mode
        if mode != "off":
            from agents.recall import case_key
            from medsim.memory import open_memory

            memory = open_memory(spec.memory, read_only=mode != "learn")
            if memory.has_case(case_key(case)):
                memory.close()
                logger.error("case %s is in the memory at %s: its answer would leak", case.id, spec.memory.dir)
                return 2
        plan = plan_for(spec, spec.condition_names()[0], spec.seeds[0], backends, human_io=human_io,
                        memory=memory, learn=mode == "learn")
        from agents.cases.model import format_facts

        if "patient" in spec.human_roles() and "doctor" not in spec.human_roles():
            print(printable(f"You are the patient: a {case.demographics}. What you know about yourself:"))
            print(printable(format_facts({k: v for k, v in case.patient.items() if k != "Demographics"}, indent="  ")))
        elif "measurement" in spec.human_roles() and "doctor" not in spec.human_roles():
            print(printable(f"You are the technician for a {case.demographics}; answer each order from the "
                            "records:\n Examination:\n" + (format_facts(case.exam, indent="  ") or "  none recorded")
                            + "\n Tests:\n" + (format_facts(case.records(), indent="  ") or "  none recorded")))
        else:
            print(printable(f"Case {case.id}: {case.demographics}. {case.objective}"))
        print(printable("Models: " + ", ".join(f"{flag_name(r)}={m}" for r, m in plan.models.items()) + "\n"), flush=True)
        kept = DictSink()
        sinks: list[Any] = [_LivePrinter(), kept]
        log = EventLog(args.log) if args.log else None
        if log is not None:
            log.__enter__()
            log.emit(Header(case_id=case.id, case_source=case.source, seed=plan.seed, condition=plan.condition,
                            spec=plan.header_spec, models=plan.models, git_revision=git_revision(),
                            packages=package_versions(),
                            **run_provenance(cases_file=resolve_case_path(spec.cases), models=plan.models,
                                             llms=plan.llms, command=args.argv)))
            sinks.append(log)
        try:
            sink = TeeSink(*sinks)
            run_consultation(case, plan.cast(case, sink), plan.consultation, sink)
            score_case(case, Transcript.from_events(kept.events, case_id=case.id), plan.scorers, sink)
            if plan.learner is not None:
                learned = plan.learner.learn(case, kept.events, sink)
                print(printable(f"memory: {learned.reason}"
                                + (f" (record {learned.record_id})" if learned.record_id else "")))
        finally:
            if log is not None:
                log.__exit__(None, None, None)
    finally:
        pool.close()
        if memory is not None:
            memory.close()
    row = case_row(case, kept.events, seed=plan.seed, condition=plan.condition, events_file=str(args.log or ""),
                   wall_s=time.perf_counter() - t0)
    print(printable(f"\nStatus: {row['status']}; turns {row['turns']}; tests {row['n_tests']}; {row['llm_calls']} model "
                    f"calls; prompt tokens sent {row['prompt_tokens']}, evaluated {row['prompt_tokens_evaluated']}, "
                    f"completion {row['completion_tokens']}; wall time {row['wall_s']:.1f} s"))
    if row["error"]:
        logger.error("%s", row["error"])
        return 1
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from agents.events import EventLog
    from agents.llm.llamacpp import LlamaPool
    from game.runner import InlineRunner, ThreadRunner
    from game.resources import assets_dir, default_map_path
    from medsim.play import build_shift

    from game.control import PlayerIO

    spec = spec_from_args(args)
    log_path = args.log or Path("runs") / f"shift-s{spec.seeds[0]}.jsonl"
    scripted = all(rs.backend == "scripted" for rs in spec.roles.values())
    # a person's turn waits on a worker thread: the world needs threads whenever one can play
    player = PlayerIO()
    headless_scripted = args.headless and scripted and not args.as_role
    # model calls run below the window's CPU priority, so the view keeps its frame rate
    runner = InlineRunner() if headless_scripted else ThreadRunner(max(2, spec.world.doctors + 1), nice=10)
    pool = LlamaPool(n_threads=max(1, (os.cpu_count() or 2) - 1))  # leave a core for the view
    map_path = Path(spec.world.map) if spec.world.map else default_map_path()
    try:
        with EventLog(log_path) as log:
            world = build_shift(spec, runner=runner, log=log, pool=pool, map_path=map_path,
                                player=None if headless_scripted else player, command=args.argv)
            from game.view.app import run_window

            stats = run_window(world, map_path, assets_dir(), headless=args.headless, frames=args.frames,
                               screenshot=args.screenshot, speed=args.speed, fixed_dt=args.fixed_dt, zoom=args.zoom,
                               select=args.follow, play_as=args.as_role)
    finally:
        player.close()  # a turn still waiting on the person ends, so the worker threads can stop
        runner.close()
        pool.close()
    s = world.stats()
    print(printable(f"shift: {s['patients']} patients arrived, {s['seen']} seen, {s['correct']} correct, "
                    f"{s['failed']} failed, {s['errors']} errors; {stats['frames']} frames, frame time p50 "
                    f"{stats['p50_ms']:.1f} ms p95 {stats['p95_ms']:.1f} ms; log {log_path}"))
    if args.screenshot:
        print(printable(f"screenshot: {args.screenshot}"))
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from game.resources import assets_dir, default_map_path
    from game.runner import InlineRunner
    from medsim.play import build_replay

    world, rows = build_replay(args.run_dir, args.case_id, map_path=args.map, runner=InlineRunner(), log=None,
                               seed=args.seed, condition=args.condition)
    from game.view.app import run_window

    run_window(world, args.map or default_map_path(), assets_dir(), headless=args.headless, frames=args.frames,
               screenshot=args.screenshot, speed=args.speed, fixed_dt=args.fixed_dt,
               title=f"medsim replay: {args.run_dir.name}", zoom=args.zoom, replay=True)
    for r in world.finished:
        diagnosis = "None" if r["diagnosis"] is None else f"'{printable(r['diagnosis'], single_line=True)}'"
        print(f"{printable(r['case_id'], single_line=True)}: {r['status']}, diagnosis {diagnosis}, correct {r['correct']}")
    return 0


def _cmd_cases(args: argparse.Namespace) -> int:
    from agents.cases.registry import load_cases

    if args.spec and args.cases and args.spec != args.cases:
        logger.error("two case sets given: %s and --cases %s", args.spec, args.cases)
        return 2
    cases, errors = load_cases(args.cases or args.spec or "demo", skip_invalid=True)
    for c in cases:
        cells = (c.id, c.specialty or "-", c.demographics, f"{len(c.tests)} tests", c.diagnosis)
        print("\t".join(printable(x, single_line=True) for x in cells))  # a tab inside a cell would add a column
    for e in errors:
        logger.warning("invalid: %s", e)
    logger.info("%s valid, %s invalid", len(cases), len(errors))
    return 1 if errors else 0


def _judge_role(args: argparse.Namespace):  # -> RoleSpec
    from medsim.spec import RoleSpec

    d: dict[str, Any] = {}
    if args.timeout is not None:
        d["timeout_s"] = args.timeout
    if getattr(args, "retries", None) is not None:
        d["retries"] = args.retries
    return RoleSpec.parse("judge", d, llm=args.judge_llm, model=args.judge_model)


def _cmd_score(args: argparse.Namespace) -> int:
    from medsim.score import rescore

    o = rescore(args.run_dir, _judge_role(args), label=args.label, progress=True)
    if hasattr(o, "lines"):  # an OSCE run (medsim.osce): its own summary
        print("\n".join(printable(x) for x in o.lines()))
        return o.exit_code
    s, before = o.summary, o.original
    print(printable(f"re-scored {s['cases']} cases -> {o.out}"))
    print(f"  this judge:     {s['correct']}/{s['scored']} correct, accuracy {_acc(s)}, {s['errors']} errors")
    print(f"  the run's judge: {before['correct']}/{before['scored']} correct, accuracy {_acc(before)}")
    for label, a, b in o.flipped:
        print(f"  {printable(label, single_line=True)}: {a} -> {b}")
    if o.unfinished:
        logger.warning("%s log(s) of unfinished consultations not scored (finish the run with --resume)",
                       len(o.unfinished))
    return o.exit_code


def _cmd_compare(args: argparse.Namespace) -> int:
    from medsim.compare import CompareError, compare_runs, load_run
    from medsim.compare_report import default_out, write_outputs

    if len(args.runs) < 2:
        logger.error("compare needs at least two runs (RUN_A RUN_B [RUN_C ...])")
        return 2
    try:
        runs = [load_run(a) for a in args.runs]
        report = compare_runs(runs)
        out = write_outputs(report, args.out or default_out(runs))
    except CompareError as e:
        logger.error("%s", e)
        return 2
    print(printable(out.markdown))
    print(printable("wrote " + ", ".join(str(f) for f in out.files)))
    return 0


def _cmd_judge(args: argparse.Namespace) -> int:
    from medsim.judging import run_judge_command

    return run_judge_command(args)


def _cmd_memory(args: argparse.Namespace) -> int:
    from medsim.memory import run_memory_command

    try:
        return run_memory_command(args)
    except RuntimeError as e:
        logger.error("%s", e)
        return 2


def _cmd_config(args: argparse.Namespace) -> int:
    sys.stdout.write(printable(spec_from_args(args).to_toml()))  # strings already \\u-escaped: a safety net
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    from medsim.html_report import ReportError, write_html_report
    from medsim.report_server import serve

    run_dir: Path = args.run_dir
    if not run_dir.is_dir():
        logger.error("%s: no such directory", run_dir)
        return 2
    scored = run_dir.resolve()
    if scored.parent.name == "scores" and (scored.parent.parent / "run.json").is_file():
        # a re-scoring (medsim score): its rows link to the run's own transcripts, so the
        # run's folder is served and the scores' page opened
        root, page = scored.parent.parent, f"scores/{quote(scored.name)}/report.html"
        if args.rebuild or not (scored / "report.html").is_file():
            logger.error("%s: a medsim score folder; its report.html is written by medsim score (run it again "
                         "with the same --judge-llm and --label to rewrite it)", run_dir)
            return 2
        try:
            serve(root, args.port, open_browser=args.open_browser, quiet=args.quiet, page=page,
                  on_ready=lambda url: print(printable(f"serving {run_dir} at {url} (Ctrl-C stops)"), flush=True))
        except KeyboardInterrupt:
            logger.info("stopped")
        return 0
    report, results = run_dir / "report.html", run_dir / "results.jsonl"
    stale = not report.is_file() or (results.is_file() and results.stat().st_mtime > report.stat().st_mtime)
    if args.rebuild or stale:
        try:
            write_html_report(run_dir)
        except ReportError as e:
            logger.error("%s", e)
            return 2
        logger.info("wrote %s", report)
    try:
        serve(run_dir, args.port, open_browser=args.open_browser, quiet=args.quiet,
              on_ready=lambda url: print(printable(f"serving {run_dir} at {url} (Ctrl-C stops)"), flush=True))
    except KeyboardInterrupt:
        logger.info("stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
    from agents.cases.model import CaseSetError
    from agents.judge_eval import PairsError
    from agents.llm.base import LLMError
    from agents.llm.local_model import ModelNotInstalled
    from agents.llm.spec import BackendSpecError
    from agents.results import ResultsError
    from game.hospital_map import MapError
    from medsim.assemble import AssemblyError
    from medsim.bench import BenchError
    from medsim.play import ReplayError
    from medsim.spec import SpecError

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # argparse gives `memory search` its words only before the first option; words after an
    # option (`memory search --memory-dir M chest pain`) belong to the text as well
    if extra and args.command == "memory" and not any(e.startswith("-") for e in extra):
        args.text, extra = [*args.text, *extra], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.argv = ["medsim", *(sys.argv[1:] if argv is None else argv)]  # the command line, for provenance
    from medsim.logs import NORMAL, QUIET, VERBOSE, setup_logging

    setup_logging(VERBOSE if args.verbose else QUIET if args.quiet else NORMAL)
    handlers = {"bench": _cmd_bench, "consult": _cmd_consult, "cases": _cmd_cases, "play": _cmd_play,
                "replay": _cmd_replay, "score": _cmd_score, "judge": _cmd_judge, "config": _cmd_config,
                "compare": _cmd_compare,
                "osce": lambda a: a.osce_handler(a), "automedic": lambda a: a.automedic_handler(a),
                "memory": _cmd_memory, "view": _cmd_view}
    try:
        return handlers[args.command](args)
    except (SpecError, CaseSetError, BenchError, AssemblyError, ReplayError, BackendSpecError, ModelNotInstalled,
            LLMError, MapError, ResultsError, PairsError) as e:
        logger.error("%s", e)
        return 2
    except BrokenPipeError:  # `medsim cases ... | head`: the reader has what it wanted; stdout goes nowhere now
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush has nowhere to fail
        return 141  # 128 + SIGPIPE, as a shell reports a writer its pipe's reader left
    except OSError as e:
        if getattr(e, "filename", None):
            logger.error("%s: %s", e.filename, e.strerror or e)
        else:
            logger.error("%s", e.strerror or e)
        return 2
    except KeyboardInterrupt:
        logger.error("interrupted; `medsim bench --resume` finishes a benchmark run")
        return 130


if __name__ == "__main__":
    sys.exit(main())
