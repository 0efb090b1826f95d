"""Labels laid out so that none covers another: each label has candidate places in order
of preference, and takes the first that no label placed before it (nor anything already
on screen there) overlaps; a label with no free place is not drawn. Labels are placed in
order of priority, so the ones that matter (the selected agent's) always find room."""
from __future__ import annotations

from typing import Sequence

import pygame

__all__ = ["place_labels"]


def place_labels(candidates: Sequence[Sequence[pygame.Rect]], taken: Sequence[pygame.Rect] = (),
                 gap: int = 1) -> list[pygame.Rect | None]:
    """Where each label goes.

    Args:
        candidates: per label (in order of priority), its places in order of preference.
        taken: rectangles no label may overlap (already drawn).
        gap: pixels kept free between two labels.

    Returns:
        Per label, the place it takes, or None (no room: not drawn).
    """
    placed: list[pygame.Rect] = list(taken)
    out: list[pygame.Rect | None] = []
    for places in candidates:
        spot = next((r for r in places if r.inflate(2 * gap, 2 * gap).collidelist(placed) < 0), None)
        if spot is not None:
            placed.append(spot)
        out.append(spot)
    return out
