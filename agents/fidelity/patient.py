"""The deterministic pre-check of one patient utterance against the case (written for
medsim). It decides what it can and leaves the rest (``None``) to the checker model
(:mod:`agents.fidelity.checker`):

- **claims**: each sentence's concepts (:func:`agents.fidelity.facts.claim_concepts`)
  against the facts. A sentence is *contradicted* when it asserts what the case only
  denies ("I have diarrhoea" when the review of systems says none), denies what a fact
  asserts ("I have no pain" with abdominal pain as the complaint), or says the patient is
  well when the case has a complaint; *supported* when a fact asserts (or denies) most of
  its concepts, or when it denies something the case never mentions (the patient is told
  to say they have not noticed it); *unsupported* (invented) when most of what it
  asserts is in no fact. A bare "Yes." or "No." claims the question's concepts. The
  utterance's verdict is its worst sentence's: contradicted, then unsupported, then
  supported (``no_claim`` when it claims nothing).
- **voice**: *third_person* when it says "the patient", or begins a sentence with
  he/she (they) with no one else named; for a patient someone else speaks for (an
  infant: :func:`agents.fidelity.facts.speaks_for`), *not_caregiver* when it speaks of
  the symptoms as its own ("I have a fever") without naming the child.
- **leak**: the diagnosis (its words in a row, its abbreviation, the judge's synonyms:
  :func:`agents.judge.names_condition`), a distinctive word of it (a condition word or an
  eponym), or a number the exam or test records hold; never what the patient's own facts
  say. Two long record words (not in the patient's facts) are a leak; one is left to
  the model.
- **overshare**: two or more facts the question did not ask for (another section of the
  history than the question's topic, sharing no concept with it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from agents.cases.model import Case
from agents.fidelity.facts import (OPPOSITES, SITES, CaseFacts, Fact, canon, case_facts, claim_concepts,
                                   located_concepts)
from agents.judge import names_condition

__all__ = ["Claim", "PatientCheck", "check_patient", "CLAIM_VERDICTS", "VOICES", "asked_sections", "specific_sections",
           "directly_asked"]

CLAIM_VERDICTS = ("supported", "contradicted", "unsupported", "no_claim")
VOICES = ("first_person", "caregiver", "third_person", "not_caregiver")
_RANK = {"contradicted": 3, "unsupported": 2, "supported": 1, "no_claim": 0}


@dataclass(frozen=True)
class Claim:
    text: str
    asserted: tuple[str, ...]
    denied: tuple[str, ...]
    verdict: str | None  # supported | contradicted | unsupported | no_claim | None (undecided)
    fact: int | None  # the fact that decided it
    why: str


@dataclass(frozen=True)
class PatientCheck:
    """The pre-check's reading of one patient utterance (``None``: undecided)."""

    claims: tuple[Claim, ...]
    claim_verdict: str | None
    voice: str | None
    leak: bool | None
    leak_what: str
    overshare: bool | None
    unasked: tuple[int, ...]  # the facts told that the question did not ask for

    def undecided(self) -> tuple[str, ...]:
        """The fields the checker model is asked about."""
        return tuple(n for n, v in (("claims", self.claim_verdict), ("voice", self.voice), ("leak", self.leak),
                                    ("overshare", self.overshare)) if v is None)


# -- claims ---------------------------------------------------------------------------------
_SENTENCE = re.compile(r"(?<!\d)[.!?;](?!\d)|\n|\s+but\s+|,\s*(?:and\s+)?(?:though|although|however)\s+", re.I)
_YES = re.compile(r"^\s*(?:yes|yeah|yep|yup|correct|right|i\s+do|i\s+have|i\s+am|it\s+does|it\s+is|sure)\b"
                  r"(?!\s*(?:n'?t|not|no|never|none|nothing)\b)", re.I)  # "I have no ..." is no "yes"
_NO = re.compile(r"^\s*(?:no|nope|not\s+really|not\s+at\s+all|never|i\s+don'?t|i\s+do\s+not|i\s+haven'?t|"
                 r"i\s+have\s+not|i'?m\s+not|it\s+doesn'?t|none)\b", re.I)
_CLOSED_QUESTION = re.compile(r"^\s*(?:\w+,\s*)?(?:do|does|did|have|has|had|are|is|was|were|can|could|any|ever|"
                              r"would|will)\b", re.I)
_WELL = re.compile(r"\b(?:(?:i'?m|i\s+am|i\s+feel|feeling|doing|i've\s+been|i\s+have\s+been|(?:the\s+)?patient\s+is|"
                   r"(?:he|she)\s+is)\s+(?:\w+\s+)?(?:fine|well|good|great|ok|okay|healthy|normal|alright)|"
                   r"nothing\s+(?:is\s+)?wrong|no\s+(?:signs?\s+of\s+)?(?:symptoms|complaints|problems|issues|concerns)"
                   r"|feel(?:ing)?\s+(?:perfectly\s+|completely\s+)?(?:fine|well|normal)"
                   r"|(?:mood|spirits)\s+(?:is|are|has\s+been|have\s+been)\s+(?:\w+\s+)?(?:great|good|fine|excellent)"
                   r"|never\s+been\s+happier|(?:i'?m|i\s+am|feeling)\s+(?:very\s+|really\s+)?happy)\b", re.I)
_EXCEPT = re.compile(r"\b(?:other|else|apart|except|besides|otherwise|than|anymore|any\s+more)\b", re.I)
# a denial about another time or thing ("never had pain like this before") does not deny the complaint
_ELSEWHEN = re.compile(r"\b(?:like\s+this|before|previous(?:ly)?|in\s+the\s+past|ever|other|else|until|prior|"
                       r"anymore|any\s+more|since)\b", re.I)
_PMH_NONE = re.compile(r"\b(?:no|not\s+any|don'?t\s+have\s+any)\s+(?:(?:significant|other|known|major|past|previous|prior|"
                       r"serious|relevant|notable|real)\s+)*(?:medical|health)\s+(?:problems|conditions|history|issues)|\b(?:don'?t|do\s+not)\s+take\s+any\s+"
                       r"(?:regular\s+)?(?:medicines|medications|tablets|pills)|\bno\s+(?:regular\s+)?medications\b", re.I)


def _split(text: str) -> list[str]:
    return [s.strip(" ,") for s in _SENTENCE.split(text) if s and s.strip(" ,")]


def _best(facts: Sequence[Fact], concepts: frozenset[str], attr: str) -> tuple[Fact | None, int]:
    best, hit = None, 0
    for f in facts:
        n = len(concepts & getattr(f, attr))
        if n > hit:
            best, hit = f, n
    return best, hit


def _judge_clause(cf: CaseFacts, text: str, pos: frozenset[str], neg: frozenset[str]) -> Claim:
    mk = lambda v, f, why: Claim(text, tuple(sorted(pos)), tuple(sorted(neg)), v, f, why)  # noqa: E731
    if not pos and not neg:
        return mk("no_claim", None, "no claim about the patient")
    same = next((f for f in cf.facts if pos <= f.asserted and neg <= f.denied
                 and (not pos or len(pos) > len(f.asserted) / 2) and (not neg or len(neg) > len(f.denied) / 2)), None)
    if same is not None:  # one fact says just this, the same way
        return mk("supported", same.index, "the case says so")
    verdicts: list[tuple[str | None, int | None, str]] = []
    if pos:
        fa, a = _best(cf.facts, pos, "asserted")
        fd, d = _best(cf.facts, pos, "denied")
        opposite = _opposite(cf, pos)
        if fd is not None and d > a and d / len(pos) >= 0.5 and (pos & fd.denied) - SITES:
            verdicts.append(("contradicted", fd.index, f"asserts {', '.join(sorted(pos & fd.denied))}, which the "
                                                       "case denies"))
        elif opposite is not None:
            verdicts.append(("contradicted", opposite[0], opposite[1]))
        else:
            cov_all = len(pos & cf.asserted) / len(pos)
            if fa is not None and cov_all >= 0.6 and a / len(pos) >= 0.5:
                verdicts.append(("supported", fa.index, "the case says so"))
            elif cov_all < 0.34 and d == 0:
                verdicts.append(("unsupported", None, f"no fact holds {', '.join(sorted(pos - cf.asserted))}"))
            else:
                verdicts.append((None, None, "partly in the case"))
    if neg:
        fa, a = _best(cf.facts, neg, "asserted")
        fd, d = _best(cf.facts, neg, "denied")
        told = (fa is not None and a / len(neg) >= 0.67 and not _ELSEWHEN.search(text)
                and bool((neg & fa.asserted) - SITES))
        complaint = max((len(neg & f.asserted) for f in cf.facts if f.section == "complaint"), default=0)
        if told and (a > d or a == d and complaint == a):  # a tie: denying the complaint itself contradicts
            verdicts.append(("contradicted", fa.index, f"denies {', '.join(sorted(neg & fa.asserted))}, which the "
                                                       "case asserts"))
        elif fd is not None and d >= a and d / len(neg) >= 0.5:
            verdicts.append(("supported", fd.index, "the case denies it too"))
        elif a == 0:
            verdicts.append(("supported", None, "denies what the case never mentions"))
        else:
            verdicts.append((None, None, "denies something the case partly asserts"))
    if any(v == "contradicted" for v, _, _ in verdicts):
        v, fi, why = next(x for x in verdicts if x[0] == "contradicted")
    elif any(v is None for v, _, _ in verdicts):
        v, fi, why = next(x for x in verdicts if x[0] is None)
    else:
        v, fi, why = max(verdicts, key=lambda x: _RANK[x[0] or "no_claim"])
    return mk(v, fi, why)


def _opposite(cf: CaseFacts, pos: frozenset[str]) -> tuple[int, str] | None:
    """A claim with one of a pair of opposites (left/right, worse/better) where the fact
    that says the rest of it says the other: "the pain is on the right" when it is on the
    left."""
    for a, b in OPPOSITES:
        for mine, other in ((a, b), (b, a)):
            if mine not in pos:
                continue
            rest = pos - {mine}
            if not rest - SITES and len(rest) < 2:
                continue
            f, hit = _best(cf.facts, rest, "asserted")
            if f is not None and hit >= min(2, len(rest)) and other in f.asserted and mine not in f.asserted:
                return f.index, f"says {mine} where the case says {other}"
    return None


_CLAUSE = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or|but|while|whereas|although|though|because|since)\s+", re.I)


def _sentence_claims(cf: CaseFacts, text: str, extra_pos: frozenset[str], extra_neg: frozenset[str]) -> list[Claim]:
    """A sentence's claims: one per clause (negation read over the whole sentence, so
    "no fever, chills or rash" denies all three)."""
    if _WELL.search(text) and cf.complaint:
        mk = lambda v, f, why: Claim(text, (), (), v, f, why)  # noqa: E731
        said = next((f for f in cf.facts if _WELL.search(f.text)), None)
        if said is not None:  # the case itself says so ("he has been doing well")
            return [mk("supported", said.index, "the case says so")]
        if not _EXCEPT.search(text):
            first = next((f.index for f in cf.facts if f.section == "complaint"), None)
            return [mk("contradicted", first, "says the patient is well; the case has a complaint")]
        if not any(f.section in ("symptoms", "history") and f.asserted for f in cf.facts):
            return [mk("supported", None, "no other symptoms, and the case lists none")]
        return [mk(None, None, "says there is nothing else; the case may hold more")]
    if _PMH_NONE.search(text):  # "no medical problems": a claim about the past history, with no concept of its own
        pmh = [f for f in cf.facts if f.section == "pmh"]
        quiet = not pmh or all(not f.asserted or "medicine" in f.asserted and len(f.asserted) == 1 for f in pmh)
        fact = pmh[0].index if pmh else None
        rest = _PMH_NONE.sub(" ", text)
        claims = [Claim(text, (), ("medical",), "supported" if quiet else None, fact,
                        "the past history agrees" if quiet else "the past history holds something")]
        return claims + [c for c in _sentence_claims(cf, rest, extra_pos, extra_neg) if c.verdict != "no_claim"]
    located = located_concepts(text)
    cuts = [0] + [m.end() for m in _CLAUSE.finditer(text)] + [len(text) + 1]
    claims = []
    for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        part = [(c, n) for c, n, at in located if lo <= at < hi]
        pos = frozenset(c for c, n in part if not n) | (extra_pos if k == 0 else frozenset())
        neg = frozenset(c for c, n in part if n) | (extra_neg if k == 0 else frozenset())
        if pos or neg:
            claims.append(_judge_clause(cf, text[lo:hi].strip(" ,"), pos, neg))
    return claims or [Claim(text, (), (), "no_claim", None, "no claim about the patient")]


def _utterance_verdict(claims: Sequence[Claim]) -> str | None:
    if any(c.verdict == "contradicted" for c in claims):
        return "contradicted"
    if any(c.verdict is None for c in claims):
        return None
    return max((c.verdict for c in claims if c.verdict), key=lambda v: _RANK[v], default="no_claim")


# -- voice ----------------------------------------------------------------------------------
_THE_PATIENT = re.compile(r"\b(?:the|this)\s+patient(?:'s)?\b", re.I)
_THIRD_START = re.compile(r"^\W*(?:he|she|his|her|they|their)\b", re.I)
_OTHER_PERSON = re.compile(r"\b(?:my|our|the)\s+(?:wife|husband|partner|son|daughter|baby|child|kid|boy|girl|mother|"
                           r"mum|mom|father|dad|brother|sister|friend|doctor|gp|boss|colleague|neighbour|neighbor|"
                           r"grandson|granddaughter|grandmother|grandfather|nurse|family)\b", re.I)
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.I)
_CHILD = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|my\s+(?:son|daughter|baby|child|kid|boy|girl|"
                    r"little\s+one)|the\s+(?:baby|child)|our\s+(?:son|daughter|baby|child))\b", re.I)
_OWN_SYMPTOM = re.compile(r"\b(?:i\s+(?:have|had|feel|felt|am|get|got|keep)\b(?!n't|\s+not\b|\s+never\b)|i'?ve\s+(?:had|been|got)|i'?m\s+"
                          r"(?:feeling|having|in|sick|hot|tired|hurting|coughing|vomiting|itchy|sore|dizzy|"
                          r"breathless|unwell|in\s+pain)|my\s+(?:tummy|belly|stomach|head|chest|throat|ear|ears|"
                          r"eyes?|skin|legs?|arms?|hands?|feet|foot|back|neck|mouth|lips|tongue|body)\b)", re.I)
_OWN_PERSON = re.compile(r"\bmy\s+name\s+is\b|\bi\s+am\s+\d+\s+(?:years?|months?|weeks?)\b|\bi'?m\s+\d+\b", re.I)
_OBSERVER = re.compile(r"\bi\s+(?:noticed|saw|see|found|took|gave|brought|checked|measured|think|thought|was\s+"
                       r"worried|am\s+worried|'m\s+worried|called|tried)\b", re.I)


# a fact about the caregiver: her pregnancy, or the parent as the subject of what they have
# or are ("The mother had ...", not "His mother reports that he has ...")
_GIVER_WORDS = re.compile(r"\b(?:maternal|pregnan\w*|gestational|prenatal|antenatal|primigravida|gravida)\b|"
                          r"\b(?:mother|father|parents?|mum|mom|dad)\s+(?:had|has|have|is|was|were|are|smokes|"
                          r"drinks|takes|took|used|uses)\b", re.I)


def _the_givers_own(cf: CaseFacts, text: str) -> bool:
    """Whether ``text`` tells one of the caregiver's own facts (the mother's pregnancy, her
    prenatal care): "I had gestational diabetes" is the mother speaking, not the infant."""
    said = frozenset(c for c, _ in claim_concepts(text)) - SITES
    return bool(said) and any(_GIVER_WORDS.search(f.text) and len(said & (f.asserted | f.denied)) >= max(1, len(said) // 2)
                              for f in cf.facts)


def _voice(cf: CaseFacts, text: str) -> str | None:
    if _THE_PATIENT.search(text):
        return "third_person"
    if cf.caregiver is not None:
        if _OWN_PERSON.search(text) and not _CHILD.search(text):
            return "not_caregiver"
        if _CHILD.search(text):
            return "caregiver"
        if _OWN_SYMPTOM.search(text) and not _OBSERVER.search(text) and not _the_givers_own(cf, text):
            return "not_caregiver"
        return "caregiver"
    if _OTHER_PERSON.search(text):
        return "first_person"
    for sentence in re.split(r"(?<=[.!?;])\s+", text.strip()):
        if _THIRD_START.match(sentence) and not _FIRST.search(sentence):
            return "third_person"
    return "first_person"


# -- leaks ----------------------------------------------------------------------------------
_CONDITION_WORD = re.compile(
    r"^(?:\w+(?:itis|osis|oma|emia|aemia|pathy|plasia|iasis|ectasis|ism|algia|penia|cytosis|megaly|thorax)|"
    r"embolism|thrombosis|stenosis|palsy|abscess|ulcer|hernia|aneurysm|dissection|sepsis|fracture|infarction|"
    r"pneumonia|stroke|gout|zoster|shingles|pericarditis|diabetes|ketoacidosis|migraine|leukemia|leukaemia|"
    r"lymphoma|melanoma|tuberculosis|meningitis|sclerosis|dementia|epilepsy|asthma|anaemia|anemia)$", re.I)
_NUM = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?!\w|[.,]\d)")
_WORD = re.compile(r"[A-Za-z]+")


def _distinctive(diagnosis: str) -> set[str]:
    """Words of the diagnosis that give it away alone: condition words and eponyms."""
    words = _WORD.findall(re.sub(r"\([^)]*\)", " ", diagnosis))
    out = {w.lower() for w in words if _CONDITION_WORD.match(w) and len(w) > 3}
    out |= {w.lower() for i, w in enumerate(words) if len(w) > 3 and w[0].isupper() and (i > 0 or len(words) > 1)
            and w.lower() not in ("acute", "chronic", "primary", "secondary", "left", "right", "inferior",
                                  "superior", "major", "minor", "community", "bacterial", "viral", "deep",
                                  "iron", "ruptured", "malignant", "benign", "diabetic", "lung")}
    return out


# lay words for a diagnosis's words (written for medsim)
_DX_LAY = {"renal": "kidney", "broke": "fracture", "broken": "fracture", "break": "fracture", "shingles": "zoster",
           "depression": "depressive", "depressed": "depressive", "clot": "thrombosis", "anemic": "anaemia",
           "anaemic": "anaemia", "anemia": "anaemia", "diabetic": "diabetes", "appendix": "appendicitis",
           "gallbladder": "cholecystitis", "pancreas": "pancreatitis", "meningeal": "meningitis"}
_DX_GENERIC = frozenset(canon(w) for w in (
    "acute chronic primary secondary left right disease syndrome disorder infection inferior superior major minor "
    "deep type community acquired spontaneous simple complex of the and with").split())


def _dx_stem(word: str) -> str:
    w = word.lower()
    return canon(_DX_LAY.get(w, w))


@lru_cache(maxsize=1024)
def _names(patient_text: str, diagnosis: str) -> bool:
    """Whether the patient's own facts name the diagnosis (once per case)."""
    return names_condition(patient_text, diagnosis)


@lru_cache(maxsize=1024)
def _known_stems(patient_text: str) -> frozenset[str]:
    """The stems of what the patient knows (once per case)."""
    return frozenset(_dx_stem(w) for w in _WORD.findall(patient_text))


@lru_cache(maxsize=1024)
def _dx_stems(diagnosis: str, condition_only: bool = False) -> frozenset[str]:
    words = _WORD.findall(diagnosis)
    if condition_only:
        return frozenset(_dx_stem(w) for w in words if _CONDITION_WORD.match(w) and len(w) > 3)
    return frozenset(_dx_stem(w) for w in words if len(w) > 2) - _DX_GENERIC


def _leak(case: Case, cf: CaseFacts, text: str) -> tuple[bool | None, str]:
    low = text.lower()
    if names_condition(text, case.diagnosis) and not _names(cf.patient_text, case.diagnosis):
        return True, "the diagnosis"
    words = set(w.lower() for w in _WORD.findall(text))
    for w in sorted(_distinctive(case.diagnosis)):
        if w in words and w not in cf.patient_text:
            return True, f"a word of the diagnosis ({w})"
    mine = {_dx_stem(w) for w in words}
    known = _known_stems(cf.patient_text)
    dx = _dx_stems(case.diagnosis)
    said = (mine & dx) - known
    if len(said) >= 2 or said & _dx_stems(case.diagnosis, condition_only=True):
        return True, f"words of the diagnosis ({', '.join(sorted(said))})"
    nums = {n.replace(",", ".") for n in _NUM.findall(low)}
    if nums & cf.record_numbers:
        return True, f"a test or exam value ({', '.join(sorted(nums & cf.record_numbers))})"
    rec = sorted(words & cf.record_words)
    if len(rec) >= 2:
        return True, f"words of the test or exam records ({', '.join(rec)})"
    if rec:
        return None, f"a word of the records ({rec[0]})"
    return False, ""


# -- oversharing ----------------------------------------------------------------------------
_TOPICS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"anything\s+else|tell\s+me\s+(?:more|everything)|is\s+there\s+anything|what\s+else|"
                r"everything", re.I), ("complaint", "history", "symptoms", "pmh", "social", "family", "ros")),
    (re.compile(r"medical|medication|medicine|tablets|pills|condition|illness|surgery|operation|allerg|history\s+of|"
                r"past|before|previous|health\s+problems|diagnosed|hospital", re.I), ("pmh",)),
    (re.compile(r"smok|drink|alcohol|\bwork|\bjob|occupation|\blive|home|travel|drugs|sex|partner|diet|exercise|"
                r"married|pets?\b", re.I), ("social",)),
    (re.compile(r"family|mother|father|parents?\b|sibling|brother|sister|run\s+in", re.I), ("family",)),
    (re.compile(r"other\s+symptoms?|any\s+other|fever|cough|weight|appetite|bowel|urin|pee|sleep|nausea|vomit|rash|"
                r"headache|dizz|breath|chest|tired|energy", re.I), ("symptoms", "ros")),
    (re.compile(r"bring|how\s+can\s+i\s+help|problem|matter|wrong|tell\s+me|describe|when|how\s+long|start|began|"
                r"happen|worse|better|where|how\s+bad|severe|pain|feel|symptom|what\s+is\s+it|trouble", re.I),
     ("complaint", "history", "symptoms")),
)


def specific_sections(question: str) -> frozenset[str]:
    """The sections a question names by topic (its past history, social history, family,
    other symptoms), leaving out the catch-all of the complaint ("problem", "feel")."""
    return frozenset(s for rx, secs in _TOPICS[:-1] if rx.search(question) for s in secs)


def asked_sections(question: str) -> frozenset[str]:
    """The sections of the history a question asks about (default: the complaint and its
    history)."""
    got = {s for rx, secs in _TOPICS if rx.search(question) for s in secs}
    return frozenset(got or {"complaint", "history"}) | {"demographics"}


_OTHER_SYMPTOMS = re.compile(r"other\s+symptoms?|any\s+other|other\s+problems?|anything\s+else\s+(?:wrong|bother)", re.I)
_TIMING = re.compile(r"how\s+long|when\s+did|when\s+was|\bstart|\bbegan|\bbegin|worse|better|how\s+(?:often|bad)|"
                     r"what\s+happened", re.I)


def directly_asked(fact: Fact, question: str, *, strict: bool = False) -> bool:
    """Whether ``question`` asks about ``fact`` directly: it names one of the fact's
    concepts (a body site alone does not count), or (unless ``strict``) the fact's topic (the
    past history, social or family history, other symptoms; the timing and course for the
    history of the complaint), or it is an opening question and the fact is the presenting
    complaint. A fact told in answer to anything else was volunteered (a withholding patient
    keeps it back: agents.behaviours.released_facts)."""
    q = frozenset(c for c, _ in claim_concepts(question)) - SITES
    if (fact.asserted | fact.denied) & q:
        return True
    if strict:
        return False
    named = {s for rx, secs in _TOPICS[1:4] if rx.search(question) for s in secs}  # past, social, family history
    if _OTHER_SYMPTOMS.search(question):
        named |= {"symptoms", "ros"}
    if _TIMING.search(question):
        named.add("history")
    if fact.section in named:
        return True
    return fact.section == "complaint" and not specific_sections(question)


def _overshare(cf: CaseFacts, question: str, claims: Sequence[Claim]) -> tuple[bool | None, tuple[int, ...]]:
    asked = asked_sections(question)
    q = frozenset(c for c, _ in claim_concepts(question))
    told = {c.fact for c in claims if c.verdict == "supported" and c.fact is not None}
    unasked = tuple(sorted(i for i in told if cf.facts[i].section not in asked
                           and not (cf.facts[i].asserted | cf.facts[i].denied) & q))
    if len(unasked) >= 2:
        return True, unasked
    if len(unasked) == 1 and any(c.verdict is None for c in claims):
        return None, unasked
    return False, unasked


# -- measurements ---------------------------------------------------------------------------
_MEASURE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)\s*(?:°\s*[fc]\b|degrees?\b|mm\s*hg\b|mmhg\b|bpm\b|beats\s+(?:a|per)\s+"
                      r"minute|breaths\s+(?:a|per)\s+minute|/\s*min\b|mg/dl\b|mmol/l\b|g/dl\b|%)", re.I)


def _invented_measure(cf: CaseFacts, text: str) -> str | None:
    """A measured value (a temperature, a pressure, a rate, a lab value) the patient's facts
    do not hold: a patient reports what they feel, and a number of that kind is made up."""
    for m in _MEASURE.finditer(text):
        if m.group(1).replace(",", ".") not in cf.patient_text.replace(",", "."):
            return m.group(0)
    return None


# -- the check ------------------------------------------------------------------------------
def check_patient(case: Case, question: str, reply: str) -> PatientCheck:
    """The pre-check of ``reply`` (a patient utterance) to ``question`` (what the doctor
    said before it; "" when nothing) in ``case``."""
    cf = case_facts(case)
    sentences = _split(reply) or [reply]
    claims = []
    q_concepts = frozenset(c for c, _ in claim_concepts(question)) if _CLOSED_QUESTION.search(question) else frozenset()
    for i, s in enumerate(sentences):
        extra_pos = extra_neg = frozenset()
        if i == 0 and q_concepts:
            if _NO.search(s):
                extra_neg = q_concepts
            elif _YES.search(s):
                extra_pos = q_concepts
        claims.extend(_sentence_claims(cf, s, extra_pos, extra_neg))
    made = _invented_measure(cf, reply)
    if made is not None:
        claims.append(Claim(made, (), (), "unsupported", None, "a measured value the case does not give"))
    leak, what = _leak(case, cf, reply)
    over, unasked = _overshare(cf, question, claims)
    return PatientCheck(tuple(claims), _utterance_verdict(claims), _voice(cf, reply), leak, what, over, unasked)
