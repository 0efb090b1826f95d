"""Scorers over the event log: ``(case, transcript) -> Score``.

A scorer reads a finished consultation from its events (the dicts a log holds, so a
run on disk can be re-scored with ``medsim score`` without re-running anything) and
returns a :class:`Score`; what it did (a judge's model calls, its decision) goes to the
sink like any other event. :class:`DiagnosisScorer` (the judge) is here; the suites'
scorers follow the same :class:`Scorer` protocol: OSCE's rubric judge
(``agents.suites.osce_judge.OsceRubricScorer``) and AutoMedic's CARE
(``agents.suites.care.CareScorer``, with ``McqScorer`` for the answer letter).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from agents.cases.model import Case
from agents.events import EventSink, Scored
from agents.judge import JudgeUnparsed, Verdict, judge_diagnosis
from agents.llm.base import LLM, GenerateParams, LLMError
from agents.llm.calls import RetryPolicy

__all__ = ["Transcript", "TranscriptError", "Score", "Scorer", "DiagnosisScorer", "Verdicts", "score_case"]


class TranscriptError(ValueError):
    """An event log that does not hold a finished consultation."""


@dataclass(frozen=True)
class Transcript:
    """A finished consultation as read from its events."""

    case_id: str
    status: str  # diagnosed | no_diagnosis | failed | error
    diagnosis: str | None
    turns: int
    tests_requested: tuple[str, ...]
    error: str | None
    failure: str | None
    events: tuple[Mapping[str, Any], ...] = field(repr=False, default=())

    @classmethod
    def from_events(cls, events: Sequence[Mapping[str, Any]], *, case_id: str | None = None) -> "Transcript":
        """From a case's events (a log file's lines, or the dicts a run kept). Only the
        events up to ``consultation_ended`` belong to the consultation; what follows is
        scoring."""
        end = next((i for i, e in enumerate(events) if e.get("type") == "consultation_ended"), None)
        if end is None:
            raise TranscriptError(f"case {case_id or '?'}: the log has no consultation_ended event "
                                  "(the consultation did not finish)")
        e = events[end]
        cid = case_id or next((x.get("case_id") for x in events if x.get("type") in ("header", "case_started")), "?")
        return cls(case_id=cid, status=e["status"], diagnosis=e["diagnosis"], turns=e["turns"],
                   tests_requested=tuple(e["tests_requested"]), error=e["error"], failure=e["failure"],
                   events=tuple(events[: end + 1]))

    def utterances(self) -> list[Mapping[str, Any]]:
        return [e for e in self.events if e.get("type") == "utterance"]


@dataclass(frozen=True)
class Score:
    scorer: str
    value: Any  # True/False, a number, or None when not scored
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the scorer itself failed (a dead judge): the case is an error


class Scorer(Protocol):
    name: str

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score: ...


class Verdicts:
    """The judge's decisions of a run, by (case, diagnosis, truth): scorers that judge
    the same answer (the diagnosis scorer, and the differential's first item) share one
    decision, logged once, so top-1 is the accuracy and the judge is not asked twice."""

    def __init__(self) -> None:
        self._got: dict[tuple[str, str | None, str], Verdict] = {}
        self._lock = threading.Lock()

    def judge(self, case: Case, diagnosis: str | None, judge: LLM, params: GenerateParams, policy: RetryPolicy,
              turn: int, sink: EventSink) -> Verdict:
        key = (case.id, diagnosis, case.diagnosis)
        with self._lock:
            got = self._got.get(key)
        if got is not None:
            return got
        v = judge_diagnosis(diagnosis, case.diagnosis, llm=judge, params=params, case_id=case.id, turn=turn,
                            sink=sink, policy=policy)
        with self._lock:
            self._got[key] = v
        return v


class DiagnosisScorer:
    """Diagnosis accuracy: the judge's deterministic pre-check, then its model (whose
    calls and decision are logged). A failed or errored consultation is not scored:
    it is never a wrong answer. ``verdicts``: decisions shared with other scorers."""

    name = "diagnosis"

    def __init__(self, judge: LLM, params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=60),
                 policy: RetryPolicy = RetryPolicy(), verdicts: Verdicts | None = None):
        self.judge, self.params, self.policy = judge, params, policy
        self.verdicts = verdicts or Verdicts()

    def __call__(self, case: Case, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status in ("error", "failed"):
            return Score(self.name, None, {"skipped": f"consultation {transcript.status}"})
        try:
            v = self.verdicts.judge(case, transcript.diagnosis, self.judge, self.params, self.policy,
                                    transcript.turns, sink)
        except (LLMError, JudgeUnparsed) as e:
            return Score(self.name, None, {}, error=f"judge failed: {e}")
        return Score(self.name, bool(v.correct), {"method": v.method, "rule": v.rule, "rationale": v.rationale,
                                                  "judge": getattr(self.judge, "name", "?")})


def score_case(case: Case, transcript: Transcript, scorers: Sequence[Scorer], sink: EventSink) -> list[Score]:
    """Run each scorer and log its result as a ``scored`` event."""
    out = []
    for scorer in scorers:
        s = scorer(case, transcript, sink)
        details = dict(s.details)
        if s.error:
            details["error"] = s.error
        sink.emit(Scored(scorer=s.scorer, value=s.value, details=details))
        out.append(s)
    return out
