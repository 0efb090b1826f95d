"""The consultation suites: medsim's diagnostic consultation (AgentClinic's turns, with
medsim's or AgentClinic's protocol) and AutoMedic's tagged dialogue with its
multiple-choice question.

Both run a :class:`~agents.consultation.Consultation` over the cases of a case set, read
the run spec's ``cases``, ``protocol``, ``diagnosis``, ``memory``, ``world`` and
``conditions`` sections, let a person play a role, and report accuracy with its Wilson
interval (AutoMedic: the option letter against the key, and CARE). Which one a
condition runs follows its protocol (``protocol.name = "automedic"``), so one grid may
hold both.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.behaviour_checks import behaviour_markdown, behaviour_table
from agents.behaviours import behaviour_fields
from agents.biases import bias_fields
from agents.cases.registry import load_cases
from agents.conditions import condition_table, table_markdown, write_chart
from agents.consultation import Consultation, ConsultationConfig
from agents.deliberation import DeliberationConfig, Deliberating
from agents.events import EventSink
from agents.fidelity.scorer import FidelityScorer, fidelity_markdown, fidelity_row, fidelity_summary
from agents.llm.base import LLM
from agents.measures.differential import DifferentialScorer, differential_markdown, differential_row, differential_summary
from agents.measures.gap import condition_gaps, gaps_table
from agents.measures.elicited import ElicitationScorer, elicited_markdown, elicited_row, elicited_summary
from agents.measures.ordered import OrdersScorer, orders_markdown, orders_row, orders_summary
from agents.measures.speech import speech_row
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig, HumanParticipant, llm_cast
from agents.results import case_row, summarise
from agents.scorers import DiagnosisScorer, Scorer, Verdicts
from agents.settings import SpecError
from agents.suites.automedic import AutomedicConsultation, automedic_cast
from agents.suites.care import CareScorer, McqScorer, care_markdown, care_summary
from agents.suites.contract import CellPlan, Suite, Unit, Units
from agents.textsafe import md_cell

__all__ = ["ConsultationSuite", "DiagnosisSuite", "AutomedicSuite", "consultation_config", "cast_config", "in_effect",
           "consultation_summary", "fmt_accuracy", "fidelity_scorer"]

CONSULTATION_SECTIONS = frozenset({"cases", "protocol", "diagnosis", "memory", "world", "conditions"})


def in_effect(protocol: Any) -> Any:
    """The protocol as it runs: static QA (``static = true``: the doctor reads the whole
    case and answers in one turn) is one turn, nothing to gather, no technician, no budget;
    the one place that rule is written."""
    if not protocol.static:
        return protocol
    return replace(protocol, max_turns=1, min_gathering=0, measurement=False, budget=None)


def consultation_config(protocol: Any) -> ConsultationConfig:
    """The engine's rules from a run spec's ``protocol`` section."""
    p = in_effect(protocol)
    return ConsultationConfig(max_turns=p.max_turns, min_gathering=p.min_gathering, measurement=p.measurement,
                              budget=p.budget)


def cast_config(plan: CellPlan) -> CastConfig:
    """How the cell's participants are built, from its ``protocol`` and the roles'
    generation settings."""
    p = in_effect(plan.spec.protocol)
    roles = plan.spec.roles
    return CastConfig(
        doctor_mode=p.doctor_mode, doctor_strategy=p.doctor_strategy or "turns",
        prompt_style=p.prompt_style,
        guard_retries=p.guard_retries if p.guards else None, measurement_hints=p.measurement_hints,
        patient_grounding=p.patient_grounding,
        max_turns=p.max_turns, measurement=p.measurement, static=p.static,
        params={r: plan.params(r) for r in roles}, retry={r: plan.retry(r) for r in roles},
        doctor_bias=p.doctor_bias, patient_bias=p.patient_bias, patient_behaviour=p.patient_behaviour or (),
    )


def fmt_accuracy(s: Mapping[str, Any]) -> str:
    """``62.5% (95% CI 30.6%-86.3%)``, or n/a."""
    if s["accuracy"] is None:
        return "n/a"
    return f"{s['accuracy']:.1%} (95% CI {s['ci95'][0]:.1%}-{s['ci95'][1]:.1%})"


def _care_block(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    care = care_summary(rows)
    return {"care": care} if care is not None else {}


def _suite_blocks(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {**_care_block(rows), **fidelity_summary(rows), **differential_summary(rows), **elicited_summary(rows),
            **orders_summary(rows)}


# the measures beyond right or wrong (agents.measures): each a row block read from its scored event
MEASURE_ROWS = (("differential", differential_row), ("elicited", elicited_row), ("orders", orders_row))


def measure_scorers(plan: CellPlan, verdicts: Verdicts | None = None) -> list[Scorer]:
    """The differential (judged by the run's judge; ``verdicts``: the decisions it shares
    with the diagnosis scorer), information elicited and tests ordered scorers of a
    consultation cell."""
    return [DifferentialScorer(plan.llms["judge"], plan.params("judge"), plan.retry("judge"), verdicts=verdicts),
            ElicitationScorer(), OrdersScorer()]


def consultation_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of consultation rows (:func:`agents.results.summarise`), with CARE
    for the rows of AutoMedic's protocol and the simulator's fidelity
    (:func:`agents.fidelity.scorer.fidelity_summary`), and the patient behaviours' table
    when some condition has one (:func:`agents.behaviour_checks.behaviour_table`)."""
    out = summarise(rows, extra=_suite_blocks)
    table = behaviour_table(rows)
    if table is not None:  # patient behaviours: the checks and accuracy against level 0 (agents.behaviour_checks)
        out["behaviours"] = table
    return out


def fidelity_scorer(plan: CellPlan) -> FidelityScorer:
    """The simulator-fidelity scorer of a consultation cell: the pre-check, and the run's
    judge as the checker model where it can check (not the scripted oracle)."""
    judge = plan.llms.get("judge")
    if judge is None:
        return FidelityScorer(None)
    return FidelityScorer(judge, plan.params("judge"), plan.retry("judge"))


def _judge_label(spec: Any) -> str:
    """The judge as the report names it (its backend and model)."""
    judge = (getattr(spec, "roles", None) or {}).get("judge")
    return judge.describe() if judge is not None else "the run's judge"


class ConsultationSuite(Suite):
    """What the two consultation suites share (see the module's docstring)."""

    reads = CONSULTATION_SECTIONS
    people = True
    unit_name = "case"

    # -- the cells -----------------------------------------------------------------------
    def load(self, spec: Any) -> Units:
        cases, invalid = load_cases(spec.cases, skip_invalid=spec.skip_invalid)
        if spec.limit is not None:
            cases = cases[: spec.limit]
        return Units(tuple(Unit(c.id, c.source, c) for c in cases), tuple(invalid))

    def brief(self, unit: Unit) -> str:
        return f"Case {unit.id}: {unit.item.demographics}. {unit.item.objective}"

    def run_name(self, spec: Any) -> str:
        return Path(spec.cases).stem

    def scripted(self, units: Units, seed: int) -> LLM | None:
        return ScriptedLLM({u.id: u.item for u in units.units}, seed=seed)

    def cast(self, plan: CellPlan, unit: Unit, sink: EventSink) -> dict[str, Any]:
        """The participants: every role as an LLM participant (:func:`llm_cast`), a
        person where the spec says one plays a role (``plan.human_io`` asks them), and the
        doctor's deliberation (memory, chain of thought, a panel) around the doctor."""
        case = unit.item
        spec = plan.spec
        cast = llm_cast(case, plan.llms, cast_config(plan), sink)
        humans = [r for r, rs in spec.roles.items() if rs.backend == "human"]
        for role in humans:
            io = getattr(plan, "human_io", None)
            if io is None:
                raise SpecError(f"roles.{role} is played by a person: use `medsim consult --as {role}` "
                                f"or `medsim play --as {role}`", key=f"roles.{role}.backend")
            cast[role] = HumanParticipant(role, io)
        d = spec.diagnosis
        dcfg = DeliberationConfig(cot=d.cot, ensemble=d.ensemble, panel=d.panel, k=spec.memory.k)
        memory = getattr(plan, "memory", None)
        if memory is not None or dcfg.active:
            cast["doctor"] = Deliberating(cast["doctor"], case, sink, dcfg, memory)
        return cast

    def scorers(self, plan: CellPlan) -> list[Scorer]:
        verdicts = Verdicts()
        return [DiagnosisScorer(plan.llms["judge"], plan.params("judge"), plan.retry("judge"), verdicts),
                fidelity_scorer(plan), *measure_scorers(plan, verdicts)]

    # -- results -------------------------------------------------------------------------
    def row(self, unit: Unit, events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
            wall_s: float) -> dict[str, Any]:
        row = case_row(unit.item, events, seed=seed, condition=condition, events_file=events_file, wall_s=wall_s)
        row.update(bias_fields(events))
        row.update(behaviour_fields(events))
        care = next((e for e in events if e.get("type") == "scored" and e.get("scorer") == "care"), None)
        if care is not None and isinstance(care.get("details"), Mapping) and "skipped" not in care["details"]:
            row["care"] = dict(care["details"])
        fidelity = fidelity_row(events)
        if fidelity is not None:
            row["fidelity"] = fidelity
        for key, read in MEASURE_ROWS:
            block = read(events)
            if block is not None:
                row[key] = block
        speech = speech_row(unit.item, events)
        if speech is not None:
            row["speech"] = speech
        return row

    def csv_row(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """The row with its fidelity counts (``fidelity_patient_leak``, ...), its
        measures (``differential_rank``, ``elicited_recall``, ``tests_f1``, ...) and the
        patient's speech (``speech_fk_grade``, ``speech_volunteered``, ...) as columns."""
        flat: dict[str, Any] = {}
        f = row.get("fidelity")
        if isinstance(f, Mapping):
            flat["fidelity_checker"] = f.get("checker")
            for role in ("patient", "technician"):
                block = f.get(role) or {}
                flat[f"fidelity_{role}_n"] = block.get("n")
                flat.update({f"fidelity_{role}_{k}": v for k, v in (block.get("labelled") or {}).items()})
        for key, fields in (("differential", ("rank", "n", "top1_confidence")), ("elicited", ("recall", "reached", "facts")),
                            ("orders", ("precision", "recall", "f1", "ordered", "recorded"))):
            block = row.get(key)
            if isinstance(block, Mapping) and block.get("scored"):
                flat.update({f"{key}_{k}": block.get(k) for k in fields})
        speech = row.get("speech")
        if isinstance(speech, Mapping):
            flat.update({f"speech_{k}": v for k, v in speech.items()})
        return {**row, **flat} if flat else row

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return consultation_summary(rows)

    def progress(self, rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        return summarise(rows)

    def headline(self, summary: Mapping[str, Any]) -> str:
        s = summary
        acc = "n/a" if s["accuracy"] is None else f"{s['accuracy']:.1%} [{s['ci95'][0]:.1%}, {s['ci95'][1]:.1%}]"
        line = (f"{s['cases']} cases: {s['correct']}/{s['scored']} correct, accuracy {acc}, {s['failed']} failed, "
                f"{s['errors']} errors")
        for name, cs in (s.get("conditions") or {}).items():
            a = "n/a" if cs["accuracy"] is None else f"{cs['accuracy']:.1%} [{cs['ci95'][0]:.1%}, {cs['ci95'][1]:.1%}]"
            line += f"\n  {name}: {cs['correct']}/{cs['scored']} correct, accuracy {a}, {cs['errors']} errors"
        return line

    def describe(self, spec: Any) -> list[str]:
        p = spec.protocol
        out = [f"- seeds: {', '.join(map(str, spec.seeds))}; protocol {p.name} (doctor {p.doctor_mode}, "
               f"min gathering {p.min_gathering}, guards {'on' if p.guards else 'off'}), max turns {p.max_turns}"]
        modes = {spec.for_condition(c).memory.mode for c in spec.condition_names()}
        if modes != {"off"}:
            m = spec.memory
            learn = f"; learned first from {md_cell(m.learn_cases)}" if m.learn_cases else ""
            out.append(f"- memory: {', '.join(sorted(modes))} ({md_cell(m.dir)}, {m.k} nearest per buffer, embedder "
                       f"{m.embedder}{learn}); each case's retrievals are in its transcript")
        return out

    def report_sections(self, spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                        out: Any = None) -> list[str]:
        cell = md_cell
        s = summary
        md = ["## Summary", "",
              f"- cases: {s['cases']} (scored {s['scored']}, failed {s['failed']}, errors {s['errors']})",
              f"- accuracy: {s['correct']}/{s['scored']} = {fmt_accuracy(s)}",
              f"- no diagnosis given: {s['no_diagnosis']}",
              f"- mean turns: {s['mean_turns']}, mean tests requested: {s['mean_tests']}",
              f"- tokens: prompt sent {s['prompt_tokens']}, prompt evaluated "
              f"{s['prompt_tokens_evaluated']}, completion {s['completion_tokens']}"]
        names = spec.condition_names()
        if len(names) > 1:
            table = condition_table(rows, names)
            md += ["", "## Conditions (in order; each compared with the one before it, paired by case)", ""]
            md += table_markdown(table)
            static = [bool(spec.for_condition(c).protocol.static) for c in names]
            md += gaps_table(condition_gaps(rows, names, static), next((c for c, s in zip(names, static) if not s), ""))
            if out is not None:
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
        md += care_markdown(summary)  # AutoMedic's rows: CARE, for the run and per condition
        md += differential_markdown(summary) + elicited_markdown(summary) + orders_markdown(summary)
        md += fidelity_markdown(summary)
        md += behaviour_markdown(behaviour_table(rows, names, judge=_judge_label(spec)))
        return md


class DiagnosisSuite(ConsultationSuite):
    """medsim's diagnostic consultation: the doctor asks, orders tests and diagnoses; the
    judge decides whether the diagnosis is the case's."""

    name = "diagnosis"
    title = "diagnostic consultations judged against the case's diagnosis"
    live = True

    def engine(self, plan: CellPlan, unit: Unit, sink: EventSink, cast: Mapping[str, Any] | None = None) -> Consultation:
        return Consultation(unit.item, dict(cast) if cast is not None else self.cast(plan, unit, sink),
                            consultation_config(plan.spec.protocol), sink)


class AutomedicSuite(ConsultationSuite):
    """AutoMedic's protocol: a tagged dialogue, then the case's multiple-choice question
    and the static baseline, scored by the option letter and CARE (no judge)."""

    name = "automedic"
    title = "AutoMedic: a tagged dialogue, then the multiple-choice question, scored by CARE"

    def engine(self, plan: CellPlan, unit: Unit, sink: EventSink, cast: Mapping[str, Any] | None = None) -> Consultation:
        return AutomedicConsultation(unit.item, automedic_cast(unit.item, plan.llms, cast_config(plan), sink),
                                     consultation_config(plan.spec.protocol), sink)

    def scorers(self, plan: CellPlan) -> list[Scorer]:
        return [McqScorer(), CareScorer(), fidelity_scorer(plan)]
