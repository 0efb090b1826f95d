"""The ``medsim`` command. Every subcommand that runs cells builds one run spec: the
``--config`` TOML file (read once) with the flags of :mod:`medsim.flags` overriding it
(``medsim config --show`` prints it); the run loop (:mod:`medsim.bench`) runs it, whatever
its suite."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from agents.roles import flag_name, get_role, playable_roles, role_for_flag
from agents.settings import SpecError
from agents.suites.registry import get_suite
from agents.textsafe import printable
from medsim.flags import STAR, add_spec_flags, check_flags_for_suite, flag_for, overrides
from medsim.report_server import port_arg
from medsim.spec import RunSpec, load_toml, spec_from_raw, suite_of

__all__ = ["main", "build_parser", "spec_from_args"]

logger = logging.getLogger(__name__)


# -- the run spec of a command line -----------------------------------------------------------
def _suite_for(raw: dict[str, Any], given: dict[str, Any]) -> Any:
    """The suite the file and the flags together name."""
    probe: dict[str, Any] = {k: raw[k] for k in ("suite",) if k in raw}
    probe["protocol"] = dict(raw.get("protocol") or {}) if isinstance(raw.get("protocol"), dict) else {}
    if "suite" in given:
        probe["suite"] = given["suite"]
    for k in ("name", "static"):
        if f"protocol.{k}" in given:
            probe["protocol"][k] = given[f"protocol.{k}"]
    try:
        return suite_of(probe)
    except SpecError as e:
        raise SpecError(f"{e} ({flag_for('suite', given) or 'suite'})", key="suite") from None


def spec_from_args(args: argparse.Namespace, *, extra: dict[str, Any] | None = None) -> RunSpec:
    """The run spec of a command line: the TOML file (if any, read once), then the flags
    (and ``extra`` overrides). A flag the run's suite has no use for is an error naming
    the flag, and so is a flag whose value the spec refuses."""
    raw = load_toml(args.config) if args.config is not None else {}
    given = overrides(args, args.command)
    given.update(extra or {})
    suite = _suite_for(raw, given)
    check_flags_for_suite(given, suite)
    for key in [k for k in given if k.startswith(f"roles.{STAR}.")]:  # --timeout: every role of the suite
        value, flag = given.pop(key), given.flags.pop(key, key)
        for role in suite.role_names():
            if f"roles.{role}.{key.rsplit('.', 1)[1]}" not in given:
                given.set(f"roles.{role}.{key.rsplit('.', 1)[1]}", value, flag)
    try:
        spec = spec_from_raw(raw, given, source=str(args.config) if args.config is not None else None,
                             default_llm=args.default_llm)
    except SpecError as e:
        flag = flag_for(e.key, given)
        raise (SpecError(f"{e} ({flag})", key=e.key) if flag else e) from None
    if args.command in ("consult", "play", "study") and all(rs.backend in ("scripted", "none", "human")
                                                   for rs in spec.roles.values()):
        logger.info("every model role is the scripted oracle (it plays from the case and its answer key); "
                    "--llm local runs the embedded model")
    # a role left on the command's default because only some roles were named: say so
    named = [r for r in spec.roles if given.get(f"roles.{r}.backend") and given[f"roles.{r}.backend"] != "human"]
    file_roles = raw.get("roles") if isinstance(raw.get("roles"), dict) else {}
    if named and "llm" not in given and "llm" not in raw:
        left = [r for r in spec.roles if r not in named and r not in file_roles and not get_role(r).backend
                and spec.roles[r].backend != "human"]
        if left:
            what = ("the scripted backend, an oracle that plays from the case and its answer key"
                    if args.default_llm == "scripted" else f"the default backend '{args.default_llm}'")
            names = [flag_name(r) for r in left]
            logger.warning("%s use %s; pass --llm SPEC (or --%s-llm ...) to set them", ", ".join(names), what, names[0])
    return spec


# -- the parser -------------------------------------------------------------------------
def _add_view_args(p: argparse.ArgumentParser, speed: int) -> None:
    v = p.add_argument_group("view")
    v.add_argument("--speed", type=int, default=speed, choices=(1, 2, 4, 8), help="simulation speed (default: %(default)s)")
    v.add_argument("--headless", action="store_true", help="no window (SDL dummy driver)")
    v.add_argument("--frames", type=int, default=None, help="stop after N frames (default: run until closed)")
    v.add_argument("--screenshot", type=Path, default=None, help="save the last frame as PNG (default: none)")
    v.add_argument("--fixed-dt", type=float, default=None, help="real seconds per frame (default: measured)")
    v.add_argument("--zoom", type=float, default=None, choices=(0.5, 0.75, 1.0, 1.5, 2.0), metavar="ZOOM",
                   help="0.5, 0.75, 1, 1.5 or 2 (default: 1)")


def _add_run_out(p: argparse.ArgumentParser, unit: str) -> None:
    p.add_argument("--out", type=Path, default=None, help="output directory (default runs/<run>-<doctor>-s<seed>)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    p.add_argument("--retry-errors", action="store_true", help=f"with --resume: run errored {unit}s again")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) nor progress lines (in a file or a pipe)")


def _version() -> str:
    """The installed distribution's version (a source tree run without installing has none)."""
    from importlib import metadata

    try:
        return metadata.version("medsim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: no package metadata)"


def _as_role(text: str) -> str:
    """``--as``: a role's command-line name (``technician``; its spec name is the same person)."""
    return flag_name(role_for_flag(text))


def build_parser() -> argparse.ArgumentParser:
    # no abbreviations: `bench --case X` is not `--cases X` (a mistyped flag is an error, not another flag)
    p = argparse.ArgumentParser(prog="medsim", description="Simulate and evaluate AI doctors.", allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _add_log_args(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    playable = tuple(r.flag_name for r in playable_roles())

    b = sub.add_parser("bench", help="run a headless benchmark of any suite (cases x seeds x conditions)")
    add_spec_flags(b, "bench", "scripted")
    _add_run_out(b, "cell")

    o = sub.add_parser("osce", help="OSCE treatment-persuasion encounters: MBTI personas, a 30-criterion rubric "
                                    "(the same run as `medsim bench --protocol osce`)")
    add_spec_flags(o, "osce", "scripted", suite=get_suite("osce"))
    _add_run_out(o, "encounter")

    c = sub.add_parser("consult", help="run one cell (a consultation, an encounter) and print it live")
    add_spec_flags(c, "consult", "scripted")
    c.add_argument("--case", default=None, help="case (or persona) id (default: the first)")
    c.add_argument("--log", type=Path, default=None, help="also write the event log here (default: none)")
    c.add_argument("--as", dest="as_role", default=None, type=_as_role, choices=playable,
                   help="play this role yourself, one answer per line on standard input (scriptable; default: models "
                        "play every role)")

    pl = sub.add_parser("play", help="open the hospital: several consultations at once, live")
    add_spec_flags(pl, "play", "scripted")
    pl.add_argument("--log", type=Path, default=None, help="shift event log (default runs/shift-s<seed>.jsonl)")
    pl.add_argument("--follow", default=None, help="select and follow an agent, e.g. doctor-1 (default: none)")
    pl.add_argument("--as", dest="as_role", default=None, type=_as_role, choices=playable,
                    help="start in control of the first doctor, the first patient or the technician (T takes over any "
                         "agent at run time, G gives it back; default: watch)")
    _add_view_args(pl, 2)

    from medsim.study_cmd import add_study_parser
    add_study_parser(sub, _add_view_args)  # medsim study: a reader study, blinded until it ends
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

    s = sub.add_parser("score", help="re-score a finished run (any suite) from its logs, e.g. with another judge")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--judge-llm", required=True,
                   help="the judge's backend (scripted | local | gguf:PATH | openai:URL; required, no default)")
    s.add_argument("--judge-model", default=None, help="the judge's model name, openai: backends (default: none)")
    s.add_argument("--timeout", type=float, default=None, help="whole-call timeout, seconds (default 120)")
    s.add_argument("--retries", type=int, default=None, help="retries per call on transient errors (default 3)")
    s.add_argument("--label", default=None, help="name of the scores folder (default: from the judge and --scorers)")
    s.add_argument("--scorers", type=lambda v: [n.strip() for n in v.split(",") if n.strip()], metavar="NAME,...",
                   help="re-run only these (e.g. diagnosis,differential); the others' figures are the run's (default: all)")
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
    j.add_argument("--pairs", default=None, help="JSONL of {truth, diagnosis, optional label}; 'shipped' for medsim's "
                                                 "own labelled set (default: none; instead of --truth/--diagnosis)")
    j.add_argument("--judge-llm", default=None, help="model judge backend (default: the pre-check alone)")
    j.add_argument("--judge-model", default=None, help="the judge's model name, openai: backends (default: none)")
    j.add_argument("--timeout", type=float, default=None, help="whole-call timeout, seconds (default 120)")
    j.add_argument("--show", choices=("all", "errors", "none"), default="errors",
                   help="with --pairs: which pairs to list (default: the ones the judge gets wrong)")

    from medsim.fidelity_cmd import add_fidelity_parser

    add_fidelity_parser(sub)  # medsim fidelity --pairs: the simulator-fidelity checker on a labelled set

    mem = sub.add_parser("memory", help="look into a case memory: stats, search TEXT, show ID, delete ID, export, clear")
    mem.add_argument("action", choices=("stats", "search", "show", "delete", "export", "clear"))
    mem.add_argument("text", nargs="*", help="search: the text; show: the record id")
    mem.add_argument("--memory-dir", required=True, help="the memory's directory (required, no default)")
    mem.add_argument("-k", type=int, default=3, help="search: results per buffer (default: %(default)s)")
    mem.add_argument("--yes", action="store_true", help="clear: really")

    cf = sub.add_parser("config", help="print the resolved run spec (TOML) for a config file and flags")
    cf.add_argument("--show", action="store_true", help="print the resolved spec (the default action)")
    add_spec_flags(cf, "config", "scripted")

    vw = sub.add_parser("view", help="serve a run's report.html and transcripts on 127.0.0.1")
    vw.add_argument("run_dir", type=Path)
    vw.add_argument("--port", type=port_arg, default=8000, help="port on 127.0.0.1 (0: any free port; default 8000)")
    bw = vw.add_mutually_exclusive_group()
    bw.add_argument("--browser", dest="open_browser", action="store_true", default=False,
                    help="also open the report in a web browser")
    bw.add_argument("--no-browser", dest="open_browser", action="store_false", help="only print the URL (the default)")
    vw.add_argument("--rebuild", action="store_true", help="write report.html again even if it is up to date")
    for sp in sub.choices.values():  # -q (every command's): no line per request
        _add_log_args(sp, top=False)
    return p


def _near_flags(parser: argparse.ArgumentParser, command: str, extra: Sequence[str]) -> str:
    """`` (did you mean --cases?)`` for a mistyped flag of ``command``."""
    import difflib

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    known = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
    near = [m[0] for e in extra if e.startswith("--")
            for m in [difflib.get_close_matches(e.split("=")[0], known, n=1)] if m]
    return f" (did you mean {', '.join(near)}?)" if near else ""


class _Parser(argparse.ArgumentParser):
    """A subcommand's parser: no abbreviated flags either."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _add_log_args(p: argparse.ArgumentParser, *, top: bool) -> None:
    """-v / -q, before or after the subcommand (a subcommand's copy sets nothing unless given,
    so ``medsim -q bench`` and ``medsim bench -q`` both work)."""
    g = p.add_argument_group("logging").add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="debug messages too (each case as it finishes, ...)")
    g.add_argument("-q", "--quiet", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="warnings and errors only: no progress, no status lines (nor, in view, a line per request)")


# -- commands -----------------------------------------------------------------------------
def _cmd_run(args: argparse.Namespace) -> int:
    """``medsim bench`` and a suite's own command (``medsim osce``): the run loop."""
    from agents.llm.url_secrets import redact_spec
    from agents.names import slug
    from medsim.automedic import generate_cases
    from medsim.bench import BenchOptions, run_bench

    spec = spec_from_args(args)
    doc = spec.roles.get("doctor") or next(iter(spec.roles.values()))
    out = args.out or Path("runs") / f"{slug(spec.suite.run_name(spec))}-{slug(redact_spec(doc.backend))}-s{spec.seeds[0]}"
    generated = generate_cases(spec, out, resume=args.resume) if "cases" in spec.suite.reads else None
    if generated is not None:  # --cases generate:N: the run's spec is resolved with the invented cases
        spec = spec_from_args(args, extra={"cases": str(generated)})
    outcome = run_bench(spec, BenchOptions(out=out, resume=args.resume, retry_errors=args.retry_errors,
                                           progress=not args.no_progress, command=args.argv))
    for e in outcome.invalid_records:
        logger.warning("skipped invalid record: %s", e)
    first, *rest = outcome.headline.split("\n")
    print(printable("\n".join([f"{first} -> {outcome.out}", *rest])))
    if (loud := outcome.nothing_scored_message()) is not None:
        logger.error("%s", loud.removeprefix("error: "))
    return outcome.exit_code


def _cmd_consult(args: argparse.Namespace) -> int:
    from medsim.consult import run_consult

    extra = {f"roles.{role_for_flag(args.as_role)}.backend": "human"} if args.as_role else None
    return run_consult(spec_from_args(args, extra=extra), unit_id=args.case, log=args.log, command=args.argv)


def _cmd_play(args: argparse.Namespace) -> int:
    from medsim.play import run_play

    return run_play(spec_from_args(args), args)


def _cmd_study(args: argparse.Namespace) -> int:
    from medsim.study_cmd import run_study_command
    return run_study_command(args, spec_from_args)


def _cmd_replay(args: argparse.Namespace) -> int:
    from medsim.play import run_replay

    return run_replay(args)


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


def judge_table(args: argparse.Namespace) -> dict[str, Any]:
    """The judge's role table of ``medsim score`` and ``medsim judge``."""
    return {"backend": args.judge_llm, "model": args.judge_model, "timeout_s": args.timeout,
            "retries": getattr(args, "retries", None)}


def _cmd_score(args: argparse.Namespace) -> int:
    from medsim.score import rescore

    o = rescore(args.run_dir, judge_table(args), label=args.label, progress=True, scorers=args.scorers)
    print(printable(f"re-scored {o.summary['cases']} {o.unit_name}s -> {o.out}"))
    print(printable(f"  this judge:      {o.headline}"))
    print(printable(f"  the run's judge: {o.before}"))
    for label, a, b in o.flipped:
        print(f"  {printable(label, single_line=True)}: {a} -> {b}")
    if o.unfinished:
        what = "consultations" if o.unit_name == "case" else f"{o.unit_name}s"
        logger.warning("%s log(s) of unfinished %s not scored (finish the run with --resume)", len(o.unfinished), what)
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

    return run_judge_command(args, judge_table(args) if args.judge_llm else None)


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from medsim.fidelity_cmd import run_fidelity_command

    return run_fidelity_command(args, judge_table(args) if args.judge_llm else None)


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
    from medsim.pages import run_view

    return run_view(args)


COMMANDS = {"bench": _cmd_run, "osce": _cmd_run, "consult": _cmd_consult, "cases": _cmd_cases, "play": _cmd_play,
            "replay": _cmd_replay, "score": _cmd_score, "judge": _cmd_judge, "config": _cmd_config,
            "compare": _cmd_compare, "memory": _cmd_memory, "view": _cmd_view, "fidelity": _cmd_fidelity,
            "study": _cmd_study, "automedic": lambda args: args.automedic_handler(args)}


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
    from medsim.errors import BenchError
    from medsim.play import ReplayError

    from medsim.plugins import PluginError, load_plugins

    try:
        load_plugins()  # a suite, backend or role of your own: registered before its flags are read
    except PluginError as e:
        print(f"medsim: error: {e}", file=sys.stderr)
        return 2
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # argparse gives `memory search` its words only before the first option; words after an
    # option (`memory search --memory-dir M chest pain`) belong to the text as well
    if extra and args.command == "memory" and not any(e.startswith("-") for e in extra):
        args.text, extra = [*args.text, *extra], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}{_near_flags(parser, args.command, extra)}")
    args.argv = ["medsim", *(sys.argv[1:] if argv is None else argv)]  # the command line, for provenance
    from medsim.logs import NORMAL, QUIET, VERBOSE, setup_logging

    setup_logging(VERBOSE if args.verbose else QUIET if args.quiet else NORMAL)
    try:
        return COMMANDS[args.command](args)
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
