"""``medsim consult``: one cell of any suite, printed as it happens. It is the run loop's
own cell (:func:`medsim.bench.run_cell`, the same engine, scorers and row as ``medsim
bench``) with a live printer among its sinks, so a case gets the same verdict either way.
A person can play a role from standard input (``--as doctor|patient|technician``)."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Sequence

from agents.case_sheet import case_sheet
from agents.cases.registry import resolve_case_path
from agents.events import (ConsultationFailed, ImageError, ImageNotRead, ImageRead, ImageReturned, JudgeDecision,
                           LLMRetry, MemoryLearned, MemoryRetrieved, PanelStep, PanelVote, PrematureDiagnosis,
                           Reasoning, ReplyRejected, RouteDecision, Scored, TurnLimitReached, Utterance)
from agents.llm.llamacpp import LlamaPool
from agents.llm.prompt_cache import default_prompt_cache
from agents.provenance import run_provenance
from agents.recall import case_key
from agents.roles import flag_name, speaker_label
from agents.suites.contract import Suite
from agents.textsafe import printable
from medsim.assemble import Backends, plan_for, preflight
from medsim.bench import run_cell
from medsim.memory import open_memory
from medsim.spec import RunSpec

__all__ = ["LivePrinter", "run_consult"]

logger = logging.getLogger(__name__)


class LivePrinter:
    """Prints a cell as it happens. Model text is escaped (``agents.textsafe``): a
    transcript keeps its line breaks, never a terminal control."""

    def __init__(self, suite: Suite):
        self.suite = suite
        self.judged = 0  # the judge's decisions so far: the first is the diagnosis's, later ones a differential's

    def emit(self, event: Any, **_: Any) -> None:
        line = self.line(event)
        if line is not None:
            print(printable(line), flush=True)

    def line(self, event: Any) -> str | None:
        e = event
        if isinstance(e, Utterance):
            return f"[{e.turn:>2}] {speaker_label(e.speaker)}: {e.text}"
        if isinstance(e, RouteDecision) and e.note:
            return f"     ({e.rule}: {e.note})"
        if isinstance(e, LLMRetry):
            return f"     (retry {e.attempt} for {e.role}: {e.error})"
        if isinstance(e, ReplyRejected):
            return f"     ({e.role} reply rejected as {e.problem}, attempt {e.attempt}: {e.text[:80]!r})"
        if isinstance(e, ConsultationFailed):
            return f"     (consultation failed: {e.reason})"
        if isinstance(e, PrematureDiagnosis):
            return (f"     (premature diagnosis after {e.gathered} of {e.required} questions/tests: the doctor is told "
                    "to go on)")
        if isinstance(e, TurnLimitReached):
            return f"     (turn limit {e.max_turns} reached)"
        if isinstance(e, ImageReturned):
            return f"     (image returned: {e.study}, {e.image}, sha256 {(e.sha256 or 'url')[:12]})"
        if isinstance(e, ImageRead):
            return f"     (image read by the vision model: {e.text})"
        if isinstance(e, ImageNotRead):
            return f"     (image not read: {e.reason})"
        if isinstance(e, ImageError):
            return f"     (image error for {e.study}: {e.error})"
        if isinstance(e, MemoryRetrieved):
            hits = ", ".join(f"{h.get('buffer')}:{h.get('id')}" for h in e.hits) or "no hits"
            return f"     (memory retrieved: {hits})"
        if isinstance(e, Reasoning):
            return f"     (reasoning, {e.strategy}, member {e.member}: {e.text})"
        if isinstance(e, PanelStep):
            return f"     (panel, {e.role}: {e.text})"
        if isinstance(e, PanelVote):
            return f"     (panel vote: {e.decision}{', a tie the chair decided' if e.tie else ''})"
        if isinstance(e, MemoryLearned):
            return f"memory: {e.reason}" + (f" (record {e.record_id})" if e.record_id else "")
        if isinstance(e, JudgeDecision):
            verdict = "CORRECT" if e.correct else "WRONG"
            self.judged += 1
            if self.judged > 1:  # another item of the differential
                return f"     (differential: {e.diagnosis!s}: {verdict.lower()}, {e.method})"
            return (f"\nDiagnosis: {e.diagnosis!s}\nCorrect:   {e.truth}\nJudge ({e.method}): {verdict} - "
                    f"{_readable(e.rationale)}")
        if isinstance(e, Scored) and e.scorer != "diagnosis":
            return f"     (scored by {e.scorer}: {e.value})"
        return self.suite.live_line(e)


def _readable(rationale: Any) -> str:
    """A judge's rationale as words: its JSON reply (``{"relation": ..., "why": ...}``) as
    ``relation: why``, anything else as it is."""
    text = str(rationale or "")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(obj, dict) and obj:
        rel, why = obj.get("relation"), obj.get("why") or obj.get("reason")
        if rel or why:
            return ": ".join(str(x).replace("_", " ") for x in (rel, why) if x)
    return text


def _intro(spec: RunSpec, suite: Suite, unit: Any) -> str:
    """What the terminal shows before the first turn: the case sheet of the role a
    person plays, else the case."""
    humans = spec.human_roles()
    for role in ("patient", "measurement"):
        sheet = case_sheet(unit.item, role) if role in humans and "doctor" not in humans else None
        if sheet is not None:
            return sheet.text()
    return suite.brief(unit)


def run_consult(spec: RunSpec, *, unit_id: str | None, log: Path | None, command: Sequence[str]) -> int:
    """One cell of ``spec`` (its first condition and seed) on ``unit_id`` (default: the
    first unit), printed live; returns the exit code."""
    t0 = time.perf_counter()
    suite = spec.suite
    loaded = suite.load(spec)
    by_id = loaded.by_id(spec.seeds[0])
    unit = by_id.get(unit_id) if unit_id else next(iter(by_id.values()), None)
    if unit is None:
        shown = ", ".join(list(by_id)[:8])
        where = spec.cases if "cases" in suite.reads else f"this {suite.name} run"
        logger.error("no %s '%s' in %s (ids: %s%s)", suite.unit_name, unit_id, where, shown,
                     ", ..." if len(by_id) > 8 else "")
        return 2
    pool = LlamaPool(jump_forward=spec.jump_forward, prompt_cache=default_prompt_cache())
    memory = None
    try:
        backends = Backends.for_run(spec, loaded, pool)
        backends.check(spec)
        if spec.preflight:
            preflight(spec, backends=backends)
        human_io = None
        if spec.human_roles():
            from game.catalogue import test_menu
            from game.hospital_map import load_map
            from game.resources import default_map_path
            from medsim.terminal import TerminalIO

            human_io = TerminalIO(test_menu(load_map(Path(spec.world.map) if spec.world.map else default_map_path())))
        mode = spec.memory.mode if "memory" in suite.reads else "off"
        if mode != "off":
            memory = open_memory(spec.memory, read_only=mode != "learn")
            if memory.has_case(case_key(unit.item)):
                logger.error("case %s is in the memory at %s: its answer would leak", unit.id, spec.memory.dir)
                return 2
        plan = plan_for(spec, spec.condition_names()[0], spec.seeds[0], backends, human_io=human_io,
                        memory=memory, learn=mode == "learn")
        plan.provenance = run_provenance(cases_file=resolve_case_path(spec.cases) if "cases" in suite.reads else None,
                                         models=plan.models, llms=plan.llms, command=list(command))
        print(printable(_intro(spec, suite, unit)))
        print(printable("Models: " + ", ".join(f"{flag_name(r)}={m}" for r, m in plan.models.items()) + "\n"),
              flush=True)
        row = run_cell(plan, unit, log, events_file=str(log or ""), sinks=[LivePrinter(suite)])
    finally:
        pool.close()
        if memory is not None:
            memory.close()
    evaluated = row["prompt_tokens_evaluated"]
    evaluated = "not reported by the backend" if evaluated is None else evaluated
    print(printable(f"\nStatus: {row['status']}; turns {row['turns']}; tests {row.get('n_tests', 0)}; {row['llm_calls']} "
                    f"model calls; prompt tokens sent {row['prompt_tokens']}, evaluated {evaluated}, completion "
                    f"{row['completion_tokens']}; wall time {time.perf_counter() - t0:.1f} s"))
    if row["error"]:
        logger.error("%s", row["error"])
        return 1
    return 0
