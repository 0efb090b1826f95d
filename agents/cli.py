"""The ``medsim`` command: ``bench``, ``consult``, ``play``, ``replay`` and ``cases``."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence

__all__ = ["main", "build_parser"]

ROLE_NAMES = ("doctor", "patient", "measurement", "judge")


def _add_llm_args(p: argparse.ArgumentParser, default: str) -> None:
    g = p.add_argument_group("models")
    g.add_argument("--llm", default=default,
                   help="backend for every role: scripted | local | smollm2 | gguf:PATH | openai:BASE_URL (default: %(default)s)")
    for r in ROLE_NAMES:
        g.add_argument(f"--{r}-llm", default=None, help=f"backend for the {r} role (overrides --llm)")
    g.add_argument("--model", default=None, help="model name for openai: backends")
    g.add_argument("--retries", type=int, default=3, help="retries per model call on transient errors")
    g.add_argument("--backoff", type=float, default=1.0, help="first retry wait in seconds (doubles)")
    g.add_argument("--timeout", type=float, default=120.0, help="per-call timeout for server backends, seconds")
    c = p.add_argument_group("protocol")
    c.add_argument("--protocol", choices=("medsim", "agentclinic"), default="medsim",
                   help="agentclinic: AgentClinic's marker protocol and prompt style, no minimum gathering, no detectors")
    c.add_argument("--doctor-mode", choices=("structured", "markers"), default=None,
                   help="structured (JSON actions, grammar-constrained) or markers; default structured, markers for openai: doctors")
    c.add_argument("--min-gathering", type=int, default=3,
                   help="questions/tests required before a diagnosis is accepted (0: AgentClinic's rule)")
    c.add_argument("--no-guards", action="store_true", help="turn off the refusal / role-break / loop detectors")


def _role_specs(args: argparse.Namespace) -> dict[str, str]:
    return {r: getattr(args, f"{r}_llm") or args.llm for r in ROLE_NAMES}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="medsim", description="Simulate and evaluate AI doctors.")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="run a headless benchmark over a case set")
    b.add_argument("--cases", required=True, help="registered case set name (demo) or a JSONL path")
    b.add_argument("--limit", type=int, default=None, help="first N cases only")
    b.add_argument("--workers", type=int, default=1, help="cases run at once")
    b.add_argument("--out", type=Path, default=None, help="output directory (default runs/<cases>-<llm>-s<seed>)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--max-turns", type=int, default=20)
    b.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    b.add_argument("--retry-errors", action="store_true", help="with --resume: run errored cases again")
    b.add_argument("--skip-invalid", action="store_true", help="run the valid records of a case set with invalid ones")
    b.add_argument("--no-progress", action="store_true")
    _add_llm_args(b, "scripted")

    c = sub.add_parser("consult", help="run one consultation and print it live")
    c.add_argument("--cases", default="demo")
    c.add_argument("--case", default=None, help="case id (default: the first case)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--max-turns", type=int, default=20)
    c.add_argument("--log", type=Path, default=None, help="also write the event log here")
    _add_llm_args(c, "local")

    pl = sub.add_parser("play", help="open the hospital: several consultations at once, live")
    pl.add_argument("--cases", default="demo")
    pl.add_argument("--doctors", type=int, default=2)
    pl.add_argument("--patients", type=int, default=6)
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--map", type=Path, default=None, help="Tiled .tmx map (default maps/hospital.tmx)")
    pl.add_argument("--log", type=Path, default=None, help="shift event log (default runs/shift-s<seed>.jsonl)")
    pl.add_argument("--speed", type=int, default=2, choices=(1, 2, 4, 8))
    pl.add_argument("--headless", action="store_true", help="no window (SDL dummy driver)")
    pl.add_argument("--frames", type=int, default=None, help="stop after N frames")
    pl.add_argument("--screenshot", type=Path, default=None, help="save the last frame as PNG")
    pl.add_argument("--fixed-dt", type=float, default=None, help="real seconds per frame (default: measured)")
    pl.add_argument("--zoom", type=float, default=None, help="0.5, 0.75, 1, 1.5 or 2")
    pl.add_argument("--follow", default=None, help="select and follow an agent, e.g. doctor-1")
    _add_llm_args(pl, "local")

    rp = sub.add_parser("replay", help="play a benchmarked case (or a whole run) in the hospital")
    rp.add_argument("run_dir", type=Path)
    rp.add_argument("case_id", nargs="?", default=None)
    rp.add_argument("--map", type=Path, default=None)
    rp.add_argument("--speed", type=int, default=4, choices=(1, 2, 4, 8))
    rp.add_argument("--headless", action="store_true")
    rp.add_argument("--frames", type=int, default=None)
    rp.add_argument("--screenshot", type=Path, default=None)
    rp.add_argument("--fixed-dt", type=float, default=None)
    rp.add_argument("--zoom", type=float, default=None)

    v = sub.add_parser("cases", help="validate a case set and list its cases")
    v.add_argument("spec", help="registered name or JSONL path")
    return p


def _cmd_bench(args: argparse.Namespace) -> int:
    from agents.bench import BenchConfig, run_bench

    specs = _role_specs(args)
    out = args.out or Path("runs") / f"{Path(args.cases).stem}-{args.llm.replace(':', '_').replace('/', '_')}-s{args.seed}"
    cfg = BenchConfig(cases=args.cases, out=out, llm=specs, model=args.model, limit=args.limit,
                      workers=args.workers, seed=args.seed, max_turns=args.max_turns, min_gathering=args.min_gathering,
                      protocol=args.protocol, doctor_mode=args.doctor_mode, guards=not args.no_guards, resume=args.resume,
                      retry_errors=args.retry_errors, skip_invalid=args.skip_invalid,
                      progress=not args.no_progress, retries=args.retries, backoff_s=args.backoff,
                      timeout_s=args.timeout)
    outcome = run_bench(cfg)
    s = outcome.summary
    for e in outcome.invalid_records:
        print(f"skipped invalid record: {e}", file=sys.stderr)
    acc = "n/a" if s["accuracy"] is None else f"{s['accuracy']:.1%} [{s['ci95'][0]:.1%}, {s['ci95'][1]:.1%}]"
    print(f"{s['cases']} cases: {s['correct']}/{s['scored']} correct, accuracy {acc}, "
          f"{s['errors']} errors -> {outcome.out}")
    return outcome.exit_code


class _LivePrinter:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def emit(self, event) -> None:  # type: ignore[no-untyped-def]
        from agents.events import (ConsultationFailed, JudgeDecision, LLMRetry, PrematureDiagnosis, ReplyRejected,
                                   RouteDecision, TurnLimitReached, Utterance)

        if isinstance(event, Utterance):
            who = {"doctor": "Doctor", "patient": "Patient", "measurement": "Technician"}[event.speaker]
            print(f"[{event.turn:>2}] {who}: {event.text}", flush=True)
        elif isinstance(event, RouteDecision) and event.note:
            print(f"     ({event.rule}: {event.note})", flush=True)
        elif isinstance(event, LLMRetry):
            print(f"     (retry {event.attempt} for {event.role}: {event.error})", flush=True)
        elif isinstance(event, ReplyRejected):
            print(f"     ({event.role} reply rejected as {event.problem}, attempt {event.attempt}: {event.text[:80]!r})", flush=True)
        elif isinstance(event, ConsultationFailed):
            print(f"     (consultation failed: {event.reason})", flush=True)
        elif isinstance(event, PrematureDiagnosis):
            print(f"     (premature diagnosis after {event.gathered} of {event.required} questions/tests: "
                  "the doctor is told to go on)", flush=True)
        elif isinstance(event, TurnLimitReached):
            print(f"     (turn limit {event.max_turns} reached)", flush=True)
        elif isinstance(event, JudgeDecision):
            verdict = "CORRECT" if event.correct else "WRONG"
            print(f"\nDiagnosis: {event.diagnosis!s}\nCorrect:   {event.truth}\nJudge ({event.method}): {verdict} - {event.rationale}", flush=True)


def _cmd_consult(args: argparse.Namespace) -> int:
    from agents.bench import ROLE_NAMES as _R
    from agents.cases.registry import load_cases
    from agents.consultation import ConsultationConfig, RoleModels, run_consultation
    from agents.events import EventLog, TeeSink
    from agents.llm.calls import RetryPolicy
    from agents.llm.llamacpp import LlamaPool
    from agents.llm.spec import build_role_backends, describe_spec

    cases, _ = load_cases(args.cases)
    by_id = {c.id: c for c in cases}
    case = by_id.get(args.case) if args.case else cases[0]
    if case is None:
        print(f"error: no case '{args.case}' in {args.cases} (ids: {', '.join(list(by_id)[:8])}, ...)", file=sys.stderr)
        return 2
    specs = _role_specs(args)
    pool = LlamaPool()
    t0 = time.perf_counter()
    try:
        backends = build_role_backends(specs, model=args.model, cases=by_id, seed=args.seed, pool=pool)
        models = RoleModels(**{r: backends[r] for r in _R})
        from agents.bench import consultation_config

        cc = consultation_config(protocol=args.protocol, doctor_mode=args.doctor_mode, doctor_spec=specs["doctor"],
                                 max_turns=args.max_turns, min_gathering=args.min_gathering, guards=not args.no_guards,
                                 retry=RetryPolicy(args.retries, args.backoff)).with_seed(args.seed)
        print(f"Case {case.id}: {case.demographics}. {case.objective}")
        print("Models: " + ", ".join(f"{r}={describe_spec(s, args.model)}" for r, s in specs.items()) + "\n", flush=True)
        printer = _LivePrinter()
        if args.log:
            with EventLog(args.log) as log:
                result = run_consultation(case, models, cc, TeeSink(printer, log))
        else:
            result = run_consultation(case, models, cc, printer)
    finally:
        pool.close()
    wall = time.perf_counter() - t0
    evald = result.prompt_tokens_evaluated
    print(f"\nStatus: {result.status}; turns {result.turns}; tests {len(result.tests_requested)}; "
          f"{result.llm_calls} model calls; prompt tokens sent {result.prompt_tokens}, evaluated {evald}, "
          f"completion {result.completion_tokens}; wall time {wall:.1f} s")
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from agents.events import EventLog
    from agents.llm.llamacpp import LlamaPool
    from game.runner import InlineRunner, ThreadRunner
    from game.shift import assets_dir, build_shift, default_map_path

    specs = _role_specs(args)
    log_path = args.log or Path("runs") / f"shift-s{args.seed}.jsonl"
    runner = InlineRunner() if args.headless and all(s == "scripted" for s in specs.values()) else ThreadRunner(max(2, args.doctors))
    pool = LlamaPool(n_threads=max(1, (os.cpu_count() or 2) - 1))  # leave a core for the view
    try:
        with EventLog(log_path) as log:
            from agents.bench import consultation_config
            from agents.llm.calls import RetryPolicy
            from game.world import WorldConfig

            cc = consultation_config(protocol=args.protocol, doctor_mode=args.doctor_mode, doctor_spec=specs["doctor"],
                                     min_gathering=args.min_gathering, guards=not args.no_guards,
                                     retry=RetryPolicy(args.retries, args.backoff))
            world = build_shift(cases=args.cases, llm=specs, model=args.model, doctors=args.doctors,
                                patients=args.patients, seed=args.seed, map_path=args.map, runner=runner,
                                log=log, pool=pool, config=WorldConfig(consultation=cc))
            from game.view.app import run_window

            stats = run_window(world, args.map or default_map_path(), assets_dir(), headless=args.headless,
                               frames=args.frames, screenshot=args.screenshot, speed=args.speed,
                               fixed_dt=args.fixed_dt, zoom=args.zoom, select=args.follow)
    finally:
        runner.close()
        pool.close()
    s = world.stats()
    print(f"shift: {s['patients']} patients arrived, {s['seen']} seen, {s['correct']} correct, {s['errors']} errors; "
          f"{stats['frames']} frames, frame time p50 {stats['p50_ms']:.1f} ms p95 {stats['p95_ms']:.1f} ms; log {log_path}")
    if args.screenshot:
        print(f"screenshot: {args.screenshot}")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from game.runner import InlineRunner
    from game.shift import assets_dir, build_replay, default_map_path

    world, rows = build_replay(args.run_dir, args.case_id, map_path=args.map, runner=InlineRunner(), log=None)
    from game.view.app import run_window

    run_window(world, args.map or default_map_path(), assets_dir(), headless=args.headless, frames=args.frames,
               screenshot=args.screenshot, speed=args.speed, fixed_dt=args.fixed_dt,
               title=f"medsim replay: {args.run_dir.name}", zoom=args.zoom)
    for r in world.finished:
        print(f"{r.case_id}: {r.status}, diagnosis {r.diagnosis!r}, correct {r.correct}")
    return 0


def _cmd_cases(args: argparse.Namespace) -> int:
    from agents.cases.registry import load_cases

    cases, errors = load_cases(args.spec, skip_invalid=True)
    for c in cases:
        print(f"{c.id}\t{c.specialty or '-'}\t{c.demographics}\t{len(c.tests)} tests\t{c.diagnosis}")
    for e in errors:
        print(f"invalid: {e}", file=sys.stderr)
    print(f"{len(cases)} valid, {len(errors)} invalid", file=sys.stderr)
    return 1 if errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
    from agents.bench import BenchError
    from agents.cases.model import CaseSetError
    from agents.llm.base import LLMError
    from agents.llm.local_model import ModelNotInstalled
    from agents.llm.spec import BackendSpecError
    from game.hospital_map import MapError

    args = build_parser().parse_args(argv)
    handlers = {"bench": _cmd_bench, "consult": _cmd_consult, "cases": _cmd_cases,
                "play": _cmd_play, "replay": _cmd_replay}
    try:
        return handlers[args.command](args)
    except (CaseSetError, BenchError, BackendSpecError, ModelNotInstalled, LLMError, MapError, OSError) as e:
        print(f"medsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("medsim: interrupted; `medsim bench --resume` finishes a benchmark run", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
