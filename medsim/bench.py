"""The run loop: every suite's cells, run headless (``medsim bench``, ``medsim osce``), one
at a time with a live printer (``medsim consult``), or re-scored (:mod:`medsim.score`).

Writes under OUT: ``events/<slug>-<hash>.jsonl`` per (unit, seed, condition) (header with
the whole run spec and the run's provenance, then every event), ``results.jsonl`` (one row
per finished cell, flushed as it finishes), ``results.csv`` (the same rows, written when
the run finishes), ``summary.json``, ``report.md`` and ``run.json`` (the spec, checked on
``--resume``, and the provenance of each invocation). Nothing is written before every
check has passed: the spec, the units, the models, the servers, ``--resume``'s match with
the run there, the memory's leak check (:func:`check_out`, then :func:`write_run_file`);
a refused run leaves OUT as it found it. ``report.html`` and ``transcripts/``
(:mod:`medsim.pages`) are written last, from those files. The run holds OUT's lock
throughout (medsim.runlock): a second run on OUT is refused and writes nothing.

Resuming. A cell with a row in ``results.jsonl`` is never run again. A cell with more
than one row (two writers at once, a copied line) counts once: ``--resume`` keeps the
last row of each cell (its event log is the one on disk), says how many copies it
dropped and rewrites the file without them, so the summary, ``medsim compare`` and the
rows agree. A cell's learning (``--memory learn``, or a learning split) is committed to
the memory before its row is written; records carry the run and cell that learned them
(:mod:`medsim.memory`), and ``--resume`` rolls back those of cells that have no row, so a
run killed between the two finishes as an uninterrupted one would.

Ctrl-C (:mod:`medsim.interrupt`): the queued cells are cancelled at once, the running
ones finish and their rows are written (a second Ctrl-C stops without them), and the
run says how to finish it with ``--resume`` (:class:`RunInterrupted`, exit 130). A write
that fails (a full disk) names its file and says what to do (:mod:`medsim.outfiles`).

What differs between suites (their units, engine, scorers, rows, summary and report
sections) is the suite's (:class:`agents.suites.contract.Suite`); this loop knows none of
them by name.
"""
from __future__ import annotations

import json
import logging
import os
import queue
import shlex
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.cases.registry import registered_case_sets, resolve_case_path
from agents.events import CaseError, CaseFinished, ConsultationEnded, EventLog, MemoryLearned, Scored, TeeSink
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import describe_spec, is_in_process
from agents.llm.url_secrets import redact_tree
from agents.names import event_file_name
from agents.provenance import file_sha256, git_revision, package_versions, run_provenance, utc_now
from agents.results import read_results, results_line, row_key, unique_rows, write_results, write_results_csv
from agents.scorers import Transcript, score_case
from agents.recall import case_key
from agents.suites.contract import Unit
from medsim.assemble import Backends, RunPlan, plan_for, pool_for, preflight
from medsim.errors import BenchError
from medsim.executors import open_executor
from medsim.interrupt import Interrupts
from medsim.memory import TaggedMemory, learned_by, open_memory, unfinished_learning
from medsim.outfiles import naming, replace_file, write_error
from medsim.report import write_report
from medsim.runlock import RunLock, RunLockError
from medsim.spec import BASE_CONDITION, RunSpec, upgrade
from medsim.trial_hold import hold_before_row

__all__ = ["BenchError", "BenchOptions", "BenchOutcome", "OutState", "RunInterrupted", "run_bench", "run_cell", "finish_cell",
           "prepare_out", "check_out", "write_run_file", "read_unique", "resume_command", "drive", "run_cells",
           "write_outputs", "results_line", "LEARNING_RESULTS", "RESULTS"]


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchOptions:
    out: Path
    resume: bool = False
    retry_errors: bool = False  # with resume: run errored cells again
    progress: bool = True
    fsync: bool = False  # survive a power cut, not only a kill (~1.5 ms a case)
    command: Sequence[str] = field(default_factory=tuple)  # the command line, for run.json


@dataclass(frozen=True)
class BenchOutcome:
    summary: dict[str, Any]
    out: Path
    invalid_records: list[Any]
    headline: str = ""  # the suite's line for the end of the run
    strict: bool = True  # a run that scored nothing is an error (the suite's nothing_scored_fails)

    @property
    def nothing_scored(self) -> bool:
        """Cells ran and not one could be scored (every one failed or ended in an error)."""
        return self.strict and self.summary["cases"] > 0 and self.summary.get("scored") == 0

    def nothing_scored_message(self) -> str | None:
        """The loud line for a run that scored nothing (None when something was scored),
        naming the most common reason."""
        if not self.nothing_scored:
            return None
        s = self.summary
        reasons = Counter(str(v) for v in [*(s.get("failed_cases") or {}).values(),
                                           *(s.get("error_cases") or {}).values()] if v)
        common = ""
        if reasons:
            reason, n = reasons.most_common(1)[0]
            common = f"; the most common reason ({n} of {s['cases']}): {reason[:300]}"
        return (f"error: nothing could be scored: all {s['cases']} consultations failed ({s.get('failed', 0)}) or "
                f"ended in an error ({s['errors']}){common}")

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] or self.nothing_scored else 0


# -- one cell ---------------------------------------------------------------------------
def drive(build: Callable[[], Any], log: Any) -> None:
    """Build an engine (a consultation, an OSCE encounter: ``start``, ``step``, ``done``,
    ``fail``, ``finish``) and run it to its end. An engine that cannot be built, or a bug
    in a step, is recorded as that cell's error: one cell must not lose the run."""
    try:
        engine = build()
    except Exception as e:  # noqa: BLE001
        msg = f"internal error: {type(e).__name__}: {e}"
        log.emit(CaseError(turn=0, error=msg))
        log.emit(ConsultationEnded(status="error", turns=0, diagnosis=None, tests_requested=[], error=msg, failure=None))
        return
    try:
        engine.start()
        while not engine.done:
            engine.step()
    except Exception as e:  # noqa: BLE001
        engine.fail(f"internal error: {type(e).__name__}: {e}")
    engine.finish()


def run_cell(plan: RunPlan, unit: Unit, path: Path | None, *, events_file: str, sinks: Sequence[Any] = ()
             ) -> dict[str, Any]:
    """One cell: the suite's engine, its scorers, the memory's learning (where the plan
    learns) and the cell's results row; every event goes to ``path`` (None: no file) and
    to ``sinks`` (a live printer). A bug in one cell is recorded as that cell's error."""
    t0 = time.perf_counter()
    suite = plan.suite
    events: list[dict[str, Any]] = []
    with EventLog(path, keep=events) if path is not None else _KeptEvents(events) as log:
        sink = TeeSink(log, *sinks) if sinks else log
        log.emit(plan.header(unit))
        drive(lambda: suite.engine(plan, unit, sink), sink)
        return finish_cell(plan, unit, events, log, sink, events_file=events_file, t0=t0)


def finish_cell(plan: RunPlan, unit: Unit, events: list[dict[str, Any]], log: Any, sink: Any = None, *,
                events_file: str, t0: float, wall_s: float | None = None) -> dict[str, Any]:
    """A cell's ending, after its engine: its scorers over ``events`` (the cell's events
    so far, which ``log`` keeps growing), the memory's learning where the plan learns, its
    results row and the ``case_finished`` event. ``sink``: where the scorers' events go
    (default ``log``); ``wall_s``: the row's time (default: since ``t0``). A reader study
    ends its cells here when it ends (:mod:`medsim.study`)."""
    suite = plan.suite
    sink = sink if sink is not None else log
    try:
        score_case(unit.item, Transcript.from_events(events, case_id=unit.id), plan.scorers, sink)
    except Exception as e:  # noqa: BLE001 - recorded as the cell's error
        log.emit(Scored(scorer=plan.scorers[0].name if plan.scorers else suite.name, value=None,
                        details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
    learner = plan.learner
    if learner is not None and plan.learned_by:  # each record says which run and cell learned it
        tag = learned_by(plan.learned_by["run"], plan.learned_by["results"], (unit.id, plan.seed, plan.condition))
        learner = replace(learner, memory=TaggedMemory(learner.memory, tag))
    if learner is not None:
        try:
            learner.learn(unit.item, events, sink)
        except Exception as e:  # noqa: BLE001 - learning that breaks must not lose the case
            log.emit(MemoryLearned(action="nothing", buffer=None, record_id=None,
                                   reason=f"internal error in learning: {type(e).__name__}: {e}"))
    row = suite.row(unit, events, seed=plan.seed, condition=plan.condition, events_file=events_file,
                    wall_s=time.perf_counter() - t0 if wall_s is None else wall_s)
    log.emit(CaseFinished(status=row["status"], turns=row["turns"], diagnosis=row.get("diagnosis"),
                          correct=row.get("correct")))
    return row


class _KeptEvents:
    """An event log with no file: the events, as dicts, kept in a list."""

    def __init__(self, keep: list[dict[str, Any]]):
        self.keep = keep

    def __enter__(self) -> "_KeptEvents":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def emit(self, event: Any, **_: Any) -> None:
        self.keep.append(event.to_dict())


# -- the output directory --------------------------------------------------------------
def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
        return out
    return [] if a == b else [f"{path or 'spec'}: {json.dumps(a)} here, {json.dumps(b)} in the run"]


# the case files of a spec: (keys in the identity, run.json's resolved path, run.json's sha256)
_CASE_FILES = ((("cases",), "cases_path", "cases_sha256"),
               (("memory", "learn_cases"), "learn_cases_path", "learn_cases_sha256"))


def _get(d: Any, keys: Sequence[str]) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def _case_file(spec: str) -> Path | None:
    """The case file ``spec`` (a registered name or a path) names, resolved; None when
    there is none (the loader says so)."""
    try:
        return resolve_case_path(spec).resolve()
    except (ValueError, OSError, RuntimeError):  # CaseSetError is a ValueError
        return None


def _case_file_paths(spec: RunSpec) -> dict[str, str]:
    """run.json's resolved case-file paths, which ``--resume`` compares (``--cases`` may
    be spelled another way, or given from another directory)."""
    out = {}
    for keys, path_key, _ in _CASE_FILES:
        name = _get(spec.identity(), keys)
        found = _case_file(name) if isinstance(name, str) else None
        if found is not None:
            out[path_key] = str(found)
    return out


def _same_case_files(mine: dict[str, Any], theirs: dict[str, Any], prev: Mapping[str, Any]
                     ) -> tuple[dict[str, Any], list[str]]:
    """``theirs`` (the run's identity) with each case-file name replaced by ours where
    both name the same file, and a difference for each that does not. The same file: the
    same resolved path, or the same contents (the sha256 the run recorded: the file was
    moved, or run.json predates resolved paths). A registered name is itself."""
    theirs = json.loads(json.dumps(theirs))
    diffs: list[str] = []
    for keys, path_key, sha_key in _CASE_FILES:
        a, b = _get(mine, keys), _get(theirs, keys)
        if not isinstance(a, str) or not isinstance(b, str):
            continue
        here = _case_file(a)
        there = prev.get(path_key)
        if a == b and (here is None or not isinstance(there, str) or a in registered_case_sets()):
            continue  # nothing to compare beyond the name
        same = here is not None and (
            (isinstance(there, str) and Path(there) == here)
            or (not isinstance(there, str) and _case_file(b) == here)
            or (isinstance(prev.get(sha_key), str) and file_sha256(here) == prev[sha_key]))
        if same:
            parent = theirs
            for k in keys[:-1]:
                parent = parent[k]
            parent[keys[-1]] = a
        elif a == b:
            diffs.append(f"{'.'.join(keys)}: {json.dumps(a)} is {here} here, {there} in the run, and the two differ")
    return theirs, diffs


RESULTS = "results.jsonl"  # a run's rows, relative to OUT
LEARNING_RESULTS = "learning/results.jsonl"  # its learning split's rows


@dataclass
class OutState:
    """What :func:`check_out` found in OUT: the rows to keep (on resume; without the
    errored ones with ``--retry-errors``), the run.json there (empty for a new run) and
    the run's id (``run.json``'s ``run_id``, kept from invocation to invocation: the
    memory's records name it)."""

    keep: list[dict[str, Any]]
    prev: dict[str, Any]
    run_id: str


def read_unique(path: Path) -> list[dict[str, Any]]:
    """A results file's rows, one per cell (:func:`agents.results.unique_rows`, saying
    so when a cell had more than one). Raises :class:`BenchError` naming a file that
    cannot be read."""
    try:
        rows = read_results(path)
    except Exception as e:  # noqa: BLE001 - ResultsError or an unreadable file: say which
        raise BenchError(f"{path}: cannot be read ({e})") from None
    rows, dropped = unique_rows(rows)
    if dropped:
        logger.warning("%s: %d duplicated row(s) dropped: a cell's row was written more than once (two runs at once, "
                       "or a copied line); each of the %d cell(s) counts once, with its last row, and the file is "
                       "rewritten without the copies", path, dropped, len(rows))
    return rows


def check_out(spec: RunSpec, opts: BenchOptions, *, continuing: str = "--resume") -> OutState:
    """Check the output directory, reading only: a new run where none is (or
    ``--resume``), ``--resume`` with the settings of the run there. Raises
    :class:`BenchError` with a plain message (``continuing``: what goes on with the run
    there, as the message names it); writes nothing."""
    out = opts.out
    if out.exists() and not out.is_dir():
        raise BenchError(f"--out {out}: exists and is not a directory")
    run_file, results_file = out / "run.json", out / RESULTS
    prev: dict[str, Any] = {}
    existing = read_unique(results_file)
    if opts.resume:
        if run_file.is_file():
            try:
                prev = json.loads(run_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise BenchError(f"{run_file}: unreadable ({e}); cannot check that --resume continues the same run") from None
            prev = prev if isinstance(prev, dict) else {}
            # both redacted (a run.json from before redaction holds the key): a rotated key still resumes
            mine, theirs = spec.identity(), redact_tree(prev.get("identity"))
            if isinstance(theirs, dict):  # a run an older medsim made, in today's layout
                theirs = upgrade(theirs)
            diffs = []
            if isinstance(theirs, dict):
                theirs, diffs = _same_case_files(mine, theirs, prev)
            diffs += _diff(mine, theirs)
            if diffs:
                raise BenchError(f"{out}: {continuing} with settings that differ from the run there:\n  "
                                 + "\n  ".join(diffs[:12]) + ("\n  ..." if len(diffs) > 12 else ""))
    elif existing or run_file.is_file():
        raise BenchError(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    run_id = prev.get("run_id") if isinstance(prev.get("run_id"), str) and prev.get("run_id") else uuid.uuid4().hex
    if opts.retry_errors:
        existing = [r for r in existing if not r.get("error")]
    return OutState(existing, prev, run_id)


def write_run_file(spec: RunSpec, opts: BenchOptions, state: OutState,
                   provenance: Mapping[str, Any] | None = None) -> None:
    """Create OUT/events and write OUT/run.json (with ``provenance``,
    :func:`agents.provenance.run_provenance`, and the run's id; on resume the earlier
    invocations' command, start time and git revision are kept under ``earlier``). A
    failed write raises :class:`BenchError` naming the file and what to do; no
    ``run.json.tmp`` is left."""
    out, prev = opts.out, state.prev
    run_file = out / "run.json"
    prov = dict(provenance or {})
    command = prov.pop("command", None) or list(opts.command)
    doc = {"identity": spec.identity(), "spec": spec.to_dict(), "run_id": state.run_id, "command": command,
           "git_revision": git_revision(), **_case_file_paths(spec), **prov, "packages": package_versions()}
    if prev:
        doc["earlier"] = [*prev.get("earlier", []), {k: prev.get(k) for k in ("command", "started", "git_revision")}]
    doc = redact_tree(doc)  # no URL's key in run.json, whatever field holds it (agents.llm.url_secrets)
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (argv holds it as surrogates): escaped
        data = (json.dumps(doc, indent=2, ensure_ascii=True) + "\n").encode("ascii")
    try:
        replace_file(run_file, data)  # first: where it cannot be written, nothing is
        with naming(out / "events"):
            (out / "events").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BenchError(f"{e.filename}: {e.strerror}; then run the same command again") from None


def prepare_out(spec: RunSpec, opts: BenchOptions, provenance: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """:func:`check_out`, then :func:`write_run_file`; the rows to keep."""
    state = check_out(spec, opts)
    write_run_file(spec, opts, state, provenance)
    return state.keep


class _Results:
    """Appends rows to results.jsonl, one line per finished cell, written with one
    ``write`` to a file opened for appending (so a second writer's lines never tear
    one). A written line survives the process being killed; ``fsync`` also survives a
    power cut. The rows kept on resume are rewritten only when the file holds anything
    else (a torn last line, errored rows to retry, a cell's duplicated row, an older
    format), and then atomically (:func:`agents.results.write_results`: temp file, fsync,
    rename): a kill or crash during the rewrite leaves the old file, every finished row
    in it. A failed write names the file and says what to do
    (:func:`medsim.outfiles.write_error`)."""

    def __init__(self, path: Path, keep: list[dict[str, Any]], fsync: bool = False):
        self.path, self.fsync = path, fsync
        self.lock = threading.Lock()
        lines = [results_line(r) for r in keep]
        try:
            same = path.read_bytes() == "".join(lines).encode("ascii")
        except OSError:
            same = False
        with naming(path, resume=True):
            if not same:
                write_results(keep, path)
            self.fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                                          0o644)

    def append(self, row: dict[str, Any]) -> None:
        data = memoryview(results_line(row).encode("ascii"))
        with self.lock, naming(self.path, resume=True):
            assert self.fd is not None, "results file closed"
            while data:
                data = data[os.write(self.fd, data):]
            if self.fsync:
                os.fsync(self.fd)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a batch of cells: ``rows`` of ``total`` have their rows in
    ``results`` (the queued cells were cancelled; the running ones finished, unless a
    second Ctrl-C came first)."""

    def __init__(self, rows: int, total: int, results: Path):
        super().__init__(f"interrupted: {rows} of {total} cells have their rows in {results}")
        self.rows, self.total, self.results = rows, total, results


# -- the run -----------------------------------------------------------------------------
def run_cells(todo: Sequence[tuple[RunPlan, Unit]], out: Path, keep: list[dict[str, Any]], *, workers: int,
              total: int, progress: bool, fsync: bool, on_row: Callable[[dict[str, Any]], None] | None,
              desc: str = "case", executor: Callable[[int], Any] | None = None,
              progress_summary: Callable[[list[dict[str, Any]]], Any] | None = None) -> list[dict[str, Any]]:
    """Run cells (plan, unit) into ``out``/events, appending rows to ``out``/results.jsonl
    as each finishes; returns every row (kept ones first). ``executor``: ``workers`` ->
    the concurrent.futures.Executor the cells run on (medsim.executors; default: threads);
    ``progress_summary(rows)`` is what the progress line shows (None: counts only).

    Ctrl-C (:class:`medsim.interrupt.Interrupts`) cancels the queued cells at once and
    waits for the running ones, whose rows are written (a second Ctrl-C stops waiting),
    then raises :class:`RunInterrupted`. Any exception (a full disk, a callback's) also
    cancels the queued cells before it propagates."""
    with naming(out / "events", resume=True):
        (out / "events").mkdir(parents=True, exist_ok=True)
    results = _Results(out / "results.jsonl", keep, fsync=fsync)
    bar = None
    if progress and todo:
        from medsim.progress import Progress

        bar = Progress(total, initial=len(keep), unit=desc)
    rows = list(keep)
    finished: queue.SimpleQueue[Future] = queue.SimpleQueue()  # futures as they end (cancelled ones too)
    cells: dict[Future, str] = {}  # not yet settled -> its event log's name
    wait_for_running, interrupted = True, False
    try:
        ex = executor(workers) if executor else ThreadPoolExecutor(max_workers=workers)
    except BaseException:
        results.close()
        raise
    try:
        with Interrupts() as stop:
            for plan, unit in todo:
                if stop.requested:
                    break
                name = event_file_name(unit.id, plan.seed, plan.condition)
                fut = ex.submit(run_cell, plan, unit, out / "events" / name, events_file=f"events/{name}")
                cells[fut] = name
                fut.add_done_callback(finished.put)
            told = False
            while cells:
                if stop.requested and not told:
                    told = True
                    queued = [f for f in cells if f.cancel()]
                    for f in queued:
                        del cells[f]
                    logger.warning("interrupted: %d queued %s(s) cancelled; %s", len(queued), desc,
                                   f"waiting for the {len(cells)} running to finish, their rows kept (Ctrl-C again "
                                   "to stop without them)" if cells else "none was running")
                    continue
                if stop.now:
                    logger.warning("stopped without waiting for the %d running %s(s): --resume runs them again",
                                   len(cells), desc)
                    wait_for_running = False
                    break
                try:
                    fut = finished.get(timeout=0.25)
                except queue.Empty:
                    continue
                name = cells.pop(fut, None)
                if name is None or fut.cancelled():
                    continue
                try:
                    row = fut.result()
                except OSError as e:  # the cell's event log could not be written (a full disk)
                    raise write_error(e.filename or out / "events" / name, e, resume=True) from None
                hold_before_row(row)  # benchmarks/kill_trials.py's window; nothing unless it asks
                results.append(row)
                rows.append(row)
                if on_row:
                    on_row(row)
                logger.debug("%s %s (seed %s, %s): %s", desc, row["case_id"], row.get("seed", 0),
                             row.get("condition", "base"), row["status"])
                if bar is not None:
                    bar.update(progress_summary(rows) if progress_summary is not None else None)
            interrupted = stop.requested
    except BaseException:
        for f in cells:
            f.cancel()  # the queued ones never start; the running ones end, their rows not written
        ex.shutdown(wait=True)
        raise
    finally:
        results.close()
        if bar is not None:
            bar.close()
    ex.shutdown(wait=wait_for_running)
    if interrupted:
        raise RunInterrupted(len(rows), total, out / "results.jsonl")
    return rows


def _leaks(memory: Any, units: Sequence[Unit], *, excluding: Sequence[int] = ()) -> list[str]:
    keys = memory.case_keys(excluding=excluding)
    return [u.id for u in units if case_key(u.item) in keys]


def resume_command(opts: BenchOptions) -> str:
    """The command that finishes this run: its own with ``--resume``."""
    cmd = [str(c) for c in opts.command]
    if not cmd:
        return f"the same settings with --resume (--out {opts.out})"
    if "--resume" not in cmd:
        cmd.append("--resume")
    return shlex.join(cmd)


def run_bench(spec: RunSpec, opts: BenchOptions, *, backends: Mapping[str, LLM] | None = None,
              pool: LlamaPool | None = None, on_row: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run (or resume) a run of any suite. ``backends``: models by role name that replace
    the spec's (tests inject fakes). With memory, a learning split (``memory.learn_cases``)
    runs first, learning, into ``OUT/learning/``; the scored cases then run with the
    memory frozen. A scored case found in the memory stops the run before it starts (and
    before anything is written). On resume, what cells without a row had learned is rolled
    back first (:func:`medsim.memory.unfinished_learning`)."""
    started = utc_now()
    suite = spec.suite
    if spec.human_roles():
        raise BenchError(f"a benchmark runs no people, but {', '.join(spec.human_roles())} is set to 'human'; "
                         "play it with `medsim consult --as ROLE` or `medsim play --as ROLE`")
    loaded = suite.load(spec)
    ms = spec.memory
    memory_read = "memory" in suite.reads
    learn_units: list[Unit] = []
    if memory_read and ms.learn_cases:
        learn_units = list(suite.load(replace(spec, cases=ms.learn_cases, limit=ms.learn_limit)).units)
        shared = {case_key(u.item) for u in learn_units} & {case_key(u.item) for u in loaded.units}
        if shared:
            names = [u.id for u in loaded.units if case_key(u.item) in shared]
            raise BenchError(f"the learning split and the scored cases share {len(names)} case(s) "
                             f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}): a scored case must never "
                             "be learned from")
    uses_memory = memory_read and any(spec.for_condition(c).memory.mode != "off" for c in spec.condition_names())
    learns_online = memory_read and spec.learns_online
    if learns_online and (len(spec.seeds) > 1 or len(spec.condition_names()) > 1):
        raise BenchError("learning online (memory mode 'learn' without a learning split) runs one seed and one "
                         "condition: a case learned in one cell would be in memory for the next; use "
                         "memory.learn_cases to learn first, then score every cell frozen")
    own_pool = pool is None
    pool = pool or pool_for(spec)  # spec.decodes_batched: the cases' calls decode together
    memory = None
    cells = None
    lock = RunLock(opts.out)  # one process at a time in OUT, taken once the checks pass (medsim.runlock)
    try:
        built = Backends.for_run(spec, loaded, pool, override=backends, extra=learn_units)
        built.check(spec)
        if spec.preflight:
            preflight(spec, skip_roles=list(backends or ()), backends=built)  # A2A agents keep their cards
        cells = open_executor(spec, loaded, override=backends)  # Ray: checked first
        if uses_memory:
            try:
                memory = open_memory(ms, read_only=not (ms.learn_cases or learns_online))
            except Exception as e:  # noqa: BLE001 - a memory that cannot be opened stops the run, named
                raise BenchError(f"memory at {ms.dir}: {e}") from None

        def stamp(plan: RunPlan, cases: str | None) -> dict[str, Any]:  # a header's provenance: its cell's models
            return run_provenance(cases_file=resolve_case_path(cases) if cases else None, models=plan.models,
                                  llms=plan.llms, command=opts.command or None, started=started)

        cases_file = spec.cases if "cases" in suite.reads else None
        try:
            lock.acquire()  # before anything in OUT is read or written; refused at once if another run holds it
        except RunLockError as e:
            raise BenchError(str(e)) from None
        # -- every check, reading only: a refusal leaves OUT (and the memory) as they were --------------
        state = check_out(spec, opts)
        keep = state.keep
        done = {row_key(r) for r in keep}
        lkeep = read_unique(opts.out / LEARNING_RESULTS) if learn_units else []
        undo: list[Any] = []
        if memory is not None and (learn_units or learns_online):  # learned by cells that never got their row
            undo = unfinished_learning(memory, state.run_id,
                                       {RESULTS: done, LEARNING_RESULTS: {row_key(r) for r in lkeep}})
        if memory is not None:
            finished = {r["case_id"] for r in keep}  # learned online after they were scored (resume)
            leaked = [cid for cid in _leaks(memory, loaded.units, excluding=[r.id for r in undo])
                      if cid not in finished]
            if leaked:
                raise BenchError(f"{len(leaked)} scored case(s) are in the memory at {ms.dir} "
                                 f"({', '.join(leaked[:5])}{', ...' if len(leaked) > 5 else ''}): their answers would "
                                 "leak; use another memory or other cases")
        lplan = None
        if learn_units:
            learning = replace(spec, conditions={})  # the run's own memory (mode learn), not a condition's
            lplan = plan_for(learning, BASE_CONDITION, spec.seeds[0], built, memory=memory, learn=True)
            lplan.provenance = stamp(lplan, ms.learn_cases)
            lplan.learned_by = {"run": state.run_id, "results": LEARNING_RESULTS}
        plans: dict[tuple[str, int], RunPlan] = {}
        for cond in spec.condition_names():
            for seed in spec.seeds:
                online = memory_read and spec.for_condition(cond).memory.mode == "learn" and not ms.learn_cases
                plans[(cond, seed)] = plan_for(spec, cond, seed, built, memory=memory, learn=online)
                plans[(cond, seed)].provenance = stamp(plans[(cond, seed)], cases_file)
                plans[(cond, seed)].learned_by = {"run": state.run_id, "results": RESULTS}
        cells_all = [(plans[(cond, seed)], u) for cond in spec.condition_names() for seed in spec.seeds
                     for u in loaded.for_seed(seed)]
        todo = [(p, u) for p, u in cells_all if (u.id, p.seed, p.condition) not in done]
        prov = _provenance(spec, built, opts, started, cases_file)
        # -- the checks passed: from here on the run writes ----------------------------------------------
        write_run_file(spec, opts, state, prov)
        if undo:
            assert memory is not None
            memory.rollback([r.id for r in undo])
            logger.warning("rolled back %d memory record(s) learned by cell(s) whose rows were never written (the run "
                           "was stopped between the two): %s; those cells run again", len(undo),
                           ", ".join(f"{r.buffer}:{r.id} ({r.case_id})" for r in undo[:5])
                           + (", ..." if len(undo) > 5 else ""))
        if spec.workers > 1 and spec.executor == "local" and spec.batched is False and \
                all(is_in_process(rs.backend) for rs in spec.all_roles() if rs.backend != "none"):  # (vision off)
            # batched decoding is the default here (RunSpec.decodes_batched); turned off, measured on
            # the embedded model, 2 cores (benchmarks/batched_bench.py): serial --workers 4 ran at 0.41x
            # the cases/hour of --workers 1 (each role's context thrashes between cases), batched at 1.14x
            logger.warning("--no-batched (batched = false): all roles run in process and their model calls are "
                           "serialised, so --workers > 1 is slower than --workers 1 here (each call re-reads another "
                           "case's context); without --no-batched the cases' calls decode together")
        try:
            if lplan is not None:
                assert memory is not None
                ldone = {row_key(r) for r in lkeep}
                lrows = run_cells([(lplan, u) for u in learn_units if (u.id, lplan.seed, lplan.condition) not in ldone],
                                  opts.out / "learning", lkeep, workers=1, total=len(learn_units),
                                  progress=opts.progress, fsync=opts.fsync, on_row=None, desc="learning case",
                                  progress_summary=suite.progress)
                learning_dir = opts.out / "learning"
                replace_file(learning_dir / "summary.json",
                             (json.dumps({**suite.summary(lrows), "memory": memory.state()}, indent=2,
                                         ensure_ascii=False) + "\n").encode("utf-8"), resume=True)
                with naming(learning_dir / "results.csv", resume=True):
                    write_results_csv([suite.csv_row(r) for r in lrows], learning_dir / "results.csv")
            # learning online changes the memory case by case: one at a time keeps the run reproducible
            workers = 1 if learns_online else spec.workers
            rows = run_cells(todo, opts.out, keep, workers=workers, total=len(cells_all), progress=opts.progress,
                             fsync=opts.fsync, on_row=on_row, executor=cells, desc=suite.unit_name,
                             progress_summary=suite.progress)
        except RunInterrupted as e:
            logger.error("%s (the others were cancelled before they started); finish the run with: %s",
                         e, resume_command(opts))
            raise
        order = {(u.id, p.seed, p.condition): i for i, (p, u) in enumerate(cells_all)}
        rows, _ = unique_rows(rows)  # (never two rows for a cell: kept rows are unique, and done cells never rerun)
        rows.sort(key=lambda r: order.get(row_key(r), len(order)))
        summary = suite.summary(rows)
        summary["invalid_records_skipped"] = len(loaded.invalid)
        if memory is not None:
            summary["memory"] = memory.state()
        first = next(iter(plans.values()))
        write_outputs(opts.out, spec, summary, rows, first.models)
        return BenchOutcome(summary, opts.out, list(loaded.invalid), suite.headline(summary), suite.nothing_scored_fails)
    finally:
        if cells is not None:
            cells.close()
        if memory is not None:
            memory.close()
        if own_pool:
            pool.close()
        lock.release()


def write_outputs(out: Path, spec: RunSpec, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                  models: Mapping[str, str], *, title: str | None = None, links_to: Path | None = None) -> None:
    """What a run (or a re-scoring, ``links_to`` its run) leaves beside its rows:
    summary.json, report.md, results.csv and report.html with its transcript pages."""
    suite = spec.suite
    replace_file(out / "summary.json", (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
                 resume=True)
    with naming(out / "report.md", resume=True):
        write_report(out, spec, summary, rows, models, title=title)
    with naming(out / "results.csv", resume=True):
        write_results_csv([suite.csv_row(r) for r in rows], out / "results.csv")
    from medsim.pages import write_report_page

    try:
        write_report_page(out, rows, title=title, links_to=links_to, models=models if links_to else None)
    except Exception as e:  # noqa: BLE001 - the results stand without their HTML view
        logger.warning("%s not written (%s: %s); `medsim view %s` writes it again", out / "report.html",
                       type(e).__name__, e, links_to or out)


def _provenance(spec: RunSpec, built: Backends, opts: BenchOptions, started: str, cases_file: str | None
                ) -> dict[str, Any]:
    """run.json's provenance: every model file any role of any condition loads."""
    models: dict[str, str] = {}
    llms: dict[str, LLM] = {}
    for cond in spec.condition_names():
        for role, rs in spec.for_condition(cond).roles.items():
            models[f"{cond}.{role}"] = describe_spec(rs.backend, rs.model)
            llms[f"{cond}.{role}"] = built.get(role, rs, spec.seeds[0])
    prov = run_provenance(cases_file=resolve_case_path(cases_file) if cases_file else None, models=models, llms=llms,
                          command=opts.command or None, started=started)
    if "memory" in spec.suite.reads and spec.memory.learn_cases:
        prov["learn_cases_sha256"] = file_sha256(resolve_case_path(spec.memory.learn_cases))
    return prov
