"""The ``fidelity`` scorer: how faithful the simulated patient and technician were in one
finished consultation, and the run's rates.

Each patient utterance (but a person's) is read by :func:`agents.fidelity.patient.check_patient`
against the doctor's words before it, each technician reply (a ``test_result``) by
:func:`agents.fidelity.technician.check_technician` with the turn's ``synthesised_result``;
what the pre-check leaves undecided goes to the checker model (the run's judge) when there
is one that can check (not the scripted oracle, not a replay). The labels:

- patient: ``supported``, ``contradicted``, ``invented`` (an unsupported claim),
  ``third_person``, ``not_caregiver`` (an infant speaking for itself), ``leak``,
  ``overshare``;
- technician: ``from_case``, ``wrong_record``, ``synthesised``, ``implausible`` (a
  synthesised value the policy of that test does not give), ``missed_record`` (synthesised
  though the case holds the record), ``unmarked`` (values in no record, not marked),
  ``not_available``.

A label is *decided* for an item when the pre-check or the model decided it; rates are
over the items where it was decided (Wilson 95% intervals), the undecided counted apart,
and the checker (``pre-check`` or ``pre-check + <model>``) is named with every figure.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.events import EventSink
from agents.fidelity.checker import Checker
from agents.findings import match_order
from agents.fidelity.patient import PatientCheck, check_patient
from agents.fidelity.technician import TechnicianCheck, check_technician
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy
from agents.orders import order_tests
from agents.scorers import Score, Transcript
from agents.stats import wilson_interval
from agents.textsafe import md_cell

__all__ = ["FidelityScorer", "PATIENT_LABELS", "TECHNICIAN_LABELS", "BAD_LABELS", "patient_labels",
           "technician_labels", "fidelity_row", "fidelity_summary", "fidelity_markdown", "can_check"]

PATIENT_LABELS = ("supported", "contradicted", "invented", "third_person", "not_caregiver", "leak", "overshare")
TECHNICIAN_LABELS = ("from_case", "wrong_record", "synthesised", "implausible", "missed_record", "unmarked",
                     "not_available")
# the labels that are a fault, worst first (the report quotes the worst items)
BAD_LABELS = ("leak", "contradicted", "wrong_record", "unmarked", "third_person", "not_caregiver", "implausible",
              "invented", "missed_record", "overshare")
_SEVERITY = {name: i for i, name in enumerate(BAD_LABELS)}
_QUOTE = 240  # characters of an item's text kept in the log, the row and the report
_FLAGGED_PER_ROW = 3
_WORST = 8


def can_check(llm: LLM | None) -> bool:
    """Whether ``llm`` can be the checker model: not the scripted oracle (it plays the
    case, it cannot judge it), not a replay, not a stand-in that makes no calls."""
    name = str(getattr(llm, "name", "") or "")
    return llm is not None and not name.startswith(("scripted", "replay", "none", "human"))


def patient_labels(check: PatientCheck, model: Mapping[str, Any] | None = None) -> dict[str, bool | None]:
    """The labels of one utterance: the pre-check's, the model's where the pre-check
    did not decide (None: still undecided)."""
    m = model or {}
    claims = check.claim_verdict if check.claim_verdict is not None else m.get("claims")
    voice = check.voice if check.voice is not None else m.get("voice")
    leak = check.leak if check.leak is not None else m.get("leak")
    over = check.overshare if check.overshare is not None else m.get("overshare")
    return {"supported": None if claims is None else claims == "supported",
            "contradicted": None if claims is None else claims == "contradicted",
            "invented": None if claims is None else claims == "unsupported",
            "third_person": None if voice is None else voice == "third_person",
            "not_caregiver": None if voice is None else voice == "not_caregiver",
            "leak": None if leak is None else bool(leak),
            "overshare": None if over is None else bool(over)}


def technician_labels(check: TechnicianCheck, model: str | None = None) -> dict[str, bool | None]:
    """The labels of one technician reply (None: undecided)."""
    v = check.verdict if check.verdict is not None else model
    out: dict[str, bool | None] = {name: None if v is None else v == name
                                   for name in ("from_case", "wrong_record", "synthesised", "unmarked", "not_available")}
    out["implausible"] = None if v is None else (v == "synthesised" and check.plausible is False)
    out["missed_record"] = None if v is None else (v == "synthesised" and check.missed_record)
    return out


def _item(role: str, turn: Any, text: str, labels: Mapping[str, bool | None], by_model: Sequence[str],
          why: str) -> dict[str, Any]:
    return {"role": role, "turn": turn, "text": " ".join(text.split())[:_QUOTE],
            "labels": [k for k, v in labels.items() if v], "undecided": [k for k, v in labels.items() if v is None],
            "model": list(by_model), "why": why[:160]}


def _counts(items: Sequence[Mapping[str, Any]], role: str, names: Sequence[str]) -> dict[str, Any]:
    mine = [i for i in items if i["role"] == role]
    return {"n": len(mine), "labelled": {k: sum(k in i["labels"] for i in mine) for k in names},
            "undecided": {k: sum(k in i["undecided"] for i in mine) for k in names}}


class FidelityScorer:
    """The ``fidelity`` scorer (the module's docstring). ``checker``: the model that
    decides what the pre-check cannot (the run's judge), or None (pre-check alone)."""

    name = "fidelity"

    def __init__(self, checker: LLM | None = None, params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=90),
                 policy: RetryPolicy = RetryPolicy()):
        self.checker = Checker(checker, params, policy) if can_check(checker) else None
        self.label = "pre-check" + (f" + {self.checker.name}" if self.checker is not None else "")

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        items: list[dict[str, Any]] = []
        errors = 0
        question = ""
        synthesised: dict[Any, list[Mapping[str, Any]]] = {}
        for e in transcript.events:
            t = e.get("type")
            if t == "utterance" and e.get("speaker") == "doctor":
                question = str(e.get("text") or "")
            elif t == "synthesised_result":
                synthesised.setdefault(e.get("turn"), []).append(e)
            elif t == "utterance" and e.get("speaker") == "patient" and e.get("source") != "human":
                reply = str(e.get("text") or "")
                check = check_patient(case, question, reply)
                model: dict[str, Any] = {}
                want = check.undecided()
                if want and self.checker is not None:
                    try:
                        model = self.checker.patient(case, question, reply, want, turn=int(e.get("turn") or 0),
                                                     sink=sink)
                    except LLMError:
                        errors += 1
                labels = patient_labels(check, model)
                why = "; ".join(dict.fromkeys([c.why for c in check.claims if c.verdict not in ("supported", "no_claim")]
                                              + ([f"leak: {check.leak_what}"] if check.leak_what else [])))
                items.append(_item("patient", e.get("turn"), reply, labels, sorted(model), why))
            elif t == "test_result":
                test, reply, turn = str(e.get("test") or ""), str(e.get("result") or ""), e.get("turn")
                made = synthesised.get(turn, [])
                several = order_tests(test)
                parts = [m for m in made if m.get("test") != test and len(several) > 1 and m.get("test") in several]
                whole = next((m for m in made if m not in parts), None)
                for m in parts:  # a test of a several-test order the case has no record of, answered on its own
                    pcheck = check_technician(case, str(m.get("test") or ""), str(m.get("text") or ""), m)
                    items.append(_item("technician", turn, f"{m.get('test')}: {m.get('text')}",
                                       technician_labels(pcheck, None), [], pcheck.why))
                if parts and whole is None and not match_order(case, test):
                    continue  # every test of the order was made up, and each is checked above
                tcheck = check_technician(case, test, reply, whole)
                verdict = None
                if tcheck.verdict is None and self.checker is not None:
                    try:
                        verdict = self.checker.technician(case, test, reply, tcheck.expected, turn=int(turn or 0),
                                                          sink=sink)
                    except LLMError:
                        errors += 1
                items.append(_item("technician", turn, f"{test}: {reply}", technician_labels(tcheck, verdict),
                                   ["verdict"] if verdict else [], tcheck.why))
        bad = [i for i in items if set(i["labels"]) & set(BAD_LABELS)]
        details = {"checker": self.label, "patient": _counts(items, "patient", PATIENT_LABELS),
                   "technician": _counts(items, "technician", TECHNICIAN_LABELS), "items": items,
                   "checker_errors": errors}
        value = None if not items else round(1 - len(bad) / len(items), 4)
        return Score(self.name, value, details)


def fidelity_row(events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A results row's ``fidelity`` block, from the cell's ``scored`` event (None: the
    cell was not checked): the checker, per role the counts, and the worst items."""
    e = next((e for e in events if e.get("type") == "scored" and e.get("scorer") == "fidelity"), None)
    d = e.get("details") if e is not None else None
    if not isinstance(d, Mapping) or "patient" not in d:
        return None
    items = [i for i in d.get("items") or [] if set(i.get("labels") or ()) & set(BAD_LABELS)]
    items.sort(key=lambda i: min(_SEVERITY.get(k, 99) for k in i["labels"]))
    return {"checker": d.get("checker"), "patient": d["patient"], "technician": d["technician"],
            "checker_errors": d.get("checker_errors", 0),
            "flagged": [{"role": i.get("role"), "turn": i.get("turn"), "text": i.get("text"),
                         "labels": [k for k in i["labels"] if k in _SEVERITY]} for i in items[:_FLAGGED_PER_ROW]]}


def _rates(blocks: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    n = sum(b.get("n", 0) for b in blocks)
    out: dict[str, Any] = {"items": n}
    for k in names:
        flagged = sum((b.get("labelled") or {}).get(k, 0) for b in blocks)
        undecided = sum((b.get("undecided") or {}).get(k, 0) for b in blocks)
        decided = n - undecided
        lo, hi = wilson_interval(flagged, decided)
        out[k] = {"k": flagged, "n": decided, "rate": round(flagged / decided, 4) if decided else None,
                  "ci95": [round(lo, 4), round(hi, 4)], "undecided": undecided}
    return out


def fidelity_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's fidelity (``{}`` when no row was checked): per role, per label, the
    flagged count, the items where it was decided, the rate and its Wilson interval;
    the checker(s); the worst items quoted with their cell."""
    blocks = [(r, r["fidelity"]) for r in rows if isinstance(r.get("fidelity"), Mapping)]
    if not blocks:
        return {}
    worst = [{"case_id": r.get("case_id"), "seed": r.get("seed", 0), "condition": r.get("condition", "base"), **i}
             for r, b in blocks for i in b.get("flagged") or []]
    worst.sort(key=lambda i: min(_SEVERITY.get(k, 99) for k in i.get("labels") or ["?"]))
    checkers = sorted({str(b.get("checker")) for _, b in blocks})
    return {"fidelity": {"checker": ", ".join(checkers), "cells": len(blocks),
                         "checker_errors": sum(b.get("checker_errors", 0) for _, b in blocks),
                         "patient": _rates([b["patient"] for _, b in blocks], PATIENT_LABELS),
                         "technician": _rates([b["technician"] for _, b in blocks], TECHNICIAN_LABELS),
                         "worst": worst[:_WORST]}}


def _fmt(x: Mapping[str, Any]) -> str:
    if x["rate"] is None:
        return "n/a"
    return f"{x['rate']:.1%} ({x['ci95'][0]:.1%}-{x['ci95'][1]:.1%})"


def fidelity_markdown(summary: Mapping[str, Any]) -> list[str]:
    """report.md's section on the simulator's fidelity ([] when nothing was checked)."""
    f = summary.get("fidelity")
    if not f:
        return []
    md = ["", "## Simulator fidelity", "",
          f"Checked by: {md_cell(f['checker'])} (every figure below); {f['cells']} cells; rates over the items where "
          "the label was decided, 95% Wilson intervals" + (f"; {f['checker_errors']} checker calls failed"
                                                             if f.get("checker_errors") else ""), "",
          "| role | label | labelled | decided | rate (95% CI) | undecided | checker |", "|---|---|---|---|---|---|---|"]
    for role, names in (("patient", PATIENT_LABELS), ("technician", TECHNICIAN_LABELS)):
        block = f[role]
        for k in names:
            x = block[k]
            md.append(f"| {role} ({block['items']} items) | {k} | {x['k']} | {x['n']} | {_fmt(x)} | {x['undecided']} | "
                      f"{md_cell(f['checker'])} |")
    if f.get("worst"):
        md += ["", "### The worst utterances", ""]
        for i in f["worst"]:
            md.append(f"- {md_cell(i['case_id'])} (seed {md_cell(i.get('seed'))}, {md_cell(i.get('condition'))}), "
                      f"turn {md_cell(i.get('turn'))}, {md_cell(i.get('role'))} [{md_cell(', '.join(i['labels']))}]: "
                      f"\"{md_cell(i.get('text'))}\"")
    return md
