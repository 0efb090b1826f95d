"""How far the diagnosis judge agrees with labelled (truth, diagnosis) pairs.

Pure functions: :func:`load_pairs` reads a JSONL file of pairs (naming file, line and
field for each bad row); :func:`evaluate` runs any judge callable ``(diagnosis, truth) ->
Verdict`` over the pairs and returns per-pair rows and totals. An undecided verdict
(``correct is None``: the pre-check alone could not decide) counts as "not correct" for
agreement, and is also counted separately.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from agents.judge import Verdict

__all__ = ["KINDS", "JudgePair", "PairResult", "Totals", "JudgeEvaluation", "PairsError", "json_objects", "load_pairs",
           "shipped_pairs", "evaluate", "format_evaluation"]

KINDS = ("exact", "spelling", "synonym", "abbreviation", "more_specific", "hedge", "sibling", "broader", "negated",
         "hedged_list", "non_answer", "different")
SHIPPED = "judge_pairs.jsonl"
SPLITS = ("", "tuning", "held_out")


@dataclass(frozen=True)
class JudgePair:
    truth: str
    diagnosis: str
    label: bool | None  # None: an unlabelled pair (judged, not scored)
    kind: str = ""
    line: int = 0
    # "held_out": kept apart from what the pre-check's tables and the judge's prompt are tuned
    # on (the agreement on it is the one to quote); "" is the tuning part
    split: str = ""


@dataclass(frozen=True)
class PairResult:
    pair: JudgePair
    verdict: Verdict

    @property
    def judged(self) -> bool:
        """What the judge said, an undecided verdict read as "not correct"."""
        return self.verdict.correct is True

    @property
    def agrees(self) -> bool | None:
        return None if self.pair.label is None else self.judged == self.pair.label

    @property
    def outcome(self) -> str:
        """agree | false_positive | false_negative (an undecided verdict on a right pair
        is a false negative) | unlabelled."""
        if self.pair.label is None:
            return "unlabelled"
        if self.agrees:
            return "agree"
        return "false_positive" if self.judged else "false_negative"


@dataclass(frozen=True)
class Totals:
    n: int = 0
    agree: int = 0
    false_positives: int = 0  # judged right, labelled wrong
    false_negatives: int = 0  # judged wrong or undecided, labelled right
    undecided: int = 0

    @property
    def agreement(self) -> float | None:
        return self.agree / self.n if self.n else None

    def to_dict(self) -> dict:
        return {"n": self.n, "agree": self.agree, "agreement": self.agreement,
                "false_positives": self.false_positives, "false_negatives": self.false_negatives,
                "undecided": self.undecided}


def _totals(results: Iterable[PairResult]) -> Totals:
    rs = [r for r in results if r.pair.label is not None]
    return Totals(n=len(rs), agree=sum(r.agrees for r in rs),
                  false_positives=sum(r.outcome == "false_positive" for r in rs),
                  false_negatives=sum(r.outcome == "false_negative" for r in rs),
                  undecided=sum(r.verdict.correct is None for r in rs))


@dataclass(frozen=True)
class JudgeEvaluation:
    results: tuple[PairResult, ...]
    totals: Totals
    by_kind: dict[str, Totals] = field(default_factory=dict)
    by_split: dict[str, Totals] = field(default_factory=dict)  # "tuning" and "held_out" (when the set has one)

    def rows(self) -> list[dict]:
        """One flat row per pair (ready for a DataFrame or a JSONL file)."""
        return [{"line": r.pair.line, "kind": r.pair.kind, "truth": r.pair.truth, "diagnosis": r.pair.diagnosis,
                 "label": r.pair.label, "correct": r.verdict.correct, "method": r.verdict.method,
                 "rule": r.verdict.rule, "outcome": r.outcome, "split": r.pair.split or "tuning"} for r in self.results]


class PairsError(ValueError):
    """A pairs file that cannot be read; the message names file, line and field."""


def json_objects(lines: Iterable[bytes], source: str,
                 error: type[Exception] = PairsError) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, "source:line", object) for each non-blank line of a JSONL labelled
    file; ``error`` (naming file and line) for a line that is not UTF-8, not JSON or not an
    object. The judge's and the fidelity checker's labelled sets are read with it."""
    for no, raw in enumerate(lines, 1):
        where = f"{source}:{no}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise error(f"{where}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise error(f"{where}: invalid JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(row, dict):
            raise error(f"{where}: expected a JSON object, got {type(row).__name__}")
        yield no, where, row


def _parse_pairs(lines: Iterable[bytes], source: str) -> list[JudgePair]:
    pairs: list[JudgePair] = []
    for no, where, row in json_objects(lines, source):
        for name in ("truth", "diagnosis"):
            if name not in row:
                raise PairsError(f"{where}: field '{name}' is missing")
            if not isinstance(row[name], str) or not row[name].strip():
                raise PairsError(f"{where}: field '{name}' must be a non-empty string, got {row[name]!r}")
        if row.get("label") is not None and not isinstance(row["label"], bool):
            raise PairsError(f"{where}: field 'label' must be true or false, got {row['label']!r}")
        kind = row.get("kind", "")
        if not isinstance(kind, str):
            raise PairsError(f"{where}: field 'kind' must be a string, got {kind!r}")
        if kind and kind not in KINDS:
            raise PairsError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
        split = row.get("split", "")
        if split not in SPLITS:
            raise PairsError(f"{where}: field 'split' must be one of {', '.join(repr(x) for x in SPLITS)}, got {split!r}")
        pairs.append(JudgePair(row["truth"], row["diagnosis"], row.get("label"), kind, no, split))
    return pairs


def load_pairs(path: str | Path) -> list[JudgePair]:
    """Read labelled pairs, one JSON object a line: {"truth", "diagnosis", "label":
    bool (optional: an unlabelled pair is judged but not scored), "kind" (optional, one
    of :data:`KINDS`)}. Blank lines are skipped. Raises
    :class:`PairsError` naming file, line and field for the first bad row."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise PairsError(f"{p}: cannot read ({e.strerror or e})") from None
    return _parse_pairs(data.splitlines(), str(p))


def shipped_pairs() -> list[JudgePair]:
    """The labelled set shipped with medsim (``agents/judge_pairs.jsonl``)."""
    data = resources.files("agents").joinpath(SHIPPED).read_bytes()
    return _parse_pairs(data.splitlines(), SHIPPED)


def evaluate(pairs: Iterable[JudgePair], judge: Callable[[str, str], Verdict]) -> JudgeEvaluation:
    """Run ``judge(diagnosis, truth)`` over the pairs; totals overall and per kind."""
    results = tuple(PairResult(p, judge(p.diagnosis, p.truth)) for p in pairs)
    kinds = sorted({r.pair.kind for r in results}, key=lambda k: (KINDS.index(k) if k in KINDS else len(KINDS), k))
    by_kind = {k: _totals(r for r in results if r.pair.kind == k) for k in kinds}
    splits = {r.pair.split or "tuning" for r in results}
    by_split = ({s: _totals(r for r in results if (r.pair.split or "tuning") == s) for s in ("tuning", "held_out")
                 if s in splits} if "held_out" in splits else {})
    return JudgeEvaluation(results, _totals(results), by_kind, by_split)


def format_evaluation(ev: JudgeEvaluation, title: str = "") -> str:
    """A plain-text table: totals, per kind, then the pairs the judge got wrong."""
    def line(name: str, t: Totals) -> str:
        agr = f"{t.agreement:.3f}" if t.agreement is not None else "-"
        return (f"{name:<16} {t.n:>4} {t.agree:>6} {agr:>9} {t.false_positives:>4} {t.false_negatives:>4} "
                f"{t.undecided:>9}")

    out = [title] if title else []
    out.append(f"{'kind':<16} {'n':>4} {'agree':>6} {'agreement':>9} {'FP':>4} {'FN':>4} {'undecided':>9}")
    out.append(line("all", ev.totals))
    out += [line(f"split {k}", t) for k, t in ev.by_split.items()]
    out += [line(k or "(none)", t) for k, t in ev.by_kind.items()]
    unlabelled = [r for r in ev.results if r.pair.label is None]
    if unlabelled:
        out.append("verdicts (unlabelled pairs):")
        for r in unlabelled:
            said = {True: "right", False: "wrong", None: "undecided"}[r.verdict.correct]
            out.append(f"  {said:<9} {r.pair.diagnosis!r} for {r.pair.truth!r} ({r.verdict.method}/{r.verdict.rule})")
    wrong = [r for r in ev.results if r.agrees is False]
    if wrong:
        out.append("disagreements:")
        for r in wrong:
            said = {True: "right", False: "wrong", None: "undecided"}[r.verdict.correct]
            reply = f": {' '.join(r.verdict.rationale.split())[:100]!r}" if r.verdict.method == "llm" else ""
            out.append(f"  [{r.outcome}] {r.pair.kind}: {r.pair.diagnosis!r} for {r.pair.truth!r}: judged {said} "
                       f"({r.verdict.method}/{r.verdict.rule}){reply}")
    return "\n".join(out)
