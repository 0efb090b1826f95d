"""``medsim osce``'s arguments, and ``medsim bench --protocol osce``'s: kept apart from
:mod:`medsim.osce` so that building the CLI's parser imports nothing heavy (the command
imports the suite when it runs). Both commands run :func:`medsim.osce.run_osce_command`
on their arguments, so they write the same run directory."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from medsim.spec import SpecError, seeds_arg

__all__ = ["add_osce_parser", "add_osce_bench_args", "run_bench_osce", "osce_flags_given", "OSCE_ROLES",
           "BENCH_OSCE_FLAGS"]

OSCE_ROLES = ("doctor", "patient", "judge")


def _add_suite_args(o: Any) -> None:
    """The OSCE suite's own flags, for ``medsim osce`` and ``medsim bench --protocol osce``
    alike. Their defaults are None (a flag not given; bench refuses one given without
    --protocol osce) and :func:`medsim.osce.spec_from_osce_args` reads None as the default
    named in the help."""
    o.add_argument("--personas", default=None,
                   help="persona ids, comma-separated: INTJ_M_PNEUMO, ESFP_F_LUNG, INTJ_PNEUMO (gender drawn from the "
                        "seed), all (16 x 2 x cases), all_no_gender, random, random_no_gender (default: random)")
    o.add_argument("--osce-cases", default=None,
                   help="a directory of case files: medsim's TOML or OSCE-Project's prompts/cases/*.txt "
                        "(default: medsim's own PNEUMO and LUNG)")
    o.add_argument("--rubric", default=None, help="a rubric CSV (number, criterion, good example, bad example, "
                                                  "category; default: medsim's own)")
    o.add_argument("--max-rounds", type=int, default=None, help="rounds before an encounter ends undecided (default 10)")
    o.add_argument("--no-stop-classifier", action="store_true", default=None,
                   help="decide stops by the patient's marker and plain phrases only (no classifier call)")


def add_osce_parser(sub: Any) -> argparse.ArgumentParser:
    """``medsim osce``'s arguments (added to the CLI's subcommands)."""
    o = sub.add_parser("osce", help="OSCE treatment-persuasion encounters: MBTI personas, a 30-criterion rubric, "
                                    "a bench-format run directory")
    _add_suite_args(o)
    o.add_argument("--no-guards", action="store_true",
                   help="take every reply as it is: no re-asking of empty, role-breaking, echoing or looping replies "
                        "(default: guarded, a role that keeps failing ends the encounter as failed)")
    o.add_argument("--seed", type=int, default=None, help="the run's seed (default 0)")
    o.add_argument("--seeds", type=seeds_arg, default=None, help="several seeds, e.g. 0,1,2 (default: --seed)")
    o.add_argument("--workers", type=int, default=1, help="encounters run at once (default 1)")
    o.add_argument("--llm", default="scripted",
                   help="backend of every role that does not name its own: scripted | local | smollm2 | gguf:PATH | "
                        "openai:BASE_URL | a2a:URL, an agent over the A2A protocol (default: scripted, a deterministic "
                        "fake)")
    o.add_argument("--model", default=None,
                   help="model name of every openai: role that does not name its own (default: the server's)")
    for r in OSCE_ROLES:
        o.add_argument(f"--{r}-llm", default=None, help=f"backend of the {r} (default: --llm)")
        o.add_argument(f"--{r}-model", default=None, help=f"model name of the {r}, openai: backends (default: --model)")
    o.add_argument("--timeout", type=float, default=None, help="whole-call timeout of every role, seconds (default 120)")
    o.add_argument("--retries", type=int, default=None, help="retries per model call on transient errors (default 3)")
    o.add_argument("--no-preflight", action="store_true", help="do not check each server once before the run")
    o.add_argument("--out", type=Path, default=None, help="output directory (default runs/osce-<personas>-<llm>-s<seed>)")
    o.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    o.add_argument("--retry-errors", action="store_true", help="with --resume: run errored encounters again")
    o.add_argument("--no-progress", action="store_true")
    o.set_defaults(osce_handler=_run)
    return o


def _run(args: argparse.Namespace) -> int:
    from medsim.osce import run_osce_command

    return run_osce_command(args)


# -- medsim bench --protocol osce -------------------------------------------------------------
# the OSCE flags bench adds (with --protocol osce only) and the bench flags an OSCE run
# reads (by argparse dest); every other bench flag given with --protocol osce is an error
OSCE_FLAGS = {"personas": "--personas", "max_rounds": "--max-rounds", "osce_cases": "--osce-cases",
              "rubric": "--rubric", "no_stop_classifier": "--no-stop-classifier"}
BENCH_OSCE_FLAGS = frozenset({
    *OSCE_FLAGS, "protocol", "no_guards", "seed", "seeds", "repeats", "workers", "llm", "model",
    *(f"{r}_{k}" for r in OSCE_ROLES for k in ("llm", "model")), "timeout", "retries", "backoff", "no_preflight",
    "out", "resume", "retry_errors", "no_progress", "help", "verbose", "quiet"})


def add_osce_bench_args(b: argparse.ArgumentParser) -> None:
    """``medsim bench``'s OSCE flags (added last, so that the bench flags an OSCE run does
    not read are known, with their defaults, for :func:`run_bench_osce` to refuse)."""
    unused = tuple((a.dest, a.option_strings[0], a.default) for a in b._actions
                   if a.option_strings and a.dest not in BENCH_OSCE_FLAGS)
    o = b.add_argument_group("OSCE treatment persuasion (with --protocol osce; the same as `medsim osce`)")
    _add_suite_args(o)
    b.set_defaults(osce_unused=unused)


def run_bench_osce(args: argparse.Namespace) -> int:
    """``medsim bench --protocol osce``: the bench's arguments checked, then exactly
    what ``medsim osce`` runs. Raises :class:`SpecError` for a flag an OSCE run has no
    use for (``--cases``, ``--max-turns``, ``--technician-llm``, ``--memory``, ...)."""
    given: dict[str, str] = {}
    for dest, flag, default in getattr(args, "osce_unused", ()):
        if dest not in given and getattr(args, dest, default) not in (default, None, False):
            given[dest] = flag
    if given:
        raise SpecError(f"{', '.join(given.values())}: not used by --protocol osce (an OSCE run takes --personas, "
                        "--max-rounds, --osce-cases, --rubric, --no-stop-classifier, --no-guards, --seed/--seeds/"
                        "--repeats, --workers, --llm/--model and the doctor's, patient's and judge's backends; "
                        "see `medsim osce --help`)")
    from medsim.osce import run_osce_command

    return run_osce_command(args)


def osce_flags_given(args: argparse.Namespace) -> list[str]:
    """The OSCE flags given to ``medsim bench`` (an error without --protocol osce)."""
    return [flag for dest, flag in OSCE_FLAGS.items() if getattr(args, dest, None) not in (None, False)]
