"""Camera: world pixels <-> screen pixels, pan, zoom, follow."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Camera", "ZOOMS", "check_zoom"]

ZOOMS = (0.5, 0.75, 1.0, 1.5, 2.0)


def check_zoom(z: float) -> float:
    """``z`` if it is one of :data:`ZOOMS` (the zooms a window may start at), else
    ValueError naming them."""
    if z not in ZOOMS:
        raise ValueError(f"zoom {z:g} is not one of {', '.join(f'{x:g}' for x in ZOOMS)}")
    return z


@dataclass
class Camera:
    view_w: int
    view_h: int
    world_w: int  # world size in pixels at zoom 1
    world_h: int
    x: float = 0.0  # world pixel at the view's centre
    y: float = 0.0
    zoom_i: int = 2
    follow: str | None = None
    levels: tuple[float, ...] = ZOOMS  # the zooms +/- step through (fit zooms are added)

    @property
    def zoom(self) -> float:
        return self.levels[self.zoom_i]

    def zoom_by(self, step: int) -> None:
        self.zoom_i = max(0, min(len(self.levels) - 1, self.zoom_i + step))
        self.clamp()

    def set_zoom(self, z: float) -> None:
        """The level nearest ``z``."""
        self.zoom_i = min(range(len(self.levels)), key=lambda i: abs(self.levels[i] - z))
        self.clamp()

    def fit(self, x0: float, y0: float, x1: float, y1: float, margin: float = 0.98) -> float:
        """Zoom and centre so that the world rectangle (pixels) fits the view; the fit
        zoom joins the levels. Returns it."""
        z = round(min(self.view_w / max(1.0, x1 - x0), self.view_h / max(1.0, y1 - y0)) * margin, 3)
        if z not in self.levels:
            self.levels = tuple(sorted(set(self.levels) | {z}))
        self.zoom_i = self.levels.index(z)
        self.follow = None
        self.centre_on((x0 + x1) / 2, (y0 + y1) / 2)
        return z

    def pan(self, dx: float, dy: float) -> None:
        self.follow = None
        self.x += dx / self.zoom
        self.y += dy / self.zoom
        self.clamp()

    def centre_on(self, wx: float, wy: float) -> None:
        self.x, self.y = wx, wy
        self.clamp()

    def clamp(self) -> None:
        half_w, half_h = self.view_w / 2 / self.zoom, self.view_h / 2 / self.zoom
        self.x = min(max(self.x, half_w), max(half_w, self.world_w - half_w))
        self.y = min(max(self.y, half_h), max(half_h, self.world_h - half_h))
        if self.world_w * self.zoom < self.view_w:
            self.x = self.world_w / 2
        if self.world_h * self.zoom < self.view_h:
            self.y = self.world_h / 2

    def to_screen(self, wx: float, wy: float) -> tuple[int, int]:
        return (round((wx - self.x) * self.zoom + self.view_w / 2), round((wy - self.y) * self.zoom + self.view_h / 2))

    def to_world(self, sx: float, sy: float) -> tuple[float, float]:
        return ((sx - self.view_w / 2) / self.zoom + self.x, (sy - self.view_h / 2) / self.zoom + self.y)
