"""Diagnosis scoring: a deterministic normalised pre-check, then an LLM judge with
tolerant parsing. The judge never counts a missing diagnosis as correct."""
from __future__ import annotations

import re
from dataclasses import dataclass

from agents.events import EventSink, JudgeDecision
from agents.llm.base import LLM, CallContext, GenerateParams, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render

__all__ = ["normalise", "not_a_diagnosis", "strip_lead_in", "precheck", "parse_verdict", "Verdict", "judge_diagnosis", "JudgeUnparsed"]

_FILLER = {"the", "a", "an", "of", "acute", "likely", "probable", "most", "diagnosis", "is", "with", "due", "to"}


def normalise(text: str) -> str:
    t = text.lower()
    t = re.sub(r"[’']s\b", "", t)
    t = re.sub(r"[^a-z0-9]+", " ", t)
    return " ".join(w for w in t.split() if w not in {"the", "a", "an"})


def _core(text: str) -> str:
    """Without parenthesised parts and filler words: 'Acute appendicitis (ruptured)' ->
    'appendicitis'."""
    t = re.sub(r"\([^)]*\)", " ", text)
    return " ".join(w for w in normalise(t).split() if w not in _FILLER)


def _abbreviations(text: str) -> set[str]:
    return {normalise(m) for m in re.findall(r"\(([^)]{2,12})\)", text)}


@dataclass(frozen=True)
class Verdict:
    correct: bool | None  # None: the pre-check could not decide
    method: str  # precheck | llm
    rule: str
    rationale: str


_FIRST_PERSON = re.compile(r"\b(i|i'm|im|me|my|we|you|your)\b", re.IGNORECASE)
_NON_ANSWER = re.compile(r"^\s*(no|not|none|unknown|unsure|uncertain|cannot|can't|unclear|n/?a|need more|more tests)\b",
                         re.IGNORECASE)


_HEDGE = re.compile(r"\b(such as|a variety of|variety of causes|could be due to|may be due to|might be due to|"
                    r"possible causes|differential|rule out)\b", re.IGNORECASE)
_LEAD_IN = re.compile(
    r"^\s*(?:(?:my|the|our)\s+(?:final\s+|working\s+|most\s+likely\s+)?diagnosis\s+is\s*:?\s*"
    r"|the\s+patient\s+(?:is\s+diagnosed\s+with|has)\s+|i\s+(?:think|believe|suspect)\s+(?:it\s+is\s+|this\s+is\s+)?)"
    r"(?:an?\s+)?(?:suspected\s+case\s+of\s+|case\s+of\s+)?",
    re.IGNORECASE,
)


def strip_lead_in(text: str) -> str:
    """'My diagnosis is a suspected case of AMI' -> 'AMI'."""
    return _LEAD_IN.sub("", text.strip(), count=1).strip()


def not_a_diagnosis(text: str) -> str | None:
    """Why ``text`` cannot be a diagnosis (a sentence about oneself, a question, a
    negation), or None. Keeps a lenient model judge from saying "Yes" to a line that
    names no condition. Lead-ins like "My diagnosis is" are ignored."""
    t = strip_lead_in(text)
    if "?" in t:
        return "a question"
    if _HEDGE.search(t):
        return "a hedge or a list of possibilities, not one diagnosis"
    if _FIRST_PERSON.search(t):
        return "a sentence in the first or second person"
    if _NON_ANSWER.match(t):
        return "a negation or non-answer"
    return None


def precheck(diagnosis: str | None, truth: str) -> Verdict:
    """Decide the easy cases without a model: no diagnosis is wrong; the same words
    (ignoring case, punctuation, articles, parentheses) or the key's abbreviation are right."""
    if diagnosis is None or not normalise(diagnosis):
        return Verdict(False, "precheck", "no_diagnosis", "no diagnosis was given")
    diagnosis = strip_lead_in(diagnosis) or diagnosis
    why = not_a_diagnosis(diagnosis)
    if why and normalise(diagnosis) != normalise(truth):
        return Verdict(False, "precheck", "not_a_diagnosis", f"'{diagnosis[:80]}' names no condition ({why})")
    d, t = normalise(diagnosis), normalise(truth)
    if d == t:
        return Verdict(True, "precheck", "normalised_equal", f"'{diagnosis}' equals '{truth}' after normalisation")
    if _core(diagnosis) and _core(diagnosis) == _core(truth):
        return Verdict(True, "precheck", "core_equal", f"'{diagnosis}' equals '{truth}' without qualifiers")
    if d in _abbreviations(truth):
        return Verdict(True, "precheck", "abbreviation", f"'{diagnosis}' is the key's abbreviation")
    return Verdict(None, "precheck", "undecided", "needs the judge")


_YES = re.compile(r"^\W*(yes|correct|same|match(?:es)?|true)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|incorrect|different|not|false|wrong)\b", re.IGNORECASE)
_YES_ANY = re.compile(r"\b(they match|the same (?:condition|diagnosis)|is correct|are equivalent)\b", re.IGNORECASE)
_NO_ANY = re.compile(r"\b(do(?:es)? not match|not the same|different (?:condition|diagnos[ie]s)|is incorrect|are not equivalent)\b", re.IGNORECASE)


def parse_verdict(reply: str) -> tuple[bool | None, str]:
    """'Yes.', 'yes, they match', '**No** - different' ... -> (verdict, rule)."""
    text = re.sub(r"[*_`#]+", "", reply).strip()
    if _YES.search(text):
        return True, "leading_yes"
    if _NO.search(text):
        return False, "leading_no"
    no_any, yes_any = bool(_NO_ANY.search(text)), bool(_YES_ANY.search(text))
    if no_any and not yes_any:
        return False, "phrase_no"
    if yes_any and not no_any:
        return True, "phrase_yes"
    return None, "unparsed"


class JudgeUnparsed(RuntimeError):
    pass


def judge_diagnosis(
    diagnosis: str | None,
    truth: str,
    *,
    llm: LLM,
    params: GenerateParams,
    case_id: str,
    turn: int,
    sink: EventSink,
    policy: RetryPolicy = RetryPolicy(),
    attempts: int = 2,
) -> Verdict:
    """Pre-check, then the LLM judge; the decision and its rationale become an event.
    Raises :class:`JudgeUnparsed` if the judge's reply cannot be read ``attempts`` times."""
    v = precheck(diagnosis, truth)
    if v.correct is None:
        assert diagnosis is not None
        messages = [Message("system", render("judge")),
                    Message("user", render("judge_user", truth=truth, diagnosis=diagnosis))]
        verdict, rule, reply = None, "unparsed", ""
        for _ in range(attempts):
            out = generate_logged(llm, messages, params, CallContext("judge", case_id, turn), sink, policy)
            reply = out.text.strip()
            verdict, rule = parse_verdict(reply)
            if verdict is not None:
                break
            messages = messages + [Message("assistant", reply),
                                   Message("user", "Please answer with Yes or No first.")]
        if verdict is None:
            raise JudgeUnparsed(f"judge reply could not be parsed as yes/no: {reply[:200]!r}")
        v = Verdict(verdict, "llm", rule, reply)
    sink.emit(JudgeDecision(method=v.method, correct=bool(v.correct), diagnosis=diagnosis,
                            truth=truth, rationale=v.rationale, rule=v.rule))
    return v
