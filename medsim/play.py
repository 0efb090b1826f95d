"""Assembling the hospital world from a run spec (``medsim play``) or from a bench run's
logs (``medsim replay``). Replay rebuilds the run exactly from the spec stored in the
log header and feeds it the recorded model outputs: a prompt that differs from the
recorded one is an error, so a replay that finishes reproduced every utterance."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.cases.model import Case
from agents.cases.registry import load_cases, resolve_case_path
from agents.events import EventSink, READABLE_SCHEMAS, read_events
from agents.llm.backend_kind import BackendKind
from agents.llm.llamacpp import LlamaPool
from agents.llm.prompt_cache import default_prompt_cache
from agents.llm.schedule import ModelGate
from agents.llm.replay import ReplayLLM
from agents.participants import Participant, ReplayedParticipant, Switchable
from agents.participants.human import InputEnded
from agents.participants.replayed import recorded_turns
from agents.provenance import git_revision, package_versions, run_provenance
from agents.results import read_results
from agents.roles import CONSULTATION_KINDS, get_role, role_names
from game.events import ShiftHeader
from game.hospital_map import load_map
from game.resources import default_map_path
from game.runner import Runner
from game.world import World, WorldConfig
from agents.recall import RecordedRecall, case_key
from agents.suites.contract import Suite, Unit
from agents.suites.diagnosis import consultation_config
from medsim.assemble import Backends, RunPlan, plan_for, preflight
from medsim.memory import open_memory
from medsim.spec import BASE_CONDITION, RunSpec, SpecError
from medsim.study_state import refuse_in_progress

__all__ = ["ReplayError", "build_shift", "build_replay", "find_case_logs", "run_play", "run_replay"]


logger = logging.getLogger(__name__)


class ReplayError(RuntimeError):
    """A run directory or log that cannot be replayed; names the file and why."""


def _live(spec: RunSpec, *, replay: bool = False) -> Suite:
    """The spec's suite, which must be one the hospital world can run."""
    suite = spec.suite
    if not suite.live:
        what = "replayed in" if replay else "run in"
        raise ReplayError(f"the {suite.name} suite's {suite.unit_name}s cannot be {what} the hospital world (only the "
                          f"consultations of a live suite walk its rooms); read them with `medsim view RUN`, or print "
                          f"one with `medsim consult --suite {suite.name}`")
    return suite


def _row_of(plan: RunPlan) -> Any:
    """The world's results row of a case: the suite's."""
    def row(case: Case, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return plan.suite.row(Unit(case.id, case.source, case), events, seed=plan.seed, condition=plan.condition,
                              events_file="", wall_s=0.0)
    return row


def _map_path(spec: RunSpec, map_path: Path | None) -> Path:
    if map_path is not None:
        return Path(map_path)
    return Path(spec.world.map) if spec.world.map else default_map_path()


def build_shift(spec: RunSpec, *, runner: Runner, log: Any, pool: LlamaPool, map_path: Path | None = None,
                condition: str | None = None, player: Any = None, command: Sequence[str] | None = None,
                gate: ModelGate | None = None, gated: Callable[[BackendKind], bool] = lambda kind: kind.in_process,
                ) -> World:
    """A shift of ``spec.world.patients`` patients from ``spec.cases`` (the first seed and
    condition of the spec). With a ``player`` (``game.control.PlayerIO``) a person can take
    agents over; their turns block a worker thread, so ``runner`` must be a ThreadRunner.
    ``command``: the command line the log's header records (default: this process's).
    ``gate``: the calls of the backends ``gated`` picks (an in-process model: it runs one
    call at a time) go through it, the consultation furthest along first."""
    suite = _live(spec)
    loaded = suite.load(spec)
    cases = [u.item for u in loaded.units]
    wrap = None if gate is None else (lambda kind, llm: gate.wrap(llm) if gated(kind) else llm)
    backends = Backends.for_run(spec, loaded, pool, wrap=wrap)
    backends.check(spec)
    if spec.preflight:
        preflight(spec, backends=backends)
    cond = condition or spec.condition_names()[0]
    seed = spec.seeds[0]
    mode = spec.for_condition(cond).memory.mode
    memory = open_memory(spec.memory, read_only=mode != "learn") if mode != "off" else None
    if memory is not None:
        leaked = [c.id for c in cases if case_key(c) in memory.case_keys()]
        if leaked:
            raise ReplayError(f"{len(leaked)} case(s) of this shift are in the memory at {spec.memory.dir} "
                              f"({', '.join(leaked[:5])}): their answers would leak")
    plan = plan_for(spec, cond, seed, backends, memory=memory, learn=mode == "learn")
    hmap = load_map(_map_path(spec, map_path))
    patients = spec.world.patients
    if patients > len(cases):  # a case seen twice would count twice in the shift's accuracy
        logger.warning("%d patients asked for but %s has %d case(s): the shift has %d patients, each case once",
                       patients, spec.cases, len(cases), len(cases))
        patients = len(cases)
    wc = WorldConfig(doctors=spec.world.doctors, patients=patients, consultation=consultation_config(plan.spec.protocol),
                     arrival_interval_s=spec.world.arrival_interval_s, seed=seed, condition=cond)
    world = World(hmap, cases, plan.cast, plan.scorers, wc, runner=runner, log=log, player=player,
                  learner=plan.learner, engine=plan.engine, row=_row_of(plan))
    if log is not None:
        log.emit(ShiftHeader(map=str(hmap.path), seed=seed, spec=spec.to_dict(), models=plan.models,
                             git_revision=git_revision(), packages=package_versions(),
                             **run_provenance(cases_file=resolve_case_path(spec.cases), models=plan.models,
                                              llms=plan.llms, command=command)), t=0.0)
    world.reset(seed)
    return world


def find_case_logs(run_dir: Path, case_id: str | None = None, *, seed: int | None = None,
                   condition: str | None = None) -> list[Path]:
    """The event logs of a bench run (of one case, seed, condition when given), found
    through results.jsonl, else through the logs' headers (an interrupted run)."""
    run_dir = Path(run_dir)
    ev_dir = run_dir / "events"
    if not ev_dir.is_dir():
        raise ReplayError(f"{run_dir}: not a medsim bench run (no events/ folder)")
    found: list[tuple[str, int, str, Path]] = []
    rows = read_results(run_dir / "results.jsonl")
    if rows and all(r.get("events") for r in rows):
        for r in rows:
            found.append((r["case_id"], int(r.get("seed", 0)), r.get("condition", BASE_CONDITION), run_dir / r["events"]))
    else:
        for p in sorted(ev_dir.glob("*.jsonl")):
            with p.open(encoding="utf-8") as fh:
                first = fh.readline()
            try:
                import json

                h = json.loads(first)
            except ValueError:
                continue
            if h.get("type") == "header":
                found.append((h["case_id"], int(h.get("seed", 0)), h.get("condition", BASE_CONDITION), p))
    if not found:
        raise ReplayError(f"{run_dir}: no event logs")
    seeds = sorted({f[1] for f in found})
    conds = sorted({f[2] for f in found})
    seed = seeds[0] if seed is None else seed
    condition = (BASE_CONDITION if BASE_CONDITION in conds else conds[0]) if condition is None else condition
    chosen = [f for f in found if f[1] == seed and f[2] == condition and (case_id is None or f[0] == case_id)]
    if not chosen:
        what = f"case '{case_id}'" if case_id else "cases"
        raise ReplayError(f"{run_dir}: no event log for {what} with seed {seed}, condition '{condition}' "
                          f"(seeds: {seeds}; conditions: {conds})")
    return [f[3] for f in chosen]


def _read_log(p: Path) -> list[dict[str, Any]]:
    try:
        ev = read_events(p)
    except (OSError, ValueError) as e:
        raise ReplayError(f"{p}: cannot be read ({e})") from None
    if not ev or ev[0].get("type") != "header":
        raise ReplayError(f"{p}: no header line")
    if ev[0].get("schema") not in READABLE_SCHEMAS:
        raise ReplayError(f"{p}: written by another medsim version (log schema {ev[0].get('schema')}, "
                          f"this version reads {', '.join(map(str, READABLE_SCHEMAS))})")
    return ev


def build_replay(run_dir: Path, case_id: str | None, *, runner: Runner, log: Any, map_path: Path | None = None,
                 seed: int | None = None, condition: str | None = None,
                 doctors: int | None = None) -> tuple[World, list[dict[str, Any]]]:
    """A world that plays the cases of a ``medsim bench`` run from their event logs: the
    run rebuilt from the spec in the header, fed the recorded outputs. Returns the world
    and the recorded results rows it should reproduce."""
    if Path(run_dir).is_file():
        return _build_shift_replay(Path(run_dir), case_id, runner=runner, log=log, map_path=map_path, doctors=doctors)
    refuse_in_progress(Path(run_dir), "replaying it (the hospital judges each case it replays)")
    files = find_case_logs(run_dir, case_id, seed=seed, condition=condition)
    logs: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        ev = _read_log(f)
        logs[ev[0]["case_id"]] = ev
    header = next(iter(logs.values()))[0]
    try:
        spec = RunSpec.from_dict(header["spec"])
    except SpecError as e:
        raise ReplayError(f"{files[0]}: the header's run spec is invalid: {e}") from None
    _live(spec, replay=True)
    cases, _ = load_cases(spec.cases, skip_invalid=True)
    wanted = [c for c in cases if c.id in logs]
    if not wanted:
        raise ReplayError(f"{run_dir}: none of the logged cases are in '{spec.cases}'")
    replay = ReplayLLM(logs)
    backends = Backends({c.id: c for c in wanted}, LlamaPool(), override={r: replay for r in spec.roles})
    plan = plan_for(spec, header["condition"], header["seed"], backends, human_io=_NobodyAsked())
    n = len(wanted)
    wc = WorldConfig(doctors=min(doctors or spec.world.doctors, n), patients=n, consultation=consultation_config(plan.spec.protocol),
                     seed=header["seed"], condition=header["condition"])
    world = World(load_map(_map_path(spec, map_path)), wanted, _ReplayCast(plan, replay, logs), plan.scorers, wc,
                  runner=runner, log=log, engine=plan.engine, row=_row_of(plan))
    world.reset(header["seed"], case_order=list(range(n)))
    keys = {(ev[0]["case_id"], ev[0]["seed"], ev[0]["condition"]) for ev in logs.values()}
    rows = [r for r in read_results(Path(run_dir) / "results.jsonl")
            if (r["case_id"], r.get("seed", 0), r.get("condition", BASE_CONDITION)) in keys]
    return world, rows


def _build_shift_replay(path: Path, case_id: str | None, *, runner: Runner, log: Any, map_path: Path | None,
                        doctors: int | None) -> tuple[World, list[dict[str, Any]]]:
    """A ``medsim play`` shift log replayed: the same spec, the same cases in the order
    the patients arrived, the recorded outputs (and a person's recorded turns)."""
    try:
        events = read_events(path)
    except (OSError, ValueError) as e:
        raise ReplayError(f"{path}: cannot be read ({e})") from None
    if not events or events[0].get("type") != "shift_header":
        raise ReplayError(f"{path}: not a medsim shift log (no shift_header line) nor a bench run directory")
    header = events[0]
    try:
        spec = RunSpec.from_dict(header["spec"])
    except (SpecError, KeyError) as e:
        raise ReplayError(f"{path}: the header's run spec is invalid: {e}") from None
    logs: dict[str, list[dict[str, Any]]] = {}
    order: list[str] = []
    for e in events[1:]:
        cid = e.get("case_id")
        if cid is None:
            continue
        logs.setdefault(cid, []).append(e)
        if e.get("type") == "encounter_started" and cid not in order:
            order.append(cid)
    if case_id is not None:
        if case_id not in order:
            raise ReplayError(f"{path}: no consultation of case '{case_id}' (cases: {', '.join(order) or 'none'})")
        order = [case_id]
    if not order:
        raise ReplayError(f"{path}: no consultation started in this shift")
    cases, _ = load_cases(spec.cases, skip_invalid=True)
    by_id = {c.id: c for c in cases}
    missing = [c for c in order if c not in by_id]
    if missing:
        raise ReplayError(f"{path}: case(s) {', '.join(missing)} not in '{spec.cases}'")
    wanted = [by_id[c] for c in order]
    replay = ReplayLLM(logs)
    backends = Backends(by_id, LlamaPool(), override={r: replay for r in spec.roles})
    cond = spec.condition_names()[0]
    plan = plan_for(spec, cond, header["seed"], backends)
    wc = WorldConfig(doctors=min(doctors or spec.world.doctors, len(wanted)), patients=len(wanted),
                     consultation=consultation_config(plan.spec.protocol), arrival_interval_s=spec.world.arrival_interval_s,
                     seed=header["seed"], condition=cond)
    world = World(load_map(_map_path(spec, map_path)), wanted, _ReplayCast(plan, replay, logs), plan.scorers, wc,
                  runner=runner, log=log, engine=plan.engine, row=_row_of(plan))
    world.reset(header["seed"], case_order=list(range(len(wanted))))
    rows = [{"case_id": c, "diagnosis": next((e["diagnosis"] for e in logs[c] if e.get("type") == "diagnosis"), None)}
            for c in order]
    return world, rows


class _NobodyAsked:
    """The person of a replayed run whose spec has a role a person played (a reader
    study's doctor): :class:`_ReplayCast` gives that role their recorded turns, so nobody
    is ever asked."""

    def doctor_action(self, obs: Any) -> Any:
        raise InputEnded()

    def reply(self, role: str, obs: Any) -> str:
        raise InputEnded()


class _ReplayCast:
    """The run's own cast on recorded model outputs. A role a person played replays
    their recorded turns; where control changed hands in a consultation, each turn goes
    to whoever took it then (the AI inherits the person's turns, as it did live)."""

    def __init__(self, plan: RunPlan, replay: ReplayLLM, logs: Mapping[str, Sequence[Mapping[str, Any]]]):
        self.plan, self.replay, self.logs = plan, replay, logs

    def __call__(self, case: Case, sink: EventSink) -> dict[str, Participant]:
        events = self.logs[case.id]
        if self.plan.spec.memory.mode != "off":
            self.plan.memory = RecordedRecall(events)  # the logged retrievals; a replay never consults a memory
        cast = dict(self.plan.cast(case, sink))
        with_calls = self.replay.roles_with_calls(case.id)
        for role in [r for r in cast if r in role_names() and get_role(r).kind in CONSULTATION_KINDS]:
            turns = recorded_turns(events, role)
            human = [t for t in turns if t[1].source == "human"]
            if not human and role in with_calls:
                continue
            person = ReplayedParticipant(role, events, sources=("human",) if role in with_calls else None)
            if role not in with_calls:
                cast[role] = person
                continue
            sources = iter([t[1].source for t in turns])
            cast[role] = Switchable(role, cast[role], person, lambda it=sources: next(it, "llm") == "human")
        return cast


def run_play(spec: RunSpec, args: Any) -> int:
    """``medsim play``: a shift in the window (or headless), and its line of figures."""
    import os

    from agents.events import EventLog
    from agents.textsafe import printable
    from game.control import PlayerIO
    from game.resources import assets_dir
    from game.runner import InlineRunner, ThreadRunner
    from game.view.app import run_window
    from game.view.display import prepare_display

    prepare_display(args.headless)  # no display: said before the shift log is written
    log_path = args.log or Path("runs") / f"shift-s{spec.seeds[0]}.jsonl"
    scripted = all(rs.backend == "scripted" for rs in spec.roles.values())
    # a person's turn waits on a worker thread: the world needs threads whenever one can play
    player = PlayerIO()
    headless_scripted = args.headless and scripted and not args.as_role
    # model calls run below the window's CPU priority, so the view keeps its frame rate
    runner = InlineRunner() if headless_scripted else ThreadRunner(max(2, spec.world.doctors + 1), nice=10)
    # a core left for the view; a context per role and doctor: each consultation in flight keeps its cache
    pool = LlamaPool(n_threads=max(1, (os.cpu_count() or 2) - 1), slots=max(2, spec.world.doctors),
                     jump_forward=spec.jump_forward, prompt_cache=default_prompt_cache())
    map_path = Path(spec.world.map) if spec.world.map else default_map_path()
    try:
        with EventLog(log_path) as log:
            world = build_shift(spec, runner=runner, log=log, pool=pool, map_path=map_path,
                                player=None if headless_scripted else player, command=args.argv,
                                gate=None if headless_scripted else ModelGate())
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


def run_replay(args: Any) -> int:
    """``medsim replay RUN [CASE]``: a run's cases (or a shift) in the hospital."""
    from agents.textsafe import printable
    from game.resources import assets_dir
    from game.runner import InlineRunner
    from game.view.app import run_window

    world, _ = build_replay(args.run_dir, args.case_id, map_path=args.map, runner=InlineRunner(), log=None,
                            seed=args.seed, condition=args.condition)
    run_window(world, args.map or default_map_path(), assets_dir(), headless=args.headless, frames=args.frames,
               screenshot=args.screenshot, speed=args.speed, fixed_dt=args.fixed_dt,
               title=f"medsim replay: {args.run_dir.name}", zoom=args.zoom, replay=True)
    for r in world.finished:
        diagnosis = "None" if r["diagnosis"] is None else f"'{printable(r['diagnosis'], single_line=True)}'"
        print(f"{printable(r['case_id'], single_line=True)}: {r['status']}, diagnosis {diagnosis}, correct {r['correct']}")
    return 0
