"""A case's facts as the fidelity check reads them: what the patient knows (each fact with
its section and the concepts it asserts or denies), what only the technician holds, and
who speaks for the patient.

Concepts are crude stems (:func:`agents.suites.negation.stem`) with lay words folded
into one (:data:`LAY`): "tummy", "belly" and "abdominal" are one concept, "ache", "hurt"
and "pain" another, so "my tummy hurts" finds "abdominal pain". Built once per case and
kept on the (frozen) case object, as :mod:`agents.findings` keeps its index.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agents.cases.model import Case, flatten
from agents.medicines import names_a_medicine
from agents.suites.negation import concepts, stem

__all__ = ["Fact", "CaseFacts", "case_facts", "canon", "claim_concepts", "located_concepts", "LAY", "FILLER", "SECTIONS",
           "SITES", "OPPOSITES", "speaks_for"]

# lay and clinical words for one concept (written for medsim)
_LAY_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pain", ("pain", "pains", "painful", "ache", "aches", "aching", "achy", "hurt", "hurts", "hurting", "sore",
              "soreness", "discomfort", "tender", "tenderness", "cramp", "cramps", "cramping", "agony")),
    ("abdomen", ("abdomen", "abdominal", "tummy", "belly", "stomach", "gut")),
    ("navel", ("navel", "umbilicus", "umbilical", "periumbilical", "bellybutton")),
    ("fever", ("fever", "fevers", "feverish", "febrile", "temperature", "temperatures", "pyrexia", "hot")),
    ("vomit", ("vomit", "vomits", "vomited", "vomiting", "vomitting", "puke", "puking", "threw", "nausea", "nauseous",
               "nauseated", "queasy", "sick")),
    ("breath", ("breath", "breathless", "breathlessness", "breathing", "dyspnoea", "dyspnea", "winded", "puffed")),
    ("fatigue", ("fatigue", "fatigued", "tired", "tiredness", "exhausted", "exhaustion", "weary", "lethargic",
                 "lethargy", "drained")),
    ("urine", ("urine", "urinary", "pee", "peeing", "wee", "urinate", "urinating", "urination", "bladder")),
    ("stool", ("stool", "stools", "poo", "poop", "bowel", "bowels", "faeces", "feces")),
    ("diarrhoea", ("diarrhoea", "diarrhea", "loose", "runny")),
    ("cough", ("cough", "coughs", "coughed", "coughing")),
    ("headache", ("headache", "headaches", "migraine")),
    ("dizzy", ("dizzy", "dizziness", "lightheaded", "giddy", "vertigo", "spinning")),
    ("swelling", ("swelling", "swollen", "swell", "swelled", "puffy", "puffiness", "oedema", "edema")),
    ("rash", ("rash", "rashes", "spots", "blotches", "blotchy")),
    ("itch", ("itch", "itchy", "itching", "pruritus")),
    ("blood", ("blood", "bleeding", "bleed", "bloody", "haemorrhage", "hemorrhage")),
    ("chest", ("chest", "thorax", "breastbone", "sternum")),
    ("appetite", ("appetite", "hungry", "hunger", "eating", "eat", "food", "feeding", "feed", "feeds")),
    ("smoke", ("smoke", "smokes", "smoking", "smoker", "cigarette", "cigarettes", "tobacco")),
    ("alcohol", ("alcohol", "drink", "drinks", "drinking", "drinker", "beer", "wine", "booze")),
    ("medicine", ("medicine", "medicines", "medication", "medications", "tablets", "pills", "drugs", "inhaler",
                  "inhalers", "injections")),
    ("pregnant", ("pregnant", "pregnancy", "pregnancies", "expecting")),
    ("better", ("better", "helps", "help", "helped", "eases", "ease", "eased", "relieves", "relieved", "relief",
                "improves", "improved", "settles", "settled")),
    ("reduced", ("less", "fewer", "reduced", "decreased", "lower")),
    ("sweat", ("sweat", "sweats", "sweaty", "sweating", "sweated", "clammy")),
    ("weak", ("weak", "weakness", "feeble")),
    ("numb", ("numb", "numbness", "tingling", "tingly", "pins")),
    ("worse", ("worse", "worsening", "worsened", "aggravated")),
    ("walk", ("walk", "walking", "walked")),
    ("move", ("move", "moves", "moved", "moving", "movement", "movements", "shifted")),
    ("sleep", ("sleep", "sleeping", "slept", "insomnia")),
    ("mood", ("mood", "sad", "depressed", "hopeless", "miserable")),
    ("weight", ("weight", "pounds", "kilos", "kg", "lbs")),
)
LAY: dict[str, str] = {}
for _canon, _words in _LAY_GROUPS:
    for _w in _words:
        LAY[_w] = _canon
        LAY.setdefault(stem(_w), _canon)

# words that are not claims about the patient (on top of the negation module's stop words)
FILLER = frozenset((
    "feel feels feeling felt think thought know knew really doctor bit lot little pretty quite much thing things "
    "something anything everything nothing like just yeah yes okay sure maybe probably kind sort way lately "
    "experience experiencing experienced notice noticed noticing seem seems seemed start started starting began "
    "begin begins going gone come came coming keep kept also even still try tried trying want wanted tell told "
    "say saying mean actually definitely certainly hello thank thanks please sorry worried worry concern concerns "
    "concerned main complaint complaints problem symptom symptoms sure idea aware recall remember able unable "
    "around part now anymore okay alright fine good well hmm hmmm mm i've i'm i'd i'll you're it's that's "
    "there's he's she's they're we're what's get gets got getting have had has having let available provided "
    "known unknown noted reported recorded documented awful terrible horrible dreadful completely totally "
    "absolutely present scared frightened afraid upset before one two three four five six seven eight nine ten "
    "eleven twelve fifteen twenty thirty forty fifty sixty hundred dozen few couple several "
    # connectives, hedges and talk about the visit: how a patient joins and softens what the
    # facts say, not a claim ("I came in today because ...", "Additionally, ...", "about a month")
    "because additionally approximately roughly nearly almost although though however furthermore moreover "
    "besides basically honestly especially mainly mostly generally anyway whatever whenever wherever whether "
    "while whose within upon across along through during unless except include includes including plus too "
    "already exactly sometimes appointment visit reason decided explain explained mention mentioned discuss "
    "discussed").split())
_FILLER_STEMS = frozenset(stem(w) for w in FILLER)

SECTIONS = ("demographics", "complaint", "history", "symptoms", "pmh", "social", "family", "ros", "other")
_SECTION_OF = (
    (re.compile(r"primary|chief|presenting", re.I), "complaint"),
    (re.compile(r"secondary|associated|symptom", re.I), "symptoms"),
    (re.compile(r"review|systems|\bros\b|negative", re.I), "ros"),
    (re.compile(r"family", re.I), "family"),
    (re.compile(r"social|lifestyle|occupation|habits|travel", re.I), "social"),
    (re.compile(r"past|medical|medication|drug|allerg|surg|obstetric|gyn|immunis|vaccin", re.I), "pmh"),
    (re.compile(r"history|present|hpi|course|onset", re.I), "history"),
    (re.compile(r"demograph|age|sex|gender|name", re.I), "demographics"),
)


@lru_cache(maxsize=65536)
def canon(word: str) -> str:
    """A word's concept: its lay group (:data:`LAY`) or its stem (adverbs and doubled
    consonants folded: "heavily" is "heavy", "sitting" is "sit")."""
    w = word.lower().strip("'")
    got = LAY.get(w) or LAY.get(stem(w))
    if got:
        return got
    if w.endswith("ily") and len(w) > 5:
        w = w[:-3] + "y"
    elif w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    st = stem(w)
    if len(st) > 3 and st[-1] == st[-2] and st[-1] in "bdgmnprt":
        st = st[:-1]
    return LAY.get(st) or st


# body sites and sides: a denial that shares only these with a claim does not contradict it
SITES = frozenset(canon(w) for w in (
    "back chest abdomen head neck arm arms leg legs hand hands foot feet knee hip shoulder side sides left right "
    "upper lower front body skin face eye eyes ear mouth throat groin calf toe finger wrist ankle elbow").split())
# words whose opposite in the same claim contradicts a fact that says the other
OPPOSITES = ((canon("left"), canon("right")), (canon("worse"), canon("better")))


def claim_concepts(text: str) -> list[tuple[str, bool]]:
    """The concepts a text asserts or denies, in order, as (concept, negated): content
    words only (no filler, no time words), lay words folded."""
    return [(c, n) for c, n, _ in located_concepts(text)]


@lru_cache(maxsize=16384)
def located_concepts(text: str) -> tuple[tuple[str, bool, int], ...]:
    """:func:`claim_concepts` with where each concept starts in ``text``."""
    out = []
    for word, st, neg, start in concepts(text):
        if st in _FILLER_STEMS or word.lower() in FILLER or len(st) < 3:
            continue
        out.append((canon(word), neg, start))
    return tuple(out)


@dataclass(frozen=True)
class Fact:
    """One sentence of what the patient knows: its section (:data:`SECTIONS`), its text,
    the concepts it asserts and those it denies."""

    index: int
    section: str
    text: str
    asserted: frozenset[str]
    denied: frozenset[str]


@dataclass(frozen=True)
class CaseFacts:
    """The fidelity check's view of a case (see the module's docstring)."""

    facts: tuple[Fact, ...]
    asserted: frozenset[str]  # concepts some fact asserts
    denied_only: frozenset[str]  # concepts the facts only deny (never assert)
    complaint: frozenset[str]  # the presenting complaint's concepts
    patient_text: str  # the patient's facts, lower case (a leak check looks here first)
    record_numbers: frozenset[str]  # numbers the exam and test records hold and the patient's facts do not
    record_words: frozenset[str]  # long words of the records that the patient's facts do not hold
    caregiver: str | None  # who speaks for the patient (an infant's parent), or None


def _section(path: tuple[str, ...]) -> str:
    for key in reversed(path):  # the most specific key first: Symptoms > Primary_Symptom is the complaint
        for rx, name in _SECTION_OF:
            if rx.search(key):
                return name
    return "other"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<!\d)[.;!?](?!\d)|\n", text) if s.strip()]


def _walk(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(path, text) for each item; a list's items one by one."""
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _walk(v, path + (str(k),))]
    if isinstance(value, list):
        return [x for v in value for x in _walk(v, path)]
    return [] if value is None else [(path, str(value))]


MEDICINE = canon("medicine")
_MEDICINES_KEY = re.compile(r"medication|medicine|drug|prescription", re.I)  # a case's list of what the patient takes
_WORDS = re.compile(r"[A-Za-z]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?!\w|[.,]\d)")
_LONG_WORD = re.compile(r"[A-Za-z]{8,}")
_INFANT = re.compile(r"\b(?:\d+[- ](?:day|week|month)s?[- ]old|newborn|neonate|neonatal|infant|baby|toddler)\b", re.I)
_YEARS = re.compile(r"\b(\d+)[- ]years?[- ]old\b", re.I)
_GIVER = re.compile(r"\b(?:history\s+(?:is\s+)?(?:given|provided)\s+by|accompanied\s+by|brought\s+(?:in\s+)?by|"
                    r"according\s+to)\s+(?:his|her|their|the)\s+(\w+)", re.I)
_UNCONSCIOUS = re.compile(r"\b(?:unconscious|unresponsive|comatose|obtunded|intubated)\b", re.I)


def speaks_for(case: Case) -> str | None:
    """Who answers for a patient who cannot speak (an infant, a young child, an
    unconscious patient): the person the case names ("mother"), or "caregiver"; None
    when the patient speaks for themselves."""
    text = f"{case.demographics}. {case.objective}"
    m = _GIVER.search(text) or _GIVER.search(" ".join(t for _, t in _walk(case.patient)))
    if m:
        return m.group(1).lower()
    years = _YEARS.search(case.demographics)
    if _INFANT.search(case.demographics) or (years and int(years.group(1)) < 5):
        return "caregiver"
    if _UNCONSCIOUS.search(text):
        return "caregiver"
    return None


@lru_cache(maxsize=4096)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", ".") for n in _NUMBER.findall(text))


def case_facts(case: Case) -> CaseFacts:
    """The case's :class:`CaseFacts` (computed once, kept on the case)."""
    got = case.__dict__.get("_fidelity_facts")
    if got is not None:
        return got
    facts: list[Fact] = []
    items = [(("Demographics",), case.demographics)] + [(p, t) for p, t in _walk(case.patient)
                                                         if p[:1] != ("Demographics",)]
    for path, text in items:
        section = _section(path)
        listed = bool(path) and bool(_MEDICINES_KEY.search(path[-1]))
        for sent in _sentences(text):
            cs = claim_concepts(sent)
            pos = frozenset(c for c, n in cs if not n)
            neg = frozenset(c for c, n in cs if n)
            if MEDICINE not in neg and (listed and pos or any(names_a_medicine(w) for w in _WORDS.findall(sent))):
                pos |= {MEDICINE}  # "She has been on natalizumab": a medicine, which "any medicines?" asks about
            facts.append(Fact(len(facts), section, sent, pos, neg))
    asserted = frozenset().union(*(f.asserted for f in facts)) if facts else frozenset()
    denied = frozenset().union(*(f.denied for f in facts)) if facts else frozenset()
    complaint = frozenset().union(*(f.asserted for f in facts if f.section == "complaint")) if facts else frozenset()
    patient_text = " ".join(t for _, t in items).lower()
    records = [t for section in (case.records(), case.exam) for _, t in flatten(section)]
    rec_text = " ".join(records)
    mine = _numbers(patient_text)
    numbers = frozenset(n for n in _numbers(rec_text) if n not in mine and (("." in n) or len(n) >= 2))
    words = frozenset(w.lower() for w in _LONG_WORD.findall(rec_text) if w.lower() not in patient_text)
    out = CaseFacts(tuple(facts), asserted, denied - asserted, complaint, patient_text, numbers, words,
                    speaks_for(case))
    object.__setattr__(case, "_fidelity_facts", out)  # a cache, not state: same case, same facts
    return out
