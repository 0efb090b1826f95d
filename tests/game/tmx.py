"""Builds small Tiled maps for tests: a grid of characters and named rectangles/points."""
from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

TILE = 16
_TSX = """<tileset name="t" tilewidth="16" tileheight="16" tilecount="2" columns="2">
  <image source="none.png" width="32" height="16"/>
  <tile id="1"><properties><property name="collides" type="bool" value="true"/></properties></tile>
 </tileset>"""


def _props(props: dict[str, object]) -> str:
    """Custom properties as Tiled writes them (bool, int or string)."""
    if not props:
        return ""
    out = []
    for k, v in props.items():
        if isinstance(v, bool):
            out.append(f'<property name="{k}" type="bool" value="{"true" if v else "false"}"/>')
        elif isinstance(v, int):
            out.append(f'<property name="{k}" type="int" value="{v}"/>')
        else:
            out.append(f'<property name="{k}" value="{escape(str(v), {chr(34): "&quot;"})}"/>')
    return "<properties>" + "".join(out) + "</properties>"


def write_tmx(path: Path, rows: list[str], rooms: dict[str, tuple[int, int, int, int]],
              points: dict[str, tuple], map_properties: dict[str, object] | None = None) -> Path:
    """rows: '.' floor, '#' wall, ' ' nothing. rooms: name -> (x, y, w, h) in cells.
    points: name -> (kind, x, y) or (kind, x, y, properties) in cells; map_properties:
    the map's own custom properties."""
    h, w = len(rows), max(len(r) for r in rows)
    floor, walls = [], []
    for r in rows:
        r = r.ljust(w)
        floor.append(",".join("1" if c in ".#" else "0" for c in r))
        walls.append(",".join("2" if c == "#" else "0" for c in r))
    objs, oid = [], 1
    for name, (x, y, rw, rh) in rooms.items():
        objs.append(f'<object id="{oid}" name="{name}" type="room" x="{x*TILE}" y="{y*TILE}" width="{rw*TILE}" height="{rh*TILE}">'
                    f'<properties><property name="address" value="hospital:{name.replace("_", ":")}"/></properties></object>')
        oid += 1
    pts = []
    for name, (kind, x, y, *props) in points.items():
        pts.append(f'<object id="{oid}" name="{name}" type="{kind}" x="{x*TILE + 8}" y="{y*TILE + 8}">'
                   f'{_props(props[0] if props else {})}<point/></object>')
        oid += 1
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<map version="1.10" tiledversion="1.10.2" orientation="orthogonal" renderorder="right-down" width="{w}" height="{h}" tilewidth="{TILE}" tileheight="{TILE}" infinite="0" nextlayerid="5" nextobjectid="{oid}">
 {_props(map_properties or {})}
 <tileset firstgid="1" {_TSX[len('<tileset '):]}
 <layer id="1" name="floor" width="{w}" height="{h}"><data encoding="csv">
{(","+chr(10)).join(floor)}
</data></layer>
 <layer id="2" name="walls" width="{w}" height="{h}"><data encoding="csv">
{(","+chr(10)).join(walls)}
</data></layer>
 <objectgroup id="3" name="rooms">{''.join(objs)}</objectgroup>
 <objectgroup id="4" name="points">{''.join(pts)}</objectgroup>
</map>
"""
    path.write_text(xml, encoding="utf-8")
    return path


# A small complete hospital: every required room, a corridor along row 1.
SMALL_ROWS = [
    "##########################",
    "#........................#",
    "#.#.###.###.###.###.###..#",
    "#.#...#...#...#...#......#",
    "#.#...#...#...#...#......#",
    "##########################",
]


SMALL_ROOMS = {
    "entrance": (1, 1, 1, 1), "corridor_main": (2, 1, 23, 1),
    "reception": (1, 3, 1, 2), "waiting": (3, 3, 3, 2), "consult_1": (7, 3, 3, 2), "consult_2": (11, 3, 3, 2),
    "lab": (15, 3, 3, 2), "ecg": (19, 3, 1, 2), "imaging_xray": (20, 3, 1, 2), "imaging_ct_mri": (21, 3, 1, 2),
    "conference": (22, 3, 1, 2), "records": (23, 3, 2, 2),
}
SMALL_POINTS = {
    "entrance_spawn": ("spawn", 1, 1), "entrance_exit": ("exit", 1, 1), "reception_desk": ("station", 1, 4),
    "waiting_1": ("seat", 3, 3), "waiting_2": ("seat", 4, 3), "waiting_3": ("seat", 5, 4),
    "consult_1_doctor": ("seat", 7, 3), "consult_1_patient": ("seat", 8, 4),
    "consult_2_doctor": ("seat", 11, 3), "consult_2_patient": ("seat", 12, 4),
    "lab_station": ("station", 15, 4), "technician_spawn": ("spawn", 16, 3),
    "ecg_station": ("station", 19, 4), "xray_station": ("station", 20, 4), "ct_station": ("station", 21, 4),
    "doctor_spawn_1": ("spawn", 22, 3), "doctor_spawn_2": ("spawn", 22, 4), "records_station": ("station", 24, 4),
}

# The test rooms, declared as the shipped map declares them (maps/hospital.tmx): Tiled
# properties on the station points, and the bedside rule on the map itself.
SMALL_STATIONS = {
    "lab_station": {"label": "Lab", "default": True},
    "ecg_station": {"label": "ECG", "priority": 40, "tests": "ecg, electrocardiogram, ekg, holter"},
    "xray_station": {"label": "Imaging: X-ray", "priority": 30, "tests": "ray, xray, radiograph, film"},
    "ct_station": {"label": "Imaging: CT/MRI", "priority": 20,
                   "tests": "ct, mri, tomography, angiogram, angiography, scan, ultrasound, doppler, "
                            "echocardiogram, echo, transvaginal, imaging, mra, pet"},
}
SMALL_BEDSIDE = {
    "bedside_label": "At the bedside", "bedside_priority": 10,
    "bedside_tests": "vital, signs, auscultation, palpation, inspection, percussion, physical, neurological, "
                     "reflexes, examination, exam, pressure, temperature, pulse, heart, lung, abdominal, skin, "
                     "eye, fundoscopy, otoscopy",
}


def small_hospital(tmp: Path, *, drop_room: str | None = None, wall_off: str | None = None) -> Path:
    rows = list(SMALL_ROWS)
    rooms, points = dict(SMALL_ROOMS), dict(SMALL_POINTS)
    if drop_room:
        rooms.pop(drop_room)
    if wall_off:
        x, y, w, h = rooms[wall_off]
        for yy in range(y, y + h):
            rows[yy] = rows[yy][:x] + "#" * w + rows[yy][x + w:]
        for name, (k, px, py) in list(points.items()):
            if x <= px < x + w and y <= py < y + h:
                points.pop(name)
    points = {n: (*pt, SMALL_STATIONS[n]) if n in SMALL_STATIONS else pt for n, pt in points.items()}
    return write_tmx(tmp / "small.tmx", rows, rooms, points, SMALL_BEDSIDE)
