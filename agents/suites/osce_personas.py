"""OSCE treatment-persuasion personas: 16 MBTI types x cases x gender.

A persona id is ``MBTI_GENDER_CASE`` (``INTJ_M_PNEUMO``) or ``MBTI_CASE``
(``INTJ_PNEUMO``: the gender is drawn per cell from the seed); ``all`` (every type x
gender x case), ``all_no_gender`` (every type x case, gender drawn), ``random`` and
``random_no_gender`` (one persona drawn from the run's seed); a comma-separated list of
any of these. A case is split in two: what the doctor is told (demographics, diagnosis,
the recommended treatment, its risks, benefits, prognosis, alternatives) and what only
the patient actor knows (situation, symptoms, fears, personality).

Cases are read from medsim's own TOML files (``osce_data/cases/*.toml``) or from a
directory of OSCE-Project's case template files (``prompts/cases/*.txt``: a ``MEDICAL
CASE: <title>`` line, then sections headed ``Name:``), see :func:`read_template_case`.
"""
from __future__ import annotations

import difflib
import random
import re
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

from agents.cases.jsonl import MAX_FIELD_CHARS

__all__ = ["MBTI_TYPES", "GENDERS", "OsceCase", "Traits", "Persona", "PersonaRef", "PersonaError", "load_osce_cases",
           "load_traits", "read_template_case", "parse_personas", "resolve_persona", "SHIPPED"]

MBTI_TYPES = ("INTJ", "INTP", "ENTJ", "ENTP", "INFJ", "INFP", "ENFJ", "ENFP",
              "ISTJ", "ISFJ", "ESTJ", "ESFJ", "ISTP", "ISFP", "ESTP", "ESFP")
GENDERS = ("M", "F")
SHIPPED = "shipped"  # the cases medsim ships (agents/suites/osce_data/cases)
_KEYWORDS = ("all", "all_no_gender", "random", "random_no_gender")
# OSCE-Project's case file stems and the codes its persona ids use
_TEMPLATE_CODES = {"pneumothorax": "PNEUMO", "lung_cancer": "LUNG"}


class PersonaError(ValueError):
    """A persona id, case file or trait file that cannot be used: names which and why."""


@dataclass(frozen=True)
class OsceCase:
    code: str  # PNEUMO
    title: str
    age: int | None
    # what the doctor is told
    diagnosis: str
    treatment: str
    risks: tuple[str, ...]
    benefits: tuple[str, ...]
    prognosis: str
    alternatives: tuple[str, ...]
    # what only the patient knows
    situation: str
    symptoms: tuple[str, ...]
    fears: tuple[str, ...]
    told: str
    source: str  # the file it came from

    def hidden_texts(self) -> list[str]:
        """The patient-only texts (they must never reach the doctor's prompt)."""
        return [self.situation, *self.symptoms, *self.fears]


@dataclass(frozen=True)
class Traits:
    mbti: dict[str, str]  # type -> the personality text
    gender: dict[str, tuple[str, str]]  # M/F -> (word, text)
    source: str


@dataclass(frozen=True)
class PersonaRef:
    """A persona as named in a spec: the gender may be left to the seed."""

    id: str
    mbti: str
    gender: str | None
    case: str  # case code


@dataclass(frozen=True)
class Persona:
    """One patient: a personality, a gender and a case."""

    id: str  # as named (INTJ_PNEUMO keeps its name; the drawn gender is in ``gender``)
    mbti: str
    gender: str
    gender_drawn: bool
    case: OsceCase
    trait: str = field(repr=False)
    gender_text: str = field(repr=False)
    gender_word: str = "person"

    @property
    def demographics(self) -> str:
        age = f"{self.case.age}-year-old " if self.case.age else "adult "
        return f"{age}{self.gender_word}"

    def hidden_texts(self) -> list[str]:
        return [self.trait, self.gender_text, *self.case.hidden_texts()]


# -- reading ------------------------------------------------------------------------------
def _data(name: str) -> Path:
    return Path(str(resources.files("agents").joinpath(f"suites/osce_data/{name}")))


def _strs(v: object, where: str) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise PersonaError(f"{where}: expected a list of strings")
    return tuple(v)


def _read_toml_case(path: Path) -> OsceCase:
    try:
        d = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise PersonaError(f"{path}: cannot read the case ({e})") from None
    doc, pat = d.get("doctor") or {}, d.get("patient") or {}
    missing = [k for k in ("code", "title") if not isinstance(d.get(k), str)]
    missing += [f"doctor.{k}" for k in ("diagnosis", "treatment", "prognosis") if not isinstance(doc.get(k), str)]
    missing += [f"patient.{k}" for k in ("situation", "told") if not isinstance(pat.get(k), str)]
    if missing:
        raise PersonaError(f"{path}: missing or not text: {', '.join(missing)}")
    code = d["code"].strip().upper()
    if not re.fullmatch(r"[A-Z0-9]+", code):
        raise PersonaError(f"{path}: code: letters and digits only (it is part of persona ids), got {d['code']!r}")
    age = d.get("age")
    if age is not None and (isinstance(age, bool) or not isinstance(age, int)):
        raise PersonaError(f"{path}: age: expected an integer, got {age!r}")
    return OsceCase(code=code, title=d["title"], age=age, diagnosis=doc["diagnosis"], treatment=doc["treatment"],
                    risks=_strs(doc.get("risks", []), f"{path}: doctor.risks"),
                    benefits=_strs(doc.get("benefits", []), f"{path}: doctor.benefits"),
                    prognosis=doc["prognosis"],
                    alternatives=_strs(doc.get("alternatives", []), f"{path}: doctor.alternatives"),
                    situation=pat["situation"], symptoms=_strs(pat.get("symptoms", []), f"{path}: patient.symptoms"),
                    fears=_strs(pat.get("fears", []), f"{path}: patient.fears"), told=pat["told"], source=str(path))


def _items(text: str, *, bullets_only: bool = False) -> tuple[str, ...]:
    """A section's lines: bullet items as items, other non-empty lines as they are
    (``bullets_only``: only the bullets, when there are any: a section's closing line,
    written to the patient, is not an item)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if bullets_only and any(re.match(r"\s*[-*•]", ln) for ln in lines):
        lines = [ln for ln in lines if re.match(r"\s*[-*•]", ln)]
    return tuple(re.sub(r"^\s*[-*•]\s*", "", ln).strip() for ln in lines)


def read_template_case(path: Path) -> OsceCase:
    """An OSCE-Project case file (``prompts/cases/*.txt``), written to the patient: a
    ``MEDICAL CASE: <title>`` line, then sections headed by a line ending in ``:``.
    The doctor gets the title (as the diagnosis), the recommendation, the reasons for it
    (benefits) and the alternatives; the situation, current status, concerns and
    closing lines stay with the patient. The template states no risks, prognosis or
    age: the doctor is told so."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise PersonaError(f"{path}: cannot read the case ({e})") from None
    lines = text.splitlines()
    m = next((re.match(r"\s*MEDICAL CASE:\s*(.+)", ln) for ln in lines if ln.strip()), None)
    if not m:
        raise PersonaError(f"{path}: line 1: expected 'MEDICAL CASE: <title>' (OSCE-Project's case template)")
    sections: dict[str, list[str]] = {}
    cur = "_"
    for ln in lines[1:]:
        head = re.fullmatch(r"\s*([A-Z][^:\-*•]{1,60}):\s*", ln)
        if head:
            cur = head.group(1).strip().lower()
            sections.setdefault(cur, [])
            continue
        sections.setdefault(cur, []).append(ln)

    def sec(*names: str) -> str:
        for key, body in sections.items():
            if any(n in key for n in names):
                return "\n".join(body).strip()
        return ""

    rec, why = sec("recommendation"), sec("recommended", "why")
    if not rec:
        raise PersonaError(f"{path}: no 'The Recommendation:' section (the treatment the doctor recommends)")
    concerns = sec("concern", "fear")
    # the lines after the last section that are not bullets (the closing sentence) belong to the patient
    closing = [ln for ln in (sections.get(list(sections)[-1]) or []) if ln.strip() and not re.match(r"\s*[-*•]", ln)]
    stem = path.stem.lower()
    code = _TEMPLATE_CODES.get(stem) or re.sub(r"[^A-Z0-9]", "", stem.upper())
    title = m.group(1).strip()
    return OsceCase(code=code, title=title, age=None, diagnosis=title, treatment=" ".join(_items(rec)),
                    risks=("not stated in the case file: explain the usual risks of this treatment",),
                    benefits=_items(why, bullets_only=True), prognosis="not stated in the case file (see the benefits)",
                    alternatives=_items(sec("alternative"), bullets_only=True), situation=sec("situation"),
                    symptoms=_items(sec("current status", "status")), fears=_items(concerns),
                    told=" ".join(closing) or "The doctors have recommended a treatment. You have not agreed yet.",
                    source=str(path))


def _check_lengths(case: OsceCase, path: Path) -> None:
    """A case field longer than :data:`agents.cases.jsonl.MAX_FIELD_CHARS` (it goes into
    every prompt of every encounter) is an error naming the file and the field."""
    for f in fields(case):
        v = getattr(case, f.name)
        for i, text in enumerate(v if isinstance(v, tuple) else (v,)):
            if isinstance(text, str) and len(text) > MAX_FIELD_CHARS:
                where = f"{f.name}[{i}]" if isinstance(v, tuple) else f.name
                raise PersonaError(f"{path}: {where}: is {len(text):,} characters long; a case field is at most "
                                   f"{MAX_FIELD_CHARS:,}")


def load_osce_cases(directory: str | Path | None = None) -> dict[str, OsceCase]:
    """Cases by code: medsim's own (``None`` or ``"shipped"``), or a directory of
    ``*.toml`` (medsim's format) and ``*.txt`` (OSCE-Project's template) files; a
    directory holding ``cases/`` (OSCE-Project's ``prompts/``) is read from there."""
    d = _data("cases") if directory in (None, SHIPPED) else Path(directory).expanduser()
    if (d / "cases").is_dir():
        d = d / "cases"
    if not d.is_dir():
        raise PersonaError(f"--osce-cases {directory}: not a directory")
    out: dict[str, OsceCase] = {}
    for f in sorted(d.iterdir()):
        if f.suffix not in (".toml", ".txt"):
            continue
        c = _read_toml_case(f) if f.suffix == ".toml" else read_template_case(f)
        _check_lengths(c, f)
        if c.code in out:
            raise PersonaError(f"{f}: case code {c.code} is also used by {out[c.code].source}")
        out[c.code] = c
    if not out:
        raise PersonaError(f"{d}: no case files (*.toml in medsim's format, *.txt in OSCE-Project's template)")
    return out


def load_traits(path: str | Path | None = None) -> Traits:
    """The 16 personality texts and the two gender texts (medsim's own by default)."""
    p = _data("traits.toml") if path is None else Path(path)
    try:
        d = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise PersonaError(f"{p}: cannot read the traits ({e})") from None
    mbti = {k.upper(): v.get("text", "") for k, v in (d.get("mbti") or {}).items()}
    missing = [t for t in MBTI_TYPES if not mbti.get(t)]
    gender = {k.upper(): (v.get("word", "person"), v.get("text", "")) for k, v in (d.get("gender") or {}).items()}
    missing += [f"gender.{g}" for g in GENDERS if not gender.get(g, ("", ""))[1]]
    if missing:
        raise PersonaError(f"{p}: no text for {', '.join(missing)}")
    return Traits(mbti, gender, str(p))


# -- persona ids --------------------------------------------------------------------------
def _near(word: str, choices: Iterable[str]) -> str:
    near = difflib.get_close_matches(word.upper(), [c.upper() for c in choices], n=1, cutoff=0.5)
    return f" (did you mean {near[0]}?)" if near else ""


def _parse_one(token: str, codes: Sequence[str]) -> PersonaRef:
    raw = token.strip()
    up = raw.upper()
    parts = up.split("_")
    if len(parts) < 2:
        kw = difflib.get_close_matches(raw.lower(), _KEYWORDS, n=1, cutoff=0.5)
        hint = f" (did you mean {kw[0]}?)" if kw else _near(up, [f"{t}_{c}" for t in MBTI_TYPES for c in codes])
        raise PersonaError(f"persona '{raw}': expected MBTI_GENDER_CASE like INTJ_M_{codes[0]}, MBTI_CASE, "
                           f"all, all_no_gender or random{hint}")
    mbti, rest = parts[0], parts[1:]
    kw = difflib.get_close_matches(raw.lower(), _KEYWORDS, n=1, cutoff=0.75)
    if mbti not in MBTI_TYPES and kw:
        raise PersonaError(f"persona '{raw}': not a persona id nor a keyword (did you mean {kw[0]}?)")
    if mbti not in MBTI_TYPES:
        raise PersonaError(f"persona '{raw}': unknown MBTI type '{parts[0]}'{_near(mbti, MBTI_TYPES)}; "
                           f"types: {', '.join(MBTI_TYPES)}")
    gender = None
    if len(rest) > 1 and rest[0] in GENDERS:
        gender, rest = rest[0], rest[1:]
    elif len(rest) > 1 and len(rest[0]) == 1:
        raise PersonaError(f"persona '{raw}': unknown gender '{rest[0]}' (M or F)")
    case = "_".join(rest)
    if case not in codes:
        joined = "".join(rest)
        if joined in codes:
            case = joined
        else:
            raise PersonaError(f"persona '{raw}': unknown case '{case}'{_near(case, codes)}; "
                               f"cases: {', '.join(codes)}")
    pid = f"{mbti}_{gender}_{case}" if gender else f"{mbti}_{case}"
    return PersonaRef(pid, mbti, gender, case)


def parse_personas(text: str | Sequence[str], codes: Sequence[str], *, seed: int = 0) -> list[PersonaRef]:
    """Persona ids (a comma-separated string or a list) -> persona refs, in order,
    each once. ``random``/``random_no_gender`` draw from ``seed`` (so a run's spec,
    which stores the resolved ids, is reproducible)."""
    tokens = [t for t in (text.split(",") if isinstance(text, str) else list(text)) if t.strip()]
    if not tokens:
        raise PersonaError("no personas given (e.g. --personas INTJ_M_PNEUMO,ESFP_F_LUNG, all, all_no_gender, random)")
    codes = list(codes)
    out: list[PersonaRef] = []
    rng = random.Random(f"osce-random|{seed}")
    for tok in tokens:
        t = tok.strip().lower()
        if t == "all":
            refs = [PersonaRef(f"{m}_{g}_{c}", m, g, c) for c in codes for m in MBTI_TYPES for g in GENDERS]
        elif t == "all_no_gender":
            refs = [PersonaRef(f"{m}_{c}", m, None, c) for c in codes for m in MBTI_TYPES]
        elif t == "random":
            m, g, c = rng.choice(MBTI_TYPES), rng.choice(GENDERS), rng.choice(codes)
            refs = [PersonaRef(f"{m}_{g}_{c}", m, g, c)]
        elif t == "random_no_gender":
            m, c = rng.choice(MBTI_TYPES), rng.choice(codes)
            refs = [PersonaRef(f"{m}_{c}", m, None, c)]
        else:
            refs = [_parse_one(tok, codes)]
        out += [r for r in refs if r.id not in {o.id for o in out}]
    return out


def resolve_persona(ref: PersonaRef, cases: dict[str, OsceCase], traits: Traits, *, seed: int) -> Persona:
    """A persona of a cell: a gender left open is drawn from (seed, id)."""
    gender, drawn = ref.gender, ref.gender is None
    if gender is None:
        gender = random.Random(f"osce-gender|{seed}|{ref.id}").choice(GENDERS)
    try:
        case = cases[ref.case]
    except KeyError:
        raise PersonaError(f"persona '{ref.id}': no case '{ref.case}' (cases: {', '.join(cases)})") from None
    word, gtext = traits.gender[gender]
    return Persona(ref.id, ref.mbti, gender, drawn, case, traits.mbti[ref.mbti], gtext, word)
