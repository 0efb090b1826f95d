"""Negation in short clinical text, and a polarity check of an extraction against its source.

Written for AutoMedic's conversion (``agents.suites.automedic_convert``): a small model
that turns "She does not smoke and works as a teacher" into "smokes, works as a teacher"
changes the case. The check is deterministic and needs no model; it is NegEx-like
(Chapman et al., 2001), kept small and documented here:

* **Cues** open a negated scope: ``no``, ``not`` and the ``n't`` forms, ``never``,
  ``without``, ``neither``/``nor``, ``non`` (as in "non-smoker"), ``deny``/``denies``/
  ``denied``, ``negative for``, ``free of``, ``absence of``. A few look-alikes are not
  cues ("not only", "no change", "no more than", "whether or not", ...).
  Cues after their concept close a scope backwards: "Smoking: no" (``:``/dash, then
  ``no``/``none``/``never``/``nil``/``denies``/``denied``/``negative`` at the end of a
  clause) and "rebound is absent" (``is|are|was|were`` + ``absent|denied|negative``).
* **A forward scope** runs from the cue to the first of: clause punctuation
  (``. ; : ! ? ( )``); a boundary word (``but``, ``however``, ``although``, ``which``,
  ``who``, ``because``, ``until``, ``when``, ...); another cue; a subject pronoun
  (``she``, ``he``, ``they``, ...); a finite verb from a closed list (``is``, ``has``,
  ``takes``, ``works``, ``drinks``, ``reports``, ...) that is not the scope's first word
  (the negated verb itself: "never *smokes*") and does not follow ``or``/``nor`` ("never
  smokes or drinks" negates both); after ``and``/``or``/a comma, a possessive or article
  (``her``, ``his``, ``the``, ...) or a word whose stem the scope already holds (a
  contrast: "no fever yesterday, fever today"); 12 words. So "does not smoke and works
  as a teacher" negates "smoke" only, and "no fever, chills or rash" negates all three.
* **Concepts** are content words compared by a crude stem (smoke, smokes, smoking,
  smoker and smoked are one; diabetes and diabetic are one); stop words, time words and
  generic history words ("history", "medical", "problems", "other") are no concepts.

:func:`conflicts` names the words of an extracted text that assert (outside any
negation of the text itself) a concept its source mentions only inside negated scopes;
a concept the source also states positively anywhere is never flagged. :func:`restore`
repairs such a text: the clause holding the false assertion becomes the source's own
negated phrase ("smokes, works as a teacher" -> "does not smoke, works as a teacher");
where that would lose another fact of the source, or the result is too long or still
conflicts, the caller's fallback replaces the whole text.

Limits: word-level, English only, no parser; a concept is one word (so "chest pain"
is flagged through "chest" or "pain", whichever the source only negates); the opposite
error (the extraction negates what the source asserts) is not checked; synonyms are not
matched ("medicines" vs "medication", "fever" vs "febrile").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Negation", "Conflict", "Repair", "stem", "negations", "concepts", "conflicts", "restore", "about_someone_else"]

_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:[.,]\d+)*|[.;:!?()\[\],]")
_PUNCT = frozenset(".;:!?()[]")
_MAX_WORDS = 12
_CUES = {("no",): "no", ("not",): "not", ("never",): "never", ("without",): "without", ("neither",): "neither",
         ("nor",): "nor", ("non",): "non", ("cannot",): "not", ("deny",): "deny", ("denies",): "deny",
         ("denied",): "deny", ("denying",): "deny", ("negative", "for"): "negative for", ("free", "of"): "free of",
         ("absence", "of"): "absence of"}
_PSEUDO = (("not", "only"), ("not", "necessarily"), ("not", "certain", "whether"), ("whether", "or", "not"),
           ("no", "change"), ("no", "significant", "change"), ("no", "increase"), ("no", "decrease"),
           ("no", "more", "than"), ("no", "less", "than"), ("not", "more", "than"), ("not", "less", "than"),
           ("if", "not"))
# a word before the cue that belongs in the phrase ("does not smoke", "takes no medicines")
_LEAD = {"not": {"does", "do", "did", "is", "was", "are", "were", "has", "have", "had", "can", "could", "will",
                 "would", "should"},
         "no": {"has", "have", "had", "takes", "take", "took", "drinks", "drink", "uses", "use", "reports",
                "reported", "is", "was", "are", "were", "eats", "gets"},
         "never": {"has", "have", "had", "is", "was"}}
_BOUNDARY = frozenset("but however although though yet except whereas while which who whose that because since "
                      "until unless when whenever after before currently now presently then so apart aside "
                      "besides".split())
# adverbs that may stand between a cue and what it negates ("is not currently on any medicines")
_SCOPE_ADVERBS = frozenset("currently presently recently ever really actually usually normally regularly".split())
_SUBJECT = frozenset("she he they we i there".split())
_AFTER_COORD = frozenset("her his their its the this these those my".split())
_FINITE = frozenset((
    "is was are were has had have takes took works worked lives lived drinks drank smokes uses reports "
    "reported says said notes noted complains complained describes described eats ate travels traveled "
    "travelled returned returns came comes presents presented started starts began begins feels felt walks "
    "exercises plays attends attended received receives underwent undergoes gets got sleeps slept lost loses "
    "gained gains developed develops appears appeared shows showed reveals revealed admits admitted also "
    "recently").split())
_POST_AFTER_COLON = frozenset("no none never nil denies denied negative".split())
_POST_AFTER_BE = frozenset("absent denied negative".split())
_BE = frozenset("is are was were".split())
_IRREGULAR = {"drank": "drink", "drunk": "drink", "ate": "eat", "eaten": "eat", "took": "take", "taken": "take"}
_SUFFIXES = ("ings", "ing", "ers", "ies", "ied", "ism", "ed", "er", "es", "ic", "ful", "s", "y", "e")
_STOP_WORDS = (
    # grammar
    "a an the and or nor but of in on at to for from with by as into onto over under about than then that "
    "this these those there here it its she he her hers him his they them their we our you your i me my who "
    "whom which what when where why how is are was were be been being am has have had having do does did "
    "doing done can could will would shall should may might must also very any some all each every both "
    "either more most much many few several such same own just only again still even ever yet"
    # time
    " day days daily week weeks weekly month months monthly year years yearly hour hours minute minutes "
    "today yesterday tomorrow tonight morning evening night ago time times once twice recently recent "
    "currently current now previous previously prior past last since until always usually often "
    # generic history words
    " history medical problem problems other known significant condition conditions illness illnesses "
    "disease diseases symptom symptoms complaint complaints issue issues regular regularly patient "
    "woman man boy girl child family reports report reported says said notes noted describes take takes "
    "taking use uses using used get gets got make makes well"
    # the cues themselves
    " no not never none nothing nor neither without non deny denies denied denying negative positive free "
    "absence absent")


# ConText's "experiencer" (Harkema et al., 2009): a sentence about a relative tells of their
# condition, not the patient's ("My mother has an underactive thyroid")
_SOMEONE_ELSE = re.compile(r"\b(?:mother|father|sister|brother|sibling|parents?|grand\w+|aunt|uncle|cousin|family|"
                           r"son|daughter|husband|wife|partner|mum|mom|dad)\b", re.IGNORECASE)


def about_someone_else(sentence: str) -> bool:
    """Whether a sentence speaks of a relative (see ``_SOMEONE_ELSE``): what it names is
    not the patient's."""
    return bool(_SOMEONE_ELSE.search(sentence))


def stem(word: str) -> str:
    """A crude stem: smoke, smokes, smoking, smoker, smoked -> ``smok``."""
    w = word.lower().replace("\u2019", "'")
    w = _IRREGULAR.get(w, w)
    if w.endswith("'s"):
        w = w[:-2]
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: -len(suf)]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


_STOP = frozenset(stem(w) for w in _STOP_WORDS.split())


@dataclass(frozen=True)
class Negation:
    """A negated phrase of a text: ``text[start:end]`` from its cue (with a leading
    auxiliary, "does not ...") to the end of its scope; ``stems`` are its concepts."""

    cue: str
    phrase: str
    start: int
    end: int
    stems: frozenset[str]


@dataclass(frozen=True)
class Conflict:
    """``word`` (at ``start`` in the extracted text) asserts ``stem``, which the source
    only negates, in ``phrase``."""

    word: str
    stem: str
    start: int
    phrase: str


@dataclass(frozen=True)
class Repair:
    """``before`` -> ``after``: ``reason`` is ``negation_restored`` (the false clauses
    became the source's negated phrases) or ``negation_imputed`` (no clean repair: the
    caller's fallback)."""

    reason: str
    before: str
    after: str
    concepts: tuple[str, ...]
    phrases: tuple[str, ...]


@dataclass
class _Tok:
    text: str
    low: str
    start: int
    end: int
    stem: str
    content: bool
    cue: bool = False
    scope: int = -1  # index of the Negation holding it, or -1


def _tokens(text: str) -> list[_Tok]:
    # a spaced dash reads like a colon ("Smoking - no"); same length, so offsets hold
    norm = re.sub(r"(?<=\s)[-\u2013\u2014](?=\s)", ":", text.replace("\u2019", "'"))
    out = []
    for m in _TOKEN.finditer(norm):
        t = m.group(0)
        low = t.lower()
        s = stem(low)
        content = t[0].isalpha() and len(s) >= 3 and s not in _STOP and not low.endswith("n't")
        out.append(_Tok(t, low, m.start(), m.end(), s, content))
    return out


def _match(toks: list[_Tok], i: int, seq: Sequence[str]) -> bool:
    return i + len(seq) <= len(toks) and all(toks[i + k].low == w for k, w in enumerate(seq))


_CUE_STARTS = frozenset(seq[0] for seq in _CUES)


def _forward_cue(toks: list[_Tok], i: int) -> tuple[int, str] | None:
    """(length, cue) of a forward cue at ``i``, or None."""
    low = toks[i].low
    if low not in _CUE_STARTS and not low.endswith("n't"):  # no cue starts here (the common case, at once)
        return None
    if any(_match(toks, i, p) for p in _PSEUDO):
        return None
    if toks[i].low.endswith("n't"):
        return 1, "not"
    for seq, cue in _CUES.items():
        if _match(toks, i, seq):
            return len(seq), cue
    return None


def _ends_after_coord(nxt: _Tok, coord: str, held: set[str]) -> bool:
    if nxt.low in _SUBJECT or nxt.low in _AFTER_COORD or nxt.low in _BOUNDARY:
        return True
    if nxt.low in _FINITE and coord not in ("or", "nor"):
        return True
    return nxt.content and nxt.stem in held


def _analyse(text: str) -> tuple[list[_Tok], list[Negation]]:
    toks = _tokens(text)
    negs: list[Negation] = []
    n = len(toks)

    def close(first: int, last: int, lead: int, cue: str, cue_idx: Sequence[int]) -> None:
        scope = [k for k in range(first, last + 1) if not toks[k].cue and k not in cue_idx]
        if not scope:
            return
        for k in cue_idx:
            toks[k].cue = True
        for k in scope:
            toks[k].scope = len(negs)
        a, b = toks[min(lead, first)].start, toks[max(last, max(cue_idx))].end
        negs.append(Negation(cue, text[a:b], a, b, frozenset(toks[k].stem for k in scope if toks[k].content)))

    i = 0
    while i < n:
        t = toks[i]
        # backward: "Smoking: no", "rebound is absent"
        post = None
        if t.text == ":" and i + 1 < n and toks[i + 1].low in _POST_AFTER_COLON and (
                i + 2 == n or toks[i + 2].text in _PUNCT or toks[i + 2].text == "," or toks[i + 2].low == "and"):
            post = (i, i + 1)
        elif t.low in _BE and i + 1 < n and toks[i + 1].low in _POST_AFTER_BE and (
                i + 2 == n or toks[i + 2].low != "for"):  # "is negative for X" is a forward cue
            post = (i, i + 1)
        if post and i > 0:
            k, words = i - 1, 0
            while k >= 0 and toks[k].text not in _PUNCT and toks[k].text != "," and toks[k].low not in _BOUNDARY \
                    and toks[k].low not in ("and", "or") and toks[k].scope < 0 and words < 6:
                k, words = k - 1, words + 1
            if words:
                close(k + 1, i - 1, k + 1, toks[post[1]].low, post)
            i = post[1] + 1
            continue
        fc = _forward_cue(toks, i)
        if fc is None:
            i += 1
            continue
        length, cue = fc
        lead = i - 1 if i > 0 and toks[i - 1].low in _LEAD.get(cue, ()) else i
        j, words, held, prev = i + length, 0, set(), ""
        while j < n:
            u = toks[j]
            if not words and u.low in _SCOPE_ADVERBS:  # "not currently taking", "not recently had": the
                j += 1                                 # phrase the cue negates comes after its adverb
                continue
            if u.text in _PUNCT or u.low in _BOUNDARY or _forward_cue(toks, j) is not None and u.low != "nor":
                break
            if u.text == "," or u.low in ("and", "or", "nor"):
                k, coord = j + 1, u.low
                if u.text == "," and k < n and toks[k].low in ("and", "or", "nor"):
                    k, coord = k + 1, toks[k].low
                if k >= n or _ends_after_coord(toks[k], coord, held):
                    break
                if toks[k].text in _PUNCT:
                    break
                j, prev = k, coord
                continue
            if words and (u.low in _SUBJECT or (u.low in _FINITE and prev not in ("or", "nor"))):
                break
            words += 1
            if words > _MAX_WORDS:
                break
            if u.content:
                held.add(u.stem)
            j, prev = j + 1, ""
        last = j - 1
        while last >= i + length and (toks[last].text == "," or toks[last].low in ("and", "or", "nor")):
            last -= 1
        if last >= i + length:
            close(i + length, last, lead, cue, tuple(range(i, i + length)))
        else:
            for k in range(i, i + length):
                toks[k].cue = True
        i = max(j, i + length)
    return toks, negs


def negations(text: str) -> list[Negation]:
    """The negated phrases of ``text``, in order."""
    return _analyse(text)[1]


def concepts(text: str) -> list[tuple[str, str, bool, int]]:
    """Each concept (content word) of ``text`` in order, as (word, stem, negated, start):
    whether a negated scope holds it, and where it starts (the simulator-fidelity check
    reads a patient's claims so)."""
    toks, _ = _analyse(text)
    return [(t.text, t.stem, t.scope >= 0, t.start) for t in toks if t.content and not t.cue]


def _polarity(text: str) -> tuple[set[str], set[str], list[Negation]]:
    toks, negs = _analyse(text)
    pos = {t.stem for t in toks if t.content and not t.cue and t.scope < 0}
    neg = {t.stem for t in toks if t.content and not t.cue and t.scope >= 0}
    return pos, neg, negs


def conflicts(extracted: str, source: str) -> list[Conflict]:
    """The words of ``extracted`` that assert a concept ``source`` mentions only negated."""
    pos, neg, negs = _polarity(source)
    only = neg - pos
    if not only:
        return []
    toks, _ = _analyse(extracted)
    return [Conflict(t.text, t.stem, t.start, next(g.phrase for g in negs if t.stem in g.stems))
            for t in toks if t.content and not t.cue and t.scope < 0 and t.stem in only]


_SEGMENT = re.compile(r"(\s*(?<!\d)[,;.](?!\d)\s*|\s+(?:and|but|or|while|whereas|although)\s+)", re.I)


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9']+", " ", s.lower()).split())


def restore(extracted: str, source: str, *, fallback: str, max_len: int | None = None) -> Repair | None:
    """None when ``extracted`` agrees with ``source``'s negations; else the repair (see
    the module's docstring)."""
    found = conflicts(extracted, source)
    if not found:
        return None
    concepts = tuple(dict.fromkeys(c.word.lower() for c in found))
    pos, neg, _ = _polarity(source)
    facts = pos | neg
    parts = _SEGMENT.split(extracted)  # even: segments; odd: separators
    offsets, at = [], 0
    for p in parts:
        offsets.append(at)
        at += len(p)
    used: list[str] = []
    clean = True
    for idx in range(0, len(parts), 2):
        a, b = offsets[idx], offsets[idx] + len(parts[idx])
        here = [c for c in found if a <= c.start < b]
        if not here:
            continue
        phrases = list(dict.fromkeys(c.phrase for c in here))
        seg_toks, _ = _analyse(parts[idx])
        kept = {c.stem for c in here} | {t.stem for ph in phrases for t in _tokens(ph)}
        if any(t.content and t.stem not in kept and t.stem in facts for t in seg_toks):
            clean = False  # the clause also holds another fact of the source: rewriting it would lose that
            break
        rest = _norm("".join(parts[k] for k in range(0, len(parts), 2) if k != idx))
        new = ", ".join(ph for ph in phrases if _norm(ph) not in rest)
        if new and idx == 0 and parts[idx][:1].isupper():
            new = new[0].upper() + new[1:]
        used.extend(phrases)
        parts[idx] = new
    after = ""
    if clean:
        # drop the separator next to a segment that became empty, then tidy
        keep = []
        for idx in range(0, len(parts), 2):
            if parts[idx].strip():
                if keep:
                    keep.append(parts[idx - 1])
                keep.append(parts[idx])
        after = " ".join("".join(keep).split()).strip(" ,;")
        if extracted.rstrip().endswith(".") and after and not after.endswith("."):
            after += "."
    if not clean or not after or (max_len is not None and len(after) > max_len) or conflicts(after, source):
        return Repair("negation_imputed", extracted, fallback, concepts, tuple(dict.fromkeys(used)))
    return Repair("negation_restored", extracted, after, concepts, tuple(dict.fromkeys(used)))
