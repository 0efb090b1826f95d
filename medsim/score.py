"""``medsim score RUN_DIR``: re-score a finished run from its event logs, without
re-running a consultation (a run made with a small model re-judged by a big one).

Writes ``RUN_DIR/scores/<label>/``: ``scores.jsonl`` (one results row per case, keyed
like the run's), ``events/`` (the judge's calls and decisions), ``summary.json``,
``report.md``, ``results.csv``, ``report.html`` (whose rows link to the run's own
transcript pages and to the judge's log; no transcript is copied) and ``judge.toml``
(the judge that scored). The run's own files are not touched. Re-running finishes an
interrupted re-scoring.

``scorers``: re-run only these (``diagnosis,differential``: the judge's verdicts, in
minutes, without the fidelity checker's call per utterance); every other scorer's
figures are the run's own, copied from its logs and named as such in ``judge.toml``.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.events import EventLog, Scored, read_events
from agents.llm.base import LLM, LLMError
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import check_backend_spec
from agents.names import slug
from agents.results import read_results, results_line, row_key
from agents.scorers import Transcript, TranscriptError, score_case
from medsim.assemble import Backends, describe_roles, plan_for, preflight_roles
from medsim.bench import BenchError, write_outputs
from medsim.runlock import RunLock, RunLockError
from medsim.spec import RoleSpec, RunSpec, SpecError
from medsim.study_state import refuse_in_progress
from medsim.toml_out import dumps as toml_dumps

__all__ = ["ScoreOutcome", "carried_scores", "rescore", "rescore_logs", "score_lock", "flips"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreOutcome:
    out: Path
    summary: dict[str, Any]
    original: dict[str, Any]
    flipped: list[tuple[str, Any, Any]]  # (cell label, the run's figure, this judge's) where they differ
    unfinished: list[str]  # logs of cells that never finished (not scored)
    headline: str = ""  # the suite's line for the new scores
    before: str = ""  # the suite's line for the run's own
    unit_name: str = "case"  # what a cell is called (case, encounter)

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0


def _judge_spec(judge: RoleSpec | Mapping[str, Any], spec: RunSpec) -> RoleSpec:
    """A judge given as a role table (the command line's) is resolved with the run's
    suite's defaults for it (OSCE's judge answers ten keys: 200 tokens)."""
    if isinstance(judge, RoleSpec):
        return judge
    d = {k: v for k, v in judge.items() if v is not None}
    suite = spec.suite
    return RoleSpec.parse("judge", d, llm=d.pop("backend", "scripted"), model=d.pop("model", None),
                          defaults=suite.role_defaults("judge"), people=False, suite=suite.name)


def rescore(run_dir: Path, judge: RoleSpec | Mapping[str, Any], *, label: str | None = None,
            pool: LlamaPool | None = None, backend: LLM | None = None, progress: bool = False,
            on_row: Callable[[dict[str, Any]], None] | None = None,
            scorers: Sequence[str] | None = None) -> ScoreOutcome:
    """Re-run the scorers of every finished cell of ``run_dir`` (any suite) with
    ``judge`` into ``RUN_DIR/scores/<label>/``; the run's own files are not touched.
    ``scorers``: only these are re-run, the others' ``scored`` events are copied from the
    run's logs (None: all are re-run). ``backend``: the judge's model, injected (tests)."""
    run_dir = Path(run_dir)
    run_file = run_dir / "run.json"
    if not isinstance(judge, RoleSpec):  # a judge that cannot be is said first (before the run is read)
        check_backend_spec(str(judge.get("backend")), judge.get("model"))
    if not run_file.is_file():
        raise BenchError(f"{run_dir}: not a medsim bench run (no run.json)")
    refuse_in_progress(run_dir, "scoring it")
    try:
        spec = RunSpec.from_dict(json.loads(run_file.read_text(encoding="utf-8"))["spec"])
    except (OSError, ValueError, KeyError, SpecError) as e:
        raise BenchError(f"{run_file}: cannot read the run's spec ({e})") from None
    judge = _judge_spec(judge, spec)
    if "judge" not in spec.roles:
        raise BenchError(f"{run_dir}: the {spec.suite.name} suite has no judge to replace")
    judged = replace(spec, roles={**spec.roles, "judge": judge}, conditions={
        n: replace(c, roles={**c.roles, "judge": judge}) for n, c in spec.conditions.items()})
    suite = judged.suite
    only = tuple(dict.fromkeys(scorers)) if scorers is not None else None
    if only is not None and not only:
        raise BenchError("--scorers names no scorer")
    # a partial re-scoring gets a folder of its own by default (its rows are not a whole one's)
    label = slug(label, 60) if label is not None else \
        slug(describe_roles(judged)["judge"], 60) + ("-" + slug("+".join(only), 60) if only else "")
    out = run_dir / "scores" / label
    units = suite.load(replace(judged, skip_invalid=True))
    files = sorted((run_dir / "events").glob("*.jsonl"))
    if not files:
        raise BenchError(f"{run_dir}: no event logs to score")
    own_pool = pool is None
    pool = pool or LlamaPool(jump_forward=judged.jump_forward)
    lock: RunLock | None = None
    try:
        backends = Backends.for_run(judged, units, pool, override={"judge": backend} if backend is not None else None)
        plans: dict[tuple[str, int], Any] = {}
        for cond in judged.condition_names():  # every role the logs replayed needs no model: the judge's is built
            for seed in judged.seeds:
                plans[(cond, seed)] = plan_for(judged, cond, seed, _JudgeOnly(backends))
        names = [s.name for s in next(iter(plans.values())).scorers]
        if only is not None and (unknown := [n for n in only if n not in names]):
            raise BenchError(f"{run_dir}: no scorer named {', '.join(map(repr, unknown))} in the "
                             f"{suite.name} suite (its scorers: {', '.join(names)})")
        carried = [n for n in names if only is not None and n not in only]
        if backend is None and judged.preflight:
            preflight_roles({"judge": judge})
        lock = score_lock(out)  # one re-scoring at a time into scores/<label>
        (out / "events").mkdir(exist_ok=True)
        record: dict[str, Any] = {"roles": {"judge": judge.to_dict()}}
        if carried:  # whose figures are not this judge's
            record["scorers"] = {"rescored": [n for n in names if n not in carried], "carried_from_run": carried}
        (out / "judge.toml").write_text(toml_dumps(record), encoding="utf-8")

        def score_one(key: tuple[str, int, str], transcript: Transcript, path: Path) -> dict[str, Any]:
            t0 = time.perf_counter()
            plan = plans.get((key[2], key[1])) or next(iter(plans.values()))
            unit = units.by_id(key[1])[key[0]]
            new: list[dict[str, Any]] = []
            with EventLog(out / "events" / path.name, keep=new) as log:
                for e in carried_scores(read_events(path), carried) if carried else ():  # the log's tail: read only then
                    log.emit(e)
                try:
                    score_case(unit.item, transcript, [s for s in plan.scorers if s.name not in carried], log)
                except Exception as e:  # noqa: BLE001 - recorded as the cell's error
                    log.emit(Scored(scorer=plan.scorers[0].name if plan.scorers else suite.name, value=None,
                                    details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
            row = plan.suite.row(unit, list(transcript.events) + new, seed=key[1], condition=key[2],
                                 events_file=f"scores/{label}/events/{path.name}", wall_s=time.perf_counter() - t0)
            logger.debug("%s (seed %s, %s): %s", key[0], key[1], key[2], row["status"])
            return row

        def known(key: tuple[str, int, str], path: Path) -> None:
            if key[0] not in units.by_id(key[1]):
                raise BenchError(f"{path}: {suite.unit_name} '{key[0]}' is not in this run's {suite.unit_name}s")

        rows, unfinished = rescore_logs(files, out, score_one, check=known, progress=progress, on_row=on_row,
                                        progress_summary=suite.progress, unit=suite.unit_name)
        summary = suite.summary(rows)
        models = describe_roles(judged)
        title = f"medsim score: {run_dir.name} re-judged by {models['judge']}"
        write_outputs(out, judged, summary, rows, models, title=title, links_to=run_dir)
        original, flipped = flips(run_dir, rows, suite.verdict, lambda k: f"{k[0]} (seed {k[1]}, {k[2]})")
        before = suite.summary(original)
        return ScoreOutcome(out, summary, before, flipped, unfinished, suite.headline(summary), suite.headline(before),
                            suite.unit_name)
    finally:
        if lock is not None:
            lock.release()
        if own_pool:
            pool.close()


def carried_scores(events: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[Scored]:
    """The run's own ``scored`` events of the scorers ``names`` (those a partial
    re-scoring does not re-run), to stand in the re-scored log as they were."""
    return [Scored(scorer=e["scorer"], value=e.get("value"), details=dict(e.get("details") or {}))
            for e in events if e.get("type") == "scored" and e.get("scorer") in names]


class _JudgeOnly:
    """Backends for a re-scoring's plans: the judge's model is built; every other role
    (whose turns are in the logs) gets none."""

    def __init__(self, backends: Backends):
        self.backends = backends

    def get(self, role: str, rs: RoleSpec, seed: int) -> LLM:
        if role == "judge":
            return self.backends.get(role, rs, seed)
        return _NoCalls(role)


class _NoCalls:
    name = "none"

    def __init__(self, role: str):
        self.role = role

    def generate(self, messages: Any, params: Any, ctx: Any) -> Any:
        raise LLMError(f"re-scoring calls no {self.role} model", backend="none", transient=False)


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
                fh.write(results_line(row))
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
