"""The two intervals every figure of the statistics document uses: Wilson for a proportion,
the normal approximation for a mean (docs/statistics.md, Derived figures)."""

from __future__ import annotations

import math
from typing import Any

Z95 = 1.959963984540054  # two-sided 95 % normal quantile


def wilson(k: int, n: int, z: float = Z95) -> list[float] | None:
    """Wilson score interval ``[lo, hi]`` of a proportion ``k / n`` (None when ``n == 0``)."""
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def moments(n: int, s: int, q: int) -> dict[str, Any]:
    """``{"n", "mean", "ci95", "std"}`` from a count, a sum and a sum of squares (exact ints)."""
    # One dict literal per case: a big job's document holds some 15,000 of them.
    if n <= 0:
        return {"n": n, "mean": None, "ci95": None, "std": None}
    mean = s / n
    if n < 2:
        return {"n": n, "mean": mean, "ci95": None, "std": None}
    spread = n * q - s * s
    std = math.sqrt((spread if spread > 0 else 0) / (n * (n - 1)))
    half = Z95 * std / math.sqrt(n)
    return {"n": n, "mean": mean, "ci95": [mean - half, mean + half], "std": std}
