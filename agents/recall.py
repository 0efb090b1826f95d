"""What the engine needs from a case memory, and the doctor's diagnosis step with it.

The memory itself (embeddings, SQLite, FAISS) lives in ``memory/``; the engine sees only
:class:`Recall` (search) and :class:`Memorise` (store), so any memory can serve.
``agents.deliberation.Deliberating`` wraps the doctor: when it is about to give an accepted diagnosis,
the k nearest past cases (records buffer) and insights (experience buffer) are retrieved
for what the consultation has shown so far, logged with their ids and scores, and the
doctor gives its final diagnosis with them in view (MedAgentSim's retrieval, which its
public code never runs).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from agents.cases.model import Case, format_facts
from agents.guards import normalise_line
from agents.llm.base import LLMError
from agents.participants.llm import LLMDoctor
from agents.prompts import render

__all__ = ["Recollection", "Recall", "Memorise", "MemoryLeak", "case_key", "consultation_summary",
           "summary_from_events", "summary_from_history", "RecordedRecall", "recall_context", "hit_dict"]

_SUMMARY_CHARS = 1500


@dataclass(frozen=True)
class Recollection:
    buffer: str  # records | experience
    id: int
    score: float
    text: str  # the past consultation's summary
    diagnosis: str | None
    insight: str | None
    case_key: str


class Recall(Protocol):
    def recall(self, query: str, k: int) -> list[Recollection]:
        """The k nearest of each buffer, best first."""
        ...

    def state(self) -> dict[str, Any]: ...


class Memorise(Protocol):
    def remember(self, buffer: str, *, case_id: str, case_key: str, text: str, diagnosis: str | None = None,
                 tests: Sequence[str] = (), insight: str | None = None, images: Sequence[str] = (),
                 meta: dict | None = None) -> int:
        """File one record; ``images`` are the study files the consultation returned (a CLIP
        memory embeds them with the text)."""
        ...

    def has_case(self, case_key: str) -> bool: ...


class MemoryLeak(LLMError):
    """The case being scored is in the memory it is about to consult (its answer would
    leak). Never a guess: the case is an error."""

    def __init__(self, message: str):
        super().__init__(message, backend="memory", transient=False)


def case_key(case: Case) -> str:
    """A key of a case's content (not its id), so that the same case under another id
    or in another file is still recognised."""
    text = " | ".join(normalise_line(x) for x in (case.objective, case.demographics, case.diagnosis,
                                                   format_facts(case.patient)[:400]))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def consultation_summary(demographics: str, objective: str, exchanges: Sequence[tuple[str, str]]) -> str:
    """What a consultation showed: who the patient is, what they said, the results;
    the text both stored and searched with."""
    parts = [f"{demographics}. {objective}".strip()]
    for who, text in exchanges:
        parts.append(f"{who}: {' '.join(text.split())}")
    out = "\n".join(parts)
    return out if len(out) <= _SUMMARY_CHARS else out[:_SUMMARY_CHARS - 1].rstrip() + "…"


def summary_from_events(case: Case, events: Sequence[Mapping[str, Any]]) -> str:
    ex = [("Patient" if e["speaker"] == "patient" else "Technician", e["text"])
          for e in events if e.get("type") == "utterance" and e.get("speaker") in ("patient", "measurement")]
    return consultation_summary(case.demographics, case.objective, ex)


def summary_from_history(case: Case, doctor: LLMDoctor) -> str:
    """The consultation so far as the memory's query: what the patient and the technician
    told the doctor (read from the doctor's history), as :func:`summary_from_events` reads
    it from a finished log."""
    ex = []
    for m in doctor.history:
        if m.role != "user":
            continue
        for who in ("Patient", "Technician"):
            if m.content.startswith(f"{who}: "):
                ex.append((who, m.content[len(who) + 2:].split("\n(")[0]))
    return consultation_summary(case.demographics, case.objective, ex)


def recall_context(hits: Sequence[Recollection], proposed: str | None, *, mode: str) -> str:
    """The message that puts retrieved cases and insights before the final diagnosis."""
    cases = [h for h in hits if h.buffer == "records"]
    insights = [h for h in hits if h.buffer == "experience"]

    def short(t: str) -> str:
        t = " ".join(t.split())
        return t if len(t) <= 280 else t[:279] + "…"
    case_lines = "\n".join(f"- (similarity {h.score:.2f}) {short(h.text)} -> diagnosis: {h.diagnosis}"
                           for h in cases) or "- none"
    insight_lines = "\n".join(f"- (similarity {h.score:.2f}) {h.insight}" for h in insights) or "- none"
    how = ('Reply with JSON {"action": "diagnose", "text": ...}.' if mode == "structured"
           else "Reply as DIAGNOSIS READY: [diagnosis].")
    return render("doctor_recall", cases=case_lines, insights=insight_lines, proposed=proposed or "none", how=how)


def hit_dict(h: Recollection) -> dict[str, Any]:
    """A retrieved item as logged: enough to show it and to replay the prompt it made."""
    return {"buffer": h.buffer, "id": h.id, "score": round(float(h.score), 4), "text": h.text,
            "diagnosis": h.diagnosis, "insight": h.insight, "case_key": h.case_key}


class RecordedRecall:
    """Replays a case's logged retrievals, in order (replay never consults a memory)."""

    def __init__(self, events: Sequence[Mapping[str, Any]]):
        self._got = [e for e in events if e.get("type") == "memory_retrieved"]
        self._state = self._got[0]["memory"] if self._got else {}

    def recall(self, query: str, k: int) -> list[Recollection]:
        if not self._got:
            return []
        e = self._got.pop(0)
        self._state = e["memory"]
        return [Recollection(h["buffer"], h["id"], h["score"], h["text"], h.get("diagnosis"), h.get("insight"),
                             h.get("case_key", "")) for h in e["hits"]]

    def state(self) -> dict[str, Any]:
        return self._state
