"""``report.html`` of an OSCE run (``medsim osce``, ``medsim bench --protocol osce``):
the summary, a table of encounters and a transcript page per encounter.

A transcript page shows each round as it happened: the doctor's and the patient's
turns, replies the guards rejected (set apart), the stop decision, and the rubric
judge's category scores and per-criterion marks after the round; then a criterion x
round grid, the feedback (strengths, weaknesses, key moments, suggestions) and the
model calls. Like :mod:`medsim.html_report` (whose renderer, escaping and file helpers
it uses) it reads the run directory only, every page is one self-contained file, and
all model text is data (escaped, control and bidi characters shown as marks).

A re-scoring (``medsim score``) gets the same report in ``RUN_DIR/scores/<label>/``
with ``links_to=RUN_DIR``: its rows link to the run's own transcript pages (or, where
the run has none, to the run's event log) and to the judge's log beside them; no
transcript is written there.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.results import read_results
from agents.suites.osce_results import summarise_osce
from agents.suites.osce_rubric import CATEGORIES, WEIGHTS, Rubric, RubricError, load_rubric
# the bench report's renderer, escaping and file helpers: one way to write a page
from medsim.html_report import (TRANSCRIPTS, Plot, ReportError, call_rows, run_command, fig_uri, pyplot, read_events,
                                read_run, render_page, row_stem, write_page, rescored_links, transcript_items)

__all__ = ["write_osce_html", "osce_rounds", "stop_reason"]

_MARK = {"met": "met", "not_met": "not met", "not_relevant": "not relevant"}
_COLORS = {"empathy": "#d8705a", "persuasion": "#5a8fd8", "safety": "#7bb36a", "total": "#1d2430"}
_LEGEND_MAX = 12  # more encounters than this: no legend on the report's chart


# -- one encounter's events ------------------------------------------------------------------------
def osce_rounds(events: Sequence[Mapping[str, Any]], per_round: Sequence[Mapping[str, Any]] = (),
                rubric: Rubric | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An encounter's log as rounds: per round its transcript items (utterances, rejected
    replies, errors; :func:`medsim.html_report.transcript_items`), the stop decision,
    the judge's verdicts per category (criterion number, text, mark) and the scores
    after the round (``per_round``, a results row's). Returns (rounds, items outside
    any round)."""
    rounds: dict[int, dict[str, Any]] = {}
    after: list[dict[str, Any]] = []
    scores = {int(x["round"]): x for x in per_round if isinstance(x, Mapping) and x.get("round") is not None}

    def at(turn: Any) -> dict[str, Any] | None:
        if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
            return None
        return rounds.setdefault(turn, {"round": turn, "items": [], "stop": None, "judged": [],
                                        "scores": scores.get(turn)})

    for e in events:
        t = e.get("type")
        if t == "osce_stop":
            r = at(e.get("turn"))
            if r is not None:
                r["stop"] = {"decision": e.get("decision"), "rule": e.get("rule"), "evidence": e.get("evidence")}
        elif t == "osce_round":
            r = at(e.get("turn"))
            if r is not None:
                verdicts = e.get("verdicts") if isinstance(e.get("verdicts"), Mapping) else {}
                marks = []
                for k, v in sorted(verdicts.items(), key=lambda kv: _number(kv[0])):
                    marks.append({"number": k, "text": _criterion_text(rubric, k), "mark": v,
                                  "label": _MARK.get(v, str(v))})
                r["judged"].append({"category": e.get("category"), "method": e.get("method"), "note": e.get("note"),
                                    "marks": marks})
        else:
            for it in transcript_items([e]):
                r = at(it.get("turn"))
                (r["items"] if r is not None else after).append(it)
    for n, s in scores.items():  # a round the judge scored but the log no longer has (a torn log)
        at(n)
    return [rounds[k] for k in sorted(rounds)], after


def _number(key: Any) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        return 10 ** 6


def _criterion_text(rubric: Rubric | None, key: Any) -> str | None:
    if rubric is None:
        return None
    try:
        return rubric.get(int(key)).text
    except (ValueError, StopIteration):
        return None


def stop_reason(events: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> str:
    """Why the encounter ended, in a few words: the patient's decision and how it was
    read, the round limit, a failure or an error."""
    if row.get("error"):
        return "error"
    if row.get("status") == "failed":
        return "failed: " + str(row.get("failure") or "a role kept failing")
    for e in reversed(events):
        if e.get("type") == "osce_stop" and e.get("decision") in ("accepted", "left"):
            return f"{e['decision']} in round {e.get('turn')} ({e.get('rule')})"
    limit = next((e for e in events if e.get("type") == "turn_limit"), None)
    if limit is not None:
        return f"round limit ({limit.get('max_turns')})"
    return str(row.get("outcome") or row.get("status") or "-")


def _criteria_grid(rounds: Sequence[Mapping[str, Any]], final: Mapping[str, Any], rubric: Rubric | None
                   ) -> list[dict[str, Any]]:
    """Per criterion: its category, text, the mark it was given in each round (None: not
    asked that round) and its state at the end."""
    seen: dict[str, str | None] = {}
    if rubric is not None:
        seen = {str(c.number): c.category for c in rubric.criteria}
    for r in rounds:
        for j in r["judged"]:
            for m in j["marks"]:
                seen.setdefault(str(m["number"]), j["category"])
    for k in final:
        seen.setdefault(str(k), None)
    out = []
    for k in sorted(seen, key=_number):
        cells = []
        for r in rounds:
            mark = next((m["mark"] for j in r["judged"] for m in j["marks"] if str(m["number"]) == k), None)
            cells.append(mark)
        state = final.get(k)
        out.append({"number": k, "category": seen[k], "text": _criterion_text(rubric, k), "cells": cells,
                    "final": state, "final_label": _MARK.get(state, state) if state else "not judged"})
    return out


# -- plots ---------------------------------------------------------------------------------------
def _nan(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _encounter_plot(per_round: Sequence[Mapping[str, Any]]) -> Plot | None:
    """The scores after each round of one encounter: the three categories and the total."""
    if not per_round:
        return None
    plt = pyplot()
    xs = [int(x.get("round", i + 1)) for i, x in enumerate(per_round)]
    fig, ax = plt.subplots(figsize=(7.5, 2.6), dpi=100)
    for key in (*CATEGORIES, "total"):
        ax.plot(xs, [_nan(x.get(key)) for x in per_round], marker="o", markersize=3.5, color=_COLORS[key],
                linewidth=2.4 if key == "total" else 1.4, label=key)
    _axes(ax, xs)
    ax.legend(fontsize=8, loc="lower right", ncol=4)
    fig.tight_layout()
    return Plot("Scores after each round", "line chart of the empathy, persuasion, safety and total scores (0-10) "
                "after each round", fig_uri(fig))


def _run_plot(rows: Sequence[Mapping[str, Any]]) -> Plot | None:
    """The weighted total after each round, one line per encounter, and their mean."""
    seeds = len({r.get("seed", 0) for r in rows}) > 1
    series = [(str(r.get("case_id")) + (f" (seed {r.get('seed', 0)})" if seeds else ""), r.get("per_round") or [])
              for r in rows]
    series = [(name, pr) for name, pr in series if pr]
    if not series:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=100)
    longest = max(len(pr) for _, pr in series)
    for name, pr in series:
        ax.plot([int(x.get("round", i + 1)) for i, x in enumerate(pr)], [_nan(x.get("total")) for x in pr],
                marker="o", markersize=3, linewidth=1.2, alpha=0.75, label=name if len(series) <= _LEGEND_MAX else None)
    xs = list(range(1, longest + 1))
    means = []
    for i in xs:
        v = [_nan(x.get("total")) for _, pr in series for x in pr if int(x.get("round", 0)) == i]
        v = [a for a in v if not math.isnan(a)]
        means.append(sum(v) / len(v) if v else math.nan)
    if len(series) > 1:
        ax.plot(xs, means, color="#1d2430", linewidth=2.6, linestyle="--", label="mean")
    _axes(ax, xs)
    ax.set_ylabel("total (30/40/30)")
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.01, 0.5))  # past _LEGEND_MAX: the mean only
    fig.tight_layout()
    return Plot("Weighted total after each round (dashed: the mean over the encounters that reached the round)",
                "line chart of each encounter's weighted total score (0-10) after each round, and the mean",
                fig_uri(fig))


def _axes(ax: Any, xs: Sequence[int]) -> None:
    ax.set_ylim(-0.3, 10.3)
    ax.set_xlim(0.7, max(xs, default=1) + 0.3)
    ax.set_xticks(xs)
    ax.set_xlabel("round")
    ax.grid(alpha=0.3)


def _plot_or_none(make: Any, *args: Any) -> Plot | None:
    try:
        return make(*args)
    except ImportError:  # matplotlib missing: the tables stand without the picture
        return None


# -- the report -----------------------------------------------------------------------------------
def _load_rubric(spec: Mapping[str, Any]) -> Rubric | None:
    try:
        return load_rubric(spec.get("rubric"))
    except RubricError:  # a rubric file moved since: the marks are shown by number
        return None


def _feedback(row: Mapping[str, Any]) -> list[tuple[str, list[Any]]]:
    return [(label, list(row.get(key) or [])) for key, label in (
        ("strengths", "Strengths"), ("weaknesses", "Weaknesses"), ("key_moments", "Key moments"),
        ("suggestions", "Suggestions"))]


def write_osce_html(out: Path, rows: Sequence[Mapping[str, Any]] | None = None, *, title: str | None = None,
                    run: Mapping[str, Any] | None = None, models: Mapping[str, str] | None = None,
                    links_to: Path | None = None) -> Path:
    """Write ``out``/report.html, and a transcript page per encounter under
    ``out/transcripts/``; returns the report's path. ``rows``: results rows (default:
    ``out/results.jsonl``); ``run``: the run.json (default: ``out``'s); ``links_to``: a
    re-scoring's run directory, whose transcript pages the rows link to (none written)."""
    out = Path(out)
    src = Path(links_to) if links_to is not None else out  # where the encounters' logs are
    if run is None:
        run = read_run(src)
    if rows is None:
        if not (out / "results.jsonl").is_file():
            raise ReportError(f"{out}: not a medsim OSCE run (no results.jsonl)")
        rows = read_results(out / "results.jsonl")
    whole = dict(run.get("spec") or {})
    spec = {**whole, **(whole.get("osce") or {})}  # the [osce] section beside the run's seeds and roles
    rubric = _load_rubric(spec)
    summary = summarise_osce(rows)
    title = title or f"medsim osce: {spec.get('requested') or out.name}"
    header: dict[str, Any] = {}
    encounters = []
    for r in rows:
        stem = row_stem(r)
        log = src / "events" / f"{stem}.jsonl" if stem else None
        events = read_events(log) if log is not None and log.is_file() else []
        if not header:
            header = next((e for e in events if e.get("type") == "header"), {})
        href = judge_href = None
        if links_to is None and events:
            label = f"{r.get('case_id')} (seed {r.get('seed', 0)})"
            _write_transcript(out, r, stem, events, f"{label}: {title}", rubric)
            href = f"{TRANSCRIPTS}/{stem}.html"
        elif links_to is not None:
            href, judge_href = rescored_links(out, src, stem)
        encounters.append({"row": r, "href": href, "judge_href": judge_href, "stop": stop_reason(events, r),
                           "rejected": sum(1 for e in events if e.get("type") == "reply_rejected")})
    failed = [(f"{r.get('case_id')} (seed {r.get('seed', 0)}, round {r.get('rounds')})", r.get("failure"))
              for r in rows if not r.get("error") and r.get("status") == "failed"]
    plot = _plot_or_none(_run_plot, rows)
    html = render_page("osce_report.html.j2", title=title, run=run, spec=spec, summary=summary, encounters=encounters,
                   failed=failed, plot=plot, command=run_command(run) or run_command(header),
                   models=models or header.get("models") or {}, weights=WEIGHTS, categories=CATEGORIES,
                   git_revision=run.get("git_revision") or header.get("git_revision"),
                   started=run.get("started") or header.get("started"), rescored_from=links_to is not None,
                   spec_json=json.dumps(whole, indent=2, ensure_ascii=False))
    path = out / "report.html"
    write_page(path, html)
    return path


def _write_transcript(out: Path, row: Mapping[str, Any], stem: str, events: Sequence[Mapping[str, Any]], title: str,
                      rubric: Rubric | None) -> None:
    per_round = row.get("per_round") or []
    rounds, after = osce_rounds(events, per_round, rubric)
    started = next((e for e in events if e.get("type") == "osce_started"), {})
    html = render_page("osce_transcript.html.j2", title=title, row=row, rounds=rounds, after=after,
                   persona=started.get("persona") or {}, brief=started.get("doctor_brief") or {},
                   header=next((e for e in events if e.get("type") == "header"), {}),
                   stop=stop_reason(events, row), grid=_criteria_grid(rounds, row.get("criteria") or {}, rubric),
                   feedback=_feedback(row), plot=_plot_or_none(_encounter_plot, per_round), categories=CATEGORIES,
                   calls=call_rows(events), events_href=f"../events/{stem}.jsonl", n_events=len(events), marks=_MARK)
    write_page(out / TRANSCRIPTS / f"{stem}.html", html)
