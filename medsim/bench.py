"""``medsim bench``: headless batch over a case set, a grid of conditions and seeds.

Writes under OUT: ``events/<slug>-<hash>.jsonl`` per (case, seed, condition) (header with
the whole run spec and the run's provenance, then every event), ``results.jsonl`` (one row
per finished cell, flushed as it finishes), ``results.csv`` (the same rows, written when
the run finishes), ``summary.json``, ``report.md`` and ``run.json`` (the spec, checked on
``--resume``, and the provenance of each invocation). Nothing is written before the spec,
the cases, the models and the servers have been checked. ``report.html`` and
``transcripts/`` (medsim.html_report) are written last, from those files. The run holds
``OUT/.lock`` throughout (medsim.runlock): a second run on OUT is refused and writes nothing.
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

from agents.cases.model import Case, CaseRecordError
from agents.cases.registry import load_cases, registered_case_sets, resolve_case_path
from agents.events import CaseError, CaseFinished, ConsultationEnded, EventLog, Header, MemoryLearned, Scored
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import describe_spec, is_in_process
from agents.llm.url_secrets import redact_tree
from agents.names import event_file_name
from agents.provenance import file_sha256, git_revision, package_versions, run_provenance, utc_now
from agents.results import case_row, read_results, results_line, row_key, summarise, write_results, write_results_csv
from agents.scorers import Transcript, score_case
from agents.recall import case_key
from agents.textsafe import md_cell, md_text, printable
from medsim.assemble import Backends, RunPlan, plan_for, pool_for, preflight
from medsim.memory import open_memory
from medsim.runlock import RunLock, RunLockError
from medsim.spec import BASE_CONDITION, RunSpec

__all__ = ["BenchError", "BenchOptions", "BenchOutcome", "run_bench", "run_case", "write_report", "prepare_out"]


logger = logging.getLogger(__name__)


class BenchError(RuntimeError):
    """A problem with the run itself (bad output dir, resume mismatch); nothing ran."""


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
    invalid_records: list[CaseRecordError]

    @property
    def nothing_scored(self) -> bool:
        """Cases ran and not one could be scored (every one failed or ended in an error)."""
        return self.summary["cases"] > 0 and self.summary["scored"] == 0

    def nothing_scored_message(self) -> str | None:
        """The loud line for a run that scored nothing (None when something was scored),
        naming the most common reason."""
        if not self.nothing_scored:
            return None
        s = self.summary
        reasons = Counter(str(v) for v in [*s["failed_cases"].values(), *s["error_cases"].values()] if v)
        common = ""
        if reasons:
            reason, n = reasons.most_common(1)[0]
            common = f"; the most common reason ({n} of {s['cases']}): {reason[:300]}"
        return (f"error: nothing could be scored: all {s['cases']} consultations failed ({s['failed']}) or ended "
                f"in an error ({s['errors']}){common}")

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] or self.nothing_scored else 0


# -- one case ---------------------------------------------------------------------------
def drive(build: Callable[[], Any], log: EventLog) -> None:
    """Build an engine (a consultation, an OSCE encounter: ``start``, ``step``, ``done``,
    ``fail``, ``finish``) and run it to its end. A cast that cannot be built, or a bug
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


def run_case(plan: RunPlan, case: Case, path: Path, *, events_file: str) -> dict[str, Any]:
    """Consultation, scoring and the result row of one (case, seed, condition); every
    event goes to ``path``. A bug in one case is recorded as that case's error."""
    t0 = time.perf_counter()
    events: list[dict[str, Any]] = []
    with EventLog(path, keep=events) as log:
        log.emit(Header(case_id=case.id, case_source=case.source, seed=plan.seed, condition=plan.condition,
                        spec=plan.header_spec, models=plan.models, git_revision=git_revision(),
                        packages=package_versions(), **plan.provenance))
        drive(lambda: plan.consultation_for(case, log), log)  # AutoMedic's engine for that protocol
        try:
            score_case(case, Transcript.from_events(events, case_id=case.id), plan.scorers, log)
        except Exception as e:  # noqa: BLE001 - recorded as the case's error
            log.emit(Scored(scorer="diagnosis", value=None,
                            details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
        if plan.learner is not None:
            try:
                plan.learner.learn(case, events, log)
            except Exception as e:  # noqa: BLE001 - learning that breaks must not lose the case
                log.emit(MemoryLearned(action="nothing", buffer=None, record_id=None,
                                       reason=f"internal error in learning: {type(e).__name__}: {e}"))
        row = case_row(case, events, seed=plan.seed, condition=plan.condition, events_file=events_file,
                       wall_s=time.perf_counter() - t0)
        log.emit(CaseFinished(status=row["status"], turns=row["turns"], diagnosis=row["diagnosis"],
                              correct=row["correct"]))
    return row


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
            older = getattr(spec, "OLDER_DEFAULTS", {})  # keys a run made before them lacks, read as then
            if isinstance(theirs, dict) and older:
                theirs = {**older, **theirs}
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
        lines = [_row_line(r) for r in keep]
        try:
            same = path.read_bytes() == "".join(lines).encode("ascii")
        except OSError:
            same = False
        if not same:
            write_results(keep, path)
        self.fh = path.open("a", encoding="ascii", newline="\n")

    def append(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.fh.write(_row_line(row))
            self.fh.flush()
            if self.fsync:
                os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


_row_line = results_line  # (medsim.score writes its rows with it)


# -- the run -----------------------------------------------------------------------------
def _run_cells(todo: Sequence[tuple[Any, Any]], out: Path, keep: list[dict[str, Any]], *, workers: int,
               total: int, progress: bool, fsync: bool, on_row: Callable[[dict[str, Any]], None] | None,
               desc: str = "case", executor: Callable[[int], Any] | None = None,
               cell: Callable[..., dict[str, Any]] = run_case,
               progress_summary: Callable[[list[dict[str, Any]]], Any] | None = summarise) -> list[dict[str, Any]]:
    """Run cells (plan, case) into ``out``/events, appending rows to ``out``/results.jsonl
    as each finishes; returns every row (kept ones first). ``executor``: ``workers`` ->
    the concurrent.futures.Executor the cells run on (medsim.executors; default: threads).
    ``cell(plan, case, path, events_file=...)`` runs one (a suite's own: the OSCE
    encounter's ``medsim.osce.run_cell``; a plan has ``seed`` and ``condition``, a case
    ``id``); ``progress_summary(rows)`` is what the progress line shows (None: counts only)."""
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
            for plan, c in todo:
                name = event_file_name(c.id, plan.seed, plan.condition)
                futs[ex.submit(cell, plan, c, out / "events" / name, events_file=f"events/{name}")] = c
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


def _leaks(memory: Any, cases: Sequence[Case]) -> list[str]:
    keys = memory.case_keys()
    return [c.id for c in cases if case_key(c) in keys]


def run_bench(spec: RunSpec, opts: BenchOptions, *, backends: Mapping[str, LLM] | None = None,
              pool: LlamaPool | None = None, on_row: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run (or resume) a benchmark. ``backends``: models by role name that replace the
    spec's (tests inject fakes). With memory, a learning split (``memory.learn_cases``)
    runs first, learning, into ``OUT/learning/``; the scored cases then run with the
    memory frozen. A scored case found in the memory stops the run before it starts."""
    started = utc_now()
    if spec.human_roles():
        raise BenchError(f"a benchmark runs no people, but {', '.join(spec.human_roles())} is set to 'human'; "
                         "play it with `medsim consult --as ROLE` or `medsim play --as ROLE`")
    cases, invalid = load_cases(spec.cases, skip_invalid=spec.skip_invalid)
    if spec.limit is not None:
        cases = cases[: spec.limit]
    ms = spec.memory
    learn_cases: list[Case] = []
    if ms.learn_cases:
        learn_cases, _ = load_cases(ms.learn_cases, skip_invalid=spec.skip_invalid)
        learn_cases = learn_cases[: ms.learn_limit] if ms.learn_limit else learn_cases
        shared = {case_key(c) for c in learn_cases} & {case_key(c) for c in cases}
        if shared:
            names = [c.id for c in cases if case_key(c) in shared]
            raise BenchError(f"the learning split and the scored cases share {len(names)} case(s) "
                             f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}): a scored case must never "
                             "be learned from")
    uses_memory = any(spec.for_condition(c).memory.mode != "off" for c in spec.condition_names())
    learns_online = spec.learns_online
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
        built = Backends({c.id: c for c in [*cases, *learn_cases]}, pool, override=backends)
        built.check(spec)
        if spec.preflight:
            preflight(spec, skip_roles=list(backends or ()), backends=built)  # A2A agents keep their cards
        from medsim.executors import open_executor  # (it imports this module)

        cells = open_executor(spec, cases, override=backends)  # Ray: checked and joined before anything is written
        if uses_memory:
            try:
                memory = open_memory(ms, read_only=not (ms.learn_cases or learns_online))
            except Exception as e:  # noqa: BLE001 - a memory that cannot be opened stops the run, named
                raise BenchError(f"memory at {ms.dir}: {e}") from None

        def stamp(plan: RunPlan, cases: str) -> dict[str, Any]:  # a header's provenance: its cell's models
            return run_provenance(cases_file=resolve_case_path(cases), models=plan.models, llms=plan.llms,
                                  command=opts.command or None, started=started)

        try:
            lock.acquire()  # before anything in OUT is read or written; refused at once if another run holds it
        except RunLockError as e:
            raise BenchError(str(e)) from None
        keep = prepare_out(spec, opts, _provenance(spec, built, opts, started))
        done = {row_key(r) for r in keep}
        if learn_cases:
            assert memory is not None
            lkeep = read_results(opts.out / "learning" / "results.jsonl")
            ldone = {r["case_id"] for r in lkeep}
            learning = replace(spec, conditions={})  # the run's own memory (mode learn), not a condition's
            plan = plan_for(learning, BASE_CONDITION, spec.seeds[0], built, memory=memory, learn=True)
            plan.provenance = stamp(plan, ms.learn_cases)
            lrows = _run_cells([(plan, c) for c in learn_cases if c.id not in ldone], opts.out / "learning", lkeep,
                               workers=1, total=len(learn_cases), progress=opts.progress, fsync=opts.fsync,
                               on_row=None, desc="learning case")
            (opts.out / "learning" / "summary.json").write_text(
                json.dumps({**summarise(lrows), "memory": memory.state()}, indent=2, ensure_ascii=False) + "\n",
                encoding="utf-8")
            write_results_csv(lrows, opts.out / "learning" / "results.csv")
        if memory is not None:
            finished = {r["case_id"] for r in keep}  # learned online after they were scored (resume)
            leaked = [cid for cid in _leaks(memory, cases) if cid not in finished]
            if leaked:
                raise BenchError(f"{len(leaked)} scored case(s) are in the memory at {ms.dir} "
                                 f"({', '.join(leaked[:5])}{', ...' if len(leaked) > 5 else ''}): their answers would "
                                 "leak; use another memory or other cases")
        plans: dict[tuple[str, int], RunPlan] = {}
        for cond in spec.condition_names():
            for seed in spec.seeds:
                online = spec.for_condition(cond).memory.mode == "learn" and not ms.learn_cases
                plans[(cond, seed)] = plan_for(spec, cond, seed, built, memory=memory, learn=online)
                plans[(cond, seed)].provenance = stamp(plans[(cond, seed)], spec.cases)
        todo = [(plans[(cond, seed)], c) for cond in spec.condition_names() for seed in spec.seeds for c in cases
                if (c.id, seed, cond) not in done]
        total = len(cases) * len(plans)
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
        rows = _run_cells(todo, opts.out, keep, workers=workers, total=total, progress=opts.progress,
                          fsync=opts.fsync, on_row=on_row, executor=cells)
        order = {(c.id, seed, cond): i for i, (cond, seed, c) in
                 enumerate((cond, seed, c) for cond in spec.condition_names() for seed in spec.seeds for c in cases)}
        rows.sort(key=lambda r: order.get(row_key(r), len(order)))
        summary = summarise(rows)
        summary["invalid_records_skipped"] = len(invalid)
        if memory is not None:
            summary["memory"] = memory.state()
        (opts.out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        first = next(iter(plans.values()))
        write_report(opts.out, spec, summary, rows, first.models)
        write_results_csv(rows, opts.out / "results.csv")
        _write_html(opts.out, rows)
        return BenchOutcome(summary, opts.out, invalid)
    finally:
        if cells is not None:
            cells.close()
        if memory is not None:
            memory.close()
        if own_pool:
            pool.close()
        lock.release()


def _write_html(out: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """report.html and the transcripts (medsim.html_report). The run's results are all on
    disk by now: a report that cannot be written is said, not raised (``medsim view``
    writes it again)."""
    from medsim.html_report import write_html_report

    try:
        write_html_report(out, rows)
    except Exception as e:  # noqa: BLE001 - the results stand without their HTML view
        logger.warning("%s not written (%s: %s); `medsim view %s` writes it again", out / "report.html",
                    type(e).__name__, e, out)


def _provenance(spec: RunSpec, built: Backends, opts: BenchOptions, started: str) -> dict[str, Any]:
    """run.json's provenance: every model file any role of any condition loads."""
    models: dict[str, str] = {}
    llms: dict[str, LLM] = {}
    for cond in spec.condition_names():
        for role, rs in spec.for_condition(cond).roles.items():
            models[f"{cond}.{role}"] = describe_spec(rs.backend, rs.model)
            llms[f"{cond}.{role}"] = built.get(role, rs, spec.seeds[0])
    prov = run_provenance(cases_file=resolve_case_path(spec.cases), models=models, llms=llms,
                          command=opts.command or None, started=started)
    if spec.memory.learn_cases:
        prov["learn_cases_sha256"] = file_sha256(resolve_case_path(spec.memory.learn_cases))
    return prov


def _fmt_acc(s: Mapping[str, Any]) -> str:
    if s["accuracy"] is None:
        return "n/a"
    return f"{s['accuracy']:.1%} (95% CI {s['ci95'][0]:.1%}-{s['ci95'][1]:.1%})"


def write_report(out: Path, spec: RunSpec, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                 models: Mapping[str, str], title: str | None = None) -> None:
    """report.md. Every text from a model, a case or the spec is escaped for Markdown
    (:func:`agents.textsafe.md_text`, :func:`~agents.textsafe.md_cell`: no tag, link or image)."""
    cell = md_cell
    p = spec.protocol
    md = [f"# {md_text(title or 'medsim bench: ' + spec.cases)}", "",
          f"- git revision: `{git_revision()}`",
          f"- seeds: {', '.join(map(str, spec.seeds))}; protocol {p.name} (doctor {p.doctor_mode}, "
          f"min gathering {p.min_gathering}, guards {'on' if p.guards else 'off'}), max turns {p.max_turns}",
          "- models: " + ", ".join(f"{md_text(r)}={md_text(m)}" for r, m in models.items()), "",
          "## Summary", "",
          f"- cases: {summary['cases']} (scored {summary['scored']}, failed {summary['failed']}, errors {summary['errors']})",
          f"- accuracy: {summary['correct']}/{summary['scored']} = {_fmt_acc(summary)}",
          f"- no diagnosis given: {summary['no_diagnosis']}",
          f"- mean turns: {summary['mean_turns']}, mean tests requested: {summary['mean_tests']}",
          f"- tokens: prompt sent {summary['prompt_tokens']}, prompt evaluated "
          f"{summary['prompt_tokens_evaluated']}, completion {summary['completion_tokens']}"]
    if len(spec.condition_names()) > 1:
        from medsim.ladder import condition_table, table_markdown, write_chart

        table = condition_table(rows, spec.condition_names())
        md += ["", "## Conditions (in order; each compared with the one before it, paired by case)", ""]
        md += table_markdown(table)
        try:
            write_chart(table, out / "conditions.png", title=spec.cases)
            md += ["", "![accuracy by condition, and against cost](conditions.png)"]
        except ImportError as e:  # matplotlib missing: the table still stands
            md += ["", f"(no chart: {e})"]
    md += ["", "## Cases", "", "| case | seed | condition | status | correct | diagnosis | truth | turns | tests |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {cell(r['case_id'])} | {cell(r.get('seed', 0))} | {cell(r.get('condition', 'base'))} | "
                  f"{cell(r['status'])} | {cell(r['correct'])} | {cell(r['diagnosis'])} | {cell(r['truth'])} | "
                  f"{cell(r['turns'])} | {cell(r['n_tests'])} |")
    from agents.suites.care import care_markdown

    md += care_markdown(summary)  # AutoMedic runs: CARE, for the run and per condition
    if summary["errors"]:
        md += ["", "## Errors", ""] + [f"- {cell(k)}: {cell(v)}" for k, v in summary["error_cases"].items()]
    # a last pass over the whole page: the title, condition names and anything not a cell
    (out / "report.md").write_text(printable("\n".join(md)) + "\n", encoding="utf-8")
