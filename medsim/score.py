"""``medsim score RUN_DIR``: re-score a finished run from its event logs, without
re-running a consultation (a run made with a small model re-judged by a big one).

Writes ``RUN_DIR/scores/<label>/``: ``scores.jsonl`` (one results row per case, keyed
like the run's), ``events/`` (the judge's calls and decisions), ``summary.json``,
``report.md``, ``results.csv``, ``report.html`` (whose rows link to the run's own
transcript pages and to the judge's log; no transcript is copied) and ``judge.toml``
(the judge that scored). The run's own files are not touched. Re-running finishes an
interrupted re-scoring.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.cases.registry import load_cases
from agents.events import EventLog, read_events
from agents.llm.base import LLM
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.names import slug
from agents.results import case_row, read_results, row_key, summarise, write_results_csv
from agents.scorers import Transcript, TranscriptError, score_case
from medsim.assemble import Backends, describe_roles, preflight_roles, role_params, scorers_for
from medsim.bench import BenchError, _row_line, write_report
from medsim.runlock import RunLock, RunLockError
from medsim.spec import RoleSpec, RunSpec, SpecError
from medsim.toml_out import dumps as toml_dumps

__all__ = ["ScoreOutcome", "rescore", "rescore_logs"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreOutcome:
    out: Path
    summary: dict[str, Any]
    original: dict[str, Any]
    flipped: list[tuple[str, Any, Any]]  # (case label, original verdict, new verdict)
    unfinished: list[str]  # logs of consultations that never finished (not scored)

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0


def rescore(run_dir: Path, judge: RoleSpec, *, label: str | None = None, pool: LlamaPool | None = None,
            backend: LLM | None = None, progress: bool = False,
            on_row: Callable[[dict[str, Any]], None] | None = None) -> ScoreOutcome:
    run_dir = Path(run_dir)
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        raise BenchError(f"{run_dir}: not a medsim bench run (no run.json)")
    from medsim.osce import rescore_osce, run_suite

    if run_suite(run_dir) == "osce":  # an OSCE run: its rubric judge re-scores the logs
        return rescore_osce(run_dir, judge, label=label, pool=pool, backend=backend, progress=progress,
                            on_row=on_row)  # type: ignore[return-value]
    try:
        spec = RunSpec.from_dict(json.loads(run_file.read_text(encoding="utf-8"))["spec"])
    except (OSError, ValueError, KeyError, SpecError) as e:
        raise BenchError(f"{run_file}: cannot read the run's spec ({e})") from None
    judged = replace(spec, roles={**spec.roles, "judge": judge}, conditions={
        n: replace(c, roles={**c.roles, "judge": judge}) for n, c in spec.conditions.items()})
    label = slug(label or describe_roles(judged)["judge"], 60)
    out = run_dir / "scores" / label
    cases, _ = load_cases(spec.cases, skip_invalid=True)
    by_id = {c.id: c for c in cases}
    own_pool = pool is None
    pool = pool or LlamaPool()
    lock: RunLock | None = None
    try:
        backends = Backends(by_id, pool, override={"judge": backend} if backend is not None else None)
        llm = backends.get("judge", judge, spec.seeds[0])
        if backend is None and judged.preflight:
            preflight_roles({"judge": judge})
        files = _all_logs(run_dir)
        lock = score_lock(out)  # one re-scoring at a time into scores/<label>
        (out / "events").mkdir(exist_ok=True)
        (out / "judge.toml").write_text(toml_dumps({"roles": {"judge": judge.to_dict()}}), encoding="utf-8")
        def score_one(key: tuple[str, int, str], transcript: Transcript, path: Path) -> dict[str, Any]:
            t0 = time.perf_counter()
            case = by_id[key[0]]
            # the cell's own scorers (AutoMedic's condition: the option letter and CARE, no judge)
            cell_spec = judged.for_condition(key[2]) if key[2] in judged.condition_names() else judged
            scorers = scorers_for(cell_spec, llm, role_params("judge", judge, key[1]),
                                  RetryPolicy(retries=judge.retries, backoff_s=judge.backoff_s))
            new: list[dict[str, Any]] = []
            with EventLog(out / "events" / path.name, keep=new) as log:
                score_case(case, transcript, scorers, log)
            row = case_row(case, list(transcript.events) + new, seed=key[1], condition=key[2],
                           events_file=f"scores/{label}/events/{path.name}", wall_s=time.perf_counter() - t0)
            logger.debug("%s (seed %s, %s): %s", case.id, key[1], key[2],
                         "correct" if row["correct"] else row["status"] if row["correct"] is None else "wrong")
            return row

        def known(key: tuple[str, int, str], path: Path) -> None:
            if key[0] not in by_id:
                raise BenchError(f"{path}: case '{key[0]}' is not in {spec.cases}")

        rows, unfinished = rescore_logs(files, out, score_one, check=known, progress=progress, on_row=on_row,
                                        progress_summary=summarise)
        summary = summarise(rows)
        write_summary(out, summary)
        title = f"medsim score: {run_dir.name} re-judged by {describe_roles(judged)['judge']}"
        write_report(out, judged, summary, rows, describe_roles(judged), title=title)
        write_results_csv(rows, out / "results.csv")
        _write_html(out, rows, run_dir, title, describe_roles(judged))
        original, flipped = flips(run_dir, rows, "correct", lambda k: f"{k[0]} (seed {k[1]}, {k[2]})")
        return ScoreOutcome(out, summary, summarise(original), flipped, unfinished)
    finally:
        if lock is not None:
            lock.release()
        if own_pool:
            pool.close()


def score_lock(out: Path) -> RunLock:
    """The held lock of a re-scoring's folder (``scores/<label>``, created): a second
    ``medsim score`` with the same judge label is refused at once, naming the holder, as a
    second bench run in one ``--out`` is (:mod:`medsim.runlock`)."""
    lock = RunLock(out)
    try:
        lock.acquire()
    except RunLockError as e:
        raise BenchError(str(e)) from None
    return lock


def _write_html(out: Path, rows: Sequence[dict[str, Any]], run_dir: Path, title: str, models: dict[str, str]) -> None:
    """The re-scoring's report.html, its rows linking to the run's transcripts. A page
    that cannot be written is said, not raised: the scores stand without it."""
    from medsim.html_report import write_html_report

    try:
        write_html_report(out, rows, title=title, links_to=run_dir, models=models)
    except Exception as e:  # noqa: BLE001 - as the bench's own report.html
        logger.warning("%s not written (%s: %s)", out / "report.html", type(e).__name__, e)


def _all_logs(run_dir: Path) -> list[Path]:
    files = sorted((run_dir / "events").glob("*.jsonl"))
    if not files:
        raise BenchError(f"{run_dir}: no event logs to score")
    return files


def write_summary(out: Path, summary: Mapping[str, Any]) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def flips(run_dir: Path, rows: Sequence[Mapping[str, Any]], field: str,
          name: Callable[[tuple[str, int, str]], str]) -> tuple[list[dict[str, Any]], list[tuple[str, Any, Any]]]:
    """The run's own rows, and each re-scored cell whose ``field`` differs from the run's
    (``(name(key), before, after)``), in the re-scoring's order."""
    original = {row_key(r): r for r in read_results(run_dir / "results.jsonl")}
    changed = [(name(k), original[k].get(field), r.get(field)) for r in rows for k in [row_key(r)]
               if k in original and original[k].get(field) != r.get(field)]
    return list(original.values()), changed


def rescore_logs(files: Sequence[Path], out: Path, score_one: Callable[[tuple[str, int, str], Transcript, Path], dict],
                 *, check: Callable[[tuple[str, int, str], Path], None] | None = None, progress: bool = False,
                 on_row: Callable[[dict[str, Any]], None] | None = None,
                 progress_summary: Callable[[list[dict[str, Any]]], Any] | None = None, unit: str = "log"
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The loop every re-scoring shares (a bench run's, an OSCE run's): for each log in
    ``files`` not yet in ``out/scores.jsonl``, ``score_one(key, transcript, log)`` scores
    it (writing ``out/events/<log>``) and returns its row, which is appended and flushed
    at once, so re-running finishes an interrupted re-scoring. ``check(key, log)`` may
    refuse a cell before it is parsed. Returns every row (kept ones first) and the names
    of the logs of cells that never finished (not scored; ``--resume`` re-runs them)."""
    scores_file = out / "scores.jsonl"
    keep = read_results(scores_file)
    done = {row_key(r) for r in keep}
    rows = list(keep)
    unfinished: list[str] = []
    bar = None
    if progress:
        from medsim.progress import Progress

        bar = Progress(len(files), initial=len(keep), unit=unit)
    try:
        with scores_file.open("a", encoding="utf-8") as fh:
            for path in files:
                ev = read_events(path)
                if not ev or ev[0].get("type") != "header":
                    unfinished.append(path.name)
                    if bar is not None:
                        bar.update()
                    continue
                h = ev[0]
                key = (h["case_id"], int(h.get("seed", 0)), h.get("condition", "base"))
                if key in done:
                    continue
                if check is not None:
                    check(key, path)
                try:
                    transcript = Transcript.from_events(ev, case_id=key[0])
                except TranscriptError:
                    unfinished.append(path.name)  # a cell a killed run left; --resume re-runs it
                    if bar is not None:
                        bar.update()
                    continue
                row = score_one(key, transcript, path)
                fh.write(_row_line(row))
                fh.flush()
                rows.append(row)
                if on_row:
                    on_row(row)
                if bar is not None:
                    bar.update(progress_summary(rows) if progress_summary is not None else None)
    finally:
        if bar is not None:
            bar.close()
    return rows, unfinished
