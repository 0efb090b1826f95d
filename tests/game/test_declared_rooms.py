"""Test rooms live in the Tiled map: a room declared there (keywords, label, priority,
machine) is routed to, walked to and shown in the menu with no Python edit, and the
shipped hospital routes every known test where the old hard-coded rules did."""
import dataclasses
import json
from pathlib import Path

import pytest

from agents.cases import load_cases
from agents.catalogue import CATALOGUE
from agents.events import EventLog, read_events
from agents.findings import tokens
from agents.llm.scripted import ScriptedLLM
from agents.scorers import DiagnosisScorer
from game.catalogue import test_menu as menu_of  # (not collected as a test)
from game.conformance import check_map
from game.hospital_map import Station, load_map
from game.orders import OrderRouter
from game.resources import default_map_path
from game.world import World, WorldConfig
from tests.helpers import cast_builder, roles

REPO = Path(__file__).resolve().parents[2]
DEXA_MAP = Path(__file__).parent / "maps" / "dexa_hospital.tmx"  # the small hospital plus a DEXA room, in XML only
AGENTCLINIC = Path("/work/shared/data/agentclinic")

# game/orders.py's DEFAULT_RULES and OrderRouter.route before the rooms moved into the map
# (frozen here as the expectation: the shipped map must route as they did)
_OLD_RULES = (
    (("ecg", "electrocardiogram", "ekg", "holter"), "ecg_station", False),
    (("ray", "xray", "radiograph", "film"), "xray_station", False),
    (("ct", "mri", "tomography", "angiogram", "angiography", "scan", "ultrasound", "doppler",
      "echocardiogram", "echo", "transvaginal", "imaging", "mra", "pet"), "ct_station", False),
    (("vital", "signs", "auscultation", "palpation", "inspection", "percussion", "physical",
      "neurological", "reflexes", "examination", "exam", "pressure", "temperature",
      "pulse", "heart", "lung", "abdominal", "skin", "eye", "fundoscopy", "otoscopy"), "bedside", True),
)


def _old_route(test_name):
    words = set(tokens(test_name)) | set(test_name.lower().replace("-", " ").replace("_", " ").split())
    for keys, station, bedside in _OLD_RULES:
        if words & set(keys):
            return station, bedside
    return "lab_station", False


def _keys(d):
    for k, v in d.items():
        yield str(k)
        if isinstance(v, dict):
            yield from _keys(v)


def _names_in(paths):
    names = set()
    for path in paths:
        cases, _ = load_cases(str(path), skip_invalid=True)
        for c in cases:
            names |= set(c.test_names()) | set(_keys(c.tests)) | set(_keys(c.exam))
            names |= {n.replace("_", " ") for n in c.test_names()}  # as the scripted doctor orders them
    return names


SOURCES = ["catalogue", *sorted(p.name for p in (REPO / "agents" / "casesets").glob("*.jsonl")), "agentclinic"]


@pytest.mark.parametrize("source", SOURCES)
def test_the_shipped_hospital_routes_every_known_test_as_the_old_rules_did(source):
    if source == "catalogue":
        names = set(CATALOGUE)
    elif source == "agentclinic":
        files = sorted(AGENTCLINIC.glob("*.jsonl")) if AGENTCLINIC.is_dir() else []
        if not files:
            pytest.skip(f"no AgentClinic case sets in {AGENTCLINIC}")
        names = _names_in(files)
    else:
        names = _names_in([REPO / "agents" / "casesets" / source])
    assert len(names) >= 5
    router = OrderRouter.from_map(load_map(default_map_path()))
    changed = [(n, _old_route(n), (r.station, r.bedside)) for n in sorted(names)
               for r in [router.route(n)] if (r.station, r.bedside) != _old_route(n)]
    assert changed == []
    if source == "catalogue":  # every room and the bedside are exercised, so the comparison means something
        assert {_old_route(n)[0] for n in names} == {"lab_station", "ecg_station", "xray_station", "ct_station",
                                                     "bedside"}


def test_a_router_can_be_built_from_explicit_stations():
    router = OrderRouter((Station("bench", "Bench", default=True),
                          Station("scope", "Scope", ("endoscopy", "colonoscopy"), priority=2),
                          Station("bed", "Bed", ("exam",), priority=1, bedside=True)))
    assert router.route("Upper endoscopy").station == "scope"
    assert router.route("Abdominal exam").bedside
    assert router.route("Serum sodium").station == "bench"
    with pytest.raises(ValueError, match="exactly one default"):
        OrderRouter((Station("a", "A", ("x",), 1),))
    with pytest.raises(ValueError, match="share the priority 1"):
        OrderRouter((Station("a", "A", ("x",), 1, default=True), Station("b", "B", ("y",), 1)))


# -- a new test room, declared in Tiled properties only ------------------------------------

def test_a_room_declared_in_the_map_is_routed_to_and_wins_over_a_more_general_keyword():
    hmap = check_map(DEXA_MAP)
    dexa = hmap.test_station("dexa_station")
    assert dexa is not None and dexa.room == "bone_density" and dexa.machine == "dexa_scanner"
    router = OrderRouter.from_map(hmap)
    assert router.route("DEXA scan").station == "dexa_station"  # CT also serves 'scan'; DEXA's priority is higher
    assert router.route("Bone density scan").station == "dexa_station"  # a two-word keyword
    assert router.route("CT scan").station == "ct_station"
    assert router.route("Bone scan").station == "ct_station"  # 'bone' alone is not 'bone density'
    assert router.route("Complete blood count").station == "lab_station"


def test_the_menu_shows_the_declared_room_with_its_label():
    hmap = check_map(DEXA_MAP)
    menu = menu_of(hmap, catalogue=CATALOGUE + ("DEXA scan",))
    by_label = {g.label: g for g in menu}
    assert by_label["Bone density (DEXA)"].tests == ("DEXA scan",)
    assert by_label["Bone density (DEXA)"].room == "bone_density"
    assert [g.label for g in menu] == ["At the bedside", "Lab", "ECG", "Imaging: X-ray", "Imaging: CT/MRI",
                                       "Bone density (DEXA)"]


def test_the_world_sends_the_patient_to_the_declared_room(tmp_path):
    cases, _ = load_cases("demo")
    case = dataclasses.replace(cases[0], tests={"DEXA scan": {"T-score": "-2.9 at the femoral neck"}, **cases[0].tests})
    llm = ScriptedLLM({case.id: case})
    llms = roles(llm)
    log_path = tmp_path / "dexa.jsonl"
    with EventLog(log_path) as log:
        w = World(check_map(DEXA_MAP), [case], cast_builder(llms), [DiagnosisScorer(llms["judge"])],
                  WorldConfig(doctors=1, patients=1), log=log)
        w.reset(0)
        w.run(dt=0.25, max_sim_s=20000)
    assert w.done
    ev = read_events(log_path)
    i = next(i for i, e in enumerate(ev) if e["type"] == "test_trip" and e["test"] == "DEXA scan")
    assert ev[i]["station"] == "dexa_station" and ev[i]["room"] == "bone_density" and not ev[i]["bedside"]
    station = w.map.point("dexa_station").tile
    walked = [e for e in ev[i:] if e["type"] == "arrived" and e["actor"] != "technician" and e["room"] == "bone_density"]
    assert walked and (walked[0]["x"], walked[0]["y"]) == tuple(station)  # the patient stood at its station
    result = next(e for e in ev[i:] if e["type"] == "test_result")
    assert "-2.9" in json.dumps(result)


# -- a map with a broken property ------------------------------------------------------------

def _broken(tmp_path, old, new):
    text = DEXA_MAP.read_text(encoding="utf-8")
    assert old in text
    p = tmp_path / "broken.tmx"
    p.write_text(text.replace(old, new), encoding="utf-8")
    return p


@pytest.mark.parametrize("old,new,message", [
    ('<property name="priority" type="int" value="50" />', '<property name="priority" value="high" />',
     r"object 'dexa_station' \(id 33\): property 'priority' must be an integer, got 'high'"),
    ('<property name="priority" type="int" value="50" />', '<property name="priority" type="int" value="high" />',
     r"object 'dexa_station' \(id 33\): property 'priority' has type int but the value 'high'"),
    ('<property name="equipment" value="dexa_scanner" />', '<property name="equipment" value="dexa_scaner" />',
     r"object 'dexa_station' \(id 33\): property 'equipment' names 'dexa_scaner', which is no point object"),
    ('<property name="priority" type="int" value="50" />', '<property name="priority" type="int" value="20" />',
     r"object '(dexa|ct)_station' \(id \d+\): property 'priority' is 20, the same as object '(ct|dexa)_station'"),
    ('<property name="label" value="Bone density (DEXA)" />', '<property name="label" value=" " />',
     r"object 'dexa_station' \(id 33\): property 'label' is missing or empty"),
    ('value="dexa, dxa, densitometry, bone density"', 'value="dexa; scan"',
     r"object 'dexa_station' \(id 33\): property 'tests': keyword 'dexa; scan' has characters"),
    ('value="dexa, dxa, densitometry, bone density"', 'value="dexa, bone density, ct"',
     r"object 'ct_station' \(id \d+\): property 'tests': the keyword 'ct' can never send a test here: "
     r"'dexa_station' matches it too"),
    ('<property name="label" value="Bone density (DEXA)" />',
     '<property name="default" type="bool" value="true" /><property name="label" value="Bone density (DEXA)" />',
     r"property 'default' is true on object 'lab_station' \(id \d+\) and on object 'dexa_station' \(id 33\)"),
    ('<property name="label" value="Bone density (DEXA)" />',
     '<property name="default" value="maybe" /><property name="label" value="Bone density (DEXA)" />',
     r"object 'dexa_station' \(id 33\): property 'default' must be true or false, got 'maybe'"),
    ('<property name="address" value="hospital:imaging:dexa" />',
     '<property name="address" value="hospital:imaging:dexa" /><property name="tests" value="dexa" />',
     r"room object 'bone_density' \(id 13\) has the property 'tests': a test room is declared on its station"),
    ('<property name="bedside_priority" type="int" value="10" />', '',
     r"the map itself: property 'bedside_priority' is missing"),
])
def test_a_broken_property_fails_check_map_naming_object_and_property(tmp_path, old, new, message):
    from game.hospital_map import MapError

    with pytest.raises(MapError, match=message):
        check_map(_broken(tmp_path, old, new))
