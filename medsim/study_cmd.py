"""``medsim study``'s arguments and command (:mod:`medsim.study` runs the study; the
terminal's menus are :class:`medsim.terminal.StudyTerminalIO`, the window
:mod:`medsim.study_window`)."""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any, Callable

from agents.textsafe import printable
from medsim.flags import add_spec_flags
from medsim.spec import RunSpec, SpecError
from medsim.study import UIS, StudyOptions, run_study

__all__ = ["add_study_parser", "run_study_command", "study_spec_of_run"]

logger = logging.getLogger(__name__)


def add_study_parser(sub: Any, view_args: Callable[[argparse.ArgumentParser, int], None]) -> argparse.ArgumentParser:
    """``medsim study``'s arguments (added to the CLI's subcommands; ``view_args``: the
    window's flags, as ``medsim play`` has them)."""
    st = sub.add_parser("study", help="a reader study: you play the doctor through a case set, one case at a time in "
                                      "a shuffled order, blinded (no answer key, verdict nor accuracy) until it ends; "
                                      "then scored like a model's run")
    add_spec_flags(st, "study", "scripted")
    st.add_argument("--out", type=Path, default=None, help="the study's run directory (default runs/study-<label>)")
    st.add_argument("--ui", choices=UIS, default="terminal",
                    help="where you read the cases: the terminal (menus, one answer per line; scriptable) or the "
                         "hospital window (default: %(default)s)")
    st.add_argument("--resume", action="store_true",
                    help="go on with the study in --out (the same command without it does as well)")
    st.add_argument("--finish", action="store_true",
                    help="end the study now: score the cases read (it ends by itself with its last case); with --out "
                         "alone, the study's own settings")
    view_args(st, 2)
    return st


def study_spec_of_run(args: argparse.Namespace) -> RunSpec:
    """The spec of the study in ``--out`` (its run.json), for ``--finish --out RUN``."""
    path = args.out / "run.json"
    try:
        return RunSpec.from_dict(json.loads(path.read_text(encoding="utf-8"))["spec"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SpecError(f"--finish: {path}: cannot read the study's spec ({e})") from None


def run_study_command(args: argparse.Namespace, spec_from_args: Callable[..., RunSpec]) -> int:
    """``medsim study``: open the study, read its cases in the terminal or the window,
    print where it stands (blinded) or, once ended, its results. ``spec_from_args``: the
    command line's run spec (:func:`medsim.cli.spec_from_args`); ``--finish --out RUN``
    with no ``--label`` ends the study there with its own spec."""
    if args.label is None and not (args.finish and args.out is not None):
        logger.error("--label: required: who plays the doctor, as a code such as reader-1")
        return 2
    spec = (study_spec_of_run(args) if args.label is None
            else spec_from_args(args, extra={"roles.doctor.backend": "human"}))
    assert spec.study is not None
    out = args.out or Path("runs") / f"study-{spec.study.label}"
    opts = StudyOptions(out, ui=args.ui, resume=args.resume, finish=args.finish, command=args.argv)
    io = window = None
    if args.ui == "window" and not args.finish:
        from game.view.display import prepare_display
        from medsim.study_window import run_study_window

        prepare_display(args.headless)  # no display: said before anything is written

        def window(study: Any) -> None:
            run_study_window(study, args)
    else:
        from game.catalogue import test_menu
        from game.hospital_map import load_map
        from game.resources import default_map_path
        from medsim.terminal import StudyTerminalIO

        io = StudyTerminalIO(test_menu(load_map(Path(spec.world.map) if spec.world.map else default_map_path())))
    outcome = run_study(spec, opts, io, window=window)
    print(printable(f"{outcome.headline}\n-> {outcome.out}"))
    return outcome.exit_code
