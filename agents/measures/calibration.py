"""Calibration of stated confidences against outcomes: the Brier score, the expected
calibration error over equal-width bins and the bins themselves (a reliability diagram's
points), with a paired-free bootstrap interval for the first two."""
from __future__ import annotations

import random
from typing import Any, Sequence

__all__ = ["brier", "ece", "reliability_bins", "bootstrap_interval", "BINS"]

BINS = 10


def brier(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """Mean squared difference between each confidence and its outcome (0 is perfect,
    0.25 is always saying 0.5); None without pairs."""
    if not pairs:
        return None
    return sum((c - (1.0 if y else 0.0)) ** 2 for c, y in pairs) / len(pairs)


def _bin(c: float, bins: int) -> int:
    return min(bins - 1, max(0, int(c * bins)))


def reliability_bins(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> list[dict[str, Any]]:
    """One entry per non-empty bin of width 1/bins (a confidence of 1.0 in the last):
    ``lo``, ``hi``, ``n``, ``confidence`` (mean stated) and ``accuracy`` (share right)."""
    groups: dict[int, list[tuple[float, bool]]] = {}
    for c, y in pairs:
        groups.setdefault(_bin(c, bins), []).append((c, y))
    out = []
    for b in sorted(groups):
        g = groups[b]
        out.append({"lo": round(b / bins, 4), "hi": round((b + 1) / bins, 4), "n": len(g),
                    "confidence": round(sum(c for c, _ in g) / len(g), 4),
                    "accuracy": round(sum(1 for _, y in g if y) / len(g), 4)})
    return out


def ece(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> float | None:
    """Expected calibration error: the bins' |accuracy - mean confidence|, weighted by
    their share of the pairs; None without pairs."""
    if not pairs:
        return None
    groups: dict[int, list[tuple[float, bool]]] = {}
    for c, y in pairs:
        groups.setdefault(_bin(c, bins), []).append((c, y))
    n = len(pairs)
    return sum(len(g) / n * abs(sum(1 for _, y in g if y) / len(g) - sum(c for c, _ in g) / len(g))
               for g in groups.values())


def bootstrap_interval(pairs: Sequence[tuple[float, bool]], stat, *, draws: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float] | None:
    """A percentile bootstrap interval of ``stat(pairs)`` (cases resampled with
    replacement, a fixed seed: the same pairs give the same interval)."""
    if len(pairs) < 2:
        return None
    rng = random.Random(seed)
    n = len(pairs)
    vals = sorted(v for v in (stat([pairs[rng.randrange(n)] for _ in range(n)]) for _ in range(draws))
                  if v is not None)
    if not vals:
        return None
    lo = vals[int((1 - level) / 2 * (len(vals) - 1))]
    hi = vals[int((1 + level) / 2 * (len(vals) - 1))]
    return (round(lo, 4), round(hi, 4))
