"""``game.conformance.check_map`` over every map there is (the shipped hospital, the
test maps), and what it catches beyond ``load_map``."""
from pathlib import Path

import pytest

from agents.catalogue import CATALOGUE
from game.conformance import check_map, map_problems
from game.hospital_map import MapError
from game.orders import OrderRouter
from tests.game.tmx import SMALL_BEDSIDE, SMALL_POINTS, SMALL_ROOMS, SMALL_ROWS, SMALL_STATIONS, small_hospital, write_tmx

REPO = Path(__file__).resolve().parents[2]
MAPS = sorted((REPO / "maps").glob("*.tmx")) + sorted((REPO / "tests").rglob("*.tmx"))


def test_there_are_maps_to_check():
    assert REPO / "maps" / "hospital.tmx" in MAPS and any("tests" in p.parts for p in MAPS)


@pytest.mark.parametrize("path", MAPS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_map_in_the_repository_is_fit_for_the_world(path):
    assert map_problems(path) == []
    hmap = check_map(path)
    router = OrderRouter.from_map(hmap)
    for test in CATALOGUE:  # every catalogue test goes to a station of this map
        route = router.route(test)
        assert route.bedside or hmap.point(route.station).room, test


def test_the_tests_small_hospital_is_fit_for_the_world(tmp_path):
    assert map_problems(small_hospital(tmp_path)) == []


def _small(tmp_path, *, points=None, stations=None, rooms=None):
    pts = dict(SMALL_POINTS, **(points or {}))
    decl = dict(SMALL_STATIONS, **(stations or {}))
    pts = {n: (*pt, decl[n]) if n in decl and len(pt) == 3 else pt for n, pt in pts.items()}
    return write_tmx(tmp_path / "m.tmx", SMALL_ROWS, dict(SMALL_ROOMS, **(rooms or {})), pts, SMALL_BEDSIDE)


def test_what_the_world_itself_needs_is_checked(tmp_path):
    pts = dict(SMALL_POINTS)
    pts.pop("technician_spawn")
    p = write_tmx(tmp_path / "m.tmx", SMALL_ROWS, SMALL_ROOMS,
                  {n: (*pt, SMALL_STATIONS[n]) if n in SMALL_STATIONS else pt for n, pt in pts.items()}, SMALL_BEDSIDE)
    with pytest.raises(MapError, match="no point object named 'technician_spawn'"):
        check_map(p)


def test_a_station_outside_any_room_and_a_missing_machine_are_both_reported(tmp_path):
    # a station on the corridor's end cell (1, 2) lies in no room; the ECG names a machine that is not there
    p = _small(tmp_path, points={"hall_station": ("station", 1, 2)},
               stations={"hall_station": {"label": "Hall", "priority": 5, "tests": "hall"},
                         "ecg_station": dict(SMALL_STATIONS["ecg_station"], equipment="ecg_machine")})
    problems = sorted(map_problems(p))
    assert len(problems) == 2, problems
    assert "object 'ecg_station'" in problems[0] and "property 'equipment' names 'ecg_machine'" in problems[0]
    assert "object 'hall_station'" in problems[1] and "lies in no room" in problems[1]
    with pytest.raises(MapError, match=r"\(2 problems\)"):
        check_map(p)


def test_a_test_station_on_a_wall_is_not_reachable(tmp_path):
    p = _small(tmp_path, points={"ecg_station": ("station", 18, 2)})  # row 2, x 18 is a wall
    with pytest.raises(MapError, match=r"point 'ecg_station' at \(18, 2\) cannot be reached from the entrance"):
        check_map(p)
