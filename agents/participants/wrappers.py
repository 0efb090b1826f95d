"""Behaviour added around a participant instead of flags inside the engine.

- :class:`Guarded`: detectors for refusals, role breaks, loops, echoes and empty replies
  (``agents.guards``); a flagged reply is recorded and the role asked again with a
  corrective instruction (another seed, a hotter sample), a bounded number of times,
  after which :class:`RoleFailure` ends the consultation as *failed*.
- :class:`Hinted`: the technician is shown the case records matching each order; a
  reply that ignores them is rejected (by :class:`Guarded`), and if its retries end on
  any problem the records are reported verbatim (a recorded fallback); a record its reply
  leaves out (a reply cut at its token limit) is appended verbatim.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from agents.cases.model import Case
from agents.condition_names import not_a_condition_name
from agents.events import EventSink, FallbackReply, ReplyRejected, SynthesisedResult
from agents.findings import case_records, case_story, match_findings, match_order
from agents.guards import check_reply, corrections_for, normalise_line
from agents.normal_results import synthesised_result
from agents.orders import order_tests
from agents.participants.base import Observation, Participant, RoleFailure, Turn
from agents.participants.llm import LLMParticipant

__all__ = ["Guarded", "Hinted", "ignored_records", "omitted", "order_hits", "names_a_condition", "not_a_condition_name"]

Check = Callable[[str, Observation], "str | None"]
Detect = Callable[[str, str, Sequence[str], str], "str | None"]  # agents.guards.check_reply's signature


def ignored_records(reply: str, obs: Observation) -> str | None:
    """A technician reply that reports none of the records it was shown."""
    if not obs.records:
        return None
    low = normalise_line(reply)
    return None if any(normalise_line(v)[:24] in low for _, v in obs.records) else "ignored_records"


def omitted(reply: str, records: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The records a technician's reply does not report: its value is not in the reply or,
    for a short value ("Normal", "12"), neither is the name of the record beside it."""
    low = normalise_line(reply)
    out = []
    for path, value in records:
        v = normalise_line(value)[:24]
        leaf = normalise_line(path.split(" > ")[-1])
        if not (v and v in low and (len(v) >= 12 or leaf in low)):
            out.append((path, value))
    return out


def names_a_condition(parse: Callable[[str], Any]) -> Check:
    """A doctor's diagnosis must be a condition's name (:func:`not_a_condition_name`)."""
    def check(reply: str, obs: Observation) -> str | None:
        a = parse(reply.strip())
        if a.kind != "diagnose":
            return None
        return "not_a_condition" if not_a_condition_name(a.text) else None
    return check


class Guarded:
    """Wraps an :class:`LLMParticipant`: checks each draft before it is committed."""

    def __init__(self, inner: LLMParticipant, *, retries: int = 2, checks: Sequence[Check] = (),
                 corrections: Mapping[str, str] | None = None, detect: Detect = check_reply,
                 last_stands: Sequence[str] = ()):
        # for a suite whose conversation is not a diagnosis (the OSCE encounter): its own
        # corrections (problem -> instruction; default agents.guards.CORRECTIONS for the
        # role) and its own reading of check_reply (agents.suites.osce_guards.osce_detect).
        # last_stands: problems after which, the retries spent, the last draft is taken as it
        # is (logged as a fallback) instead of failing the consultation: a diagnosis that
        # still names no condition is judged as given (wrong, most likely), not left unscored
        self.inner, self.retries, self.checks, self.detect = inner, retries, tuple(checks), detect
        self.last_stands = frozenset(last_stands)
        self.role = inner.role
        self.corrections = corrections_for(self.role) if corrections is None else corrections

    def act(self, obs: Observation) -> Turn:
        inner = self.inner
        previous = inner.previous_replies()
        base = inner.params_for(obs)
        attempts = 1 + self.retries
        sent, params = obs.text, base
        for attempt in range(1, attempts + 1):
            reply = inner.draft(obs, sent, params)
            problem = self.detect(self.role, reply, previous, obs.text)
            for check in self.checks:
                if problem is None:
                    problem = check(reply, obs)
            if problem is None:
                break
            inner.sink.emit(ReplyRejected(role=self.role, turn=obs.turn, problem=problem, text=reply, attempt=attempt))
            if attempt == attempts:
                if problem not in self.last_stands:
                    raise RoleFailure(self.role, problem, attempts)
                inner.sink.emit(FallbackReply(role=self.role, turn=obs.turn, text=reply,
                                              reason=f"reply still {problem} after {attempts} attempts: the last "
                                                     "draft stands, judged as given"))
                break
            fix = self.corrections.get(problem, "(Please answer again.)")
            sent = f"{obs.text}\n{fix}"
            # another seed and a hotter sample: at low temperature a looping model repeats itself
            params = replace(base, seed=base.seed + attempt, temperature=max(base.temperature, 0.7))
        inner.commit(sent, reply)
        return inner.to_turn(obs, reply)


def order_hits(case: Case, test: str) -> list[tuple[str, str]]:
    """The case records an order matches (:func:`agents.findings.match_order`): never a
    record of another test; an order may name several tests ("CBC, chest X-ray and a CT"),
    each matched."""
    return match_order(case, test)


class Hinted:
    """Wraps the technician: each order comes with the records that match it."""

    def __init__(self, inner: Participant, case: Case, sink: EventSink):
        self.inner, self.case, self.sink = inner, case, sink
        self.role = inner.role

    def act(self, obs: Observation) -> Turn:
        test = obs.order if obs.order is not None else obs.text
        hits = order_hits(self.case, test)
        # of an order of several tests, those the case holds no record of (each answered on its own)
        parts = order_tests(test)
        unrecorded = [p for p in parts if not match_findings(self.case, p)] if len(parts) > 1 else []
        if not hits and unrecorded:  # several tests, none recorded
            return self._rest(Turn(text="", source="synthesised"), unrecorded, obs.turn)
        if not hits:
            # a gatekeeper, not a hint: "not available" would tell the doctor the test was off
            # target; a result by the policy of the test's kind is reported and marked as
            # synthesised (agents.normal_results)
            made = synthesised_result(test, self.case.demographics, case_records(self.case),  # never against them
                                      case_story(self.case))
            text = f"RESULTS: {test}: {made.text}"
            self.sink.emit(SynthesisedResult(turn=obs.turn, test=test, text=text, policy=made.policy, kind=made.kind,
                                             entry=made.entry))
            return Turn(text=text, source="synthesised")
        rec = "\n".join(f"- {path}: {value}" for path, value in hits)
        # of an order of several tests, the technician model is told those the records answer:
        # the others are answered after its reply (_rest), not called "not available" by it
        recorded = [p for p in parts if p not in unrecorded]
        asked = "; ".join(recorded) if len(parts) > 1 and recorded else test
        told = replace(obs, text=f"The doctor orders: {asked}\nRecords that match this order:\n{rec}",
                       records=tuple(hits))
        try:
            turn = self.inner.act(told)
        except RoleFailure as e:
            # whatever the last draft's problem (records ignored, then the prompt said back
            # under a "Patient:" label once corrected), the records that answer the order are
            # known: they are the reply, marked as a fallback, and the consultation goes on
            reply = "RESULTS: " + "; ".join(f"{path}: {value}" for path, value in hits)
            self.sink.emit(FallbackReply(role=self.role, turn=obs.turn, reason=str(e), text=reply))
            turn = Turn(text=reply, source="fallback")
        left = omitted(turn.text, hits)
        if left:  # a reply cut at its token limit, or one that skipped some: nothing recorded is lost
            turn = replace(turn, text="\n".join([turn.text.rstrip(), *(f"RESULTS: {p}: {v}" for p, v in left)]))
        return self._rest(turn, unrecorded, obs.turn)

    def _rest(self, turn: Turn, unrecorded: Sequence[str], at: int) -> Turn:
        """An order of several tests of which the case records only some: each of the
        others (``unrecorded``) is answered as a test of its own would be (synthesised,
        marked), after the records; silence would tell the doctor which of its tests were
        off target."""
        lines = []
        for part in unrecorded:
            made = synthesised_result(part, self.case.demographics, case_records(self.case), case_story(self.case))
            lines.append(f"RESULTS: {part}: {made.text}")
            self.sink.emit(SynthesisedResult(turn=at, test=part, text=lines[-1], policy=made.policy, kind=made.kind,
                                             entry=made.entry))
        return turn if not lines else replace(turn, text="\n".join([t for t in (turn.text.rstrip(), *lines) if t]))
