"""The hospital's test menu: the catalogue (``agents.catalogue``) grouped by the station
that does each test, with the labels the map declares (``game.hospital_map``). A person
orders from it, in the game and in the terminal."""
from __future__ import annotations

from dataclasses import dataclass

from agents.catalogue import CATALOGUE
from game.hospital_map import HospitalMap
from game.orders import OrderRouter

__all__ = ["CATALOGUE", "MenuGroup", "test_menu"]


@dataclass(frozen=True)
class MenuGroup:
    room: str  # the room's name on the map, or "bedside"
    label: str  # what a person reads: the station's declared label
    tests: tuple[str, ...]


def test_menu(hmap: HospitalMap, router: OrderRouter | None = None,
              catalogue: tuple[str, ...] = CATALOGUE) -> list[MenuGroup]:
    """The catalogue grouped by where each test is done: the bedside first, then the
    stations in the order their first test comes in the catalogue.

    Args:
        hmap: the map; its declared test stations give the rooms and labels.
        router: the routing (default: the map's own, ``OrderRouter.from_map``).
        catalogue: the tests to group.
    """
    router = router or OrderRouter.from_map(hmap)
    groups: dict[str, list[str]] = {}
    for test in catalogue:
        groups.setdefault(router.route(test).station, []).append(test)
    order = sorted(groups, key=lambda name: not router.station(name).bedside)  # stable: catalogue order otherwise
    out = []
    for name in order:
        st = router.station(name)
        # a station the map lacks is an error of the map (HospitalMap.point names it)
        room = "bedside" if st.bedside else (hmap.point(name).room or name)
        out.append(MenuGroup(room, st.label, tuple(groups[name])))
    return out
