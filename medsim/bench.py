"""The run loop: every suite's cells, run headless (``medsim bench``, ``medsim osce``), one
at a time with a live printer (``medsim consult``), or re-scored (:mod:`medsim.score`).

Writes under OUT: ``events/<slug>-<hash>.jsonl`` per (unit, seed, condition) (header with
the whole run spec and the run's provenance, then every event), ``results.jsonl`` (one row
per finished cell, flushed as it finishes), ``results.csv`` (the same rows, written when
the run finishes), ``summary.json``, ``report.md`` and ``run.json`` (the spec, checked on
``--resume``, and the provenance of each invocation). Nothing is written before the spec,
the units, the models and the servers have been checked. ``report.html`` and
``transcripts/`` (:mod:`medsim.pages`) are written last, from those files. The run holds
``OUT/.lock`` throughout (medsim.runlock): a second run on OUT is refused and writes nothing.

What differs between suites (their units, engine, scorers, rows, summary and report
sections) is the suite's (:class:`agents.suites.contract.Suite`); this loop knows none of
them by name.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
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
from agents.results import read_results, results_line, row_key, write_results, write_results_csv
from agents.scorers import Transcript, score_case
from agents.recall import case_key
from agents.suites.contract import Unit
from medsim.assemble import Backends, RunPlan, plan_for, pool_for, preflight
from medsim.errors import BenchError
from medsim.executors import open_executor
from medsim.memory import open_memory
from medsim.report import write_report
from medsim.runlock import RunLock, RunLockError
from medsim.spec import BASE_CONDITION, RunSpec, upgrade

__all__ = ["BenchError", "BenchOptions", "BenchOutcome", "run_bench", "run_cell", "prepare_out", "drive",
           "run_cells", "write_outputs", "results_line"]


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
        try:
            score_case(unit.item, Transcript.from_events(events, case_id=unit.id), plan.scorers, sink)
        except Exception as e:  # noqa: BLE001 - recorded as the cell's error
            log.emit(Scored(scorer=plan.scorers[0].name if plan.scorers else suite.name, value=None,
                            details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
        if plan.learner is not None:
            try:
                plan.learner.learn(unit.item, events, sink)
            except Exception as e:  # noqa: BLE001 - learning that breaks must not lose the case
                log.emit(MemoryLearned(action="nothing", buffer=None, record_id=None,
                                       reason=f"internal error in learning: {type(e).__name__}: {e}"))
        row = suite.row(unit, events, seed=plan.seed, condition=plan.condition, events_file=events_file,
                        wall_s=time.perf_counter() - t0)
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


def prepare_out(spec: RunSpec, opts: BenchOptions, provenance: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Check the output directory, create it and write run.json (with ``provenance``,
    :func:`agents.provenance.run_provenance`; on resume the earlier invocations' command,
    start time and git revision are kept under ``earlier``); return the rows to keep (on
    resume). Raises :class:`BenchError` with a plain message."""
    out = opts.out
    if out.exists() and not out.is_dir():
        raise BenchError(f"--out {out}: exists and is not a directory")
    run_file, results_file = out / "run.json", out / "results.jsonl"
    prev: dict[str, Any] = {}
    try:
        existing = read_results(results_file)
    except Exception as e:  # noqa: BLE001 - ResultsError or an unreadable file: say which
        raise BenchError(f"{results_file}: cannot be read ({e})") from None
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
                raise BenchError(f"{out}: --resume with settings that differ from the run there:\n  "
                                 + "\n  ".join(diffs[:12]) + ("\n  ..." if len(diffs) > 12 else ""))
    elif existing or run_file.is_file():
        raise BenchError(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    prov = dict(provenance or {})
    command = prov.pop("command", None) or list(opts.command)
    doc = {"identity": spec.identity(), "spec": spec.to_dict(), "command": command, "git_revision": git_revision(),
           **_case_file_paths(spec), **prov, "packages": package_versions()}
    if prev:
        doc["earlier"] = [*prev.get("earlier", []), {k: prev.get(k) for k in ("command", "started", "git_revision")}]
    doc = redact_tree(doc)  # no URL's key in run.json, whatever field holds it (agents.llm.url_secrets)
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
        tmp = run_file.with_suffix(".json.tmp")
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a file name that is not UTF-8 (argv holds it as surrogates): escaped
            data = (json.dumps(doc, indent=2, ensure_ascii=True) + "\n").encode("ascii")
        tmp.write_bytes(data)
        os.replace(tmp, run_file)
    except OSError as e:
        raise BenchError(f"--out {out}: cannot write the run there ({e.strerror or e})") from None
    if opts.retry_errors:
        existing = [r for r in existing if not r.get("error")]
    return existing


class _Results:
    """Appends rows to results.jsonl, one flushed line per finished cell. A flushed
    line survives the process being killed; ``fsync`` also survives a power cut. The
    rows kept on resume are rewritten only when the file holds anything else (a torn
    last line, errored rows to retry, an older format), and then atomically
    (:func:`agents.results.write_results`: temp file, fsync, rename): a kill or crash
    during the rewrite leaves the old file, every finished row in it."""

    def __init__(self, path: Path, keep: list[dict[str, Any]], fsync: bool = False):
        self.path, self.fsync = path, fsync
        self.lock = threading.Lock()
        lines = [results_line(r) for r in keep]
        try:
            same = path.read_bytes() == "".join(lines).encode("ascii")
        except OSError:
            same = False
        if not same:
            write_results(keep, path)
        self.fh = path.open("a", encoding="ascii", newline="\n")

    def append(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.fh.write(results_line(row))
            self.fh.flush()
            if self.fsync:
                os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()




# -- the run -----------------------------------------------------------------------------
def run_cells(todo: Sequence[tuple[RunPlan, Unit]], out: Path, keep: list[dict[str, Any]], *, workers: int,
              total: int, progress: bool, fsync: bool, on_row: Callable[[dict[str, Any]], None] | None,
              desc: str = "case", executor: Callable[[int], Any] | None = None,
              progress_summary: Callable[[list[dict[str, Any]]], Any] | None = None) -> list[dict[str, Any]]:
    """Run cells (plan, unit) into ``out``/events, appending rows to ``out``/results.jsonl
    as each finishes; returns every row (kept ones first). ``executor``: ``workers`` ->
    the concurrent.futures.Executor the cells run on (medsim.executors; default: threads);
    ``progress_summary(rows)`` is what the progress line shows (None: counts only)."""
    (out / "events").mkdir(parents=True, exist_ok=True)
    results = _Results(out / "results.jsonl", keep, fsync=fsync)
    bar = None
    if progress and todo:
        from medsim.progress import Progress

        bar = Progress(total, initial=len(keep), unit=desc)
    rows = list(keep)
    try:
        with (executor(workers) if executor else ThreadPoolExecutor(max_workers=workers)) as ex:
            futs = {}
            for plan, unit in todo:
                name = event_file_name(unit.id, plan.seed, plan.condition)
                futs[ex.submit(run_cell, plan, unit, out / "events" / name, events_file=f"events/{name}")] = unit
            for fut in as_completed(futs):
                row = fut.result()
                results.append(row)
                rows.append(row)
                if on_row:
                    on_row(row)
                logger.debug("%s %s (seed %s, %s): %s", desc, row["case_id"], row.get("seed", 0),
                             row.get("condition", "base"), row["status"])
                if bar is not None:
                    bar.update(progress_summary(rows) if progress_summary is not None else None)
    finally:
        results.close()
        if bar is not None:
            bar.close()
    return rows


def _leaks(memory: Any, units: Sequence[Unit]) -> list[str]:
    keys = memory.case_keys()
    return [u.id for u in units if case_key(u.item) in keys]


def run_bench(spec: RunSpec, opts: BenchOptions, *, backends: Mapping[str, LLM] | None = None,
              pool: LlamaPool | None = None, on_row: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run (or resume) a run of any suite. ``backends``: models by role name that replace
    the spec's (tests inject fakes). With memory, a learning split (``memory.learn_cases``)
    runs first, learning, into ``OUT/learning/``; the scored cases then run with the
    memory frozen. A scored case found in the memory stops the run before it starts."""
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
        keep = prepare_out(spec, opts, _provenance(spec, built, opts, started, cases_file))
        done = {row_key(r) for r in keep}
        if learn_units:
            assert memory is not None
            lkeep = read_results(opts.out / "learning" / "results.jsonl")
            ldone = {r["case_id"] for r in lkeep}
            learning = replace(spec, conditions={})  # the run's own memory (mode learn), not a condition's
            plan = plan_for(learning, BASE_CONDITION, spec.seeds[0], built, memory=memory, learn=True)
            plan.provenance = stamp(plan, ms.learn_cases)
            lrows = run_cells([(plan, u) for u in learn_units if u.id not in ldone], opts.out / "learning", lkeep,
                              workers=1, total=len(learn_units), progress=opts.progress, fsync=opts.fsync,
                              on_row=None, desc="learning case", progress_summary=suite.progress)
            (opts.out / "learning" / "summary.json").write_text(
                json.dumps({**suite.summary(lrows), "memory": memory.state()}, indent=2, ensure_ascii=False) + "\n",
                encoding="utf-8")
            write_results_csv([suite.csv_row(r) for r in lrows], opts.out / "learning" / "results.csv")
        if memory is not None:
            finished = {r["case_id"] for r in keep}  # learned online after they were scored (resume)
            leaked = [cid for cid in _leaks(memory, loaded.units) if cid not in finished]
            if leaked:
                raise BenchError(f"{len(leaked)} scored case(s) are in the memory at {ms.dir} "
                                 f"({', '.join(leaked[:5])}{', ...' if len(leaked) > 5 else ''}): their answers would "
                                 "leak; use another memory or other cases")
        plans: dict[tuple[str, int], RunPlan] = {}
        for cond in spec.condition_names():
            for seed in spec.seeds:
                online = memory_read and spec.for_condition(cond).memory.mode == "learn" and not ms.learn_cases
                plans[(cond, seed)] = plan_for(spec, cond, seed, built, memory=memory, learn=online)
                plans[(cond, seed)].provenance = stamp(plans[(cond, seed)], cases_file)
        cells_all = [(plans[(cond, seed)], u) for cond in spec.condition_names() for seed in spec.seeds
                     for u in loaded.for_seed(seed)]
        todo = [(p, u) for p, u in cells_all if (u.id, p.seed, p.condition) not in done]
        if spec.workers > 1 and spec.executor == "local" and spec.batched is False and \
                all(is_in_process(rs.backend) for rs in spec.all_roles() if rs.backend != "none"):  # (vision off)
            # batched decoding is the default here (RunSpec.decodes_batched); turned off, measured on
            # the embedded model, 2 cores (benchmarks/batched_bench.py): serial --workers 4 ran at 0.41x
            # the cases/hour of --workers 1 (each role's context thrashes between cases), batched at 1.14x
            logger.warning("--no-batched (batched = false): all roles run in process and their model calls are "
                           "serialised, so --workers > 1 is slower than --workers 1 here (each call re-reads another "
                           "case's context); without --no-batched the cases' calls decode together")
        # learning online changes the memory case by case: one at a time keeps the run reproducible
        workers = 1 if learns_online else spec.workers
        rows = run_cells(todo, opts.out, keep, workers=workers, total=len(cells_all), progress=opts.progress,
                         fsync=opts.fsync, on_row=on_row, executor=cells, desc=suite.unit_name,
                         progress_summary=suite.progress)
        order = {(u.id, p.seed, p.condition): i for i, (p, u) in enumerate(cells_all)}
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
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    write_report(out, spec, summary, rows, models, title=title)
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
