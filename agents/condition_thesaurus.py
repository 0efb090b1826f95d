"""medsim's own thesaurus of condition names: which names are one condition, which
condition is a kind of which.

ICD-10-CM's tabular list, WordNet and the HPO (the pre-check's other vocabularies) hold few
eponyms and lay names of diseases and few families a doctor names ("Osler-Weber-Rendu
syndrome", "Glue ear", "Edwards syndrome"; "Ulcerative colitis" as a kind of inflammatory
bowel disease), and the embedded model judge does not know them either: on the pairs the
other steps leave, its relation probabilities tell right from wrong little better than
chance (docs/suites.md). The disease vocabularies that hold them (MeSH's entry terms, MONDO,
the ICD-10-CM index, SNOMED CT) ship in no installable package. So medsim carries its own:
``condition_thesaurus.txt`` beside this module, written for medsim from clinical knowledge
(by specialty, then reviewed line by line against its rules), not copied from any
terminology, and not from the judge's labelled pairs.

Its format, one condition a line::

    Hereditary hemorrhagic telangiectasia | Osler-Weber-Rendu syndrome | HHT
    Ulcerative colitis < Inflammatory bowel disease

Names joined by ``|`` are one condition; the conditions after ``<`` (joined by ``;``) are
broader ones it is a kind of; ``#`` starts a comment. What it may say
(:meth:`ConditionThesaurus.relation`) is only positive: two names of one line are the same
condition; a name whose condition lies beneath the other's along ``<`` is a more specific
form of it. The pre-check never reads it as saying two names differ: a thesaurus omits
names. The judge uses :meth:`ConditionThesaurus.apart` (both names known, on lines neither
beneath the other, or the key beneath the diagnosis) only to overrule a model's "right". A name found on two
lines is ambiguous and says nothing; an abbreviation in capitals ("RLS") is read only where
it is written in capitals. Names are looked up whole after the judge's own folding
(case, spelling, possessives, plurals, abbreviations), as with the other vocabularies.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["ConditionThesaurus", "ThesaurusError", "data_file", "parse", "written_in"]


def _capitals(name: str) -> bool:
    """An abbreviation written in capitals ("RLS", "G6PD"): it names its condition only
    when the text asking writes it in capitals too ("rls" is a word, not an initialism)."""
    letters = [c for c in name if c.isalpha()]
    return len(letters) > 1 and all(c.isupper() for c in letters)


def written_in(name: str, text: str) -> bool:
    """Whether ``text`` may be read as naming ``name``'s words: always, but for an
    abbreviation in capitals, which ``text`` must write in capitals ("Right CRAO", not
    "rls")."""
    if not _capitals(name):
        return True
    return set(re.findall(r"[A-Za-z0-9]+", name)) <= set(re.findall(r"[A-Za-z0-9]+", text))


class ThesaurusError(ValueError):
    """A malformed line of a thesaurus file (the file and line named)."""


def data_file() -> Path:
    """The thesaurus shipped with medsim."""
    return Path(__file__).with_name("condition_thesaurus.txt")


def parse(lines: Iterator[str] | list[str], source: str = "<thesaurus>") -> Iterator[tuple[int, list[str], list[str]]]:
    """(line number, the condition's names, the names of the broader conditions) for each
    line that names a condition. Raises :class:`ThesaurusError` naming the line for an empty
    name, a line with nothing before ``<``, or a condition listed as a kind of itself."""
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, sep, tail = line.partition("<")
        names = [n.strip() for n in head.split("|")]
        broader = [n.strip() for n in tail.split(";")] if sep else []
        if not head.strip() or any(not n for n in names) or any(not n for n in broader):
            raise ThesaurusError(f"{source}, line {number}: an empty name in {raw.strip()!r}")
        if {n.lower() for n in names} & {b.lower() for b in broader}:
            raise ThesaurusError(f"{source}, line {number}: a condition listed as a kind of itself: {raw.strip()!r}")
        yield number, names, broader


class ConditionThesaurus:
    """The thesaurus under one folding of names (``key``: the judge's), read on first use
    and kept. A condition is its line's number; a broader name no line holds becomes a
    condition of its own."""

    def __init__(self, key: Callable[[str], str], path: Path | None = None):
        self.key = key
        self.path = path
        self._index: dict[str, frozenset[int]] | None = None
        self._capitals: dict[str, frozenset[int]] = {}  # the conditions a name in capitals ("RLS") adds
        self._names: dict[int, tuple[str, ...]] = {}
        self._parents: dict[int, set[int]] = {}
        self._ancestors: dict[int, frozenset[int]] = {}
        self._children: dict[int, set[int]] = {}

    def _build(self) -> dict[str, frozenset[int]]:
        path = self.path or data_file()
        index: dict[str, set[int]] = {}
        if not path.is_file():  # no data file: no names, nothing said
            return {}
        with path.open(encoding="utf-8") as fh:
            rows = list(parse(fh, str(path)))
        capitals: dict[str, set[int]] = {}
        for number, names, _ in rows:
            self._names[number] = tuple(names)
            for n in names:
                k = self.key(n)
                if k:
                    (capitals if _capitals(n) else index).setdefault(k, set()).add(number)
        implicit = -1
        for number, _, broader in rows:
            for b in broader:
                k = self.key(b)
                if not k:
                    continue
                # a broader name is looked up as a name asked for is: one in capitals ("< COVID-19")
                # names the line that holds it in capitals too
                parents = index.get(k, set()) | (capitals.get(k, set()) if _capitals(b) else set())
                if not parents:  # a family named only after '<'
                    parents = {implicit}
                    (capitals if _capitals(b) else index)[k] = parents
                    self._names[implicit] = (b,)
                    implicit -= 1
                for parent in parents:
                    if parent != number:
                        self._parents.setdefault(number, set()).add(parent)
                        self._children.setdefault(parent, set()).add(number)
        self._capitals = {k: frozenset(v) for k, v in capitals.items()}
        return {k: frozenset(v) for k, v in index.items()}

    def conditions(self, name: str) -> frozenset[int]:
        """The conditions ``name`` names (after folding): one, none, or several (ambiguous)."""
        if self._index is None:
            self._index = self._build()
        k = self.key(name)
        if not k:
            return frozenset()
        found = self._index.get(k, frozenset())
        return found | self._capitals.get(k, frozenset()) if _capitals(name) else found

    def names(self, condition: int) -> tuple[str, ...]:
        """A condition's names, the preferred one first."""
        if self._index is None:
            self._index = self._build()
        return self._names.get(condition, ())

    def ancestors(self, condition: int) -> frozenset[int]:
        """Every condition above ``condition`` along ``<`` (not itself)."""
        if self._index is None:
            self._index = self._build()
        if condition not in self._ancestors:
            seen: set[int] = set()
            todo = list(self._parents.get(condition, ()))
            while todo:
                p = todo.pop()
                if p not in seen and p != condition:
                    seen.add(p)
                    todo.extend(self._parents.get(p, ()))
            self._ancestors[condition] = frozenset(seen)
        return self._ancestors[condition]

    def _one(self, name: str) -> int | None:
        found = self.conditions(name)
        return next(iter(found)) if len(found) == 1 else None

    def relation(self, diagnosis: str, truth: str) -> tuple[str, int, int] | None:
        """("same" | "more_specific", the diagnosis's condition, the truth's condition)
        when the thesaurus says so, else None (never "different"; an ambiguous name says
        nothing)."""
        mine, theirs = self._one(diagnosis), self._one(truth)
        if mine is None or theirs is None or self.key(diagnosis) == self.key(truth):
            return None
        if mine == theirs:
            return "same", mine, theirs
        if theirs in self.ancestors(mine):
            return "more_specific", mine, theirs
        return None

    def known(self, name: str) -> bool:
        """Whether ``name`` names exactly one condition here."""
        return self._one(name) is not None

    def apart(self, diagnosis: str, truth: str) -> tuple[str, int, int] | None:
        """("apart" | "broader", the diagnosis's condition, the truth's) when both names are
        known and the thesaurus holds them apart: two conditions neither beneath the other,
        or the truth beneath the diagnosis (the diagnosis is broader). None when either is
        unknown or ambiguous, or they are one condition, or the diagnosis lies beneath. The
        pre-check never reads this as "different" (a thesaurus omits names and links); the
        judge uses it only to overrule a model's "right"."""
        mine, theirs = self._one(diagnosis), self._one(truth)
        if mine is None or theirs is None or mine == theirs or theirs in self.ancestors(mine):
            return None
        return ("broader" if mine in self.ancestors(theirs) else "apart"), mine, theirs

    def narrower(self, truth: str) -> Iterator[tuple[str, str, int]]:
        """(a name, "same" | "more_specific", its condition) for the truth's other names,
        then the names of every condition beneath it, nearest first: what a diagnosis may
        name, or name a more specific form of, and be right. Nothing for an ambiguous or
        unknown name, and no name that is ambiguous itself."""
        top = self._one(truth)
        if top is None:
            return
        own = self.key(truth)
        for n in self.names(top):
            if self.key(n) != own and len(self.conditions(n)) == 1:
                yield n, "same", top
        seen, level = {top}, [top]
        while level:
            nxt: list[int] = []
            for c in level:
                for child in sorted(self._children.get(c, ())):
                    if child not in seen:
                        seen.add(child)
                        nxt.append(child)
                        for n in self.names(child):
                            if len(self.conditions(n)) == 1:
                                yield n, "more_specific", child
            level = nxt
