"""The hospital's test menu: the catalogue (``agents.catalogue``) grouped by the room that
does each test, from the map and the order routing. A person orders from it, in the game
and in the terminal."""
from __future__ import annotations

from dataclasses import dataclass

from agents.catalogue import CATALOGUE
from game.hospital_map import HospitalMap
from game.orders import OrderRouter

__all__ = ["CATALOGUE", "MenuGroup", "test_menu"]


@dataclass(frozen=True)
class MenuGroup:
    room: str  # the room's name on the map, or "bedside"
    label: str  # what a person reads
    tests: tuple[str, ...]


def test_menu(hmap: HospitalMap, router: OrderRouter = OrderRouter(),
              catalogue: tuple[str, ...] = CATALOGUE) -> list[MenuGroup]:
    """The catalogue grouped by where each test is done: the bedside first, then rooms
    in the order the map lists their stations. A station the map lacks is an error of
    the map (``HospitalMap.point`` names it)."""
    groups: dict[str, list[str]] = {}
    for test in catalogue:
        route = router.route(test)
        room = "bedside" if route.bedside else (hmap.point(route.station).room or route.station)
        groups.setdefault(room, []).append(test)
    order = ["bedside"] + [r for r in groups if r != "bedside"]
    out = []
    for room in order:
        if room in groups:
            label = "At the bedside" if room == "bedside" else room.replace("_", " ").replace("imaging ", "imaging: ").title()
            out.append(MenuGroup(room, label.replace("Ecg", "ECG").replace("Ct Mri", "CT/MRI").replace("Xray", "X-ray"),
                                 tuple(groups[room])))
    return out
