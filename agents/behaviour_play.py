"""How the scripted backend plays a patient behaviour (:mod:`agents.behaviours`): a
deterministic rewrite of the answer it would give, by the behaviours whose texts the
patient's system prompt holds. It is the oracle's rendition for tests and the first look,
not a model of how people talk: each behaviour does the one thing its manipulation check
measures (:mod:`agents.behaviour_checks`), on a fixed pattern of turns.

Withholding and fabrication need no rewrite: the faithful patient is given fewer facts,
or invented ones, with each question (:class:`agents.participants.grounded.Grounded`),
and the scripted patient says what it is given.
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

from agents.cases.model import Case
from agents.fidelity.facts import SITES, canon, case_facts

__all__ = ["play", "CONFUSED", "WITHHOLDING_REPLY"]

CONFUSED = "Sorry, what did you say?"
WITHHOLDING_REPLY = "Well, I am not sure."
_BELIEFS = ("I think it is just stress.", "I think it is something I read about online.",
            "I think it is the weather, I read about it online, I am sure of it.")
_NUMBER = re.compile(r"\b(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
                     r"twenty|thirty|forty|fifty|sixty)\b(?!-)", re.I)
_SPLIT = {1: re.compile(r";\s*|,\s+and\s+"),
          2: re.compile(r";\s*|,\s*|\s+and\s+"),
          3: re.compile(r";\s*|,\s*|\s+(?:and|with|for|because|but|which|that|when|since|while|after|before)\s+")}
# simpler words with the same meaning (the fidelity pre-check folds each pair into one concept)
_PLAIN = {"abdominal": "belly", "medication": "medicine", "medications": "medicines", "nausea": "feeling sick",
          "vomiting": "being sick", "difficulty": "trouble", "extremely": "very", "approximately": "about",
          "experiencing": "having", "occasionally": "sometimes", "previously": "before", "temperature": "fever",
          "fatigue": "tiredness", "breathlessness": "short breath"}
_AGAIN = ("As I said, ", "Like I told you, ", "Again, ")
_ARTICLE = re.compile(r"\b(?:the|a|an)\s+", re.I)
_NEGATION = re.compile(r"\b(?:no|not|never|without|nor|none|denies|cannot|can't|don't|doesn't|didn't|haven't|"
                       r"hasn't)\b", re.I)


def _on(level: int, k: int, pattern: Mapping[int, str]) -> bool:
    """Whether patient turn ``k`` (0: the first answer) is one the behaviour shows in."""
    rule = pattern.get(level, "")
    return {"once": k == 2, "third": k % 3 == 2, "second": k % 2 == 1, "after_first": k >= 1,
            "even": k % 2 == 0, "always": True, "mostly": k % 3 != 0}.get(rule, False)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and not text.startswith("I ") else text


def _denial(case: Case, said: Sequence[str]) -> str | None:
    """A denial of something the patient said before (a word of a fact the case asserts)."""
    cf = case_facts(case)
    wanted = (cf.complaint or cf.asserted) - SITES
    for text in reversed(said):
        for word in re.findall(r"[A-Za-z]+", text):
            if len(word) > 3 and canon(word) in wanted:
                return f"Actually, no, I do not have any {word.lower()}."
    return None


def _starts(text: str, at: int) -> bool:
    return not text[:at].strip() or text[:at].rstrip()[-1:] in ".!?"


def _simpler(answer: str, level: int) -> str:
    """Short sentences (split at the joints of ``level``), plainer words (2+), no articles
    (3); a piece that denies keeps what follows it, so that a denial's scope stays whole."""
    parts = _SPLIT[level].split(answer)
    joints = [m.group(0) for m in _SPLIT[level].finditer(answer)]
    chunks: list[str] = []
    for i, piece in enumerate(parts):
        c = piece.strip(" .")
        if not c:
            continue
        if chunks and _NEGATION.search(chunks[-1]):  # "not settling with medicines" stays one piece
            chunks[-1] = f"{chunks[-1]}{joints[i - 1] if i else ' '}{c}"
        else:
            chunks.append(c)
    out = []
    for c in chunks:
        if level >= 2:
            c = re.sub(r"[A-Za-z]+", lambda m: _PLAIN.get(m.group(0).lower(), m.group(0)), c)
        if level >= 3:
            c = _ARTICLE.sub("", c)
        out.append(c[:1].upper() + c[1:] + ".")
    return " ".join(out) if out else answer


def play(answer: str, levels: Mapping[str, int], k: int, said: Sequence[str], case: Case) -> str:
    """``answer`` as a patient with ``levels`` says it at its turn ``k`` (0: the first
    answer), having said ``said`` before."""
    if not levels:
        return answer
    if _on(levels.get("confusion", 0), k, {1: "third", 2: "second", 3: "mostly"}) and k > 0:
        return CONFUSED
    text = answer
    if _on(levels.get("inconsistent", 0), k, {1: "once", 2: "third", 3: "second"}):
        denial = _denial(case, said)
        if denial:
            text = f"{text} {denial}"
    recall = levels.get("recall", 0)
    if recall and (recall >= 2 or k % 2 == 0):
        text = _NUMBER.sub(lambda m: "A few" if _starts(text, m.start()) else "a few", text)
        if recall >= 2:  # after the answer: a hedge first would read as a "yes" to a closed question
            text = f"{text} I am not sure, doctor."
        if recall >= 3:
            text = f"{text} I do not remember."
    if levels.get("proficiency"):
        text = _simpler(text, levels["proficiency"])
    cognition = levels.get("cognition", 0)
    if _on(cognition, k, {1: "once", 2: "second", 3: "after_first"}):
        text = f"{text} {_BELIEFS[cognition - 1]}"
    attitude = levels.get("attitude", 0)
    if attitude == 1 and k % 2 == 0:
        text = f"{text} I am worried, doctor."
    elif attitude >= 2 and k >= 1:
        text = f"Why do you want to know? {text}"
        if attitude == 3:
            text = f"Do you even know what you are doing? {text} Just get on with it!"
    expression = levels.get("expression", 0)
    if expression:
        first = _sentences(answer)[0] if _sentences(answer) else answer
        text = f"Well, you know, {'I mean, ' if expression >= 3 else ''}{_lower_first(text)}"
        if expression >= 2:
            text = f"{text} Like I said, {_lower_first(answer if expression >= 3 else first)}"
        if expression >= 3:
            text = f"{text} Sorry, where was I?"
    if text in said:  # the same facts given again (a withholding patient asked twice): said as a repeat
        again = sum(1 for x in said if text.lower() in x.lower()) - 1
        text = f"{_AGAIN[again % len(_AGAIN)]}{_lower_first(text)}"
    return text
