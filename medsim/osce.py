"""``medsim osce``: OSCE treatment-persuasion encounters as a benchmark run.

The run directory has the bench's layout and files: ``run.json`` (the spec, checked on
``--resume``, written by :func:`medsim.bench.prepare_out`), ``events/<slug>-<hash>.jsonl``
per (persona, seed, condition) (a header with the whole spec, then every event),
``results.jsonl`` (one row per finished cell, keyed by (case_id = persona id, seed,
condition), flushed as it finishes), ``results.csv``, ``summary.json``, ``report.md`` and
``report.html`` with ``transcripts/`` (a page per encounter, :mod:`medsim.osce_html`).
``--resume`` skips finished cells, ``--workers N`` runs cells at once, and ``medsim score
RUN_DIR`` re-scores the logs with another judge (:func:`rescore_osce`, dispatched from
:func:`medsim.score.rescore`). The roles are ``doctor``, ``patient`` and ``judge`` (the
judge's model also runs the stop classifier); each takes any backend spec, so
``--doctor-llm openai:URL --doctor-model NAME`` brings your own doctor over HTTP, and
``--doctor-llm a2a:URL`` an agent that speaks the A2A protocol (:mod:`agents.llm.a2a`).
``medsim bench --protocol osce`` runs the same (:func:`medsim.osce_cli.run_bench_osce`);
the cells run in the bench's loop (:func:`medsim.bench._run_cells`) and are re-scored in
``medsim score``'s (:func:`medsim.score.rescore_logs`).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from agents.events import CaseFinished, EventLog, Header, Scored
from agents.llm.a2a import A2ALLM
from agents.llm.base import LLM, GenerateParams
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import describe_spec
from agents.names import slug
from agents.provenance import git_revision, package_versions, run_provenance, utc_now
from agents.roles import role_defaults
from agents.results import row_key, write_results_csv
from agents.scorers import Transcript, score_case
from agents.suites.osce import Encounter, EncounterConfig, StopDetector, osce_cast
from agents.suites.osce_judge import OsceRubricScorer
from agents.suites.osce_personas import (SHIPPED, Persona, PersonaError, load_osce_cases, load_traits,
                                         parse_personas, resolve_persona)
from agents.suites.osce_results import osce_row, summarise_osce
from agents.suites.osce_rubric import WEIGHTS, RubricError, load_rubric
from agents.suites.osce_scripted import OsceScriptedLLM
from agents.textsafe import md_cell, md_text, printable
from medsim.assemble import Backends, preflight_roles
from agents.llm.url_secrets import redact_spec
from medsim.runlock import RunLock, RunLockError
from medsim.bench import BenchError, BenchOptions, drive, prepare_out
from medsim.bench import _run_cells as run_cells
from medsim.osce_cli import OSCE_ROLES
from medsim.score import flips, rescore_logs, score_lock, write_summary
from medsim.spec import RoleSpec, SpecError

__all__ = ["OsceSpec", "OsceOutcome", "OsceScoreOutcome", "build_osce_spec", "run_osce", "rescore_osce",
           "spec_from_osce_args", "run_osce_command", "OSCE_ROLES"]

# the suite's own generation defaults (a doctor explains at some length; the judge answers 10 keys)
_ROLE_DEFAULTS = {"doctor": {"max_tokens": 220}, "patient": {"max_tokens": 160, "temperature": 0.7},
                  "judge": {"max_tokens": 200, "temperature": 0.0}}
CONDITION = "base"
GUARD_RETRIES = 2  # a flagged reply is asked again this many times before the encounter fails
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OsceSpec:
    """Everything an OSCE run is. ``personas`` are resolved ids (``random`` already
    drawn), so the spec reproduces the run; ``requested`` is what was asked for."""

    personas: tuple[str, ...]
    requested: str
    roles: Mapping[str, RoleSpec]
    seeds: tuple[int, ...] = (0,)
    max_rounds: int = 10
    stop_classifier: bool = True
    cases: str = SHIPPED  # "shipped" or a directory of case files
    rubric: str | None = None  # None: medsim's own
    guards: bool = True  # reject and re-ask empty, role-breaking, echoing and looping replies
    workers: int = 1
    preflight: bool = True

    def to_dict(self) -> dict[str, Any]:
        d = {"suite": "osce", "personas": list(self.personas), "requested": self.requested, "cases": self.cases,
             "seeds": list(self.seeds), "max_rounds": self.max_rounds, "stop_classifier": self.stop_classifier,
             "guards": self.guards, "roles": {r: s.to_dict() for r, s in self.roles.items()},
             "workers": self.workers, "preflight": self.preflight, "weights": dict(WEIGHTS)}
        if self.rubric:
            d["rubric"] = self.rubric
        return d

    # identity keys added after runs were made, as those runs behaved (read on --resume)
    OLDER_DEFAULTS: ClassVar[dict[str, Any]] = {"guards": False}

    def identity(self) -> dict[str, Any]:
        d = self.to_dict()
        d.pop("workers"), d.pop("preflight")
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OsceSpec":
        if d.get("suite") != "osce":
            raise SpecError("not an OSCE run spec (no suite = 'osce')")
        roles = {r: RoleSpec.parse(r, dict(v), llm=v.get("backend", "scripted"), model=v.get("model"))
                 for r, v in (d.get("roles") or {}).items()}
        return cls(personas=tuple(d["personas"]), requested=d.get("requested", ""), roles=roles,
                   seeds=tuple(d.get("seeds", (0,))), max_rounds=int(d.get("max_rounds", 10)),
                   stop_classifier=bool(d.get("stop_classifier", True)), cases=d.get("cases", SHIPPED),
                   rubric=d.get("rubric"), guards=bool(d.get("guards", False)),  # absent: a run made before guards
                   workers=int(d.get("workers", 1)), preflight=bool(d.get("preflight", True)))


def build_osce_spec(personas: str, *, llm: str = "scripted", model: str | None = None,
                    roles: Mapping[str, Mapping[str, Any]] | None = None, seeds: Sequence[int] = (0,),
                    max_rounds: int = 10, stop_classifier: bool = True, cases: str | None = None,
                    rubric: str | None = None, guards: bool = True, workers: int = 1,
                    preflight: bool = True) -> OsceSpec:
    """Validate and resolve: the persona ids against the cases, the roles' backends, the
    rubric. Raises :class:`PersonaError`, :class:`RubricError` or :class:`SpecError`."""
    if max_rounds < 1:
        raise SpecError(f"max_rounds: must be at least 1, got {max_rounds} (--max-rounds)")
    if workers < 1:
        raise SpecError(f"workers: must be at least 1, got {workers} (--workers)")
    if not seeds or len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise SpecError(f"seeds: each seed once, 0 or more, got {list(seeds)}")
    case_dir = SHIPPED if cases in (None, SHIPPED) else str(Path(cases).expanduser().resolve())
    codes = list(load_osce_cases(case_dir))
    refs = parse_personas(personas, codes, seed=seeds[0])
    if rubric is not None:
        rubric = str(Path(rubric).expanduser().resolve())
        load_rubric(rubric)
    rs = {}
    for r in OSCE_ROLES:
        over = dict((roles or {}).get(r) or {})
        d = {**_ROLE_DEFAULTS[r], **{k: v for k, v in over.items() if v is not None}}
        rs[r] = RoleSpec.parse(r, d, llm=llm, model=model)
        if rs[r].backend in ("human", "none"):
            raise SpecError(f"roles.{r}.backend: '{rs[r].backend}' cannot play the {r} of an OSCE run")
    return OsceSpec(personas=tuple(r.id for r in refs), requested=personas, roles=rs, seeds=tuple(seeds),
                    max_rounds=max_rounds, stop_classifier=stop_classifier, cases=case_dir, rubric=rubric,
                    guards=guards, workers=workers, preflight=preflight)


def _params(role: str, rs: RoleSpec, seed: int) -> GenerateParams:
    return GenerateParams(temperature=rs.temperature, max_tokens=rs.max_tokens, seed=seed, timeout_s=rs.timeout_s)


def _policy(rs: RoleSpec) -> RetryPolicy:
    return RetryPolicy(retries=rs.retries, backoff_s=rs.backoff_s)


class _Models:
    """Backends by (role, seed): the scripted OSCE fake for ``scripted``, else the
    bench's backends (local, gguf:, openai:, a2a:); ``override`` replaces roles (tests)."""

    def __init__(self, pool: LlamaPool, override: Mapping[str, LLM] | None = None):
        self.backends = Backends({}, pool, override=override)
        self.override = dict(override or {})
        self._fakes: dict[int, LLM] = {}

    def get(self, role: str, rs: RoleSpec, seed: int) -> LLM:
        if role in self.override:
            return self.override[role]
        if rs.backend == "scripted":
            return self._fakes.setdefault(seed, OsceScriptedLLM(seed=seed))
        return self.backends.get(role, rs, seed)


@dataclass
class _Plan:
    spec: OsceSpec
    seed: int
    llms: dict[str, LLM]
    rubric: Any
    provenance: dict = field(default_factory=dict)
    condition: str = CONDITION  # one condition: the bench's cell loop names event files by it

    @property
    def models(self) -> dict[str, str]:
        return {r: (self.llms[r].name if isinstance(self.llms.get(r), A2ALLM)  # a2a:URL#NAME@VERSION, once checked
                    else describe_spec(rs.backend, rs.model) if rs.backend != "scripted" else "scripted-osce")
                for r, rs in self.spec.roles.items()}


def run_cell(plan: _Plan, persona: Persona, path: Path, *, events_file: str) -> dict[str, Any]:
    """Encounter, rubric scoring and the row of one (persona, seed); every event goes to
    ``path``. A bug in one cell is recorded as that cell's error."""
    t0 = time.perf_counter()
    spec, seed = plan.spec, plan.seed
    events: list[dict[str, Any]] = []
    roles = spec.roles
    with EventLog(path, keep=events) as log:
        log.emit(Header(case_id=persona.id, case_source=persona.case.source, seed=seed, condition=CONDITION,
                        spec=spec.identity(), models=plan.models,  # not workers: the same log either way
                        git_revision=git_revision(),
                        packages=package_versions(), **plan.provenance))
        def build() -> Encounter:
            cast = osce_cast(persona, plan.llms, {r: _params(r, roles[r], seed) for r in roles},
                             {r: _policy(roles[r]) for r in roles}, log, max_rounds=spec.max_rounds,
                             guard_retries=GUARD_RETRIES if spec.guards else None)
            stop = StopDetector(plan.llms["judge"] if spec.stop_classifier else None,
                                GenerateParams(temperature=0.0, max_tokens=20, seed=seed,
                                               timeout_s=roles["judge"].timeout_s), _policy(roles["judge"]))
            return Encounter(persona, cast, EncounterConfig(spec.max_rounds, spec.stop_classifier), log, stop)

        drive(build, log)
        scorer = OsceRubricScorer(plan.llms["judge"], _params("judge", roles["judge"], seed), _policy(roles["judge"]),
                                  plan.rubric)
        try:
            score_case(persona, Transcript.from_events(events, case_id=persona.id), [scorer], log)
        except Exception as e:  # noqa: BLE001 - recorded as the cell's error
            log.emit(Scored(scorer="osce", value=None,
                            details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
        row = osce_row(events, seed=seed, condition=CONDITION, events_file=events_file,
                       wall_s=time.perf_counter() - t0, case_id=persona.id)
        log.emit(CaseFinished(status=row["status"], turns=row["turns"], diagnosis=None, correct=None))
    return row


@dataclass(frozen=True)
class OsceOutcome:
    summary: dict[str, Any]
    out: Path

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0


def run_osce(spec: OsceSpec, opts: BenchOptions, *, backends: Mapping[str, LLM] | None = None,
             pool: LlamaPool | None = None, on_row: Callable[[dict[str, Any]], None] | None = None) -> OsceOutcome:
    """Run (or resume) an OSCE run into ``opts.out``. Nothing is written before the
    cases, traits, rubric, models and servers have been checked."""
    started = utc_now()
    cases = load_osce_cases(spec.cases)
    traits = load_traits()
    rubric = load_rubric(spec.rubric)
    refs = parse_personas(",".join(spec.personas), list(cases))
    own_pool = pool is None
    pool = pool or LlamaPool()
    lock = RunLock(opts.out)  # one process at a time in OUT (medsim.runlock)
    try:
        models = _Models(pool, backends)
        plans: dict[int, _Plan] = {}
        for seed in spec.seeds:
            plans[seed] = _Plan(spec, seed, {r: models.get(r, rs, seed) for r, rs in spec.roles.items()}, rubric)
        first_llms = plans[spec.seeds[0]].llms  # an A2A agent's backend keeps its card (the models record it)
        if spec.preflight:
            preflight_roles({r: rs for r, rs in spec.roles.items() if r not in (backends or {})}, first_llms)
        first = plans[spec.seeds[0]]
        prov = run_provenance(cases_file=None, models=first.models, llms=first.llms, command=opts.command or None,
                              started=started)
        try:
            lock.acquire()  # before anything in OUT is read or written
        except RunLockError as e:
            raise BenchError(str(e)) from None
        keep = prepare_out(spec, opts, prov)  # type: ignore[arg-type] - it reads identity() and to_dict()
        for p in plans.values():
            p.provenance = prov
        done = {row_key(r) for r in keep}
        cells = [(plans[s], resolve_persona(ref, cases, traits, seed=s)) for s in spec.seeds for ref in refs]
        todo = [(p, per) for p, per in cells if (per.id, p.seed, CONDITION) not in done]
        # the bench's cell loop: events/, results.jsonl flushed row by row, workers, progress
        rows = run_cells(todo, opts.out, keep, workers=spec.workers, total=len(cells), progress=opts.progress,
                         fsync=opts.fsync, on_row=on_row, desc="encounter", cell=run_cell, progress_summary=None)
        order = {(per.id, p.seed, CONDITION): i for i, (p, per) in enumerate(cells)}
        rows.sort(key=lambda r: order.get(row_key(r), len(order)))
        summary = summarise_osce(rows)
        out = opts.out
        write_summary(out, summary)
        write_osce_report(out, spec, summary, rows, first.models)  # report.md, results.csv, report.html
        return OsceOutcome(summary, out)
    finally:
        if own_pool:
            pool.close()
        lock.release()


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row for results.csv: the per-round totals as one text field, the rest as it is."""
    r = dict(row)
    r["per_round"] = [f"r{x['round']}={x['total']}" for x in row.get("per_round") or []]
    r.pop("criteria", None)
    return r


# -- the report ----------------------------------------------------------------------------
def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)


def _cell(v: Any) -> str:
    return md_cell(_f(v))


def write_osce_report(out: Path, spec: OsceSpec, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                      models: Mapping[str, str], title: str | None = None, *, links_to: Path | None = None) -> None:
    """``out``/report.md, results.csv and report.html (with a transcript page per
    encounter: :mod:`medsim.osce_html`). ``links_to``: ``out`` is a re-scoring of that
    run, whose transcript pages report.html links to."""
    _write_osce_markdown(out, spec, summary, rows, models, title)
    write_results_csv([_flat(r) for r in rows], out / "results.csv")
    from medsim.osce_html import write_osce_html

    try:
        write_osce_html(out, rows, title=title, run={**_run_json(links_to or out), "spec": spec.to_dict()},
                        models=models, links_to=links_to)
    except Exception as e:  # noqa: BLE001 - the results stand without their HTML view (as a bench run's)
        logger.warning("%s not written (%s: %s); `medsim view %s` writes it again", out / "report.html",
                       type(e).__name__, e, links_to or out)


def _run_json(run_dir: Path) -> dict[str, Any]:
    try:
        run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return run if isinstance(run, dict) else {}


def _write_osce_markdown(out: Path, spec: OsceSpec, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                         models: Mapping[str, str], title: str | None = None) -> None:
    s = summary
    md = [f"# {md_text(title or 'medsim osce: ' + spec.requested)}", "",
          f"- git revision: `{git_revision()}`",
          f"- personas: {len(spec.personas)} ({md_text(spec.requested)}); seeds: {', '.join(map(str, spec.seeds))}; "
          f"max rounds {spec.max_rounds}; stop classifier {'on' if spec.stop_classifier else 'off (rules only)'}; "
          f"guards {'on' if spec.guards else 'off'}",
          f"- cases: {md_text(spec.cases)}; rubric: {md_text(spec.rubric or 'medsim (agents/suites/osce_data/rubric.csv)')}",
          "- models: " + ", ".join(f"{md_text(r)}={md_text(m)}" for r, m in models.items()),
          "- scores: per category met / (met + not met) x 10 over the conversation so far (a met criterion stays "
          "met); '-' where no criterion of the category was relevant; total = empathy 30%, persuasion 40%, "
          "safety 30% over the categories that have a score",
          "- strengths, weaknesses, key moments and suggestions: rule-derived from the criteria (no model call)", "",
          "## Summary", "",
          f"- encounters: {s['cases']} (scored {s['scored']}, failed {s['failed']}, errors {s['errors']})",
          f"- outcome: accepted {s['accepted']}, left {s['left']}, undecided {s['undecided']} "
          f"(acceptance {_f(None if s['acceptance_rate'] is None else 100 * s['acceptance_rate'])}%)",
          f"- mean scores: empathy {_f(s['mean_empathy'])}, persuasion {_f(s['mean_persuasion'])}, "
          f"safety {_f(s['mean_safety'])}, total {_f(s['mean_total'])}; mean rounds {_f(s['mean_rounds'])}",
          f"- tokens: prompt {s['prompt_tokens']}, completion {s['completion_tokens']}", ""]
    for name, key in (("case", "by_case"), ("MBTI type", "by_mbti")):
        md += [f"## By {name}", "", f"| {name} | n | accepted | empathy | persuasion | safety | total |",
               "|---|---|---|---|---|---|---|"]
        for k, b in s[key].items():
            md.append(f"| {_cell(k)} | {b['scored']} | {b['accepted']} | {_f(b['mean_empathy'])} | "
                      f"{_f(b['mean_persuasion'])} | {_f(b['mean_safety'])} | {_f(b['mean_total'])} |")
        md.append("")
    md += ["## Encounters", "", "| persona | seed | gender | outcome | rounds | empathy | persuasion | safety | total "
           "| total by round |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = f"{r.get('gender') or '-'}{' (drawn)' if r.get('gender_drawn') else ''}"
        by_round = " ".join(_f(x.get("total")) for x in r.get("per_round") or [])
        md.append(f"| {_cell(r['case_id'])} | {r.get('seed', 0)} | {_cell(g)} | {_cell(r.get('outcome') or r['status'])} | "
                  f"{r.get('rounds')} | {_f(r.get('empathy'))} | {_f(r.get('persuasion'))} | {_f(r.get('safety'))} | "
                  f"{_f(r.get('total'))} | {by_round} |")
    md += ["", "## Feedback", ""]
    for r in rows:
        if r.get("error"):
            continue
        md += [f"### {md_text(r['case_id'])} (seed {r.get('seed', 0)}): {md_text(r.get('outcome') or r['status'])}", ""]
        for key, label in (("strengths", "Strengths"), ("weaknesses", "Weaknesses"), ("key_moments", "Key moments"),
                           ("suggestions", "Suggestions")):
            items = r.get(key) or []
            md += [f"**{label}**", ""] + ([f"- {_cell(x)}" for x in items] or ["- none"]) + [""]
    failed = [r for r in rows if not r.get("error") and r.get("status") == "failed"]
    if failed:
        md += ["## Failed encounters", ""] + [f"- {_cell(r['case_id'])} (seed {r.get('seed', 0)}, round "
                                              f"{r.get('rounds')}): {_cell(r.get('failure'))}" for r in failed] + [""]
    if s["errors"]:
        md += ["## Errors", ""] + [f"- {_cell(k)}: {_cell(v)}" for k, v in s["error_cases"].items()]
    # model text (the patient's words in key moments) with its controls and bidi marks escaped
    (out / "report.md").write_text(printable("\n".join(md)) + "\n", encoding="utf-8")


# -- re-scoring ------------------------------------------------------------------------------
@dataclass(frozen=True)
class OsceScoreOutcome:
    out: Path
    summary: dict[str, Any]
    original: dict[str, Any]
    flipped: list[tuple[str, Any, Any]]  # (cell, the run's total, this judge's total) where they differ
    unfinished: list[str]

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0

    def lines(self) -> list[str]:
        s, b = self.summary, self.original
        out = [f"re-scored {s['cases']} encounters -> {self.out}",
               f"  this judge:      empathy {_f(s['mean_empathy'])}, persuasion {_f(s['mean_persuasion'])}, "
               f"safety {_f(s['mean_safety'])}, total {_f(s['mean_total'])}, {s['errors']} errors",
               f"  the run's judge: empathy {_f(b['mean_empathy'])}, persuasion {_f(b['mean_persuasion'])}, "
               f"safety {_f(b['mean_safety'])}, total {_f(b['mean_total'])}"]
        out += [f"  {label}: total {_f(a)} -> {_f(c)}" for label, a, c in self.flipped]
        if self.unfinished:
            out.append(f"  {len(self.unfinished)} log(s) of unfinished encounters not scored (finish the run with --resume)")
        return out


def run_suite(run_dir: Path) -> str | None:
    """The suite a run directory holds ("osce"), or None for a bench run."""
    try:
        spec = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8")).get("spec") or {}
    except (OSError, ValueError, AttributeError):
        return None
    return spec.get("suite") if isinstance(spec, dict) else None


def rescore_osce(run_dir: Path, judge: RoleSpec, *, label: str | None = None, pool: LlamaPool | None = None,
                 backend: LLM | None = None, progress: bool = False,
                 on_row: Callable[[dict[str, Any]], None] | None = None) -> OsceScoreOutcome:
    """Re-judge every finished encounter's rounds from its log into
    ``RUN_DIR/scores/<label>/`` (scores.jsonl, events/, summary.json, report.md,
    results.csv, report.html linking to the run's transcripts, judge.toml); re-running
    finishes an interrupted re-scoring."""
    from medsim.toml_out import dumps as toml_dumps

    run_dir = Path(run_dir)
    try:
        spec = OsceSpec.from_dict(json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["spec"])
    except (OSError, ValueError, KeyError, SpecError) as e:
        raise BenchError(f"{run_dir / 'run.json'}: cannot read the run's spec ({e})") from None
    if judge.max_tokens == role_defaults("judge").max_tokens:  # the diagnosis judge's default: too few for 10 keys
        judge = replace(judge, max_tokens=_ROLE_DEFAULTS["judge"]["max_tokens"])
    judged = replace(spec, roles={**spec.roles, "judge": judge})
    label = slug(label or describe_spec(judge.backend, judge.model), 60)
    out = run_dir / "scores" / label
    rubric = load_rubric(spec.rubric)
    files = sorted((run_dir / "events").glob("*.jsonl"))
    if not files:
        raise BenchError(f"{run_dir}: no event logs to score")
    own_pool = pool is None
    pool = pool or LlamaPool()
    lock: RunLock | None = None
    try:
        models = _Models(pool, {"judge": backend} if backend is not None else None)
        if backend is None and spec.preflight:
            preflight_roles({"judge": judge})
        lock = score_lock(out)  # one re-scoring at a time into scores/<label>
        (out / "events").mkdir(parents=True, exist_ok=True)
        (out / "judge.toml").write_text(toml_dumps({"roles": {"judge": judge.to_dict()}}), encoding="utf-8")

        def score_one(key: tuple[str, int, str], transcript: Transcript, path: Path) -> dict[str, Any]:
            t0 = time.perf_counter()
            llm = models.get("judge", judge, key[1])
            scorer = OsceRubricScorer(llm, _params("judge", judge, key[1]), _policy(judge), rubric)
            new: list[dict[str, Any]] = []
            with EventLog(out / "events" / path.name, keep=new) as log:
                try:
                    score_case(None, transcript, [scorer], log)
                except Exception as e:  # noqa: BLE001 - recorded as the cell's error
                    log.emit(Scored(scorer="osce", value=None,
                                    details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
            return osce_row(list(transcript.events) + new, seed=key[1], condition=key[2],
                            events_file=f"scores/{label}/events/{path.name}", wall_s=time.perf_counter() - t0,
                            case_id=key[0])

        # the loop medsim score runs for a bench run: scores.jsonl row by row, resumable
        rows, unfinished = rescore_logs(files, out, score_one, progress=progress, on_row=on_row)
        summary = summarise_osce(rows)
        write_summary(out, summary)
        write_osce_report(out, judged, summary, rows, {r: describe_spec(rs.backend, rs.model) for r, rs in judged.roles.items()},
                          title=f"medsim score: {run_dir.name} re-judged by {describe_spec(judge.backend, judge.model)}",
                          links_to=run_dir)
        original, flipped = flips(run_dir, rows, "total", lambda k: f"{k[0]} (seed {k[1]})")
        return OsceScoreOutcome(out, summary, summarise_osce(original), flipped, unfinished)
    finally:
        if lock is not None:
            lock.release()
        if own_pool:
            pool.close()


# -- the command ------------------------------------------------------------------------------
def spec_from_osce_args(args: argparse.Namespace) -> OsceSpec:
    """The spec of ``medsim osce``'s arguments, or of ``medsim bench --protocol osce``'s
    (whose flags default to None: the defaults below are ``medsim osce``'s)."""
    roles: dict[str, dict[str, Any]] = {}
    for r in OSCE_ROLES:
        d = {"backend": getattr(args, f"{r}_llm"), "model": getattr(args, f"{r}_model"), "timeout_s": args.timeout,
             "retries": args.retries, "backoff_s": getattr(args, "backoff", None)}
        roles[r] = {k: v for k, v in d.items() if v is not None}
    if args.seed is not None and args.seeds is not None:
        raise SpecError("give --seed or --seeds, not both")
    seeds = args.seeds or [args.seed or 0]
    if getattr(args, "repeats", None) is not None:  # bench's --repeats R: seeds 0..R-1
        if args.repeats < 1:
            raise SpecError(f"repeats: must be at least 1, got {args.repeats} (--repeats)")
        seeds = list(range(args.repeats))
    return build_osce_spec(args.personas or "random", llm=args.llm or "scripted", model=args.model, roles=roles,
                           seeds=seeds, max_rounds=10 if args.max_rounds is None else args.max_rounds,
                           stop_classifier=not args.no_stop_classifier, cases=args.osce_cases, rubric=args.rubric,
                           guards=not args.no_guards, workers=1 if args.workers is None else args.workers,
                           preflight=not args.no_preflight)


def run_osce_command(args: argparse.Namespace) -> int:
    try:
        spec = spec_from_osce_args(args)
        doc = spec.roles["doctor"].backend
        out = args.out or Path("runs") / f"osce-{slug(spec.requested, 30)}-{slug(redact_spec(doc), 30)}-s{spec.seeds[0]}"
        o = run_osce(spec, BenchOptions(out=out, resume=args.resume, retry_errors=args.retry_errors,
                                        progress=not args.no_progress, command=getattr(args, "argv", ())))
    except (PersonaError, RubricError) as e:
        print(f"medsim: error: {e}", file=sys.stderr)
        return 2
    s = o.summary
    print(f"{s['cases']} encounters: accepted {s['accepted']}, left {s['left']}, undecided {s['undecided']}; "
          f"mean empathy {_f(s['mean_empathy'])}, persuasion {_f(s['mean_persuasion'])}, safety {_f(s['mean_safety'])}, "
          f"total {_f(s['mean_total'])}; {s['failed']} failed, {s['errors']} errors -> {o.out}")
    return o.exit_code
