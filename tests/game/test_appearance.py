"""A patient is drawn as who the case says they are: sex and age band read from the
case's demographics, a sheet of that kind chosen by arrival number."""
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from agents.cases import load_cases
from agents.llm.scripted import ScriptedLLM
from agents.scorers import DiagnosisScorer
from game.appearance import BANDS, PATIENT_SHEETS, SEXES, age_band, parse_demographics, patient_sprite, sheet_group
from game.hospital_map import load_map
from game.world import World, WorldConfig
from tests.game.tmx import small_hospital
from tests.helpers import cast_builder, roles

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "agents" / "casesets" / "demo.jsonl"


def _demographics(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line)["OSCE_Examination"]["Patient_Actor"]["Demographics"])
    return out


@pytest.mark.parametrize("text, sex, age", [
    ("19-year-old woman", "f", 19),
    ("A 45-year-old man", "m", 45),
    ("58-year-old male", "m", 58),
    ("6-year-old boy", "m", 6),
    ("3-month-old infant", None, 0.25),
    ("2-week-old girl", "f", 14 / 365.25),
    ("newborn boy", "m", 0),
    ("A 34-year-old G2P1 woman", "f", 34),
    ("elderly woman", "f", 75),
    ("27 year old female", "f", 27),
    ("Female, 62", "f", 62),
    ("65 yo M", "m", 65),
    ("teenage girl", "f", 15),
    ("adolescent boy", "m", 15),
    ("middle-aged man", "m", 50),
    ("", None, None),
    ("   ", None, None),
    ("lorem ipsum dolor", None, None),
    ("???", None, None),
    (None, None, None),
    # more forms
    ("3-year-old boy (history given by his mother)", "m", 3),
    ("70-year-old man accompanied by his wife", "m", 70),
    ("18-month-old boy", "m", 1.5),
    ("5-day-old male newborn", "m", 5 / 365.25),
    ("Newborn, female", "f", 0),
    ("Newborn, born at 33 weeks of gestation", None, 0),
    ("1100-g (2-lb 7-oz) newborn, 31 weeks' gestation", None, 0),
    ("Newborn, 3050-g (6-lb 12-oz) male, six hours post delivery", "m", 0),
    ("32-year-old woman, gravida 2, para 1, at 38 weeks' gestation", "f", 32),
    ("22-year-old female at 30 weeks gestation", "f", 22),
    ("40-year-old nulliparous woman", "f", 40),
    ("66-year-old white male", "m", 66),
    ("23-year-old college student", None, 23),
    ("3-year-old child", None, 3),
    ("9-month-old infant", None, 0.75),
    ("62F", "f", 62),
    ("45 y/o male", "m", 45),
    ("Male, aged 71", "m", 71),
    ("age: 30, sex: F", "f", 30),
    ("woman in her 70s", "f", 75),
    ("man in his forties", "m", 45),
    ("Six-year-old girl", "f", 6),
    ("forty-two-year-old man", "m", 42),
    ("A pregnant woman", "f", None),
    ("gravida 3 para 2", "f", None),
    ("man", "m", None),
    ("an elderly gentleman", "m", 75),
    ("a toddler", None, 2),
    ("schoolgirl", "f", 8),
    ("young man", "m", 25),
    ("infant girl", "f", 0.5),
    ("Female, 62.", "f", 62),
    ("patient 2, male", "m", None),
    ("G2 P1 woman", "f", None),
    ("62.5 kg woman", "f", None),
])
def test_parse_demographics(text, sex, age):
    got_sex, got_age = parse_demographics(text)
    assert got_sex == sex
    if age is None:
        assert got_age is None
    else:
        assert got_age == pytest.approx(age, abs=1e-6)


def test_age_bands():
    assert [age_band(a) for a in (None, 0, 0.25, 12.9, 13, 64.9, 65, 101)] == \
        [None, "child", "child", "child", "adult", "adult", "older", "older"]


def test_every_kind_of_patient_has_at_least_two_looks():
    kinds = Counter(sheet_group(n) for n in PATIENT_SHEETS)
    assert None not in kinds
    assert set(kinds) == {(s, b) for s in SEXES for b in BANDS}
    assert min(kinds.values()) >= 2


def test_the_sheet_list_matches_the_sprites_on_disk():
    on_disk = {p.stem for p in (REPO / "assets" / "sprites").glob("patient_*.png")}
    assert on_disk == set(PATIENT_SHEETS)


@pytest.mark.parametrize("text, kind", [
    ("58-year-old man", ("m", "adult")),
    ("19-year-old woman", ("f", "adult")),
    ("82-year-old woman", ("f", "older")),
    ("71-year-old man", ("m", "older")),
    ("3-year-old boy (history given by his mother)", ("m", "child")),
    ("2-week-old girl", ("f", "child")),
    ("teenage girl", ("f", "adult")),
])
def test_the_sheet_follows_sex_and_age(text, kind):
    for i in range(6):
        assert sheet_group(patient_sprite(text, i, PATIENT_SHEETS)) == kind


def test_successive_patients_of_one_kind_vary_and_the_choice_is_deterministic():
    looks = [patient_sprite("45-year-old woman", i, PATIENT_SHEETS) for i in range(12)]
    assert looks == [patient_sprite("45-year-old woman", i, PATIENT_SHEETS) for i in range(12)]
    assert looks[0] != looks[1]
    assert set(looks) == {n for n in PATIENT_SHEETS if sheet_group(n) == ("f", "adult")}
    # the order of the list handed in does not matter
    assert looks == [patient_sprite("45-year-old woman", i, tuple(reversed(PATIENT_SHEETS))) for i in range(12)]


def test_unknown_sex_or_age_falls_back_sensibly():
    # age known, sex not: either sex, of that band
    infants = {patient_sprite("3-month-old infant", i, PATIENT_SHEETS) for i in range(20)}
    assert {sheet_group(n) for n in infants} == {("f", "child"), ("m", "child")}
    # sex known, age not: an adult of that sex
    assert {sheet_group(patient_sprite("a woman", i, PATIENT_SHEETS)) for i in range(20)} == {("f", "adult")}
    # neither: any adult, chosen by index
    anyone = {patient_sprite("", i, PATIENT_SHEETS) for i in range(20)}
    assert {sheet_group(n) for n in anyone} == {("f", "adult"), ("m", "adult")}
    assert {sheet_group(patient_sprite("garbage ###", i, PATIENT_SHEETS)) for i in range(20)} <= \
        {("f", "adult"), ("m", "adult")}


def test_missing_kinds_fall_back_and_no_sheet_is_an_error():
    only_adults = ("patient_f_adult_1", "patient_m_adult_1")
    assert patient_sprite("6-year-old boy", 0, only_adults) == "patient_m_adult_1"
    no_women = ("patient_m_child_1", "patient_m_adult_1", "patient_m_older_1")
    assert patient_sprite("82-year-old woman", 0, no_women) == "patient_m_older_1"
    # names that do not follow the scheme are still used rather than failing
    assert patient_sprite("82-year-old woman", 1, ("visitor_a", "visitor_b")) == "visitor_b"
    with pytest.raises(ValueError):
        patient_sprite("82-year-old woman", 0, ())


def test_every_demo_case_gets_a_sex_and_an_age():
    texts = _demographics(DEMO)
    assert len(texts) >= 20
    for text in texts:
        sex, age = parse_demographics(text)
        words = set(re.findall(r"[a-z]+", text.lower()))
        assert sex == ("f" if words & {"woman", "girl", "female"} else "m"), text
        n = re.match(r"(\d+)-year-old", text)
        assert n and age == int(n.group(1)), text


def test_the_agentclinic_cases_parse(agentclinic_path):
    texts = _demographics(agentclinic_path)
    parsed = [(t, *parse_demographics(t)) for t in texts]
    with_sex = sum(1 for _, s, _a in parsed if s)
    with_age = sum(1 for _, _s, a in parsed if a is not None)
    both = sum(1 for _, s, a in parsed if s and a is not None)
    print(f"AgentClinic: {len(texts)} cases, sex {with_sex}, age {with_age}, both {both}")
    assert len(texts) == 107
    # the 7 without a sex say none: newborns, an infant, a child, a college student
    assert with_sex >= 100 and with_age == len(texts) and both >= 100
    for text, sex, age in parsed:
        words = set(re.findall(r"[a-z]+", text.lower()))
        female = bool(words & {"woman", "female", "girl"})
        male = bool(words & {"man", "male", "boy"})
        if female != male:
            assert sex == ("f" if female else "m"), text
        m = re.match(r"(\d+)-(year|month|week|day)-old", text)
        if m:
            per_year = {"year": 1, "month": 12, "week": 365.25 / 7, "day": 365.25}[m.group(2)]
            assert age == pytest.approx(int(m.group(1)) / per_year), text
        elif "newborn" in words:
            assert age == 0, text


def test_the_world_draws_each_patient_as_their_case(tmp_path):
    cases, _ = load_cases("demo")
    by_id = {c.id: c for c in cases}
    llms = roles(ScriptedLLM(by_id, seed=0))
    world = World(load_map(small_hospital(tmp_path)), cases, cast_builder(llms), [DiagnosisScorer(llms["judge"])],
                  WorldConfig(doctors=1, patients=8, arrival_interval_s=1.0))
    world.reset(0)
    for _ in range(200):
        world.step(0.25)
    patients = [a for a in world.actors.values() if a.role == "patient"]
    assert len(patients) == 8
    for p in patients:
        sex, age = parse_demographics(by_id[p.case_id].demographics)
        assert sheet_group(p.sprite) == (sex, age_band(age)), (p.id, by_id[p.case_id].demographics, p.sprite)
        assert p.sprite in PATIENT_SHEETS  # the world draws from the sheets assets/generate.py makes
