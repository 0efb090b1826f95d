"""The ``orders`` scorer: the tests a doctor ordered against the tests the case records.

The case's recorded tests are its technician's records (:meth:`Case.records`): each
top-level record is one test, except a group that only gathers others ("Blood tests",
"Imaging": a name with no test kind or target of its own, :func:`agents.orders.test_name`),
whose records are each a test. An order is matched by the catalogue's rule
(:func:`agents.findings.match_order`, the technician's own): it is a hit when it matched a
recorded test. Orders of the physical examination (an examination, vital signs, or an
order that matched only examination findings) are counted apart, not as tests.
Precision is hits over the tests ordered (each distinct test once; an order of several
tests, "CBC; chest X-ray", is each of them: :func:`agents.orders.order_tests`), recall the recorded
tests matched over the recorded tests; F1 their harmonic mean. The cost is the run's
price table's (:func:`agents.costs.case_cost`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.costs import case_cost
from agents.events import EventSink
from agents.findings import match_order
from agents.judge import normalise
from agents.orders import is_examination, order_tests, test_name
from agents.measures.common import measure_block, static_run
from agents.scorers import Score, Transcript

__all__ = ["OrdersScorer", "recorded_tests", "order_scores", "orders_row", "orders_summary", "orders_markdown"]


def _label(key: str) -> str:
    return " ".join(str(key).replace("_", " ").split())


def _group(name: str) -> bool:
    core = test_name(name).core
    return not core or core <= {"imaging"}


def recorded_tests(case: Case) -> list[str]:
    """The case's recorded tests as record paths ("Blood Tests > Acetylcholine Receptor
    Antibodies", "Electromyography")."""
    out = []
    for key, value in case.records().items():
        name = _label(key)
        if isinstance(value, Mapping) and value and _group(name):
            out.extend(f"{name} > {_label(k)}" for k in value)
        else:
            out.append(name)
    return out


def order_scores(case: Case, orders: Sequence[str]) -> dict[str, Any]:
    """Precision, recall and F1 of ``orders`` against :func:`recorded_tests` (None where
    undefined: no test ordered, no test recorded)."""
    recorded = recorded_tests(case)
    seen: set[str] = set()
    tests, exams, hits, matched = [], [], [], set()
    for o in (t for order in orders for t in order_tests(order)):  # an order of several tests is each of them
        key = normalise(o)
        if not key or key in seen:
            continue
        seen.add(key)
        paths = [p for p, _ in match_order(case, o)]
        mine = {r for r in recorded for p in paths if p == r or p.startswith(r + " > ")}
        if not mine and (is_examination(o) or paths):  # the physical examination, not a test
            exams.append(o)
            continue
        tests.append(o)
        if mine:
            hits.append(o)
            matched |= mine
    precision = len(hits) / len(tests) if tests else None
    recall = len(matched) / len(recorded) if recorded else None
    if recall is None:
        f1 = None  # nothing recorded: nothing to find
    elif precision is None or precision + recall == 0:
        f1 = 0.0  # nothing ordered (or nothing right) while tests are recorded
    else:
        f1 = 2 * precision * recall / (precision + recall)
    r4 = lambda x: None if x is None else round(x, 4)  # noqa: E731
    return {"precision": r4(precision), "recall": r4(recall), "f1": r4(f1), "ordered": len(tests), "hits": len(hits),
            "recorded": len(recorded), "matched": len(matched), "examinations": len(exams),
            "missed": [r for r in recorded if r not in matched][:10], "off_record": [o for o in tests if o not in hits][:10]}


class OrdersScorer:
    """Tests ordered against the case's records (see the module's docstring)."""

    name = "orders"

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"consultation {transcript.status}"})
        if static_run(transcript.events):
            return Score(self.name, None, {"skipped": "static: the doctor read the whole record, ordering nothing"})
        got = order_scores(case, transcript.tests_requested)
        got.update(case_cost(transcript.events))
        return Score(self.name, got["f1"], got)


def orders_row(events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The row's block from the case's ``scored`` event of this scorer (None: not scored)."""
    return measure_block(events, "orders", lambda v, d: {k: d.get(k) for k in (
        "precision", "recall", "f1", "ordered", "hits", "recorded", "matched", "examinations", "cost")})


def _mean(xs: Sequence[float | None]) -> tuple[float | None, int]:
    v = [x for x in xs if x is not None]
    return (round(sum(v) / len(v), 4) if v else None), len(v)


def orders_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean per-case precision, recall and F1 (each over the cases where it is defined,
    with that n), pooled (micro) precision and recall, mean tests and cost per case."""
    blocks = [r["orders"] for r in rows if isinstance(r.get("orders"), Mapping) and r["orders"].get("scored")]
    if not blocks:
        return {}
    out: dict[str, Any] = {"cases": len(blocks)}
    for k in ("precision", "recall", "f1"):
        out[k], out[f"{k}_n"] = _mean([b.get(k) for b in blocks])
    ordered, hits = sum(b.get("ordered") or 0 for b in blocks), sum(b.get("hits") or 0 for b in blocks)
    rec, matched = sum(b.get("recorded") or 0 for b in blocks), sum(b.get("matched") or 0 for b in blocks)
    out["pooled_precision"] = round(hits / ordered, 4) if ordered else None
    out["pooled_recall"] = round(matched / rec, 4) if rec else None
    out["mean_ordered"] = round(ordered / len(blocks), 3)
    out["mean_examinations"] = round(sum(b.get("examinations") or 0 for b in blocks) / len(blocks), 3)
    out["mean_cost"], _ = _mean([b.get("cost") for b in blocks])
    return {"orders": out}


def orders_markdown(summary: Mapping[str, Any]) -> list[str]:
    t = summary.get("orders")
    if not t:
        return []
    f = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    return ["", "## Tests ordered (against the case's recorded tests, matched by the catalogue's rule)", "",
            f"- cases: {t['cases']}; tests ordered per case {t['mean_ordered']}, examinations {t['mean_examinations']}, "
            f"cost per case {t['mean_cost']}",
            f"- mean per case: precision {f(t['precision'])} (n {t['precision_n']}), recall {f(t['recall'])} "
            f"(n {t['recall_n']}), F1 {f(t['f1'])} (n {t['f1_n']})",
            f"- pooled: precision {f(t['pooled_precision'])}, recall {f(t['pooled_recall'])}"]
