"""The manipulation check of each patient behaviour (:mod:`agents.behaviours`), and the
report's behaviour table: per behaviour and level, the check and the doctor's accuracy,
each against level 0 (the cooperative patient) on the same cases and seeds.

A check is a figure of each cell, read from the row (so from the log):

- ``invented`` (fabricate, expected up) and ``contradicted`` (inconsistent, up): the share of
  the patient's utterances with that fidelity label, over those where it was decided
  (:mod:`agents.fidelity.scorer`: the pre-check, then the run's checker model);
- ``volunteered`` (withhold, down): the share of utterances that tell a fact of the case
  the question before did not ask about directly; ``no_claim`` (confusion, up): the share
  that claims nothing about the patient (both the fidelity pre-check's reading);
- ``reading_level`` (proficiency, down): the Flesch-Kincaid grade of all the patient said;
  ``words`` (expression, up): words per utterance;
- ``belief`` (cognition, up), ``hedged`` (recall, up), ``affect`` (attitude, up): the share
  of utterances with a marker from medsim's word lists (:mod:`agents.measures.speech`).

The table gives, per line, the mean over cells with its 95% interval (mean +/- 1.96
sd/sqrt(n)), its difference to level 0 paired by cell (case and seed) with its interval,
whether the check moved the expected way (the paired interval wholly on that side),
accuracy with its Wilson interval, and the paired difference in accuracy with its
Bonett-Price interval and McNemar's exact p (:mod:`agents.stats`, as ``medsim compare``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agents.behaviours import BEHAVIOURS, NO_BEHAVIOUR, behaviour_check, parse_profile
from agents.stats import mcnemar_exact, mean_interval, paired_difference_interval, wilson_interval
from agents.textsafe import md_cell

__all__ = ["Check", "CHECKS", "cell_value", "behaviour_table", "behaviour_markdown", "format_check"]


@dataclass(frozen=True)
class Check:
    """A manipulation check: its name, what it measures, the way the behaviour should move
    it (+1 up, -1 down), its kind (``rate``: a share of utterances; ``grade``; ``number``)
    and what measures it (``fidelity``: the fidelity scorer's checker; else named)."""

    name: str
    what: str
    direction: int
    kind: str
    by: str


CHECKS: dict[str, Check] = {c.name: c for c in (
    Check("invented", "utterances with an invented claim", +1, "rate", "fidelity"),
    Check("contradicted", "utterances contradicting the case", +1, "rate", "fidelity"),
    Check("volunteered", "utterances volunteering a fact not asked about directly", -1, "rate", "pre-check"),
    Check("no_claim", "utterances that claim nothing about the patient", +1, "rate", "pre-check"),
    Check("reading_level", "Flesch-Kincaid grade of the patient's speech", -1, "grade", "Flesch-Kincaid"),
    Check("words", "words per utterance", +1, "number", "word count"),
    Check("belief", "utterances stating a belief about the illness", +1, "rate", "word list"),
    Check("hedged", "utterances with an uncertainty hedge", +1, "rate", "word list"),
    Check("affect", "utterances with a worried or hostile marker", +1, "rate", "word list"),
)}
_SPEECH = {"volunteered": "volunteering", "no_claim": "no_claim", "belief": "belief", "hedged": "hedge",
           "affect": "affect"}


def cell_value(row: Mapping[str, Any], check: str) -> float | None:
    """The check's figure for one cell (None: the cell does not have it)."""
    c = CHECKS[check]
    if c.by == "fidelity":
        f = ((row.get("fidelity") or {}).get("patient") or {}) if isinstance(row.get("fidelity"), Mapping) else {}
        if not f.get("n"):
            return None
        decided = f["n"] - int((f.get("undecided") or {}).get(check, 0))
        return (f.get("labelled") or {}).get(check, 0) / decided if decided else None
    s = row.get("speech")
    if not isinstance(s, Mapping) or not s.get("utterances"):
        return None
    if check == "reading_level":
        return s.get("fk_grade")
    if check == "words":
        return s["words"] / s["utterances"]
    return s.get(_SPEECH[check], 0) / s["utterances"]


def _scored(r: Mapping[str, Any]) -> bool:
    return not r.get("error") and r.get("status") != "failed" and r.get("correct") is not None


def _cells(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], Mapping[str, Any]]:
    return {(str(r["case_id"]), int(r.get("seed", 0))): r for r in rows}


def _nan(x: float) -> float | None:
    return None if x != x else x


def _clip(lo: float, hi: float, bound: tuple[float, float] | None) -> list[float | None]:
    """An interval within ``bound`` (a rate's [0, 1]; a difference of rates' [-1, 1]); None
    for a bound n does not allow (NaN)."""
    if lo != lo or hi != hi:
        return [None, None]
    if bound is not None:
        lo, hi = max(bound[0], lo), min(bound[1], hi)
    return [lo, hi]


def _line(behaviour: str, level: int, condition: str, cells: Mapping[tuple[str, int], Mapping[str, Any]],
          ref: Mapping[tuple[str, int], Mapping[str, Any]] | None, others: str) -> dict[str, Any]:
    c = CHECKS[behaviour_check(behaviour)]
    values = {k: v for k, r in cells.items() if not r.get("error") and (v := cell_value(r, c.name)) is not None}
    m, lo, hi = mean_interval(list(values.values()))
    line: dict[str, Any] = {"behaviour": behaviour, "level": level, "condition": condition, "with": others,
                            "reference": False, "check": c.name, "what": c.what, "direction": c.direction,
                            "kind": c.kind, "by": c.by, "n": len(values), "value": _nan(m),
                            "ci95": _clip(lo, hi, (0.0, 1.0) if c.kind == "rate" else None)}
    scored = [r for r in cells.values() if _scored(r)]
    k = sum(1 for r in scored if r["correct"])
    alo, ahi = wilson_interval(k, len(scored))
    line.update(scored=len(scored), correct=k, accuracy=k / len(scored) if scored else None, accuracy_ci95=[alo, ahi])
    if ref is None:
        return line
    base = {key: v for key, r in ref.items() if not r.get("error") and (v := cell_value(r, c.name)) is not None}
    diffs = [values[key] - base[key] for key in values if key in base]
    d, dlo, dhi = mean_interval(diffs)
    line.update(check_diff=_nan(d), check_diff_ci95=_clip(dlo, dhi, (-1.0, 1.0) if c.kind == "rate" else None),
                check_paired=len(diffs), moved=_moved(c.direction, dlo, dhi, len(diffs)))
    pairs = [(ref[key], r) for key, r in cells.items() if key in ref and _scored(r) and _scored(ref[key])]
    both = sum(1 for a, b in pairs if a["correct"] and b["correct"])
    only_ref = sum(1 for a, b in pairs if a["correct"] and not b["correct"])
    only_this = sum(1 for a, b in pairs if not a["correct"] and b["correct"])
    neither = len(pairs) - both - only_ref - only_this
    line.update(paired=len(pairs), accuracy_diff=(only_this - only_ref) / len(pairs) if pairs else None,
                accuracy_diff_ci95=list(paired_difference_interval(both, only_ref, only_this, neither)),
                mcnemar_p=mcnemar_exact(only_ref, only_this))
    return line


def _moved(direction: int, lo: float, hi: float, n: int) -> str:
    """Whether the paired difference's interval lies wholly on the expected side."""
    if n < 2 or lo != lo:
        return "too few cells"
    if (direction > 0 and lo > 0) or (direction < 0 and hi < 0):
        return "yes"
    if (direction > 0 and hi < 0) or (direction < 0 and lo > 0):
        return "the other way"
    return "not shown"


def behaviour_table(rows: Sequence[Mapping[str, Any]], order: Sequence[str] | None = None, *,
                    judge: str | None = None) -> dict[str, Any] | None:
    """The behaviour table of a run (None: no condition has a behaviour). Level 0 is the
    first condition in ``order`` (default: as the rows first name them) whose patient had
    none (``reference``; None: the run has no such condition, and nothing is compared).
    ``judge``: the judge as the report names it."""
    if order is None:
        order = list(dict.fromkeys(r.get("condition", "base") for r in rows))
    by_cond = {c: [r for r in rows if r.get("condition", "base") == c] for c in order}
    by_cond = {c: rs for c, rs in by_cond.items() if rs}
    profiles = {c: parse_profile(next((r["patient_behaviour"] for r in rs if r.get("patient_behaviour")), NO_BEHAVIOUR))
                for c, rs in by_cond.items()}
    if not any(profiles.values()):
        return None
    # level 0: a condition with no profile whose cells ran (one whose every cell errored says nothing of its patient)
    ref = next((c for c, p in profiles.items() if not p and any(not r.get("error") for r in by_cond[c])), None)
    ref_cells = _cells(by_cond[ref]) if ref is not None else None
    lines: list[dict[str, Any]] = []
    for b in BEHAVIOURS:
        mine = sorted(((dict(p)[b], c) for c, p in profiles.items() if b in dict(p)), key=lambda x: x[0])
        if not mine:
            continue
        if ref is not None:
            lines.append({**_line(b, 0, ref, _cells(by_cond[ref]), None, ""), "reference": True})
        for level, c in mine:
            others = ",".join(f"{n}={lv}" for n, lv in profiles[c] if n != b)
            lines.append(_line(b, level, c, _cells(by_cond[c]), ref_cells, others))
    checkers = sorted({str(r["fidelity"].get("checker")) for r in rows if isinstance(r.get("fidelity"), Mapping)})
    return {"reference": ref, "judge": judge, "fidelity_checker": ", ".join(checkers) or "not checked", "lines": lines}


def format_check(kind: str, x: float | None, *, signed: bool = False) -> str:
    """A check's figure as the report shows it: a rate in percent, a grade or a number
    with one decimal."""
    if x is None:
        return "-"
    if kind == "rate":
        return f"{x:+.1%}" if signed else f"{x:.1%}"
    return f"{x:+.1f}" if signed else f"{x:.1f}"


def _by(line: Mapping[str, Any], table: Mapping[str, Any]) -> str:
    return f"fidelity checker: {table['fidelity_checker']}" if line["by"] == "fidelity" else line["by"]


def behaviour_markdown(table: Mapping[str, Any] | None) -> list[str]:
    """report.md's behaviour section ([] without one)."""
    if not table:
        return []
    ref = table["reference"]
    judge = table["judge"] or "the run's judge"
    md = ["", "## Patient behaviours: manipulation checks and accuracy", "",
          (f"Each level against level 0 (condition {md_cell(ref)}: the cooperative patient), paired by case and seed. "
           if ref is not None else "No condition of this run has the cooperative patient: nothing is compared. ")
          + f"Accuracy judged by {md_cell(judge)} (Wilson 95% CI; its difference Bonett-Price paired, "
          "McNemar exact). Checks: the mean over cells (95% CI), its difference paired by cell; \"moved\": that "
          "interval wholly on the expected side. Checked by: named on each line (the fidelity checker is "
          f"{md_cell(table['fidelity_checker'])}).", "",
          "| behaviour | level | condition | check (expected) | n | check (95% CI) | vs level 0 (paired, 95% CI) | moved "
          "| accuracy (95% CI) | vs level 0 (paired, 95% CI) | McNemar p | checked by |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in table["lines"]:
        kind = t["kind"]

        def fmt(x: float | None, signed: bool = False) -> str:
            return format_check(kind, x, signed=signed)
        check = f"{fmt(t['value'])} ({fmt(t['ci95'][0])}-{fmt(t['ci95'][1])})" if t["value"] is not None else "-"
        lo, hi = t["accuracy_ci95"]
        acc = (f"{t['accuracy']:.1%} ({lo:.1%}-{hi:.1%}), {t['correct']}/{t['scored']}"
               if t["accuracy"] is not None else "-")
        if t.get("reference"):
            vs_check = vs_acc = p = moved = "(level 0)"
        elif "check_diff" in t:
            dlo, dhi = t["check_diff_ci95"]
            vs_check = f"{fmt(t['check_diff'], True)} ({fmt(dlo, True)} to {fmt(dhi, True)}, n={t['check_paired']})"
            alo, ahi = t["accuracy_diff_ci95"]
            vs_acc = (f"{t['accuracy_diff']:+.1%} ({alo:+.1%} to {ahi:+.1%}, n={t['paired']})"
                      if t["accuracy_diff"] is not None else "-")
            p, moved = f"{t['mcnemar_p']:.3g}", t["moved"]
        else:
            vs_check = vs_acc = p = moved = "-"
        name = t["behaviour"] + (f" (with {t['with']})" if t["with"] else "")
        arrow = "up" if t["direction"] > 0 else "down"
        md.append(f"| {md_cell(name)} | {t['level']} | {md_cell(t['condition'])} | {t['check']} ({arrow}) | {t['n']} | "
                  f"{check} | {vs_check} | {moved} | {acc} | {vs_acc} | {p} | {md_cell(_by(t, table))} |")
    return md
