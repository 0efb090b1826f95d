"""The ``differential`` scorer: the doctor's ranked differential, judged item by item.

The doctor's final answer may carry a ranked differential with a confidence for each
condition (a ``differential`` event with ``final = true``: the focused doctor's, a
strategy's); a doctor that gives one diagnosis has a differential of one, its
confidence unknown. The judge (its pre-check, then its model) decides the items in rank
order until one is right, so a case costs at most ``depth`` decisions and the rank of the
first right item gives top-1, top-3 and top-5 at once. The top-1 confidence against
whether the top-1 item was right gives the Brier score, the expected calibration error
and the reliability diagram's bins (:mod:`agents.measures.calibration`); the judge is
named beside every figure.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.events import EventSink
from agents.judge import JudgeUnparsed
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy
from agents.measures.calibration import BINS, bootstrap_interval, brier, ece, reliability_bins
from agents.measures.common import measure_block
from agents.scorers import Score, Transcript, Verdicts
from agents.stats import wilson_interval

__all__ = ["DifferentialScorer", "final_differential", "differential_row", "differential_summary",
           "differential_markdown", "TOP_K"]

TOP_K = (1, 3, 5)


def final_differential(events: Sequence[Mapping[str, Any]], diagnosis: str | None) -> list[tuple[str, float | None]]:
    """The final differential of a consultation's events: the last final ``differential``
    event whose first item is the diagnosis given, else the diagnosis alone (no
    confidence), else nothing."""
    if not diagnosis:
        return []
    for e in reversed(events):
        if e.get("type") == "differential" and e.get("final", True):
            items = [(str(i.get("diagnosis")), i.get("confidence")) for i in e.get("items") or []
                     if isinstance(i, Mapping) and i.get("diagnosis")]
            if items and items[0][0] == diagnosis:
                return [(d, float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None)
                        for d, c in items]
            break
    return [(diagnosis, None)]


class DifferentialScorer:
    """Top-k of the ranked differential, by the judge (see the module's docstring)."""

    name = "differential"

    def __init__(self, judge: LLM, params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=60),
                 policy: RetryPolicy = RetryPolicy(), depth: int = max(TOP_K), verdicts: Verdicts | None = None):
        self.judge, self.params, self.policy, self.depth = judge, params, policy, depth
        self.verdicts = verdicts or Verdicts()  # shared with the diagnosis scorer: its top-1 is that decision

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"consultation {transcript.status}"})
        items = final_differential(transcript.events, transcript.diagnosis)[: self.depth]
        judged: list[dict[str, Any]] = []
        rank = None
        for i, (dx, conf) in enumerate(items):
            entry: dict[str, Any] = {"diagnosis": dx, "confidence": conf, "correct": None}
            if rank is None:
                try:
                    v = self.verdicts.judge(case, dx, self.judge, self.params, self.policy, transcript.turns, sink)
                except (LLMError, JudgeUnparsed) as e:
                    return Score(self.name, None, {"items": judged}, error=f"judge failed: {e}")
                entry["correct"], entry["method"] = bool(v.correct), v.method
                if v.correct:
                    rank = i + 1
            judged.append(entry)
        details = {"items": judged, "rank": rank, "n": len(items),
                   "top1_confidence": items[0][1] if items else None,
                   "judge": getattr(self.judge, "name", "?")}
        return Score(self.name, rank or 0, details)


def differential_row(events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The row's block from the case's ``scored`` event of this scorer (None: not scored)."""
    return measure_block(events, "differential", lambda v, d: {
        "rank": d.get("rank"), "n": d.get("n"), "top1_confidence": d.get("top1_confidence"),
        "items": [{k: i.get(k) for k in ("diagnosis", "confidence", "correct")} for i in d.get("items") or []],
        "judge": d.get("judge")})


def _rate(hits: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(hits, n)
    return {"hits": hits, "n": n, "rate": round(hits / n, 4) if n else None, "ci95": [round(lo, 4), round(hi, 4)]}


def differential_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Top-k with Wilson intervals over the scored rows; Brier, ECE (bootstrap 95%
    intervals) and the reliability bins over the rows whose top-1 has a confidence."""
    blocks = [r["differential"] for r in rows if isinstance(r.get("differential"), Mapping)
              and r["differential"].get("scored") and not r.get("error") and r.get("status") != "failed"]
    if not blocks:
        return {}
    n = len(blocks)
    top = {f"top{k}": _rate(sum(1 for b in blocks if b.get("rank") and b["rank"] <= k), n) for k in TOP_K}
    pairs = [(float(b["top1_confidence"]), b.get("rank") == 1) for b in blocks
             if isinstance(b.get("top1_confidence"), (int, float))]
    judges = sorted({str(b.get("judge")) for b in blocks})
    b_ = brier(pairs)
    e_ = ece(pairs)
    return {"differential": {
        "n": n, **top, "mean_items": round(sum(b.get("n") or 0 for b in blocks) / n, 3),
        "calibration": {"n": len(pairs), "brier": None if b_ is None else round(b_, 4),
                        "brier_ci95": bootstrap_interval(pairs, brier),
                        "ece": None if e_ is None else round(e_, 4), "ece_ci95": bootstrap_interval(pairs, ece),
                        "bins": reliability_bins(pairs), "bin_count": BINS},
        "judge": ", ".join(judges)}}


def _fmt(r: Mapping[str, Any]) -> str:
    if r["rate"] is None:
        return "n/a"
    return f"{r['hits']}/{r['n']} = {r['rate']:.1%} (95% CI {r['ci95'][0]:.1%}-{r['ci95'][1]:.1%})"


def differential_markdown(summary: Mapping[str, Any]) -> list[str]:
    d = summary.get("differential")
    if not d:
        return []
    c = d["calibration"]
    md = ["", f"## Differential (judge: {d['judge']})", "",
          f"- cases: {d['n']}, mean conditions in the differential {d['mean_items']}"]
    md += [f"- top-{k}: {_fmt(d[f'top{k}'])}" for k in TOP_K]
    if c["n"]:
        bi = f" (95% CI {c['brier_ci95'][0]:.3f}-{c['brier_ci95'][1]:.3f})" if c.get("brier_ci95") else ""
        ei = f" (95% CI {c['ece_ci95'][0]:.3f}-{c['ece_ci95'][1]:.3f})" if c.get("ece_ci95") else ""
        md += [f"- top-1 confidence given in {c['n']} cases: Brier {c['brier']:.3f}{bi}, expected calibration error "
               f"{c['ece']:.3f}{ei} ({c['bin_count']} bins)"]
    else:
        md += ["- no confidence was given: no calibration"]
    return md
