"""``medsim automedic convert`` and the bench's ``--cases generate:N[:specialty]``.

``medsim automedic convert IN.jsonl --out OUT.jsonl [--llm SPEC]`` turns multiple-choice
items into medsim case records (``agents.suites.automedic_convert``): OUT.jsonl holds
the kept items' records (``medsim bench --cases OUT.jsonl --protocol automedic`` runs
them) and ``OUT.log.jsonl`` the event log (every model call and one ``automedic_item``
event per item: kept, or dropped at which stage for which reason). ``--llm scripted``
(the default) is deterministic.

``--cases generate:N[:specialty]``: before the run, the doctor's backend invents N cases
(``agents.suites.generate``) into ``OUT/generated_cases.jsonl`` (its log beside it);
the run's spec then names that file, so ``--resume`` reuses it and ``--cases
OUT/generated_cases.jsonl`` runs the same cases again.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from agents.events import Event
from agents.textsafe import printable

__all__ = ["add_automedic_parser", "ConvertOutcome", "convert_file", "materialise_generated", "GENERATED"]

logger = logging.getLogger(__name__)
GENERATED = "generated_cases.jsonl"


def add_automedic_parser(sub: Any) -> argparse.ArgumentParser:
    a = sub.add_parser("automedic", help="AutoMedic: convert multiple-choice QA items into consultation profiles")
    asub = a.add_subparsers(dest="automedic_command", required=True)
    c = asub.add_parser("convert", help="multiple-choice JSONL (question, options, answer) -> medsim case JSONL")
    c.add_argument("input", type=Path, help="MedQA-style JSONL: question, options (dict or list), answer (text or letter)")
    c.add_argument("--out", type=Path, required=True, help="the case JSONL to write (its log: OUT.log.jsonl; required, no default)")
    c.add_argument("--llm", default="scripted",
                   help="the converter's backend: scripted (deterministic, rule-based) | local | smollm2 | gguf:PATH | "
                        "openai:URL (default: scripted)")
    c.add_argument("--model", default=None, help="model name, openai: backends (default: none)")
    c.add_argument("--limit", type=int, default=None, help="the first N items only (default: all)")
    c.add_argument("--seed", type=int, default=0, help="the model's seed (default 0)")
    c.add_argument("--timeout", type=float, default=120.0, help="whole-call timeout, seconds (default 120)")
    c.add_argument("--retries", type=int, default=1, help="asks again after an invalid reply (default 1)")
    a.set_defaults(automedic_handler=_run)
    return a


def _run(args: argparse.Namespace) -> int:
    if args.automedic_command == "convert":
        o = convert_file(args.input, args.out, llm=args.llm, model=args.model, limit=args.limit, seed=args.seed,
                         timeout_s=args.timeout, retries=args.retries, command=getattr(args, "argv", None))
        for line in o.lines():
            print(printable(line))
        return 0 if o.kept else 1
    return 2


@dataclass
class ConvertOutcome:
    out: Path
    log: Path
    items: int
    kept: int
    dropped: list[tuple[int, str, str, str]] = field(default_factory=list)  # (line, id, stage, reason)
    invalid: list[str] = field(default_factory=list)  # malformed lines

    def reasons(self) -> Counter:
        return Counter(r for _, _, _, r in self.dropped)

    def lines(self) -> list[str]:
        out = [f"{self.items} items: {self.kept} converted -> {self.out}, {len(self.dropped)} dropped (log {self.log})"]
        for reason, n in sorted(self.reasons().items()):
            out.append(f"  dropped as {reason}: {n}")
        return out


def _backend(spec: str, model: str | None, seed: int, pool: Any) -> Any:
    from agents.llm.scripted import ScriptedLLM
    from agents.llm.spec import build_backend
    from agents.suites.automedic_scripted import AutomedicScriptedLLM

    if spec == "scripted":
        return AutomedicScriptedLLM(ScriptedLLM({}, seed=seed))
    return build_backend(spec, model=model, cases={}, seed=seed, pool=pool)


def convert_file(src: Path, out: Path, *, llm: str = "scripted", model: str | None = None, limit: int | None = None,
                 seed: int = 0, timeout_s: float = 120.0, retries: int = 1, backend: Any = None,
                 command: list[str] | None = None) -> ConvertOutcome:
    """Convert ``src`` into ``out`` (written whole at the end, via a temporary file)."""
    from agents.cases.agentclinic import parse_record
    from agents.cases.jsonl import read_json_lines
    from agents.cases.model import CaseRecordError
    from agents.events import EventLog
    from agents.llm.base import GenerateParams
    from agents.llm.calls import RetryPolicy
    from agents.llm.llamacpp import LlamaPool
    from agents.llm.spec import check_backend_spec, describe_spec
    from agents.provenance import git_revision
    from agents.suites.automedic_convert import Conversion, ItemError, ItemScreened, parse_item
    from medsim.errors import BenchError

    src, out = Path(src), Path(out)
    if not src.is_file():
        raise BenchError(f"{src}: no such file")
    if out.resolve() == src.resolve():
        raise BenchError(f"--out {out}: would overwrite the input")
    check_backend_spec(llm, model)
    log_path = out.with_name(out.name.removesuffix(".jsonl") + ".log.jsonl")
    pool = LlamaPool()
    records: list[dict[str, Any]] = []
    o = ConvertOutcome(out, log_path, 0, 0)
    try:
        model_llm = backend if backend is not None else _backend(llm, model, seed, pool)
        out.parent.mkdir(parents=True, exist_ok=True)
        with EventLog(log_path) as log:
            log.emit(_Started(input=str(src), converter=describe_spec(llm, model), seed=seed,
                              git_revision=git_revision(), command=list(command or [])))
            conv = Conversion(model_llm, log, GenerateParams(temperature=0.0, max_tokens=900, seed=seed,
                                                             timeout_s=timeout_s),
                              RetryPolicy(retries=2), retries=retries)
            seen: set[str] = set()
            for lineno, obj in read_json_lines(src):
                if limit is not None and o.items >= limit:
                    break
                o.items += 1
                if isinstance(obj, CaseRecordError):
                    o.invalid.append(str(obj))
                    o.dropped.append((lineno, "?", "parse", "malformed"))
                    log.emit(ItemScreened(line=lineno, item_id="?", kept=False, stage="parse", reason="malformed",
                                          note=obj.message))
                    continue
                try:
                    item = parse_item(obj, lineno, stem=src.stem)
                    if item.id in seen:
                        raise ItemError(f"duplicate id '{item.id}'")
                except ItemError as e:
                    o.dropped.append((lineno, str(obj.get("id", "?")) if isinstance(obj, dict) else "?", "parse",
                                      "malformed"))
                    log.emit(ItemScreened(line=lineno, item_id="?", kept=False, stage="parse", reason="malformed",
                                          note=str(e)))
                    continue
                seen.add(item.id)
                rec = conv.convert(item, f"{src.name}:{lineno}")
                if rec is None:
                    stage, reason = conv.last_drop or ("?", "?")
                    o.dropped.append((lineno, item.id, stage, reason))
                    continue
                case, errors = parse_record(json.loads(json.dumps(rec)), str(out), len(records) + 1)
                if case is None:  # a bug, never a silent bad record
                    why = "; ".join(str(e) for e in errors)
                    log.emit(ItemScreened(line=lineno, item_id=item.id, kept=False, stage="record",
                                          reason="invalid_record", note=why))
                    o.dropped.append((lineno, item.id, "record", "invalid_record"))
                    continue
                records.append(rec)
        tmp = out.with_name(out.name + ".tmp")
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=True) + "\n")
        os.replace(tmp, out)
    finally:
        pool.close()
    o.kept = len(records)
    return o


@dataclass(frozen=True)
class _Started(Event):
    """The conversion log's first line."""

    type: ClassVar[str] = "automedic_convert"
    input: str
    converter: str
    seed: int
    git_revision: str
    command: list


def generate_cases(spec: Any, out: Path, *, resume: bool = False, pool: Any = None) -> Path | None:
    """For ``--cases generate:N[:specialty]``: the cases invented into
    ``OUT/generated_cases.jsonl`` (kept on ``--resume``) by ``spec``'s doctor, and that
    file's path, which the run's spec is then resolved with (None for any other
    ``cases``)."""
    from agents.suites.generate import GenerateError, parse_generate
    from medsim.errors import BenchError

    try:
        gen = parse_generate(spec.cases)
    except GenerateError as e:
        raise BenchError(str(e)) from None
    if gen is None:
        return None
    from medsim.runlock import RunLock, RunLockError

    lock = RunLock(Path(out))  # one process at a time in OUT, from before anything is written
    try:
        lock.acquire()
    except RunLockError as e:
        raise BenchError(str(e)) from None
    try:
        return _materialise(spec, gen, Path(out), resume=resume, pool=pool)
    finally:
        lock.release()  # the run takes it again at once (medsim.bench.run_bench)


def _materialise(spec: Any, gen: Any, out: Path, *, resume: bool, pool: Any) -> Path:
    from agents.events import EventLog
    from agents.llm.calls import RetryPolicy
    from agents.llm.llamacpp import LlamaPool
    from agents.suites.automedic_scripted import AutomedicScriptedLLM
    from agents.suites.generate import GenerateError, Generator
    from medsim.assemble import Backends, role_params
    from medsim.errors import BenchError

    path = Path(out) / GENERATED
    if path.is_file() and (resume or (Path(out) / "run.json").is_file()):
        logger.info("reusing the generated cases in %s", path)
        print(printable(f"generated cases: {path} (reused)"), flush=True)
        return path
    if path.is_file():
        raise BenchError(f"{path} already exists; pass --resume to reuse it, or choose another --out")
    own = pool is None
    pool = pool or LlamaPool()
    try:
        rs = spec.role("doctor")
        llm = Backends({}, pool).get("doctor", rs, spec.seeds[0])
        if getattr(llm, "name", "") == "scripted":
            llm = AutomedicScriptedLLM(llm)
        path.parent.mkdir(parents=True, exist_ok=True)
        params = replace(role_params("doctor", rs, spec.seeds[0]), temperature=max(rs.temperature, 0.7), max_tokens=900,
                         stop=())
        with EventLog(path.with_name("generated_cases.log.jsonl")) as log:
            records = Generator(llm, log, params, RetryPolicy(retries=rs.retries, backoff_s=rs.backoff_s),
                                prefix=f"gen-s{spec.seeds[0]}").generate(gen)
    except GenerateError as e:
        raise BenchError(f"--cases {spec.cases}: {e} ({path.with_name('generated_cases.log.jsonl')})") from None
    finally:
        if own:
            pool.close()
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records), encoding="utf-8")
    os.replace(tmp, path)
    print(printable(f"generated cases: {len(records)} of {gen.n} -> {path}"), flush=True)
    return path
