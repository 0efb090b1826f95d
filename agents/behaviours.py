"""Patient behaviours: how the simulated patient talks, as conditions of a run.

A behaviour (``agents/behaviour_data/behaviours.toml``, written for medsim) is one of the
dimensions of MedDialBench (disclosure: ``withhold``; logic consistency:
``inconsistent``; health cognition: ``cognition``; expression style: ``expression``;
attitude: ``attitude``), of PatientSim (language proficiency by CEFR level:
``proficiency``; recall of medical history: ``recall``; cognitive confusion:
``confusion``) or ``fabricate``, each at a level 0-3. A *profile* names some behaviours
with their levels (``withhold=2,fabricate=1``); level 0 is today's cooperative patient
and adds nothing, so a profile of zeros is no profile at all: the patient's prompt and
every event are what they are without one.

A profile's texts go into the patient's system prompt only (:func:`with_behaviour`) and
are recorded as a ``patient_behaviour`` event (:class:`PatientBehaviour`), from which the
results row takes ``patient_behaviour`` (:func:`behaviour_fields`). Two behaviours also
act on what the faithful patient is given with each question
(:class:`agents.participants.grounded.Grounded`): a withholding patient is given only the
facts the question asks about directly (:func:`released_facts`), and a fabricating
patient is given symptoms it does not have, drawn before the consultation by the seed
from medsim's list (:func:`invented_facts`: plausible, neither held nor denied by the
case, in the speaker's voice) and recorded in the event, so that what it invented can
be scored. Low proficiency and poor recall change the wording and the precision, never
the facts.
"""
from __future__ import annotations

import hashlib
import random
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from agents.cases.model import Case
from agents.events import Event
from agents.fidelity.facts import SITES, case_facts, claim_concepts, speaks_for
from agents.fidelity.patient import asked_sections, check_patient, directly_asked, specific_sections
from agents.patient_voice import VoicedFact, facts_for, first_person, voice_of, voiced_facts
from agents.settings import near_name

__all__ = ["BEHAVIOURS", "LEVELS", "NO_BEHAVIOUR", "COOPERATIVE", "Profile", "BehaviourError", "behaviour_text",
           "behaviour_source", "behaviour_check", "licensed", "parse_profile", "format_profile", "profile_levels",
           "parse_grid", "behaviour_conditions", "instructions", "with_behaviour", "invented_facts",
           "released_facts", "invented_for", "PatientBehaviour", "behaviour_fields", "profile_in", "HEADING"]

BEHAVIOURS = ("withhold", "fabricate", "inconsistent", "cognition", "expression", "attitude", "proficiency", "recall",
              "confusion")
LEVELS = (0, 1, 2, 3)
NO_BEHAVIOUR = "none"  # a profile of no behaviour (every level 0), as text
COOPERATIVE = "cooperative"  # the level-0 condition of a behaviour grid
HEADING = "How you behave in this consultation:"

# a canonical profile: (name, level) with level 1-3, in BEHAVIOURS order; () is the
# cooperative patient
Profile = tuple[tuple[str, int], ...]


class BehaviourError(ValueError):
    """A profile or grid that cannot be read: names what is wrong (an unknown behaviour with
    the nearest known one, a level outside 0-3, malformed text)."""


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    raw = resources.files("agents").joinpath("behaviour_data/behaviours.toml").read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    missing = [b for b in BEHAVIOURS if len((data.get(b) or {}).get("levels") or ()) != 3]
    if missing:  # the shipped file is the code's data: a broken one is a bug, said plainly
        raise BehaviourError(f"behaviours.toml: {', '.join(missing)} must have three levels")
    return data


def _name(name: str, where: str = "") -> str:
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    if key in BEHAVIOURS:
        return key
    near = near_name(key, BEHAVIOURS)
    hint = f"did you mean '{near}'? " if near else ""
    raise BehaviourError(f"{where}unknown behaviour '{name}' ({hint}known: {', '.join(BEHAVIOURS)})")


def behaviour_text(name: str, level: int) -> str:
    """The text of behaviour ``name`` at ``level`` (1-3)."""
    key = _name(name)
    if level not in LEVELS[1:]:
        raise BehaviourError(f"{key}: a text is for levels 1-3 (0 adds nothing), not {level}")
    return " ".join(str(_data()[key]["levels"][level - 1]).split())


def behaviour_source(name: str) -> str:
    """Where the dimension comes from (MedDialBench, PatientSim, medsim)."""
    return str(_data()[_name(name)]["source"])


def behaviour_check(name: str) -> str:
    """The name of the manipulation check of behaviour ``name`` (agents.behaviour_checks)."""
    return str(_data()[_name(name)]["check"])


def licensed(profile: Profile) -> frozenset[str]:
    """What the faithful patient's guard lets through because ``profile`` asks for it
    (a fabricating patient's reply is invented on purpose)."""
    return frozenset(x for name, _ in profile for x in _data()[name].get("licenses") or ())


# -- reading and writing a profile ----------------------------------------------------------
def _level(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BehaviourError(f"{where}{name}: a level is 0, 1, 2 or 3, got {value!r}")
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise BehaviourError(f"{where}{name}: a level is 0, 1, 2 or 3, got {value!r}")
    level = int(text)
    if level not in LEVELS:
        raise BehaviourError(f"{where}{name}: level {level} is outside 0-3 (0: the cooperative patient)")
    return level


def parse_profile(value: str | Mapping[str, Any] | None, where: str = "") -> Profile:
    """``"withhold=2,fabricate=1"``, ``{"withhold": 2}``, ``"none"`` or None -> a canonical
    profile (zeros dropped, behaviour order). ``where`` prefixes an error (the flag or key)."""
    if value is None:
        return ()
    pairs: list[tuple[str, Any]] = []
    if isinstance(value, Mapping):
        pairs = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str):
        text = value.strip()
        if text.lower() in (NO_BEHAVIOUR, COOPERATIVE, ""):
            return ()
        for part in text.split(","):
            part = part.strip()
            if not part:
                raise BehaviourError(f"{where}an empty item in {value!r}; write NAME=LEVEL,NAME=LEVEL "
                                     "(e.g. withhold=2,fabricate=1)")
            if part.count("=") != 1:
                raise BehaviourError(f"{where}'{part}' is not NAME=LEVEL (e.g. withhold=2,fabricate=1)")
            k, v = part.split("=")
            pairs.append((k.strip(), v.strip()))
    else:
        raise BehaviourError(f"{where}expected NAME=LEVEL,... or a table of levels, got {value!r}")
    levels: dict[str, int] = {}
    for k, v in pairs:
        name = _name(k, where)
        if name in levels:
            raise BehaviourError(f"{where}{name} is given twice")
        levels[name] = _level(v, name, where)
    return tuple((b, levels[b]) for b in BEHAVIOURS if levels.get(b))


def format_profile(profile: Profile) -> str:
    """``withhold=2,fabricate=1`` (``none`` for the cooperative patient): the flag's form
    and the results row's."""
    return ",".join(f"{n}={lv}" for n, lv in profile) or NO_BEHAVIOUR


def profile_levels(profile: Profile) -> dict[str, int]:
    return dict(profile)


def parse_grid(text: str | Sequence[str], where: str = "") -> list[tuple[str, int]]:
    """``--behaviour-grid``: ``withhold,fabricate=2,recall=1-2`` or ``all`` -> the (behaviour,
    level) conditions of a grid, levels 1-3 unless given."""
    items = [text] if isinstance(text, str) else list(text)
    out: list[tuple[str, int]] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            name, _, lv = part.partition("=")
            names = list(BEHAVIOURS) if name.strip().lower() == "all" else [_name(name, where)]
            if not lv:
                levels = [1, 2, 3]
            elif m := re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", lv):
                lo, hi = _level(m.group(1), name, where), _level(m.group(2), name, where)
                if lo > hi:
                    raise BehaviourError(f"{where}{name}: levels {lv} run backwards")
                levels = list(range(lo, hi + 1))
            else:
                levels = [_level(lv, name, where)]
            for n in names:
                out += [(n, x) for x in levels if x and (n, x) not in out]
    if not out:
        raise BehaviourError(f"{where}no behaviour level above 0 in {text!r} (e.g. withhold,fabricate=2)")
    return out


def behaviour_conditions(items: Sequence[tuple[str, int]]) -> dict[str, dict[str, Any]]:
    """A grid (run-spec ``conditions`` input): the cooperative patient first, then one
    condition per (behaviour, level), named ``withhold-2``. Each sets the whole profile as
    text, which replaces (not merges with) a profile the run sets for every condition."""
    conds: dict[str, dict[str, Any]] = {COOPERATIVE: {"protocol": {"patient_behaviour": NO_BEHAVIOUR}}}
    for name, level in items:
        conds[f"{name}-{level}"] = {"protocol": {"patient_behaviour": f"{name}={level}"}}
    return conds


# -- the patient's instructions -------------------------------------------------------------
def instructions(profile: Profile, invented: Sequence[str] = ()) -> str:
    """The text appended to the patient's system prompt ("" for level 0)."""
    if not profile:
        return ""
    lines = [HEADING, *(f"- {behaviour_text(n, lv)}" for n, lv in profile)]
    if invented:
        lines.append("- The symptoms you add (you do not really have them): " + " ".join(invented))
    return "\n".join(lines)


def with_behaviour(system: str, profile: Profile, invented: Sequence[str] = ()) -> str:
    """``system`` with the profile's instructions appended (unchanged for level 0)."""
    text = instructions(profile, invented)
    return f"{system.rstrip()}\n\n{text}" if text else system


def profile_in(system: str) -> dict[str, int]:
    """The behaviours whose texts a patient's system prompt holds (the scripted backend
    plays them: agents.behaviour_play)."""
    if HEADING not in system:
        return {}
    block = " ".join(system.split(HEADING, 1)[1].split())
    return {n: lv for n in BEHAVIOURS for lv in LEVELS[1:] if f"- {behaviour_text(n, lv)}" in block}


# -- fabrication ----------------------------------------------------------------------------
def invented_facts(case: Case, level: int, seed: int = 0) -> tuple[str, ...]:
    """The symptoms a fabricating patient adds at ``level`` (1, 2 or 3 of them), chosen by
    ``seed`` from medsim's list: in the speaker's voice, ones the pre-check finds neither
    held nor denied by the case (so, said, they are invented) and naming nothing of the
    diagnosis or the records; for a patient a caregiver speaks for, only what a caregiver
    can see."""
    if level <= 0:
        return ()
    voice = voice_of(case)
    caregiver = speaks_for(case) is not None
    pool = [s for s in _data()["fabricate"]["symptoms"] if s.get("observable") or not caregiver]
    digest = hashlib.sha256(f"{seed}|{case.id}|fabricate".encode()).digest()
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(pool)
    out: list[str] = []
    for s in pool:
        said = first_person(str(s["text"]), "symptoms", voice)
        if not said:
            continue
        c = check_patient(case, "", said)
        if c.claim_verdict == "unsupported" and c.leak is False:
            out.append(said)
        if len(out) == level:
            break
    return tuple(out)


def invented_for(invented: Sequence[str], question: str, told: Iterable[int], level: int) -> list[int]:
    """Which of the invented symptoms (by position) a fabricating patient is given with
    ``question``: one it names, always; otherwise one not yet told when the question asks
    about other symptoms (level 1), about how the patient is at all (2), or at any
    question (3)."""
    q = frozenset(c for c, _ in claim_concepts(question)) - SITES
    done = set(told)
    general = {1: "symptoms" in specific_sections(question), 2: "symptoms" in asked_sections(question), 3: True}
    out = []
    for i, text in enumerate(invented):
        named = bool(q & (frozenset(c for c, n in claim_concepts(text) if not n) - SITES))
        if named or (i not in done and general.get(level, True)):
            out.append(i)
    return out


# -- withholding ----------------------------------------------------------------------------
def released_facts(case: Case, question: str, told: Iterable[int], level: int, k: int = 4) -> tuple[VoicedFact, ...]:
    """The facts a withholding patient (``level`` 1-3) is given with ``question``, of those a
    cooperative one would be: at level 1 those the question asks about directly
    (:func:`agents.fidelity.patient.directly_asked`) and at most one more; at level 2 only
    those, two at most; at level 3 only a fact whose own words the question names, one.
    An opening question ("what brings you in?") still gets the presenting complaint."""
    told = set(told)
    cooperative = facts_for(case, question, told, k)
    if level <= 0:
        return cooperative
    facts = {f.index: f for f in case_facts(case).facts}
    pool = facts_for(case, question, told, k=len(facts))
    direct = [f for f in pool if directly_asked(facts[f.index], question, strict=level >= 3)]
    if level == 1:
        extra = [f for f in cooperative if f not in direct][:1]
        got = [f for f in pool if f in direct or f in extra][:k]
    else:
        got = direct[: 2 if level == 2 else 1]
    if not got and "complaint" in asked_sections(question):  # the opening question: what brought them
        got = [f for f in voiced_facts(case) if f.section == "complaint" and f.index not in told][:1]
    return tuple(got)


# -- the record ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PatientBehaviour(Event):
    """A profile applied to the patient (among the first events of a case; never at level
    0): the profile, the text appended to its system prompt, the symptoms it will add
    (fabrication), and what its guard lets through."""

    type: ClassVar[str] = "patient_behaviour"
    behaviour: str  # format_profile
    levels: dict[str, int]
    text: str
    invented: tuple[str, ...] = ()
    licensed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "behaviour": self.behaviour, "levels": dict(self.levels), "text": self.text,
                "invented": list(self.invented), "licensed": list(self.licensed)}


def behaviour_fields(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The results row's ``patient_behaviour`` (``withhold=2,fabricate=1``), a column per
    behaviour (``behaviour_withhold: 2``) and the invented symptoms planned
    (``invented_planned``), from the case's ``patient_behaviour`` event; {} at level 0."""
    e = next((e for e in events if e.get("type") == PatientBehaviour.type), None)
    if e is None:
        return {}
    out: dict[str, Any] = {"patient_behaviour": e.get("behaviour")}
    out.update({f"behaviour_{k}": v for k, v in (e.get("levels") or {}).items()})
    if e.get("invented"):
        out["invented_planned"] = len(e["invented"])
    return out
