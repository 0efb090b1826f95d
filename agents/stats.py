"""Small statistics helpers: a binomial proportion's interval, a mean's, and for paired
binary outcomes (two runs scored on the same cases) the interval of the difference and
McNemar's exact test."""
from __future__ import annotations

import math
from typing import Sequence

__all__ = ["wilson_interval", "paired_difference_interval", "mcnemar_exact", "mean_interval"]

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); (0, 1) for n=0."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} not in [0, {n}]")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_difference_interval(both: int, only_a: int, only_b: int, neither: int,
                               z: float = Z95) -> tuple[float, float]:
    """Interval (95% by default) for accuracy(B) - accuracy(A) when A and B were scored
    on the same items: ``both`` right in both, ``only_a`` right in A only, ``only_b``
    right in B only, ``neither``. Bonett and Price's adjusted Wald interval for paired
    proportions (J Educ Behav Stat 2012;37:479): one added to each discordant count and
    two to n, then Wald. Its coverage stays near 95% with few items, and unlike the Wald
    interval (or Newcombe's score interval, which collapses to a point when no pair is
    discordant and half the items are right) it never has zero width."""
    counts = (both, only_a, only_b, neither)
    if min(counts) < 0:
        raise ValueError(f"negative count in {counts}")
    n = sum(counts)
    pa, pb = (only_a + 1) / (n + 2), (only_b + 1) / (n + 2)
    d = pb - pa
    half = z * math.sqrt(max(0.0, pa + pb - d * d) / (n + 2))
    return (max(-1.0, d - half), min(1.0, d + half))


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: under no difference, each of the n = only_a +
    only_b discordant pairs goes either way with probability 1/2, so p = P(X <= k) + P(X
    >= n - k) for X ~ Binomial(n, 1/2) and k = min(only_a, only_b) (twice the smaller
    tail, at most 1; 1 when nothing is discordant). Exact integer sums, no normal
    approximation."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"negative count: {only_a}, {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2 ** n)


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """The mean of ``values`` and its normal-approximation interval (95% by default: mean
    +/- z sd / sqrt(n), sd with n - 1); NaN for what n does not allow (no values: all
    three; one value: the bounds)."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    m = sum(values) / n
    if n < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    h = z * sd / math.sqrt(n)
    return m, m - h, m + h
