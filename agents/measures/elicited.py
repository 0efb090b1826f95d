"""The ``elicited`` scorer: which of the case's facts reached the doctor.

A case's facts, by category: what the patient knows (the sentences of
:func:`agents.fidelity.facts.case_facts`, by section: the complaint, the history of the
illness, symptoms, past history, social and family history, the review of systems; the
demographics are told to every doctor at the start and are not counted), the
examination findings and the test results (each record of the case, one finding per
value). A patient fact reached the doctor when one patient utterance asserts or denies
at least half of its concepts (lay words folded: "my tummy hurts" carries "abdominal
pain"); a record reached the doctor when an order matched it (:mod:`agents.orders`) and
the reply to that order holds at least half of its value's words and numbers. Recall is
per category and overall; a static run (the doctor read the whole record) is not scored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agents.cases.model import Case, flatten
from agents.events import EventSink
from agents.fidelity.facts import case_facts, claim_concepts
from agents.findings import match_order, tokens
from agents.measures.common import measure_block, static_run
from agents.scorers import Score, Transcript
from agents.stats import wilson_interval

__all__ = ["ElicitationScorer", "Item", "case_items", "reached", "elicited_row", "elicited_summary",
           "elicited_markdown", "CATEGORIES"]

# the patient facts' sections as categories, then the records'
_CATEGORY = {"complaint": "complaint", "history": "history", "symptoms": "symptoms", "pmh": "past history",
             "social": "social history", "family": "family history", "ros": "review of systems", "other": "other"}
CATEGORIES = ("complaint", "history", "symptoms", "past history", "social history", "family history",
              "review of systems", "other", "examination", "test results")
_SHARE = 0.5


@dataclass(frozen=True)
class Item:
    """One fact of the case: its category, its text, and what recognises it (a patient
    fact's concepts; a record's path and value words)."""

    category: str
    text: str
    concepts: frozenset[str] = frozenset()
    path: str = ""
    words: frozenset[str] = frozenset()


def case_items(case: Case) -> list[Item]:
    """The case's facts as :class:`Item` (see the module's docstring)."""
    got = case.__dict__.get("_elicited_items")
    if got is not None:
        return got
    out = [Item(_CATEGORY.get(f.section, "other"), f.text, concepts=f.asserted | f.denied)
           for f in case_facts(case).facts if f.section != "demographics" and (f.asserted | f.denied)]
    for category, section in (("examination", case.exam), ("test results", case.records())):
        for path, value in flatten(section):
            words = frozenset(tokens(value))
            if words:
                out.append(Item(category, f"{' > '.join(path)}: {value}", path=" > ".join(path), words=words))
    object.__setattr__(case, "_elicited_items", out)  # a cache, not state: same case, same items
    return out


def _covers(have: frozenset[str], want: frozenset[str]) -> bool:
    return bool(want) and len(have & want) >= max(1, _SHARE * len(want))


def reached(case: Case, events: Sequence[Mapping[str, Any]]) -> list[bool]:
    """For each of :func:`case_items`, whether it reached the doctor in ``events``."""
    said = [frozenset(c for c, _ in claim_concepts(str(e.get("text") or ""))) for e in events
            if e.get("type") == "utterance" and e.get("speaker") == "patient"]
    results = [(str(e.get("test") or ""), frozenset(tokens(str(e.get("result") or "")))) for e in events
               if e.get("type") == "test_result"]
    matched: list[tuple[frozenset[str], frozenset[str]]] = []  # (paths the order matched, the reply's words)
    for test, words in results:
        matched.append((frozenset(p for p, _ in match_order(case, test)), words))
    out = []
    for it in case_items(case):
        if it.path:
            out.append(any(it.path in paths and _covers(words, it.words) for paths, words in matched))
        else:
            out.append(any(_covers(s, it.concepts) for s in said))
    return out


class ElicitationScorer:
    """Information elicited (see the module's docstring); a deterministic reading of the
    log, no model."""

    name = "elicited"

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"consultation {transcript.status}"})
        if static_run(transcript.events):
            return Score(self.name, None, {"skipped": "static: the doctor read the whole record"})
        items = case_items(case)
        got = reached(case, transcript.events)
        per: dict[str, list[int]] = {}
        for it, ok in zip(items, got):
            c = per.setdefault(it.category, [0, 0])
            c[0] += int(ok)
            c[1] += 1
        total = len(items)
        recall = sum(got) / total if total else None
        return Score(self.name, None if recall is None else round(recall, 4), {
            "reached": sum(got), "facts": total, "categories": {k: {"reached": a, "facts": b} for k, (a, b) in per.items()},
            "missed": [it.text[:160] for it, ok in zip(items, got) if not ok][:12]})


def elicited_row(events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The row's block from the case's ``scored`` event of this scorer (None: not scored)."""
    return measure_block(events, "elicited", lambda v, d: {"recall": v, "reached": d.get("reached"),
                                                          "facts": d.get("facts"),
                                                          "categories": d.get("categories") or {}})


def elicited_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Recall over the scored rows: the mean of the cases' recalls, and pooled per
    category and overall (facts reached over facts, Wilson 95% intervals)."""
    blocks = [r["elicited"] for r in rows if isinstance(r.get("elicited"), Mapping) and r["elicited"].get("scored")
              and r["elicited"].get("facts")]
    if not blocks:
        return {}
    per: dict[str, list[int]] = {}
    for b in blocks:
        for k, v in (b.get("categories") or {}).items():
            c = per.setdefault(k, [0, 0])
            c[0] += int(v.get("reached") or 0)
            c[1] += int(v.get("facts") or 0)
    reached_, facts = sum(b["reached"] for b in blocks), sum(b["facts"] for b in blocks)

    def rate(a: int, n: int) -> dict[str, Any]:
        lo, hi = wilson_interval(a, n)
        return {"reached": a, "facts": n, "recall": round(a / n, 4) if n else None, "ci95": [round(lo, 4), round(hi, 4)]}

    return {"elicited": {"cases": len(blocks), "mean_recall": round(sum(b["recall"] for b in blocks) / len(blocks), 4),
                         "pooled": rate(reached_, facts),
                         "categories": {k: rate(*per[k]) for k in CATEGORIES if k in per}}}


def elicited_markdown(summary: Mapping[str, Any]) -> list[str]:
    e = summary.get("elicited")
    if not e:
        return []
    p = e["pooled"]
    md = ["", "## Information elicited (facts of the case that reached the doctor; deterministic, no model)", "",
          f"- cases: {e['cases']}; mean recall per case {e['mean_recall']:.1%}; pooled {p['reached']}/{p['facts']} = "
          f"{p['recall']:.1%} (95% CI {p['ci95'][0]:.1%}-{p['ci95'][1]:.1%})", "",
          "| category | reached | facts | recall | 95% CI |", "|---|---|---|---|---|"]
    for k, v in e["categories"].items():
        md.append(f"| {k} | {v['reached']} | {v['facts']} | {v['recall']:.1%} | {v['ci95'][0]:.1%}-{v['ci95'][1]:.1%} |")
    return md
