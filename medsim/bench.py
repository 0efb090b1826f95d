"""``medsim bench``: headless batch over a case set, a grid of conditions and seeds.

Writes under OUT: ``events/<slug>-<hash>.jsonl`` per (case, seed, condition) (header with
the whole run spec and the run's provenance, then every event), ``results.jsonl`` (one row
per finished cell, flushed as it finishes), ``results.csv`` (the same rows, written when
the run finishes), ``summary.json``, ``report.md`` and ``run.json`` (the spec, checked on
``--resume``, and the provenance of each invocation). Nothing is written before the spec,
the cases, the models and the servers have been checked. ``report.html`` and
``transcripts/`` (medsim.html_report) are written last, from those files.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.cases.model import Case, CaseRecordError
from agents.cases.registry import load_cases, resolve_case_path
from agents.consultation import Consultation
from agents.events import CaseError, CaseFinished, ConsultationEnded, EventLog, Header, MemoryLearned, Scored
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import describe_spec, is_in_process
from agents.names import event_file_name
from agents.provenance import file_sha256, git_revision, package_versions, run_provenance, utc_now
from agents.results import case_row, read_results, row_key, summarise, write_results_csv
from agents.scorers import Transcript, score_case
from agents.recall import case_key
from medsim.assemble import Backends, RunPlan, plan_for, preflight
from medsim.memory import open_memory
from medsim.spec import BASE_CONDITION, RunSpec

__all__ = ["BenchError", "BenchOptions", "BenchOutcome", "run_bench", "run_case", "write_report", "prepare_out"]


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
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0


# -- one case ---------------------------------------------------------------------------
def run_case(plan: RunPlan, case: Case, path: Path, *, events_file: str) -> dict[str, Any]:
    """Consultation, scoring and the result row of one (case, seed, condition); every
    event goes to ``path``. A bug in one case is recorded as that case's error."""
    t0 = time.perf_counter()
    events: list[dict[str, Any]] = []
    with EventLog(path, keep=events) as log:
        log.emit(Header(case_id=case.id, case_source=case.source, seed=plan.seed, condition=plan.condition,
                        spec=plan.header_spec, models=plan.models, git_revision=git_revision(),
                        packages=package_versions(), **plan.provenance))
        try:
            consultation = Consultation(case, plan.cast(case, log), plan.consultation, log)
        except Exception as e:  # noqa: BLE001 - a cast that cannot be built is this case's error
            log.emit(CaseError(turn=0, error=f"internal error: {type(e).__name__}: {e}"))
            log.emit(ConsultationEnded(status="error", turns=0, diagnosis=None, tests_requested=[],
                                       error=f"internal error: {type(e).__name__}: {e}", failure=None))
        else:
            try:
                consultation.start()
                while not consultation.done:
                    consultation.step()
            except Exception as e:  # noqa: BLE001 - a bug in one case must not lose the run; recorded
                consultation.fail(f"internal error: {type(e).__name__}: {e}")
            consultation.finish()
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
            diffs = _diff(spec.identity(), prev.get("identity"))
            if diffs:
                raise BenchError(f"{out}: --resume with settings that differ from the run there:\n  "
                                 + "\n  ".join(diffs[:12]) + ("\n  ..." if len(diffs) > 12 else ""))
    elif existing or run_file.is_file():
        raise BenchError(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    prov = dict(provenance or {})
    command = prov.pop("command", None) or list(opts.command)
    doc = {"identity": spec.identity(), "spec": spec.to_dict(), "command": command, "git_revision": git_revision(),
           **prov, "packages": package_versions()}
    if prev:
        doc["earlier"] = [*prev.get("earlier", []), {k: prev.get(k) for k in ("command", "started", "git_revision")}]
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
        tmp = run_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, run_file)
    except OSError as e:
        raise BenchError(f"--out {out}: cannot write the run there ({e.strerror or e})") from None
    if opts.retry_errors:
        existing = [r for r in existing if not r.get("error")]
    return existing


class _Results:
    """Appends rows to results.jsonl, one flushed line per finished cell. A flushed
    line survives the process being killed; ``fsync`` also survives a power cut. The
    rows kept on resume are rewritten atomically (a temp file renamed over it)."""

    def __init__(self, path: Path, keep: list[dict[str, Any]], fsync: bool = False):
        self.path, self.fsync = path, fsync
        self.lock = threading.Lock()
        tmp = path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for r in keep:
                fh.write(_row_line(r))
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)  # a kill leaves the old file or the new one, never half of it
        self.fh = path.open("a", encoding="utf-8")

    def append(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.fh.write(_row_line(row))
            self.fh.flush()
            if self.fsync:
                os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _row_line(row: Mapping[str, Any]) -> str:
    # ensure_ascii: a U+2028 or U+0085 in model text can never split a row
    return json.dumps(row, ensure_ascii=True, sort_keys=True) + "\n"


# -- the run -----------------------------------------------------------------------------
def _run_cells(todo: Sequence[tuple[RunPlan, Case]], out: Path, keep: list[dict[str, Any]], *, workers: int,
               total: int, progress: bool, fsync: bool, on_row: Callable[[dict[str, Any]], None] | None,
               desc: str = "case") -> list[dict[str, Any]]:
    """Run cells (plan, case) into ``out``/events, appending rows to ``out``/results.jsonl
    as each finishes; returns every row (kept ones first)."""
    (out / "events").mkdir(parents=True, exist_ok=True)
    results = _Results(out / "results.jsonl", keep, fsync=fsync)
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=len(keep), unit=desc, file=sys.stderr, dynamic_ncols=True)
    rows = list(keep)
    try:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            futs = {}
            for plan, c in todo:
                name = event_file_name(c.id, plan.seed, plan.condition)
                futs[ex.submit(run_case, plan, c, out / "events" / name, events_file=f"events/{name}")] = c
            for fut in as_completed(futs):
                row = fut.result()
                results.append(row)
                rows.append(row)
                if on_row:
                    on_row(row)
                if bar is not None:
                    s = summarise(rows)
                    acc = "n/a" if s["accuracy"] is None else f"{s['accuracy']:.0%}"
                    bar.set_postfix(acc=acc, errors=s["errors"], refresh=False)
                    bar.update(1)
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
    learns_online = any(spec.for_condition(c).memory.mode == "learn" for c in spec.condition_names()) and not ms.learn_cases
    if learns_online and (len(spec.seeds) > 1 or len(spec.condition_names()) > 1):
        raise BenchError("learning online (memory mode 'learn' without a learning split) runs one seed and one "
                         "condition: a case learned in one cell would be in memory for the next; use "
                         "memory.learn_cases to learn first, then score every cell frozen")
    own_pool = pool is None
    pool = pool or LlamaPool()
    memory = None
    try:
        built = Backends({c.id: c for c in [*cases, *learn_cases]}, pool, override=backends)
        built.check(spec)
        if spec.preflight:
            preflight(spec, skip_roles=list(backends or ()))
        if uses_memory:
            try:
                memory = open_memory(ms, read_only=not (ms.learn_cases or learns_online))
            except Exception as e:  # noqa: BLE001 - a memory that cannot be opened stops the run, named
                raise BenchError(f"memory at {ms.dir}: {e}") from None

        def stamp(plan: RunPlan, cases: str) -> dict[str, Any]:  # a header's provenance: its cell's models
            return run_provenance(cases_file=resolve_case_path(cases), models=plan.models, llms=plan.llms,
                                  command=opts.command or None, started=started)

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
        if spec.workers > 1 and all(is_in_process(rs.backend) for rs in spec.all_roles()):
            print("note: all roles run in process; their model calls are serialised, so "
                  "--workers > 1 gains little", file=sys.stderr)
        # learning online changes the memory case by case: one at a time keeps the run reproducible
        workers = 1 if learns_online else spec.workers
        rows = _run_cells(todo, opts.out, keep, workers=workers, total=total, progress=opts.progress,
                          fsync=opts.fsync, on_row=on_row)
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
        if memory is not None:
            memory.close()
        if own_pool:
            pool.close()


def _write_html(out: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """report.html and the transcripts (medsim.html_report). The run's results are all on
    disk by now: a report that cannot be written is said, not raised (``medsim view``
    writes it again)."""
    from medsim.html_report import write_html_report

    try:
        write_html_report(out, rows)
    except Exception as e:  # noqa: BLE001 - the results stand without their HTML view
        print(f"warning: {out / 'report.html'} not written ({type(e).__name__}: {e}); "
              f"`medsim view {out}` writes it again", file=sys.stderr)


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
    cell = lambda v: str(v).replace("|", "/").replace("\n", " ") if v is not None else "-"  # noqa: E731
    p = spec.protocol
    md = [f"# {title or 'medsim bench: ' + spec.cases}", "",
          f"- git revision: `{git_revision()}`",
          f"- seeds: {', '.join(map(str, spec.seeds))}; protocol {p.name} (doctor {p.doctor_mode}, "
          f"min gathering {p.min_gathering}, guards {'on' if p.guards else 'off'}), max turns {p.max_turns}",
          "- models: " + ", ".join(f"{r}={m}" for r, m in models.items()), "",
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
        md.append(f"| {cell(r['case_id'])} | {r.get('seed', 0)} | {cell(r.get('condition', 'base'))} | {r['status']} | "
                  f"{cell(r['correct'])} | {cell(r['diagnosis'])} | {cell(r['truth'])} | {r['turns']} | {r['n_tests']} |")
    if summary["errors"]:
        md += ["", "## Errors", ""] + [f"- `{cell(k)}`: {cell(v)}" for k, v in summary["error_cases"].items()]
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
