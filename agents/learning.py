"""The memory's learning loop, over a finished and scored case (it reads the log).

- A right diagnosis: the case is filed in the records buffer (what the consultation
  showed, the tests, the diagnosis).
- A wrong one: the reflector compares the doctor's diagnosis with the ground truth and
  writes a general insight that must not name the diagnosis (checked; asked again with a
  correction, then dropped). The doctor then diagnoses the same consultation again with the
  insight in view (its own recorded conversation, one more call). If that second attempt is
  right, the insight goes to the experience buffer; otherwise nothing is stored.

Learning uses the ground truth, so it runs only in ``learn`` mode, on cases whose scores
are not the benchmark's (a learning split, or a run that says it learns online).
"""
from __future__ import annotations

import json
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.events import EventSink, MemoryLearned, Reflection, SecondAttempt
from agents.judge import JudgeUnparsed, judge_diagnosis, names_condition
from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render
from agents.protocol import DIAGNOSE_SCHEMA, parse_doctor_turn, parse_structured_turn
from agents.recall import Memorise, case_key, summary_from_events
from agents.scorers import Transcript

__all__ = ["Learner", "INSIGHT_SCHEMA"]

INSIGHT_SCHEMA = {
    "type": "object",
    "properties": {"insight": {"type": "string", "minLength": 10, "maxLength": 300}},
    "required": ["insight"],
    "additionalProperties": False,
}


def returned_images(events: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The image files the technician returned in a consultation (local files that are
    still there, each once, in order; a URL is not fetched)."""
    out: list[str] = []
    for e in events:
        if e.get("type") == "image_returned":
            path = str(e.get("image") or "")
            if path and not path.startswith(("http://", "https://")) and Path(path).is_file() and path not in out:
                out.append(path)
    return tuple(out)


@dataclass
class Learner:
    memory: Memorise
    reflector: LLM
    reflector_params: GenerateParams
    doctor: LLM  # the doctor's model, for the second attempt
    judge: LLM
    judge_params: GenerateParams
    policy: RetryPolicy = RetryPolicy()
    retries: int = 2  # reflections asked again after one that names the answer

    def learn(self, case: Case, events: Sequence[Mapping[str, Any]], sink: EventSink) -> MemoryLearned:
        ev = self._learn(case, events, sink)
        sink.emit(ev)
        return ev

    def _learn(self, case: Case, events: Sequence[Mapping[str, Any]], sink: EventSink) -> MemoryLearned:
        t = Transcript.from_events(events, case_id=case.id)
        verdict = next((e["value"] for e in reversed(events) if e.get("type") == "scored"
                        and e.get("scorer") == "diagnosis"), None)
        if t.status in ("error", "failed") or verdict is None:
            return MemoryLearned("nothing", None, None, f"not learned from: consultation {t.status}, not scored")
        summary = summary_from_events(case, t.events)
        key = case_key(case)
        images = returned_images(t.events)
        if verdict is True:
            rid = self.memory.remember("records", case_id=case.id, case_key=key, text=summary,
                                       diagnosis=case.diagnosis, tests=t.tests_requested, images=images,
                                       meta={"doctor_said": t.diagnosis, "source": case.source})
            return MemoryLearned("filed", "records", rid, "diagnosed correctly: filed in the records buffer")
        try:
            insight = self._reflect(case, summary, t, sink)
            if insight is None:
                return MemoryLearned("nothing", None, None, "no insight that keeps the answer out")
            second, correct, method = self._second_attempt(case, t, insight, sink)
        except (LLMError, JudgeUnparsed) as e:
            return MemoryLearned("nothing", None, None, f"learning failed: {e}")
        sink.emit(SecondAttempt(diagnosis=second, correct=correct, method=method))
        if not correct:
            return MemoryLearned("nothing", None, None, "the second attempt with the insight was still wrong")
        rid = self.memory.remember("experience", case_id=case.id, case_key=key, text=summary, insight=insight,
                                   tests=t.tests_requested, images=images, meta={"first": t.diagnosis, "second": second})
        return MemoryLearned("insight_stored", "experience", rid,
                             "the insight turned a wrong diagnosis into a right one: stored")

    def _reflect(self, case: Case, summary: str, t: Transcript, sink: EventSink) -> str | None:
        params = replace(self.reflector_params, response_schema=json.dumps(INSIGHT_SCHEMA, sort_keys=True))
        messages = [Message("system", render("reflect")),
                    Message("user", render("reflect_user", summary=summary, diagnosis=t.diagnosis or "none given",
                                           truth=case.diagnosis))]
        for attempt in range(1, self.retries + 2):
            out = generate_logged(self.reflector, messages, params, CallContext("reflector", case.id, t.turns),
                                  sink, self.policy)
            insight = _insight_text(out.text)
            problem = ("empty" if len(insight) < 10 else
                       "names the diagnosis" if names_condition(insight, case.diagnosis) else "")
            sink.emit(Reflection(attempt=attempt, insight=insight, accepted=not problem, problem=problem))
            if not problem:
                return insight
            messages = messages + [Message("assistant", out.text),
                                   Message("user", "That lesson gives the answer away (or says nothing). Write it again "
                                                   "about findings and reasoning, without naming the diagnosis.")]
            params = replace(params, seed=params.seed + attempt, temperature=max(params.temperature, 0.7))
        return None

    def _second_attempt(self, case: Case, t: Transcript, insight: str, sink: EventSink) -> tuple[str | None, bool, str]:
        last = next((e for e in reversed(t.events) if e.get("type") == "llm_call" and e.get("role") == "doctor"), None)
        if last is None:
            return None, False, "no model conversation to retry (the doctor was not a model)"
        structured = bool(last["params"].get("response_schema"))
        messages = [Message(m["role"], m["content"]) for m in last["messages"]]
        messages.append(Message("assistant", last["output"].strip()))
        messages.append(Message("user", render("second_attempt", insight=insight,
                                               how='Reply with JSON {"action": "diagnose", "text": ...}.' if structured
                                               else "Reply as DIAGNOSIS READY: [diagnosis].")))
        p = last["params"]
        params = GenerateParams(temperature=p.get("temperature", 0.2), max_tokens=p.get("max_tokens", 120),
                                stop=tuple(p.get("stop") or ()), seed=p.get("seed", 0), timeout_s=p.get("timeout_s", 120.0),
                                response_schema=json.dumps(DIAGNOSE_SCHEMA, sort_keys=True) if structured else None)
        out = generate_logged(self.doctor, messages, params, CallContext("doctor", case.id, t.turns + 1), sink,
                              self.policy)
        action = parse_structured_turn(out.text.strip()) if structured else parse_doctor_turn(out.text.strip())
        if action.kind != "diagnose" or not action.text:
            return None, False, "the second attempt gave no diagnosis"
        v = judge_diagnosis(action.text, case.diagnosis, llm=self.judge, params=self.judge_params, case_id=case.id,
                            turn=t.turns + 1, sink=sink, policy=self.policy)
        return action.text, bool(v.correct), v.method


def _insight_text(reply: str) -> str:
    try:
        obj = json.loads(reply)
        if isinstance(obj, dict) and isinstance(obj.get("insight"), str):
            return " ".join(obj["insight"].split())
    except json.JSONDecodeError:
        pass
    return " ".join(reply.split())
