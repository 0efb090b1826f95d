"""Readability of English text: Flesch reading ease and the Flesch-Kincaid grade level.

Both read three counts of a text (:class:`TextCounts`): words, sentences and syllables.

- Flesch reading ease (Flesch 1948): 206.835 - 1.015 (words / sentences) - 84.6
  (syllables / words); higher is easier ("The cat sat on the mat." is 116.1).
- Flesch-Kincaid grade level (Kincaid et al. 1975): 0.39 (words / sentences) + 11.8
  (syllables / words) - 15.59; a US school grade, lower is easier (the same sentence is
  -1.45).

Words are runs of letters (with inner apostrophes and hyphens) or digits; sentences end
at ``.``, ``!`` or ``?`` (a text with words and no end mark is one sentence); syllables
are counted by the usual rule for English: groups of vowels (``y`` included), less a
silent final ``e`` (not ``-le`` after a consonant), less ``-es``/``-ed`` endings that add
no syllable, at least one per word; a number counts one syllable per digit group. The
rule is a heuristic (dictionaries differ on some words), applied the same way to every
text compared.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TextCounts", "text_counts", "syllables", "flesch_reading_ease", "flesch_kincaid_grade"]

_WORD = re.compile(r"[A-Za-z]+(?:['\u2019-][A-Za-z]+)*|\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"[.!?]+")
_VOWELS = re.compile(r"[aeiouy]+")


@dataclass(frozen=True)
class TextCounts:
    words: int = 0
    sentences: int = 0
    syllables: int = 0

    def __add__(self, other: "TextCounts") -> "TextCounts":
        return TextCounts(self.words + other.words, self.sentences + other.sentences, self.syllables + other.syllables)


def syllables(word: str) -> int:
    """The syllables of one word by the rule in the module's docstring."""
    w = word.lower()
    if w[:1].isdigit():
        return max(1, len(re.findall(r"\d+", w)))
    parts = [p for p in re.split(r"[-\u2019']", w) if p]
    if len(parts) > 1:  # a hyphenated word: its parts ("light-headed")
        return sum(syllables(p) for p in parts)
    w = re.sub(r"[^a-z]", "", w)
    if not w:
        return 0
    if len(w) <= 3:
        return 1
    n = len(_VOWELS.findall(w))
    if w.endswith("e") and not (w.endswith("le") and w[-3] not in "aeiouy") and w[-2] not in "aeiouy":
        n -= 1  # silent final e: "make", "store" (not "table", nor "free")
    elif re.search(r"[^aeiouy](?:es|ed)$", w) and not re.search(r"(?:[td]ed|[cgsxz]es|[cs]hes)$", w):
        n -= 1  # "-es"/"-ed" that add no syllable: "makes", "jumped" (not "wanted", "boxes", "washes")
    return max(1, n)


def text_counts(text: str) -> TextCounts:
    """Words, sentences and syllables of ``text``."""
    words = _WORD.findall(text)
    if not words:
        return TextCounts()
    sentences = sum(1 for s in _SENTENCE_END.split(text) if _WORD.search(s))
    return TextCounts(len(words), max(1, sentences), sum(syllables(w) for w in words))


def flesch_reading_ease(c: TextCounts) -> float | None:
    """Flesch reading ease of the counts (None: no words)."""
    if not c.words or not c.sentences:
        return None
    return 206.835 - 1.015 * c.words / c.sentences - 84.6 * c.syllables / c.words


def flesch_kincaid_grade(c: TextCounts) -> float | None:
    """The Flesch-Kincaid grade level of the counts (None: no words)."""
    if not c.words or not c.sentences:
        return None
    return 0.39 * c.words / c.sentences + 11.8 * c.syllables / c.words - 15.59
