"""Condition names in ICD-10-CM: synonyms, and which condition is a kind of which.

The judge's pre-check knows a condition by its words; a small model does not know that
"Quinsy" is a peritonsillar abscess, "Fifth disease" erythema infectiosum or "Hansen
disease" leprosy. ICD-10-CM's tabular list (the United States' clinical modification,
public domain, read from the ``simple-icd-10-cm`` package's data file) names ~98,000
codes with their titles, bracketed alternative names ("Erythema infectiosum [fifth
disease]") and inclusion terms ("Peritonsillar abscess": "quinsy"), in a hierarchy
("E05.0 Thyrotoxicosis with diffuse goiter" — Graves disease — under "E05 Thyrotoxicosis
[hyperthyroidism]").

What it may say (:func:`relation`) is only ever positive: a name of the code the truth
titles is the same condition (an inclusion term may be a kind of the title's condition
rather than another name of it, so a code speaks only for its title: "Hypopituitarism" is
not said to be "Kallmann syndrome", an inclusion term of E23.0, nor is the other term
"Hypogonadotropic hypogonadism"); a name whose code lies under the truth's is a more
specific form of it.
A code's neighbours (below) are not its names, but they are classified under it, so a
neighbour of a code strictly beneath another's is a more specific form of that other
("Pernicious (congenital) anemia", a neighbour of D51.0, is a kind of D51 "Vitamin B12
deficiency anemia"); it is never the same as its own code's title.
It never says two names differ: conditions a doctor tells apart share a code or sit in
sibling codes often enough (a classification groups for counting, not for diagnosis), and
a name it does not hold says nothing. Measured on the judge's shipped pairs (issue 22):
of the pairs the pre-check left undecided, it named 10 the same or more specific, all
labelled correct, and it called none labelled wrong the same; the pre-check alone went
from 0.861 to 0.910 agreement, and with the embedded model judge on what is left from
0.905 to 0.940 (held-out part 0.902 to 0.927; ``benchmarks/judge_pairs.py --format json``).

A code's names are its title and the title's bracketed alternatives, and those of its
inclusion terms that share no word with the title: a code also counts neighbouring
conditions ("Peritonsillar abscess" includes "peritonsillar cellulitis", not the same
disease), and those share the title's words, while another name for the same disease is a
lay name, an eponym or a Latin or Greek one ("quinsy", "athlete's foot", "scarlatina"). A
code titled "Other ..." lists conditions, not names of one, and gives only its title. A
name is looked up whole, after the judge's own folding (case, spelling, plurals,
abbreviations), with parenthesised non-essential words, ", unspecified ...", "NOS" and
"not elsewhere classified" left out; a name that is none of a code's names is not found
(no partial matching).
"""
from __future__ import annotations

import importlib.util
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["ConditionCodes", "data_file", "filed_apart"]

_PARENS = re.compile(r"\([^)]*\)")
_SUFFIX = re.compile(r",\s*(unspecified|not elsewhere classified)\b.*$|\s+NOS\b|\bof unspecified site\b", re.IGNORECASE)
_OTHER = re.compile(r"\bother\b", re.IGNORECASE)
_BRACKETS = re.compile(r"\s*\[|\]\s*")
_CODE = re.compile(r"^[A-Z][0-9][0-9A-Z](\.[0-9A-Z]{1,4})?$")  # a category or a subcategory, not a block


def data_file() -> Path | None:
    """The tabular list's XML file in the installed ``simple-icd-10-cm`` package (found
    without importing it: its import parses the whole file into its own tree), or None."""
    spec = importlib.util.find_spec("simple_icd_10_cm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted((Path(folder) / "data").glob("icd10*tabular*.xml"))
        if found:
            return found[-1]
    return None


def filed_apart(mine: frozenset[str], theirs: frozenset[str], *, by_category: bool = False) -> bool:
    """Whether two names' codes (both known) tell them apart: no code shared and none
    nested in another, or with ``by_category`` no category (a code's first three
    characters) shared: a category's subcategories divide one condition by cause, site or
    course ("Hay fever", J30.1, is pollen's allergic rhinitis, "Allergic rhinitis" J30.9)."""
    if not mine or not theirs:
        return False
    if by_category:
        return not {c[:3] for c in mine} & {c[:3] for c in theirs}
    if mine & theirs:
        return False
    return not any(x.startswith(y) or y.startswith(x) for x in mine for y in theirs)


def _forms(text: str) -> Iterator[str]:
    """The names a title or an inclusion term gives: each bracketed alternative apart,
    without parenthesised non-essential words or "unspecified"/"NOS"."""
    for part in _BRACKETS.split(text):
        part = _SUFFIX.sub("", _PARENS.sub("", part)).strip(" ,;:")
        if part:
            yield part


def _entries(path: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(code, its title, its inclusion terms) for every category and subcategory."""
    for _, el in ET.iterparse(path, events=("end",)):
        if el.tag != "diag":
            continue
        code = (el.findtext("name") or "").strip()
        if _CODE.match(code):
            terms = []
            for tag in ("inclusionTerm", "includes"):
                for box in el.findall(tag):
                    terms.extend(n.text or "" for n in box.findall("note"))
            yield code, el.findtext("desc") or "", terms
        for sub in el.findall("diag"):  # done with: keep memory flat
            el.remove(sub)


class ConditionCodes:
    """The names of ICD-10-CM's codes under one folding of names (``key``: the judge's),
    built on first use (a few seconds) and kept."""

    def __init__(self, key: Callable[[str], str], path: Path | None = None):
        self.key = key
        self.path = path
        self._tables: tuple[dict[str, frozenset[str]], ...] | None = None

    def _build(self) -> tuple[dict[str, frozenset[str]], ...]:
        """(each name's codes, each neighbour's codes, the codes each name titles)."""
        path = self.path or data_file()
        index: dict[str, set[str]] = {}
        neighbours: dict[str, set[str]] = {}
        titles: dict[str, set[str]] = {}
        if path is not None and path.is_file():  # no data file: no names, nothing said
            for code, title, terms in _entries(path):
                names = [self.key(f) for f in _forms(title)]
                for k in names:
                    if k:
                        titles.setdefault(k, set()).add(code)
                said = {w for n in names for w in n.split()}
                other = bool(_OTHER.search(title))  # "Other specified ...": a list of conditions, not names of one
                for term in terms:
                    for form in _forms(term):
                        k = self.key(form)
                        # another name shares no word with the title ("Quinsy" for "Peritonsillar
                        # abscess"); one that does is a neighbour the code also counts
                        # ("Peritonsillar cellulitis"), and so is every term of an "Other ..." code
                        if k and not other and not set(k.split()) & said:
                            names.append(k)
                        elif k and k not in names:
                            neighbours.setdefault(k, set()).add(code)
                for k in names:
                    if k:
                        index.setdefault(k, set()).add(code)
        return tuple({k: frozenset(v) for k, v in table.items()} for table in (index, neighbours, titles))

    def _lookup(self, table: int, name: str) -> frozenset[str]:
        if self._tables is None:
            self._tables = self._build()
        k = self.key(name)
        return self._tables[table].get(k, frozenset()) if k else frozenset()

    def codes(self, name: str) -> frozenset[str]:
        """The codes whose title or inclusion term is ``name`` (after folding)."""
        return self._lookup(0, name)

    def neighbour_codes(self, name: str) -> frozenset[str]:
        """The codes that count ``name`` among their conditions without it being one of
        their names (an inclusion term sharing the title's words, a term of an "Other ..."
        code)."""
        return self._lookup(1, name)

    def title_codes(self, name: str) -> frozenset[str]:
        """The codes whose title (or a bracketed alternative of it) is ``name``."""
        return self._lookup(2, name)

    def relation(self, diagnosis: str, truth: str) -> tuple[str, str, str] | None:
        """("same" | "more_specific", the diagnosis's code, the truth's code) when ICD-10-CM
        says so, else None (never a "different": see the module's docstring). Only a code
        the truth titles speaks for it: an inclusion term is one of the conditions a code
        counts, another name of the title's or a kind of it ("Kallmann syndrome" under E23.0
        Hypopituitarism, "Hemoglobin H disease" under D56.0 Alpha thalassemia), so the code's
        title, or its other terms, given for it may be broader or a neighbour; the title's
        own terms given for the title are right either way."""
        mine, theirs = self.codes(diagnosis), self.title_codes(truth)
        if not theirs:
            return None
        shared = sorted(mine & theirs)
        if shared:
            return "same", shared[0], shared[0]
        for a in sorted(mine) + sorted(self.neighbour_codes(diagnosis) - mine):
            for b in sorted(theirs):
                if a != b and a.startswith(b):  # ICD-10-CM codes nest by prefix: E05.00 under E05.0 under E05
                    return "more_specific", a, b
        return None
