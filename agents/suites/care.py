"""AutoMedic's CARE metric: a scorer over each finished log and a summary over a run.

Per case (:class:`CareScorer`, scorer ``care``, from the ``automedic_*`` events of
``agents.suites.automedic``): whether the answer after the dialogue and the static
answer are right, the doctor's dialogue turns and words, the patient's empathy rating,
and the robustness failure (if any). :class:`McqScorer` (scorer ``diagnosis``) is the
row's ``correct``: the option letter against the key, deterministic (no judge).

Over a run (:func:`care_summary`, N = cases that did not end in an error):

- **accuracy** = conv_acc x conv_acc / static_acc, conv_acc = right answers after the
  dialogue / N (a failed consultation, with no answer, counts as wrong; so does an
  answer naming no option), static_acc = right static answers / cases with a static
  answer. *Not clipped*: a conversation that beats the static answer gives more than 1
  (``accuracy_clipped`` = min(1, accuracy) is given beside it). static_acc = 0:
  accuracy is None (undefined, said in ``notes``), never a division by zero or 0.
- **efficiency** = 100 x the mean, over cases answered right after the dialogue, of
  1 / (the doctor's average words per dialogue turn). Words: runs of letters or digits
  (an apostrophe or hyphen inside joins them) in what the doctor said to the patient or
  the staff, tags left out; the ``</end>`` turn and the answer to the question are not
  dialogue turns. A right case whose doctor said no word is left out (1/0); no right
  case: None.
- **empathy** = the mean patient rating normalised to 0-1 as (rating - 1) / 4; cases
  with no parsable rating are left out (counted in ``unrated``).
- **robustness** = 1 - failed / N; a case failed when a role kept breaking (medsim's
  guards: status failed), the dialogue lasted 3 turns or fewer (the ``</end>`` turn
  counted), or the answer after the dialogue named no option.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from agents.cases.model import Case
from agents.events import EventSink
from agents.scorers import Score, Transcript
from agents.textsafe import md_cell, md_text

__all__ = ["McqScorer", "CareScorer", "care_details", "care_summary", "count_words", "MIN_TURNS", "care_markdown"]

MIN_TURNS = 3  # a dialogue of this many turns or fewer is a robustness failure
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")


def count_words(text: str) -> int:
    from agents.suites.automedic import strip_tags

    return len(_WORD.findall(strip_tags(text)))


def _answers(events: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {e["mode"]: e for e in events if e.get("type") == "automedic_answer"}


def care_details(transcript: Transcript) -> dict[str, Any]:
    """One case's CARE components from its consultation events."""
    ev = transcript.events
    answers = _answers(ev)
    conv, static = answers.get("conversation"), answers.get("static")
    end = next((e for e in ev if e.get("type") == "automedic_dialogue_ended"), None)
    turns = end["turn"] if end is not None else transcript.turns
    spoken = [e for e in ev if e.get("type") == "utterance" and e.get("speaker") == "doctor"
              and e.get("addressee") in ("patient", "measurement")]
    words = sum(count_words(e.get("text") or "") for e in spoken)
    rating = next((e.get("rating") for e in ev if e.get("type") == "automedic_empathy"), None)
    failure = None
    if transcript.status == "failed":
        failure = "role_break"
    elif turns <= MIN_TURNS:
        failure = "short_dialogue"
    elif conv is not None and conv.get("letter") is None:
        failure = "answer_not_in_options"
    return {
        "answer_letter": (conv or static or {}).get("answer_letter"),
        "conv_letter": conv.get("letter") if conv else None,
        "conv_correct": bool(conv and conv.get("letter") is not None and conv["letter"] == conv["answer_letter"]),
        "static_letter": static.get("letter") if static else None,
        "static_correct": (static.get("letter") == static.get("answer_letter")) if static else None,
        "dialogue_turns": turns, "doctor_turns": len(spoken), "doctor_words": words,
        "words_per_turn": round(words / len(spoken), 4) if spoken else None,
        "empathy": rating, "failure": failure,
    }


class McqScorer:
    """The chosen option against the answer key (the row's ``correct``)."""

    name = "diagnosis"

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"consultation {transcript.status}"})
        conv = _answers(transcript.events).get("conversation")
        if conv is None:
            return Score(self.name, None, {}, error="the log holds no answer to the question")
        return Score(self.name, conv.get("letter") == conv["answer_letter"],
                     {"method": "mcq", "rule": conv.get("rule"), "letter": conv.get("letter"),
                      "answer_letter": conv["answer_letter"]})


class CareScorer:
    """Per-case CARE components (``value``: True when the case did not fail)."""

    name = "care"

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status == "error":
            return Score(self.name, None, {"skipped": "consultation error"})
        d = care_details(transcript)
        return Score(self.name, d["failure"] is None, d)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def care_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """CARE over rows that carry ``care`` (see the module's docstring); None when none do."""
    rows = [r for r in rows if isinstance(r.get("care"), Mapping) and not r.get("error")]
    if not rows:
        return None
    n = len(rows)
    cares = [r["care"] for r in rows]
    conv_acc = sum(1 for c in cares if c.get("conv_correct")) / n
    statics = [c for c in cares if c.get("static_correct") is not None]
    static_acc = (sum(1 for c in statics if c["static_correct"]) / len(statics)) if statics else None
    notes: list[str] = []
    if not static_acc:
        accuracy = None
        notes.append("static accuracy is 0 (or no static answers): CARE accuracy is undefined")
    else:
        accuracy = conv_acc * conv_acc / static_acc
    inv = [1.0 / c["words_per_turn"] for c in cares if c.get("conv_correct") and c.get("words_per_turn")]
    efficiency = 100.0 * inv_mean if (inv_mean := _mean(inv)) is not None else None
    ratings = [c["empathy"] for c in cares if isinstance(c.get("empathy"), int)]
    empathy = _mean([(x - 1) / 4 for x in ratings])
    failed = [c for c in cares if c.get("failure")]
    reasons: dict[str, int] = {}
    for c in failed:
        reasons[c["failure"]] = reasons.get(c["failure"], 0) + 1

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return {"cases": n, "conv_acc": r(conv_acc), "static_acc": r(static_acc), "accuracy": r(accuracy),
            "accuracy_clipped": r(min(1.0, accuracy)) if accuracy is not None else None,
            "efficiency": r(efficiency), "empathy": r(empathy), "robustness": r(1 - len(failed) / n),
            "failed": len(failed), "failures": reasons, "unrated": n - len(ratings),
            "correct_with_words": len(inv), "notes": notes}


def care_markdown(summary: Mapping[str, Any]) -> list[str]:
    """report.md's CARE section (the run, then each condition that has CARE)."""
    blocks = [("all cases", summary.get("care"))]
    blocks += [(name, c.get("care")) for name, c in (summary.get("conditions") or {}).items()]
    blocks = [(n, c) for n, c in blocks if c]
    if not blocks:
        return []

    def f(x: Any) -> str:
        return "n/a" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)

    md = ["", "## CARE (AutoMedic)", "",
          "accuracy = conv_acc^2 / static_acc (not clipped; clipped beside it), efficiency = 100 x mean over right "
          "answers of 1 / words per doctor turn, empathy = (patient rating - 1) / 4, robustness = 1 - failed share "
          "(role break, 3 turns or fewer, answer not among the options); see agents/suites/care.py", "",
          "| cases | conv acc | static acc | accuracy | accuracy (clipped) | efficiency | empathy | robustness | "
          "failures |", "|---|---|---|---|---|---|---|---|---|"]
    for name, c in blocks:
        fails = md_cell(", ".join(f"{k} {v}" for k, v in sorted(c["failures"].items())) or "none")
        md.append(f"| {md_cell(name)} ({c['cases']}) | {f(c['conv_acc'])} | {f(c['static_acc'])} | "
                  f"{f(c['accuracy'])} | {f(c['accuracy_clipped'])} | {f(c['efficiency'])} | {f(c['empathy'])} | {f(c['robustness'])} | "
                  f"{fails} |")
    notes = [f"- {md_text(name)}: {md_text(n)}" for name, c in blocks for n in c.get("notes", [])]
    return md + ([""] + notes if notes else [])
