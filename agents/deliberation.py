"""How the final diagnosis is reached once the doctor is ready to give one.

:class:`Deliberating` wraps the doctor. When the doctor's turn is an accepted diagnosis
it may first retrieve similar past cases and lessons from the memory (logged with ids and
scores), then decide with one strategy:

- alone: the doctor reconsiders with the memory in view (only when memory is on);
- ``cot``: a separate call with room to think (the reasoning is logged, never spoken, never
  shown to the patient), then the final answer;
- ``ensemble`` N: a chair lists a differential; N members (different seeds, temperatures
  and orders of the differential) each reason and vote; votes are grouped by meaning (the
  judge's pre-check: synonyms, spellings, abbreviations, more specific forms count as one);
  the majority wins, a tie goes to the chair's consensus;
- ``panel = "roles"``: a role-split panel in the spirit of MAI-DxO: a hypothesis keeper,
  a test chooser, a challenger, a cost steward and a checklist speak in order, then the
  checklist gives the final diagnosis.

Every call goes to the doctor's own model on its own conversation, so an in-process model
reuses the consultation's KV cache: a member costs its short continuation only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Sequence

from agents.cases.model import Case
from agents.catalogue import CATALOGUE, OTHER
from agents.events import EventSink, FallbackReply, MemoryRetrieved, PanelStep, PanelVote, Reasoning
from agents.judge import normalise, precheck
from agents.llm.base import CallContext, Message
from agents.llm.calls import generate_logged
from agents.participants.base import Observation, Participant, Turn
from agents.participants.llm import LLMDoctor
from agents.participants.switch import base_llm
from agents.participants.wrappers import not_a_condition_name
from agents.prompts import render
from agents.protocol import DIAGNOSE_SCHEMA, DoctorAction, parse_doctor_turn, parse_structured_turn, say
from agents.recall import (MemoryLeak, Recall, Recollection, case_key, hit_dict, recall_context,
                           summary_from_history)

__all__ = ["DeliberationConfig", "Deliberating", "Remembering", "group_votes", "ROLE_PANEL"]

_DIFFERENTIAL = {"type": "object", "properties": {"differential": {
    "type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 80}, "minItems": 3, "maxItems": 3}},
    "required": ["differential"], "additionalProperties": False}
_VOTE = {"type": "object", "properties": {"reasoning": {"type": "string", "maxLength": 400},
                                          "diagnosis": {"type": "string", "minLength": 2, "maxLength": 100}},
         "required": ["reasoning", "diagnosis"], "additionalProperties": False}
_TEXT = {"type": "object", "properties": {"text": {"type": "string", "minLength": 2, "maxLength": 300}},
         "required": ["text"], "additionalProperties": False}
_TEST = {"type": "object", "properties": {"test": {"type": "string", "enum": [*CATALOGUE, OTHER]},
                                          "why": {"type": "string", "maxLength": 160}},
         "required": ["test", "why"], "additionalProperties": False}
# the role-split panel, in order: (role, its task, the schema of its answer)
ROLE_PANEL: tuple[tuple[str, str, dict], ...] = (
    ("hypothesis keeper", "Keep the differential: name the three most likely conditions, most likely first, with "
                          "the finding that supports each.", _TEXT),
    ("test chooser", "Name the one test (from the hospital's list) that would best tell the leading conditions "
                     "apart, and why.", _TEST),
    ("challenger", "Argue against the leading condition: which findings do not fit it, and which alternative might "
                   "the panel be missing?", _TEXT),
    ("cost steward", "Say in one sentence whether a test ordered was unnecessary or a cheaper one would have done.",
     _TEXT),
    ("checklist", "Check that the final answer is one condition's name and fits the key findings; give it.",
     DIAGNOSE_SCHEMA),
)


@dataclass(frozen=True)
class DeliberationConfig:
    cot: bool = False
    ensemble: int = 0  # N >= 2: a panel of N voting
    panel: str = "off"  # off | roles
    k: int = 3  # memory hits per buffer
    reason_tokens: int = 220  # room to think (CoT, a member's reasoning)

    @property
    def active(self) -> bool:
        return self.cot or self.ensemble >= 2 or self.panel == "roles"


def group_votes(diagnoses: Sequence[str]) -> list[dict[str, Any]]:
    """Votes grouped by meaning, largest group first: two diagnoses are one when the
    judge's pre-check finds either right for the other (same name after normalising,
    a spelling or abbreviation, a more specific form)."""
    groups: list[dict[str, Any]] = []
    for i, d in enumerate(diagnoses):
        for g in groups:
            rep = g["diagnosis"]
            if normalise(d) == normalise(rep) or precheck(d, rep).correct or precheck(rep, d).correct:
                g["members"].append(i)
                break
        else:
            groups.append({"diagnosis": d, "members": [i]})
    groups.sort(key=lambda g: (-len(g["members"]), g["members"][0]))
    for g in groups:
        g["votes"] = len(g["members"])
    return groups


def _led_by(final: str, differential: Sequence[tuple[str, float | None]]) -> tuple[tuple[str, float | None], ...]:
    """The doctor's differential with the strategy's answer first: its own entry (and
    confidence) when the differential holds it, else the answer with no confidence;
    empty when the doctor gave none."""
    if not differential:
        return ()
    same = [d for d in differential if normalise(d[0]) == normalise(final)]
    head = (final, same[0][1]) if same else (final, None)
    return (head, *(d for d in differential if normalise(d[0]) != normalise(final)))[:5]


def _json(text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text, strict=False)
        return obj if isinstance(obj, dict) else {}
    except json.JSONDecodeError:
        return {}


def _context(hits: Sequence[Recollection]) -> str:
    if not hits:
        return ""

    def short(t: str) -> str:
        t = " ".join(t.split())
        return t if len(t) <= 280 else t[:279] + "…"
    cases = "\n".join(f"- (similarity {h.score:.2f}) {short(h.text)} -> diagnosis: {h.diagnosis}"
                      for h in hits if h.buffer == "records") or "- none"
    insights = "\n".join(f"- (similarity {h.score:.2f}) {h.insight}" for h in hits if h.buffer == "experience") or "- none"
    return "\n" + render("deliberate_context", cases=cases, insights=insights)


class Deliberating:
    """Wraps the doctor: memory and a diagnosis strategy before an accepted diagnosis."""

    def __init__(self, inner: Participant, case: Case, sink: EventSink, cfg: DeliberationConfig,
                 memory: Recall | None = None):
        self.inner, self.case, self.sink, self.cfg, self.memory = inner, case, sink, cfg, memory
        self.role = inner.role
        self.key = case_key(case)

    # -- the wrapper -------------------------------------------------------------------
    def act(self, obs: Observation) -> Turn:
        turn = self.inner.act(obs)
        a = turn.action
        doctor = base_llm(self.inner)
        if a is None or a.kind != "diagnose" or not obs.may_diagnose or not isinstance(doctor, LLMDoctor):
            return turn
        hits = self._recall(obs, doctor)
        if self.cfg.panel == "roles":
            final, rule = self._role_panel(obs, doctor, hits), "panel_roles"
        elif self.cfg.ensemble >= 2:
            final, rule = self._ensemble(obs, doctor, hits, a.text), f"ensemble_{self.cfg.ensemble}"
        elif self.cfg.cot:
            final, rule = self._cot(obs, doctor, hits), "cot"
        elif hits:
            final, rule = self._final(obs, doctor, self._base(doctor) + [Message(
                "user", recall_context(hits, a.text, mode=doctor.mode))], commit=True), "memory"
        else:
            return turn
        if not final:
            return turn  # kept: the doctor's own diagnosis (every attempt is in the log)
        if not_a_condition_name(final):
            # the doctor's own diagnosis passed its guard; the strategy's answer did not
            self.sink.emit(FallbackReply(role=self.role, turn=obs.turn, text=a.text,
                                         reason=f"{rule}'s answer {final!r} is not a condition's name: "
                                                "the doctor's own diagnosis stands"))
            return turn
        action = DoctorAction("diagnose", final, f"{rule}:{a.rule}", differential=_led_by(final, a.differential))
        spoken = say(action)
        return Turn(text=json.dumps({"action": "diagnose", "text": final}) if doctor.mode == "structured"
                    else f"DIAGNOSIS READY: {final}", action=action, spoken=spoken, source=turn.source)

    # -- pieces ------------------------------------------------------------------------
    def _recall(self, obs: Observation, doctor: LLMDoctor) -> list[Recollection]:
        if self.memory is None:
            return []
        query = summary_from_history(self.case, doctor)
        hits = self.memory.recall(query, self.cfg.k)
        self.sink.emit(MemoryRetrieved(turn=obs.turn, query=query, hits=[hit_dict(h) for h in hits],
                                       memory=self.memory.state()))
        leaked = [h for h in hits if h.case_key == self.key]
        if leaked:
            raise MemoryLeak(f"case {self.case.id} is in the memory it consults (record {leaked[0].id}): "
                             "a scored case must never be in memory")
        return hits

    @staticmethod
    def _base(doctor: LLMDoctor) -> list[Message]:
        """What a strategy reads: the doctor's conversation, or the record a doctor keeps
        instead (the focused doctor's summarised record)."""
        record = getattr(doctor, "record_messages", None)
        if callable(record):
            return list(record())
        return [Message("system", doctor.system), *doctor.history]

    @staticmethod
    def _how(doctor: LLMDoctor) -> str:
        return ('Reply with JSON {"action": "diagnose", "text": ...}.' if doctor.mode == "structured"
                else "Reply as DIAGNOSIS READY: [diagnosis].")

    def _call(self, obs: Observation, doctor: LLMDoctor, messages: list[Message], *, schema: dict | None,
              max_tokens: int, seed_offset: int = 0, temperature: float | None = None) -> str:
        p = doctor.params
        params = replace(p, max_tokens=max_tokens, stop=(), seed=p.seed + seed_offset,
                         temperature=p.temperature if temperature is None else temperature,
                         response_schema=json.dumps(schema, sort_keys=True) if schema is not None else None)
        out = generate_logged(doctor.llm, messages, params, CallContext(doctor.role, self.case.id, obs.turn),
                              self.sink, doctor.policy)
        return out.text.strip()

    def _final(self, obs: Observation, doctor: LLMDoctor, messages: list[Message], *, commit: bool = False,
               seed_offset: int = 0) -> str | None:
        schema = DIAGNOSE_SCHEMA if doctor.mode == "structured" else None
        reply = self._call(obs, doctor, messages, schema=schema, max_tokens=60, seed_offset=seed_offset)
        a = parse_structured_turn(reply) if doctor.mode == "structured" else parse_doctor_turn(reply)
        if commit:
            doctor.commit(messages[-1].content, reply)
        return a.text if a.kind == "diagnose" and a.text else None

    def _cot(self, obs: Observation, doctor: LLMDoctor, hits: Sequence[Recollection]) -> str | None:
        ask = render("deliberate_reason", context=_context(hits))
        reasoning = self._call(obs, doctor, self._base(doctor) + [Message("user", ask)], schema=None,
                               max_tokens=self.cfg.reason_tokens)
        self.sink.emit(Reasoning(turn=obs.turn, strategy="cot", member=0, text=reasoning))
        msgs = self._base(doctor) + [Message("user", ask), Message("assistant", reasoning),
                                     Message("user", render("deliberate_final", how=self._how(doctor)))]
        return self._final(obs, doctor, msgs)

    def _ensemble(self, obs: Observation, doctor: LLMDoctor, hits: Sequence[Recollection], proposed: str) -> str | None:
        n, ctx = self.cfg.ensemble, _context(hits)
        base = self._base(doctor)
        got = _json(self._call(obs, doctor, base + [Message("user", render("panel_differential", context=ctx))],
                               schema=_DIFFERENTIAL, max_tokens=90))
        diff = [d for d in got.get("differential", []) if isinstance(d, str) and d.strip()] or [proposed]
        if proposed and not any(normalise(proposed) == normalise(d) for d in diff):
            diff = diff + [proposed]
        votes: list[dict[str, Any]] = []
        for i in range(n):
            order = diff[i % len(diff):] + diff[: i % len(diff)]  # each member sees another order
            ask = render("panel_member", member=i + 1, n=n, differential="; ".join(order), context=ctx)
            obj = _json(self._call(obs, doctor, base + [Message("user", ask)], schema=_VOTE,
                                   max_tokens=self.cfg.reason_tokens, seed_offset=101 * (i + 1),
                                   temperature=min(1.0, 0.3 + 0.15 * i)))
            dx = obj.get("diagnosis") if isinstance(obj.get("diagnosis"), str) else ""
            reasoning = obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else ""
            self.sink.emit(Reasoning(turn=obs.turn, strategy="ensemble", member=i + 1, text=reasoning))
            votes.append({"member": i + 1, "diagnosis": " ".join(dx.split()), "reasoning": reasoning,
                          "order": order})
        for v in votes:  # a vote that names no condition (a symptom, a sentence, a test) is set aside
            if v["diagnosis"] and not_a_condition_name(v["diagnosis"]):
                v["set_aside"] = "not_a_condition"
        valid = [v for v in votes if v["diagnosis"] and not v.get("set_aside")]
        groups = group_votes([v["diagnosis"] for v in valid])
        for g in groups:
            g["members"] = [valid[j]["member"] for j in g["members"]]
        tie = len(groups) > 1 and groups[0]["votes"] == groups[1]["votes"]
        winner = None if tie or not groups else groups[0]["diagnosis"]
        if winner is None and valid:
            proposals = "\n".join(f"- doctor {v['member']}: {v['diagnosis']} ({' '.join(v['reasoning'].split())[:200]})"
                                  for v in valid)
            winner = self._final(obs, doctor, base + [Message("user", render("panel_consensus", proposals=proposals,
                                                                               how=self._how(doctor)))],
                                 seed_offset=7)
        self.sink.emit(PanelVote(turn=obs.turn, differential=diff,
                                 votes=[{k: v[k] for k in ("member", "diagnosis", "set_aside") if k in v} for v in votes],
                                 groups=[{"diagnosis": g["diagnosis"], "votes": g["votes"], "members": g["members"]}
                                         for g in groups], tie=tie, decision=winner or ""))
        return winner

    def _role_panel(self, obs: Observation, doctor: LLMDoctor, hits: Sequence[Recollection]) -> str | None:
        ctx = _context(hits)
        base = self._base(doctor)
        said: list[str] = []
        final = None
        for i, (role, task, schema) in enumerate(ROLE_PANEL):
            heard = ("\nThe panel so far:\n" + "\n".join(said)) if said else ""
            ask = render("panel_role", role=role, task=task, context=ctx + heard)
            if schema is DIAGNOSE_SCHEMA:
                final = self._final(obs, doctor, base + [Message("user", ask + " " + self._how(doctor))],
                                    seed_offset=11 * (i + 1))
                text = final or ""
            else:
                reply = self._call(obs, doctor, base + [Message("user", ask)], schema=schema, max_tokens=140,
                                   seed_offset=11 * (i + 1))
                obj = _json(reply)
                text = (f"{obj.get('test')}: {obj.get('why', '')}" if schema is _TEST and obj.get("test")
                        else obj.get("text") if isinstance(obj.get("text"), str) else reply)
            text = " ".join(str(text).split())
            self.sink.emit(PanelStep(turn=obs.turn, role=role, text=text))
            said.append(f"- {role}: {text}")
        return final


def Remembering(inner: Participant, memory: Recall, case: Case, sink: EventSink, *, k: int = 3) -> Deliberating:  # noqa: N802
    """The doctor with memory and no other strategy (it reconsiders with the hits)."""
    return Deliberating(inner, case, sink, DeliberationConfig(k=k), memory)
