"""The ``speech`` block of a results row: how the simulated patient spoke in one
consultation, read from its log (deterministic, no model).

Over the patient's utterances (but a person's), each read against the doctor's words
before it, as the fidelity scorer reads them (:mod:`agents.fidelity.scorer`):

- ``words``, ``sentences``, ``syllables`` and ``fk_grade``: the Flesch-Kincaid grade level
  of all the patient said (:mod:`agents.readability`);
- ``told``: facts of the case the patient told (the fidelity pre-check's supported claims,
  :func:`agents.fidelity.patient.check_patient`); ``volunteered``: those the question
  before did not ask about directly (:func:`agents.fidelity.patient.directly_asked`), and
  ``volunteering``: the utterances that volunteered at least one;
- ``no_claim``: utterances that claim nothing about the patient ("Sorry, what did you say?");
- ``belief``, ``hedge``, ``affect``: utterances holding a marker of a belief about the
  illness ("I think it's just stress", "I read online that ..."), of uncertainty ("I'm not
  sure", "I can't remember") or of worry or hostility ("I'm scared", "why do you want to
  know?"), by the word lists below (a lexicon: it counts what it lists, nothing else).

These are the manipulation checks' raw counts for the patient behaviours
(:mod:`agents.behaviour_checks`); every consultation row has them, so that the
cooperative patient is measured the same way.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from agents.cases.model import Case
from agents.fidelity.facts import case_facts
from agents.fidelity.patient import check_patient, directly_asked
from agents.readability import TextCounts, flesch_kincaid_grade, text_counts

__all__ = ["MARKERS", "utterance_speech", "speech_row", "SPEECH_FIELDS"]

MARKERS: dict[str, re.Pattern[str]] = {
    "belief": re.compile(
        r"\bi\s+(?:think|thought|reckon|believe|bet|guess)\s+(?:it'?s|it\s+is|it\s+was|this\s+is|that'?s|that\s+it|"
        r"it\s+comes?)\b|\b(?:i'?m|i\s+am)\s+(?:sure|certain|convinced)\s+(?:it|that|this)\b|\bmust\s+be\b|"
        r"\bi\s+(?:read|heard|saw)\s+(?:online|on\s+the\s+internet|that|about|somewhere)\b|"
        r"\bit(?:'s|\s+is)\s+(?:just|only|probably)\b|\bbecause\s+of\s+(?:the|my|all|stress)\b|\bcaused\s+by\b", re.I),
    "hedge": re.compile(
        r"\b(?:not\s+(?:quite\s+|really\s+|exactly\s+)?sure|(?:don'?t|do\s+not|can'?t|cannot|couldn'?t)\s+(?:really\s+)?"
        r"(?:remember|recall)|i\s+forg[eo]t|maybe|perhaps|roughly|sort\s+of|or\s+so|a\s+few|some\s+time|"
        r"i\s+think|i\s+guess)\b", re.I),
    "affect": re.compile(
        r"\b(?:worried|worry|worrying|scared|afraid|frightened|anxious|nervous|panick\w*|upset|annoyed|annoying|angry|"
        r"furious|frustrat\w+|fed\s+up|sick\s+of|ridiculous|waste\s+of|hurry|get\s+on\s+with|already\s+told|"
        r"why\s+do\s+you|do\s+you\s+even|useless|pointless)\b", re.I),
}
SPEECH_FIELDS = ("utterances", "words", "sentences", "syllables", "fk_grade", "told", "volunteered", "volunteering",
                 "no_claim", *MARKERS)


def utterance_speech(case: Case, question: str, reply: str) -> dict[str, Any]:
    """One patient utterance's counts (see the module's docstring)."""
    c = text_counts(reply)
    check = check_patient(case, question, reply)
    facts = case_facts(case).facts
    told = sorted({cl.fact for cl in check.claims if cl.verdict == "supported" and cl.fact is not None})
    volunteered = [i for i in told if facts[i].section != "demographics" and not directly_asked(facts[i], question)]
    return {"words": c.words, "sentences": c.sentences, "syllables": c.syllables, "told": len(told),
            "volunteered": len(volunteered), "no_claim": check.claim_verdict == "no_claim",
            **{k: bool(rx.search(reply)) for k, rx in MARKERS.items()}}


def speech_row(case: Case, events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The row's ``speech`` block (None: the patient said nothing, or only a person spoke)."""
    question = ""
    items = []
    for e in events:
        if e.get("type") != "utterance":
            continue
        if e.get("speaker") == "doctor":
            question = str(e.get("text") or "")
        elif e.get("speaker") == "patient" and e.get("source") != "human":
            items.append(utterance_speech(case, question, str(e.get("text") or "")))
    if not items:
        return None
    total = TextCounts(sum(i["words"] for i in items), sum(i["sentences"] for i in items),
                       sum(i["syllables"] for i in items))
    grade = flesch_kincaid_grade(total)
    return {"utterances": len(items), "words": total.words, "sentences": total.sentences,
            "syllables": total.syllables, "fk_grade": None if grade is None else round(grade, 3),
            "told": sum(i["told"] for i in items), "volunteered": sum(i["volunteered"] for i in items),
            "volunteering": sum(1 for i in items if i["volunteered"]), "no_claim": sum(i["no_claim"] for i in items),
            **{k: sum(i[k] for i in items) for k in MARKERS}}
