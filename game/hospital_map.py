"""The hospital map as domain data, converted once from a Tiled ``.tmx`` file.

Only :class:`pytmx.TiledMap` is used (no images, no pygame), so the core and the tests
need no display. Conventions (see ``maps/hospital.tmx``):

- tile layers; a tile whose tileset property ``collides`` is true blocks its cell;
  a cell is walkable when some layer has a tile there and none of them collides;
- object group of rectangles with type/class ``room``, a name and an ``address``
  property (``hospital:imaging:xray``); names contain the words in ``REQUIRED_ROOMS``;
- point objects with type/class ``spawn``, ``exit``, ``seat``, ``station`` or
  ``equipment`` and a name (``entrance_spawn``, ``consult_1_doctor``, ``lab_station``...).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from game.geometry import Rect, Tile

__all__ = ["Room", "Point", "HospitalMap", "MapError", "load_map", "REQUIRED_ROOMS"]

REQUIRED_ROOMS = ("reception", "waiting", "consult", "lab", "ecg", "imaging", "conference", "records")


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


@dataclass
class HospitalMap:
    path: str
    width: int
    height: int
    tile_size: int
    walkable_cells: frozenset[Tile]
    rooms: dict[str, Room]
    points: dict[str, Point]
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


def load_map(path: str | Path, *, required: tuple[str, ...] = REQUIRED_ROOMS) -> HospitalMap:
    """Parse and validate a hospital map. A missing required room, a missing entrance
    spawn, or a room or point that cannot be reached from the entrance raises
    :class:`MapError` naming it."""
    pytmx = _import_pytmx()

    p = Path(path)
    if not p.is_file():
        raise MapError(f"map file not found: {p}")
    try:
        tmx = pytmx.TiledMap(str(p))
    except Exception as e:  # noqa: BLE001 - pytmx raises many types for a broken file
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
    for group in tmx.objectgroups:
        for obj in group:
            kind = _kind(obj)
            name = (obj.name or "").strip()
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
    hm = HospitalMap(str(p), tmx.width, tmx.height, ts, walkable, rooms, points, room_of)
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
    return hm
