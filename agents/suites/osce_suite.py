"""OSCE treatment persuasion as a suite: MBTI personas (16 types x cases x gender) against
the doctor, a 30-criterion rubric judged round by round (:mod:`agents.suites.osce`,
:mod:`agents.suites.osce_judge`).

Its section of the run spec, ``[osce]``: ``personas`` (ids, or ``all``, ``random``, ...;
stored resolved, so the spec reproduces the run; ``requested`` keeps what was asked),
``cases`` (``shipped`` or a directory of case files), ``max_rounds`` (10),
``stop_classifier`` (true), ``guards`` (true), ``rubric`` (None: medsim's own). Its roles
are the doctor, the patient and the judge (whose model also runs the stop classifier).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.events import EventSink
from agents.llm.base import LLM, GenerateParams
from agents.scorers import Scorer
from agents.settings import SpecError, check_keys, get_bool, get_int, get_str
from agents.suites.contract import CellPlan, Option, Suite, Unit, Units
from agents.suites.osce import Encounter, EncounterConfig, StopDetector, osce_cast
from agents.suites.osce_events import StopDecision
from agents.suites.osce_judge import OsceRubricScorer
from agents.suites.osce_personas import (SHIPPED, PersonaError, load_osce_cases, load_traits, parse_personas,
                                         resolve_persona)
from agents.suites.osce_results import osce_row, summarise_osce
from agents.suites.osce_rubric import WEIGHTS, RubricError, load_rubric
from agents.suites.osce_scripted import OsceScriptedLLM
from agents.textsafe import md_cell, md_text

__all__ = ["OsceOptions", "OsceSuite", "GUARD_RETRIES"]

GUARD_RETRIES = 2  # a flagged reply is asked again this many times before the encounter fails
# the suite's own generation defaults (a doctor explains at some length; the judge answers 10 keys);
# no stop sequences (a treatment discussion has no technician lines to cut)
_ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "doctor": {"max_tokens": 220, "stop": ()}, "patient": {"max_tokens": 160, "temperature": 0.7, "stop": ()},
    "judge": {"max_tokens": 200, "temperature": 0.0, "stop": ()}}
_KEYS = ("personas", "requested", "cases", "max_rounds", "stop_classifier", "guards", "rubric", "weights")


@dataclass(frozen=True)
class OsceOptions:
    """The ``[osce]`` section, resolved (persona ids drawn, paths absolute)."""

    personas: tuple[str, ...]
    requested: str
    cases: str = SHIPPED
    max_rounds: int = 10
    stop_classifier: bool = True
    guards: bool = True
    rubric: str | None = None


class OsceSuite(Suite):
    name = "osce"
    title = "OSCE treatment persuasion: MBTI personas, a 30-criterion rubric judged per round"
    unit_name = "encounter"
    verdict = "total"
    nothing_scored_fails = False
    section = "osce"
    keeps = {"protocol.guards": "guards"}
    options = (
        Option("--personas", "personas", "persona ids, comma-separated: INTJ_M_PNEUMO, ESFP_F_LUNG, INTJ_PNEUMO "
               "(gender drawn from the seed), all (16 x 2 x cases), all_no_gender, random, random_no_gender "
               "(default: random)", metavar="IDS"),
        Option("--osce-cases", "cases", "a directory of case files: medsim's TOML or OSCE-Project's "
               "prompts/cases/*.txt (default: medsim's own PNEUMO and LUNG)", metavar="DIR"),
        Option("--rubric", "rubric", "a rubric CSV (number, criterion, good example, bad example, category; "
               "default: medsim's own)", metavar="CSV"),
        Option("--max-rounds", "max_rounds", "rounds before an encounter ends undecided (default 10)", int, metavar="N"),
        Option("--no-stop-classifier", "stop_classifier", "decide stops by the patient's marker and plain phrases "
               "only (no classifier call)", bool, False),
    )

    # -- the spec ------------------------------------------------------------------------
    def role_names(self) -> tuple[str, ...]:
        return ("doctor", "patient", "judge")

    def role_defaults(self, role: str) -> Mapping[str, Any]:
        return _ROLE_DEFAULTS.get(role, {})

    def parse_options(self, raw: Mapping[str, Any], *, seeds: Sequence[int]) -> OsceOptions:
        path = "osce."
        check_keys(raw, _KEYS, path)
        personas = raw.get("personas", "random")
        if isinstance(personas, (list, tuple)):
            if not personas or not all(isinstance(p, str) and p.strip() for p in personas):
                raise SpecError(f"{path}personas: expected persona ids, got {personas!r}", key=path + "personas")
            text = ",".join(personas)
        else:
            text = get_str({"personas": personas}, "personas", path)
        cases = get_str(raw, "cases", path, default=SHIPPED)
        case_dir = SHIPPED if cases == SHIPPED else str(Path(cases).expanduser().resolve())
        try:
            codes = list(load_osce_cases(case_dir))
        except PersonaError as e:
            raise SpecError(f"{path}cases: {e}", key=path + "cases") from None
        try:
            refs = parse_personas(text, codes, seed=seeds[0])
        except PersonaError as e:
            raise SpecError(f"{path}personas: {e}", key=path + "personas") from None
        rubric = get_str(raw, "rubric", path, optional=True)
        if rubric is not None:
            rubric = str(Path(rubric).expanduser().resolve())
            try:
                load_rubric(rubric)
            except RubricError as e:
                raise SpecError(f"{path}rubric: {e}", key=path + "rubric") from None
        requested = get_str(raw, "requested", path, default=text)
        return OsceOptions(personas=tuple(r.id for r in refs), requested=requested, cases=case_dir,
                           max_rounds=get_int(raw, "max_rounds", path, lo=1, default=10),
                           stop_classifier=get_bool(raw, "stop_classifier", path, default=True),
                           guards=get_bool(raw, "guards", path, default=True), rubric=rubric)

    def upgrade(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """A spec written before OSCE was a suite of the run spec (every key at the top
        beside ``suite = "osce"``) in today's layout, as those runs behaved (no
        ``guards``: off)."""
        if raw.get("suite") != self.name or "personas" not in raw:
            return raw
        d = dict(raw)
        osce = {k: d.pop(k) for k in _KEYS if k in d}
        osce.setdefault("guards", False)  # absent: a run made before guards
        d["osce"] = osce
        return d

    def options_dict(self, o: OsceOptions) -> dict[str, Any]:
        d: dict[str, Any] = {"personas": list(o.personas), "requested": o.requested, "cases": o.cases,
                             "max_rounds": o.max_rounds, "stop_classifier": o.stop_classifier, "guards": o.guards,
                             "weights": dict(WEIGHTS)}
        if o.rubric:
            d["rubric"] = o.rubric
        return d

    # -- the cells -----------------------------------------------------------------------
    def load(self, spec: Any) -> Units:
        o: OsceOptions = spec.options
        cases = load_osce_cases(o.cases)
        traits = load_traits()
        refs = parse_personas(",".join(o.personas), list(cases))

        def seeded(seed: int) -> list[Unit]:
            return [Unit(p.id, p.case.source, p)
                    for p in (resolve_persona(ref, cases, traits, seed=seed) for ref in refs)]

        return Units(tuple(seeded(spec.seeds[0])), (), seeded)

    def brief(self, unit: Unit) -> str:
        p = unit.item
        return f"Encounter {unit.id}: a {p.demographics}; the treatment to discuss: {p.case.treatment}"

    def run_name(self, spec: Any) -> str:
        return f"osce-{spec.options.requested}"

    def scripted(self, units: Units, seed: int) -> LLM | None:
        return OsceScriptedLLM(seed=seed)

    def engine(self, plan: CellPlan, unit: Unit, sink: EventSink, cast: Mapping[str, Any] | None = None) -> Encounter:
        o: OsceOptions = plan.spec.options
        persona = unit.item
        roles = ("doctor", "patient")
        cast = osce_cast(persona, plan.llms, {r: plan.params(r) for r in roles}, {r: plan.retry(r) for r in roles},
                         sink, max_rounds=o.max_rounds, guard_retries=GUARD_RETRIES if o.guards else None)
        judge = plan.params("judge")
        stop = StopDetector(plan.llms["judge"] if o.stop_classifier else None,
                            GenerateParams(temperature=0.0, max_tokens=20, seed=plan.seed, timeout_s=judge.timeout_s),
                            plan.retry("judge"))
        return Encounter(persona, cast, EncounterConfig(o.max_rounds, o.stop_classifier), sink, stop)

    def scorers(self, plan: CellPlan) -> list[Scorer]:
        return [OsceRubricScorer(plan.llms["judge"], plan.params("judge"), plan.retry("judge"),
                                 load_rubric(plan.spec.options.rubric))]

    # -- results -------------------------------------------------------------------------
    def row(self, unit: Unit, events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
            wall_s: float) -> dict[str, Any]:
        return osce_row(events, seed=seed, condition=condition, events_file=events_file, wall_s=wall_s,
                        case_id=unit.id)

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return summarise_osce(rows)

    def csv_row(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """The per-round totals as one text field; the per-criterion marks left out."""
        r = dict(row)
        r["per_round"] = [f"r{x['round']}={x['total']}" for x in row.get("per_round") or []]
        r.pop("criteria", None)
        return r

    def headline(self, summary: Mapping[str, Any]) -> str:
        s = summary
        return (f"{s['cases']} encounters: accepted {s['accepted']}, left {s['left']}, undecided {s['undecided']}; "
                f"mean empathy {_f(s['mean_empathy'])}, persuasion {_f(s['mean_persuasion'])}, safety "
                f"{_f(s['mean_safety'])}, total {_f(s['mean_total'])}; {s['failed']} failed, {s['errors']} errors")

    def describe(self, spec: Any) -> list[str]:
        o: OsceOptions = spec.options
        return [f"- personas: {len(o.personas)} ({md_text(o.requested)}); seeds: {', '.join(map(str, spec.seeds))}; "
                f"max rounds {o.max_rounds}; stop classifier {'on' if o.stop_classifier else 'off (rules only)'}; "
                f"guards {'on' if o.guards else 'off'}",
                f"- cases: {md_text(o.cases)}; rubric: {md_text(o.rubric or 'medsim (agents/suites/osce_data/rubric.csv)')}",
                "- scores: per category met / (met + not met) x 10 over the conversation so far (a met criterion "
                "stays met); '-' where no criterion of the category was relevant; total = empathy 30%, persuasion "
                "40%, safety 30% over the categories that have a score",
                "- strengths, weaknesses, key moments and suggestions: rule-derived from the criteria (no model call)"]

    def report_sections(self, spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                        out: Any = None) -> list[str]:
        s, cell = summary, md_cell
        md = ["## Summary", "",
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
                md.append(f"| {cell(k)} | {b['scored']} | {b['accepted']} | {_f(b['mean_empathy'])} | "
                          f"{_f(b['mean_persuasion'])} | {_f(b['mean_safety'])} | {_f(b['mean_total'])} |")
            md.append("")
        md += ["## Encounters", "", "| persona | seed | gender | outcome | rounds | empathy | persuasion | safety | "
               "total | total by round |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            g = f"{r.get('gender') or '-'}{' (drawn)' if r.get('gender_drawn') else ''}"
            by_round = " ".join(_f(x.get("total")) for x in r.get("per_round") or [])
            md.append(f"| {cell(r['case_id'])} | {r.get('seed', 0)} | {cell(g)} | {cell(r.get('outcome') or r['status'])} "
                      f"| {r.get('rounds')} | {_f(r.get('empathy'))} | {_f(r.get('persuasion'))} | "
                      f"{_f(r.get('safety'))} | {_f(r.get('total'))} | {by_round} |")
        md += ["", "## Feedback", ""]
        for r in rows:
            if r.get("error"):
                continue
            md += [f"### {md_text(r['case_id'])} (seed {r.get('seed', 0)}): {md_text(r.get('outcome') or r['status'])}", ""]
            for key, label in (("strengths", "Strengths"), ("weaknesses", "Weaknesses"),
                               ("key_moments", "Key moments"), ("suggestions", "Suggestions")):
                items = r.get(key) or []
                md += [f"**{label}**", ""] + ([f"- {cell(x)}" for x in items] or ["- none"]) + [""]
        failed = [r for r in rows if not r.get("error") and r.get("status") == "failed"]
        if failed:
            md += ["## Failed encounters", ""] + [f"- {cell(r['case_id'])} (seed {r.get('seed', 0)}, round "
                                                  f"{r.get('rounds')}): {cell(r.get('failure'))}" for r in failed]
        return md

    def live_line(self, event: Any) -> str | None:
        if isinstance(event, StopDecision):
            return f"     (stop detector: {event.decision}, {event.rule})"
        return None


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)
