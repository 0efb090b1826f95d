"""``medsim bench``: headless batch over a case set.

Writes under OUT: ``events/<case_id>.jsonl`` (header + every event), ``results.jsonl``
(one row per finished case, flushed per case), ``summary.json``, ``report.md`` and
``run.json`` (the run's identity, checked on ``--resume``). Many cases run at once
(``workers``); calls to one in-process model are serialised by its lock.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from agents.cases.model import Case, CaseRecordError
from agents.cases.registry import load_cases
from agents.consultation import ConsultationConfig, ConsultationResult, RoleModels, run_consultation
from agents.events import CaseError, CaseFinished, EventLog, Header
from agents.llm.base import LLM
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.llm.spec import build_role_backends, describe_spec, is_in_process
from agents.provenance import git_revision, package_versions
from agents.stats import wilson_interval

__all__ = ["BenchConfig", "BenchError", "consultation_config", "BenchOutcome", "run_bench", "summarise", "read_results"]

ROLE_NAMES = ("doctor", "patient", "measurement", "judge")


class BenchError(RuntimeError):
    """A problem with the run itself (bad output dir, resume mismatch); nothing ran."""


@dataclass(frozen=True)
class BenchConfig:
    cases: str
    out: Path
    llm: Mapping[str, str] = field(default_factory=lambda: {r: "scripted" for r in ROLE_NAMES})
    model: str | None = None
    limit: int | None = None
    workers: int = 1
    seed: int = 0
    max_turns: int = 20
    min_gathering: int = 3
    protocol: str = "medsim"  # or "agentclinic" (markers, its prompt style, no min-gathering, no detectors)
    doctor_mode: str | None = None  # structured | markers; None: structured unless the doctor is a server
    guards: bool = True
    resume: bool = False
    retry_errors: bool = False
    skip_invalid: bool = False
    progress: bool = True
    retries: int = 3
    backoff_s: float = 1.0
    timeout_s: float = 120.0

    def identity(self) -> dict[str, Any]:
        """What must match for --resume to continue the same run."""
        return {"cases": self.cases, "llm": dict(self.llm), "model": self.model, "limit": self.limit,
                "seed": self.seed, "max_turns": self.max_turns, "min_gathering": self.min_gathering,
                "protocol": self.protocol, "doctor_mode": self.doctor_mode, "guards": self.guards}


@dataclass(frozen=True)
class BenchOutcome:
    summary: dict[str, Any]
    out: Path
    invalid_records: list[CaseRecordError]

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["errors"] else 0


def consultation_config(*, protocol: str = "medsim", doctor_mode: str | None = None, doctor_spec: str = "scripted",
                        max_turns: int = 20, min_gathering: int = 3, guards: bool = True,
                        retry: RetryPolicy = RetryPolicy()) -> ConsultationConfig:
    """The consultation settings a run uses. ``protocol="agentclinic"`` is AgentClinic's
    protocol for comparison; the default doctor mode is structured, except for server
    backends (not every server constrains to a JSON schema), which use markers."""
    if protocol == "agentclinic":
        return ConsultationConfig.agentclinic(max_turns=max_turns, retry=retry,
                                              **({"doctor_mode": doctor_mode} if doctor_mode else {}))
    if protocol != "medsim":
        raise BenchError(f"unknown protocol '{protocol}' (medsim or agentclinic)")
    mode = doctor_mode or ("markers" if doctor_spec.startswith("openai:") else "structured")
    return ConsultationConfig(max_turns=max_turns, min_gathering=min_gathering, retry=retry, doctor_mode=mode,
                              guard_retries=2 if guards else None)


def _consultation_config(cfg: BenchConfig) -> ConsultationConfig:
    base = consultation_config(protocol=cfg.protocol, doctor_mode=cfg.doctor_mode, doctor_spec=cfg.llm["doctor"],
                               max_turns=cfg.max_turns, min_gathering=cfg.min_gathering, guards=cfg.guards,
                               retry=RetryPolicy(retries=cfg.retries, backoff_s=cfg.backoff_s))
    base = replace(base, **{r: replace(getattr(base, r), timeout_s=cfg.timeout_s)
                            for r in ("doctor", "patient", "measurement", "judge")})
    return base.with_seed(cfg.seed)


def _header_config(cfg: BenchConfig, cc: ConsultationConfig) -> dict[str, Any]:
    d = asdict(cc)
    for r in ("doctor", "patient", "measurement", "judge"):
        d[r]["stop"] = list(d[r]["stop"])
    return {"cases": cfg.cases, "llm": dict(cfg.llm), "consultation": d}


def _row(result: ConsultationResult, wall_s: float) -> dict[str, Any]:
    return {
        "case_id": result.case_id, "status": result.status, "diagnosis": result.diagnosis,
        "truth": result.truth, "correct": result.correct, "error": result.error, "failure": result.failure,
        "turns": result.turns,
        "tests_requested": result.tests_requested, "n_tests": len(result.tests_requested),
        "judge_method": result.judge_method, "llm_calls": result.llm_calls,
        "prompt_tokens": result.prompt_tokens, "prompt_tokens_evaluated": result.prompt_tokens_evaluated,
        "completion_tokens": result.completion_tokens, "model_latency_s": result.model_latency_s,
        "wall_s": round(wall_s, 4),
    }


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of results.jsonl; a torn last line (a kill mid-write) is dropped."""
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        return rows
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue
            raise BenchError(f"{path}:{i + 1}: corrupt results row") from None
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [r for r in rows if r.get("error")]
    failed = [r for r in rows if not r.get("error") and r.get("status") == "failed"]
    scored = [r for r in rows if not r.get("error") and r.get("status") != "failed"]
    correct = sum(1 for r in scored if r.get("correct"))
    lo, hi = wilson_interval(correct, len(scored))
    n = max(1, len(scored))
    evald = [r["prompt_tokens_evaluated"] for r in rows if r.get("prompt_tokens_evaluated") is not None]
    return {
        "cases": len(rows),
        "scored": len(scored),
        "correct": correct,
        "accuracy": (correct / len(scored)) if scored else None,
        "ci95": [round(lo, 4), round(hi, 4)],
        "errors": len(errors),
        "error_cases": {r["case_id"]: r["error"] for r in errors},
        # consultations a role kept breaking (refusals, role breaks, loops): not scored
        "failed": len(failed),
        "failed_cases": {r["case_id"]: r.get("failure") for r in failed},
        # strict accuracy: failed consultations counted as wrong
        "accuracy_all": (correct / (len(scored) + len(failed))) if (scored or failed) else None,
        "no_diagnosis": sum(1 for r in scored if r.get("status") == "no_diagnosis"),
        "mean_turns": round(sum(r["turns"] for r in scored) / n, 3),
        "mean_tests": round(sum(r["n_tests"] for r in scored) / n, 3),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "prompt_tokens_evaluated": sum(evald) if len(evald) == len(rows) else None,
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "wall_s": round(sum(r["wall_s"] for r in rows), 3),
    }


def _fmt_acc(s: dict[str, Any]) -> str:
    if s["accuracy"] is None:
        return "n/a"
    return f"{s['accuracy']:.1%} (95% CI {s['ci95'][0]:.1%}-{s['ci95'][1]:.1%})"


def write_report(out: Path, cfg: BenchConfig, summary: dict[str, Any], rows: list[dict[str, Any]],
                 models: Mapping[str, str]) -> None:
    md = [f"# medsim bench: {cfg.cases}", "",
          f"- git revision: `{git_revision()}`", f"- seed: {cfg.seed}, max turns: {cfg.max_turns}",
          "- models: " + ", ".join(f"{r}={m}" for r, m in models.items()), "",
          "## Summary", "",
          f"- cases: {summary['cases']} (scored {summary['scored']}, failed {summary['failed']}, errors {summary['errors']})",
          f"- accuracy: {summary['correct']}/{summary['scored']} = {_fmt_acc(summary)}",
          f"- no diagnosis given: {summary['no_diagnosis']}",
          f"- mean turns: {summary['mean_turns']}, mean tests requested: {summary['mean_tests']}",
          f"- tokens: prompt sent {summary['prompt_tokens']}, prompt evaluated "
          f"{summary['prompt_tokens_evaluated']}, completion {summary['completion_tokens']}",
          "", "## Cases", "",
          "| case | status | correct | diagnosis | truth | turns | tests |",
          "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["case_id"]):
        cell = lambda v: str(v).replace("|", "/") if v is not None else "-"  # noqa: E731
        md.append(f"| {r['case_id']} | {r['status']} | {cell(r['correct'])} | {cell(r['diagnosis'])} | "
                  f"{cell(r['truth'])} | {r['turns']} | {r['n_tests']} |")
    if summary["errors"]:
        md += ["", "## Errors", ""] + [f"- `{k}`: {v}" for k, v in summary["error_cases"].items()]
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")


class _Results:
    """Appends rows to results.jsonl, one flushed line per finished case. A flushed line
    survives the process being killed (it is in the OS's buffers); ``fsync`` (off by
    default, ~1.5 ms a case here) also survives a power cut."""

    def __init__(self, path: Path, keep: list[dict[str, Any]], fsync: bool = False):
        self.path = path
        self.fsync = fsync
        self.lock = threading.Lock()
        # rewrite without a torn line or rows being re-run
        with path.open("w", encoding="utf-8") as fh:
            for r in keep:
                fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
        self.fh = path.open("a", encoding="utf-8")

    def append(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            self.fh.flush()
            if self.fsync:
                os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _prepare_out(cfg: BenchConfig) -> list[dict[str, Any]]:
    out = cfg.out
    run_file, results_file = out / "run.json", out / "results.jsonl"
    existing = read_results(results_file)
    if cfg.resume:
        if run_file.is_file():
            prev = json.loads(run_file.read_text(encoding="utf-8"))
            if prev.get("identity") != cfg.identity():
                raise BenchError(f"{out}: --resume with different settings than the run there: "
                                 f"{prev.get('identity')} vs {cfg.identity()}")
    elif existing or run_file.is_file():
        raise BenchError(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    (out / "events").mkdir(exist_ok=True)
    run_file.write_text(json.dumps({"identity": cfg.identity(), "git_revision": git_revision()}, indent=2) + "\n",
                        encoding="utf-8")
    if cfg.retry_errors:
        existing = [r for r in existing if not r.get("error")]
    return existing


def run_case(case: Case, models: RoleModels, cc: ConsultationConfig, header: dict[str, Any],
             path: Path) -> tuple[ConsultationResult, float]:
    t0 = time.perf_counter()
    with EventLog(path) as log:
        log.emit(Header(case_id=case.id, case_source=case.source, seed=cc.seed, **header))
        try:
            result = run_consultation(case, models, cc, log)
        except Exception as e:  # noqa: BLE001 - a bug in one case must not lose the run; recorded below
            msg = f"internal error: {type(e).__name__}: {e}"
            log.emit(CaseError(turn=0, error=msg))
            log.emit(CaseFinished(status="error", turns=0, diagnosis=None, correct=None))
            result = ConsultationResult(case_id=case.id, status="error", diagnosis=None, correct=None,
                                        truth=case.diagnosis, turns=0, tests_requested=[], error=msg,
                                        failure=None, judge_method=None, judge_rationale=None, llm_calls=0,
                                        prompt_tokens=0, prompt_tokens_evaluated=None, completion_tokens=0,
                                        model_latency_s=0.0)
    return result, time.perf_counter() - t0


def run_bench(cfg: BenchConfig, *, backends: Mapping[str, LLM] | None = None,
              pool: LlamaPool | None = None, on_row: Callable[[dict[str, Any]], None] | None = None) -> BenchOutcome:
    """Run (or resume) a benchmark. ``backends`` overrides building them from ``cfg.llm``
    (tests inject fakes)."""
    cases, invalid = load_cases(cfg.cases, skip_invalid=cfg.skip_invalid)
    if cfg.limit is not None:
        cases = cases[: cfg.limit]
    keep = _prepare_out(cfg)
    done = {r["case_id"] for r in keep}
    todo = [c for c in cases if c.id not in done]
    own_pool = pool is None
    pool = pool or LlamaPool()
    try:
        if backends is None:
            backends = build_role_backends(cfg.llm, model=cfg.model, cases={c.id: c for c in cases},
                                           seed=cfg.seed, pool=pool)
        models = RoleModels(**{r: backends[r] for r in ROLE_NAMES})
        model_names = {r: describe_spec(cfg.llm[r], cfg.model) for r in ROLE_NAMES}
        cc = _consultation_config(cfg)
        header = {"config": _header_config(cfg, cc), "models": model_names,
                  "git_revision": git_revision(), "packages": package_versions()}
        workers = max(1, cfg.workers)
        if workers > 1 and all(is_in_process(cfg.llm[r]) for r in ROLE_NAMES):
            print("note: all roles run in process; their model calls are serialised, so "
                  "--workers > 1 gains little", file=sys.stderr)
        results = _Results(cfg.out / "results.jsonl", keep)
        bar = None
        if cfg.progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(cases), initial=len(keep), unit="case", file=sys.stderr, dynamic_ncols=True)
        rows = list(keep)
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool_exec:
                futs = {pool_exec.submit(run_case, c, models, cc, header, cfg.out / "events" / f"{c.id}.jsonl"): c
                        for c in todo}
                for fut in as_completed(futs):
                    result, wall = fut.result()
                    row = _row(result, wall)
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
        order = {c.id: i for i, c in enumerate(cases)}
        rows.sort(key=lambda r: order.get(r["case_id"], len(order)))
        summary = summarise(rows)
        summary["invalid_records_skipped"] = len(invalid)
        (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        write_report(cfg.out, cfg, summary, rows, model_names)
        return BenchOutcome(summary, cfg.out, invalid)
    finally:
        if own_pool:
            pool.close()
