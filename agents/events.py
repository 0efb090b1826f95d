"""Typed events and the per-case event log.

The event log is medsim's main artefact: a header line (config, seed, model per role,
git revision, package versions, the command line, the start time, the case file's and
the model files' SHA-256) and then every event in order. Scoring, reports and replay
read it. Nothing in it depends on the wall clock except what backends measure themselves
(``latency_s``; the scripted backend reports 0) and the header's ``command`` and
``started``, so the same seed and the scripted backend give logs that are byte-identical
but for those two header fields.

In the file, an ``llm_call`` whose prompt begins with the prompt of the previous call of
the same role (and case) holds only the messages after that shared beginning, and
``messages_base: {"seq": S, "n": N}``: its prompt is the first N messages of event S's
prompt, then ``messages``. A consultation's prompts grow by a turn each call, so a log
grows with the conversation, not with its square. :func:`read_events` puts every prompt
back whole; the ``keep`` list of an :class:`EventLog` gets whole prompts as they were
sent.
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Protocol, TextIO

from agents.secrets import scrub_secrets
from agents.textsafe import UNSAFE

__all__ = [
    "Event", "Header", "CaseStarted", "Utterance", "RouteDecision", "TestRequested",
    "TestResult", "LLMCall", "LLMRetry", "ReplyRejected", "FallbackReply", "PatientGrounded", "SynthesisedResult", "TestRefused", "BudgetRefused", "ImageReturned",
    "ImageError", "ImageRead", "ImageNotRead", "PrematureDiagnosis", "TurnLimitReached", "DiagnosisGiven", "DifferentialGiven",
    "JudgeDecision", "CaseError", "ConsultationFailed", "ConsultationEnded", "Scored", "MemoryRetrieved",
    "MemoryLearned", "Reasoning", "PanelVote", "PanelStep", "Reflection", "SecondAttempt", "CaseFinished", "EventSink", "EventLog",
    "ListSink", "DictSink", "TeeSink", "read_events", "expand_prompts", "LogError", "SCHEMA_VERSION",
    "READABLE_SCHEMAS",
]

# 2: header holds the run spec; scoring after consultation_ended. 3: an llm_call's prompt
# may be logged against an earlier call's (messages_base)
SCHEMA_VERSION = 3
READABLE_SCHEMAS = (2, 3)  # read_events puts version 3's prompts back whole; 2 has them whole


@lru_cache(maxsize=None)
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        # shallow: event fields hold JSON-ready values (dataclasses.asdict deep-copies,
        # which was most of the framework's per-case cost)
        d: dict[str, Any] = {"type": self.type}
        for name in _field_names(type(self)):
            d[name] = getattr(self, name)
        return d


@dataclass(frozen=True)
class Header(Event):
    """The first line of a case's log: the whole run spec (``medsim.spec.RunSpec`` as a
    dict; replay and re-scoring rebuild the run from it), this case's seed and
    condition, the model per role and provenance (``agents.provenance.run_provenance``:
    the command line and start time of the invocation that ran the case, the case
    file's SHA-256, in-process model files' SHA-256 keyed like ``models``)."""

    type: ClassVar[str] = "header"
    case_id: str
    case_source: str
    seed: int
    condition: str
    spec: dict[str, Any]
    models: dict[str, str]
    git_revision: str
    packages: dict[str, str]
    schema: int = SCHEMA_VERSION
    command: list[str] = field(default_factory=list)
    started: str | None = None  # UTC, ISO 8601
    cases_sha256: str | None = None
    model_sha256: dict[str, str] = field(default_factory=dict)
    llama_cpp_build: str | None = None  # the CPU features of an in-process model's llama.cpp


@dataclass(frozen=True)
class CaseStarted(Event):
    type: ClassVar[str] = "case_started"
    case_id: str
    objective: str
    demographics: str


@dataclass(frozen=True)
class Utterance(Event):
    type: ClassVar[str] = "utterance"
    turn: int
    speaker: str  # doctor | patient | measurement (open: any role name)
    addressee: str
    text: str
    source: str = "llm"  # llm | scripted | replay | human | fallback


@dataclass(frozen=True)
class RouteDecision(Event):
    """How a doctor turn was parsed and where it went."""

    type: ClassVar[str] = "route"
    turn: int
    route: str  # patient | measurement | diagnosis
    rule: str  # which parse rule fired (see agents.protocol)
    extracted: str
    note: str = ""


@dataclass(frozen=True)
class TestRequested(Event):
    type: ClassVar[str] = "test_requested"
    turn: int
    test: str


@dataclass(frozen=True)
class TestResult(Event):
    type: ClassVar[str] = "test_result"
    turn: int
    test: str
    result: str


@dataclass(frozen=True)
class LLMCall(Event):
    type: ClassVar[str] = "llm_call"
    role: str
    turn: int
    model: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    output: str
    prompt_tokens: int
    prompt_tokens_evaluated: int | None
    completion_tokens: int
    latency_s: float
    finish_reason: str
    note: str = ""
    # completion tokens from kept drafts (in-process jump-forward decoding); None: not told
    drafted_tokens: int | None = None


@dataclass(frozen=True)
class LLMRetry(Event):
    type: ClassVar[str] = "llm_retry"
    role: str
    turn: int
    attempt: int
    error: str
    backoff_s: float


@dataclass(frozen=True)
class ReplyRejected(Event):
    """A reply flagged by a detector (refusal, role break, loop, echo, empty); the role is
    asked again with a corrective instruction, up to a bound."""

    type: ClassVar[str] = "reply_rejected"
    role: str
    turn: int
    problem: str
    text: str
    attempt: int


@dataclass(frozen=True)
class FallbackReply(Event):
    """A role's reply replaced by a deterministic one after its retries (the technician
    reporting the matching records verbatim)."""

    type: ClassVar[str] = "fallback_reply"
    role: str
    turn: int
    reason: str
    text: str


@dataclass(frozen=True)
class PatientGrounded(Event):
    """The facts of the case the patient was given with a question (their indices in
    :func:`agents.fidelity.facts.case_facts`, as said in the patient's voice:
    :mod:`agents.patient_voice`); none: the patient was told nothing answers it. With a
    patient behaviour (:mod:`agents.behaviours`; written only when not empty): ``withheld``,
    the facts a cooperative patient would have been given and a withholding one was not;
    ``invented``, the symptoms a fabricating patient was given that the case does not hold."""

    type: ClassVar[str] = "patient_grounded"
    turn: int
    facts: tuple[int, ...] = ()
    withheld: tuple[int, ...] = ()
    invented: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "turn": self.turn, "facts": list(self.facts)}
        if self.withheld:
            d["withheld"] = list(self.withheld)
        if self.invented:
            d["invented"] = list(self.invented)
        return d


@dataclass(frozen=True)
class ImageReturned(Event):
    """The technician returned an imaging study's image with its report."""

    type: ClassVar[str] = "image_returned"
    turn: int
    study: str
    modality: str
    body_part: str
    image: str  # a path or a URL
    sha256: str | None  # None for a URL (not fetched here)


@dataclass(frozen=True)
class ImageError(Event):
    """A study's image is missing or unreadable: the consultation goes on with its report."""

    type: ClassVar[str] = "image_error"
    turn: int
    study: str
    image: str
    error: str


@dataclass(frozen=True)
class ImageRead(Event):
    """A vision model's reading of a returned image, given to the doctor."""

    type: ClassVar[str] = "image_read"
    turn: int
    study: str
    text: str
    source: str


@dataclass(frozen=True)
class ImageNotRead(Event):
    """No vision model read the image: the doctor got the report text alone."""

    type: ClassVar[str] = "image_not_read"
    turn: int
    study: str
    reason: str


@dataclass(frozen=True)
class TestRefused(Event):
    """An order not carried out because there is no technician (the baseline rung)."""

    type: ClassVar[str] = "test_refused"
    turn: int
    test: str
    reason: str


@dataclass(frozen=True)
class BudgetRefused(Event):
    """An order that would take the case over its budget: not done, not charged."""

    type: ClassVar[str] = "budget_refused"
    turn: int
    test: str
    price: float
    spent: float
    budget: float


@dataclass(frozen=True)
class SynthesisedResult(Event):
    """The case has no record of an ordered test: the technician reported a result by
    the policy of its kind (``agents.normal_results``: a plausible normal value, "No
    abnormality recorded", or "Not indicated"), marked as such. ``policy`` and ``kind``
    are empty in logs written before they were recorded."""

    type: ClassVar[str] = "synthesised_result"
    turn: int
    test: str
    text: str
    policy: str = ""
    kind: str = ""
    entry: str | None = None


@dataclass(frozen=True)
class PrematureDiagnosis(Event):
    """A diagnosis before the minimum of questions/tests; the doctor is told to go on."""

    type: ClassVar[str] = "premature_diagnosis"
    turn: int
    diagnosis: str
    gathered: int
    required: int


@dataclass(frozen=True)
class TurnLimitReached(Event):
    type: ClassVar[str] = "turn_limit"
    turn: int
    max_turns: int


@dataclass(frozen=True)
class DiagnosisGiven(Event):
    type: ClassVar[str] = "diagnosis"
    turn: int
    diagnosis: str


@dataclass(frozen=True)
class DifferentialGiven(Event):
    """A ranked differential: the doctor's final one, given with its diagnosis
    (``final``), or the working differential a strategy keeps in the doctor's own state
    (never shown to the patient). ``items``: ``{"diagnosis", "confidence"}`` dicts, most
    likely first, the confidence in 0-1 or None."""

    type: ClassVar[str] = "differential"
    turn: int
    items: list[dict[str, Any]]
    final: bool = True

    @classmethod
    def of(cls, turn: int, differential: Any, *, final: bool = True) -> "DifferentialGiven":
        """From a differential as a doctor holds it: (condition, confidence or None) pairs."""
        return cls(turn=turn, final=final, items=[{"diagnosis": d, "confidence": None if c is None else
                                                   round(float(c), 4)} for d, c in differential])


@dataclass(frozen=True)
class JudgeDecision(Event):
    type: ClassVar[str] = "judge"
    method: str  # precheck | llm
    correct: bool
    diagnosis: str | None
    truth: str
    rationale: str
    rule: str


@dataclass(frozen=True)
class CaseError(Event):
    type: ClassVar[str] = "case_error"
    turn: int
    error: str


@dataclass(frozen=True)
class ConsultationFailed(Event):
    """A role kept producing unusable replies: recorded as a failed consultation, never
    as a wrong diagnosis."""

    type: ClassVar[str] = "consultation_failed"
    turn: int
    role: str
    problem: str
    reason: str


@dataclass(frozen=True)
class MemoryRetrieved(Event):
    """Past cases and insights retrieved for the doctor's diagnosis: what was asked,
    and each hit's buffer, id and similarity."""

    type: ClassVar[str] = "memory_retrieved"
    turn: int
    query: str
    hits: list[dict[str, Any]]
    memory: dict[str, Any]  # the memory's state (size, hash, embedder)


@dataclass(frozen=True)
class Reasoning(Event):
    """A doctor's reasoning before the final diagnosis (chain of thought, or a panel
    member's): logged, never spoken, never shown to the patient."""

    type: ClassVar[str] = "reasoning"
    turn: int
    strategy: str  # cot | ensemble
    member: int
    text: str


@dataclass(frozen=True)
class PanelVote(Event):
    """A panel's votes grouped by meaning, and its decision (a tie: the chair's consensus)."""

    type: ClassVar[str] = "panel_vote"
    turn: int
    differential: list[str]
    votes: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    tie: bool
    decision: str


@dataclass(frozen=True)
class PanelStep(Event):
    """One role of the role-split panel speaking (in order)."""

    type: ClassVar[str] = "panel_step"
    turn: int
    role: str
    text: str


@dataclass(frozen=True)
class MemoryLearned(Event):
    """What the learning loop did with a finished case: filed it in the records buffer,
    stored an insight in the experience buffer, or stored nothing (and why)."""

    type: ClassVar[str] = "memory_learned"
    action: str  # filed | insight_stored | nothing
    buffer: str | None
    record_id: int | None
    reason: str


@dataclass(frozen=True)
class Reflection(Event):
    """The reflector's insight on a wrong diagnosis (``accepted`` False: it named the
    answer or was empty, and was asked again or dropped)."""

    type: ClassVar[str] = "reflection"
    attempt: int
    insight: str
    accepted: bool
    problem: str


@dataclass(frozen=True)
class SecondAttempt(Event):
    """After a reflection, the doctor diagnoses the same consultation again, with the
    insight; judged like the first attempt."""

    type: ClassVar[str] = "second_attempt"
    diagnosis: str | None
    correct: bool | None
    method: str


@dataclass(frozen=True)
class ConsultationEnded(Event):
    """The consultation is over (scoring follows): how it ended, before any judgement."""

    type: ClassVar[str] = "consultation_ended"
    status: str  # diagnosed | no_diagnosis | failed | error
    turns: int
    diagnosis: str | None
    tests_requested: list[str]
    error: str | None
    failure: str | None


@dataclass(frozen=True)
class Scored(Event):
    """One scorer's result for the case (``value``: True/False for the diagnosis
    scorer, a number for graded scorers, None when it could not score)."""

    type: ClassVar[str] = "scored"
    scorer: str
    value: Any
    details: dict[str, Any]


@dataclass(frozen=True)
class CaseFinished(Event):
    type: ClassVar[str] = "case_finished"
    status: str  # diagnosed | no_diagnosis | failed | error
    turns: int
    diagnosis: str | None
    correct: bool | None


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class ListSink:
    """Keeps events in memory (tests, the live printer, the world)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


class TeeSink:
    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: Event) -> None:
        for s in self.sinks:
            s.emit(event)


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def _dumps(obj: dict[str, Any]) -> str:
    """One log line: UTF-8 JSON, but each character :data:`agents.textsafe.UNSAFE`
    names (controls, bidi marks, line separators, lone surrogates) as a ``\\uXXXX``
    escape. JSON's own syntax is ASCII, so every such character is inside a string, and
    the escape reads back as the same character: any event is written and round-trips."""
    line = UNSAFE.sub(_json_escape, json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    return scrub_secrets(line)  # the last line of defence: no API key reaches a log (agents.secrets)


class LogError(ValueError):
    """An event log that cannot be read back (a prompt refers to a call it lacks)."""


class EventLog:
    """Writes one JSON object per line, flushed per event, with a sequence number.
    ``keep``: a list that also receives each written event as a dict (scorers read the
    case's events without reading the file back), prompts whole. An ``llm_call``'s
    prompt is written as a delta against the previous call of the same role and case
    (``messages_base``; see the module's docstring)."""

    def __init__(self, path: Path, *, keep: list[dict[str, Any]] | None = None, append: bool = False):
        self.path = Path(path)
        self._fh: TextIO | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self.keep = keep
        # append: go on writing a log already on disk (its numbering and prompts carried on;
        # a torn last line, which a kill mid-write leaves, is cut off first)
        self.append = append
        # (role, case) -> (seq, prompt) of its last call
        self._prompts: dict[tuple[Any, Any], tuple[int, list[Any]]] = {}

    def _compact(self, d: dict[str, Any]) -> dict[str, Any]:
        """The line to write for event ``d``: an llm_call's prompt against the previous
        call of its role and case, where they share a beginning."""
        msgs = d.get("messages")
        if d.get("type") != "llm_call" or not isinstance(msgs, list):
            return d
        key = (d.get("role"), d.get("case_id"))
        prev = self._prompts.get(key)
        self._prompts[key] = (d["seq"], msgs)
        if prev is None:
            return d
        seq, before = prev
        n = 0
        for a, b in zip(msgs, before):
            if a != b:
                break
            n += 1
        if n == 0:
            return d
        return {**d, "messages": msgs[n:], "messages_base": {"seq": seq, "n": n}}

    def __enter__(self) -> "EventLog":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.append and self.path.is_file():
            data = self.path.read_bytes()
            whole = data[: data.rfind(b"\n") + 1]
            if whole != data:
                with self.path.open("r+b") as fh:
                    fh.truncate(len(whole))
            for e in read_events(self.path):
                self._seq = max(self._seq, int(e.get("seq", -1)) + 1)
                if e.get("type") == "llm_call" and isinstance(e.get("messages"), list):
                    self._prompts[(e.get("role"), e.get("case_id"))] = (e["seq"], e["messages"])
            self._fh = self.path.open("a", encoding="utf-8")
            return self
        self._fh = self.path.open("w", encoding="utf-8")
        return self

    def emit(self, event: Event, **context: Any) -> None:
        """Write one event; ``context`` (e.g. ``case_id``, sim time ``t``) is merged in."""
        with self._lock:
            assert self._fh is not None, "EventLog used outside its context"
            d = event.to_dict()
            if context:
                d.update(context)
            d["seq"] = self._seq
            self._seq += 1
            self._fh.write(_dumps(self._compact(d)) + "\n")
            self._fh.flush()
            if self.keep is not None:
                self.keep.append(d)

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class DictSink:
    """Keeps events as the dicts a log would hold (scorers read these)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Event, **context: Any) -> None:
        d = event.to_dict()
        if context:
            d.update(context)
        d["seq"] = len(self.events)
        self.events.append(d)


def expand_prompts(events: list[dict[str, Any]], *, strict: bool = True) -> list[dict[str, Any]]:
    """Put back whole, in place, the prompts an :class:`EventLog` wrote as deltas
    (``messages_base``); returns ``events``. A delta whose base is missing raises
    :class:`LogError` (``strict``) or is left as it is."""
    whole: dict[Any, list[Any]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("type") != "llm_call" or not isinstance(e.get("messages"), list):
            continue
        base = e.get("messages_base")
        if base is not None:
            ok = isinstance(base, dict) and isinstance(base.get("n"), int) and base.get("seq") in whole
            if ok and len(whole[base["seq"]]) >= base["n"] >= 0:
                e["messages"] = whole[base["seq"]][: base["n"]] + e["messages"]
                del e["messages_base"]
            elif strict:
                raise LogError(f"llm_call {e.get('seq')}: its prompt refers to call {base!r}, "
                               "which the log does not hold")
            else:
                continue
        whole[e.get("seq")] = e["messages"]
    return events


def read_events(path: Path) -> list[dict[str, Any]]:
    """Events of a log file, prompts whole; a torn last line (a kill mid-write) is dropped."""
    with Path(path).open("r", encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip()]
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise
    return expand_prompts(out)
