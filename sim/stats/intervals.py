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
    out: dict[str, Any] = {"n": n, "mean": None, "ci95": None, "std": None}
    if n <= 0:
        return out
    mean = s / n
    out["mean"] = mean
    if n >= 2:
        var = max(n * q - s * s, 0) / (n * (n - 1))
        std = math.sqrt(var)
        half = Z95 * std / math.sqrt(n)
        out["std"] = std
        out["ci95"] = [mean - half, mean + half]
    return out
