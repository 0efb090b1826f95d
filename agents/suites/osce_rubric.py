"""The OSCE rubric: 30 criteria in three categories, and the scoring math.

Each criterion is judged, per round, over the conversation so far, as ``met``,
``not_met`` or ``not_relevant``. The state after round k (:func:`cumulative`):

- ``met`` is kept once reached: a one-time item (asking about allergies) done in round 3
  stays met in rounds 4..N. (OSCE-Project judges only the latest message, so such an
  item swings 0 -> 10 -> 0.) A later lapse does not undo it; every round's own
  verdicts stay in the log for a stricter reducer.
- otherwise the latest verdict stands (the judge saw the whole conversation so far);
- a criterion never judged is ``not_relevant``.

A category's score is ``met / (met + not_met) x 10``. When no criterion of a category
is met or not met (all not relevant, e.g. in the first round) the score is ``None``
("not assessable"), never 0 or 10; the weighted total is then taken over the
categories that have a score, their weights renormalised, and is ``None`` when none has
one. Weights: empathy 30, persuasion 40, safety 30 (the total is on the same 0-10 scale).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["Criterion", "Rubric", "RubricError", "LABELS", "CATEGORIES", "WEIGHTS", "load_rubric", "normalise_label",
           "cumulative", "category_scores", "weighted_total"]

LABELS = ("met", "not_met", "not_relevant")
CATEGORIES = ("empathy", "persuasion", "safety")
WEIGHTS = {"empathy": 0.3, "persuasion": 0.4, "safety": 0.3}
_HEADERS = {"number": ("number", "no.", "no", "#", "id"), "criterion": ("criterion", "criteria"),
            "good": ("good example", "good_example", "good"), "bad": ("bad example", "bad_example", "bad"),
            "category": ("category",)}
_SYNONYMS = {"met": "met", "yes": "met", "done": "met", "true": "met", "not met": "not_met", "not_met": "not_met",
             "unmet": "not_met", "no": "not_met", "false": "not_met", "not done": "not_met", "not relevant": "not_relevant",
             "not_relevant": "not_relevant", "n/a": "not_relevant", "na": "not_relevant", "irrelevant": "not_relevant",
             "not applicable": "not_relevant"}


class RubricError(ValueError):
    """A rubric file that cannot be used: names the file, line and column."""


@dataclass(frozen=True)
class Criterion:
    number: int
    text: str
    good: str
    bad: str
    category: str  # empathy | persuasion | safety

    @property
    def key(self) -> str:
        return f"c{self.number}"


@dataclass(frozen=True)
class Rubric:
    criteria: tuple[Criterion, ...]
    source: str

    def by_category(self, category: str) -> list[Criterion]:
        return [c for c in self.criteria if c.category == category]

    def get(self, number: int) -> Criterion:
        return next(c for c in self.criteria if c.number == number)


def load_rubric(path: str | Path | None = None) -> Rubric:
    """medsim's own rubric (``osce_data/rubric.csv``), or a CSV with the same columns
    (number, criterion, good example, bad example, category; OSCE-Project's header
    spellings are read too)."""
    p = Path(str(resources.files("agents").joinpath("suites/osce_data/rubric.csv"))) if path is None else Path(path)
    try:
        rows = list(csv.reader(p.read_text(encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError) as e:
        raise RubricError(f"{p}: cannot read the rubric ({e})") from None
    if not rows:
        raise RubricError(f"{p}: empty")
    head = [h.strip().lower() for h in rows[0]]
    col: dict[str, int] = {}
    for name, spellings in _HEADERS.items():
        idx = next((i for i, h in enumerate(head) if h in spellings), None)
        if idx is None:
            raise RubricError(f"{p}: line 1: no '{spellings[0]}' column (have: {', '.join(rows[0])})")
        col[name] = idx
    out: list[Criterion] = []
    for i, r in enumerate(rows[1:], start=2):
        if not any(x.strip() for x in r):
            continue
        if len(r) < len(head):
            raise RubricError(f"{p}: line {i}: {len(r)} columns, expected {len(head)}")
        try:
            num = int(r[col["number"]])
        except ValueError:
            raise RubricError(f"{p}: line {i}: column 'number': not an integer: {r[col['number']]!r}") from None
        cat = r[col["category"]].strip().lower()
        if cat not in CATEGORIES:
            raise RubricError(f"{p}: line {i}: column 'category': {cat!r} is not one of {', '.join(CATEGORIES)}")
        if any(c.number == num for c in out):
            raise RubricError(f"{p}: line {i}: criterion {num} appears twice")
        out.append(Criterion(num, r[col["criterion"]].strip(), r[col["good"]].strip(), r[col["bad"]].strip(), cat))
    if not out:
        raise RubricError(f"{p}: no criteria")
    return Rubric(tuple(out), str(p))


def normalise_label(value: object) -> str | None:
    """A judge's verdict in any usual spelling -> one of :data:`LABELS`, or None."""
    if isinstance(value, bool):
        return "met" if value else "not_met"
    if not isinstance(value, str):
        return None
    return _SYNONYMS.get(value.strip().lower().replace("-", " ").strip(" .!\"'"))


def cumulative(rounds: Sequence[Mapping[int, str]]) -> list[dict[int, str]]:
    """Per-round verdicts (criterion number -> label; a criterion missing from a round was
    not judged then) -> the state after each round (see the module doc)."""
    state: dict[int, str] = {}
    out = []
    for verdicts in rounds:
        for num, label in verdicts.items():
            if state.get(num) != "met":
                state[num] = label
        out.append(dict(state))
    return out


def category_scores(state: Mapping[int, str], rubric: Rubric) -> dict[str, dict]:
    """Per category: ``score`` (0-10, or None when met + not_met is 0) and the counts."""
    out = {}
    for cat in CATEGORIES:
        labels = [state.get(c.number, "not_relevant") for c in rubric.by_category(cat)]
        met, not_met = labels.count("met"), labels.count("not_met")
        score = round(met / (met + not_met) * 10, 3) if met + not_met else None
        out[cat] = {"score": score, "met": met, "not_met": not_met, "not_relevant": labels.count("not_relevant")}
    return out


def weighted_total(scores: Mapping[str, float | None], weights: Mapping[str, float] = WEIGHTS) -> float | None:
    """The 30/40/30 total of category scores (0-10); categories without a score are left
    out and the others' weights renormalised; None when no category has a score."""
    have = {c: s for c, s in scores.items() if s is not None and weights.get(c)}
    if not have:
        return None
    w = sum(weights[c] for c in have)
    return round(sum(weights[c] * s for c, s in have.items()) / w, 3)
