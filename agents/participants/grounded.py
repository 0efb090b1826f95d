"""The faithful patient (written for medsim): each question comes with the case's facts
that answer it, in the patient's own voice (:mod:`agents.patient_voice`), as the
technician's orders come with their records; a reply the fidelity pre-check
(:func:`agents.fidelity.patient.check_patient`) finds contradicting the case, inventing
what it does not hold, in the third person (or, for an infant, not in the caregiver's
voice) or naming the diagnosis is asked again (by :class:`~agents.participants.wrappers.Guarded`,
with :func:`faithful`); and when the retries are spent, the facts themselves are the
reply (a recorded fallback), so the patient never fails a consultation and never says
what the case does not.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterable, Sequence

from agents.cases.model import Case
from agents.behaviours import Profile, invented_for, released_facts
from agents.events import EventSink, FallbackReply, PatientGrounded
from agents.fidelity.facts import SITES, claim_concepts
from agents.fidelity.patient import check_patient
from agents.guards import corrections_for
from agents.participants.base import Observation, Participant, RoleFailure, Turn
from agents.patient_voice import VoicedFact, facts_for, given_facts, grounded_answer, grounded_message, voice_of

__all__ = ["Grounded", "faithful", "patient_corrections"]



_BARE_NO = re.compile(r"^\W*(?:no|nope|not\s+really|nothing(?:\s+else)?|none|i\s+don'?t\s+think\s+so|"
                      r"not\s+that\s+i(?:'ve|\s+have)?\s+noticed)\W*(?:doctor\W*)?$", re.I)
_DENIAL = re.compile(r"^\W*(?:no|not|non|none|never|nothing|i\s+deny|i\s+do\s+not|i\s+don'?t|i\s+have\s+not|i\s+haven'?t|"
                     r"i\s+am\s+not|i'?m\s+not|there\s+(?:is|are|was|were)\s+no)\b", re.I)


_GENERAL = frozenset(("els", "other", "anyth", "noth"))  # what a general denial denies ("nothing else")


def _general_denial(reply: str) -> bool:
    """"No.", "Nothing else", "I do not have any other symptoms": a denial that names
    nothing in particular."""
    text = reply.strip()
    if _BARE_NO.match(text):
        return True
    return bool(_DENIAL.match(text)) and all(c in _GENERAL for c, _ in claim_concepts(text))


def _denies_what_it_was_given(question: str, reply: str, given: list[str]) -> bool:
    """A general denial ("No.", "I do not have any other symptoms") to a question the facts
    given with it answer with something the patient has: the pre-check sees no claim in
    it, but it denies them."""
    if not _general_denial(reply):
        return False
    q = frozenset(c for c, _ in claim_concepts(question)) - SITES - _GENERAL  # "anything else?" names nothing
    for fact in given:
        if _DENIAL.match(fact):
            continue
        if not q or q & frozenset(c for c, n in claim_concepts(fact) if not n):
            return True
    return False


def faithful(case: Case, licensed: Iterable[str] = ()) -> Callable[[str, Observation], "str | None"]:
    """A :class:`Guarded` check: the problem the pre-check finds in a patient reply to the
    question being answered (``obs.answering``), worst first, or None; a bare "No" that
    denies the facts the question came with is ``contradicted`` too. ``licensed``: problems
    a patient behaviour asks for (a fabricating patient invents on purpose:
    :func:`agents.behaviours.licensed`), let through."""
    allowed = frozenset(licensed)

    def check(reply: str, obs: Observation) -> str | None:
        problem = _problem(reply, obs)
        return None if problem in allowed else problem

    def _problem(reply: str, obs: Observation) -> str | None:
        question = obs.answering if obs.answering is not None else obs.text
        c = check_patient(case, question, reply)
        if c.leak:
            return "leak"
        if c.voice in ("third_person", "not_caregiver"):
            return c.voice
        if c.claim_verdict == "contradicted" or _denies_what_it_was_given(question, reply, given_facts(obs.text)):
            return "contradicted"
        if c.claim_verdict == "unsupported":
            return "invented"
        return None
    return check


def patient_corrections(case: Case) -> dict[str, str]:
    """What the guard tells the patient (or the caregiver) for each problem."""
    out = dict(corrections_for("patient"))
    v = voice_of(case)
    if v.caregiver is None:
        out["third_person"] = ('(Speak as yourself: say "I" and "my". Never call yourself "the patient", '
                               '"he" or "she".)')
    else:
        out["third_person"] = (f'(You are the {v.caregiver}: speak of your child as "he", "she" or "{v.child}", '
                               'never as "the patient".)')
        out["role_break"] = f"(Speak only as the {v.caregiver}. Do not write the doctor's lines.)"
    out["not_caregiver"] = (f"(You are the patient's {v.caregiver or 'caregiver'}: say what you have seen in your child "
                            f'("{v.child} has ..."), not symptoms of your own.)')
    out["contradicted"] = "(That does not match what you know. Answer again from the facts given with the question.)"
    out["invented"] = ("(Say only what the facts given with the question say. If they do not answer it, say you have "
                       "not noticed it.)")
    out["leak"] = ("(You do not know your diagnosis or your test results. Say only what you feel and have "
                   "noticed, in everyday words.)")
    return out


class Grounded:
    """Wraps the (guarded) patient: each question comes with the facts that answer it
    (logged as ``patient_grounded``); a reply still unfaithful, or otherwise unusable,
    after the guard's retries is replaced by those facts (``fallback_reply``). With a
    patient behaviour (``profile``, :mod:`agents.behaviours`): a withholding patient is
    given only what the question asks about directly (:func:`released_facts`), a
    fabricating one also the ``invented`` symptoms (:func:`invented_for`), each recorded."""

    def __init__(self, inner: Participant, case: Case, sink: EventSink, k: int = 4, *, profile: Profile = (),
                 invented: Sequence[str] = ()):
        self.inner, self.case, self.sink, self.k = inner, case, sink, k
        self.role = inner.role
        self.told: set[int] = set()
        levels = dict(profile)
        self.withhold, self.fabricate = levels.get("withhold", 0), levels.get("fabricate", 0)
        self.invented = tuple(invented)
        self.told_invented: set[int] = set()

    def _facts(self, question: str) -> tuple[list[VoicedFact], tuple[int, ...], tuple[str, ...]]:
        """The facts given with ``question``, those held back, and the invented ones given."""
        facts = list(facts_for(self.case, question, self.told, self.k))
        withheld: tuple[int, ...] = ()
        if self.withhold:
            released = released_facts(self.case, question, self.told, self.withhold, self.k)
            withheld = tuple(f.index for f in facts if f not in released)
            facts = list(released)
        invented: tuple[str, ...] = ()
        if self.invented and self.fabricate:
            picked = invented_for(self.invented, question, self.told_invented, self.fabricate)
            self.told_invented |= set(picked)
            invented = tuple(self.invented[i] for i in picked)
            made = [VoicedFact(-1, "symptoms", t) for t in invented]
            # after the first real fact (so a short answer carries one), first at level 3
            at = 0 if self.fabricate >= 3 else min(1, len(facts))
            facts[at:at] = made
        return facts, withheld, invented

    def act(self, obs: Observation) -> Turn:
        question = obs.text
        facts, withheld, invented = self._facts(question)
        self.sink.emit(PatientGrounded(turn=obs.turn, facts=tuple(f.index for f in facts if f.index >= 0),
                                       withheld=withheld, invented=invented))
        told = replace(obs, text=grounded_message(question, facts, held_back=bool(withheld) and not facts),
                       answering=question)
        self.told |= {f.index for f in facts if f.index >= 0}
        try:
            return self.inner.act(told)
        except RoleFailure as e:
            text = grounded_answer(self.case, facts)
            self.sink.emit(FallbackReply(role=self.role, turn=obs.turn, reason=str(e), text=text))
            participant = getattr(self.inner, "inner", self.inner)
            commit = getattr(participant, "commit", None)
            if commit is not None:  # the patient's own conversation holds what was said
                commit(told.text, text)
            return Turn(text=text, source="fallback")
