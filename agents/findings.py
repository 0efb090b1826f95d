"""Finding a requested examination or test among a case's results.

Used by the technician (its hints), the scripted backend and the imaging studies. Which
record answers a request is :mod:`agents.orders`' rule, written down there: a record of
another test is never returned (blood cultures are not a complete blood count).
:func:`tokens` (word overlap with a few clinical synonyms) is the scripted judge's.
"""
from __future__ import annotations

import re
from functools import lru_cache
from agents.cases.model import Case, flatten
from agents.orders import answers, closeness, is_whole_examination, order_parts, part_of_panel, test_name

__all__ = ["match_findings", "match_order", "tokens", "case_records", "case_story"]

_SYNONYMS = {
    "cbc": ["complete", "blood", "count"],
    "fbc": ["complete", "blood", "count"],
    "ekg": ["ecg"],
    "electrocardiogram": ["ecg"],
    "xray": ["x", "ray"],
    "radiograph": ["x", "ray"],
    "bmp": ["metabolic", "panel"],
    "cmp": ["metabolic", "panel"],
    "lfts": ["liver", "function"],
    "lft": ["liver", "function"],
    "ultrasonography": ["ultrasound"],
    "sonography": ["ultrasound"],
    "us": ["ultrasound"],
    "ua": ["urinalysis"],
    "bloodwork": ["blood"],
    "labs": ["blood"],
    "vitals": ["vital", "signs"],
}
_STOP = {
    "a", "an", "the", "of", "for", "and", "or", "to", "please", "test", "tests", "results",
    "result", "level", "levels", "i", "would", "like", "we", "need", "check", "order",
    "get", "do", "some", "me", "study", "scan", "exam", "examination", "findings", "panel",
}


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("x-ray", "xray"))
    out: list[str] = []
    for w in words:
        out.extend(_SYNONYMS.get(w, [w]))
    return tuple(w for w in out if w not in _STOP)


def _index(case: Case) -> list[tuple[tuple[str, ...], str, bool]]:
    """Every record of a case as (name path, value, examination?), tests first then the
    physical examination, in document order; computed once per case and kept on the
    (frozen) case object."""
    idx = case.__dict__.get("_findings_index")
    if idx is None:
        idx = []
        for exam, section in ((False, case.records()), (True, case.exam)):
            for key, value in section.items():
                idx.extend((p, t, exam) for p, t in flatten({key: value}))
        object.__setattr__(case, "_findings_index", idx)  # a cache, not state: same inputs, same value
    return idx


def _matches(case: Case, request: str, loose: bool) -> list[tuple[str, str]]:
    order = test_name(request)
    best: tuple[str, ...] | None = None
    best_score = -1.0
    for path, _, exam in _index(case):
        for k in range(1, len(path) + 1):
            name = test_name(" ".join(path[:k]), examination=exam)
            if answers(order, name, loose=loose):
                score = closeness(order, name)
                if score > best_score:
                    best, best_score = path[:k], score
                break
    if best is None:
        return []
    n = len(best)
    return [(" > ".join(p), t) for p, t, _ in _index(case) if p[:n] == best]


def match_findings(case: Case, request: str) -> list[tuple[str, str]]:
    """The records of a case that answer a request, as [(name path, value)]: those under
    the record name that answers it most closely (:func:`agents.orders.answers`; a group
    of records such as a complete blood count comes whole), tests before the physical
    examination; [] when no record answers it. A request with words the tables do not
    know is matched again without them. A request for a panel that no record names as a
    whole gets the records of its parts ("CBC" -> "Blood work > Hemoglobin", "... >
    Platelet count": :func:`agents.orders.part_of_panel`). A request for the whole physical examination
    (:func:`agents.orders.is_whole_examination`) gets every finding of it."""
    if is_whole_examination(request):
        whole = [(" > ".join(p), t) for p, t, exam in _index(case) if exam]
        if whole:
            return whole
    return (_matches(case, request, loose=False) or _matches(case, request, loose=True)
            or [(" > ".join(p), t) for p, t, exam in _index(case) if not exam and part_of_panel(request, p)])


def match_order(case: Case, order: str) -> list[tuple[str, str]]:
    """The records an order matches: the order as a whole (its stated purpose cut off),
    else each test it names ("CBC, chest X-ray and a CT"), each matched
    (:func:`agents.orders.order_parts`)."""
    memo = case.__dict__.setdefault("_order_hits", {})  # a cache, not state: same case and order, same records
    if order in memo:
        return list(memo[order])
    parts = order_parts(order) or [order]
    hits = match_findings(case, parts[0])
    if not hits:
        for part in parts[1:]:
            for h in match_findings(case, part):
                if h not in hits:
                    hits.append(h)
    memo[order] = tuple(hits)
    return hits


def case_records(case: Case) -> tuple[tuple[str, str], ...]:
    """Every record of the case, its tests' results and its examination findings, as
    (path joined with " > ", value) pairs (worked out once per case)."""
    got = case.__dict__.get("_all_records")
    if got is None:
        got = tuple((" > ".join(p), t) for section in (case.records(), case.exam) for p, t in flatten(section))
        object.__setattr__(case, "_all_records", got)  # a cache, not state
    return got


def case_story(case: Case) -> str:
    """The patient's own account in the case (history, symptoms, past and social history),
    as one text, a line to each of its fields (a field is a sentence of its own: "No pain"
    says nothing of the next field's "AIDS")."""
    return "\n".join(t for _, t in flatten(case.patient))
