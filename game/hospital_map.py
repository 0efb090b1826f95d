"""The hospital map as domain data, converted once from a Tiled ``.tmx`` file.

Only :class:`pytmx.TiledMap` is used (no images, no pygame), so the core and the tests
need no display. Conventions (see ``maps/hospital.tmx`` and ``maps/README.md``):

- tile layers; a tile whose tileset property ``collides`` is true blocks its cell;
  a cell is walkable when some layer has a tile there and none of them collides;
- object group of rectangles with type/class ``room``, a name and an ``address``
  property (``hospital:imaging:xray``); names contain the words in ``REQUIRED_ROOMS``;
- point objects with type/class ``spawn``, ``exit``, ``seat``, ``station`` or
  ``equipment`` and a name (``entrance_spawn``, ``consult_1_doctor``, ``lab_station``...).

Test rooms are declared in the map, not in code. A **test station** is a ``station``
point object with these custom properties (the room it lies in is its test room):

- ``tests`` (string): the order keywords it serves, comma-separated (``ecg, ekg, holter``).
  A keyword matches a test whose name has that word (``Chest X-ray`` has ``x``, ``ray``
  and ``xray``); a keyword of several words (``bone density``) needs all of them.
- ``label`` (string): what a person reads in the test menu (``ECG``, ``Imaging: X-ray``).
- ``priority`` (int): when a test's words match several stations, the highest priority
  wins (a ``DEXA scan`` room above CT's ``scan``); every station with ``tests`` has one,
  and no two share one, so routing never depends on the order of objects in the file.
- ``default`` (bool): the one station where a test no keyword matches goes (the lab).
- ``equipment`` (string, optional): the name of the ``equipment`` point object (the
  machine) that the view animates while a test is done there.

The bedside rule (examinations done where the patient sits, the technician walking to
the consultation room) is declared once for the whole hospital, as *map* properties
``bedside_tests``, ``bedside_label`` and ``bedside_priority`` with the meanings above:
every consultation room examines alike, so one declaration has no copies to keep in
step. A bad value raises :class:`MapError` naming the object and the property.
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from game.geometry import Rect, Tile

__all__ = ["Room", "Point", "Station", "HospitalMap", "MapError", "load_map", "REQUIRED_ROOMS",
           "STATION_PROPERTIES", "BEDSIDE", "parse_keywords"]

# the rooms every hospital has; its test rooms are whatever the map declares (a map
# without an ECG room sends ECGs to its default station)
REQUIRED_ROOMS = ("reception", "waiting", "consult", "conference", "records")
# the custom properties that make a station point a test station
STATION_PROPERTIES = ("tests", "label", "priority", "default")
BEDSIDE = "bedside"  # the station name of the bedside rule
_BEDSIDE_PROPERTIES = ("bedside_tests", "bedside_label", "bedside_priority")


class MapError(ValueError):
    pass


@dataclass(frozen=True)
class Room:
    name: str
    address: str
    rect: Rect


@dataclass(frozen=True)
class Point:
    name: str
    kind: str
    tile: Tile
    room: str | None


@dataclass(frozen=True)
class Station:
    """Where ordered tests are done: a test station declared in the map (its point
    object's custom properties), or the bedside (the map's ``bedside_*`` properties).

    ``name`` is the station point's name (``ecg_station``), or ``"bedside"``;
    ``keywords`` are normalised (lower case, single spaces); ``machine`` is the
    equipment point the view animates; ``room`` the room the station lies in;
    ``declared`` says where the declaration is, for messages."""

    name: str
    label: str
    keywords: tuple[str, ...] = ()
    priority: int = 0
    default: bool = False
    machine: str | None = None
    room: str | None = None
    bedside: bool = False
    declared: str = ""


@dataclass
class HospitalMap:
    path: str
    width: int
    height: int
    tile_size: int
    walkable_cells: frozenset[Tile]
    rooms: dict[str, Room]
    points: dict[str, Point]
    # the declared test stations: the bedside rule (when the map has one) first, then
    # the station points in the map's order
    test_stations: tuple[Station, ...] = ()
    _room_of: dict[Tile, str] = field(default_factory=dict, repr=False)

    def walkable(self, t: Tile) -> bool:
        return t in self.walkable_cells

    def room_at(self, t: Tile) -> Room | None:
        name = self._room_of.get(t)
        return self.rooms.get(name) if name else None

    def rooms_like(self, word: str) -> list[Room]:
        return [r for n, r in sorted(self.rooms.items()) if word in n]

    def points_like(self, prefix: str) -> list[Point]:
        return [p for n, p in sorted(self.points.items()) if n.startswith(prefix)]

    def point(self, name: str) -> Point:
        try:
            return self.points[name]
        except KeyError:
            raise MapError(f"{self.path}: no point object named '{name}'") from None

    def test_station(self, name: str) -> Station | None:
        """The declared test station of that name (``"bedside"`` for the bedside rule)."""
        return next((s for s in self.test_stations if s.name == name), None)

    def reachable_from(self, start: Tile) -> set[Tile]:
        seen = {start}
        q = deque([start])
        while q:
            cur = q.popleft()
            for nb in cur.neighbours4():
                if nb not in seen and nb in self.walkable_cells:
                    seen.add(nb)
                    q.append(nb)
        return seen


def _kind(obj: object) -> str:
    return str(getattr(obj, "type", None) or getattr(obj, "class", None) or getattr(obj, "class_", None) or "").lower()


def _import_pytmx():  # type: ignore[no-untyped-def]
    """Import pytmx without letting it import pygame: its ``__init__`` tries
    ``pytmx.util_pygame`` and so pulls pygame (and SDL) into any process that parses a
    map. Marking pygame unimportable for that one import keeps the core pygame-free; the
    view imports ``pytmx.util_pygame.load_pygame`` itself."""
    import sys

    if "pytmx" in sys.modules or "pygame" in sys.modules:
        import pytmx

        return pytmx
    import logging

    quiet = [logging.getLogger(n) for n in ("pytmx", "pytmx.util_pygame", "pytmx.util_pygame_sdl2")]
    levels = [lg.level for lg in quiet]
    sys.modules["pygame"] = None  # type: ignore[assignment]
    try:
        for lg in quiet:
            lg.setLevel(logging.CRITICAL)  # it logs "cannot import pygame" as an error
        import pytmx
    finally:
        del sys.modules["pygame"]
        for lg, lv in zip(quiet, levels):
            lg.setLevel(lv)
        # forget the half-imported pygame helpers so the view can import them for real
        for mod in ("pytmx.util_pygame", "pytmx.util_pygame_sdl2"):
            sys.modules.pop(mod, None)
    return pytmx


def parse_keywords(text: str) -> tuple[str, ...]:
    """The keywords of a ``tests`` property: ``"ECG, ekg,  Holter"`` -> ``("ecg", "ekg",
    "holter")``. Comma- or newline-separated; lower case; hyphens and underscores read as
    spaces (``x-ray`` is the two words ``x ray``); repeats dropped.

    Raises:
        ValueError: a keyword has characters other than letters, digits, spaces, hyphens.
    """
    out: list[str] = []
    for part in re.split(r"[,\n]", text):
        kw = " ".join(part.lower().replace("-", " ").replace("_", " ").split())
        if not kw:
            continue
        if not re.fullmatch(r"[^\W_]+( [^\W_]+)*", kw):
            raise ValueError(f"keyword '{part.strip()}' has characters other than letters, digits, spaces and hyphens")
        if kw not in out:
            out.append(kw)
    return tuple(out)


def _as_int(where: str, key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    raise MapError(f"{where}: property '{key}' must be an integer, got {value!r}")


def _as_bool(where: str, key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise MapError(f"{where}: property '{key}' must be true or false, got {value!r}")


def _declared_station(where: str, props: dict[str, Any], keys: tuple[str, str, str, str | None]
                      ) -> tuple[tuple[str, ...], str, int, bool]:
    """Read one station's declaration: ``keys`` names its tests, label, priority and
    default properties (``None``: it cannot be the default). Returns ``(keywords, label,
    priority, default)``; a bad value raises :class:`MapError` naming ``where`` and the
    property."""
    k_tests, k_label, k_priority, k_default = keys
    raw = props.get(k_tests, "")
    if not isinstance(raw, str):
        raise MapError(f"{where}: property '{k_tests}' must be a string of comma-separated keywords, got {raw!r}")
    try:
        keywords = parse_keywords(raw)
    except ValueError as e:
        raise MapError(f"{where}: property '{k_tests}': {e}") from None
    label = props.get(k_label)
    if not isinstance(label, str) or not label.strip():
        raise MapError(f"{where}: property '{k_label}' is missing or empty (the test menu shows it)")
    default = _as_bool(where, k_default, props[k_default]) if k_default and k_default in props else False
    if not keywords and not default:
        raise MapError(f"{where}: property '{k_tests}' lists no keyword"
                       + (f" and '{k_default}' is not true" if k_default else "") + ": no test would go there")
    if k_priority in props:
        priority = _as_int(where, k_priority, props[k_priority])
    elif keywords:
        raise MapError(f"{where}: property '{k_priority}' is missing: a station with '{k_tests}' needs an integer "
                       "priority (where a test matches several stations, the highest priority wins)")
    else:
        priority = 0
    return keywords, label.strip(), priority, default


def _check_stations(p: Path, stations: list[Station]) -> None:
    """One default station; distinct priorities among the stations with keywords."""
    defaults = [s for s in stations if s.default]
    if not defaults:
        raise MapError(f"{p}: no station point has the property 'default' = true (where a test that no "
                       "station's 'tests' keywords match goes, the lab in the shipped hospital)")
    if len(defaults) > 1:
        raise MapError(f"{p}: property 'default' is true on {defaults[0].declared} and on {defaults[1].declared}: "
                       "exactly one station takes the tests no keyword matches")
    names: dict[str, Station] = {}
    for st in stations:
        first = names.setdefault(st.name, st)
        if first is not st:
            raise MapError(f"{p}: {st.declared} and {first.declared} are both the test station '{st.name}'"
                           + (" ('bedside' is the name of the bedside rule)" if st.name == BEDSIDE else ""))
    seen: dict[int, Station] = {}
    for st in stations:
        if not st.keywords:
            continue
        other = seen.setdefault(st.priority, st)
        if other is not st:
            raise MapError(f"{p}: {st.declared}: property '{_priority_key(st)}' is {st.priority}, the same as "
                           f"{other.declared}'s: give each test station its own priority (where a test matches "
                           "both, the higher one wins)")


def _priority_key(st: Station) -> str:
    return "bedside_priority" if st.bedside else "priority"


def _bad_typed_property(p: Path) -> str | None:
    """Where pytmx failed on a typed property (``type="int" value="high"``): the owner
    and the property, or ``None`` when no typed value is at fault."""
    import xml.etree.ElementTree as ET

    from pytmx.pytmx import prop_type

    try:
        root = ET.parse(p).getroot()
    except (ET.ParseError, OSError):
        return None
    for el in root.iter():
        props = el.find("properties")
        if props is None:
            continue
        for prop in props.findall("property"):
            typ, value = prop.get("type", "string"), prop.get("value")
            if typ not in ("int", "float", "bool") or value is None:
                continue
            try:
                prop_type[typ](value)
            except ValueError:
                owner = (f"object '{el.get('name', '')}' (id {el.get('id')})" if el.tag == "object"
                         else "the map itself" if el.tag == "map" else f"{el.tag} {el.get('name') or el.get('id')}")
                return f"{owner}: property '{prop.get('name')}' has type {typ} but the value {value!r}"
    return None


def load_map(path: str | Path, *, required: tuple[str, ...] = REQUIRED_ROOMS) -> HospitalMap:
    """Parse and validate a hospital map, with its declared test stations.

    Raises:
        MapError: a missing required room or entrance spawn, a room or point that cannot
            be reached from the entrance, or a bad test-station declaration (a property's
            value, no default or two, two stations with one priority), naming the object
            and the property. ``game.conformance.check_map`` checks the rest of what the
            world needs.
    """
    pytmx = _import_pytmx()

    p = Path(path)
    if not p.is_file():
        raise MapError(f"map file not found: {p}")
    try:
        tmx = pytmx.TiledMap(str(p))
    except Exception as e:  # noqa: BLE001 - pytmx raises many types for a broken file
        typed = _bad_typed_property(p) if isinstance(e, ValueError) else None
        if typed:
            raise MapError(f"{p}: {typed}") from e
        raise MapError(f"{p}: cannot parse the map: {type(e).__name__}: {e}") from e
    if tmx.tilewidth != tmx.tileheight:
        raise MapError(f"{p}: tiles must be square, got {tmx.tilewidth}x{tmx.tileheight}")
    ts = tmx.tilewidth
    has_tile: set[Tile] = set()
    blocked: set[Tile] = set()
    for layer in tmx.layers:
        if not isinstance(layer, pytmx.TiledTileLayer):
            continue
        for x, y, gid in layer.iter_data():
            if not gid:
                continue
            t = Tile(x, y)
            has_tile.add(t)
            props = tmx.get_tile_properties_by_gid(gid) or {}
            if str(props.get("collides", "false")).lower() in ("true", "1"):
                blocked.add(t)
    walkable = frozenset(has_tile - blocked)
    rooms: dict[str, Room] = {}
    raw_points = []
    raw_stations: list[tuple[str, str, dict[str, Any]]] = []  # (name, where, properties)
    for group in tmx.objectgroups:
        for obj in group:
            kind = _kind(obj)
            name = (obj.name or "").strip()
            declares = [k for k in STATION_PROPERTIES if k in obj.properties]
            if declares and kind != "station":
                raise MapError(f"{p}: {kind or 'an'} object '{name}' (id {obj.id}) has the property '{declares[0]}': "
                               "a test room is declared on its station point object (type 'station'), not here")
            if declares and not name:
                raise MapError(f"{p}: a station object (id {obj.id}) declares '{declares[0]}' but has no name")
            if declares:
                raw_stations.append((name, f"object '{name}' (id {obj.id})", dict(obj.properties)))
            if kind == "room":
                if not name:
                    raise MapError(f"{p}: a room object (id {obj.id}) has no name")
                r = Rect(int(obj.x // ts), int(obj.y // ts),
                         int(-(-(obj.x + obj.width) // ts)), int(-(-(obj.y + obj.height) // ts)))
                address = str(obj.properties.get("address") or f"hospital:{name}")
                rooms[name] = Room(name, address, r)
            elif kind in ("spawn", "exit", "seat", "station", "equipment") and name:
                raw_points.append((name, kind, Tile(int(obj.x // ts), int(obj.y // ts))))
    room_of: dict[Tile, str] = {}
    # smaller rooms win where rectangles overlap (a room inside a corridor's bounds)
    for room in sorted(rooms.values(), key=lambda r: -(r.rect.x1 - r.rect.x0) * (r.rect.y1 - r.rect.y0)):
        for c in room.rect.cells():
            room_of[c] = room.name
    points = {n: Point(n, k, t, room_of.get(t)) for n, k, t in raw_points}
    hm = HospitalMap(str(p), tmx.width, tmx.height, ts, walkable, rooms, points, _room_of=room_of)
    for word in required:
        if not hm.rooms_like(word):
            raise MapError(f"{p}: required room '{word}' is missing (no room object whose name contains '{word}')")
    spawn = points.get("entrance_spawn")
    if spawn is None:
        raise MapError(f"{p}: no point object named 'entrance_spawn' (where patients arrive)")
    if not hm.walkable(spawn.tile):
        raise MapError(f"{p}: 'entrance_spawn' at {tuple(spawn.tile)} is not on a walkable cell")
    reach = hm.reachable_from(spawn.tile)
    for room in rooms.values():
        if not any(c in reach for c in room.rect.cells()):
            raise MapError(f"{p}: room '{room.name}' ({room.address}) cannot be reached from the entrance")
    for pt in points.values():
        if pt.kind != "equipment" and pt.tile not in reach:
            raise MapError(f"{p}: point '{pt.name}' at {tuple(pt.tile)} cannot be reached from the entrance")
    stations: list[Station] = []
    map_props = dict(tmx.properties or {})
    if any(k in map_props for k in _BEDSIDE_PROPERTIES):
        keywords, label, priority, _ = _declared_station(f"{p}: the map itself", map_props,
                                                         (*_BEDSIDE_PROPERTIES, None))
        stations.append(Station(BEDSIDE, label, keywords, priority, bedside=True,
                                declared="the map's 'bedside_*' properties"))
    for name, where, props in raw_stations:
        keywords, label, priority, default = _declared_station(f"{p}: {where}", props,
                                                               ("tests", "label", "priority", "default"))
        machine = props.get("equipment")
        stations.append(Station(name, label, keywords, priority, default,
                                machine=str(machine).strip() if machine else None,
                                room=points[name].room, declared=where))
    _check_stations(p, stations)
    hm.test_stations = tuple(stations)
    return hm
