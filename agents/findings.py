"""Finding a requested examination or test among a case's results.

Used by the scripted technician and to name what a request matched in the log. Matching
is by word overlap between the request and the result's name path, with a few clinical
synonyms (CBC, ECG/EKG, X-ray, ...).
"""
from __future__ import annotations

import re
from functools import lru_cache
from agents.cases.model import Case, flatten

__all__ = ["match_findings", "tokens"]

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


def _group_score(request: set[str], name_words: tuple[str, ...]) -> float:
    if not request or not name_words:
        return 0.0
    hit = request & set(name_words)
    return len(hit) / len(request)


def _index(case: Case) -> list[tuple[tuple[str, ...], list[tuple[str, tuple[str, ...], str]]]]:
    """Per test/exam group: its name tokens and its items (path, path tokens, value),
    computed once per case and kept on the (frozen) case object."""
    idx = case.__dict__.get("_findings_index")
    if idx is None:
        idx = []
        for section in (case.records(), case.exam):
            for key, value in section.items():
                items = [(" > ".join(p), tokens(" ".join(p)), t) for p, t in flatten({key: value})]
                idx.append((tokens(str(key)), items))
        object.__setattr__(case, "_findings_index", idx)  # a cache, not state: same inputs, same value
    return idx


def match_findings(case: Case, request: str, *, threshold: float = 0.5) -> list[tuple[str, str]]:
    """Best-matching results for a request as [(name path, value)], tests first then the
    physical examination; [] when nothing matches well enough."""
    req = set(tokens(request))
    best: list[tuple[str, str]] = []
    best_score = 0.0
    for group_tokens, items in _index(case):
        gscore = _group_score(req, group_tokens)
        if gscore > best_score:
            best_score, best = gscore, [(path, text) for path, _, text in items]
        for path, path_tokens, text in items:
            sc = _group_score(req, path_tokens)
            if sc > best_score:
                best_score, best = sc, [(path, text)]
    return best if best_score >= threshold else []
