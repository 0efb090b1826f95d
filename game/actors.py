"""People in the world: position, facing, state, the path they walk."""
from __future__ import annotations

from dataclasses import dataclass, field

from game.geometry import Tile

__all__ = ["Actor", "STATES"]

STATES = ("idle", "walking", "talking", "waiting", "thinking")


@dataclass
class Actor:
    id: str
    role: str  # doctor | patient | technician
    sprite: str
    tile: Tile
    facing: str = "down"
    state: str = "idle"
    path: list[Tile] = field(default_factory=list)  # cells still to enter, in order
    progress: float = 0.0  # fraction of the way from ``tile`` to ``path[0]``
    purpose: str = ""
    case_id: str | None = None
    speech: str | None = None
    speech_until: float = 0.0
    present: bool = True  # False once a patient has left
    walked: int = 0  # cells walked so far (stats)

    @property
    def moving(self) -> bool:
        return bool(self.path)

    def render_pos(self) -> tuple[float, float]:
        """Continuous position in tiles, for the view."""
        if not self.path:
            return float(self.tile.x), float(self.tile.y)
        nxt = self.path[0]
        return (self.tile.x + (nxt.x - self.tile.x) * self.progress,
                self.tile.y + (nxt.y - self.tile.y) * self.progress)
