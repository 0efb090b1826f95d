"""Who a patient looks like: sex and age read from a case's free-text demographics
("58-year-old man", "3-month-old infant", "Female, 62", "65 yo M", ...), and the
character sheet that fits them.

Sheets are named ``patient_<sex>_<band>_<n>``: sex ``f`` or ``m``, band ``child``
(under 13), ``adult`` (13-64) or ``older`` (65 and over), n counting looks from 1.
:data:`PATIENT_SHEETS` lists the sheets ``assets/generate.py`` draws (a test keeps the
two in step), so the world chooses a look without reading any image. No pygame here.
"""
from __future__ import annotations

import re
from typing import Sequence

__all__ = ["PATIENT_SHEETS", "SEXES", "BANDS", "age_band", "parse_demographics", "patient_sprite",
           "sheet_group"]

SEXES = ("f", "m")
BANDS = ("child", "adult", "older")
CHILD_BELOW = 13.0  # years: younger is a child
OLDER_FROM = 65.0  # years: this age and over is an older adult

# The patient sheets in assets/sprites (drawn by assets/generate.py, CHARACTERS).
PATIENT_SHEETS = (
    "patient_f_child_1", "patient_f_child_2",
    "patient_f_adult_1", "patient_f_adult_2", "patient_f_adult_3",
    "patient_f_older_1", "patient_f_older_2",
    "patient_m_child_1", "patient_m_child_2",
    "patient_m_adult_1", "patient_m_adult_2", "patient_m_adult_3",
    "patient_m_older_1", "patient_m_older_2",
)

_SHEET = re.compile(r"^patient_([fm])_(child|adult|older)_(\d+)$")

# --- numbers -----------------------------------------------------------------------
_ONES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
         "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
         "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_WORD_NUM = (r"(?:(?:%s)(?:[- ](?:%s))?|%s)"
             % ("|".join(_TENS), "|".join(k for k, v in _ONES.items() if 0 < v < 10),
                "|".join(sorted(_ONES, key=len, reverse=True))))
_NUM = r"(\d+(?:\.\d+)?|%s)" % _WORD_NUM


def _number(s: str) -> float:
    s = s.strip().lower()
    if s[0].isdigit():
        return float(s)
    parts = re.split(r"[- ]", s)
    return float(sum(_TENS.get(p, _ONES.get(p, 0)) for p in parts))


_YEAR = 365.25
_UNIT_YEARS = {"year": 1.0, "yr": 1.0, "month": 1 / 12, "mo": 1 / 12, "week": 7 / _YEAR, "wk": 7 / _YEAR,
               "day": 1 / _YEAR, "hour": 1 / (24 * _YEAR), "hr": 1 / (24 * _YEAR)}
_UNIT = r"(years?|yrs?|months?|mos?|weeks?|wks?|days?|hours?|hrs?)"

# "6-year-old", "27 year old", "3-month-old", "2 weeks old"
_AGE_OLD = re.compile(r"\b%s\s*-?\s*%s\s*-?\s*old\b" % (_NUM, _UNIT))
# "65 yo", "45 y/o", "62 yrs", "aged 45 years" (not "for 10 years")
_AGE_YO = re.compile(r"(?<!for )(?<!over )(?<!past )(?<!last )\b%s\s*(?:yo|y/o|y\.o\.?|yrs?|years?)(?![a-z])"
                     % _NUM)
# "aged 45", "age: 45"
_AGE_LABEL = re.compile(r"\bage[d]?\s*[:=]?\s*(\d{1,3})\b")
# "62F", "45 m"
_AGE_SEX = re.compile(r"\b(\d{1,3})\s*([mf])\b")
# "in her 70s", "in his seventies"
_DECADE = re.compile(r"\b(?:in (?:her|his|their) )?(?:(\d)0'?s|(twenties|thirties|forties|fifties|sixties|"
                     r"seventies|eighties|nineties))\b")
_DECADE_WORDS = {"twenties": 2, "thirties": 3, "forties": 4, "fifties": 5, "sixties": 6, "seventies": 7,
                 "eighties": 8, "nineties": 9}
# a bare number that is an age ("Female, 62") and not a weight, a gestation or an obstetric count
_BARE = re.compile(r"(?<![\w.\-/])(\d{1,3})(?![\w%°'’/-])(?!\.\d)(?!\s*-?\s*(?:g|kg|lbs?|oz|cm|mm|in|"
                   r"weeks?|wks?|days?|hours?|hrs?|months?|mos?|units?|percent)\b)")
_NOT_AGE_BEFORE = re.compile(r"(?:\b(?:gravida|para|g|p|grade|stage|type|bed|room|patient|case|id|number|no)|#)"
                             r"\s*[:.]?\s*$")

# life stages, most specific first: (pattern, representative age in years)
_STAGES = (
    (re.compile(r"\b(?:new-?borns?|neonat\w*|premature|preterm)\b"), 0.0),
    (re.compile(r"\b(?:infants?|bab(?:y|ies))\b"), 0.5),
    (re.compile(r"\btoddlers?\b"), 2.0),
    (re.compile(r"\b(?:teen(?:age[d]?|ager)?s?|adolescents?)\b"), 15.0),
    (re.compile(r"\bmiddle[- ]aged\b"), 50.0),
    (re.compile(r"\b(?:elderly|older|old (?:man|woman|lady|gentleman)|seniors?|geriatric|pensioners?|"
                r"octogenarian|nonagenarian|septuagenarian)\b"), 75.0),
    (re.compile(r"\byoung (?:man|woman|lady|adult|male|female)\b"), 25.0),
    (re.compile(r"\b(?:child(?:ren)?|kids?|boys?|girls?|school(?:boy|girl|child)s?|pre-?schooler)\b"), 8.0),
)

# --- sex -----------------------------------------------------------------------------
# not "mr" or "ms": in notes they are as often mitral regurgitation or multiple sclerosis
_FEMALE = {"woman", "women", "female", "girl", "girls", "lady", "schoolgirl", "mrs", "miss",
           "pregnant", "gravida", "primigravida", "multigravida", "primipara", "multipara",
           "nulliparous", "primiparous", "multiparous", "nulligravida"}
_MALE = {"man", "men", "male", "boy", "boys", "gentleman", "schoolboy"}
_FEMALE_PRONOUNS = {"she", "her", "hers", "herself"}
_MALE_PRONOUNS = {"he", "his", "him", "himself"}
_OBSTETRIC = re.compile(r"\bg\d+\s*p\d+")  # G2P1: a pregnancy history, so a woman


def _parse_sex(t: str) -> str | None:
    nouns: list[tuple[int, str]] = []
    pronouns: list[tuple[int, str]] = []
    for m in re.finditer(r"[a-z]+", t):
        w = m.group(0)
        if w in _FEMALE:
            nouns.append((m.start(), "f"))
        elif w in _MALE:
            nouns.append((m.start(), "m"))
        elif w in ("f", "m"):
            before = t[m.start() - 1] if m.start() else " "
            after = t[m.end()] if m.end() < len(t) else " "
            if (before.isspace() or before.isdigit() or before in ",;(/") and (after.isspace() or after in ",;)./"):
                nouns.append((m.start(), w))
        elif w in _FEMALE_PRONOUNS:
            pronouns.append((m.start(), "f"))
        elif w in _MALE_PRONOUNS:
            pronouns.append((m.start(), "m"))
    ob = _OBSTETRIC.search(t)
    if ob:
        nouns.append((ob.start(), "f"))
    for found in (nouns, pronouns):
        if found:
            return min(found)[1]
    return None


def _parse_age(t: str) -> float | None:
    m = _AGE_OLD.search(t)
    if m:
        unit = m.group(2).rstrip("s")
        return _number(m.group(1)) * _UNIT_YEARS[unit]
    for rx in (_AGE_YO, _AGE_LABEL, _AGE_SEX):
        m = rx.search(t)
        if m:
            return _number(m.group(1))
    m = _DECADE.search(t)
    if m:
        decade = int(m.group(1)) if m.group(1) else _DECADE_WORDS[m.group(2)]
        return decade * 10 + 5.0
    for m in _BARE.finditer(t):
        if not _NOT_AGE_BEFORE.search(t[:m.start()]) and int(m.group(1)) <= 120:
            return float(m.group(1))
    for rx, years in _STAGES:
        if rx.search(t):
            return years
    return None


def parse_demographics(text: object) -> tuple[str | None, float | None]:
    """``(sex, age_years)`` from a demographics line: sex ``"f"``, ``"m"`` or None when
    the text does not say; age in years (a 3-month-old is 0.25) or None. A life stage
    without a number gets a representative age: newborn 0, infant 0.5, toddler 2,
    child/boy/girl 8, teenage/adolescent 15, young adult 25, middle-aged 50, elderly 75."""
    if not isinstance(text, str) or not text.strip():
        return None, None
    t = " ".join(text.lower().split())
    return _parse_sex(t), _parse_age(t)


def age_band(age_years: float | None) -> str | None:
    """``child`` (< 13), ``adult`` (13-64), ``older`` (>= 65), or None for an unknown age."""
    if age_years is None:
        return None
    if age_years < CHILD_BELOW:
        return "child"
    return "adult" if age_years < OLDER_FROM else "older"


def sheet_group(name: str) -> tuple[str, str] | None:
    """``(sex, band)`` of a sheet named ``patient_<sex>_<band>_<n>``, else None."""
    m = _SHEET.match(name)
    return (m.group(1), m.group(2)) if m else None


def _sheet_key(name: str) -> tuple[str, str, int]:
    m = _SHEET.match(name)
    assert m is not None
    return m.group(1), m.group(2), int(m.group(3))


def _fits(name: str, sex: str | None, band: str | None) -> bool:
    s, b, _ = _sheet_key(name)
    return (sex is None or s == sex) and (band is None or b == band)


def patient_sprite(demographics: object, index: int, available: Sequence[str]) -> str:
    """The sheet for a patient: one of the ``available`` sheets of their (sex, age band),
    picked by ``index`` (the arrival number), so the same shift always draws the same
    people and successive patients of one kind vary. Unknown sex: either sex of that
    band; unknown age: an adult; no sheet of that kind: the same band of either sex,
    then an adult. Only when no available name follows the naming is any sheet used."""
    if not available:
        raise ValueError("no patient sprites to choose from")
    sex, age = parse_demographics(demographics)
    band = age_band(age) or "adult"
    named = sorted((n for n in set(available) if _SHEET.match(n)), key=_sheet_key)
    for want_sex, want_band in ((sex, band), (None, band), (sex, "adult"), (None, "adult"), (sex, None),
                                (None, None)):
        pool = [n for n in named if _fits(n, want_sex, want_band)]
        if pool:
            return pool[index % len(pool)]
    pool = sorted(set(available))
    return pool[index % len(pool)]
