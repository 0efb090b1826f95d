"""A reader study in the hospital window (``medsim study --ui window``): the machinery of
``medsim play --as doctor`` with the study's cases as the shift's patients, one doctor
(the person, from the first turn to the last) and no judge.

The patients arrive in the study's order and wait; the person sees them one at a time.
Each consultation is logged as it happens into the study's run directory (a
:class:`~medsim.study.CaseLog` beside the world's own sink), and when it ends the window
pauses on a box that says the diagnosis is recorded, never whether it is right: the
world scores nothing (its row for the case holds no verdict and no answer key), the bar
shows the study's label and the case in hand of how many instead of an accuracy
(:class:`game.view.app.Blinded`). Closing the window between two cases stops the study
for now; closing it in the middle of a case leaves that case (:func:`settle`).
"""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.events import TeeSink
from agents.suites.diagnosis import consultation_config
from game.control import PlayerIO
from game.hospital_map import load_map
from game.resources import default_map_path
from game.runner import Runner
from game.world import World, WorldConfig
from medsim.study import CaseLog, Study

__all__ = ["StudyWorld", "study_world", "blinded_view", "settle", "run_study_window"]


class StudyWorld:
    """The world of one sitting of a study, and the open log of each case it has begun."""

    def __init__(self, study: Study, world: World, logs: dict[str, CaseLog]):
        self.study, self.world, self.logs = study, world, logs


def _row(study: Study, case: Case, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The world's row of a case a person read: how the consultation ended, no verdict and
    no answer key (they are the study's end's)."""
    end = next((e for e in events if e.get("type") == "consultation_ended"), {})
    return {"case_id": case.id, "seed": study.plan.seed, "condition": study.plan.condition,
            "status": end.get("status", "error"), "diagnosis": end.get("diagnosis"), "error": end.get("error"),
            "failure": end.get("failure"), "turns": end.get("turns", 0),
            "n_tests": len(end.get("tests_requested") or []), "correct": None}


def study_world(study: Study, *, player: PlayerIO, runner: Runner, map_path: Path | None = None) -> StudyWorld:
    """The hospital with the study's cases still to read as its patients, in the study's
    order, one doctor whose every turn is ``player``'s, and no scorer."""
    plan = study.plan
    todo = study.todo()
    units = {u.id: u for u in todo}
    logs: dict[str, CaseLog] = {}
    tees: dict[str, TeeSink] = {}
    lock = threading.Lock()

    def sink_for(case: Case, world_sink: Any) -> TeeSink:
        with lock:
            if case.id not in tees:
                logs[case.id] = study.case_log(units[case.id], "window")
                tees[case.id] = TeeSink(world_sink, logs[case.id])
            return tees[case.id]

    def cast(case: Case, sink: Any) -> Any:
        return replace(plan, human_io=player.for_case(case.id)).cast(case, sink_for(case, sink))

    def engine(case: Case, sink: Any, cast: Any = None) -> Any:
        return plan.engine(case, sink_for(case, sink), cast)

    def row(case: Case, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        logs[case.id].close()
        return _row(study, case, events)

    spec = plan.spec
    hmap = load_map(Path(map_path or spec.world.map or default_map_path()))
    config = WorldConfig(doctors=1, patients=len(todo), consultation=consultation_config(spec.protocol),
                         arrival_interval_s=spec.world.arrival_interval_s, seed=plan.seed, condition=plan.condition)
    world = World(hmap, [u.item for u in todo], cast, [], config, runner=runner, log=None, player=player,
                  engine=engine, row=row)
    world.reset(plan.seed, case_order=list(range(len(todo))))
    return StudyWorld(study, world, logs)


def blinded_view(sw: StudyWorld) -> Any:
    """What the window shows of the study (:class:`game.view.app.Blinded`): the bar's
    banner and the box after each case."""
    from game.view.app import Blinded

    study = sw.study

    def banner() -> str:
        k = min(study.n, len(study.played()) + 1)
        return f"STUDY {study.label}   case {k} of {study.n}   blinded: nothing is judged until the study ends"

    def between(row: Mapping[str, Any], last: bool) -> tuple[str, list[str]]:
        k = study.position(str(row["case_id"]))
        said = "Your diagnosis is recorded" if row.get("diagnosis") else "The consultation is recorded"
        lines = [f"{said}; nothing is judged until the study ends."]
        if last:
            lines.append("Every case of the study is read. Enter or Esc closes the window; the study is scored then.")
        else:
            lines.append("Enter: call the next patient.   Esc: stop for now (the same command goes on from the "
                         "next case).")
        return f"Case {k} of {study.n} recorded", lines

    return Blinded(banner, between)


def settle(sw: StudyWorld) -> None:
    """After the window closed (and the model calls in flight ended): each consultation
    begun and not yet recorded is ended as it stands. Its pending turn is answered; then
    the doctor is asked again, and the person, gone, ends it as abandoned (or it stands
    as read, when their diagnosis was already given); a case whose consultation had not
    seen a turn of the person's comes again (:meth:`medsim.study.CaseLog.close`)."""
    for enc in sw.world.encounters:
        c, clog = enc.consultation, sw.logs.get(enc.case.id)
        if clog is None:
            continue
        if c is not None:
            if c.pending is not None:
                c.answer()
            if not c.done:
                c.doctor_turn()  # the person has gone: the input has ended
            c.finish()
        clog.close()


def run_study_window(study: Study, args: Any) -> None:
    """The study's cases still to read, in the window (``args``: the view's flags)."""
    from game.resources import assets_dir
    from game.runner import ThreadRunner
    from game.view.app import run_window
    from game.view.display import prepare_display

    prepare_display(args.headless)
    player, runner = PlayerIO(), ThreadRunner(2, nice=10)
    sw: StudyWorld | None = None
    try:
        sw = study_world(study, player=player, runner=runner)
        run_window(sw.world, Path(study.spec.world.map or default_map_path()), assets_dir(), headless=args.headless,
                   frames=args.frames, screenshot=args.screenshot, speed=args.speed, fixed_dt=args.fixed_dt,
                   zoom=args.zoom, play_as="doctor", title=f"medsim study: {study.label}", blinded=blinded_view(sw))
    finally:
        player.close()  # a turn still waiting on the person ends
        runner.close()
        if sw is not None:
            settle(sw)
