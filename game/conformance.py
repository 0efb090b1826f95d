"""Is a map fit for the world? ``check_map(path)`` answers in one line, for every map
(the shipped hospital, a map made in Tiled, the tests' maps), as PettingZoo's
``api_test`` checks an environment.

It checks what :func:`game.hospital_map.load_map` checks (required rooms, the entrance
spawn, everything reachable on foot, the test stations' declared properties), what the
world itself asks of a map (its own check, run by ``World``'s constructor: the staff
spawn points, the reception desk, the records station, consultation seats, every
station the routing can send a patient to), and what the test rooms need: each
declared station lies in a room (``load_map`` has checked that it is a walkable cell
reachable from the entrance); its ``equipment`` names an equipment object; and every
keyword can win a test. Every test
of the catalogue (``agents.catalogue.CATALOGUE``), and every other test name, routes to a
station of the map: ``load_map`` requires exactly one default station, which takes what
no keyword matches.
"""
from __future__ import annotations

from pathlib import Path

from agents.cases.model import Case
from game.hospital_map import HospitalMap, MapError, load_map
from game.orders import OrderRouter
from game.world import World, WorldConfig

__all__ = ["check_map", "map_problems"]


def _world_problems(hmap: HospitalMap) -> list[str]:
    """What the world's own map check says (so this stays what the world needs)."""
    probe = Case(id="check_map", objective="", demographics="", patient={}, exam={}, tests={}, diagnosis="",
                 source="game.conformance")
    try:
        World(hmap, [probe], lambda case, sink: {}, (), WorldConfig(doctors=1, patients=1))
    except MapError as e:
        return [str(e)]
    return []


def _station_problems(hmap: HospitalMap) -> list[str]:
    out: list[str] = []
    router = OrderRouter.from_map(hmap)
    for st in hmap.test_stations:
        where = f"{hmap.path}: {st.declared}"
        if not st.bedside:
            pt = hmap.points[st.name]
            if pt.room is None:
                out.append(f"{where}: the station lies in no room object (the test menu and the patient's trip "
                           "name its room)")
            if st.machine is not None:
                machine = hmap.points.get(st.machine)
                if machine is None or machine.kind != "equipment":
                    out.append(f"{where}: property 'equipment' names '{st.machine}', which is no point object "
                               "of type 'equipment' (the machine the view animates)")
        for kw in st.keywords:
            won = router.route(kw).station
            if won != st.name:
                key = "bedside_tests" if st.bedside else "tests"
                out.append(f"{where}: property '{key}': the keyword '{kw}' can never send a test here: "
                           f"'{won}' matches it too and has the higher priority")
    return out


def map_problems(path: str | Path) -> list[str]:
    """Everything wrong with the map at ``path`` (a Tiled ``.tmx`` file) for the world,
    one message each, naming the file, the object and the property; empty when it is
    fit. A map that does not load gives the one problem ``load_map`` found."""
    try:
        hmap = load_map(path)
    except MapError as e:
        return [str(e)]
    return _world_problems(hmap) + _station_problems(hmap)


def check_map(path: str | Path) -> HospitalMap:
    """The map at ``path``, checked as :func:`map_problems` checks it.

    Returns:
        The loaded map.

    Raises:
        MapError: listing every problem found.
    """
    problems = map_problems(path)
    if problems:
        raise MapError(f"{path}: the map is not fit for the world ({len(problems)} problem"
                       f"{'s' if len(problems) > 1 else ''}):\n  " + "\n  ".join(problems))
    return load_map(path)
