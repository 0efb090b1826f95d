#!/usr/bin/env python3
"""Draw every medsim art asset, deterministically, with code.

    .venv/bin/python assets/generate.py [--out DIR] [--write-map [--force]]

writes (under DIR, the repository by default)
    assets/tiles/hospital_tiles.png     32x32 tiles, 8 per row
    assets/sprites/*.png                character sheets (3 walk frames x 4 directions)
    maps/hospital.tsx                   Tiled 1.10 external tileset (collides / kind / name)
    assets/README.md                    the asset guide, with the tile id table and the
                                        rooms and points read from maps/hospital.tmx

The map, ``maps/hospital.tmx``, is the one source of the hospital's layout: it is edited in
Tiled and this script does not write it. ``--write-map`` draws the original layout
(``build_map()``) into it, and refuses to replace an existing map unless ``--force`` is
given too. Tile ids are positions in the tileset, and the map refers to tiles by id, so
new tiles are appended at the end of ``build_tiles()``; the script refuses to renumber
the tileset the map uses.

Everything is drawn here with pygame primitives and per-pixel code from a small fixed
palette; no third-party art. There is no randomness: texture "noise" is a fixed integer
hash of the pixel position, so every run writes byte-identical files.
"""
from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
import pygame  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
T = 32          # tile size in px
COLS = 8        # tiles per row in the tilesheet

# --------------------------------------------------------------------------------------
# palette
# --------------------------------------------------------------------------------------
INK = (38, 30, 44)            # outlines
INK_SOFT = (70, 60, 78)
WHITE = (246, 246, 242)
SHADOW = (20, 14, 32)

CAP = (86, 78, 112)           # wall tops
CAP_HI = (132, 124, 160)
CAP_LO = (62, 56, 84)
CAP_TX = (94, 86, 120)

FACE = (236, 231, 216)        # interior wall paint
FACE_LO = (218, 211, 192)
RAIL = (196, 182, 160)
RAIL_HI = (224, 214, 194)
WAIN = (150, 196, 188)        # wainscot
WAIN_LO = (128, 176, 168)
WAIN_HI = (172, 214, 206)
BASE = (88, 100, 116)         # baseboard
BASE_HI = (120, 134, 148)

BRICK = (180, 98, 80)
BRICK_HI = (204, 122, 100)
BRICK_LO = (150, 78, 66)
MORTAR = (222, 202, 184)
STONE = (134, 130, 142)
STONE_HI = (164, 160, 170)

WOOD = (178, 124, 80)
WOOD_HI = (204, 152, 102)
WOOD_LO = (140, 94, 58)
WOOD_DK = (108, 70, 44)
WOOD_RED = (156, 92, 62)

METAL = (176, 184, 194)
METAL_HI = (214, 220, 228)
METAL_LO = (128, 136, 150)
STEEL_DK = (84, 90, 104)
PLASTIC = (232, 234, 236)
PLASTIC_LO = (196, 200, 208)

BLUE = (72, 116, 178)
BLUE_HI = (110, 154, 212)
BLUE_LO = (52, 86, 140)
TEAL = (64, 160, 150)
TEAL_HI = (102, 196, 182)
TEAL_LO = (42, 118, 112)
RED = (210, 56, 60)
RED_HI = (236, 98, 92)
RED_LO = (158, 36, 48)
YELLOW = (244, 200, 64)
YELLOW_LO = (204, 150, 40)
GREEN = (84, 160, 72)
GREEN_HI = (128, 196, 96)
GREEN_LO = (52, 116, 58)
GREEN_DK = (36, 84, 48)
POT = (192, 104, 62)
POT_HI = (222, 138, 90)
POT_LO = (148, 74, 46)
SCREEN = (34, 52, 66)
SCREEN_HI = (92, 170, 220)
GLOW = (120, 236, 150)
GLASS = (150, 200, 232)
GLASS_HI = (212, 236, 248)
GLASS_LO = (104, 152, 196)

GRASS = (106, 170, 78)
GRASS_LO = (86, 146, 64)
GRASS_HI = (136, 196, 96)


# --------------------------------------------------------------------------------------
# tiny helpers
# --------------------------------------------------------------------------------------
def nz(x: int, y: int, salt: int = 0) -> float:
    """Deterministic per-pixel hash in [0, 1)."""
    h = (x * 73856093) ^ (y * 19349663) ^ ((salt + 7) * 83492791)
    h &= 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0x5BD1E995) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0xFFFF) / 65536.0


def sh(c, f: float):
    return tuple(max(0, min(255, int(round(v * f)))) for v in c[:3])


def mix(a, b, t: float):
    return tuple(int(round(a[i] + (b[i] - a[i]) * t)) for i in range(3))


def surf(w: int = T, h: int = T) -> pygame.Surface:
    s = pygame.Surface((w, h), pygame.SRCALPHA, 32)
    s.fill((0, 0, 0, 0))
    return s


def R(s, x, y, w, h, c):
    if w > 0 and h > 0:
        s.fill(c, (x, y, w, h))


def P(s, x, y, c):
    if 0 <= x < s.get_width() and 0 <= y < s.get_height():
        s.set_at((x, y), c)


def hline(s, x0, x1, y, c):
    R(s, x0, y, x1 - x0 + 1, 1, c)


def vline(s, x, y0, y1, c):
    R(s, x, y0, 1, y1 - y0 + 1, c)


def box(s, x, y, w, h, fill, border=INK):
    R(s, x, y, w, h, border)
    R(s, x + 1, y + 1, w - 2, h - 2, fill)


def rbox(s, x, y, w, h, fill, border=INK):
    """Box with cut corners (a rounded look at pixel scale)."""
    box(s, x, y, w, h, fill, border)
    for cx, cy in ((x, y), (x + w - 1, y), (x, y + h - 1), (x + w - 1, y + h - 1)):
        P(s, cx, cy, (0, 0, 0, 0))
    P(s, x + 1, y + 1, border)
    P(s, x + w - 2, y + 1, border)
    P(s, x + 1, y + h - 2, border)
    P(s, x + w - 2, y + h - 2, border)


def disc(s, cx, cy, r, c):
    """Filled circle centred on pixel (cx, cy) (integer radius, pixel exact)."""
    for y in range(cy - r, cy + r + 1):
        for x in range(cx - r, cx + r + 1):
            if (x - cx) ** 2 + (y - cy) ** 2 <= r * r + r * 0.8:
                P(s, x, y, c)


def ellipse(s, x0, y0, x1, y1, c):
    """Filled ellipse inside the pixel box [x0..x1] x [y0..y1] (half-pixel exact)."""
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    rx, ry = (x1 - x0 + 1) / 2.0, (y1 - y0 + 1) / 2.0
    for y in range(y0, y1 + 1):
        for x in range(x0, x1 + 1):
            if ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0:
                P(s, x, y, c)


def alpha_grid(s):
    w, h = s.get_size()
    return [[s.get_at((x, y)).a for y in range(h)] for x in range(w)]


def outline(s, col=INK, thresh=128):
    """Dark 1px outline around every opaque shape (4-neighbourhood)."""
    w, h = s.get_size()
    a = alpha_grid(s)
    for x in range(w):
        for y in range(h):
            if a[x][y] >= thresh:
                continue
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = x + dx, y + dy
                if 0 <= nx < w and 0 <= ny < h and a[nx][ny] >= thresh:
                    s.set_at((x, y), col)
                    break
    return s


def drop_shadow(s, dx=2, dy=2, alpha=72):
    """Soft drop shadow to the lower right, only on empty pixels."""
    w, h = s.get_size()
    a = alpha_grid(s)
    for x in range(w):
        for y in range(h):
            if a[x][y] != 0:
                continue
            hit = False
            for sx in range(0, dx + 1):
                for sy in range(0, dy + 1):
                    if sx == 0 and sy == 0:
                        continue
                    ox, oy = x - sx, y - sy
                    if 0 <= ox < w and 0 <= oy < h and a[ox][oy] >= 128:
                        hit = True
            if hit:
                s.set_at((x, y), SHADOW + (alpha,))
    return s


def finish(s, shadow=True, dx=2, dy=2, col=INK):
    outline(s, col)
    if shadow:
        drop_shadow(s, dx, dy)
    return s


def slice_tiles(s):
    """Cut a multi-tile canvas into 32x32 tiles, row by row."""
    out = []
    for ty in range(s.get_height() // T):
        row = []
        for tx in range(s.get_width() // T):
            t = surf()
            t.blit(s, (0, 0), (tx * T, ty * T, T, T))
            row.append(t)
        out.append(row)
    return out


def over(base, top):
    """Alpha-composite top over a copy of base."""
    r = base.copy()
    r.blit(top, (0, 0))
    return r


def flip_h(s):
    return pygame.transform.flip(s, True, False)


# --------------------------------------------------------------------------------------
# 3x5 pixel font for plaques and signs
# --------------------------------------------------------------------------------------
FONT = {
    "A": [".#.", "#.#", "###", "#.#", "#.#"],
    "B": ["##.", "#.#", "##.", "#.#", "##."],
    "C": [".##", "#..", "#..", "#..", ".##"],
    "D": ["##.", "#.#", "#.#", "#.#", "##."],
    "E": ["###", "#..", "##.", "#..", "###"],
    "F": ["###", "#..", "##.", "#..", "#.."],
    "G": [".##", "#..", "#.#", "#.#", ".##"],
    "H": ["#.#", "#.#", "###", "#.#", "#.#"],
    "I": ["###", ".#.", ".#.", ".#.", "###"],
    "K": ["#.#", "#.#", "##.", "#.#", "#.#"],
    "L": ["#..", "#..", "#..", "#..", "###"],
    "M": ["#.#", "###", "###", "#.#", "#.#"],
    "N": ["#.#", "###", "###", "###", "#.#"],
    "O": [".#.", "#.#", "#.#", "#.#", ".#."],
    "P": ["##.", "#.#", "##.", "#..", "#.."],
    "R": ["##.", "#.#", "##.", "#.#", "#.#"],
    "S": [".##", "#..", ".#.", "..#", "##."],
    "T": ["###", ".#.", ".#.", ".#.", ".#."],
    "U": ["#.#", "#.#", "#.#", "#.#", "###"],
    "W": ["#.#", "#.#", "###", "###", "#.#"],
    "X": ["#.#", "#.#", ".#.", "#.#", "#.#"],
    "Y": ["#.#", "#.#", ".#.", ".#.", ".#."],
    "1": [".#.", "##.", ".#.", ".#.", "###"],
    "2": ["##.", "..#", ".#.", "#..", "###"],
    "3": ["##.", "..#", ".#.", "..#", "##."],
    "-": ["...", "...", "###", "...", "..."],
    "/": ["..#", "..#", ".#.", "#..", "#.."],
    " ": ["..", "..", "..", "..", ".."],
}


def text_width(txt):
    return sum(len(FONT[ch][0]) + 1 for ch in txt) - 1


def draw_text(s, x, y, txt, c):
    for ch in txt:
        g = FONT[ch]
        for gy, row in enumerate(g):
            for gx, v in enumerate(row):
                if v == "#":
                    P(s, x + gx, y + gy, c)
        x += len(g[0]) + 1


# --------------------------------------------------------------------------------------
# the tile registry
# --------------------------------------------------------------------------------------
class TileSet:
    def __init__(self):
        self.tiles = []          # (name, kind, collides, surface)
        self.index = {}

    def add(self, name, kind, collides, s):
        assert name not in self.index, name
        assert s.get_size() == (T, T), name
        self.index[name] = len(self.tiles)
        self.tiles.append((name, kind, collides, s))

    def gid(self, name):
        return self.index[name] + 1

    def sheet(self):
        rows = (len(self.tiles) + COLS - 1) // COLS
        out = surf(COLS * T, rows * T)
        for i, (_, _, _, s) in enumerate(self.tiles):
            out.blit(s, ((i % COLS) * T, (i // COLS) * T))
        return out


TS = TileSet()


# --------------------------------------------------------------------------------------
# floors (opaque)
# --------------------------------------------------------------------------------------
def floor_corridor():
    s = surf()
    base, dk, lt = (200, 205, 213), (186, 191, 201), (214, 218, 225)
    R(s, 0, 0, T, T, base)
    for y in range(T):
        for x in range(T):
            n = nz(x, y, 1)
            if n < 0.06:
                P(s, x, y, dk)
            elif n < 0.10:
                P(s, x, y, lt)
    # large sheet seams + a faint sheen
    hline(s, 0, 31, 31, (178, 184, 195))
    vline(s, 31, 0, 31, (184, 190, 200))
    hline(s, 0, 31, 0, (216, 220, 227))
    for i in range(6):
        P(s, 6 + i, 9 - i // 2, (218, 222, 229))
    return s


def floor_squares(base, grout, hi, lo, salt):
    s = surf()
    R(s, 0, 0, T, T, base)
    for y in range(T):
        for x in range(T):
            if nz(x, y, salt) < 0.05:
                P(s, x, y, mix(base, lo, 0.6))
    for o in (0, 16):
        hline(s, 0, 31, o, grout)
        vline(s, o, 0, 31, grout)
    for ox in (0, 16):
        for oy in (0, 16):
            hline(s, ox + 1, ox + 15, oy + 1, hi)
            vline(s, ox + 1, oy + 1, oy + 15, hi)
            hline(s, ox + 2, ox + 15, oy + 15, lo)
            vline(s, ox + 15, oy + 2, oy + 15, lo)
    return s


def floor_clinic():
    return floor_squares((226, 235, 231), (190, 204, 200), (240, 246, 243), (212, 223, 219), 2)


def floor_lab():
    return floor_squares((214, 227, 240), (176, 194, 214), (232, 240, 248), (200, 214, 230), 3)


def floor_wood():
    s = surf()
    tones = [(182, 128, 84), (170, 118, 76), (190, 136, 90), (176, 122, 80)]
    for row in range(4):
        y0 = row * 8
        c = tones[row]
        R(s, 0, y0, T, 8, c)
        hline(s, 0, 31, y0, sh(c, 1.12))
        hline(s, 0, 31, y0 + 7, WOOD_DK)
        # grain
        for y in range(y0 + 2, y0 + 6):
            for x in range(T):
                if nz(x // 3, y, 4 + row) < 0.18:
                    P(s, x, y, sh(c, 0.9))
        j = (row * 13 + 5) % 32
        vline(s, j, y0, y0 + 6, WOOD_DK)
        P(s, (j + 1) % 32, y0 + 1, sh(c, 1.12))
        # a knot
        if row in (1, 3):
            kx = (row * 19 + 11) % 30 + 1
            P(s, kx, y0 + 3, sh(c, 0.75))
            P(s, kx + 1, y0 + 3, sh(c, 0.82))
            P(s, kx, y0 + 4, sh(c, 0.82))
    return s


def floor_lobby():
    s = surf()
    cream, tan = (240, 230, 208), (226, 210, 180)
    terra, terra_hi, terra_lo = (206, 136, 100), (228, 170, 130), (176, 112, 84)
    for y in range(T):
        for x in range(T):
            c = cream if ((x // 16) + (y // 16)) % 2 == 0 else tan
            if nz(x, y, 5) < 0.05:
                c = sh(c, 0.96)
            P(s, x, y, c)
    for o in (0, 16):
        hline(s, 0, 31, o, (210, 194, 166))
        vline(s, o, 0, 31, (210, 194, 166))
    # small diamonds on the tile corners (they complete across tiles)
    for cx, cy in ((0, 0), (32, 0), (0, 32), (32, 32)):
        for y in range(cy - 4, cy + 5):
            for x in range(cx - 4, cx + 5):
                d = abs(x - cx) + abs(y - cy)
                if 0 <= x < T and 0 <= y < T:
                    if d <= 1:
                        P(s, x, y, terra_hi)
                    elif d <= 3:
                        P(s, x, y, terra)
                    elif d == 4:
                        P(s, x, y, terra_lo)
    return s


def grass_base(salt=6):
    s = surf()
    R(s, 0, 0, T, T, GRASS)
    for y in range(T):
        for x in range(T):
            n = nz(x, y, salt)
            if n < 0.10:
                P(s, x, y, GRASS_LO)
            elif n < 0.13:
                P(s, x, y, (96, 158, 70))
    # little tufts
    for i in range(7):
        tx = int(nz(i, 1, salt + 40) * 28) + 2
        ty = int(nz(i, 2, salt + 40) * 28) + 3
        P(s, tx, ty, GRASS_HI)
        P(s, tx - 1, ty - 1, GRASS_HI)
        P(s, tx + 1, ty - 1, GRASS_HI)
        P(s, tx, ty + 1, GRASS_LO)
    return s


def floor_grass():
    return grass_base()


def floor_grass_flowers():
    s = grass_base(8)
    for (fx, fy, c) in ((6, 7, WHITE), (22, 5, YELLOW), (13, 20, (240, 140, 180)),
                        (26, 24, WHITE), (4, 26, YELLOW)):
        P(s, fx, fy - 1, c)
        P(s, fx - 1, fy, c)
        P(s, fx + 1, fy, c)
        P(s, fx, fy + 1, c)
        P(s, fx, fy, (250, 220, 90) if c != YELLOW else (230, 120, 60))
        P(s, fx + 1, fy + 2, GRASS_LO)
    return s


def floor_path():
    s = surf()
    mortar = (166, 150, 126)
    R(s, 0, 0, T, T, mortar)
    for row in range(4):
        y0 = row * 8
        off = 0 if row % 2 == 0 else 8
        for k in range(-1, 3):
            x0 = k * 16 + off
            v = nz(k + (1 if off else 0), row, 9)
            c = mix((206, 190, 160), (188, 172, 146), v)
            for y in range(y0 + 1, y0 + 8):
                for x in range(x0 + 1, x0 + 16):
                    if 0 <= x < T:
                        cc = c
                        if y == y0 + 1:
                            cc = sh(c, 1.08)
                        elif y == y0 + 7 or x == x0 + 15:
                            cc = sh(c, 0.9)
                        elif nz(x, y, 10) < 0.06:
                            cc = sh(c, 0.94)
                        P(s, x, y, cc)
    return s


def floor_mat(side):
    """Coir welcome mat inside the front door, two tiles wide: side 'l' or 'r'."""
    s = floor_lobby()
    mat, mat_lo, mat_hi = (170, 120, 76), (146, 100, 62), (192, 144, 96)
    x0 = 4 if side == "l" else 0
    x1 = 31 if side == "l" else 27
    R(s, x0, 5, x1 - x0 + 1, 24, INK)
    R(s, x0 + (1 if side == "l" else 0), 6, x1 - x0, 22, mat)
    for y in range(6, 28):
        for x in range(x0 + 1, x1):
            if (x + y) % 3 == 0:
                P(s, x, y, mat_lo)
            elif nz(x, y, 17) < 0.1:
                P(s, x, y, mat_hi)
    # a red border stripe
    for y in (8, 25):
        hline(s, x0 + (3 if side == "l" else 0), x1 - (3 if side == "r" else 0), y, RED_LO)
    if side == "l":
        vline(s, x0 + 3, 8, 25, RED_LO)
    else:
        vline(s, x1 - 3, 8, 25, RED_LO)
    hline(s, x0, x1, 29, sh((226, 210, 180), 0.85))
    return s


def rug(part):
    """9-slice rug on lobby floor: part in tl,t,tr,l,c,r,bl,b,br."""
    s = floor_lobby()
    red, red_lo, cream, gold = (172, 64, 70), (132, 44, 56), (238, 222, 186), (226, 178, 80)
    top = part[0] == "t"
    bot = part[0] == "b"
    left = part.endswith("l") and part != "l" or part == "l"
    right = part.endswith("r") and part != "r" or part == "r"
    x0 = 3 if left else 0
    x1 = 28 if right else 31
    y0 = 3 if top else 0
    y1 = 28 if bot else 31
    R(s, x0, y0, x1 - x0 + 1, y1 - y0 + 1, red)
    for y in range(y0, y1 + 1):
        for x in range(x0, x1 + 1):
            # cream field with a small lattice
            inner = (not left or x >= x0 + 5) and (not right or x <= x1 - 5) and \
                    (not top or y >= y0 + 5) and (not bot or y <= y1 - 5)
            if inner:
                c = cream
                if (x + y) % 8 == 0 or (x - y) % 8 == 0:
                    c = (226, 200, 160)
                if (x % 16 == 8) and (y % 16 == 8):
                    c = red
                P(s, x, y, c)
            elif nz(x, y, 11) < 0.08:
                P(s, x, y, red_lo)
    # gold border line
    if left:
        vline(s, x0 + 3, y0 + (3 if top else 0), y1 - (3 if bot else 0), gold)
    if right:
        vline(s, x1 - 3, y0 + (3 if top else 0), y1 - (3 if bot else 0), gold)
    if top:
        hline(s, x0 + (3 if left else 0), x1 - (3 if right else 0), y0 + 3, gold)
    if bot:
        hline(s, x0 + (3 if left else 0), x1 - (3 if right else 0), y1 - 3, gold)
    # outline
    if left:
        vline(s, x0 - 1, y0, y1, INK)
    if right:
        vline(s, x1 + 1, y0, y1, INK)
    if top:
        hline(s, x0, x1, y0 - 1, INK)
    if bot:
        hline(s, x0, x1, y1 + 1, INK)
        hline(s, x0 + 1, x1, y1 + 2, sh((214, 194, 162), 0.82))
    # fringe on the short (left/right) ends
    if left:
        for y in range(y0 + 1, y1, 2):
            P(s, x0 - 2, y, cream)
    if right:
        for y in range(y0 + 1, y1, 2):
            P(s, x1 + 2, y, cream)
    return s


# --------------------------------------------------------------------------------------
# walls (opaque).  Wall tops (caps) are dark; a wall cell with walkable floor south of it
# shows its face (lighter) under an 8px cap band: top-down 3/4 view.
# --------------------------------------------------------------------------------------
def draw_cap(s, y0, y1, n, w, e):
    R(s, 0, y0, T, y1 - y0, CAP)
    for y in range(y0, y1):
        for x in range(T):
            if nz(x, y, 12) < 0.07:
                P(s, x, y, CAP_TX)
    # brick-ish courses on the cap
    for y in range(y0 + 3, y1, 6):
        for x in range(T):
            if (x + (y // 6) * 5) % 12 == 0:
                P(s, x, y, CAP_LO)
    if n:
        hline(s, 0, 31, y0, INK)
        hline(s, 0, 31, y0 + 1, CAP_HI)
    if w:
        vline(s, 0, y0, y1 - 1, INK)
        vline(s, 1, y0 + (1 if n else 0), y1 - 1, CAP_HI)
    if e:
        vline(s, 31, y0, y1 - 1, INK)
        vline(s, 30, y0 + (1 if n else 0), y1 - 1, CAP_LO)


def wall_cap(n, w, e):
    s = surf()
    draw_cap(s, 0, T, n, w, e)
    return s


def face_interior(s):
    R(s, 0, 9, T, 23, FACE)
    for y in range(9, 19):
        for x in range(T):
            if nz(x, y, 13) < 0.04:
                P(s, x, y, FACE_LO)
    hline(s, 0, 31, 9, FACE_LO)
    hline(s, 0, 31, 19, RAIL_HI)
    hline(s, 0, 31, 20, RAIL)
    R(s, 0, 21, T, 8, WAIN)
    hline(s, 0, 31, 21, WAIN_LO)
    for x in (3, 11, 19, 27):
        vline(s, x, 23, 27, WAIN_LO)
        vline(s, x + 1, 23, 27, WAIN_HI)
    hline(s, 0, 31, 29, BASE_HI)
    R(s, 0, 30, T, 2, BASE)


def face_exterior(s):
    R(s, 0, 9, T, 20, MORTAR)
    for row in range(5):
        y0 = 9 + row * 4
        off = 0 if row % 2 == 0 else 4
        for k in range(-1, 5):
            x0 = k * 8 + off
            v = nz(k + off, row, 14)
            c = mix(BRICK, BRICK_LO, v * 0.8)
            for y in range(y0, y0 + 3):
                for x in range(x0, x0 + 7):
                    if 0 <= x < T:
                        P(s, x, y, sh(c, 1.1) if y == y0 else c)
    R(s, 0, 29, T, 3, STONE)
    hline(s, 0, 31, 29, STONE_HI)
    hline(s, 0, 31, 31, sh(STONE, 0.8))


def wall_face(n, w, e, style="int", window=False):
    s = surf()
    draw_cap(s, 0, 8, n, w, e)
    hline(s, 0, 31, 8, INK)
    if style == "int":
        face_interior(s)
    else:
        face_exterior(s)
    if window:
        draw_window(s, style)
    # shading at the ends of a wall run
    if w:
        vline(s, 0, 8, 31, INK)
        for y in range(9, 32):
            P(s, 1, y, sh(s.get_at((1, y)), 0.86))
    if e:
        vline(s, 31, 8, 31, INK)
        for y in range(9, 32):
            P(s, 30, y, sh(s.get_at((30, y)), 0.86))
    return s


def draw_window(s, style):
    x0, y0, x1, y1 = 5, 11, 26, 26
    frame = (242, 242, 246) if style == "int" else (232, 232, 236)
    R(s, x0 - 1, y0 - 1, x1 - x0 + 3, y1 - y0 + 3, INK)
    R(s, x0, y0, x1 - x0 + 1, y1 - y0 + 1, frame)
    gx0, gy0, gx1, gy1 = x0 + 2, y0 + 2, x1 - 2, y1 - 2
    for y in range(gy0, gy1 + 1):
        t = (y - gy0) / max(1, gy1 - gy0)
        if style == "int":
            c = mix((140, 196, 236), (206, 232, 246), t)
        else:
            c = mix((78, 116, 170), (132, 176, 214), t)
        hline(s, gx0, gx1, y, c)
    if style == "int":
        # a hint of trees outside
        for x in range(gx0, gx1 + 1):
            h = 3 + int(2 * nz(x // 3, 0, 15) + (1 if (x // 3) % 2 else 0))
            vline(s, x, gy1 - h + 1, gy1, (104, 170, 96) if (x // 3) % 2 else (84, 150, 82))
    # reflections
    for i in range(6):
        P(s, gx0 + 2 + i, gy0 + 7 - i, GLASS_HI)
        P(s, gx0 + 3 + i, gy0 + 7 - i, GLASS_HI)
    for i in range(3):
        P(s, gx0 + 11 + i, gy0 + 9 - i, GLASS_HI)
    # mullions
    vline(s, 15, gy0, gy1, frame)
    vline(s, 16, gy0, gy1, frame)
    hline(s, gx0, gx1, 18, frame)
    vline(s, 17, gy0, gy1, sh(frame, 0.8))
    # sill
    R(s, x0 - 2, y1 + 1, x1 - x0 + 5, 2, INK)
    hline(s, x0 - 1, x1 + 1, y1 + 1, (250, 250, 252))
    if style == "ext":
        # curtains inside
        vline(s, gx0, gy0, gy1, (226, 170, 120))
        vline(s, gx1, gy0, gy1, (226, 170, 120))


# --------------------------------------------------------------------------------------
# doors (opaque, walkable)
# --------------------------------------------------------------------------------------
def door_h(left_post=True, right_post=True):
    """Open doorway in a wall that runs east-west."""
    s = floor_corridor()
    # darker threshold and depth shading at the top of the opening
    for y in range(0, 6):
        hline(s, 0, 31, y, mix((150, 156, 170), (200, 205, 213), y / 6))
    R(s, 0, 13, T, 6, (160, 164, 174))
    hline(s, 0, 31, 13, (128, 132, 144))
    hline(s, 0, 31, 14, (190, 194, 202))
    hline(s, 0, 31, 18, (136, 140, 150))
    frame, frame_lo = (168, 118, 76), (122, 82, 52)
    leaf, leaf_hi = (198, 146, 96), (222, 176, 124)
    if left_post:
        R(s, 0, 0, 4, 32, INK)
        R(s, 0, 0, 3, 32, frame)
        vline(s, 2, 0, 31, frame_lo)
        # the door leaf, swung open against the jamb
        R(s, 4, 3, 6, 27, INK)
        R(s, 5, 4, 4, 25, leaf)
        vline(s, 5, 4, 28, leaf_hi)
        R(s, 6, 8, 2, 6, sh(leaf, 0.88))
        R(s, 6, 18, 2, 6, sh(leaf, 0.88))
        P(s, 8, 16, YELLOW)
        for y in range(4, 30):
            P(s, 10, y, mix(s.get_at((10, y)), SHADOW, 0.25))
    if right_post:
        R(s, 28, 0, 4, 32, INK)
        R(s, 29, 0, 3, 32, frame)
        vline(s, 29, 0, 31, sh(frame, 1.12))
    return s


def door_v():
    """Open doorway in a wall that runs north-south (the wall above shows its face)."""
    s = floor_corridor()
    # threshold strip across the opening
    R(s, 12, 0, 8, T, (168, 172, 182))
    vline(s, 12, 0, 31, (132, 136, 148))
    vline(s, 13, 0, 31, (196, 200, 208))
    vline(s, 19, 0, 31, (140, 144, 154))
    # shade under the wall face above
    for y in range(0, 4):
        hline(s, 0, 31, y, mix((140, 146, 160), s.get_at((0, 4)), y / 4.0))
    # frame posts standing in the opening (seen from above)
    frame = (168, 118, 76)
    R(s, 0, 0, 3, 4, frame)
    R(s, 29, 0, 3, 4, frame)
    # the door leaf swung open against the wall below
    leaf, leaf_hi = (198, 146, 96), (222, 176, 124)
    R(s, 20, 20, 11, 12, INK)
    R(s, 21, 21, 9, 11, leaf)
    hline(s, 21, 29, 21, leaf_hi)
    R(s, 22, 24, 7, 3, sh(leaf, 0.9))
    P(s, 22, 29, YELLOW)
    return s


def door_front(side):
    """Glass sliding entrance door under a red-and-white awning, two tiles wide."""
    s = surf()
    R(s, 0, 0, T, T, (176, 180, 190))
    for y in range(T):
        for x in range(T):
            if nz(x, y, 18) < 0.08:
                P(s, x, y, (164, 168, 178))
    # rails
    hline(s, 0, 31, 9, (120, 126, 138))
    hline(s, 0, 31, 10, (214, 218, 226))
    hline(s, 0, 31, 29, (120, 126, 138))
    hline(s, 0, 31, 30, (214, 218, 226))
    # glass panel slid to the side
    gx0 = 0 if side == "l" else 24
    R(s, gx0, 8, 8, 24, INK)
    R(s, gx0 + 1, 9, 6, 22, GLASS)
    vline(s, gx0 + 2, 10, 16, GLASS_HI)
    vline(s, gx0 + 3, 12, 14, GLASS_HI)
    vline(s, gx0 + (0 if side == "l" else 7), 8, 31, METAL_LO)
    # awning
    for x in range(T):
        stripe = RED if ((x + (0 if side == "l" else 32)) // 6) % 2 == 0 else WHITE
        vline(s, x, 0, 5, stripe)
        if (x % 6) in (1, 2, 3, 4):
            P(s, x, 6, stripe)
    hline(s, 0, 31, 0, INK)
    for x in range(T):
        y = 7 if (x % 6) in (1, 2, 3, 4) else 6
        P(s, x, y, INK)
    return s


# --------------------------------------------------------------------------------------
# wall overlays (transparent; placed on the furniture layer over a wall cell)
# --------------------------------------------------------------------------------------
def sign_redcross():
    s = surf()
    box(s, 7, 9, 18, 18, WHITE)
    R(s, 8, 10, 16, 1, (255, 255, 255))
    R(s, 14, 12, 4, 12, RED)
    R(s, 10, 16, 12, 4, RED)
    vline(s, 14, 12, 23, RED_HI)
    hline(s, 10, 21, 16, RED_HI)
    return finish(s, dx=1, dy=1)


def plaque(txt, bg=(240, 240, 232), border=(48, 86, 150), fg=(36, 52, 96)):
    s = surf()
    tw = text_width(txt)
    pad = 3 if tw + 6 <= 30 else 2
    w = tw + 2 * pad
    x0 = (T - w) // 2
    R(s, x0, 11, w, 11, border)
    R(s, x0 + 1, 12, w - 2, 9, bg)
    hline(s, x0 + 1, x0 + w - 2, 12, (255, 255, 255))
    draw_text(s, x0 + pad, 14, txt, fg)
    return finish(s, dx=1, dy=1)


def sign_hospital(side):
    s = surf(64, 32)
    box(s, 4, 11, 56, 13, (44, 90, 160))
    hline(s, 5, 58, 12, (80, 130, 196))
    # red cross badge
    box(s, 6, 12, 11, 11, WHITE)
    R(s, 10, 13, 3, 9, RED)
    R(s, 7, 16, 9, 3, RED)
    draw_text(s, 21, 15, "HOSPITAL", WHITE)
    finish(s, dx=1, dy=1)
    return slice_tiles(s)[0][0 if side == "l" else 1]


def whiteboard():
    s = surf(64, 32)
    box(s, 4, 9, 56, 19, (250, 250, 250), METAL_LO)
    R(s, 3, 8, 58, 1, INK)
    # scribbles: a little chart and notes
    for i, x in enumerate(range(8, 26, 2)):
        P(s, x, 22 - (i * 37) % 9, BLUE)
        P(s, x + 1, 22 - (i * 37) % 9, BLUE)
    hline(s, 30, 44, 13, RED)
    hline(s, 30, 50, 16, (60, 60, 70))
    hline(s, 30, 40, 19, (60, 60, 70))
    hline(s, 30, 47, 22, (60, 60, 70))
    box(s, 52, 12, 6, 6, (255, 236, 140), YELLOW_LO)
    R(s, 10, 27, 44, 2, METAL_LO)
    R(s, 14, 26, 4, 1, RED)
    R(s, 20, 26, 4, 1, BLUE)
    finish(s, dx=1, dy=1)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def tv_screen():
    s = surf()
    box(s, 3, 9, 26, 17, (40, 40, 48))
    R(s, 5, 11, 22, 13, (60, 120, 170))
    R(s, 5, 19, 22, 5, (92, 164, 96))
    disc(s, 22, 14, 2, YELLOW)
    for i in range(5):
        P(s, 7 + i, 12 + i // 2, (150, 200, 230))
    R(s, 14, 26, 4, 2, (60, 60, 70))
    return finish(s, dx=1, dy=1)


def xray_viewer():
    s = surf()
    box(s, 4, 9, 24, 20, (236, 240, 244), METAL_LO)
    R(s, 6, 11, 20, 16, (24, 28, 36))
    # spine and ribs
    vline(s, 15, 12, 25, (200, 206, 214))
    vline(s, 16, 12, 25, (170, 176, 186))
    for i, y in enumerate(range(13, 24, 2)):
        w = 6 - abs(i - 2)
        hline(s, 16 - w - 2, 14, y, (190, 196, 206))
        hline(s, 17, 17 + w + 1, y, (190, 196, 206))
    # clavicles
    hline(s, 8, 13, 12, (210, 214, 222))
    hline(s, 18, 23, 12, (210, 214, 222))
    return finish(s, dx=1, dy=1)


def eye_chart():
    s = surf()
    box(s, 8, 7, 16, 22, WHITE)
    draw_text(s, 14, 9, "E", INK)
    for y, x1, step in ((16, 21, 2), (19, 21, 2), (22, 21, 2), (25, 21, 2)):
        for x in range(11, x1 + 1, step):
            P(s, x, y, INK)
            P(s, x, y + 1, INK if (x + y) % 3 else (120, 120, 130))
    return finish(s, dx=1, dy=1)


def wall_clock():
    s = surf()
    disc(s, 16, 16, 7, WHITE)
    P(s, 16, 10, INK)
    P(s, 22, 16, INK)
    P(s, 16, 22, INK)
    P(s, 10, 16, INK)
    vline(s, 16, 12, 16, INK)
    hline(s, 16, 19, 16, RED)
    s2 = outline(s, INK)
    return drop_shadow(s2, 1, 1)


def sign_radiation():
    s = surf()
    # yellow warning triangle with a trefoil
    for y in range(10, 26):
        half = (y - 10) * 11 // 16
        hline(s, 16 - half, 16 + half, y, YELLOW)
    disc(s, 16, 20, 1, INK)
    for (dx, dy) in ((-3, 3), (3, 3), (0, -3)):
        disc(s, 16 + dx, 20 + dy - (1 if dy > 0 else 0), 1, INK)
    return finish(s, dx=1, dy=1)


def notice_board():
    s = surf()
    box(s, 5, 9, 22, 17, (196, 150, 100), WOOD_DK)
    R(s, 7, 11, 18, 13, (206, 166, 118))
    for (x, y, w, h, c) in ((8, 12, 6, 7, WHITE), (15, 11, 7, 5, (255, 236, 140)),
                            (16, 17, 8, 6, (200, 230, 255)), (9, 20, 5, 3, (255, 200, 210))):
        R(s, x, y, w, h, c)
        P(s, x + w // 2, y, RED)
    hline(s, 9, 12, 14, (120, 120, 130))
    hline(s, 9, 12, 16, (120, 120, 130))
    return finish(s, dx=1, dy=1)


def sanitizer():
    s = surf()
    box(s, 12, 10, 8, 13, WHITE)
    R(s, 13, 15, 6, 5, (130, 200, 230))
    R(s, 14, 8, 4, 2, METAL_LO)
    R(s, 15, 23, 2, 2, METAL_LO)
    return finish(s, dx=1, dy=1)


# --------------------------------------------------------------------------------------
# furniture and equipment (transparent; furniture layer)
# --------------------------------------------------------------------------------------
def reception_desk():
    """Counter, 3 tiles (left end, middle, right end); the visitor stands south of it."""
    s = surf(96, 32)
    top, top_hi = (222, 186, 138), (240, 210, 166)
    front, front_hi, front_lo = (64, 132, 156), (96, 166, 186), (46, 102, 124)
    x0, x1 = 3, 92
    R(s, x0, 6, x1 - x0 + 1, 11, top)
    hline(s, x0, x1, 6, top_hi)
    hline(s, x0, x1, 7, top_hi)
    hline(s, x0, x1, 16, sh(top, 0.86))
    R(s, x0, 17, x1 - x0 + 1, 12, front)
    hline(s, x0, x1, 17, front_lo)
    hline(s, x0, x1, 18, front_hi)
    R(s, x0, 26, x1 - x0 + 1, 3, front_lo)
    # vertical panel lines every tile
    for px in (12, 22, 44, 54, 74, 84):
        vline(s, px, 20, 25, front_lo)
    finish(s)
    t = slice_tiles(s)[0]
    return t


def desk_pieces():
    """Office desk, two tiles wide (left, right)."""
    s = surf(64, 32)
    x0, x1 = 3, 60
    R(s, x0, 8, x1 - x0 + 1, 12, WOOD)
    hline(s, x0, x1, 8, WOOD_HI)
    hline(s, x0, x1, 19, WOOD_LO)
    for x in range(x0, x1 + 1):
        for y in range(9, 19):
            if nz(x // 4, y, 20) < 0.15:
                P(s, x, y, sh(WOOD, 0.93))
    R(s, x0, 20, x1 - x0 + 1, 7, WOOD_LO)
    # drawers on the right pedestal
    R(s, 42, 20, 16, 8, WOOD_RED)
    hline(s, 43, 56, 23, WOOD_DK)
    R(s, 48, 21, 4, 1, METAL)
    R(s, 48, 25, 4, 1, METAL)
    # legs
    R(s, x0 + 1, 27, 3, 2, WOOD_DK)
    finish(s)
    return slice_tiles(s)[0]


def monitor_item():
    s = surf()
    box(s, 6, 1, 20, 14, (50, 52, 62))
    R(s, 8, 3, 16, 10, (40, 70, 110))
    # a little chart on screen
    R(s, 9, 4, 14, 2, (120, 190, 240))
    for i, x in enumerate(range(10, 22, 2)):
        vline(s, x, 12 - (i * 5) % 5 - 1, 11, GLOW)
    R(s, 14, 15, 4, 2, (70, 72, 84))
    R(s, 11, 17, 10, 2, (70, 72, 84))
    # keyboard
    R(s, 8, 19, 14, 3, (220, 222, 228))
    for x in range(9, 21, 2):
        P(s, x, 20, METAL_LO)
    # mouse
    R(s, 24, 19, 2, 3, (220, 222, 228))
    return finish(s, dx=1, dy=1)


def papers_item():
    s = surf()
    R(s, 4, 10, 10, 8, WHITE)
    hline(s, 5, 12, 12, (150, 150, 160))
    hline(s, 5, 11, 14, (150, 150, 160))
    R(s, 17, 7, 5, 7, (80, 90, 120))  # pen cup
    P(s, 18, 5, RED)
    P(s, 18, 6, RED)
    P(s, 20, 4, BLUE)
    P(s, 20, 5, BLUE)
    P(s, 20, 6, BLUE)
    return finish(s, shadow=False)


def office_chair(facing):
    s = surf()
    seat, seat_hi, seat_lo = (64, 70, 88), (96, 104, 126), (44, 48, 62)
    base = (90, 94, 104)
    if facing in ("down", "up"):
        # star base
        hline(s, 10, 21, 27, base)
        vline(s, 15, 24, 28, base)
        vline(s, 16, 24, 28, base)
        for x in (9, 22, 15):
            P(s, x, 28, INK)
        if facing == "down":
            rbox(s, 9, 4, 14, 10, seat, INK)      # backrest at the top
            hline(s, 10, 21, 5, seat_hi)
            rbox(s, 8, 13, 16, 10, seat_hi, INK)  # seat toward the viewer
            hline(s, 9, 22, 21, seat)
        else:
            rbox(s, 8, 8, 16, 10, seat_hi, INK)   # seat
            rbox(s, 9, 14, 14, 11, seat, INK)     # backrest toward the viewer
            hline(s, 10, 21, 15, seat_hi)
            vline(s, 15, 17, 22, seat_lo)
    else:
        hline(s, 9, 22, 27, base)
        vline(s, 15, 22, 28, base)
        rbox(s, 8, 14, 15, 9, seat_hi, INK)        # seat
        rbox(s, 19, 4, 6, 18, seat, INK)           # backrest on the right (faces left)
        vline(s, 20, 6, 19, seat_hi)
        R(s, 9, 12, 8, 2, seat_lo)                 # armrest
        if facing == "right":
            s = flip_h(s)
    return finish(s)


def waiting_chair(facing):
    s = surf()
    up, up_hi, up_lo = (70, 118, 178), (112, 156, 214), (48, 86, 140)
    frame = METAL
    if facing == "down":
        rbox(s, 8, 4, 16, 9, up, INK)
        hline(s, 9, 22, 5, up_hi)
        rbox(s, 8, 12, 16, 11, up_hi, INK)
        hline(s, 9, 22, 21, up)
        vline(s, 6, 10, 21, frame)
        vline(s, 25, 10, 21, frame)
        vline(s, 9, 23, 26, frame)
        vline(s, 22, 23, 26, frame)
    elif facing == "up":
        rbox(s, 8, 7, 16, 10, up_hi, INK)
        rbox(s, 8, 15, 16, 10, up, INK)
        hline(s, 9, 22, 16, up_hi)
        hline(s, 9, 22, 23, up_lo)
        vline(s, 6, 9, 20, frame)
        vline(s, 25, 9, 20, frame)
        vline(s, 9, 25, 27, frame)
        vline(s, 22, 25, 27, frame)
    else:
        rbox(s, 7, 11, 14, 12, up_hi, INK)        # seat
        hline(s, 8, 19, 21, up)
        rbox(s, 19, 3, 7, 21, up, INK)            # backrest on the right (faces left)
        vline(s, 20, 5, 21, up_hi)
        hline(s, 8, 20, 9, frame)                 # armrests
        hline(s, 8, 20, 25, frame)
        vline(s, 8, 23, 27, frame)
        vline(s, 22, 24, 27, frame)
        if facing == "right":
            s = flip_h(s)
    return finish(s)


def exam_bed():
    s = surf(32, 64)
    pad, pad_hi, pad_lo = (64, 150, 140), (96, 184, 172), (44, 112, 106)
    # chrome frame and legs
    R(s, 7, 52, 2, 8, METAL_LO)
    R(s, 23, 52, 2, 8, METAL_LO)
    R(s, 5, 4, 22, 50, METAL)
    # raised head section
    rbox(s, 6, 3, 20, 16, pad_lo)
    R(s, 8, 5, 16, 12, pad)
    hline(s, 8, 23, 5, pad_hi)
    # body section
    rbox(s, 6, 18, 20, 36, pad)
    vline(s, 8, 20, 51, pad_hi)
    hline(s, 7, 24, 52, pad_lo)
    # paper roll strip
    R(s, 11, 8, 10, 44, (244, 244, 236))
    vline(s, 11, 8, 51, (226, 226, 218))
    hline(s, 11, 20, 18, (214, 214, 206))
    R(s, 10, 1, 12, 4, WHITE)  # the roll at the head
    hline(s, 10, 21, 4, (210, 210, 204))
    # step stool
    R(s, 10, 56, 12, 5, METAL_HI)
    hline(s, 10, 21, 60, METAL_LO)
    finish(s)
    t = slice_tiles(s)
    return t[0][0], t[1][0]


def hospital_bed():
    s = surf(32, 64)
    frame, frame_lo = (226, 230, 236), (170, 178, 190)
    blanket, blanket_hi, blanket_lo = (130, 182, 226), (170, 210, 240), (96, 146, 196)
    # headboard
    rbox(s, 4, 1, 24, 7, frame)
    hline(s, 6, 25, 3, frame_lo)
    # mattress
    R(s, 5, 7, 22, 50, INK)
    R(s, 6, 8, 20, 48, (242, 242, 240))
    # pillow
    rbox(s, 8, 9, 16, 8, WHITE)
    hline(s, 10, 21, 15, (220, 220, 226))
    # blanket with the top folded back
    R(s, 6, 20, 20, 36, blanket)
    hline(s, 6, 25, 20, INK)
    R(s, 6, 21, 20, 3, WHITE)
    hline(s, 6, 25, 24, blanket_lo)
    for y in range(28, 54, 6):
        hline(s, 8, 23, y, blanket_hi)
    vline(s, 6, 25, 55, blanket_lo)
    vline(s, 25, 25, 55, blanket_lo)
    # side rails
    R(s, 3, 24, 2, 20, METAL_LO)
    R(s, 27, 24, 2, 20, METAL_LO)
    # footboard
    rbox(s, 4, 54, 24, 6, frame)
    hline(s, 6, 25, 56, frame_lo)
    # wheels
    R(s, 5, 60, 2, 2, INK)
    R(s, 25, 60, 2, 2, INK)
    finish(s)
    t = slice_tiles(s)
    return t[0][0], t[1][0]


def leafy(s, cx, cy, r, salt, dark=GREEN_LO, mid=GREEN, light=GREEN_HI):
    """A roundish clump of leaves."""
    for y in range(cy - r - 1, cy + r + 2):
        for x in range(cx - r - 1, cx + r + 2):
            d = ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5
            edge = r + (nz(x, y, salt) - 0.5) * 2.2
            if d <= edge:
                c = mid
                if (x - cx) + (y - cy) > r * 0.4:
                    c = dark
                elif (x - cx) + (y - cy) < -r * 0.6:
                    c = light
                if nz(x, y, salt + 1) < 0.12:
                    c = light if c != light else mid
                P(s, x, y, c)


def plant_big():
    s = surf()
    # pot
    R(s, 10, 21, 12, 8, POT)
    R(s, 9, 20, 14, 3, POT_HI)
    vline(s, 20, 23, 28, POT_LO)
    hline(s, 11, 20, 28, POT_LO)
    # leaves
    leafy(s, 16, 11, 8, 30)
    leafy(s, 10, 15, 4, 31)
    leafy(s, 22, 15, 4, 32)
    leafy(s, 16, 5, 4, 33)
    return finish(s)


def plant_small():
    s = surf()
    R(s, 11, 22, 10, 7, POT)
    R(s, 10, 21, 12, 2, POT_HI)
    hline(s, 12, 19, 28, POT_LO)
    # spiky leaves
    for (x0, y0, x1, y1) in ((16, 21, 9, 9), (16, 21, 23, 9), (16, 21, 16, 5),
                             (16, 21, 11, 6), (16, 21, 21, 6), (16, 21, 7, 14), (16, 21, 25, 14)):
        pygame.draw.line(s, GREEN, (x0, y0), (x1, y1), 2)
        P(s, x1, y1, GREEN_HI)
    # flowers
    for (x, y) in ((12, 11), (20, 10), (16, 8)):
        P(s, x, y, (240, 120, 160))
        P(s, x + 1, y, (240, 120, 160))
        P(s, x, y + 1, (240, 120, 160))
        P(s, x + 1, y + 1, (250, 200, 90))
    return finish(s)


def bookshelf():
    s = surf()
    R(s, 2, 0, 28, 30, WOOD_LO)
    R(s, 2, 0, 28, 3, WOOD_HI)
    R(s, 4, 3, 24, 26, WOOD_DK)
    spines = [RED, BLUE, GREEN, YELLOW, (150, 90, 170), (230, 130, 70), TEAL, WHITE, (120, 70, 50)]
    for shelf, y0 in enumerate((4, 13, 22)):
        x = 5
        i = shelf * 3
        while x < 27:
            w = 2 + int(nz(x, shelf, 21) * 2.2)
            w = min(w, 27 - x)
            h = 6 + int(nz(x, shelf, 22) * 2.5) if shelf < 2 else 5
            c = spines[i % len(spines)]
            R(s, x, y0 + 8 - h, w, h, c)
            vline(s, x, y0 + 8 - h, y0 + 7, sh(c, 1.15))
            if w >= 3:
                P(s, x + 1, y0 + 9 - h + 1, sh(c, 0.7))
            x += w
            i += 1
            if shelf == 1 and x > 18 and x < 21:
                # a leaning book
                R(s, x, y0 + 3, 2, 5, (200, 80, 80))
                x += 4
        hline(s, 4, 27, y0 + 8, WOOD)
    return finish(s)


def filing_cabinet():
    s = surf()
    body, hi, lo = (158, 168, 180), (192, 200, 210), (120, 130, 144)
    R(s, 5, 0, 22, 30, body)
    R(s, 5, 0, 22, 3, hi)
    for y0 in (4, 13, 22):
        R(s, 7, y0, 18, 7, hi)
        hline(s, 7, 24, y0 + 6, lo)
        R(s, 13, y0 + 1, 6, 2, WHITE)      # label
        R(s, 14, y0 + 4, 4, 1, STEEL_DK)   # handle
    # some folders sticking out of the top drawer
    R(s, 9, 1, 3, 2, YELLOW)
    R(s, 13, 1, 2, 2, RED)
    R(s, 17, 1, 3, 2, BLUE)
    return finish(s)


def binder_shelf():
    s = surf()
    R(s, 2, 0, 28, 30, METAL_LO)
    R(s, 2, 0, 28, 3, METAL_HI)
    R(s, 4, 3, 24, 26, STEEL_DK)
    cols = [BLUE, BLUE_HI, RED, YELLOW, GREEN, BLUE, (150, 90, 170)]
    for shelf, y0 in enumerate((4, 13, 22)):
        for k, x in enumerate(range(5, 27, 4)):
            c = cols[(k + shelf * 2) % len(cols)]
            R(s, x, y0, 3, 8, c)
            R(s, x + 1, y0 + 2, 1, 3, WHITE)
            vline(s, x, y0, y0 + 7, sh(c, 1.15))
        hline(s, 4, 27, y0 + 8, METAL)
    return finish(s)


def conference_table():
    """2 x 3 tiles."""
    s = surf(64, 96)
    top, hi, lo = (150, 96, 62), (182, 126, 84), (112, 70, 44)
    rbox(s, 4, 4, 56, 84, top, INK)
    R(s, 6, 6, 52, 3, hi)
    vline(s, 6, 6, 84, hi)
    for x in range(6, 58):
        for y in range(9, 86):
            if nz(x // 5, y, 23) < 0.10:
                P(s, x, y, sh(top, 0.92))
    R(s, 5, 86, 54, 4, lo)
    hline(s, 5, 58, 89, INK)
    # items: papers, a laptop, glasses, a jug
    for (x, y) in ((10, 16), (44, 40), (10, 62)):
        R(s, x, y, 9, 11, WHITE)
        hline(s, x + 1, x + 7, y + 3, (150, 150, 160))
        hline(s, x + 1, x + 6, y + 5, (150, 150, 160))
    box(s, 38, 12, 16, 11, (60, 64, 76))
    R(s, 40, 14, 12, 7, (80, 140, 200))
    box(s, 38, 23, 16, 5, (170, 176, 188))
    for (x, y) in ((26, 30), (34, 58), (22, 74)):
        box(s, x, y, 4, 5, (200, 230, 245))
    box(s, 28, 44, 6, 9, (150, 200, 230))
    R(s, 29, 45, 4, 2, WHITE)
    finish(s)
    t = slice_tiles(s)
    return [t[r][c] for r in range(3) for c in range(2)]


def coffee_table():
    s = surf(64, 32)
    top = (196, 150, 100)
    rbox(s, 4, 8, 56, 14, top, INK)
    hline(s, 5, 58, 9, sh(top, 1.12))
    R(s, 5, 22, 54, 4, WOOD_LO)
    hline(s, 5, 58, 25, INK)
    # magazines and a tiny vase
    R(s, 10, 11, 8, 9, (230, 90, 90))
    R(s, 12, 12, 5, 3, WHITE)
    R(s, 20, 12, 8, 8, (90, 150, 220))
    R(s, 21, 13, 4, 2, YELLOW)
    box(s, 42, 12, 5, 7, WHITE)
    leafy(s, 44, 10, 2, 40)
    P(s, 44, 8, (240, 120, 160))
    finish(s)
    return slice_tiles(s)[0]


def lab_bench(item=None, end=None):
    """Seamless worktop; end='l'/'r' closes the run on that side."""
    s = surf()
    top, top_hi = (226, 230, 234), (244, 246, 248)
    cab, cab_hi, cab_lo = (110, 134, 160), (140, 164, 190), (84, 104, 128)
    x0 = 3 if end == "l" else 0
    x1 = 28 if end == "r" else 31
    R(s, x0, 4, x1 - x0 + 1, 14, top)
    hline(s, x0, x1, 4, top_hi)
    hline(s, x0, x1, 17, PLASTIC_LO)
    R(s, x0, 18, x1 - x0 + 1, 11, cab)
    hline(s, x0, x1, 18, cab_lo)
    hline(s, x0, x1, 19, cab_hi)
    vline(s, 15, 20, 28, cab_lo)
    vline(s, 16, 20, 28, cab_hi)
    R(s, 11, 22, 3, 1, METAL_HI)
    R(s, 18, 22, 3, 1, METAL_HI)
    hline(s, x0, x1, 28, cab_lo)
    if item == "sink":
        R(s, 7, 6, 18, 10, METAL_LO)
        R(s, 8, 7, 16, 8, (150, 160, 172))
        R(s, 9, 8, 14, 6, (180, 196, 208))
        P(s, 16, 11, STEEL_DK)
        R(s, 15, 4, 2, 4, METAL_HI)
        P(s, 16, 8, METAL_HI)
    finish(s)
    if item == "microscope":
        m = surf()
        R(m, 8, 13, 15, 4, (236, 238, 240))          # base
        hline(m, 8, 22, 16, PLASTIC_LO)
        R(m, 18, 3, 4, 11, (236, 238, 240))          # arm
        vline(m, 21, 3, 13, PLASTIC_LO)
        R(m, 9, 9, 11, 2, (60, 64, 72))              # stage
        R(m, 12, 2, 5, 7, (236, 238, 240))           # head and objectives
        R(m, 13, 7, 3, 2, (60, 64, 72))
        R(m, 11, 0, 3, 3, (40, 42, 50))              # eyepieces
        R(m, 15, 0, 3, 3, (40, 42, 50))
        R(m, 12, 11, 5, 1, (250, 240, 150))          # light
        R(m, 21, 9, 2, 2, (60, 64, 72))              # focus knob
        finish(m, dx=1, dy=1)
        s = over(s, m)
        # slide box
        b = surf()
        R(b, 24, 10, 5, 4, BLUE)
        R(b, 25, 11, 3, 1, WHITE)
        s = over(s, finish(b, shadow=False))
    elif item == "tubes":
        m = surf()
        R(m, 4, 11, 14, 4, (70, 130, 200))           # rack
        hline(m, 4, 17, 11, (110, 170, 230))
        for i, c in enumerate((RED, YELLOW, (90, 170, 230), GREEN, (170, 100, 200))):
            x = 5 + i * 3
            R(m, x, 3, 2, 9, (226, 240, 248))
            R(m, x, 7 + (i % 2), 2, 5 - (i % 2), c)
            R(m, x, 2, 2, 2, sh(c, 0.8))             # caps
        # erlenmeyer flask
        for y in range(6, 15):
            half = 1 if y < 9 else (y - 8) // 1 + 1
            half = min(half, 5)
            hline(m, 24 - half, 24 + half, y, (220, 240, 248) if y < 10 else (120, 210, 130))
        R(m, 23, 4, 3, 2, (220, 240, 248))
        finish(m, dx=1, dy=1)
        s = over(s, m)
    elif item == "centrifuge":
        m = surf()
        rbox(m, 8, 4, 16, 12, PLASTIC)
        ellipse(m, 11, 6, 20, 11, (150, 160, 172))
        ellipse(m, 13, 7, 18, 10, (200, 206, 214))
        R(m, 10, 13, 4, 1, GLOW)
        P(m, 21, 13, RED)
        finish(m, dx=1, dy=1)
        s = over(s, m)
    return s


def lab_fridge():
    s = surf()
    body, hi, lo = (236, 240, 244), (250, 252, 252), (196, 202, 210)
    R(s, 5, 0, 22, 30, body)
    R(s, 5, 0, 22, 3, hi)
    R(s, 7, 4, 18, 24, (170, 210, 230))   # glass door
    for y in (10, 17, 23):
        hline(s, 8, 23, y, lo)
    for i, x in enumerate(range(9, 23, 3)):
        R(s, x, 6 + (i % 2), 2, 4 - (i % 2), (RED, YELLOW, GREEN, BLUE, (170, 100, 200))[i % 5])
        R(s, x, 13, 2, 4, (RED, BLUE, YELLOW, GREEN, RED)[i % 5])
        R(s, x, 19, 2, 4, (GREEN, RED, BLUE, YELLOW, BLUE)[i % 5])
    vline(s, 24, 6, 16, STEEL_DK)
    hline(s, 5, 26, 28, lo)
    P(s, 8, 26, (90, 220, 120))
    return finish(s)


def ecg_machine():
    s = surf()
    cart, cart_hi, cart_lo = (224, 228, 232), (244, 246, 248), (176, 184, 194)
    # wheels and post
    R(s, 8, 27, 3, 3, INK)
    R(s, 21, 27, 3, 3, INK)
    R(s, 9, 25, 14, 2, METAL_LO)
    R(s, 14, 17, 4, 9, METAL)
    # body
    rbox(s, 6, 13, 20, 6, cart)
    hline(s, 7, 24, 14, cart_hi)
    hline(s, 7, 24, 17, cart_lo)
    R(s, 8, 15, 3, 1, (90, 200, 120))
    R(s, 12, 15, 3, 1, (230, 190, 60))
    # screen
    box(s, 5, 1, 22, 13, (60, 66, 76))
    R(s, 7, 3, 18, 9, (20, 36, 30))
    trace = [8, 8, 8, 7, 8, 8, 9, 3, 11, 8, 8, 8, 7, 7, 8, 8, 8, 8]
    for i, y in enumerate(trace):
        P(s, 7 + i, y, GLOW)
        if i > 0 and abs(trace[i - 1] - y) > 1:
            a, b = sorted((trace[i - 1], y))
            vline(s, 7 + i, a, b, GLOW)
    # lead wires hanging from the cart
    for i, c in enumerate((RED, YELLOW, GREEN, WHITE, (60, 60, 70))):
        vline(s, 8 + i * 2, 19, 22 + (i % 3), c)
    return finish(s)


def xray_machine():
    """Two tiles wide: the tube stand and arm (left), the padded table (both)."""
    s = surf(64, 32)
    # table (long, padded)
    R(s, 3, 13, 58, 13, METAL)
    hline(s, 3, 60, 13, METAL_HI)
    R(s, 5, 15, 54, 8, (56, 62, 78))
    hline(s, 5, 58, 15, (92, 98, 118))
    R(s, 50, 16, 7, 6, WHITE)                 # pillow at the foot end
    R(s, 3, 24, 58, 3, METAL_LO)
    R(s, 24, 27, 16, 3, STEEL_DK)             # pedestal
    # column at the back (floor stand)
    R(s, 4, 0, 8, 24, PLASTIC)
    vline(s, 4, 0, 23, WHITE)
    vline(s, 11, 0, 23, PLASTIC_LO)
    R(s, 3, 23, 10, 4, PLASTIC_LO)
    finish(s)
    m = surf(64, 32)
    # arm and tube head over the table
    R(m, 10, 2, 14, 5, (214, 214, 200))
    hline(m, 10, 23, 2, WHITE)
    rbox(m, 20, 0, 22, 14, (240, 234, 210))
    hline(m, 22, 39, 2, WHITE)
    vline(m, 40, 2, 12, (200, 194, 170))
    # collimator with its light field
    R(m, 25, 13, 12, 4, (60, 64, 72))
    R(m, 27, 14, 8, 2, (250, 240, 150))
    # radiation trefoil label
    disc(m, 31, 6, 3, YELLOW)
    P(m, 31, 6, INK)
    P(m, 30, 4, INK)
    P(m, 32, 4, INK)
    P(m, 29, 7, INK)
    P(m, 33, 7, INK)
    finish(m)
    s = over(s, m)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def ct_scanner():
    """Gantry ring, 2x2 tiles, with the patient table sliding out of the bore."""
    s = surf(64, 64)
    white, white_lo, white_hi = (238, 240, 244), (198, 204, 214), (252, 252, 252)
    cx, cy = 31.5, 28.5
    # base plinth
    R(s, 10, 48, 44, 12, white_lo)
    hline(s, 10, 53, 48, white)
    hline(s, 10, 53, 59, (150, 158, 170))
    for y in range(64):
        for x in range(64):
            d = ((x - cx) ** 2 + ((y - cy) * 1.0) ** 2) ** 0.5
            if d <= 27.5:
                c = white
                if y - cy > 14:
                    c = white_lo
                elif x - cx < -18 or y - cy < -20:
                    c = white_hi
                if 14.5 < d <= 17.0:
                    c = (90, 150, 210)     # blue accent ring
                if d <= 14.5:
                    t = max(0.0, min(1.0, (y - (cy - 14)) / 28.0))
                    c = mix((40, 44, 58), (84, 92, 112), t)
                P(s, x, y, c)
    # control panel with lights
    R(s, 40, 44, 8, 3, (60, 64, 72))
    P(s, 41, 45, GLOW)
    P(s, 43, 45, (250, 200, 80))
    # table coming out of the bore
    R(s, 24, 30, 16, 34, INK)
    R(s, 25, 31, 14, 33, (222, 226, 232))
    R(s, 27, 34, 10, 30, (70, 130, 170))
    hline(s, 27, 36, 34, (110, 170, 210))
    finish(s)
    t = slice_tiles(s)
    return t[0][0], t[0][1], t[1][0], t[1][1]


def ct_table():
    s = surf(64, 32)
    R(s, 24, 0, 16, 20, INK)
    R(s, 25, 0, 14, 19, (222, 226, 232))
    R(s, 27, 0, 10, 14, (70, 130, 170))
    R(s, 26, 2, 12, 5, WHITE)             # pillow / head rest
    hline(s, 26, 37, 6, (200, 204, 210))
    R(s, 28, 20, 8, 8, (170, 178, 190))   # pedestal
    hline(s, 28, 35, 27, (120, 128, 140))
    finish(s)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def sink():
    s = surf()
    R(s, 6, 6, 20, 16, (246, 248, 250))
    hline(s, 6, 25, 6, WHITE)
    ellipse(s, 9, 9, 22, 19, (200, 214, 224))
    ellipse(s, 11, 11, 20, 17, (176, 196, 210))
    P(s, 15, 15, STEEL_DK)
    P(s, 16, 15, STEEL_DK)
    R(s, 15, 2, 2, 7, METAL_HI)          # tap
    R(s, 12, 2, 8, 2, METAL)
    P(s, 16, 9, METAL_LO)
    R(s, 22, 1, 4, 6, (120, 200, 160))   # soap
    R(s, 23, 0, 2, 1, WHITE)
    R(s, 9, 22, 14, 4, (226, 228, 232))  # pedestal
    return finish(s)


def water_cooler():
    s = surf()
    # bottle
    ellipse(s, 10, 0, 21, 12, (140, 200, 240))
    R(s, 13, 1, 2, 8, (200, 232, 250))
    hline(s, 11, 20, 7, (110, 176, 226))
    R(s, 13, 11, 6, 2, (110, 176, 226))
    # body
    R(s, 9, 13, 14, 16, PLASTIC)
    hline(s, 9, 22, 13, WHITE)
    vline(s, 22, 13, 28, PLASTIC_LO)
    R(s, 11, 17, 10, 6, (70, 76, 90))
    R(s, 12, 18, 2, 2, RED)
    R(s, 18, 18, 2, 2, (60, 140, 230))
    hline(s, 11, 20, 22, METAL)
    R(s, 23, 15, 3, 8, (236, 240, 244))   # cups
    return finish(s)


def vending_machine():
    s = surf()
    R(s, 4, 0, 24, 30, RED)
    R(s, 4, 0, 24, 3, RED_HI)
    R(s, 6, 4, 14, 20, (40, 60, 80))
    for row, y in enumerate((6, 12, 18)):
        for k, x in enumerate(range(7, 19, 3)):
            c = (YELLOW, (90, 180, 240), GREEN, (240, 120, 160))[(k + row) % 4]
            R(s, x, y, 2, 4, c)
    R(s, 21, 5, 5, 3, (30, 30, 36))
    for y in range(10, 20, 2):
        R(s, 22, y, 3, 1, METAL_HI)
    R(s, 6, 25, 14, 3, (30, 30, 36))
    hline(s, 4, 27, 29, RED_LO)
    return finish(s)


def trash_bin():
    s = surf()
    R(s, 11, 14, 10, 13, (120, 170, 120))
    R(s, 10, 12, 12, 3, (150, 200, 150))
    vline(s, 19, 15, 26, (90, 140, 96))
    for x in (13, 16):
        vline(s, x, 16, 25, (100, 150, 104))
    return finish(s)


def biohazard_bin():
    s = surf()
    R(s, 10, 13, 12, 14, YELLOW)
    R(s, 9, 11, 14, 3, (250, 220, 100))
    R(s, 9, 11, 14, 1, RED)
    disc(s, 16, 20, 2, INK)
    P(s, 16, 20, YELLOW)
    return finish(s)


def wheelchair():
    s = surf()
    # big wheels (side view facing left)
    for (cx, cy, r) in ((19, 21, 7),):
        for y in range(cy - r, cy + r + 1):
            for x in range(cx - r, cx + r + 1):
                d = ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5
                if r - 1.4 <= d <= r + 0.4:
                    P(s, x, y, (60, 64, 76))
                elif d < 1.5:
                    P(s, x, y, METAL)
    pygame.draw.line(s, METAL, (19, 15), (19, 27))
    pygame.draw.line(s, METAL, (13, 21), (25, 21))
    disc(s, 9, 26, 2, (60, 64, 76))
    # seat and back
    R(s, 8, 15, 14, 4, BLUE)
    R(s, 20, 5, 4, 12, BLUE)
    hline(s, 20, 23, 5, BLUE_HI)
    R(s, 7, 18, 3, 6, METAL)
    R(s, 23, 4, 3, 2, (60, 64, 76))
    return finish(s)


def bedside_table():
    s = surf()
    R(s, 7, 10, 18, 18, (210, 214, 222))
    R(s, 7, 10, 18, 4, (236, 238, 242))
    hline(s, 8, 23, 19, (170, 176, 188))
    R(s, 14, 16, 4, 1, METAL_LO)
    R(s, 14, 22, 4, 1, METAL_LO)
    # glass of water and a card
    box(s, 10, 5, 4, 7, (200, 232, 250))
    R(s, 17, 7, 5, 5, (255, 200, 210))
    return finish(s)


def medicine_cabinet():
    s = surf()
    R(s, 5, 0, 22, 30, WHITE)
    R(s, 5, 0, 22, 3, (255, 255, 255))
    R(s, 7, 4, 18, 14, (190, 222, 236))
    vline(s, 16, 4, 17, WHITE)
    for i, x in enumerate(range(8, 24, 3)):
        R(s, x, 6, 2, 4, (RED, (250, 200, 80), BLUE, GREEN, WHITE, RED)[i % 6])
        R(s, x, 12, 2, 4, (WHITE, BLUE, (250, 150, 80), RED, GREEN, YELLOW)[i % 6])
    R(s, 7, 19, 18, 9, (228, 232, 238))
    hline(s, 7, 24, 23, (190, 196, 206))
    R(s, 14, 20, 4, 8, RED)
    R(s, 12, 22, 8, 4, RED)
    return finish(s)


def stool():
    s = surf()
    ellipse(s, 10, 12, 21, 18, (70, 76, 90))
    ellipse(s, 11, 12, 20, 16, (100, 108, 124))
    vline(s, 15, 19, 25, METAL)
    hline(s, 11, 20, 26, METAL_LO)
    return finish(s)


def coat_rack():
    s = surf()
    vline(s, 15, 3, 27, WOOD_LO)
    vline(s, 16, 3, 27, WOOD)
    hline(s, 11, 20, 27, WOOD_DK)
    R(s, 9, 6, 6, 14, WHITE)        # a white coat
    vline(s, 14, 6, 19, (210, 212, 220))
    R(s, 18, 5, 5, 7, (60, 90, 150))  # a bag
    return finish(s)


def control_desk():
    """Imaging control console with two monitors (2 tiles)."""
    s = surf(64, 32)
    R(s, 3, 12, 58, 10, (200, 204, 212))
    hline(s, 3, 60, 12, (226, 230, 236))
    R(s, 3, 22, 58, 6, (150, 156, 168))
    finish(s)
    m = surf(64, 32)
    for x0 in (8, 34):
        box(m, x0, 0, 22, 13, (50, 52, 62))
        R(m, x0 + 2, 2, 18, 9, (24, 30, 40))
        # a greyscale scan on screen
        ellipse(m, x0 + 5, 3, x0 + 15, 10, (150, 154, 160))
        ellipse(m, x0 + 7, 5, x0 + 13, 8, (90, 94, 100))
    R(m, 14, 16, 14, 3, (236, 238, 242))
    R(m, 40, 16, 10, 3, (236, 238, 242))
    R(m, 53, 15, 4, 4, (60, 64, 72))
    P(m, 54, 16, RED)
    finish(m, dx=1, dy=1)
    s = over(s, m)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def lead_screen():
    s = surf()
    R(s, 5, 2, 22, 22, (104, 124, 146))
    hline(s, 5, 26, 2, (140, 160, 180))
    R(s, 8, 4, 16, 9, (176, 206, 220))           # lead-glass window
    hline(s, 9, 14, 6, GLASS_HI)
    hline(s, 10, 12, 7, GLASS_HI)
    # radiation label
    for y in range(15, 22):
        half = (y - 15) * 4 // 7
        hline(s, 16 - half, 16 + half, y, YELLOW)
    P(s, 16, 19, INK)
    R(s, 7, 24, 3, 4, METAL_LO)
    R(s, 22, 24, 3, 4, METAL_LO)
    hline(s, 5, 26, 28, STEEL_DK)
    return finish(s)


def asphalt(line=None):
    s = surf()
    base = (88, 92, 102)
    R(s, 0, 0, T, T, base)
    for y in range(T):
        for x in range(T):
            n = nz(x, y, 95)
            if n < 0.10:
                P(s, x, y, (76, 80, 90))
            elif n < 0.15:
                P(s, x, y, (104, 108, 118))
    if line == "bay":
        R(s, 0, 0, 2, T, (236, 236, 226))
        vline(s, 2, 0, 31, (70, 74, 84))
    elif line == "cross":
        # "ambulance only" marking: yellow box with a cross
        for i in range(3, 29):
            P(s, i, 3, YELLOW)
            P(s, i, 28, YELLOW)
            P(s, 3, i, YELLOW)
            P(s, 28, i, YELLOW)
        R(s, 13, 8, 6, 16, (236, 236, 226))
        R(s, 8, 13, 16, 6, (236, 236, 226))
    return s


def vehicle(body, body_hi, body_lo, kind):
    """A vehicle parked nose-down, 2 tiles wide and 3 tall (3/4 view from above)."""
    s = surf(64, 96)
    tyre = (34, 34, 40)
    # wheels peeking out
    for y0 in (18, 66):
        R(s, 6, y0, 5, 14, tyre)
        R(s, 53, y0, 5, 14, tyre)
    if kind == "ambulance":
        # patient box (rear), seen from above
        R(s, 9, 3, 46, 60, body)
        hline(s, 9, 54, 3, body_hi)
        vline(s, 9, 3, 62, body_hi)
        vline(s, 54, 3, 62, body_lo)
        R(s, 9, 36, 46, 5, RED)          # red band around the box
        hline(s, 9, 54, 36, RED_HI)
        R(s, 23, 10, 18, 18, RED)        # roof cross
        R(s, 28, 7, 8, 24, RED)
        R(s, 20, 14, 24, 8, RED)
        R(s, 29, 8, 6, 22, RED_HI)
        R(s, 21, 15, 22, 6, RED_HI)
        R(s, 12, 50, 8, 6, (200, 204, 210))  # roof vents
        R(s, 44, 50, 8, 6, (200, 204, 210))
        # cab
        R(s, 11, 63, 42, 30, body)
        R(s, 11, 62, 42, 4, (70, 74, 84))
        R(s, 14, 64, 8, 2, RED)          # light bar
        R(s, 22, 64, 8, 2, (250, 250, 250))
        R(s, 30, 64, 8, 2, (60, 120, 240))
        R(s, 38, 64, 8, 2, RED)
        R(s, 13, 68, 38, 9, (60, 96, 140))   # windscreen
        hline(s, 13, 50, 68, (120, 160, 200))
        for i in range(5):
            P(s, 16 + i, 75 - i, GLASS_HI)
        R(s, 11, 77, 42, 10, body)        # bonnet
        hline(s, 11, 52, 77, body_hi)
        R(s, 11, 87, 42, 6, (150, 156, 168))  # bumper
        R(s, 13, 87, 7, 3, YELLOW)        # headlights
        R(s, 44, 87, 7, 3, YELLOW)
        R(s, 26, 88, 12, 3, (90, 96, 108))
    else:
        R(s, 9, 6, 46, 86, body)
        vline(s, 9, 6, 91, body_hi)
        vline(s, 54, 6, 91, body_lo)
        hline(s, 9, 54, 6, body_hi)
        R(s, 13, 16, 38, 9, (60, 96, 140))   # rear window
        R(s, 13, 25, 38, 30, body_hi)        # roof
        hline(s, 13, 50, 54, body_lo)
        R(s, 13, 55, 38, 12, (60, 96, 140))  # windscreen
        for i in range(5):
            P(s, 16 + i, 64 - i, GLASS_HI)
        R(s, 11, 67, 42, 17, body)          # bonnet
        hline(s, 11, 52, 67, body_hi)
        R(s, 11, 84, 42, 6, (150, 156, 168))
        R(s, 13, 84, 7, 3, YELLOW)
        R(s, 44, 84, 7, 3, YELLOW)
        R(s, 9, 8, 8, 3, RED)               # tail lights
        R(s, 47, 8, 8, 3, RED)
    finish(s, dx=3, dy=3)
    t = slice_tiles(s)
    return [t[r][c] for r in range(3) for c in range(2)]


def sanitizer_stand():
    s = surf()
    R(s, 15, 12, 3, 14, METAL)
    vline(s, 15, 12, 25, METAL_HI)
    R(s, 11, 25, 11, 3, METAL_LO)
    box(s, 11, 3, 11, 11, WHITE)
    R(s, 13, 7, 7, 5, (130, 200, 230))
    R(s, 14, 14, 5, 2, METAL_LO)
    P(s, 16, 5, RED)
    return finish(s)


def iv_stand():
    s = surf()
    # five-star wheeled base
    hline(s, 9, 23, 27, METAL_LO)
    P(s, 8, 28, INK)
    P(s, 24, 28, INK)
    P(s, 16, 28, INK)
    # pole and hook bar
    vline(s, 16, 4, 27, METAL)
    vline(s, 17, 4, 27, METAL_LO)
    hline(s, 10, 23, 4, METAL)
    # two bags hanging from the hooks
    for bx in (9, 20):
        rbox(s, bx, 5, 6, 9, (214, 238, 250))
        R(s, bx + 1, 9, 4, 4, (170, 220, 244))
        vline(s, bx + 3, 14, 20, (190, 214, 230))
    return finish(s)


def privacy_curtain():
    s = surf()
    hline(s, 2, 29, 1, METAL_LO)
    cur, lo, hi = (160, 206, 200), (120, 172, 166), (196, 232, 226)
    R(s, 4, 2, 24, 25, cur)
    for x in range(4, 28, 4):
        vline(s, x, 2, 26, lo)
        vline(s, x + 1, 2, 26, hi)
    for x in range(4, 28):
        if x % 4 in (1, 2):
            P(s, x, 27, cur)
    return finish(s)


def med_cart():
    s = surf()
    R(s, 6, 8, 20, 17, (86, 140, 200))
    R(s, 5, 6, 22, 3, (230, 234, 240))
    for y in (11, 16, 21):
        hline(s, 7, 24, y - 1, (60, 110, 170))
        R(s, 13, y, 6, 1, METAL_HI)
    R(s, 8, 3, 5, 4, WHITE)                      # boxes on top
    R(s, 15, 4, 4, 3, (250, 200, 80))
    R(s, 20, 2, 3, 5, (230, 120, 120))
    R(s, 7, 25, 3, 3, INK)
    R(s, 22, 25, 3, 3, INK)
    return finish(s)


def aquarium():
    """A fish tank on a low cabinet, 2 tiles wide."""
    s = surf(64, 32)
    R(s, 4, 19, 56, 10, WOOD)
    hline(s, 4, 59, 19, WOOD_HI)
    R(s, 8, 22, 20, 5, WOOD_LO)
    R(s, 36, 22, 20, 5, WOOD_LO)
    R(s, 4, 2, 56, 17, (110, 180, 220))
    hline(s, 4, 59, 2, (60, 64, 76))
    hline(s, 4, 59, 3, (170, 220, 240))
    R(s, 4, 15, 56, 4, (226, 206, 150))          # sand
    for x in (10, 12, 40, 50, 52):
        for y in range(7 + (x % 3), 15):
            P(s, x + (y % 2), y, GREEN)
    for (fx, fy, c) in ((20, 8, (250, 140, 50)), (32, 11, (250, 220, 80)), (44, 7, (240, 90, 90))):
        R(s, fx, fy, 4, 2, c)
        P(s, fx + 4, fy - 1, c)
        P(s, fx + 4, fy + 2, c)
        P(s, fx, fy, INK)
    for (bx, by) in ((27, 5), (28, 8), (26, 11)):
        P(s, bx, by, (220, 240, 250))
    finish(s)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def brochure_rack():
    s = surf()
    R(s, 8, 3, 16, 23, WOOD_LO)
    R(s, 8, 3, 16, 2, WOOD_HI)
    for i, y in enumerate((6, 12, 18)):
        for k, x in enumerate((10, 17)):
            c = (RED, BLUE_HI, YELLOW, GREEN_HI, (240, 140, 180), WHITE)[(i * 2 + k) % 6]
            R(s, x, y, 5, 6, c)
            hline(s, x + 1, x + 3, y + 2, WHITE if c != WHITE else BLUE)
    R(s, 9, 26, 3, 2, WOOD_DK)
    R(s, 20, 26, 3, 2, WOOD_DK)
    return finish(s)


def floor_wood_dark():
    s = surf()
    tones = [(140, 92, 62), (128, 84, 56), (148, 100, 68), (134, 88, 58)]
    for row in range(4):
        y0 = row * 8
        c = tones[row]
        R(s, 0, y0, T, 8, c)
        hline(s, 0, 31, y0, sh(c, 1.14))
        hline(s, 0, 31, y0 + 7, (84, 54, 36))
        for y in range(y0 + 2, y0 + 6):
            for x in range(T):
                if nz(x // 3, y, 24 + row) < 0.18:
                    P(s, x, y, sh(c, 0.9))
        for j in ((row * 13 + 9) % 32, (row * 13 + 25) % 32):
            vline(s, j, y0, y0 + 6, (84, 54, 36))
    return s


def plant_tall():
    s = surf()
    R(s, 10, 22, 12, 7, (236, 236, 230))
    R(s, 9, 21, 14, 2, WHITE)
    hline(s, 11, 20, 28, PLASTIC_LO)
    vline(s, 16, 10, 21, (110, 80, 50))
    # broad monstera-like leaves
    for (cx, cy, r, salt) in ((10, 11, 5, 90), (22, 10, 5, 91), (16, 5, 5, 92), (11, 18, 3, 93),
                              (22, 17, 3, 94)):
        leafy(s, cx, cy, r, salt, GREEN_DK, GREEN_LO, GREEN)
    for (x, y) in ((9, 10), (21, 9), (15, 4)):
        P(s, x, y, GREEN_HI)
        P(s, x + 1, y + 1, GREEN_HI)
    return finish(s)


def fire_extinguisher():
    s = surf()
    R(s, 13, 12, 7, 14, RED)
    vline(s, 14, 13, 24, RED_HI)
    R(s, 14, 9, 5, 3, (60, 60, 70))
    hline(s, 19, 22, 10, (60, 60, 70))
    vline(s, 22, 10, 17, (60, 60, 70))
    R(s, 14, 17, 5, 3, WHITE)
    return finish(s, dx=1, dy=1)


def exit_sign():
    s = surf()
    box(s, 6, 10, 20, 11, (40, 150, 80))
    draw_text(s, 9, 13, "EXIT", WHITE)
    hline(s, 7, 24, 11, (80, 190, 120))
    return finish(s, dx=1, dy=1)


def painting(kind):
    s = surf()
    box(s, 5, 8, 22, 17, (214, 170, 90), (120, 80, 40))
    R(s, 7, 10, 18, 13, (150, 200, 236))
    if kind == "landscape":
        for x in range(7, 25):
            h = 3 + int(3 * abs(((x - 7) % 12) - 6) / 6)
            vline(s, x, 22 - h - 2, 22, (96, 160, 90))
        disc(s, 20, 13, 1, YELLOW)
        hline(s, 9, 12, 12, WHITE)
    else:
        R(s, 7, 10, 18, 13, (244, 232, 210))
        box(s, 13, 16, 6, 6, (90, 120, 190))
        for (x, y, c) in ((14, 12, RED), (17, 11, YELLOW), (16, 14, (240, 130, 170)), (12, 14, RED_HI)):
            disc(s, x, y, 1, c)
        vline(s, 15, 13, 16, GREEN_LO)
    return finish(s, dx=1, dy=1)


def apron_rack():
    s = surf()
    hline(s, 4, 27, 4, METAL_LO)
    vline(s, 5, 4, 27, METAL_LO)
    vline(s, 26, 4, 27, METAL_LO)
    hline(s, 3, 8, 27, STEEL_DK)
    hline(s, 23, 28, 27, STEEL_DK)
    for i, (x, c) in enumerate(((8, (60, 110, 170)), (16, (80, 150, 120)))):
        R(s, x, 5, 8, 16, c)
        R(s, x + 2, 5, 4, 3, sh(c, 0.7))
        hline(s, x, x + 7, 20, sh(c, 0.8))
        P(s, x + 4, 12, YELLOW)
    return finish(s)


# outdoor -------------------------------------------------------------------------------
def hedge():
    s = surf()
    for y in range(T):
        for x in range(T):
            n = nz(x, y, 50)
            c = GREEN if y < 22 else GREEN_LO
            if n < 0.18:
                c = GREEN_LO if y < 22 else GREEN_DK
            elif n < 0.30 and y < 22:
                c = GREEN_HI
            P(s, x, y, c)
    # leafy bumps along the top and a dark base
    for x in range(0, T, 8):
        leafy(s, x + 4, 5, 4, 51 + x)
    hline(s, 0, 31, 22, GREEN_DK)
    R(s, 0, 29, T, 3, GREEN_DK)
    return s


def bush():
    s = surf()
    leafy(s, 16, 17, 10, 60)
    leafy(s, 11, 13, 5, 61)
    leafy(s, 21, 12, 5, 62)
    for (x, y) in ((10, 18), (20, 20), (15, 10)):
        P(s, x, y, (240, 120, 160))
    return finish(s, dx=2, dy=2)


def tree():
    s = surf(64, 64)
    # trunk
    R(s, 28, 40, 8, 18, (120, 82, 52))
    vline(s, 29, 40, 57, (150, 104, 66))
    R(s, 25, 56, 14, 3, (100, 66, 42))
    leafy(s, 32, 26, 21, 70)
    leafy(s, 20, 32, 10, 71)
    leafy(s, 44, 32, 10, 72)
    leafy(s, 32, 14, 12, 73)
    finish(s, dx=3, dy=3)
    t = slice_tiles(s)
    return t[0][0], t[0][1], t[1][0], t[1][1]


def bench():
    s = surf(64, 32)
    R(s, 4, 8, 56, 4, WOOD)       # backrest slats
    R(s, 4, 13, 56, 3, WOOD_HI)
    R(s, 4, 17, 56, 7, WOOD)
    hline(s, 4, 59, 17, WOOD_HI)
    hline(s, 4, 59, 20, WOOD_LO)
    for x in (7, 54):
        R(s, x, 6, 3, 22, (60, 64, 76))
    finish(s)
    t = slice_tiles(s)[0]
    return t[0], t[1]


def lamp_post():
    s = surf()
    R(s, 15, 8, 3, 20, (60, 64, 76))
    vline(s, 15, 8, 27, (90, 96, 110))
    R(s, 12, 27, 9, 2, (60, 64, 76))
    rbox(s, 11, 0, 11, 9, (250, 236, 160), (60, 64, 76))
    R(s, 13, 2, 7, 5, (255, 248, 200))
    return finish(s)


def flower_bed():
    s = surf()
    R(s, 2, 6, 28, 22, (120, 84, 60))
    for y in range(8, 26):
        for x in range(4, 28):
            if nz(x, y, 80) < 0.25:
                P(s, x, y, (100, 68, 48))
    for i in range(10):
        x = 5 + (i * 7) % 22
        y = 9 + (i * 5) % 15
        c = (RED, YELLOW, (240, 120, 180), WHITE, (150, 110, 220))[i % 5]
        leafy(s, x, y + 1, 2, 81 + i)
        P(s, x, y, c)
        P(s, x + 1, y, c)
        P(s, x, y - 1, c)
    R(s, 2, 26, 28, 3, STONE)
    hline(s, 2, 29, 26, STONE_HI)
    return finish(s)


def toy_blocks():
    s = surf()
    for (x, y, c, ch) in ((6, 16, RED, "A"), (16, 17, BLUE, "B"), (11, 7, YELLOW, "C")):
        box(s, x, y, 9, 9, c)
        hline(s, x + 1, x + 7, y + 1, sh(c, 1.2))
        draw_text(s, x + 3, y + 2, ch, WHITE)
    return finish(s)


# --------------------------------------------------------------------------------------
# build the tileset (order = tile ids; keep stable, the README table is generated)
# --------------------------------------------------------------------------------------
def build_tiles():
    add = TS.add
    # floors ---------------------------------------------------------------------------
    add("floor_corridor", "floor", False, floor_corridor())
    add("floor_clinic", "floor", False, floor_clinic())
    add("floor_lab", "floor", False, floor_lab())
    add("floor_wood", "floor", False, floor_wood())
    add("floor_lobby", "floor", False, floor_lobby())
    add("floor_wood_dark", "floor", False, floor_wood_dark())
    add("grass", "floor", False, floor_grass())
    add("grass_flowers", "floor", False, floor_grass_flowers())
    add("path", "floor", False, floor_path())
    add("mat_l", "floor", False, floor_mat("l"))
    add("mat_r", "floor", False, floor_mat("r"))
    for p in ("tl", "t", "tr", "l", "c", "r", "bl", "b", "br"):
        add("rug_" + p, "floor", False, rug(p))
    # doors ----------------------------------------------------------------------------
    add("door_h", "door", False, door_h())
    add("door_h_l", "door", False, door_h(True, False))
    add("door_h_r", "door", False, door_h(False, True))
    add("door_v", "door", False, door_v())
    add("door_front_l", "door", False, door_front("l"))
    add("door_front_r", "door", False, door_front("r"))
    # walls: caps (N/W/E rim flags) and faces ---------------------------------------------
    for bits in range(8):
        n, w, e = bool(bits & 1), bool(bits & 2), bool(bits & 4)
        add("wall_cap_" + flags(n, w, e), "wall", True, wall_cap(n, w, e))
    for bits in range(8):
        n, w, e = bool(bits & 1), bool(bits & 2), bool(bits & 4)
        add("wall_face_" + flags(n, w, e), "wall", True, wall_face(n, w, e, "int"))
    for bits in range(8):
        n, w, e = bool(bits & 1), bool(bits & 2), bool(bits & 4)
        add("wall_ext_" + flags(n, w, e), "wall", True, wall_face(n, w, e, "ext"))
    add("wall_face_window", "wall", True, wall_face(True, False, False, "int", window=True))
    add("wall_ext_window", "wall", True, wall_face(True, False, False, "ext", window=True))
    # wall signs (overlays) --------------------------------------------------------------
    add("sign_redcross", "sign", True, sign_redcross())
    add("sign_hospital_l", "sign", True, sign_hospital("l"))
    add("sign_hospital_r", "sign", True, sign_hospital("r"))
    for key, txt in PLAQUES:
        add("plaque_" + key, "sign", True, plaque(txt))
    wb = whiteboard()
    add("whiteboard_l", "sign", True, wb[0])
    add("whiteboard_r", "sign", True, wb[1])
    add("tv", "sign", True, tv_screen())
    add("xray_viewer", "sign", True, xray_viewer())
    add("eye_chart", "sign", True, eye_chart())
    add("clock", "sign", True, wall_clock())
    add("sign_radiation", "sign", True, sign_radiation())
    add("notice_board", "sign", True, notice_board())
    add("sanitizer", "sign", True, sanitizer())
    add("fire_extinguisher", "sign", True, fire_extinguisher())
    add("exit_sign", "sign", True, exit_sign())
    add("painting_landscape", "sign", True, painting("landscape"))
    add("painting_flowers", "sign", True, painting("flowers"))
    add("sanitizer_stand", "furniture", True, sanitizer_stand())
    # seats (walkable: a character sits on them) -----------------------------------------
    for f in ("down", "up", "left", "right"):
        add("chair_" + f, "seat", False, waiting_chair(f))
    for f in ("down", "up", "left", "right"):
        add("office_chair_" + f, "seat", False, office_chair(f))
    # furniture -----------------------------------------------------------------------
    rd = reception_desk()
    add("reception_l", "furniture", True, rd[0])
    add("reception_m", "furniture", True, rd[1])
    add("reception_r", "furniture", True, rd[2])
    add("reception_pc", "furniture", True, over(rd[1], monitor_item()))
    info = surf()
    box(info, 6, 19, 20, 8, WHITE, (40, 80, 120))
    draw_text(info, 9, 21, "INFO", (40, 80, 120))
    add("reception_info", "furniture", True, over(rd[1], info))
    dk = desk_pieces()
    add("desk_l", "furniture", True, dk[0])
    add("desk_r", "furniture", True, over(dk[1], papers_item()))
    add("desk_pc_l", "furniture", True, over(dk[0], monitor_item()))
    add("desk_pc_r", "furniture", True, over(dk[1], monitor_item()))
    eb = exam_bed()
    add("exam_bed_top", "furniture", True, eb[0])
    add("exam_bed_bottom", "furniture", True, eb[1])
    hb = hospital_bed()
    add("bed_top", "furniture", True, hb[0])
    add("bed_bottom", "furniture", True, hb[1])
    add("plant_big", "furniture", True, plant_big())
    add("plant_small", "furniture", True, plant_small())
    add("plant_tall", "furniture", True, plant_tall())
    add("bookshelf", "furniture", True, bookshelf())
    add("filing_cabinet", "furniture", True, filing_cabinet())
    add("binder_shelf", "furniture", True, binder_shelf())
    ct = conference_table()
    for name, t in zip(("table_tl", "table_tr", "table_ml", "table_mr", "table_bl", "table_br"), ct):
        add(name, "furniture", True, t)
    cf = coffee_table()
    add("coffee_table_l", "furniture", True, cf[0])
    add("coffee_table_r", "furniture", True, cf[1])
    add("bedside_table", "furniture", True, bedside_table())
    add("medicine_cabinet", "furniture", True, medicine_cabinet())
    add("water_cooler", "furniture", True, water_cooler())
    add("vending_machine", "furniture", True, vending_machine())
    add("trash_bin", "furniture", True, trash_bin())
    add("coat_rack", "furniture", True, coat_rack())
    add("stool", "furniture", True, stool())
    add("toy_blocks", "furniture", True, toy_blocks())
    aq = aquarium()
    add("aquarium_l", "furniture", True, aq[0])
    add("aquarium_r", "furniture", True, aq[1])
    add("brochure_rack", "furniture", True, brochure_rack())
    add("sink", "furniture", True, sink())
    # equipment -----------------------------------------------------------------------
    add("lab_bench", "equipment", True, lab_bench())
    add("lab_bench_end_l", "equipment", True, lab_bench(end="l"))
    add("lab_bench_end_r", "equipment", True, lab_bench(end="r"))
    add("lab_bench_microscope", "equipment", True, lab_bench("microscope"))
    add("lab_bench_tubes", "equipment", True, lab_bench("tubes"))
    add("lab_bench_sink", "equipment", True, lab_bench("sink"))
    add("lab_bench_centrifuge", "equipment", True, lab_bench("centrifuge"))
    add("lab_fridge", "equipment", True, lab_fridge())
    add("biohazard_bin", "equipment", True, biohazard_bin())
    add("ecg_machine", "equipment", True, ecg_machine())
    add("iv_stand", "equipment", True, iv_stand())
    add("wheelchair", "equipment", True, wheelchair())
    xr = xray_machine()
    add("xray_l", "equipment", True, xr[0])
    add("xray_r", "equipment", True, xr[1])
    add("lead_screen", "equipment", True, lead_screen())
    add("apron_rack", "equipment", True, apron_rack())
    add("privacy_curtain", "furniture", True, privacy_curtain())
    add("med_cart", "equipment", True, med_cart())
    sc = ct_scanner()
    add("scanner_tl", "equipment", True, sc[0])
    add("scanner_tr", "equipment", True, sc[1])
    add("scanner_bl", "equipment", True, sc[2])
    add("scanner_br", "equipment", True, sc[3])
    tb = ct_table()
    add("scanner_table_l", "equipment", True, tb[0])
    add("scanner_table_r", "equipment", True, tb[1])
    cd = control_desk()
    add("console_l", "equipment", True, cd[0])
    add("console_r", "equipment", True, cd[1])
    # outdoors ------------------------------------------------------------------------
    add("hedge", "plant", True, hedge())
    add("bush", "plant", True, bush())
    tr = tree()
    add("tree_tl", "plant", True, tr[0])
    add("tree_tr", "plant", True, tr[1])
    add("tree_bl", "plant", True, tr[2])
    add("tree_br", "plant", True, tr[3])
    bn = bench()
    add("bench_l", "furniture", True, bn[0])
    add("bench_r", "furniture", True, bn[1])
    add("lamp_post", "furniture", True, lamp_post())
    add("flower_bed", "plant", True, flower_bed())
    add("asphalt", "floor", False, asphalt())
    add("asphalt_line", "floor", False, asphalt("bay"))
    parts = ("tl", "tr", "ml", "mr", "bl", "br")
    for name, t in zip(parts, vehicle((244, 244, 240), (255, 255, 255), (200, 204, 212), "ambulance")):
        add("ambulance_" + name, "vehicle", True, t)
    for name, t in zip(parts, vehicle((200, 60, 64), (230, 96, 96), (150, 40, 50), "car")):
        add("car_red_" + name, "vehicle", True, t)
    for name, t in zip(parts, vehicle((70, 120, 190), (110, 160, 220), (50, 86, 140), "car")):
        add("car_blue_" + name, "vehicle", True, t)


def flags(n, w, e):
    return ("n" if n else "") + ("w" if w else "") + ("e" if e else "") or "0"


PLAQUES = [
    ("consult_1", "ROOM 1"), ("consult_2", "ROOM 2"), ("consult_3", "ROOM 3"),
    ("ecg", "ECG"), ("lab", "LAB"), ("ward", "WARD"),
    ("xray", "X-RAY"), ("ct_mri", "CT/MRI"), ("reception", "INFO"),
    ("waiting", "WAITING"), ("conference", "MEETING"), ("records", "RECORDS"),
]


# --------------------------------------------------------------------------------------
# the map
# --------------------------------------------------------------------------------------
MW, MH = 60, 40
OUTDOOR = {"grass", "grass_flowers", "path"}

# rooms: name -> (address, x, y, w, h) in tiles; the rectangle is the room's floor area
ROOMS = [
    ("entrance", "hospital:entrance", 11, 28, 38, 12),
    ("reception", "hospital:reception", 17, 14, 12, 13),
    ("waiting", "hospital:waiting", 30, 14, 13, 13),
    ("consult_1", "hospital:consult:1", 2, 2, 7, 7),
    ("consult_2", "hospital:consult:2", 10, 2, 7, 7),
    ("consult_3", "hospital:consult:3", 18, 2, 7, 7),
    ("ecg", "hospital:ecg", 26, 2, 7, 7),
    ("lab", "hospital:lab", 34, 2, 12, 7),
    ("ward", "hospital:ward", 47, 2, 11, 7),
    ("imaging_xray", "hospital:imaging:xray", 2, 14, 11, 6),
    ("imaging_ct_mri", "hospital:imaging:ct_mri", 2, 21, 11, 6),
    ("conference", "hospital:conference", 47, 14, 11, 6),
    ("records", "hospital:records", 47, 21, 11, 6),
    ("corridor_main", "hospital:corridor:main", 2, 10, 56, 3),
    ("corridor_west", "hospital:corridor:west", 14, 13, 2, 14),
    ("corridor_east", "hospital:corridor:east", 44, 13, 2, 14),
]

ROOM_FLOOR = {
    "reception": "floor_lobby", "waiting": "floor_lobby",
    "consult_1": "floor_clinic", "consult_2": "floor_clinic", "consult_3": "floor_clinic",
    "ecg": "floor_clinic", "ward": "floor_clinic",
    "lab": "floor_lab", "imaging_xray": "floor_lab", "imaging_ct_mri": "floor_lab",
    "conference": "floor_wood", "records": "floor_wood_dark",
    "corridor_main": "floor_corridor", "corridor_west": "floor_corridor",
    "corridor_east": "floor_corridor",
}


class Map:
    def __init__(self):
        self.floor = [[None] * MW for _ in range(MH)]
        self.wall = [[False] * MW for _ in range(MH)]
        self.walls = [[None] * MW for _ in range(MH)]
        self.furn = [[None] * MW for _ in range(MH)]
        self.windows = set()
        self.points = []   # (name, type, x, y, props)
        self.properties = {"name": "medsim hospital"}   # the map's own custom properties

    # editing -------------------------------------------------------------------------
    def fl(self, x, y, name):
        self.floor[y][x] = name

    def put(self, x, y, name):
        assert self.furn[y][x] is None, (x, y, name, self.furn[y][x])
        self.furn[y][x] = name

    def block(self, x, y, names):
        for dy, row in enumerate(names):
            for dx, n in enumerate(row):
                if n:
                    self.put(x + dx, y + dy, n)

    def rug(self, x, y, w, h):
        for j in range(h):
            for i in range(w):
                v = "t" if j == 0 else ("b" if j == h - 1 else "")
                hp = "l" if i == 0 else ("r" if i == w - 1 else "")
                self.fl(x + i, y + j, "rug_" + ((v + hp) or "c"))

    def wall_rect(self, x0, y0, x1, y1):
        for x in range(x0, x1 + 1):
            self.wall[y0][x] = self.wall[y1][x] = True
        for y in range(y0, y1 + 1):
            self.wall[y][x0] = self.wall[y][x1] = True

    def hwall(self, x0, x1, y):
        for x in range(x0, x1 + 1):
            self.wall[y][x] = True

    def vwall(self, x, y0, y1):
        for y in range(y0, y1 + 1):
            self.wall[y][x] = True

    def door(self, x, y, name):
        self.wall[y][x] = False
        self.floor[y][x] = name

    def point(self, name, typ, x, y, **props):
        self.points.append((name, typ, x, y, props))

    # wall autotiling -----------------------------------------------------------------
    def is_wall(self, x, y):
        return 0 <= x < MW and 0 <= y < MH and self.wall[y][x]

    def is_face(self, x, y):
        return self.is_wall(x, y) and y + 1 < MH and not self.is_wall(x, y + 1)

    def resolve_walls(self):
        for y in range(MH):
            for x in range(MW):
                if not self.wall[y][x]:
                    continue
                n = not self.is_wall(x, y - 1)
                if self.is_face(x, y):
                    w = not self.is_face(x - 1, y)
                    e = not self.is_face(x + 1, y)
                    style = "ext" if self.floor[y + 1][x] in OUTDOOR else "face"
                    if (x, y) in self.windows and n and not w and not e:
                        name = "wall_%s_window" % style
                    else:
                        name = "wall_%s_%s" % (style, flags(n, w, e))
                else:
                    w = not self.is_wall(x - 1, y)
                    e = not self.is_wall(x + 1, y)
                    name = "wall_cap_" + flags(n, w, e)
                self.walls[y][x] = name


def build_map():
    m = Map()
    # examinations at the bedside: the technician comes to the consultation room (the
    # map's properties, one rule for every consultation room; see maps/README.md)
    m.properties.update(
        bedside_label="At the bedside", bedside_priority=10,
        bedside_tests="vital, signs, auscultation, palpation, inspection, percussion, physical, "
                      "neurological, reflexes, examination, exam, pressure, temperature, pulse, heart, "
                      "lung, abdominal, skin, eye, fundoscopy, otoscopy")
    # outdoors: grass with a few flowers
    for y in range(MH):
        for x in range(MW):
            m.fl(x, y, "grass_flowers" if nz(x, y, 90) < 0.10 else "grass")
    # room floors
    for name, _, x, y, w, h in ROOMS:
        if name == "entrance":
            continue
        for j in range(h):
            for i in range(w):
                m.fl(x + i, y + j, ROOM_FLOOR[name])
    # building shell and interior walls --------------------------------------------------
    m.wall_rect(1, 1, 58, 27)
    m.hwall(1, 58, 9)
    for x in (9, 17, 25, 33, 46):
        m.vwall(x, 1, 9)
    m.hwall(1, 58, 13)
    for x in (13, 16, 29, 43, 46):
        m.vwall(x, 13, 27)
    m.hwall(1, 13, 20)
    m.hwall(46, 58, 20)
    # corridor mouths (open, plain corridor floor)
    for x in (14, 15, 44, 45):
        m.door(x, 13, "floor_corridor")
    # doors onto the corridors
    for x0 in (2, 10, 18, 26):
        m.door(x0 + 3, 9, "door_h")        # consult 1-3, ecg
    m.door(39, 9, "door_h")                # lab
    m.door(52, 9, "door_h")                # ward
    m.door(13, 17, "door_v")               # x-ray
    m.door(13, 24, "door_v")               # ct/mri
    m.door(46, 16, "door_v")               # conference
    m.door(46, 24, "door_v")               # records
    m.door(22, 13, "door_h_l")             # reception (double door)
    m.door(23, 13, "door_h_r")
    m.door(36, 13, "door_h")               # waiting
    m.door(29, 19, "floor_lobby")          # reception <-> waiting archway
    m.door(29, 20, "floor_lobby")
    m.door(22, 27, "door_front_l")         # the front door
    m.door(23, 27, "door_front_r")

    # ---- consult rooms ----------------------------------------------------------------
    for k, x0 in ((1, 2), (2, 10), (3, 18)):
        m.windows.update({(x0 + 1, 1), (x0 + 3, 1)})
        m.put(x0 + 5, 1, "eye_chart")
        m.put(x0, 2, "bookshelf")
        m.put(x0 + 5, 2, "medicine_cabinet")
        m.put(x0 + 6, 2, "sink")
        m.put(x0 + 2, 4, "office_chair_down")
        m.block(x0 + 2, 5, [["desk_pc_l", "desk_r"]])
        m.put(x0 + 2, 6, "chair_up")
        m.block(x0 + 6, 4, [["exam_bed_top"], ["exam_bed_bottom"]])
        m.put(x0 + 5, 5, "stool")
        m.put(x0, 8, "plant_big")
        m.put(x0 + 6, 8, "trash_bin")
        m.put(x0, 5, "coat_rack")
        m.put(x0 + 4, 9, "plaque_consult_%d" % k)
        m.point("consult_%d_doctor" % k, "seat", x0 + 2, 4, room="consult_%d" % k, facing="down")
        m.point("consult_%d_patient" % k, "seat", x0 + 2, 6, room="consult_%d" % k, facing="up")

    # ---- ECG ----------------------------------------------------------------------------
    m.windows.update({(27, 1), (31, 1)})
    m.put(29, 1, "notice_board")
    m.put(27, 2, "ecg_machine")
    m.block(28, 2, [["bed_top"], ["bed_bottom"]])
    m.put(29, 2, "bedside_table")
    m.put(31, 2, "medicine_cabinet")
    m.put(32, 2, "sink")
    m.put(29, 3, "chair_left")
    m.put(30, 2, "privacy_curtain")
    m.put(26, 6, "med_cart")
    m.put(32, 5, "wheelchair")
    m.put(26, 8, "plant_big")
    m.put(32, 8, "biohazard_bin")
    m.put(30, 9, "plaque_ecg")
    m.point("ecg_machine", "equipment", 27, 2, room="ecg", station="ecg_station")
    m.point("ecg_station", "station", 27, 3, room="ecg", facing="up", equipment="ecg_machine",
            label="ECG", priority=40, tests="ecg, electrocardiogram, ekg, holter")

    # ---- lab ------------------------------------------------------------------------------
    m.windows.update({(37, 1), (42, 1)})
    m.put(39, 1, "sanitizer")
    m.put(40, 1, "notice_board")
    m.block(34, 2, [["lab_bench", "lab_bench_microscope", "lab_bench_tubes", "lab_bench",
                     "lab_bench_sink", "lab_bench_centrifuge", "lab_bench_tubes", "lab_bench",
                     "lab_bench_microscope", "lab_bench", "lab_fridge", "lab_fridge"]])
    m.block(37, 5, [["lab_bench_end_l", "lab_bench_tubes", "lab_bench", "lab_bench_centrifuge",
                     "lab_bench_end_r"]])
    m.put(38, 6, "stool")
    m.put(40, 6, "stool")
    m.put(34, 8, "biohazard_bin")
    m.block(36, 8, [["desk_pc_l", "desk_r"]])
    m.put(36, 7, "office_chair_down")
    m.put(45, 8, "plant_big")
    m.put(45, 5, "coat_rack")
    m.put(40, 9, "plaque_lab")
    m.point("lab_bench", "equipment", 35, 2, room="lab", station="lab_station")
    m.point("lab_station", "station", 35, 3, room="lab", facing="up", equipment="lab_bench",
            label="Lab", default=True)
    m.point("technician_spawn", "spawn", 42, 7, room="lab", facing="down", role="technician")

    # ---- ward -----------------------------------------------------------------------------
    for bx in (48, 52, 56):
        m.windows.add((bx, 1))
        m.block(bx, 2, [["bed_top"], ["bed_bottom"]])
        m.put(bx + 1, 2, "bedside_table")
        m.put(bx - 1, 2, "iv_stand")
    for cx in (50, 54):
        m.put(cx, 2, "privacy_curtain")
    for vx in (49, 53, 57):
        m.put(vx, 3, "chair_left")
    m.put(47, 8, "plant_big")
    m.put(57, 8, "plant_small")
    m.put(49, 7, "wheelchair")
    m.put(55, 7, "med_cart")
    m.put(50, 1, "clock")
    m.put(53, 9, "plaque_ward")

    # ---- main corridor --------------------------------------------------------------------
    m.put(2, 10, "plant_big")
    m.put(57, 10, "plant_big")
    m.put(47, 10, "water_cooler")
    m.put(9, 9, "sign_redcross")
    m.put(12, 9, "sanitizer")
    m.put(20, 9, "sanitizer")
    m.put(33, 9, "clock")
    m.put(43, 9, "notice_board")
    m.put(8, 9, "fire_extinguisher")
    m.put(27, 9, "painting_landscape")
    m.put(36, 9, "fire_extinguisher")
    m.put(49, 9, "painting_flowers")
    m.put(56, 9, "exit_sign")
    # side corridors
    m.put(14, 26, "plant_big")
    m.put(15, 26, "wheelchair")
    m.put(45, 26, "plant_big")
    m.put(44, 26, "iv_stand")

    # ---- x-ray ------------------------------------------------------------------------------
    m.put(3, 13, "xray_viewer")
    m.put(4, 13, "xray_viewer")
    m.put(12, 13, "sign_radiation")
    m.block(5, 17, [["xray_l", "xray_r"]])
    m.block(9, 14, [["console_l", "console_r"]])
    m.put(9, 15, "office_chair_up")
    m.put(8, 15, "lead_screen")
    m.put(2, 14, "apron_rack")
    m.put(2, 19, "plant_big")
    m.put(12, 19, "trash_bin")
    m.put(13, 16, "plaque_xray")
    m.point("xray_machine", "equipment", 5, 17, room="imaging_xray", station="xray_station")
    m.point("xray_station", "station", 5, 18, room="imaging_xray", facing="up",
            equipment="xray_machine", label="Imaging: X-ray", priority=30,
            tests="ray, xray, radiograph, film")

    # ---- CT / MRI ----------------------------------------------------------------------------
    m.put(3, 20, "sign_radiation")
    m.block(5, 21, [["scanner_tl", "scanner_tr"], ["scanner_bl", "scanner_br"],
                    ["scanner_table_l", "scanner_table_r"]])
    m.block(9, 21, [["console_l", "console_r"]])
    m.put(9, 22, "office_chair_up")
    m.put(2, 26, "plant_big")
    m.put(12, 26, "plant_small")
    m.put(13, 23, "plaque_ct_mri")
    m.point("ct_scanner", "equipment", 6, 22, room="imaging_ct_mri", station="ct_station")
    m.point("ct_station", "station", 7, 22, room="imaging_ct_mri", facing="left",
            equipment="ct_scanner", label="Imaging: CT/MRI", priority=20,
            tests="ct, mri, tomography, angiogram, angiography, scan, ultrasound, doppler, "
                  "echocardiogram, echo, transvaginal, imaging, mra, pet")

    # ---- reception ----------------------------------------------------------------------------
    m.fl(22, 26, "mat_l")
    m.fl(23, 26, "mat_r")
    m.block(20, 21, [["reception_l", "reception_pc", "reception_m", "reception_info",
                      "reception_m", "reception_r"]])
    m.put(22, 20, "office_chair_down")
    m.put(20, 13, "sign_redcross")
    m.put(24, 13, "plaque_reception")
    m.put(21, 13, "exit_sign")
    m.put(26, 13, "notice_board")
    m.block(18, 14, [["filing_cabinet", "plant_small"]])
    m.put(17, 14, "plant_tall")
    m.put(28, 14, "water_cooler")
    m.put(27, 14, "plant_small")
    m.put(17, 26, "plant_big")
    m.put(28, 26, "plant_tall")
    m.put(17, 23, "wheelchair")
    m.put(17, 24, "wheelchair")
    m.put(26, 18, "sanitizer_stand")
    m.put(19, 18, "brochure_rack")
    m.rug(22, 23, 2, 3)
    m.point("reception_desk", "station", 23, 22, room="reception", facing="up")

    # ---- waiting ------------------------------------------------------------------------------
    m.rug(33, 17, 4, 3)
    m.block(34, 18, [["coffee_table_l", "coffee_table_r"]])
    waits = [(34, 17, "down"), (35, 17, "down"), (33, 18, "right"), (36, 18, "left"),
             (34, 19, "up"), (35, 19, "up"), (42, 17, "left"), (42, 18, "left")]
    for i, (x, y, f) in enumerate(waits, 1):
        m.put(x, y, "chair_" + f)
        m.point("waiting_%d" % i, "seat", x, y, room="waiting", facing=f)
    m.put(34, 13, "tv")
    m.put(37, 13, "plaque_waiting")
    m.put(40, 13, "clock")
    m.put(31, 13, "painting_flowers")
    m.put(39, 14, "trash_bin")
    m.put(40, 14, "vending_machine")
    m.put(41, 14, "water_cooler")
    m.put(30, 14, "plant_big")
    m.put(31, 14, "bookshelf")
    m.put(30, 26, "plant_big")
    m.put(42, 26, "plant_small")
    m.put(42, 19, "plant_small")
    m.rug(37, 22, 5, 3)
    m.put(39, 23, "toy_blocks")
    m.block(31, 24, [["aquarium_l", "aquarium_r"]])
    m.put(30, 24, "plant_small")

    # ---- conference ---------------------------------------------------------------------------
    m.put(51, 13, "whiteboard_l")
    m.put(52, 13, "whiteboard_r")
    m.put(55, 13, "clock")
    m.put(48, 13, "painting_landscape")
    m.block(51, 15, [["table_tl", "table_tr"], ["table_ml", "table_mr"], ["table_bl", "table_br"]])
    seats = [(50, 15, "right"), (50, 17, "right"), (53, 15, "left"), (53, 17, "left")]
    for i, (x, y, f) in enumerate(seats, 1):
        m.put(x, y, "office_chair_" + f)
        m.point("conference_%d" % i, "station", x, y, room="conference", facing=f)
    m.put(56, 14, "bookshelf")
    m.put(57, 14, "plant_big")
    m.put(47, 14, "plant_small")
    m.put(57, 19, "plant_big")
    m.put(46, 15, "plaque_conference")
    m.point("doctor_spawn_1", "spawn", 48, 15, room="conference", facing="down", role="doctor")
    m.point("doctor_spawn_2", "spawn", 48, 18, room="conference", facing="up", role="doctor")
    m.point("doctor_spawn_3", "spawn", 55, 18, room="conference", facing="up", role="doctor")

    # ---- records -----------------------------------------------------------------------------
    m.block(48, 21, [["filing_cabinet", "filing_cabinet", "filing_cabinet", "binder_shelf",
                      "binder_shelf", "bookshelf", "filing_cabinet", "filing_cabinet",
                      "binder_shelf"]])
    m.block(50, 23, [["binder_shelf", "bookshelf", "binder_shelf", "binder_shelf", "bookshelf"]])
    m.block(55, 26, [["desk_pc_l", "desk_r"]])
    m.put(55, 25, "office_chair_down")
    m.put(57, 21, "plant_small")
    m.put(47, 26, "plant_big")
    m.put(46, 23, "plaque_records")
    m.point("records_station", "station", 50, 22, room="records", facing="up")

    # ---- the facade ---------------------------------------------------------------------------
    m.put(20, 27, "sign_redcross")
    m.put(25, 27, "sign_hospital_l")
    m.put(26, 27, "sign_hospital_r")
    m.windows.update({(x, 27) for x in (3, 6, 9, 19, 32, 35, 38, 41, 50, 53, 56)})

    # ---- outdoors: the entrance forecourt -------------------------------------------------------
    for y in range(28, MH):
        m.put(10, y, "hedge")
        m.put(49, y, "hedge")
    for x in range(11, 49):
        if x not in (22, 23, 40, 41, 42):
            m.put(x, MH - 1, "hedge")
    for x in range(11, 49):
        m.fl(x, 28, "path")
    for y in range(28, MH):
        m.fl(22, y, "path")
        m.fl(23, y, "path")
    # car park with an ambulance bay and a drive out through the hedge
    for y in range(30, 35):
        for x in range(31, 49):
            m.fl(x, y, "asphalt")
    for y in range(35, MH):
        for x in (40, 41, 42):
            m.fl(x, y, "asphalt")
    for x in (31, 34, 37, 43, 46):
        for y in (30, 31, 32):
            m.fl(x, y, "asphalt_line")
    m.block(32, 30, [["ambulance_tl", "ambulance_tr"], ["ambulance_ml", "ambulance_mr"],
                     ["ambulance_bl", "ambulance_br"]])
    m.block(38, 30, [["car_red_tl", "car_red_tr"], ["car_red_ml", "car_red_mr"],
                     ["car_red_bl", "car_red_br"]])
    m.block(44, 30, [["car_blue_tl", "car_blue_tr"], ["car_blue_ml", "car_blue_mr"],
                     ["car_blue_bl", "car_blue_br"]])
    # gardens
    m.put(21, 29, "lamp_post")
    m.put(24, 29, "lamp_post")
    m.put(30, 29, "lamp_post")
    for x in (12, 13, 14, 17, 18, 19, 25, 26, 27):
        m.put(x, 29, "flower_bed")
    m.block(15, 31, [["bench_l", "bench_r"]])
    m.block(26, 31, [["bench_l", "bench_r"]])
    m.block(12, 33, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    m.block(27, 35, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    m.block(16, 36, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    m.block(34, 36, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    m.block(45, 35, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    for (bx, by) in ((19, 33), (20, 37), (12, 37), (25, 33), (29, 33), (32, 38), (38, 37),
                     (37, 35), (44, 38), (47, 37)):
        m.put(bx, by, "bush")
    # beyond the hedge
    for (tx, ty) in ((2, 29), (6, 33), (1, 36), (52, 29), (56, 33), (51, 36)):
        m.block(tx, ty, [["tree_tl", "tree_tr"], ["tree_bl", "tree_br"]])
    for (bx, by) in ((5, 29), (8, 38), (4, 37), (55, 38), (58, 30), (54, 34)):
        m.put(bx, by, "bush")

    # points at the front gate
    m.point("entrance_spawn", "spawn", 22, 38, room="entrance", facing="up", role="patient")
    m.point("entrance_exit", "exit", 23, 38, room="entrance", facing="down")

    m.resolve_walls()
    for y in range(MH):
        for x in range(MW):
            if m.wall[y][x]:
                m.floor[y][x] = None
    return m


# --------------------------------------------------------------------------------------
# Tiled writers
# --------------------------------------------------------------------------------------
def xml_attr(v):
    return (str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def write_tsx(path, sheet_w, sheet_h):
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<tileset version="1.10" tiledversion="1.10.2" name="hospital" tilewidth="%d" '
        'tileheight="%d" tilecount="%d" columns="%d">' % (T, T, len(TS.tiles), COLS),
        ' <image source="../assets/tiles/hospital_tiles.png" width="%d" height="%d"/>'
        % (sheet_w, sheet_h),
    ]
    for i, (name, kind, collides, _) in enumerate(TS.tiles):
        lines += [
            ' <tile id="%d">' % i,
            '  <properties>',
            '   <property name="collides" type="bool" value="%s"/>' % ("true" if collides else "false"),
            '   <property name="kind" value="%s"/>' % xml_attr(kind),
            '   <property name="name" value="%s"/>' % xml_attr(name),
            '  </properties>',
            ' </tile>',
        ]
    lines.append('</tileset>')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def tmx_property(name, v):
    """One ``<property>`` element: bool, int or string, as Tiled writes them."""
    if isinstance(v, bool):
        return '<property name="%s" type="bool" value="%s"/>' % (name, "true" if v else "false")
    if isinstance(v, int):
        return '<property name="%s" type="int" value="%d"/>' % (name, v)
    return '<property name="%s" value="%s"/>' % (name, xml_attr(v))


def write_tmx(path, m):
    layers = [("floor", m.floor), ("walls", m.walls), ("furniture", m.furn)]
    nobj = len(ROOMS) + len(m.points)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<map version="1.10" tiledversion="1.10.2" orientation="orthogonal" '
        'renderorder="right-down" width="%d" height="%d" tilewidth="%d" tileheight="%d" '
        'infinite="0" nextlayerid="6" nextobjectid="%d">' % (MW, MH, T, T, nobj + 1),
        ' <properties>',
        *('  ' + tmx_property(k, m.properties[k]) for k in sorted(m.properties)),
        ' </properties>',
        ' <tileset firstgid="1" source="hospital.tsx"/>',
    ]
    for lid, (lname, grid) in enumerate(layers, 1):
        out.append(' <layer id="%d" name="%s" width="%d" height="%d">' % (lid, lname, MW, MH))
        out.append('  <data encoding="csv">')
        rows = []
        for y in range(MH):
            rows.append(",".join(str(TS.gid(grid[y][x]) if grid[y][x] else 0) for x in range(MW)))
        out.append(",\n".join(rows))
        out.append('</data>')
        out.append(' </layer>')
    oid = 1
    out.append(' <objectgroup id="4" name="rooms">')
    for name, address, x, y, w, h in ROOMS:
        out += [
            '  <object id="%d" name="%s" type="room" class="room" x="%d" y="%d" width="%d" height="%d">'
            % (oid, name, x * T, y * T, w * T, h * T),
            '   <properties>',
            '    <property name="address" value="%s"/>' % xml_attr(address),
            '   </properties>',
            '  </object>',
        ]
        oid += 1
    out.append(' </objectgroup>')
    out.append(' <objectgroup id="5" name="points">')
    for name, typ, x, y, props in m.points:
        out.append('  <object id="%d" name="%s" type="%s" class="%s" x="%d" y="%d">'
                   % (oid, name, typ, typ, x * T + T // 2, y * T + T // 2))
        props = dict(props, tile_x=x, tile_y=y)
        out.append('   <properties>')
        for k in sorted(props):
            out.append('    ' + tmx_property(k, props[k]))
        out.append('   </properties>')
        out.append('   <point/>')
        out.append('  </object>')
        oid += 1
    out.append(' </objectgroup>')
    out.append('</map>')
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------
# characters: 3 walk frames (stand, step-left, step-right) x 4 directions (down, left,
# right, up), 32x32 px each; figure 21-27 px tall, dark outline, 3/4 top-down view
# --------------------------------------------------------------------------------------
SKIN = {
    "light": ((250, 218, 188), (226, 182, 150)),
    "fair": ((238, 196, 156), (210, 160, 122)),
    "tan": ((212, 156, 112), (180, 124, 86)),
    "brown": ((166, 110, 74), (134, 84, 54)),
    "dark": ((112, 72, 50), (88, 54, 38)),
}
EYE = (40, 28, 40)
COAT, COAT_LO, COAT_HI = (244, 246, 248), (206, 212, 222), (255, 255, 255)

# Patients are named patient_<sex>_<band>_<n> (sex f/m; band child < 13, adult 13-64,
# older >= 65) so that game/appearance.py can draw a case's patient as who they are;
# keep its PATIENT_SHEETS in step with these names (a test checks).
CHARACTERS = {
    "doctor_1": dict(skin="light", hair=(110, 70, 42), style="short", coat=True,
                     top=(90, 140, 210), legs=(68, 72, 90), shoes=(40, 36, 44),
                     stethoscope=True, badge=True),
    "doctor_2": dict(skin="brown", hair=(42, 32, 36), style="bun", coat=True,
                     top=(206, 92, 128), legs=(52, 62, 104), shoes=(70, 46, 46),
                     stethoscope=True, badge=True),
    "doctor_3": dict(skin="dark", hair=(184, 180, 190), style="short", coat=True,
                     top=(92, 162, 120), legs=(112, 86, 62), shoes=(40, 36, 44),
                     glasses=(226, 196, 96), badge=True),
    "technician": dict(skin="tan", hair=(74, 48, 34), style="cap", cap=(54, 160, 156),
                       top=(54, 160, 156), legs=(54, 160, 156), shoes=(236, 238, 240),
                       scrubs=True, badge=True),
    "patient_f_child_1": dict(skin="dark", hair=(40, 30, 32), style="pigtails",
                              hair_tie=(250, 214, 64), top=(236, 116, 164), legs=(236, 116, 164),
                              shoes=(246, 246, 246), child=True, skirt=True),
    "patient_f_child_2": dict(skin="light", hair=(236, 196, 96), style="ponytail",
                              hair_tie=(72, 128, 220), top=(112, 200, 214), legs=(132, 88, 176),
                              shoes=(236, 92, 120), child=True),
    "patient_f_adult_1": dict(skin="tan", hair=(36, 28, 34), style="long", top=(242, 200, 78),
                              legs=(60, 60, 110), shoes=(120, 60, 60), skirt=True),
    "patient_f_adult_2": dict(skin="dark", hair=(48, 34, 34), style="curly", top=(232, 132, 62),
                              legs=(232, 132, 62), shoes=(110, 70, 50), skirt=True),
    "patient_f_adult_3": dict(skin="fair", hair=(150, 68, 42), style="bob", top=(92, 146, 212),
                              legs=(56, 56, 70), shoes=(40, 36, 44), bag=(164, 60, 92)),
    "patient_f_older_1": dict(skin="light", hair=(214, 214, 222), style="bun", top=(168, 138, 200),
                              legs=(112, 112, 132), shoes=(84, 62, 60), skirt=True, cardigan=True,
                              glasses=True, bag=(124, 74, 50)),
    "patient_f_older_2": dict(skin="brown", hair=(210, 210, 214), style="scarf", scarf=(56, 136, 120),
                              top=(184, 92, 72), legs=(184, 92, 72), shoes=(64, 46, 42), skirt=True,
                              cane=True),
    "patient_m_child_1": dict(skin="brown", hair=(44, 32, 30), style="short", top=(92, 182, 92),
                              legs=(72, 112, 196), shoes=(214, 64, 64), child=True, shorts=True),
    "patient_m_child_2": dict(skin="fair", hair=(196, 98, 46), style="short", top=(64, 104, 196),
                              stripes=(240, 240, 236), legs=(64, 74, 116), shoes=(228, 72, 60),
                              child=True),
    "patient_m_adult_1": dict(skin="light", hair=(222, 182, 92), style="short", top=(206, 62, 62),
                              legs=(70, 102, 162), shoes=(236, 236, 236), hood=True),
    "patient_m_adult_2": dict(skin="tan", hair=(34, 30, 34), style="short", top=(64, 124, 104),
                              legs=(186, 164, 122), shoes=(70, 56, 48), beard=True),
    "patient_m_adult_3": dict(skin="brown", hair=(30, 26, 30), style="short", top=(204, 222, 240),
                              necktie=(156, 40, 60), legs=(92, 96, 108), shoes=(44, 34, 30),
                              glasses=True),
    "patient_m_older_1": dict(skin="fair", hair=(208, 208, 214), style="bald", top=(200, 178, 136),
                              legs=(112, 92, 72), shoes=(84, 58, 40), cane=True, glasses=True,
                              cardigan=True),
    "patient_m_older_2": dict(skin="tan", hair=(230, 230, 234), style="short", top=(128, 48, 60),
                              legs=(100, 104, 112), shoes=(50, 40, 36), beard=True),
}


CHARACTER_NOTES = {
    "doctor_1": "doctor: white coat, blue shirt, stethoscope, short brown hair, light skin",
    "doctor_2": "doctor: white coat, pink shirt, stethoscope, black hair in a bun, brown skin",
    "doctor_3": "doctor: white coat, green shirt, gold glasses, silver hair, dark skin",
    "technician": "measurement technician: teal scrubs and scrub cap, ponytail, tan skin",
    "patient_f_child_1": "girl (smaller figure): pink dress, black pigtails with yellow ties, dark skin",
    "patient_f_child_2": "girl (smaller figure): teal t-shirt, purple leggings, blond ponytail, light skin",
    "patient_f_adult_1": "woman: yellow top, navy skirt, long black hair, tan skin",
    "patient_f_adult_2": "woman: orange dress, curly afro hair, dark skin",
    "patient_f_adult_3": "woman: blue blouse, dark trousers, handbag, auburn bob, fair skin",
    "patient_f_older_1": "older woman: lilac cardigan, grey skirt, grey hair in a bun, glasses, handbag, light skin",
    "patient_f_older_2": "older woman: green headscarf, terracotta dress, walking cane, brown skin",
    "patient_m_child_1": "boy (smaller figure): green t-shirt, blue shorts, brown skin",
    "patient_m_child_2": "boy (smaller figure): striped blue t-shirt, jeans, ginger hair, fair skin",
    "patient_m_adult_1": "young man: red hoodie, jeans, blond hair, light skin",
    "patient_m_adult_2": "man: green jacket, khaki trousers, black hair and beard, tan skin",
    "patient_m_adult_3": "man: light blue shirt and red tie, grey trousers, glasses, black hair, brown skin",
    "patient_m_older_1": "older man: beige cardigan, grey hair, glasses, walking cane, fair skin",
    "patient_m_older_2": "older man: maroon jumper, grey trousers, white hair and beard, tan skin",
}


def geometry(child):
    if child:
        return dict(hx0=10, hx1=21, hy0=9, hy1=19, tx0=11, tx1=20, ty0=20, ty1=24,
                    ly1=26, sy1=28, lx=(12, 14), rx=(17, 19), eye_dy=6)
    return dict(hx0=9, hx1=22, hy0=3, hy1=14, tx0=10, tx1=21, ty0=15, ty1=22,
                ly1=26, sy1=28, lx=(11, 14), rx=(17, 20), eye_dy=7)


def rows(s, x0, x1, y0, y1, c):
    if x1 >= x0 and y1 >= y0:
        R(s, x0, y0, x1 - x0 + 1, y1 - y0 + 1, c)


def clothes(c):
    top = COAT if c.get("coat") else c["top"]
    return top, sh(top, 0.84), sh(top, 1.08)


def draw_legs_front(s, c, g, f, bob, back):
    skin, skin_lo = SKIN[c["skin"]]
    for side, (x0, x1) in (("l", g["lx"]), ("r", g["rx"])):
        lifted = (f == 1 and side == "l") or (f == 2 and side == "r")
        top = g["ty1"] + 1 + bob
        bottom = g["sy1"] - (2 if lifted else 0)
        leg = c["legs"]
        if c.get("shorts") or c.get("skirt"):
            rows(s, x0, x1, top, bottom - 2, skin)
            vline(s, x1, top, bottom - 2, skin_lo)
            if c.get("shorts"):
                rows(s, x0, x1, top, top + 1, leg)
        else:
            rows(s, x0, x1, top, bottom - 2, leg)
            vline(s, x1, top, bottom - 2, sh(leg, 0.82))
        shoe = c["shoes"]
        rows(s, x0, x1, bottom - 1, bottom, shoe)
        if not back:
            hline(s, x0, x1, bottom - 1, sh(shoe, 1.25) if sum(shoe) < 600 else shoe)
        hline(s, x0, x1, bottom, sh(shoe, 0.8))


def draw_torso_front(s, c, g, bob, back):
    top, top_lo, top_hi = clothes(c)
    skin, skin_lo = SKIN[c["skin"]]
    x0, x1, y0, y1 = g["tx0"], g["tx1"], g["ty0"] + bob, g["ty1"] + bob
    rows(s, x0, x1, y0, y1, top)
    vline(s, x1, y0, y1, top_lo)
    hline(s, x0, x1, y1, top_lo)
    vline(s, x0, y0, y1 - 1, top_hi)
    mid = (x0 + x1) // 2
    if c.get("stripes"):
        for yy in range(y0 + 2, y1, 2):
            hline(s, x0 + 1, x1 - 1, yy, c["stripes"])
    if c.get("skirt"):
        # a dress/skirt flares over the upper legs
        rows(s, x0, x1, y1 + 1, y1 + 2, c["legs"])
        hline(s, x0, x1, y1 + 2, sh(c["legs"], 0.8))
        if c["legs"] != c["top"]:
            hline(s, x0, x1, y1, sh(c["legs"], 0.9))
    if c.get("coat"):
        # coat tails over the legs
        rows(s, x0, x1, y1 + 1, y1 + 2, COAT)
        hline(s, x0, x1, y1 + 2, COAT_LO)
        if back:
            vline(s, mid, y1 - 2, y1 + 2, COAT_LO)
            vline(s, mid + 1, y1 - 2, y1 + 2, COAT_LO)
        else:
            rows(s, mid, mid + 1, y0, y1 - 2, c["top"])        # shirt between lapels
            vline(s, mid - 1, y0, y1 + 2, COAT_LO)
            vline(s, mid + 2, y0, y1 + 2, COAT_LO)
            P(s, mid, y0, skin)
            P(s, mid + 1, y0, skin)
            hline(s, x0 + 1, x0 + 3, y1 - 1, COAT_LO)          # pocket
            hline(s, x1 - 3, x1 - 1, y1 - 1, COAT_LO)
    elif not back:
        if c.get("scrubs"):
            P(s, mid, y0, skin)
            P(s, mid + 1, y0, skin)
            P(s, mid, y0 + 1, skin_lo)
            P(s, mid + 1, y0 + 1, skin_lo)
            P(s, mid - 1, y0, top_lo)
            P(s, mid + 2, y0, top_lo)
            hline(s, x0 + 1, x0 + 3, y0 + 3, top_lo)           # chest pocket
        elif c.get("cardigan"):
            vline(s, mid, y0, y1, top_lo)
            for yy in range(y0 + 2, y1, 2):
                P(s, mid + 1, yy, (120, 90, 60))
            P(s, mid, y0, (240, 240, 236))
            P(s, mid + 1, y0, (240, 240, 236))
        elif c.get("hood"):
            hline(s, x0 + 1, x1 - 1, y0, top_lo)
            vline(s, mid - 1, y0 + 1, y0 + 3, (240, 240, 240))  # drawstrings
            vline(s, mid + 2, y0 + 1, y0 + 3, (240, 240, 240))
            hline(s, mid - 2, mid + 3, y1 - 2, top_lo)          # pouch pocket
        else:
            P(s, mid, y0, skin)
            P(s, mid + 1, y0, skin)
    elif c.get("hood"):
        rows(s, x0 + 2, x1 - 2, y0, y0 + 2, top_lo)             # the hood on the back
    if c.get("stethoscope") and not back:
        st = (60, 64, 76)
        for dy in range(0, 4):
            P(s, mid - 2 - (1 if dy < 2 else 0) + (dy // 3), y0 + dy, st)
        for dy in range(0, 3):
            P(s, mid + 3, y0 + dy, st)
        P(s, mid + 3, y0 + 3, (200, 206, 216))
        P(s, mid + 3, y0 + 4, (200, 206, 216))
    if c.get("badge") and not back:
        bx = x0 + 2
        P(s, bx, y0 + 2, (90, 150, 230))
        P(s, bx + 1, y0 + 2, (250, 250, 250))
    if c.get("necktie") and not back:
        tie = c["necktie"]
        P(s, mid - 1, y0, WHITE)                                # collar points
        P(s, mid + 2, y0, WHITE)
        vline(s, mid, y0, y1 - 1, tie)
        vline(s, mid + 1, y0, y1 - 2, sh(tie, 0.8))
        P(s, mid + 1, y0, tie)                                  # the knot


def draw_arms_front(s, c, g, f, bob, back):
    top, top_lo, top_hi = clothes(c)
    sleeve = top
    skin, skin_lo = SKIN[c["skin"]]
    y0 = g["ty0"] + bob
    base_end = g["ty1"] + bob          # last hand row
    hands = {}
    for side in ("l", "r"):
        if side == "l":
            xa, xb = g["tx0"] - 2, g["tx0"] - 1
        else:
            xa, xb = g["tx1"] + 1, g["tx1"] + 2
        # swing: the arm opposite to the lifted leg comes forward (down the screen)
        fwd = (f == 1 and side == "r") or (f == 2 and side == "l")
        bwd = (f == 1 and side == "l") or (f == 2 and side == "r")
        if back:
            fwd, bwd = bwd, fwd
        end = base_end + (1 if fwd else 0) - (1 if bwd else 0)
        short = c.get("child") or c.get("scrubs") or c.get("shorts")
        sleeve_end = (y0 + 2) if short else end - 2
        rows(s, xa, xb, y0 + 1, sleeve_end, sleeve)
        rows(s, xa, xb, sleeve_end + 1, end, skin)
        inner = xb if side == "l" else xa
        vline(s, inner, y0 + 1, sleeve_end, top_lo)
        hline(s, xa, xb, end, skin_lo)
        hands[side] = (xa, end)
    if c.get("bag"):
        # a handbag hangs from the hand on the other side from the cane
        xa, end = hands["r" if back else "l"]
        handbag(s, xa - 1, end, c["bag"])
    if c.get("cane"):
        cx = g["tx1"] + 3 if not back else g["tx0"] - 3
        wood = (120, 80, 48)
        vline(s, cx, base_end - 1, g["sy1"], wood)
        P(s, cx - (1 if not back else -1), base_end - 1, wood)


HAIR_CAP_STYLES = ("short", "long", "bun", "cap", "bob", "ponytail", "pigtails")   # hair over the crown
BLUSH_STYLES = ("bun", "long", "bob", "ponytail", "pigtails", "scarf")


def draw_scarf_front(s, c, x0, x1, y0, y1, back):
    """A headscarf over the head and shoulders, the face left open (front view)."""
    sc = c["scarf"]
    lo, hi = sh(sc, 0.8), sh(sc, 1.16)
    skin, skin_lo = SKIN[c["skin"]]
    rows(s, x0, x1, y0 - 1, y1 + 1, sc)
    rows(s, x0 - 1, x1 + 1, y0 + 2, y1 + 3, sc)
    for (px, py) in ((x0, y0 - 1), (x1, y0 - 1), (x0 - 1, y1 + 3), (x1 + 1, y1 + 3)):
        P(s, px, py, (0, 0, 0, 0))
    vline(s, x1 + 1, y0 + 2, y1 + 2, lo)
    hline(s, x0 - 1, x1 + 1, y1 + 3, lo)
    hline(s, x0 + 2, x0 + 6, y0, hi)
    if back:
        vline(s, (x0 + x1) // 2, y1 - 1, y1 + 2, lo)             # the fold at the nape
        return
    rows(s, x0 + 2, x1 - 2, y0 + 3, y1 - 1, skin)               # the face
    vline(s, x1 - 2, y0 + 3, y1 - 1, skin_lo)
    hline(s, x0 + 2, x1 - 2, y0 + 2, lo)                        # the hem over the brow
    hline(s, x0 + 3, x1 - 3, y1, lo)                            # under the chin
    P(s, x0 + 2, y1 - 1, sc)
    P(s, x1 - 2, y1 - 1, sc)


def handbag(s, x, y, col):
    """A 4 px wide handbag whose handle is at row y (held in a hand)."""
    P(s, x + 1, y, sh(col, 0.7))
    P(s, x + 2, y, sh(col, 0.7))
    rows(s, x, x + 3, y + 1, y + 3, col)
    hline(s, x, x + 3, y + 1, sh(col, 1.2))
    vline(s, x + 3, y + 2, y + 3, sh(col, 0.8))
    P(s, x + 1, y + 2, (232, 196, 96))                          # clasp


def draw_head_front(s, c, g, bob, back):
    skin, skin_lo = SKIN[c["skin"]]
    hair = c["hair"]
    hair_lo, hair_hi = sh(hair, 0.78), sh(hair, 1.18)
    x0, x1, y0, y1 = g["hx0"], g["hx1"], g["hy0"] + bob, g["hy1"] + bob
    style = c["style"]
    rows(s, x0, x1, y0, y1, skin)
    vline(s, x1, y0, y1, skin_lo)
    hline(s, x0 + 2, x1 - 2, y1, skin_lo)
    # round the head
    for (px, py) in ((x0, y0), (x1, y0), (x0, y1), (x1, y1), (x0 + 1, y0), (x0, y0 + 1),
                     (x1 - 1, y0), (x1, y0 + 1)):
        P(s, px, py, (0, 0, 0, 0))
    w = x1 - x0
    if style == "long":
        # hair falls over the shoulders (front) or down the back
        if back:
            rows(s, x0, x1, y1 - 2, y1 + 5, hair)
            vline(s, x1, y1 - 2, y1 + 5, hair_lo)
            hline(s, x0 + 1, x1 - 1, y1 + 5, hair_lo)
        else:
            rows(s, x0, x0 + 1, y0 + 4, y1 + 5, hair)
            rows(s, x1 - 1, x1, y0 + 4, y1 + 5, hair)
            vline(s, x1, y0 + 4, y1 + 5, hair_lo)
    if style == "bob":
        # chin-length hair, a little fuller than the head
        if back:
            rows(s, x0 - 1, x1 + 1, y0 + 3, y1, hair)
            vline(s, x1 + 1, y0 + 3, y1, hair_lo)
            hline(s, x0, x1, y1, hair_lo)
        else:
            rows(s, x0 - 1, x0 + 1, y0 + 3, y1 - 1, hair)
            rows(s, x1 - 1, x1 + 1, y0 + 3, y1 - 1, hair)
            vline(s, x1 + 1, y0 + 3, y1 - 1, hair_lo)
            P(s, x0 - 1, y1 - 1, hair_lo)
    if style == "curly":
        for yy in range(y0 - 3, y0 + 10 + (4 if back else 0)):
            for xx in range(x0 - 2, x1 + 3):
                dx = (xx - (x0 + x1) / 2.0) / (w / 2.0 + 2.5)
                dy = (yy - (y0 + 3.5)) / 7.5
                bump = 0.10 * nz(xx, yy, 200)
                if dx * dx + dy * dy <= 1.0 + bump:
                    face = (not back) and x0 + 2 <= xx <= x1 - 2 and yy >= y0 + 5
                    if not face:
                        P(s, xx, yy, hair if nz(xx, yy, 201) > 0.2 else hair_hi)
        if back:
            rows(s, x0 - 1, x1 + 1, y0 + 6, y1 - 1, hair)
    if style in HAIR_CAP_STYLES:
        if back:
            rows(s, x0, x1, y0, y1 - 2, hair)
            hline(s, x0 + 1, x1 - 1, y1 - 1, hair)
            vline(s, x1, y0 + 1, y1 - 1, hair_lo)
            for (px, py) in ((x0, y0), (x1, y0), (x0 + 1, y0), (x0, y0 + 1), (x1 - 1, y0), (x1, y0 + 1)):
                P(s, px, py, (0, 0, 0, 0))
            P(s, x0, y0 + 7, skin)           # ears
            P(s, x1, y0 + 7, skin_lo)
            if style == "short":
                hline(s, x0 + 3, x1 - 3, y1 - 1, sh(skin, 0.95))   # nape
        else:
            rows(s, x0, x1, y0, y0 + 3, hair)
            for (px, py) in ((x0, y0), (x1, y0), (x0 + 1, y0), (x0, y0 + 1), (x1 - 1, y0), (x1, y0 + 1)):
                P(s, px, py, (0, 0, 0, 0))
            # fringe with a parting
            hline(s, x0 + 1, x1 - 1, y0 + 4, hair)
            P(s, x0 + 4, y0 + 4, skin)
            hline(s, x0 + 5, x0 + 8, y0 + 5, hair)
            rows(s, x0, x0 + 1, y0 + 2, y0 + 6, hair)
            rows(s, x1 - 1, x1, y0 + 2, y0 + 6, hair)
            vline(s, x1, y0 + 2, y0 + 6, hair_lo)
        hline(s, x0 + 3, x0 + 6, y0 + 1, hair_hi)
        P(s, x0 + 2, y0 + 2, hair_hi)
    if style == "bald":
        P(s, x0 + 4, y0 + 1, sh(skin, 1.1))
        P(s, x0 + 5, y0 + 1, sh(skin, 1.1))
        P(s, x0 + 3, y0 + 2, sh(skin, 1.1))
        if back:
            rows(s, x0, x1, y0 + 5, y1 - 2, hair)
            vline(s, x1, y0 + 5, y1 - 2, hair_lo)
        else:
            rows(s, x0, x0 + 1, y0 + 4, y0 + 8, hair)
            rows(s, x1 - 1, x1, y0 + 4, y0 + 8, hair)
            vline(s, x1, y0 + 4, y0 + 8, hair_lo)
    if style == "cap":
        capc = c["cap"]
        rows(s, x0, x1, y0, y0 + 3, capc)
        for (px, py) in ((x0, y0), (x1, y0), (x0 + 1, y0), (x0, y0 + 1), (x1 - 1, y0), (x1, y0 + 1)):
            P(s, px, py, (0, 0, 0, 0))
        hline(s, x0, x1, y0 + 4, sh(capc, 0.8))
        for xx in range(x0 + 2, x1 - 1, 3):
            P(s, xx, y0 + 2, sh(capc, 1.2))
        if back:
            # the tie at the back and a ponytail
            P(s, (x0 + x1) // 2, y0 + 5, sh(capc, 0.8))
            rows(s, (x0 + x1) // 2, (x0 + x1) // 2 + 1, y1 - 1, y1 + 3, hair)
    if style == "bun":
        bx0, bx1 = (x0 + x1) // 2 - 2, (x0 + x1) // 2 + 3
        ellipse(s, bx0, y0 - 3, bx1, y0 + 1, hair)
        P(s, bx0 + 1, y0 - 2, hair_hi)
    if style == "ponytail" and back:
        mid = (x0 + x1) // 2
        hline(s, mid, mid + 1, y1 - 2, c["hair_tie"])
        rows(s, mid, mid + 1, y1 - 1, y1 + 4, hair)
        vline(s, mid + 1, y1 - 1, y1 + 4, hair_lo)
    if style == "pigtails":
        for xx in (x0 - 2, x1 + 1):
            rows(s, xx, xx + 1, y0 + 5, y0 + 10, hair)
            vline(s, xx + 1, y0 + 6, y0 + 10, hair_lo)
            hline(s, xx, xx + 1, y0 + 5, c["hair_tie"])
    if style == "scarf":
        draw_scarf_front(s, c, x0, x1, y0, y1, back)
    if not back:
        ey = y0 + g["eye_dy"]
        exl, exr = x0 + 3, x1 - 3
        for ex in (exl, exr):
            P(s, ex, ey, EYE)
            P(s, ex, ey + 1, EYE)
        if c.get("child") or c.get("skirt") or c["style"] in BLUSH_STYLES:
            P(s, exl - 1, ey + 2, (236, 140, 140))
            P(s, exr + 1, ey + 2, (236, 140, 140))
        P(s, (x0 + x1) // 2, ey + 3, skin_lo)
        P(s, (x0 + x1) // 2 + 1, ey + 3, skin_lo)
        if c.get("glasses"):
            gl = c["glasses"] if isinstance(c["glasses"], tuple) else (50, 50, 60)
            for ex in (exl, exr):
                P(s, ex - 1, ey - 1, gl)
                P(s, ex, ey - 1, gl)
                P(s, ex + 1, ey - 1, gl)
                P(s, ex - 1, ey, gl)
                P(s, ex + 1, ey, gl)
                P(s, ex - 1, ey + 1, gl)
                P(s, ex + 1, ey + 1, gl)
            hline(s, exl + 2, exr - 2, ey - 1, gl)
        if c.get("beard"):
            rows(s, x0 + 1, x1 - 1, ey + 3, y1, hair)
            P(s, x0 + 1, y1, (0, 0, 0, 0))
            P(s, x1 - 1, y1, (0, 0, 0, 0))
            hline(s, (x0 + x1) // 2 - 1, (x0 + x1) // 2 + 2, ey + 3, skin_lo)
            rows(s, x0 + 1, x0 + 1, ey + 1, ey + 2, hair)
            rows(s, x1 - 1, x1 - 1, ey + 1, ey + 2, hair)


def draw_side(s, c, g, f):
    """Facing left."""
    skin, skin_lo = SKIN[c["skin"]]
    top, top_lo, top_hi = clothes(c)
    bob = 1 if f else 0
    cx = (g["tx0"] + g["tx1"]) // 2          # 15
    tx0, tx1 = cx - 3, cx + 4                # 8 px wide torso
    ty0, ty1 = g["ty0"] + bob, g["ty1"] + bob
    # legs
    top_leg = g["ty1"] + 1 + bob
    leg = c["legs"]
    bare = c.get("shorts") or c.get("skirt")
    if f == 0:
        legs = [((cx - 2, cx + 2), 0, False)]
    else:
        legs = [((cx + 1, cx + 4), 1, True), ((cx - 3, cx), -1, False)]   # far leg first
    for (x0, x1), d, far in legs:
        bottom = g["sy1"] - (1 if (far and f == 1) or (not far and f == 2) else 0)
        col = skin if bare else leg
        if far:
            col = sh(col, 0.8)
        rows(s, x0, x1, top_leg, bottom - 2, col)
        if c.get("shorts"):
            rows(s, x0, x1, top_leg, top_leg + 1, sh(leg, 0.8) if far else leg)
        shoe = sh(c["shoes"], 0.8) if far else c["shoes"]
        rows(s, x0 - 1, x1, bottom - 1, bottom, shoe)
        hline(s, x0 - 1, x1, bottom, sh(shoe, 0.8))
    # torso
    rows(s, tx0, tx1, ty0, ty1, top)
    vline(s, tx1, ty0, ty1, top_lo)
    hline(s, tx0, tx1, ty1, top_lo)
    if c.get("stripes"):
        for yy in range(ty0 + 2, ty1, 2):
            hline(s, tx0, tx1 - 1, yy, c["stripes"])
    if c.get("necktie"):
        P(s, tx0 + 1, ty0, WHITE)
        vline(s, tx0, ty0, ty0 + 4, c["necktie"])
    if c.get("skirt"):
        rows(s, tx0 - 1, tx1 + 1, ty1 + 1, ty1 + 2, c["legs"])
        hline(s, tx0 - 1, tx1 + 1, ty1 + 2, sh(c["legs"], 0.8))
    if c.get("coat"):
        rows(s, tx0, tx1 + 1, ty1 + 1, ty1 + 2, COAT)
        hline(s, tx0, tx1 + 1, ty1 + 2, COAT_LO)
        vline(s, tx0, ty0, ty0 + 4, c["top"])
        vline(s, tx0 + 1, ty0, ty1 + 2, COAT_LO)
    if c.get("hood"):
        rows(s, tx1 - 2, tx1, ty0, ty0 + 2, top_lo)
    if c.get("stethoscope"):
        vline(s, tx0 + 2, ty0, ty0 + 3, (60, 64, 76))
        P(s, tx0 + 2, ty0 + 4, (200, 206, 216))
    if c.get("badge"):
        P(s, tx0 + 1, ty0 + 2, (90, 150, 230))
    # the near arm swings
    ax = cx - 1 + (0 if f == 0 else (-2 if f == 1 else 2))
    end = ty1 - (1 if f else 0)
    short = c.get("child") or c.get("scrubs") or c.get("shorts")
    sleeve_end = ty0 + 2 if short else end - 2
    for yy in range(ty0 + 1, end + 1):
        # slant the arm toward its swing direction
        t = (yy - ty0) / max(1, end - ty0)
        xx = int(round(cx - 1 + (ax - (cx - 1)) * t))
        col = top if yy <= sleeve_end else skin
        rows(s, xx, xx + 2, yy, yy, col)
        P(s, xx + 2, yy, top_lo if yy <= sleeve_end else skin_lo)
    if c.get("bag"):
        handbag(s, ax, end, c["bag"])
    if c.get("cane"):
        wood = (120, 80, 48)
        vline(s, tx0 - 3, ty1 - 2, g["sy1"], wood)
        hline(s, tx0 - 3, tx0 - 1, ty1 - 2, wood)
    # head
    hair = c["hair"]
    hair_lo, hair_hi = sh(hair, 0.78), sh(hair, 1.18)
    x0, x1, y0, y1 = g["hx0"], g["hx1"], g["hy0"] + bob, g["hy1"] + bob
    rows(s, x0, x1, y0, y1, skin)
    hline(s, x0 + 2, x1 - 2, y1, skin_lo)
    for (px, py) in ((x0, y0), (x1, y0), (x0, y1), (x1, y1), (x0 + 1, y0), (x0, y0 + 1),
                     (x1 - 1, y0), (x1, y0 + 1)):
        P(s, px, py, (0, 0, 0, 0))
    style = c["style"]
    ey = y0 + g["eye_dy"]
    back0 = x0 + 7                           # where the back of the head starts
    if style == "curly":
        for yy in range(y0 - 3, y0 + 12):
            for xx in range(x0 - 1, x1 + 3):
                dx = (xx - (x0 + x1) / 2.0 - 1) / ((x1 - x0) / 2.0 + 2.5)
                dy = (yy - (y0 + 4)) / 7.5
                if dx * dx + dy * dy <= 1.0 + 0.1 * nz(xx, yy, 202):
                    if not (xx <= x0 + 5 and yy >= y0 + 5):
                        P(s, xx, yy, hair if nz(xx, yy, 203) > 0.2 else hair_hi)
    if style in HAIR_CAP_STYLES:
        rows(s, x0, x1, y0, y0 + 3, hair)
        rows(s, back0, x1, y0 + 3, y0 + (6 if style == "cap" else 9), hair)
        hline(s, x0 + 1, x0 + 3, y0 + 4, hair)
        vline(s, x1, y0 + 2, y0 + 9, hair_lo)
        hline(s, x0 + 3, x0 + 7, y0 + 1, hair_hi)
        for (px, py) in ((x0, y0), (x1, y0), (x0 + 1, y0), (x0, y0 + 1), (x1 - 1, y0), (x1, y0 + 1)):
            P(s, px, py, (0, 0, 0, 0))
    if style == "long":
        rows(s, back0, x1, y0 + 9, y1 + 5, hair)
        vline(s, x1, y0 + 9, y1 + 5, hair_lo)
    if style == "bald":
        rows(s, back0 + 1, x1, y0 + 5, y0 + 8, hair)
        P(s, x0 + 4, y0 + 1, sh(skin, 1.1))
        P(s, x0 + 5, y0 + 1, sh(skin, 1.1))
    if style == "cap":
        capc = c["cap"]
        rows(s, x0, x1, y0, y0 + 3, capc)
        hline(s, x0, x1, y0 + 4, sh(capc, 0.8))
        for (px, py) in ((x0, y0), (x1, y0), (x0 + 1, y0), (x0, y0 + 1), (x1 - 1, y0), (x1, y0 + 1)):
            P(s, px, py, (0, 0, 0, 0))
        rows(s, x1, x1 + 1, y0 + 5, y0 + 10, hair)              # ponytail
        P(s, x1 + 1, y0 + 10, (0, 0, 0, 0))
    if style == "bun":
        ellipse(s, x1 - 4, y0 - 2, x1 + 1, y0 + 3, hair)
    if style == "bob":
        rows(s, back0 - 1, x1 + 1, y0 + 3, y1, hair)
        vline(s, x1 + 1, y0 + 3, y1, hair_lo)
        hline(s, back0, x1, y1, hair_lo)
    if style == "ponytail":
        rows(s, x1 + 1, x1 + 2, y0 + 3, y0 + 4, c["hair_tie"])
        rows(s, x1 + 1, x1 + 2, y0 + 5, y0 + 11, hair)
        vline(s, x1 + 2, y0 + 5, y0 + 10, hair_lo)
        P(s, x1 + 2, y0 + 11, (0, 0, 0, 0))
    if style == "pigtails":
        rows(s, x1 + 1, x1 + 2, y0 + 5, y0 + 10, hair)
        vline(s, x1 + 2, y0 + 6, y0 + 10, hair_lo)
        hline(s, x1 + 1, x1 + 2, y0 + 5, c["hair_tie"])
    if style == "scarf":
        sc = c["scarf"]
        rows(s, x0, x1 + 1, y0 - 1, y0 + 2, sc)
        rows(s, x0 + 5, x1 + 1, y0 + 2, y1 + 3, sc)
        rows(s, x0 + 1, x0 + 5, y1, y1 + 3, sc)
        for (px, py) in ((x0, y0 - 1), (x1 + 1, y0 - 1), (x0 + 1, y1 + 3)):
            P(s, px, py, (0, 0, 0, 0))
        hline(s, x0, x0 + 5, y0 + 2, sh(sc, 0.8))                # the hem over the brow
        vline(s, x0 + 5, y0 + 3, y1 - 1, sh(sc, 0.8))
        vline(s, x1 + 1, y0 + 1, y1 + 2, sh(sc, 0.8))
        hline(s, x0 + 2, x0 + 6, y0, sh(sc, 1.16))
    # ear, eye, nose, mouth
    if style not in ("curly", "scarf"):
        P(s, back0 + 1, ey, skin)
        P(s, back0 + 1, ey + 1, skin_lo)
        P(s, back0, ey, skin_lo)
    P(s, x0 + 2, ey, EYE)
    P(s, x0 + 2, ey + 1, EYE)
    P(s, x0 - 1, ey + 2, skin)
    P(s, x0 + 1, ey + 3, skin_lo)
    if c.get("child") or c.get("skirt") or style in BLUSH_STYLES:
        P(s, x0 + 3, ey + 2, (236, 140, 140))
    if c.get("glasses"):
        gl = c["glasses"] if isinstance(c["glasses"], tuple) else (50, 50, 60)
        for (px, py) in ((x0 + 1, ey - 1), (x0 + 2, ey - 1), (x0 + 3, ey - 1), (x0 + 1, ey + 1),
                         (x0 + 3, ey), (x0 + 3, ey + 1)):
            P(s, px, py, gl)
        hline(s, x0 + 4, back0, ey - 1, gl)
    if c.get("beard"):
        rows(s, x0 + 1, back0, ey + 3, y1, hair)
        P(s, x0 + 1, y1, (0, 0, 0, 0))
        P(s, x0 + 1, ey + 3, skin_lo)
        rows(s, back0 - 1, back0, ey + 1, ey + 2, hair)


def char_frame(c, direction, f):
    s = surf()
    g = geometry(c.get("child"))
    if direction in ("down", "up"):
        back = direction == "up"
        bob = 1 if f else 0
        draw_legs_front(s, c, g, f, bob, back)
        draw_torso_front(s, c, g, bob, back)
        draw_arms_front(s, c, g, f, bob, back)
        draw_head_front(s, c, g, bob, back)
    else:
        draw_side(s, c, g, f)
        if direction == "right":
            s = flip_h(s)
    outline(s, INK)
    # soft ground shadow under the feet
    sh_s = surf()
    gy = g["sy1"] + 1
    ellipse(sh_s, 9, gy - 2, 22, gy + 1, SHADOW + (60,))
    sh_s.blit(s, (0, 0))
    return sh_s


def character_sheet(c):
    sheet = surf(3 * T, 4 * T)
    for row, d in enumerate(("down", "left", "right", "up")):
        for col in range(3):
            sheet.blit(char_frame(c, d, col), (col * T, row * T))
    return sheet


def read_map(path):
    """Rooms and points of a Tiled map, as the README lists them (pytmx, no images):
    ``(width, height, rooms, points)`` with rooms ``(name, address, x, y, w, h)`` and points
    ``(name, type, x, y, props)`` in tiles, in the map's order; a point's cell is where it
    lies, as the game reads it."""
    import pytmx

    tmx = pytmx.TiledMap(str(path))
    ts = tmx.tilewidth
    rooms, points = [], []
    for group in tmx.objectgroups:
        for obj in group:
            kind = str(getattr(obj, "type", None) or getattr(obj, "class", None) or "")
            if kind == "room":
                rooms.append((obj.name, obj.properties.get("address", ""), int(obj.x // ts),
                              int(obj.y // ts), int(obj.width // ts), int(obj.height // ts)))
            elif group.name == "points":
                points.append((obj.name, kind, int(obj.x // ts), int(obj.y // ts), dict(obj.properties)))
    return tmx.width, tmx.height, rooms, points


def read_map_properties(path):
    """The map's own custom properties (pytmx, no images)."""
    import pytmx

    return dict(pytmx.TiledMap(str(path)).properties)


def write_readme(path, map_path, sheet_w, sheet_h):
    mw, mh, rooms, points = read_map(map_path)
    map_props = read_map_properties(map_path)
    L = []
    a = L.append
    a("# medsim art assets")
    a("")
    a("Everything in `assets/` and `maps/` is original: drawn by code in `assets/generate.py`")
    a("(pygame rectangles, lines, circles and per-pixel detail from a small fixed palette), no")
    a("third-party art, and licensed with the project (MIT).")
    a("")
    a("## Regenerate")
    a("")
    a("```")
    a(".venv/bin/python assets/generate.py        # or: make assets")
    a("```")
    a("")
    a("It needs only pygame and pytmx (tested with pygame 2.6.1; no display: it sets")
    a("`SDL_VIDEODRIVER=dummy`) and rewrites the tileset, `maps/hospital.tsx`, the character sheets")
    a("and this README, byte-identical on every run (no randomness; texture noise is a fixed hash")
    a("of the pixel position). Change the art in the script, never by hand. `--out DIR` writes")
    a("them under DIR instead of the repository (the tests check that they match the committed files).")
    a("")
    a("The map, `maps/hospital.tmx`, is the one source of the hospital's layout: edit it in Tiled.")
    a("The script never writes it unless asked: `--write-map` draws the original layout from")
    a("`build_map()` into it, and refuses to replace an existing map unless `--force` is given too.")
    a("The map's tables below (rooms, points) are read from it, so run the script again after")
    a("editing the map.")
    a("")
    a("## Files")
    a("")
    a("| file | what |")
    a("|---|---|")
    a("| `assets/tiles/hospital_tiles.png` | the tileset: %d tiles of 32x32 px, 8 per row (%dx%d px) |"
      % (len(TS.tiles), sheet_w, sheet_h))
    a("| `maps/hospital.tsx` | Tiled 1.10 external tileset for it; every tile has the properties `collides` (bool), `kind`, `name` |")
    a("| `maps/hospital.tmx` | the hospital: Tiled 1.10, orthogonal, %dx%d tiles of 32 px, CSV layers, uses `hospital.tsx` (firstgid 1); edited in Tiled, not written by the script |" % (mw, mh))
    for name, note in CHARACTER_NOTES.items():
        a("| `assets/sprites/%s.png` | %s |" % (name, note))
    a("| `assets/generate.py` | draws the tileset and the sheets, writes `hospital.tsx` and this README |")
    a("")
    a("## Character sheets")
    a("")
    a("Each sheet is 96x128 px: frames of 32x32 px in 4 rows and 3 columns.")
    a("")
    a("- rows (directions, top to bottom): `0 down`, `1 left`, `2 right`, `3 up`")
    a("- columns (walk frames): `0 stand`, `1 step-left`, `2 step-right`")
    a("- frame (row r, column c) is the rectangle `x=32*c, y=32*r, w=32, h=32`")
    a("- a walk cycle is stand, step-left, stand, step-right; stand alone for idle/sitting")
    a("- figures are 26-27 px tall (the child 21 px), feet at y=28 of the frame, with a dark outline")
    a("  and a soft shadow: draw a frame with its bottom-centre at the bottom-centre of a tile")
    a("  (i.e. blit at the tile's top-left) and the character stands in that tile.")
    a("")
    a("Patient sheets are named `patient_<sex>_<band>_<n>`: sex `f` or `m`, age band `child` (under 13,")
    a("the smaller figure), `adult` (13-64) or `older` (65 and over), at least two looks each. The world")
    a("draws each patient with a sheet of their case's sex and age band (`game/appearance.py`, whose")
    a("`PATIENT_SHEETS` lists these names).")
    a("")
    a("## Tileset")
    a("")
    a("The tile id is the position in the sheet (row-major, 8 per row); in the map, gid = id + 1.")
    a("Properties on every tile in `hospital.tsx`:")
    a("")
    a("- `collides` (bool): blocks walking (walls, furniture, equipment, plants, vehicles, wall signs).")
    a("  Floors, doors and seats (chairs, office chairs) do not: a character can stand on a chair.")
    a("- `kind` (string): `floor`, `door`, `wall`, `sign` (overlay hung on a wall cell), `seat`,")
    a("  `furniture`, `equipment`, `plant`, `vehicle`.")
    a("- `name` (string): the tile's name below (stable handle for code).")
    a("")
    a("Ids never change: the map refers to tiles by id, so new tiles are appended at the end of")
    a("`build_tiles()`. The script refuses to write a tileset that renumbers, renames or drops a tile")
    a("of the existing `maps/hospital.tsx`.")
    a("")
    a("Walls are drawn in a top-down 3/4 view: a wall cell with walkable floor south of it shows")
    a("its face (`wall_face_*` inside, `wall_ext_*` brick outside) under an 8 px dark cap band; other")
    a("wall cells are caps (`wall_cap_*`). The suffix says which sides get a rim/end: `n` north,")
    a("`w` west, `e` east, `0` none. Multi-tile pieces: `*_l`/`*_r` (left/right), `*_tl`..`*_br`.")
    a("")
    main = ["floor_corridor", "floor_clinic", "floor_lab", "floor_wood", "floor_wood_dark",
            "floor_lobby", "grass", "path", "asphalt", "door_h", "door_v", "door_front_l",
            "door_front_r", "wall_cap_0", "wall_face_n", "wall_ext_n", "sign_redcross",
            "plaque_consult_1", "chair_down", "chair_up", "chair_left", "chair_right",
            "office_chair_down", "reception_pc", "desk_pc_l", "exam_bed_top", "bed_top",
            "plant_big", "bookshelf", "filing_cabinet", "table_tl", "lab_bench_microscope",
            "lab_bench_tubes", "ecg_machine", "xray_l", "xray_r", "scanner_tl", "sink",
            "water_cooler", "hedge", "ambulance_tl"]
    a("### Main tiles")
    a("")
    a("| id | gid | name | kind | collides |")
    a("|---:|---:|---|---|---|")
    for n in main:
        i = TS.index[n]
        _, kind, col, _s = TS.tiles[i]
        a("| %d | %d | `%s` | %s | %s |" % (i, i + 1, n, kind, "yes" if col else "no"))
    a("")
    a("<details><summary>All %d tiles</summary>" % len(TS.tiles))
    a("")
    a("| id | name | kind | collides |")
    a("|---:|---|---|---|")
    for i, (n, kind, col, _s) in enumerate(TS.tiles):
        a("| %d | `%s` | %s | %s |" % (i, n, kind, "yes" if col else "no"))
    a("")
    a("</details>")
    a("")
    a("## The map (`maps/hospital.tmx`)")
    a("")
    a("Layers, bottom to top:")
    a("")
    a("1. `floor` (tiles): every walkable cell has a floor tile (doors are floor-layer tiles); grass,")
    a("   paths and asphalt outside. Wall cells have no floor tile.")
    a("2. `walls` (tiles): building and interior walls, autotiled as above. Doorways are open cells.")
    a("3. `furniture` (tiles): furniture, equipment, plants, vehicles, chairs, and signs/plaques")
    a("   hung on wall cells.")
    a("4. `rooms` (object group): one rectangle per room, `type=\"room\"` (also `class=\"room\"`), name =")
    a("   room id, string property `address`. The rectangle covers the room's floor (not its walls).")
    a("5. `points` (object group): point objects at the centre of a cell, with `type`/`class`, a name,")
    a("   and properties `room` (the room id it lies in), `tile_x`, `tile_y`, and where it applies")
    a("   `facing` (`down`/`left`/`right`/`up`: which way a character there faces), `role`,")
    a("   `station`/`equipment` (links between a machine and where its operator stands).")
    a("")
    a("Test rooms are declared in the map: a `station` point with the properties `tests` (order")
    a("keywords, comma-separated), `label` (the test menu's heading), `priority` (int: the highest of")
    a("the stations a test matches wins), `default` (bool: where a test no keyword matches goes) and")
    a("`equipment` (the machine the view animates) makes its room a test room; the map's own properties")
    a("`bedside_tests`, `bedside_label` and `bedside_priority` declare the examinations done at the")
    a("bedside. The game reads them (`game/hospital_map.py`); `maps/README.md` says how to add a test")
    a("room in Tiled.")
    a("")
    a("A cell is walkable when it has a floor tile and no tile on any layer has `collides=true`.")
    a("Every room has a doorway onto a corridor (the entrance forecourt opens into reception through")
    a("the front door); everything is reachable on foot from `entrance_spawn`. Seats and stations are")
    a("walkable cells; `equipment` points sit on the machine's own (colliding) tile, with their")
    a("`station` point on the walkable cell beside it.")
    a("")
    a("### Rooms (tiles: x, y, width, height)")
    a("")
    a("| name | address | x | y | w | h |")
    a("|---|---|---:|---:|---:|---:|")
    for name, address, x, y, w, h in rooms:
        a("| `%s` | `%s` | %d | %d | %d | %d |" % (name, address, x, y, w, h))
    a("")
    a("### Points (tile x, y)")
    a("")
    a("| name | type | x | y | room | facing | notes |")
    a("|---|---|---:|---:|---|---|---|")
    for name, typ, x, y, props in points:
        notes = ", ".join("%s=%s" % (k, props[k]) for k in ("role", "station", "equipment") if k in props)
        a("| `%s` | %s | %d | %d | %s | %s | %s |" % (name, typ, x, y, props.get("room", ""),
                                                   props.get("facing", ""), notes))
    a("")
    a("### Test rooms (where ordered tests go; highest priority first)")
    a("")
    a("| station | room | label | priority | machine | tests |")
    a("|---|---|---|---:|---|---|")
    declared = [(name, props.get("room", ""), props) for name, typ, x, y, props in points
                if typ == "station" and ("tests" in props or "default" in props)]
    if "bedside_tests" in map_props:
        declared.append(("(bedside)", "consultation rooms", {
            "label": map_props.get("bedside_label", ""), "priority": map_props.get("bedside_priority", 0),
            "tests": map_props["bedside_tests"]}))
    for name, room, props in sorted(declared, key=lambda d: -int(d[2].get("priority", 0))):
        tests = props.get("tests") or ""
        if props.get("default") in (True, "true"):
            tests = (tests + "; " if tests else "") + "and every test no keyword matches (default)"
        a("| `%s` | %s | %s | %s | %s | %s |" % (name, room, props.get("label", ""), props.get("priority", ""),
                                            props.get("equipment", ""), tests))
    a("")
    path.write_text("\n".join(L), encoding="utf-8")


def tile_id_changes(tsx_path):
    """How the tiles drawn now differ from the tileset at ``tsx_path`` at the same ids
    (a list of lines; empty when every existing id keeps its name)."""
    old = {}
    for tile in ET.parse(tsx_path).getroot().iter("tile"):
        for prop in tile.iter("property"):
            if prop.get("name") == "name":
                old[int(tile.get("id"))] = prop.get("value")
    changes = []
    for i in sorted(old):
        now = TS.tiles[i][0] if i < len(TS.tiles) else None
        if now != old[i]:
            changes.append("id %d: %s -> %s" % (i, old[i], now or "(no tile)"))
    return changes


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Draw medsim's tileset, hospital.tsx, the character sheets and assets/README.md. "
                    "The map (maps/hospital.tmx) is edited in Tiled and written only with --write-map.")
    ap.add_argument("--out", type=Path, default=ROOT, metavar="DIR",
                    help="write under DIR (as if it were the repository root); default: the repository")
    ap.add_argument("--write-map", action="store_true",
                    help="also write maps/hospital.tmx with the original layout from build_map()")
    ap.add_argument("--force", action="store_true",
                    help="with --write-map: replace an existing maps/hospital.tmx (your Tiled edits are lost)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = args.out.resolve()
    tmx_path = out / "maps" / "hospital.tmx"
    if args.force and not args.write_map:
        sys.exit("generate.py: --force only applies with --write-map")
    if args.write_map and tmx_path.exists() and not args.force:
        sys.exit("generate.py: %s exists and is the one source of the hospital's layout (edit it in "
                 "Tiled). --write-map would replace it with build_map()'s layout; add --force to do that "
                 "(its edits are lost)." % tmx_path)
    build_tiles()
    # the map refers to tiles by id: never renumber the tileset it uses (a map written
    # now by --write-map uses the new ids)
    old_tsx = out / "maps" / "hospital.tsx"
    if not old_tsx.exists():
        old_tsx = ROOT / "maps" / "hospital.tsx"
    if old_tsx.exists() and not args.write_map:
        changes = tile_id_changes(old_tsx)
        if changes:
            sys.exit("generate.py: the tiles drawn now change ids that %s (and so the map) already uses:\n  %s\n"
                     "Append new tiles at the end of build_tiles() instead." % (old_tsx, "\n  ".join(changes[:10])))
    for d in ("assets/tiles", "assets/sprites", "maps"):
        (out / d).mkdir(parents=True, exist_ok=True)
    sheet = TS.sheet()
    pygame.image.save(sheet, str(out / "assets" / "tiles" / "hospital_tiles.png"))
    write_tsx(out / "maps" / "hospital.tsx", sheet.get_width(), sheet.get_height())
    if args.write_map:
        m = build_map()
        write_tmx(tmx_path, m)
        print("map: wrote %s (%dx%d, rooms %d, points %d)" % (tmx_path, MW, MH, len(ROOMS), len(m.points)))
    for name, spec in CHARACTERS.items():
        pygame.image.save(character_sheet(spec), str(out / "assets" / "sprites" / (name + ".png")))
    stale = sorted(p.name for p in (out / "assets" / "sprites").glob("*.png") if p.stem not in CHARACTERS)
    if stale:
        print("note: assets/sprites holds sheets this script does not draw: %s" % ", ".join(stale))
    map_src = tmx_path if tmx_path.exists() else ROOT / "maps" / "hospital.tmx"
    write_readme(out / "assets" / "README.md", map_src, sheet.get_width(), sheet.get_height())
    print("tiles: %d, sheets: %d, README from %s" % (len(TS.tiles), len(CHARACTERS), map_src))


if __name__ == "__main__":
    main()
