"""How far the fidelity checker agrees with labelled utterances (``medsim fidelity --pairs``).

A labelled item is one JSON object a line, about a case of a case set medsim can load
(``cases``: a registered name or a path, relative paths against the file's folder;
``case_id``):

- a patient utterance: ``{"role": "patient", "question", "reply", "labels": {"claims":
  supported|contradicted|unsupported|no_claim, "voice": first_person|third_person|
  caregiver|not_caregiver, "leak": bool, "overshare": bool}}`` (any of the four labels
  may be left out: not scored);
- a technician reply: ``{"role": "technician", "test", "reply", "synthesised": bool
  (the log marked it), "labels": {"verdict": from_case|wrong_record|synthesised|unmarked|
  not_available, "implausible": bool, "missed_record": bool}}``;

with ``id``, ``kind`` (what it was written to test), ``source`` (``written``, or the
embedded-model run it was taken from) and ``split`` (``tuning``: the pre-check's tables
were tuned on it; ``held_out``: they were not). :func:`evaluate` runs the pre-check, and
the checker model on what it leaves undecided when one is given, and scores each label of
:data:`agents.fidelity.scorer.PATIENT_LABELS` and ``TECHNICIAN_LABELS`` as a yes/no
question: agreement, false positives (said yes, labelled no), false negatives (labelled
yes, said no or undecided), undecided.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from agents.cases.model import Case, CaseSetError
from agents.cases.registry import load_cases, resolve_case_path
from agents.events import DictSink
from agents.fidelity.checker import Checker
from agents.fidelity.patient import CLAIM_VERDICTS, VOICES, check_patient
from agents.fidelity.scorer import PATIENT_LABELS, TECHNICIAN_LABELS, patient_labels, technician_labels
from agents.fidelity.technician import TECHNICIAN_VERDICTS, check_technician
from agents.judge_eval import json_objects
from agents.llm.base import LLMError

__all__ = ["LabelledItem", "PairsError", "LabelTotals", "FidelityEvaluation", "load_pairs", "shipped_pairs",
           "evaluate", "format_evaluation", "SPLITS", "SHIPPED"]

SHIPPED = "pairs.jsonl"
SPLITS = ("tuning", "held_out")
_PATIENT_FIELDS = {"claims": CLAIM_VERDICTS, "voice": VOICES, "leak": (True, False), "overshare": (True, False)}
_TECH_FIELDS = {"verdict": TECHNICIAN_VERDICTS, "implausible": (True, False), "missed_record": (True, False)}


class PairsError(ValueError):
    """A labelled file that cannot be read; the message names file, line and field."""


@dataclass(frozen=True)
class LabelledItem:
    id: str
    role: str  # patient | technician
    case: Case
    text: str  # the reply
    prompt: str  # the question (patient) or the order (technician)
    labels: Mapping[str, Any]
    synthesised: bool = False
    kind: str = ""
    source: str = ""
    split: str = "tuning"
    line: int = 0

    def gold(self) -> dict[str, bool]:
        """The yes/no labels this item is scored on."""
        lb = self.labels
        if self.role == "patient":
            out: dict[str, bool] = {}
            if "claims" in lb:
                out.update(supported=lb["claims"] == "supported", contradicted=lb["claims"] == "contradicted",
                           invented=lb["claims"] == "unsupported")
            if "voice" in lb:
                out.update(third_person=lb["voice"] == "third_person", not_caregiver=lb["voice"] == "not_caregiver")
            for k in ("leak", "overshare"):
                if k in lb:
                    out[k] = bool(lb[k])
            return out
        out = {}
        if "verdict" in lb:
            out.update({k: lb["verdict"] == k for k in ("from_case", "wrong_record", "synthesised", "unmarked",
                                                        "not_available")})
        for k in ("implausible", "missed_record"):
            if k in lb:
                out[k] = bool(lb[k])
        return out


def _case_index(spec: str, folder: Path, cache: dict[str, dict[str, Case]]) -> dict[str, Case]:
    key = spec
    if key not in cache:
        try:
            path = resolve_case_path(spec)
        except CaseSetError:
            path = resolve_case_path(str(folder / spec))
        cases, _ = load_cases(str(path), skip_invalid=True)
        cache[key] = {c.id: c for c in cases}
    return cache[key]


def _parse(lines: Iterable[bytes], source: str, folder: Path) -> list[LabelledItem]:
    cache: dict[str, dict[str, Case]] = {}
    out: list[LabelledItem] = []
    for no, where, row in json_objects(lines, source, PairsError):
        role = row.get("role")
        if role not in ("patient", "technician"):
            raise PairsError(f"{where}: field 'role' must be patient or technician, got {role!r}")
        prompt_field = "question" if role == "patient" else "test"
        for name in ("id", "cases", "case_id", "reply", prompt_field):
            if not isinstance(row.get(name), str) or (name != "question" and not row[name].strip()):
                raise PairsError(f"{where}: field '{name}' must be a non-empty string, got {row.get(name)!r}")
        labels = row.get("labels")
        if not isinstance(labels, dict) or not labels:
            raise PairsError(f"{where}: field 'labels' must be an object with at least one label")
        allowed = _PATIENT_FIELDS if role == "patient" else _TECH_FIELDS
        for k, v in labels.items():
            if k not in allowed:
                raise PairsError(f"{where}: field 'labels.{k}' is not a {role} label ({', '.join(allowed)})")
            if v not in allowed[k] or (isinstance(v, bool) != isinstance(allowed[k][0], bool)):
                raise PairsError(f"{where}: field 'labels.{k}' must be one of {list(allowed[k])}, got {v!r}")
        split = row.get("split", "tuning")
        if split not in SPLITS:
            raise PairsError(f"{where}: field 'split' must be one of {', '.join(SPLITS)}, got {split!r}")
        try:
            cases = _case_index(row["cases"], folder, cache)
        except CaseSetError as e:
            raise PairsError(f"{where}: field 'cases': {e}") from None
        case = cases.get(row["case_id"])
        if case is None:
            raise PairsError(f"{where}: field 'case_id': no case {row['case_id']!r} in {row['cases']}")
        out.append(LabelledItem(row["id"], role, case, row["reply"], row.get(prompt_field) or "", labels,
                                bool(row.get("synthesised", False)), str(row.get("kind", "")),
                                str(row.get("source", "")), split, no))
    ids = [i.id for i in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise PairsError(f"{source}: ids used more than once: {', '.join(dup[:5])}")
    return out


def load_pairs(path: str | Path) -> list[LabelledItem]:
    """Read a labelled file (see the module's docstring); raises :class:`PairsError`
    naming file, line and field for the first bad row."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise PairsError(f"{p}: cannot read ({e.strerror or e})") from None
    return _parse(data.splitlines(), str(p), p.parent)


def shipped_pairs() -> list[LabelledItem]:
    """The labelled set shipped with medsim (``agents/fidelity/pairs.jsonl``)."""
    res = resources.files("agents.fidelity").joinpath(SHIPPED)
    return _parse(res.read_bytes().splitlines(), f"agents/fidelity/{SHIPPED}", Path(str(res)).parent)


@dataclass
class LabelTotals:
    n: int = 0
    agree: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    undecided: int = 0
    positives: int = 0  # items labelled yes

    @property
    def agreement(self) -> float | None:
        return self.agree / self.n if self.n else None

    def add(self, gold: bool, said: bool | None) -> None:
        self.n += 1
        self.positives += gold
        if said is None:
            self.undecided += 1
            self.false_negatives += gold
        elif said == gold:
            self.agree += 1
        elif said:
            self.false_positives += 1
        else:
            self.false_negatives += 1

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "positives": self.positives, "agree": self.agree, "agreement": self.agreement,
                "false_positives": self.false_positives, "false_negatives": self.false_negatives,
                "undecided": self.undecided}


@dataclass
class FidelityEvaluation:
    checker: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    by_label: dict[str, LabelTotals] = field(default_factory=dict)
    by_split: dict[str, LabelTotals] = field(default_factory=dict)
    overall: LabelTotals = field(default_factory=LabelTotals)
    checker_errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"checker": self.checker, "overall": self.overall.to_dict(),
                "by_split": {k: v.to_dict() for k, v in self.by_split.items()},
                "by_label": {k: v.to_dict() for k, v in self.by_label.items()}, "checker_errors": self.checker_errors}


def evaluate(items: Sequence[LabelledItem], checker: Checker | None = None,
             on_item: Callable[[], None] | None = None) -> FidelityEvaluation:
    """Run the pre-check (and ``checker`` on what it leaves undecided) over ``items``;
    ``on_item`` is called after each (a progress bar)."""
    ev = FidelityEvaluation("pre-check" + (f" + {checker.name}" if checker is not None else ""))
    for name in (*PATIENT_LABELS, *TECHNICIAN_LABELS):
        ev.by_label[name] = LabelTotals()
    sink = DictSink()
    for it in items:
        model: Any = None
        if it.role == "patient":
            check = check_patient(it.case, it.prompt, it.text)
            want = check.undecided()
            if want and checker is not None:
                try:
                    model = checker.patient(it.case, it.prompt, it.text, want, turn=it.line, sink=sink)
                except LLMError:
                    ev.checker_errors += 1
            said = patient_labels(check, model)
        else:
            synth = {"text": it.text} if it.synthesised else None
            tcheck = check_technician(it.case, it.prompt, it.text, synth)
            if tcheck.verdict is None and checker is not None:
                try:
                    model = checker.technician(it.case, it.prompt, it.text, tcheck.expected, turn=it.line, sink=sink)
                except LLMError:
                    ev.checker_errors += 1
            said = technician_labels(tcheck, model)
        outcome = {}
        for name, gold in it.gold().items():
            got = said.get(name)
            for t in (ev.by_label[name], ev.overall, ev.by_split.setdefault(it.split, LabelTotals())):
                t.add(gold, got)
            outcome[name] = {"gold": gold, "said": got}
        ev.rows.append({"id": it.id, "line": it.line, "role": it.role, "kind": it.kind, "split": it.split,
                        "source": it.source, "case_id": it.case.id, "reply": it.text, "labels": outcome,
                        "model": bool(model)})
        if on_item is not None:
            on_item()
    return ev


def format_evaluation(ev: FidelityEvaluation, title: str = "") -> str:
    """A plain-text table: overall, per split, per label, then the disagreements."""
    def line(name: str, t: LabelTotals) -> str:
        agr = f"{t.agreement:.3f}" if t.agreement is not None else "-"
        return (f"{name:<16} {t.n:>5} {t.positives:>5} {t.agree:>6} {agr:>9} {t.false_positives:>4} "
                f"{t.false_negatives:>4} {t.undecided:>9}")

    out = [title] if title else []
    out.append(f"checker: {ev.checker}" + (f" ({ev.checker_errors} checker calls failed)" if ev.checker_errors else ""))
    out.append(f"{'label':<16} {'n':>5} {'yes':>5} {'agree':>6} {'agreement':>9} {'FP':>4} {'FN':>4} {'undecided':>9}")
    out.append(line("all labels", ev.overall))
    out += [line(f"split {k}", t) for k, t in sorted(ev.by_split.items())]
    out += [line(k, t) for k, t in ev.by_label.items() if t.n]
    wrong = [(r, k, v) for r in ev.rows for k, v in r["labels"].items() if v["said"] != v["gold"]]
    if wrong:
        out.append("disagreements:")
        for r, k, v in wrong:
            said = {True: "yes", False: "no", None: "undecided"}[v["said"]]
            kind = "FN" if v["gold"] else "FP"
            out.append(f"  [{kind}] {r['id']} {k}: said {said} ({r['case_id']}, {r['kind'] or '-'}, {r['split']}): "
                       f"{' '.join(r['reply'].split())[:100]!r}")
    return "\n".join(out)
