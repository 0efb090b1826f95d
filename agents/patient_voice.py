"""The case's facts in the patient's own voice, and the facts that answer a question
(written for medsim).

A case describes its patient in a clinician's third person ("The patient reports a
1-month history of double vision. She notes that it worsens after activity.") and a
1.5B model told those sentences repeats them as they are: "The patient's main complaint
is ...". :func:`voiced_facts` rewrites each of the case's facts (the fidelity check's
own sentences, :func:`agents.fidelity.facts.case_facts`, so fact *i* here is fact *i*
there) before the consultation:

- a patient who speaks for themselves says "I", "my", "me": the patient's own
  pronouns (by the sex the demographics give, so "his wife ... she" keeps the wife's),
  "the patient('s)" and a subject-less clinical note ("Denies fever", "Works as a
  teacher") become first person, with the verb agreeing ("she has" -> "I have");
- for a patient someone else answers for (an infant: :func:`speaks_for`), that person
  speaks: "the patient", "the infant" become "my son" (daughter, baby), the child stays
  "he" or "she", and the named caregiver ("His mother reports") becomes "I";
- fragments (a symptom list's "Double vision") become sentences; placeholders
  ("Information not provided") are dropped.

:func:`facts_for` picks, for one question, the facts that answer it (the concepts they
share, the sections of the history it asks about, the facts not yet told first), so a
small model is given what it needs and no more; :func:`grounded_answer` is the reply
those facts make on their own (a guard's last resort).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from agents.cases.model import Case
from agents.fidelity.facts import SITES, case_facts, claim_concepts, speaks_for
from agents.fidelity.patient import asked_sections, specific_sections

__all__ = ["Voice", "base_form", "VoicedFact", "voice_of", "first_person", "voiced_facts", "facts_for", "grounded_answer",
           "speaker_brief", "grounded_message", "given_facts", "nothing_given", "held_back", "GIVEN", "NOTHING",
           "HELD_BACK"]

_FEMALE = re.compile(r"\b(?:female|woman|girl|lady|mother|wife|pregnant|she|her)\b", re.I)
_MALE = re.compile(r"\b(?:male|man|boy|gentleman|father|husband|he|his)\b", re.I)
_PLACEHOLDER = re.compile(r"^\W*(?:information\s+)?(?:not|none)\s+(?:provided|available|applicable|documented|given|"
                          r"recorded|specified|reported)\W*$|^\W*no\s+(?:additional|further|other)\s+(?:\w+\s+)?"
                          r"(?:provided|available|documented|given|specified)\W*$|^\W*n/?a\W*$|^\W*unknown\W*$", re.I)


@dataclass(frozen=True)
class Voice:
    """Who speaks for the patient: ``caregiver`` None (the patient), else the person
    ("mother", "parent"); ``child`` what the caregiver calls the patient ("my son");
    ``sex`` "f", "m" or "" (unknown)."""

    caregiver: str | None
    child: str
    sex: str


@dataclass(frozen=True)
class VoicedFact:
    """Fact ``index`` of :func:`agents.fidelity.facts.case_facts`, as the speaker says it."""

    index: int
    section: str
    text: str


def _sex(case: Case) -> str:
    demo = case.demographics
    f, m = bool(re.search(r"\b(?:female|woman|girl|lady)\b", demo, re.I)), bool(re.search(r"\b(?:male|man|boy|gentleman)\b", demo, re.I))
    if f != m:
        return "f" if f else "m"
    return ""


def voice_of(case: Case) -> Voice:
    """Who answers the doctor in ``case`` and how they name the patient."""
    sex = _sex(case)
    giver = speaks_for(case)
    if giver is None:
        return Voice(None, "", sex)
    if giver == "caregiver":  # the case may still say who tells the history
        text = " ".join(str(v) for v in case.patient.values())
        m = re.search(r"\b(mother|father|parents?|grandmother|grandfather|wife|husband|daughter|son)\b", text, re.I)
        giver = (m.group(1).lower() if m else "parent").replace("parents", "parent")
    young = re.search(r"\b(?:day|week|month)s?[- ]old\b|newborn|neonate|infant|baby", case.demographics, re.I)
    if giver in ("wife", "husband", "daughter", "son"):  # an adult someone else speaks for
        child = {"wife": "my wife", "husband": "my husband", "daughter": "my mother" if sex == "f" else "my father",
                 "son": "my mother" if sex == "f" else "my father"}[giver]
    elif young:
        child = "my baby"
    else:
        child = {"f": "my daughter", "m": "my son"}.get(sex, "my child")
    return Voice(giver, child, sex)


# -- first person ---------------------------------------------------------------------------
_IRREGULAR = {"is": "am", "has": "have", "does": "do", "was": "was", "doesn't": "don't", "isn't": "am not",
              "hasn't": "haven't", "presents": "have come in", "presented": "came in", "'s": "'m"}
# verbs a note begins with when it leaves out its subject ("Denies fever", "Works as ...")
_NOTE_VERBS = frozenset((
    "denies reports notes mentions describes states admits endorses complains experiences works lives drinks smokes "
    "takes uses exercises enjoys eats walks runs plays attends travels consumes quit stopped started has had "
    "is was does did presents presented underwent received lost gained noticed feels felt vapes sleeps wakes swims "
    "cycles teaches studies owns keeps").split())
# after "and" / "but" only these: "... and has been worsening" is the pain's verb, not the patient's
_REPORTING = frozenset("denies reports notes mentions describes admits endorses complains smokes drinks works lives "
                       "takes uses".split())
_ADVERBS = r"(?:also|often|occasionally|frequently|sometimes|now|currently|recently|never|always|usually|still|" \
           r"only|rarely|regularly|further|additionally|previously|reportedly|then|subsequently|socially|" \
           r"not|no\s+longer)"


def base_form(verb: str) -> str:
    """A third-person verb's first-person form ("denies" -> "deny")."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "y"
    if re.search(r"(?:ss|sh|ch|x|zz|o)es$", low):  # "passes", "buzzes" (but "sneezes" -> "sneeze")
        return low[:-2]
    if low.endswith("s") and not low.endswith(("ss", "us", "is")) and len(low) > 3:
        return low[:-1]
    return low


_SUBJECT_VERB = re.compile(r"\bI((?:\s+" + _ADVERBS + r")*)\s+([a-z]+(?:n't)?)\b")


def _agree(text: str) -> str:
    """Verbs after "I" in first person ("I has" -> "I have", "I also notes" -> "I also note")."""
    def fix(m: re.Match[str]) -> str:
        adv, verb = m.group(1), m.group(2)
        low = verb.lower()
        if low in ("was", "had", "did", "can", "could", "will", "would", "should", "may", "might", "must", "am",
                   "have", "do"):
            return m.group(0)
        if adv.strip().lower() in ("not",) and low in ("been",):
            return m.group(0)
        if adv.strip().lower() == "does not" or low in _IRREGULAR or (low.endswith("s") and low not in ("was", "has")):
            return f"I{adv} {base_form(verb)}"
        return f"I{adv} {verb}" if low != "has" else f"I{adv} have"
    out = _SUBJECT_VERB.sub(fix, text)
    out = re.sub(r"\bI\s+does\s+not\b", "I do not", out)
    out = re.sub(r"\bI((?:\s+" + _ADVERBS + r")*)\s+has\b", r"I\1 have", out)
    return out


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


# the patient's "I", its auxiliaries and adverbs, one verb and a preposition: what follows is
# that verb's own object ("I visited him", "I took care of her")
_OWN_VERB = (r"\bI\s+(?:(?:have|had|was|were|am|will|would|did|do|also|then|later|often|never|recently|just|"
             r"always|not|really|sometimes|usually|had\s+to|has\s+to|have\s+to|went\s+to)\s+)*"
             r"(?!(?:have|had|was|were|am|will|would|did|do|be|been|being)\b)[a-z]+"
             r"(?:\s+(?:to|for|with|about|of|at|on|up|after|care\s+of))?\s+")


def _objects_of_self(s: str, ob: str) -> str:
    """The patient's object pronoun ("him") as "me", but for one in the clause the
    patient's own "I" is the subject of: "he visited him" is someone else ("I visited
    him"), a pronoun cannot be its own clause's subject (that is "himself", "myself")."""
    kept = {m.start(1) for m in re.finditer(rf"{_OWN_VERB}({ob})\b", s)}
    return re.sub(rf"\b{ob}\b", lambda m: m.group(0) if m.start() in kept else "me", s, flags=re.I)


def _own(sentence: str, sex: str) -> str:
    """``sentence`` as the patient says it of themselves."""
    s = sentence.strip()
    # the patient as subject, possessor or object
    s = re.sub(r"\b(?:the|this|our)\s+patient(?:'s|’s)", "my", s, flags=re.I)
    s = re.sub(r"^\W*patient(?:'s|’s)\s", "my ", s, flags=re.I)
    s = re.sub(r"\b(?:the|this|our)\s+patient\b", "I", s, flags=re.I)
    s = re.sub(r"^patient\b", "I", s, flags=re.I)
    subj, poss, obj, refl = (("she", "her", "her", "herself") if sex == "f" else
                             ("he", "his", "him", "himself") if sex == "m" else ("", "", "", ""))
    pairs = [("he", "his", "him", "himself"), ("she", "her", "her", "herself")] if not sex else [(subj, poss, obj, refl)]
    for su, po, ob, re_ in pairs:
        s = re.sub(rf"\b{su}'s\s+been\b", "I've been", s, flags=re.I)
        s = re.sub(rf"\b{su}'s\b", "I'm", s, flags=re.I)
        s = re.sub(rf"\b{re_}\b", "myself", s, flags=re.I)
        s = re.sub(rf"\b{su}\b", "I", s, flags=re.I)
        if po == ob:  # "her": possessive before a word, an object before punctuation or a preposition
            s = re.sub(rf"\b{po}\b(?=\s+(?!(?:to|for|with|from|about|at|by|in|on|and|or|that|up|down|out|off|"
                       rf"over|again|when|if|as|because|since|after|before|during|the|a|an|some|this|that|these|those|it|them|home|back|away)\b)[A-Za-z0-9'])", "my", s,
                       flags=re.I)
            s = _objects_of_self(s, ob)
        else:
            s = re.sub(rf"\b{po}\b", "my", s, flags=re.I)
            s = _objects_of_self(s, ob)
    # a note without its subject ("Denies fever", "Non-smoker, drinks wine occasionally")
    verbs = "|".join(sorted(_NOTE_VERBS, key=len, reverse=True))
    s = re.sub(r"^((?:recently|occasionally|currently|previously|also)\s+)?(" + verbs + r")\b",
               lambda m: "I " + (m.group(1) or "").lower() + m.group(2).lower(), s, flags=re.I)
    s = re.sub(r"([,;]\s*)(" + verbs + r")\b", lambda m: m.group(1) + "I " + m.group(2).lower(), s)
    s = re.sub(r"(\b(?:and|but)\s+)(" + "|".join(_REPORTING) + r")\b", lambda m: m.group(1) + "I " + m.group(2), s)
    # "I ... and has difficulty": the patient's verb, unless a relative clause came between
    # ("knee pain that started yesterday and has been worsening" is the pain's)
    m = re.match(r"^I\b((?:(?!\b(?:that|which|who)\b).)*?)\b(and|but)\s+(has|is|was|does)\b", s)
    if m:
        s = s[:m.start(2)] + f"{m.group(2)} I {m.group(3)}" + s[m.end(3):]
    elif re.match(r"^I\b", s) and not re.search(r"\b(?:that|which|who)\b", s):  # "I vomited and feels feverish"
        s = re.sub(rf"\b(and|but)((?:\s+{_ADVERBS})*)\s+({_ACTS_RE})\b", _joined_verb, s)
    s = _after_other_clause(s)
    s = _coordinated(s)
    # the patient and someone else ("The patient and her husband have ...", then "They are ...")
    s = re.sub(r"^I\s+and\s+my\s+(\w+)", r"My \1 and I", s)
    s = re.sub(r"^they\b", "we", s, flags=re.I)
    s = re.sub(r"^their\b", "our", s, flags=re.I)
    s = _objects(s)
    s = re.sub(r"\bI\s+(recently|occasionally|currently|previously)\s+I\b", r"I \1", s)
    s = re.sub(r"\bI\s+I\b", "I", s)
    return _cap(_agree(s))


# verbs a patient does, in the third person, that a note joins to another with "and" / "or"
# ("when he lies flat or takes a deep breath", "when he sits up and leans forward")
_ACTS = _NOTE_VERBS | frozenset((
    "leans sits lies stands bends climbs coughs breathes moves lifts carries gets goes tries turns looks swallows "
    "rests stops needs wants says tells finds loses passes urinates drives reads watches sees hears speaks "
    "talks remembers forgets falls faints trips struggles avoids prefers spends misses vomits sweats wears kneels "
    "squats stretches twists raises reaches presses pushes pulls holds drops sneezes yawns chews bites cries "
    "shivers shakes trembles limps rolls leaves returns arrives waits becomes").split())
_ACTS_RE = "|".join(sorted(_ACTS, key=len, reverse=True))
_FINITE_ACTS = "|".join(sorted((a for a in _ACTS if base_form(a) != a), key=len, reverse=True))  # another subject's "gets"
_EITHER = "|".join(sorted(_ACTS | {base_form(a) for a in _ACTS}, key=len, reverse=True))  # "and walk": turned already
# "I <verb> [and <verb>]... <words or a list of verbs> and|or|but <verb>"
# a third-person verb no list holds, known by what follows it: an object or a particle
# ("and repeats herself", "and often lifts patients" is the list's)
_S_WORD = r"[a-z]{2,}(?<!ss)(?<!us)(?<!is)s"  # a word that may be a verb's third person (not "pass", "virus")
_BY_OBJECT = (rf"{_S_WORD}(?=\s+(?:myself|yourself|to|me|him|them|it|my|his|her|their|up|out|"
              r"off|down|back|over|around|away)\b)")
_JOINED = re.compile(rf"(\bI(?:\s+{_ADVERBS})*\s+[a-z]+(?:n't)?(?:\s+(?:and|or)\s+(?:{_EITHER}))*\b)"
                     rf"((?:(?!\bI\b)[^.;:()])*?[\s,])(and|or|but)((?:\s+{_ADVERBS})*)\s+({_EITHER}|{_BY_OBJECT})\b")
_AUX = frozenset("is was has had does did".split())  # after a clause of "when I ...", more often the main subject's
_CLAUSE = r"(?:that|which|who|whom|whose|when|while|if|because|until|before|after|since|although|though|" \
          r"it|he|she|they|we|you|there)"




def _joined_verb(m: re.Match[str]) -> str:
    """"and struggles" in a sentence of the patient's: "and struggle", unless another
    subject's verb ("my son gets tired and falls asleep") comes before it."""
    before = re.sub(rf"\bI(?:\s+{_ADVERBS})*\s+[a-z]+\b", " ", m.string[:m.start()])  # the patient's own verbs
    if re.search(rf"\b(?:{_FINITE_ACTS})\b", before, re.I):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)} {base_form(m.group(3))}"


# "..., that they would be better off without me, but has made no plans": a singular verb
# after a clause whose subject is "they", "we", "you" or "I" cannot be that clause's; in a
# sentence of the patient's it is the patient's ("but I have made no plans")
_OTHER_CLAUSE = re.compile(r"^(I\b.*?\b(?:that|which|who|when|while|if|because)\s+(?:they|we|you|I)\b[^;:]*?)"
                           r"(,?\s*)\b(and|but)\s+(has|is|was|does)\b")


def _after_other_clause(s: str) -> str:
    m = _OTHER_CLAUSE.match(s)
    if m is None:
        return s
    clause = m.group(1)[m.group(1).rfind(" that "):]
    if re.search(r"\b(?:he|she|it|this|there)\b", clause):  # "that they said it hurts, and is ...": the pain's
        return s
    return s[:m.start(3)] + f"{m.group(3)} I {m.group(4)}" + s[m.end(4):]


def _coordinated(s: str) -> str:
    """A verb joined by "and" / "or" / "but" to the patient's own ("I lies flat or takes a deep
    breath" -> "... or take ..."): the same subject, so the first person too. Only where
    nothing between the two starts another clause or is another subject's verb (in "I
    noticed the rash gets worse and spreads" the rash spreads)."""
    acts, finite = _ACTS_RE, _FINITE_ACTS

    def fix(m: re.Match[str]) -> str:
        between = m.group(2)
        head, *items = between.split(",")  # "I sit, stands and walks": a list of verbs before the join
        if not all(re.fullmatch(r"\s*\w*\s*", it) for it in items) or items and not items[0].strip():
            return m.group(0)
        # a clause's word followed by more ("... that spreads"; "like this before and" is an adverb)
        if re.search(rf"\b(?:{_CLAUSE})\b(?!\s*$)|\b(?:{finite})\b", head, re.I) or len(between.split()) > 6:
            return m.group(0)
        if not re.fullmatch(_EITHER, m.group(5), re.I) and re.search(rf"\b{_S_WORD}\b", between):
            return m.group(0)  # a verb known only by its object, after what may be another's ("the rash itches")
        if m.group(5).lower() in _AUX and re.search(rf"\b(?:{_CLAUSE}|whenever|once|as)\s*$", m.string[:m.start(1)], re.I):
            return m.group(0)  # "the pain worsens when I hold my son and is eased by ice": the pain is eased
        items = [re.sub(rf"\b(?:{acts})\b", lambda w: base_form(w.group(0)), it) for it in items]
        first = re.sub(rf"\b(and|or)\s+({acts})\b", lambda w: f"{w.group(1)} {base_form(w.group(2))}", m.group(1))
        return f"{first}{','.join([head, *items])}{m.group(3)}{m.group(4)} {base_form(m.group(5))}"

    for _ in range(3):  # each join in turn
        t = _JOINED.sub(fix, s)
        if t == s:
            break
        s = t
    return s


def _objects(s: str) -> str:
    """"I" where English wants "me" ("noted by I" -> "noted by me")."""
    s = re.sub(r"\bi\b", "I", s)
    return re.sub(r"\b(by|to|for|with|from|about|at|told|asked|gave|gives)\s+I\b(?!\s+(?:am|have|was|had|do|did))",
                  r"\1 me", s)


def _caregivers(sentence: str, v: Voice) -> str:
    """``sentence`` as the caregiver says it of the patient (and of themselves)."""
    s = sentence.strip()
    child = v.child
    who = v.caregiver or "parent"
    giver = r"(?:(?:the|his|her|their|the\s+patient's|the\s+patient’s|the\s+child's|the\s+baby's|the\s+infant's)\s+)"
    if who == "parent":
        names = r"(?:mother|father|parents?|mum|mom|dad|caregiver|carer|guardian)"
    else:
        names = rf"(?:{re.escape(who)}s?)"
    plural = bool(re.search(giver + r"parents\b", s, re.I))
    s = re.sub(giver + names + r"\b", "we" if plural else "I", s, flags=re.I)
    s = re.sub(r"^(?:the\s+)?" + names + r"\b", "I", s, flags=re.I)
    # a note without its subject is about the child ("Attends preschool", "Was born at term")
    he = {"f": "she", "m": "he"}.get(v.sex, child)
    verbs = "|".join(sorted(_NOTE_VERBS, key=len, reverse=True))
    s = re.sub(r"^(" + verbs + r")\b", lambda m: f"{he} {m.group(1).lower()}", s, flags=re.I)
    nouns = r"(?:patient|infant|newborn|neonate|baby|child|toddler|boy|girl)"
    s = re.sub(rf"\b(?:the|this|our)\s+{nouns}(?:'s|’s)", child + "'s", s, flags=re.I)
    s = re.sub(rf"\b(?:the|this|our)\s+{nouns}\b", child, s, flags=re.I)
    s = re.sub(r"^patient\b", child, s, flags=re.I)
    # the caregiver's own pronoun, where it cannot be the child's ("His mother reports that she
    # believes ..."): the caregiver is a woman and the child a boy, or the other way round
    own = {"mother": "f", "grandmother": "f", "wife": "f", "father": "m", "grandfather": "m", "husband": "m"}.get(who)
    if own and v.sex and own != v.sex:
        su, po = ("she", "her") if own == "f" else ("he", "his")
        s = re.sub(rf"\b{su}\b", "I", s, flags=re.I)
        if po == "his":
            s = re.sub(r"\bhis\b", "my", s, flags=re.I)
    return _cap(_agree(_objects(s)))


def _article(words: str) -> str:
    """"a" or "an" before ``words`` ("an 8-month-old", "a 35-year-old")."""
    return "an" if re.match(r"(?:[aeio]|u(?!ni|se|su)|8|11[- ]|18[- ]|8\d[- ])", words, re.I) else "a"


_FINITE = re.compile(r"\b(?:is|are|was|were|has|have|had|does|did|do|can|could|will|would|reports?|denies|"
                     r"notes?|describes?|mentions?|presents?|became|began|started|feels?|felt)\b", re.I)


def first_person(sentence: str, section: str, voice: Voice) -> str | None:
    """One fact as the speaker says it; None for a placeholder that says nothing."""
    s = sentence.strip().rstrip(".").strip()
    if not s or _PLACEHOLDER.match(s):
        return None
    low = s[:1].lower() + s[1:] if not re.match(r"^[A-Z]{2,}", s) else s
    care = voice.caregiver is not None
    if section == "demographics":
        return f"{_cap(voice.child)} is {_article(low)} {low}." if care else f"I am {_article(low)} {low}."
    fragment = section in ("complaint", "symptoms") and not _FINITE.search(s) \
        and not re.search(r"\b(?:he|she|patient|i|my)\b", s, re.I)
    if fragment:
        if re.match(r"^(?:no|not|none|absence)\b", s, re.I):
            return f"{_cap(s)}."
        if re.match(r"^history\s+of\b", s, re.I):
            return (f"{_cap(voice.child)} has a {low}." if care else f"I have a {low}.")
        if section == "complaint":
            return f"The main problem is {low}." if care else f"My main problem is {low}."
        if re.match(r"^\w+ing\b", s) and not re.match(r"^(?:swelling|bleeding|wheezing|itching|tingling|bruising)\b", s, re.I):
            return f"I noticed {low} too." if care else f"I have also been {low}."  # "Feeling feverish"
        return f"I noticed {low} too." if care else f"I also have {low}."
    out = _caregivers(s, voice) if care else _own(s, voice.sex)
    return out.rstrip(".") + "."


def voiced_facts(case: Case) -> tuple[VoicedFact, ...]:
    """Every fact of ``case`` the patient (or the caregiver) knows, in their voice (computed
    once, kept on the case); placeholders left out."""
    got = case.__dict__.get("_voiced_facts")
    if got is not None:
        return got
    v = voice_of(case)
    out = []
    for f in case_facts(case).facts:
        said = first_person(f.text, f.section, v)
        if said is not None:
            out.append(VoicedFact(f.index, f.section, said))
    res = tuple(out)
    object.__setattr__(case, "_voiced_facts", res)  # a cache, not state: same case, same facts
    return res


# -- the facts that answer a question -------------------------------------------------------
_OPEN = re.compile(r"anything\s+else|what\s+else|tell\s+me\s+(?:more|everything|about)|is\s+there\s+anything|"
                   r"any\s+other", re.I)


def facts_for(case: Case, question: str, told: Iterable[int] = (), k: int = 4) -> tuple[VoicedFact, ...]:
    """The facts (at most ``k``) that answer ``question``: those sharing its concepts first,
    then those of the sections it asks about; facts already ``told`` last, so "anything
    else?" gets something new. Demographics are the system prompt's, never a fact here."""
    facts = [f for f in voiced_facts(case) if f.section != "demographics"]
    if not facts:
        return ()
    byindex = {f.index: f for f in case_facts(case).facts}
    q = frozenset(c for c, _ in claim_concepts(question))
    q_core = q - SITES
    asked = specific_sections(question) or asked_sections(question)
    done = set(told)
    open_q = bool(_OPEN.search(question))
    scored = []
    for f in facts:
        cf = byindex[f.index]
        share = len((cf.asserted | cf.denied) & q)
        core = len((cf.asserted | cf.denied) & q_core)
        in_asked = f.section in asked
        if core == 0 and not in_asked:
            continue
        score = 3 * core + share + (1 if in_asked else 0) + (0.5 if f.section == "complaint" and in_asked else 0)
        # a fact already told comes after the new ones unless the question names it; it is
        # still given when nothing new answers (a follow-up on the same complaint)
        again = f.index in done and (open_q or not core)
        scored.append((again, -score, f.index, f))
    scored.sort(key=lambda x: x[:3])
    fresh = [x for x in scored if not x[0]]
    best = [f for *_, f in (fresh if open_q and fresh else scored)][:k]
    if not best and not q_core:  # "How are you feeling?": the complaint answers it
        best = [f for f in facts if f.section == "complaint" and f.index not in done][:2] or \
               [f for f in facts if f.section == "complaint"][:1]
    return tuple(sorted(best, key=lambda f: (f.section != "complaint", f.index)))  # what brought them first


def grounded_answer(case: Case, facts: Sequence[VoicedFact]) -> str:
    """The reply the chosen facts make by themselves (at most three sentences), or what a
    patient says when none answers the question."""
    if not facts:
        return "I'm not sure; I haven't noticed anything like that."
    return " ".join(f.text for f in list(facts)[:3])


def speaker_brief(case: Case) -> dict[str, str]:
    """The grounded patient prompt's values: who speaks (``who``), how (``voice``) and what
    brought them (``about``: the presenting complaint, in their voice)."""
    v = voice_of(case)
    complaint = " ".join(f.text for f in voiced_facts(case) if f.section == "complaint")
    demo = case.demographics.strip()
    if v.caregiver is None:
        who = f"{_article(demo)} {demo}"
        voice = 'Speak as yourself, in the first person ("I", "my"): never "the patient", "he" or "she".'
        about = f"What brought you here: {complaint}" if complaint else ""
    else:
        who = f"the {v.caregiver} of a patient ({demo}), answering the doctor for them"
        voice = (f'Speak of the patient as "{v.child}", "he" or "she", and of yourself as "I": you tell what you '
                 "have seen; never say \"the patient\".")
        about = f"What brought you here: {complaint}" if complaint else ""
    return {"who": who, "voice": voice, "about": about}


# -- the question as the grounded patient reads it -----------------------------------------
GIVEN = "(What you know that answers this:"
NOTHING = '(Nothing you know answers this. Reply as yourself: "I haven\'t noticed that" or "I don\'t know".)'


# a withholding patient (agents.behaviours) given nothing because it keeps what it knows back
HELD_BACK = "(You would rather not go into this: answer vaguely, without denying anything.)"


def grounded_message(question: str, facts: Sequence[VoicedFact], *, held_back: bool = False) -> str:
    """The question as the patient reads it: with the facts that answer it, or the note
    that none does, or (``held_back``) that the patient keeps them to itself
    (:class:`agents.participants.grounded.Grounded` sends it; the scripted backend and the
    checks read it back with :func:`given_facts`)."""
    if not facts:
        return f"{question}\n{HELD_BACK if held_back else NOTHING}"
    return f"{question}\n{GIVEN}\n" + "\n".join(f"- {f.text}" for f in facts) + ")"


def given_facts(message: str) -> list[str]:
    """The facts a grounded question came with, as given; [] for any other message."""
    if f"\n{GIVEN}\n" not in message:
        return []
    block = message.split(f"\n{GIVEN}\n", 1)[1]
    return [ln[2:].rstrip(")") for ln in block.splitlines() if ln.startswith("- ")]


def nothing_given(message: str) -> bool:
    """Whether a grounded question came with the note that no fact answers it."""
    return f"\n{NOTHING}" in message


def held_back(message: str) -> bool:
    """Whether a grounded question came with the note that the patient keeps back what
    answers it (a withholding patient)."""
    return f"\n{HELD_BACK}" in message
