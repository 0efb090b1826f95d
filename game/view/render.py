"""Drawing: the pre-rendered map, sprites, speech bubbles, HUD, dialogue panel, popups."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pygame

from agents.textsafe import printable
from game.geometry import DIRECTIONS

__all__ = ["MapImage", "SpriteBank", "TextCache", "wrap", "wrap_px", "fit_px", "draw_bubble", "draw_box"]

INK = (30, 30, 40)
PAPER = (250, 248, 240)
PANEL = (28, 32, 44)
PANEL_TEXT = (225, 228, 235)
ACCENT = {"doctor": (90, 160, 255), "patient": (255, 190, 90), "measurement": (90, 210, 170), "technician": (90, 210, 170)}


class MapImage:
    """All tile layers of the .tmx drawn once (pytmx.util_pygame; needs a display mode)."""

    def __init__(self, tmx_path: str | Path):
        from pytmx.util_pygame import load_pygame

        tmx = load_pygame(str(tmx_path))
        self.tile = tmx.tilewidth
        self.surface = pygame.Surface((tmx.width * tmx.tilewidth, tmx.height * tmx.tileheight)).convert()
        self.surface.fill((24, 26, 32))
        import pytmx

        for layer in tmx.visible_layers:
            if isinstance(layer, pytmx.TiledTileLayer):
                for x, y, image in layer.tiles():
                    self.surface.blit(image, (x * tmx.tilewidth, y * tmx.tileheight))
        self._scaled: dict[float, pygame.Surface] = {1.0: self.surface}

    def at(self, zoom: float) -> pygame.Surface:
        if zoom not in self._scaled:
            w, h = self.surface.get_size()
            self._scaled[zoom] = pygame.transform.scale(self.surface, (int(w * zoom), int(h * zoom)))
        return self._scaled[zoom]


class SpriteBank:
    """Sheets of 3 walk frames x 4 directions (down, left, right, up)."""

    def __init__(self, sprite_dir: Path, frame: int = 32):
        self.frame = frame
        self.sheets: dict[str, pygame.Surface] = {}
        for p in sorted(Path(sprite_dir).glob("*.png")):
            self.sheets[p.stem] = pygame.image.load(str(p)).convert_alpha()
        self._cache: dict[tuple[str, str, int, float], pygame.Surface] = {}

    def get(self, sprite: str, facing: str, step: int, zoom: float) -> pygame.Surface:
        key = (sprite, facing, step, zoom)
        s = self._cache.get(key)
        if s is None:
            sheet = self.sheets.get(sprite) or next(iter(self.sheets.values()))
            row = DIRECTIONS.index(facing) if facing in DIRECTIONS else 0
            f = self.frame
            s = sheet.subsurface(pygame.Rect(step * f, row * f, f, f))
            size = max(1, int(f * zoom))
            s = pygame.transform.scale(s, (size, size))
            self._cache[key] = s
        return s


class TextCache:
    """Fonts by size and rendered lines. Every line is escaped first
    (:func:`agents.textsafe.printable`): model and case text may hold control or
    direction-override characters, which the window shows as ``\\x1b`` / ``\\u202e``."""

    def __init__(self) -> None:
        self._fonts: dict[int, pygame.font.Font] = {}
        self._cache: dict[tuple[str, int, tuple[int, int, int]], pygame.Surface] = {}

    def font(self, size: int) -> pygame.font.Font:
        if size not in self._fonts:
            self._fonts[size] = pygame.font.Font(None, size)
        return self._fonts[size]

    def render(self, text: str, size: int, color: tuple[int, int, int] = INK) -> pygame.Surface:
        key = (text, size, color)
        s = self._cache.get(key)
        if s is None:
            if len(self._cache) > 4000:
                self._cache.clear()
            s = self.font(size).render(printable(text, single_line=True), True, color)
            self._cache[key] = s
        return s


@lru_cache(maxsize=4096)
def wrap(text: str, width_chars: int, max_lines: int = 0) -> tuple[str, ...]:
    words = text.split()
    lines: list[str] = []
    cur = ""
    for w in words:
        if len(cur) + len(w) + (1 if cur else 0) > width_chars and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        lines.append(cur)
    if max_lines and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(0, width_chars - 1)].rstrip() + "…"
    return tuple(lines)


def fit_px(font: pygame.font.Font, text: str, width: int) -> str:
    """``text`` cut (with "…") to at most ``width`` pixels in ``font``."""
    if font.size(text)[0] <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        if font.size(text[:mid].rstrip() + "…")[0] <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


def wrap_px(font: pygame.font.Font, text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` pixels in ``font`` (a
    word longer than a line is cut with "…")."""
    lines: list[str] = []
    cur = ""
    for w in text.split():
        trial = f"{cur} {w}" if cur else w
        if cur and font.size(trial)[0] > width:
            lines.append(cur)
            cur = w
        else:
            cur = trial
        if font.size(cur)[0] > width:
            cur = fit_px(font, cur, width)
    if cur:
        lines.append(cur)
    return lines


def draw_box(surf: pygame.Surface, rect: pygame.Rect, fill: tuple[int, int, int], border: tuple[int, int, int],
             radius: int = 6, alpha: int = 255) -> None:
    if alpha < 255:
        box = pygame.Surface(rect.size, pygame.SRCALPHA)
        pygame.draw.rect(box, (*fill, alpha), box.get_rect(), border_radius=radius)
        surf.blit(box, rect.topleft)
    else:
        pygame.draw.rect(surf, fill, rect, border_radius=radius)
    pygame.draw.rect(surf, border, rect, 2, border_radius=radius)


def draw_bubble(surf: pygame.Surface, text: TextCache, msg: str, anchor: tuple[int, int], accent: Any,
                thinking: bool = False) -> None:
    lines = ("…",) if thinking else wrap(msg, 30, 3)
    imgs = [text.render(line, 18) for line in lines]
    w = max(i.get_width() for i in imgs) + 14
    h = sum(i.get_height() for i in imgs) + 10
    x = max(2, min(surf.get_width() - w - 2, anchor[0] - w // 2))
    y = max(2, anchor[1] - h - 10)
    rect = pygame.Rect(x, y, w, h)
    pygame.draw.polygon(surf, PAPER, [(anchor[0] - 5, rect.bottom - 1), (anchor[0] + 5, rect.bottom - 1), (anchor[0], anchor[1] - 2)])
    draw_box(surf, rect, PAPER, accent, radius=7)
    yy = y + 5
    for img in imgs:
        surf.blit(img, (x + 7, yy))
        yy += img.get_height()
