"""The rubric judge: a scorer over a finished encounter's log.

For each round r and each category, one judge call sees the conversation up to round r
and the category's criteria that are not met yet, and answers a bounded JSON object
(one key per criterion, each an enum: met | not_met | not_relevant; llama.cpp and
servers constrain decoding to it). A category whose criteria are all met already is not
asked again (``skipped``). So a 10-round encounter costs at most 30 short calls, usually
fewer. Every verdict is an ``osce_round`` event; the math is
:mod:`agents.suites.osce_rubric`.

Strengths, weaknesses, key moments and suggestions are derived by rule from the
criteria (no extra model call): strengths are the criteria met (in the order they were
first met), weaknesses those not met at the end, key moments the rounds where criteria
were first met or lost and where the patient decided, suggestions each weakness with the
rubric's good example.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from agents.events import EventSink
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render
from agents.scorers import Score, Transcript
from agents.suites.osce_events import RoundJudged
from agents.suites.osce_rubric import (CATEGORIES, LABELS, Criterion, Rubric, category_scores, cumulative, load_rubric,
                                       normalise_label, weighted_total)

__all__ = ["OsceRubricScorer", "judge_schema", "judge_user_text", "parse_judgement", "rounds_of", "score_rounds",
           "feedback", "JUDGE_PARAMS"]

JUDGE_PARAMS = GenerateParams(temperature=0.0, max_tokens=200)
_PAIR = re.compile(r'"?c(\d+)"?\s*[:=]\s*"?([A-Za-z_ /]+)"?')


def judge_schema(criteria: Sequence[Criterion]) -> dict[str, Any]:
    keys = [c.key for c in criteria]
    return {"type": "object", "properties": {k: {"type": "string", "enum": list(LABELS)} for k in keys},
            "required": keys, "additionalProperties": False}


def rounds_of(events: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, str]]:
    """(round, doctor's words, patient's words) from a log's utterances."""
    by: dict[int, dict[str, str]] = {}
    for e in events:
        if e.get("type") == "utterance" and e.get("speaker") in ("doctor", "patient"):
            by.setdefault(int(e["turn"]), {})[e["speaker"]] = e["text"]
    return [(r, d.get("doctor", ""), d.get("patient", "")) for r, d in sorted(by.items())]


def _transcript(rounds: Sequence[tuple[int, str, str]]) -> str:
    out = []
    for _, doc, pat in rounds:
        out.append(f"Doctor: {doc}")
        if pat:
            out.append(f"Patient: {pat}")
    return "\n".join(out)


def judge_user_text(rounds: Sequence[tuple[int, str, str]], category: str, criteria: Sequence[Criterion]) -> str:
    crit = "\n".join(f'- {c.key}: {c.text} (good: "{c.good}"; bad: "{c.bad}")' for c in criteria)
    return render("osce_judge_user", round=rounds[-1][0] if rounds else 0, transcript=_transcript(rounds),
                  category=category, criteria=crit, keys=", ".join(c.key for c in criteria))


def parse_judgement(text: str, criteria: Sequence[Criterion]) -> tuple[dict[int, str], list[int]]:
    """A judge reply -> ({criterion number: label}, numbers missing or unreadable). A
    whole JSON object, one in a code fence or prose, or ``c3: met`` pairs (a reply cut
    off mid-object keeps the pairs it has)."""
    wanted = {c.number for c in criteria}
    got: dict[int, str] = {}
    m = re.search(r"\{.*\}", text, re.DOTALL)
    obj = None
    if m:
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            obj = None
    if isinstance(obj, dict):
        for k, v in obj.items():
            km = re.fullmatch(r"c?(\d+)", str(k).strip().lower())
            lab = normalise_label(v)
            if km and lab and int(km.group(1)) in wanted:
                got[int(km.group(1))] = lab
    else:
        for km in _PAIR.finditer(text):
            lab = normalise_label(km.group(2))
            if lab and int(km.group(1)) in wanted:
                got.setdefault(int(km.group(1)), lab)
    return got, sorted(wanted - set(got))


def score_rounds(per_round: Sequence[Mapping[int, str]], rubric: Rubric) -> list[dict[str, Any]]:
    """Per round: the state so far (criterion -> label), category scores and the total."""
    out = []
    for i, state in enumerate(cumulative(per_round), start=1):
        cats = category_scores(state, rubric)
        out.append({"round": i, "state": {str(k): v for k, v in sorted(state.items())},
                    "categories": cats, "total": weighted_total({c: v["score"] for c, v in cats.items()})})
    return out


def feedback(rounds: Sequence[Mapping[str, Any]], rubric: Rubric, stops: Sequence[Mapping[str, Any]],
             limit: int = 5) -> dict[str, list[str]]:
    """Rule-derived strengths, weaknesses, key moments and suggestions (see the module doc)."""
    first_met: dict[int, int] = {}
    moments: list[str] = []
    prev: Mapping[str, str] = {}
    for r in rounds:
        st = r["state"]
        new = [int(k) for k, v in st.items() if v == "met" and prev.get(k) != "met"]
        lost = [int(k) for k, v in st.items() if v == "not_met" and prev.get(k) != "not_met"]
        for n in new:
            first_met.setdefault(n, r["round"])
        if new:
            moments.append(f"round {r['round']}: met " + "; ".join(f"{n} ({rubric.get(n).text})" for n in sorted(new)))
        if lost:
            moments.append(f"round {r['round']}: not met " + "; ".join(f"{n} ({rubric.get(n).text})" for n in sorted(lost)))
        prev = st
    for s in stops:
        if s.get("decision") in ("accepted", "left"):
            moments.append(f"round {s['turn']}: the patient {s['decision']} ({s['rule']}: {s.get('evidence', '')[:120]})")
    final = rounds[-1]["state"] if rounds else {}
    strengths = [f"{rubric.get(n).text} ({rubric.get(n).category}, round {r})"
                 for n, r in sorted(first_met.items(), key=lambda kv: (kv[1], kv[0]))][:limit]
    weak = [rubric.get(int(k)) for k, v in final.items() if v == "not_met"]
    weak.sort(key=lambda c: (CATEGORIES.index(c.category), c.number))
    return {"strengths": strengths, "weaknesses": [f"{c.text} ({c.category})" for c in weak][:limit],
            "key_moments": moments, "suggestions": [f"{c.text}: for example, \"{c.good}\"" for c in weak][:limit]}


class OsceRubricScorer:
    """The 30-criterion rubric over a finished encounter (see the module doc). Its value
    is the weighted total (0-10; None when nothing could be assessed)."""

    name = "osce"

    def __init__(self, judge: LLM, params: GenerateParams = JUDGE_PARAMS, policy: RetryPolicy = RetryPolicy(),
                 rubric: Rubric | None = None, parse_retries: int = 1):
        self.judge, self.params, self.policy = judge, params, policy
        self.rubric = rubric or load_rubric()
        self.parse_retries = parse_retries

    def _ask(self, case_id: str, r: int, text: str, criteria: Sequence[Criterion], sink: EventSink) -> tuple[dict[int, str], str]:
        params = replace(self.params, response_schema=json.dumps(judge_schema(criteria), sort_keys=True), stop=())
        messages = [Message("system", render("osce_judge")), Message("user", text)]
        got: dict[int, str] = {}
        missing = [c.number for c in criteria]
        for attempt in range(self.parse_retries + 1):
            out = generate_logged(self.judge, messages, params, CallContext("judge", case_id, r), sink, self.policy)
            more, missing = parse_judgement(out.text, [c for c in criteria if c.number in missing])
            got.update(more)
            if not missing:
                return got, ""
            keys = ", ".join(f"c{n}" for n in missing)
            messages = [*messages, Message("assistant", out.text),
                        Message("user", f"Reply with one JSON object only, with the keys {keys}, each \"met\", "
                                        "\"not_met\" or \"not_relevant\".")]
        return got, f"no verdict for {', '.join(f'c{n}' for n in missing)} after {self.parse_retries + 1} attempt(s)"

    def __call__(self, case: Any, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"encounter {transcript.status}"})
        rounds = rounds_of(transcript.events)
        if not rounds:
            return Score(self.name, None, {"skipped": "no rounds"})
        case_id = transcript.case_id
        per_round: list[dict[int, str]] = []
        state: dict[int, str] = {}
        calls = unjudged = 0
        errors: list[str] = []
        for i, (r, _, _) in enumerate(rounds):
            verdicts: dict[int, str] = {}
            for cat in CATEGORIES:
                todo = [c for c in self.rubric.by_category(cat) if state.get(c.number) != "met"]
                if not todo:
                    sink.emit(RoundJudged(turn=r, category=cat, verdicts={}, method="skipped",
                                          note="every criterion already met"))
                    continue
                calls += 1
                try:
                    got, note = self._ask(case_id, r, judge_user_text(rounds[: i + 1], cat, todo), todo, sink)
                except LLMError as e:
                    unjudged += 1
                    errors.append(str(e))
                    sink.emit(RoundJudged(turn=r, category=cat, verdicts={}, method="unjudged", note=str(e)))
                    continue
                if not got:
                    unjudged += 1
                sink.emit(RoundJudged(turn=r, category=cat, verdicts={str(k): v for k, v in sorted(got.items())},
                                      method="llm" if got else "unjudged", note=note))
                verdicts.update(got)
            per_round.append(verdicts)
            state = cumulative([state, verdicts])[-1]
        if calls and unjudged == calls:
            return Score(self.name, None, {"calls": calls, "unjudged": unjudged},
                         error=f"judge failed: {errors[-1] if errors else 'no call gave a readable verdict'}")
        scored = score_rounds(per_round, self.rubric)
        session = scored[-1]
        stops = [e for e in transcript.events if e.get("type") == "osce_stop"]
        return Score(self.name, session["total"], {
            "outcome": transcript.status, "accepted": transcript.status == "accepted", "rounds": len(rounds),
            "categories": session["categories"], "total": session["total"],
            "scores": {c: session["categories"][c]["score"] for c in CATEGORIES},
            "per_round": [{"round": x["round"], "total": x["total"],
                           **{c: x["categories"][c]["score"] for c in CATEGORIES}} for x in scored],
            "criteria": session["state"], "calls": calls, "unjudged": unjudged,
            "feedback_method": "rule-derived from the criteria", **feedback(scored, self.rubric, stops),
            "rubric": self.rubric.source.rsplit("/", 1)[-1], "judge": getattr(self.judge, "name", "?")})
