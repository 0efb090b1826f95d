"""A* on the walkable grid (4-connected, unit cost, Manhattan heuristic: optimal)."""
from __future__ import annotations

import heapq
from typing import Callable

from game.geometry import Tile

__all__ = ["astar", "NoPath"]


class NoPath(ValueError):
    pass


def astar(start: Tile, goal: Tile, walkable: Callable[[Tile], bool]) -> list[Tile]:
    """Shortest path from ``start`` to ``goal`` inclusive of both. Ties are broken
    deterministically (by insertion order), so the same query gives the same path.
    Raises :class:`NoPath` if the goal cannot be reached."""
    if start == goal:
        return [start]
    if not walkable(goal):
        raise NoPath(f"goal {goal} is not walkable")
    open_heap: list[tuple[int, int, int, Tile]] = [(start.manhattan(goal), 0, 0, start)]
    came: dict[Tile, Tile] = {}
    g: dict[Tile, int] = {start: 0}
    counter = 1
    closed: set[Tile] = set()
    while open_heap:
        _, gc, _, cur = heapq.heappop(open_heap)
        if cur == goal:
            path = [cur]
            while cur in came:
                cur = came[cur]
                path.append(cur)
            return path[::-1]
        if cur in closed:
            continue
        closed.add(cur)
        for nb in cur.neighbours4():
            if nb in closed or not walkable(nb):
                continue
            ng = gc + 1
            if ng < g.get(nb, 1 << 30):
                g[nb] = ng
                came[nb] = cur
                heapq.heappush(open_heap, (ng + nb.manhattan(goal), ng, counter, nb))
                counter += 1
    raise NoPath(f"no path from {start} to {goal}")
