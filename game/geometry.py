"""One coordinate type for the whole world: ``Tile(x, y)`` in map cells (x right, y down)."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Tile", "Rect", "DIRECTIONS"]


class Tile(NamedTuple):
    x: int
    y: int

    def neighbours4(self) -> tuple["Tile", "Tile", "Tile", "Tile"]:
        x, y = self
        return (Tile(x, y + 1), Tile(x - 1, y), Tile(x + 1, y), Tile(x, y - 1))

    def manhattan(self, other: "Tile") -> int:
        return abs(self.x - other.x) + abs(self.y - other.y)


class Rect(NamedTuple):
    """Cells ``x0 <= x < x1``, ``y0 <= y < y1``."""

    x0: int
    y0: int
    x1: int
    y1: int

    def __contains__(self, t: object) -> bool:  # type: ignore[override]
        return isinstance(t, tuple) and len(t) == 2 and self.x0 <= t[0] < self.x1 and self.y0 <= t[1] < self.y1

    def cells(self) -> list[Tile]:
        return [Tile(x, y) for y in range(self.y0, self.y1) for x in range(self.x0, self.x1)]

    @property
    def centre(self) -> Tile:
        return Tile((self.x0 + self.x1 - 1) // 2, (self.y0 + self.y1 - 1) // 2)


# facing names in sprite-sheet row order
DIRECTIONS = ("down", "left", "right", "up")
