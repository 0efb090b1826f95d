"""``medsim study``: a reader study. A person plays the doctor through a case set, one
case after another in an order shuffled by a seed (``--seed``), in the terminal or the
hospital window; the consultations land in one run directory laid out as a bench run's,
and are scored by the run loop's own scorers when the study ends, so ``medsim compare``
pairs the person with a model run of the same cases case by case. The person is named by
a label (``--label reader-1``) and by nothing else.

Blinding. Until the study ends, nothing the person is shown and no file of the run
directory holds an answer key, a verdict or an accuracy:

- the consultations are logged without their scoring (``events/<cell>.jsonl``: the
  header, whose spec names the case set but holds no case, then the consultation up to
  ``consultation_ended``); the person is told what an AI doctor is told (the
  :class:`~agents.participants.base.Observation` of each turn), the study's progress (case
  k of n) and that their diagnosis is recorded, never a verdict;
- no ``results.jsonl``, summary or report exists yet; ``study.json`` (the ledger: the
  order, each played case's time, whether it was abandoned) holds no key;
- ``medsim view``, ``compare``, ``score`` and ``replay`` refuse a study in progress
  (:mod:`medsim.study_state`).

The study ends when its last case is played, or with ``--finish``: then each log gets its
scorers' events and its ``case_finished`` (:func:`medsim.bench.finish_cell`, the cell
ending every run shares), and ``results.jsonl``, ``results.csv``, ``summary.json``,
``report.md`` and ``report.html`` are written: what ``medsim bench`` leaves.

Stopping and going on. Between two cases the person may stop; the same command goes on
from the next case (run.json's spec must match, so another label, order seed or case set
is refused, naming what differs). A case left midway (the input ended, the window was
closed, the process was stopped) is recorded as abandoned: a failed consultation, never a
wrong answer, and not shown again (its reader has seen part of it). A case left before
the person's first turn was not read, and comes again.
"""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, Sequence

from agents.cases.model import CaseSetError
from agents.cases.registry import resolve_case_path
from agents.events import ConsultationEnded, ConsultationFailed, EventLog, read_events
from agents.llm.llamacpp import LlamaPool
from agents.names import event_file_name
from agents.participants.human import HumanIO
from agents.provenance import run_provenance, utc_now
from agents.results import write_results
from agents.suites.contract import Unit
from medsim.assemble import Backends, RunPlan, plan_for, preflight
from medsim.bench import BenchOptions, check_out, drive, finish_cell, write_outputs, write_run_file
from medsim.errors import BenchError
from medsim.outfiles import replace_file
from medsim.runlock import RunLock, RunLockError
from medsim.spec import RunSpec
from medsim.study_state import STUDY_FILE, read_study_file

__all__ = ["StudyOptions", "StudyOutcome", "StudyIO", "Study", "CaseLog", "study_order", "run_study", "UIS",
           "PLAYED", "ABANDONED", "ABANDONED_PROBLEM", "brief"]

logger = logging.getLogger(__name__)

UIS = ("terminal", "window")
PLAYED, ABANDONED = "played", "abandoned"  # how a case a person read ended, in the ledger
# the problem a consultation_failed event names when the person playing a role stopped
# (agents.participants.human.HumanParticipant: the input ended, the window closed)
ABANDONED_PROBLEM = "input ended"


@dataclass(frozen=True)
class StudyOptions:
    out: Path
    ui: str = "terminal"  # terminal | window
    resume: bool = False  # a study must be there to go on with
    finish: bool = False  # end the study now: score what was played
    command: Sequence[str] = field(default_factory=tuple)  # the command line, for run.json and the headers


@dataclass(frozen=True)
class StudyOutcome:
    out: Path
    total: int  # cases in the study
    played: int  # read to their end (abandoned ones included)
    abandoned: int
    finished: bool  # the study ended (scored)
    headline: str  # what to print: the progress while blinded, the results once ended
    summary: dict[str, Any] | None = None  # summary.json, once ended
    errors: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


class StudyIO(HumanIO, Protocol):
    """How a study asks its person (the terminal's :class:`medsim.terminal.StudyTerminalIO`,
    a test's script): the doctor's turns (:class:`~agents.participants.human.HumanIO`), and
    between cases."""

    def show(self, text: str) -> None:
        """A line for the person: the case's brief, the study's progress."""
        ...

    def next_case(self, k: int, n: int) -> bool:
        """Before case ``k`` of ``n``: True to begin it, False to stop for now."""
        ...


def study_order(case_ids: Sequence[str], seed: int) -> list[str]:
    """The study's case order: ``case_ids`` shuffled by ``seed`` (its own RNG: the same
    ids and seed, the same order, on any machine)."""
    order = list(case_ids)
    random.Random(seed).shuffle(order)
    return order


def brief(unit: Unit, k: int, n: int) -> str:
    """What the person reads before case ``k`` of ``n``: what an AI doctor starts with (the
    demographics and the objective), nothing more."""
    case = unit.item
    return f"Case {k} of {n} ({unit.id}): {getattr(case, 'demographics', '')}. {getattr(case, 'objective', '')}"


def _human_turns(events: Sequence[dict[str, Any]]) -> int:
    return sum(1 for e in events if e.get("type") == "utterance" and e.get("speaker") == "doctor"
               and e.get("source") == "human")


def _abandoned(events: Sequence[dict[str, Any]]) -> bool:
    return any(e.get("type") == "consultation_failed" and e.get("role") == "doctor"
               and e.get("problem") == ABANDONED_PROBLEM for e in events)


def _ended(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((e for e in events if e.get("type") == "consultation_ended"), None)


class CaseLog:
    """The event log of one case a person reads, written as it happens: the header, then
    the consultation (no scorer reads it until the study ends). :meth:`close` says how it
    ended (:data:`PLAYED`, :data:`ABANDONED`, or None: the person never took a turn, and
    the log is removed so that the case comes again) and enters it in the ledger."""

    def __init__(self, study: "Study", unit: Unit, ui: str):
        self.study, self.unit, self.ui = study, unit, ui
        self.path = study.log_path(unit)
        self.events: list[dict[str, Any]] = []
        self._log = EventLog(self.path, keep=self.events)
        self._log.__enter__()
        self._lock = threading.Lock()
        self._closed = False
        self.status: str | None = None
        self.t0 = time.monotonic()
        self._log.emit(study.plan.header(unit))

    def emit(self, event: Any, **_: Any) -> None:
        with self._lock:
            if not self._closed:
                self._log.emit(event)

    def close(self) -> str | None:
        with self._lock:
            if self._closed:
                return self.status
            self._closed = True
            self._log.__exit__(None, None, None)
        ended = _ended(self.events)
        if not _human_turns(self.events):
            self.path.unlink(missing_ok=True)  # never read: it comes again
            self.status = None
        elif ended is None:  # stopped with no ending (an interrupt): sealed as abandoned
            self.study.seal(self.path, "the study was stopped mid-case")
            self.status = ABANDONED
        else:
            self.status = ABANDONED if _abandoned(self.events) else PLAYED
        if self.status is not None:
            self.study.enter(self.unit.id, self.status, time.monotonic() - self.t0, self.ui)
        return self.status


class Study:
    """A study opened in its run directory (:meth:`open`): the run checked and its lock
    held, the order, the ledger; :meth:`play` (the terminal) or the window
    (:mod:`medsim.study_window`) reads the cases, :meth:`finish` ends it. :meth:`close`
    when done."""

    def __init__(self, spec: RunSpec, out: Path, plan: RunPlan, units: list[Unit], ledger: dict[str, Any],
                 lock: RunLock, pool: LlamaPool, own_pool: bool):
        self.spec, self.out, self.plan, self.units = spec, out, plan, units
        self.ledger, self.lock, self.pool, self._own_pool = ledger, lock, pool, own_pool
        self.label = spec.study.label if spec.study is not None else ""
        self._ledger_lock = threading.Lock()

    # -- opening ----------------------------------------------------------------------------
    @classmethod
    def open(cls, spec: RunSpec, opts: StudyOptions, *, pool: LlamaPool | None = None,
             backends: dict[str, Any] | None = None) -> "Study":
        """Check everything, then take OUT: the spec is a study's, its cases load, its
        models are there, OUT is empty or holds this very study (``--resume`` and the same
        command alike; another study, another run or other settings are refused, naming what
        differs). Writes run.json and study.json; a log a stopped process left unfinished
        is sealed (:meth:`seal`). Nothing is written before every check has passed.
        ``backends``: models by role that replace the spec's (tests)."""
        if spec.study is None:
            raise BenchError("a study needs its label (--label reader-1)")
        if opts.ui not in UIS:
            raise BenchError(f"--ui: one of {', '.join(UIS)}, not {opts.ui!r}")
        out = opts.out
        suite = spec.suite
        try:
            loaded = suite.load(spec)
        except CaseSetError as e:
            raise CaseSetError(f"--cases {spec.cases}: {e}") from None
        if not loaded.units:
            raise BenchError(f"--cases {spec.cases}: no case to read")
        by_id = {u.id: u for u in loaded.units}
        order = study_order([u.id for u in loaded.units], spec.study.order_seed)
        own_pool = pool is None
        pool = pool or LlamaPool()
        lock = RunLock(out)
        try:
            built = Backends.for_run(spec, loaded, pool, override=backends)
            built.check(spec)
            if spec.preflight:
                preflight(spec, skip_roles=list(backends or ()), backends=built)
            try:
                lock.acquire()
            except RunLockError as e:
                raise BenchError(str(e)) from None
            ledger = read_study_file(out)
            there = (out / "run.json").is_file()
            if there and ledger is None:
                raise BenchError(f"{out} holds a run that is not a study ({out / 'run.json'}, no {STUDY_FILE}); "
                                 "choose another --out")
            if opts.resume and not there:
                raise BenchError(f"--resume: {out} holds no study to go on with")
            if opts.finish and not there:
                raise BenchError(f"--finish: {out} holds no study to end")
            state = check_out(spec, BenchOptions(out, resume=there), continuing="this study")
            if ledger is not None and ledger.get("finished"):
                raise BenchError(f"{out}: this study ended on {ledger['finished']} (its results: {out / 'report.md'}); "
                                 "a new study needs another --out")
            if ledger is not None and ledger.get("order") != order:
                raise BenchError(f"{out / STUDY_FILE}: its case order is not the one the spec gives (the file was "
                                 "edited?); the study cannot go on")
            cond, seed = spec.condition_names()[0], spec.seeds[0]
            plan = plan_for(spec, cond, seed, built)
            started = utc_now()
            plan.provenance = run_provenance(cases_file=resolve_case_path(spec.cases), models=plan.models,
                                             llms=plan.llms, command=list(opts.command) or None, started=started)
            # -- every check passed: from here on the study writes --------------------------------------
            write_run_file(spec, BenchOptions(out, command=opts.command), state, plan.provenance)
            if ledger is None:
                ledger = {"label": spec.study.label, "order_seed": spec.study.order_seed, "order": order,
                          "played": {}, "sessions": [], "finished": None}
            if not opts.finish:
                ledger.setdefault("sessions", []).append({"started": started, "ui": opts.ui})
            study = cls(spec, out, plan, [by_id[i] for i in order], ledger, lock, pool, own_pool)
            study.write_ledger()
            study.seal_unfinished()
            return study
        except BaseException:
            lock.release()
            if own_pool:
                pool.close()
            raise

    def close(self) -> None:
        self.lock.release()
        if self._own_pool:
            self.pool.close()

    # -- the ledger -------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.units)

    @property
    def finished(self) -> bool:
        return bool(self.ledger.get("finished"))

    def played(self) -> dict[str, dict[str, Any]]:
        p = self.ledger.get("played")
        return p if isinstance(p, dict) else {}

    def todo(self) -> list[Unit]:
        """The cases still to read, in the study's order."""
        done = self.played()
        return [u for u in self.units if u.id not in done]

    def position(self, case_id: str) -> int:
        """Where ``case_id`` is in the study's order (1-based)."""
        return next(i for i, u in enumerate(self.units, 1) if u.id == case_id)

    def progress(self) -> str:
        played = self.played()
        ab = sum(1 for v in played.values() if v.get("status") == ABANDONED)
        return (f"study {self.label}: {len(played)} of {self.n} cases read"
                + (f" ({ab} abandoned)" if ab else ""))

    def write_ledger(self) -> None:
        with self._ledger_lock:
            data = (json.dumps(self.ledger, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            replace_file(self.out / STUDY_FILE, data, resume=True)

    def enter(self, case_id: str, status: str, wall_s: float, ui: str) -> None:
        """A case read to its end (or abandoned), in the ledger."""
        with self._ledger_lock:
            self.ledger.setdefault("played", {})[case_id] = {"status": status, "wall_s": round(wall_s, 3), "ui": ui,
                                                             "at": utc_now()}
        self.write_ledger()

    # -- the logs ---------------------------------------------------------------------------
    def log_path(self, unit: Unit) -> Path:
        return self.out / "events" / event_file_name(unit.id, self.plan.seed, self.plan.condition)

    def case_log(self, unit: Unit, ui: str) -> CaseLog:
        """Open the log of ``unit``, about to be read."""
        return CaseLog(self, unit, ui)

    def seal(self, path: Path, why: str) -> None:
        """End a log that has no ending as a consultation its reader abandoned (the
        consultation's own events for it: ``consultation_failed``, ``consultation_ended``)."""
        events = read_events(path)
        turns = max([int(e.get("turn") or 0) for e in events] or [0])
        tests = [e["test"] for e in events if e.get("type") == "test_requested"]
        reason = f"the person playing the doctor stopped: {why}"
        with EventLog(path, append=True) as log:
            if not _abandoned(events):
                log.emit(ConsultationFailed(turn=turns, role="doctor", problem=ABANDONED_PROBLEM, reason=reason))
            log.emit(ConsultationEnded(status="failed", turns=turns, diagnosis=None, tests_requested=tests, error=None,
                                       failure=reason))

    def seal_unfinished(self) -> None:
        """Logs a stopped process left: one with a turn of the person's is sealed as
        abandoned; one without is removed (the case was not read, and comes again)."""
        known = {self.log_path(u).name: u for u in self.units}
        for path in sorted((self.out / "events").glob("*.jsonl")):
            unit = known.get(path.name)
            if unit is None:
                continue
            try:
                events = read_events(path)
            except (OSError, ValueError) as e:
                raise BenchError(f"{path}: cannot be read ({e})") from None
            if _ended(events) is not None:
                if unit.id not in self.played():  # ended, but the ledger missed it (stopped in between)
                    self.enter(unit.id, ABANDONED if _abandoned(events) else PLAYED, 0.0, "unknown")
                continue
            if not _human_turns(events):
                path.unlink()
                continue
            self.seal(path, "the study was stopped mid-case")
            self.enter(unit.id, ABANDONED, 0.0, "unknown")
            logger.warning("case %s was left midway by a study that was stopped: recorded as abandoned", unit.id)

    # -- reading the cases in the terminal ------------------------------------------------------
    def play(self, io: StudyIO) -> None:
        """The cases still to read, one after another, asked through ``io`` (the terminal,
        a script); returns when every case is read, or the person stops."""
        plan = replace(self.plan, human_io=io)
        for unit in self.todo():
            k = self.position(unit.id)
            if not io.next_case(k, self.n):
                io.show(f"Stopped before case {k} of {self.n}; the same command goes on from there.")
                return
            io.show(brief(unit, k, self.n))
            clog = self.case_log(unit, "terminal")
            try:
                drive(lambda: plan.suite.engine(plan, unit, clog), clog)
            finally:
                status = clog.close()
            if status == PLAYED:
                io.show(f"Case {k} of {self.n}: your diagnosis is recorded. Nothing is judged until the study ends.")
            elif status == ABANDONED:
                io.show(f"Case {k} of {self.n} was left midway: recorded as abandoned (never as a wrong answer)."
                        + (" The same command goes on with the next case." if self.todo() else ""))
                return
            else:
                io.show(f"Case {k} of {self.n} was not begun; the same command goes on from there.")
                return

    # -- the end ----------------------------------------------------------------------------
    def finish(self) -> StudyOutcome:
        """End the study: each played case's log gets its scorers and its ending, and the
        run's results, summary and reports are written (a finish that was stopped goes on:
        a log already scored is not scored again). Cases never read have no row."""
        suite = self.plan.suite
        rows: list[dict[str, Any]] = []
        played = self.played()
        for unit in self.units:
            path = self.log_path(unit)
            if not path.is_file():
                continue
            events = read_events(path)
            if _ended(events) is None:  # cannot be (sealed when the study opened); say so rather than guess
                raise BenchError(f"{path}: the consultation has no ending; run the same command again to seal it")
            events_file = f"events/{path.name}"
            wall = played.get(unit.id, {}).get("wall_s")
            if any(e.get("type") == "case_finished" for e in events):
                row = suite.row(unit, events, seed=self.plan.seed, condition=self.plan.condition,
                                events_file=events_file, wall_s=wall or 0.0)
            else:
                with EventLog(path, append=True, keep=events) as log:
                    row = finish_cell(self.plan, unit, events, log, events_file=events_file, t0=time.perf_counter(),
                                      wall_s=wall or 0.0)
            if _abandoned(events):
                row["abandoned"] = True
            rows.append(row)
        write_results(rows, self.out / "results.jsonl")
        summary = suite.summary(rows)
        ab = sum(1 for r in rows if r.get("abandoned"))
        summary["study"] = {"label": self.label, "order_seed": self.spec.study.order_seed if self.spec.study else 0,
                            "cases": self.n, "read": len(rows), "abandoned": ab,
                            "not_read": [u.id for u in self.units if not self.log_path(u).is_file()]}
        write_outputs(self.out, self.spec, summary, rows, self.plan.models, title=f"medsim study: {self.label}")
        self.ledger["finished"] = utc_now()
        self.write_ledger()
        not_read = len(summary["study"]["not_read"])
        line = (f"study {self.label} ended: {len(rows)} of {self.n} cases read ({ab} abandoned"
                + (f", {not_read} not read" if not_read else "") + f")\n{suite.headline(summary)}")
        return StudyOutcome(self.out, self.n, len(rows), ab, True, line, summary, summary.get("errors", 0))

    def outcome(self) -> StudyOutcome:
        """Where the study stands, blinded: how many cases are read, nothing judged."""
        played = self.played()
        ab = sum(1 for v in played.values() if v.get("status") == ABANDONED)
        return StudyOutcome(self.out, self.n, len(played), ab, False,
                            f"{self.progress()}; nothing is judged until the study ends (the last case, or --finish)")


def run_study(spec: RunSpec, opts: StudyOptions, io: StudyIO | None = None, *,
              backends: dict[str, Any] | None = None, window: Any = None) -> StudyOutcome:
    """Open the study in ``opts.out``, read its cases (``io``: the terminal's, or a
    script's; ``window(study)``: the hospital window instead) and end it when its last case
    is read or ``opts.finish`` asks. Returns the outcome: blinded until the study ends."""
    study = Study.open(spec, opts, backends=backends)
    try:
        if not opts.finish and study.todo():  # (none left: a finish that was stopped, ended now)
            if window is not None:
                window(study)
            elif io is not None:
                study.play(io)
            else:
                raise BenchError("a study needs a person: --ui terminal or --ui window")
        if opts.finish or not study.todo():
            return study.finish()
        return study.outcome()
    finally:
        study.close()
