"""Result rows and the summary of OSCE encounters, built from a cell's events only (so
re-scoring rebuilds the same rows from a log). A row is keyed like a bench row: (case_id
= the persona id, seed, condition)."""
from __future__ import annotations

from statistics import mean
from typing import Any, Iterable, Mapping, Sequence

from agents.results import call_totals
from agents.scorers import Transcript
from agents.suites.osce_rubric import CATEGORIES

__all__ = ["osce_row", "summarise_osce"]


def osce_row(events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
             wall_s: float, case_id: str | None = None) -> dict[str, Any]:
    t = Transcript.from_events(events, case_id=case_id)
    started = next((e for e in events if e.get("type") == "osce_started"), {})
    persona = started.get("persona") or {}
    scored = next((e for e in events if e.get("type") == "scored" and e.get("scorer") == "osce"), None)
    d = (scored or {}).get("details") or {}
    status, error = t.status, t.error
    if d.get("error"):
        status, error = "error", d["error"]
    scores = d.get("scores") or {}
    return {
        "case_id": t.case_id, "seed": seed, "condition": condition, "suite": "osce",
        "status": status, "outcome": t.status if t.status in ("accepted", "left", "undecided") else None,
        "accepted": (t.status == "accepted") if t.status in ("accepted", "left", "undecided") else None,
        "error": error, "failure": t.failure, "turns": t.turns, "rounds": t.turns,
        "mbti": persona.get("mbti"), "gender": persona.get("gender"), "gender_drawn": persona.get("gender_drawn"),
        "case": persona.get("case"), "title": persona.get("title"),
        **{c: scores.get(c) for c in CATEGORIES}, "total": d.get("total"),
        "per_round": d.get("per_round", []), "criteria": d.get("criteria", {}),
        "strengths": d.get("strengths", []), "weaknesses": d.get("weaknesses", []),
        "key_moments": d.get("key_moments", []), "suggestions": d.get("suggestions", []),
        "judge_calls": d.get("calls"), "unjudged": d.get("unjudged"),
        # bench columns with no meaning here (kept so bench tools read the row)
        "diagnosis": None, "truth": None, "correct": None, "tests_requested": [], "n_tests": 0,
        **call_totals(events),
        "wall_s": round(wall_s, 4), "events": events_file,
    }


def _mean(xs: Iterable[Any]) -> float | None:
    v = [x for x in xs if x is not None]
    return round(mean(v), 3) if v else None


def _block(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if not r.get("error") and r.get("status") != "failed"]
    out = {"cases": len(rows), "scored": len(ok), "errors": sum(1 for r in rows if r.get("error")),
           "failed": sum(1 for r in rows if not r.get("error") and r.get("status") == "failed"),
           "accepted": sum(1 for r in ok if r.get("outcome") == "accepted"),
           "left": sum(1 for r in ok if r.get("outcome") == "left"),
           "undecided": sum(1 for r in ok if r.get("outcome") == "undecided"),
           "acceptance_rate": round(sum(1 for r in ok if r.get("outcome") == "accepted") / len(ok), 4) if ok else None,
           "mean_rounds": _mean(r.get("rounds") for r in ok)}
    for c in (*CATEGORIES, "total"):
        out[f"mean_{c}"] = _mean(r.get(c) for r in ok)
    return out


def summarise_osce(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts, acceptance and mean scores over the scored cells; errors and failed
    encounters apart; then the same per case and per MBTI type."""
    rows = list(rows)
    out = _block(rows)
    out["error_cases"] = {f"{r['case_id']} (seed {r.get('seed', 0)})": r["error"] for r in rows if r.get("error")}
    out["seeds"] = sorted({int(r.get("seed", 0)) for r in rows})
    out["by_case"] = {k: _block([r for r in rows if r.get("case") == k]) for k in sorted({r.get("case") or "?" for r in rows})}
    out["by_mbti"] = {k: _block([r for r in rows if r.get("mbti") == k]) for k in sorted({r.get("mbti") or "?" for r in rows})}
    out["prompt_tokens"] = sum(r.get("prompt_tokens") or 0 for r in rows)
    out["completion_tokens"] = sum(r.get("completion_tokens") or 0 for r in rows)
    return out
