"""Camera: world pixels <-> screen pixels, pan, zoom, follow."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Camera", "ZOOMS"]

ZOOMS = (0.5, 0.75, 1.0, 1.5, 2.0)


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

    @property
    def zoom(self) -> float:
        return ZOOMS[self.zoom_i]

    def zoom_by(self, step: int) -> None:
        self.zoom_i = max(0, min(len(ZOOMS) - 1, self.zoom_i + step))
        self.clamp()

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
