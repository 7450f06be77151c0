"""Pairs, Elo and the sequential probability ratio test (docs/statistics.md, docs/statistics.md).

Everything here is a pure function of integer counters, so the figures are as exact and
deterministic as the counters they come from:

- the **pentanomial** of a two-player mirrored pair: ``n0..n4`` pairs in which A scored 0, ½, 1,
  1½, 2 points (a win 1, a shared win ½); the per-game score of a pair is ``i/4``;
- a **sample moment** ``(n, sum, sumsq)`` of i.i.d. values in integer units (a group's score, a
  paired difference), read with the same normal-approximation formulas.

Elo is logistic, ``elo(s) = -400 log10(1/s - 1)``. The SPRT is fishtest's generalized SPRT
(GSPRT): H0 ``elo = elo0`` against H1 ``elo = elo1``, error rates ``alpha`` (accepting H1 when H0
holds) and ``beta``; the test stops when the log-likelihood ratio leaves
``(log(beta/(1-alpha)), log((1-beta)/alpha))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sim.quote import shown

Z95 = 1.959963984540054
PENTANOMIAL_VALUES = np.arange(5) / 4.0  # per-game score of A in a pair with i half-points
ZERO_COUNT = 1e-3  # fishtest's stand-in for an empty cell, so that every log is finite


def elo_to_score(elo: float) -> float:
    """Expected score per game of a player `elo` logistic Elo above its opponent."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def score_to_elo(score: float) -> float:
    """Logistic Elo of an expected score in (0, 1); ±inf at 1 and 0."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """``(lower, upper)`` LLR bounds: below lower H0 is accepted, above upper H1."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def pentanomial_moments(counts: Sequence[int]) -> tuple[int, float | None, float | None]:
    """``(N, mu, var)``: pairs, mean per-game score of A, per-pair variance of that score.

    ``mu = sum(i/4 n_i) / N`` and ``var = sum(n_i (i/4 - mu)^2) / N`` (the maximum-likelihood
    variance, as fishtest uses); None when there are no pairs.
    """
    n = np.asarray(counts, dtype=np.float64)
    if n.shape != (5,):
        raise ValueError(f"a pentanomial has 5 counts; got {shown(list(counts))}")
    total = int(round(n.sum()))
    if total == 0:
        return 0, None, None
    mu = float((PENTANOMIAL_VALUES * n).sum() / total)
    var = float((n * (PENTANOMIAL_VALUES - mu) ** 2).sum() / total)
    return total, mu, var


def sample_moments(n: int, s: int, q: int, unit: float = 1.0) -> tuple[float | None, float | None]:
    """``(mean, var)`` of values ``x / unit`` from a count, a sum and a sum of squares of the
    integers ``x``; var is the maximum-likelihood variance ``(n q - s^2) / n^2 / unit^2``."""
    if n <= 0:
        return None, None
    mean = s / n / unit
    var = max(n * q - s * s, 0) / (n * n) / (unit * unit)
    return mean, var


def interval(mean: float, var: float, n: int, z: float = Z95) -> list[float]:
    """Normal-approximation interval ``mean ± z sqrt(var / n)`` of a mean over n samples."""
    half = z * math.sqrt(var / n)
    return [mean - half, mean + half]


def elo_summary(mu: float | None, var: float | None, n: int) -> dict:
    """Elo, its 95 % interval (the image of the score's interval) and the LOS of a mean score.

    LOS (likelihood of superiority) is ``Phi((mu - 1/2) / sqrt(var / n))``; with no spread it is
    1, 0 or 1/2 by the sign of ``mu - 1/2``.
    """
    if mu is None or n <= 0:
        return {"elo": None, "elo_ci95": None, "los": None}
    ci = interval(mu, var, n)
    se = math.sqrt(var / n)
    if se > 0:
        los = normal_cdf((mu - 0.5) / se)
    else:
        los = 1.0 if mu > 0.5 else 0.0 if mu < 0.5 else 0.5
    return {
        "elo": _finite(score_to_elo(mu)),
        "elo_ci95": [_finite(score_to_elo(ci[0])), _finite(score_to_elo(ci[1]))],
        "los": los,
    }


def _finite(x: float) -> float | None:
    """JSON has no infinity: an Elo of a score of 0 or 1 (or beyond) reads as null."""
    return x if math.isfinite(x) else None


def _mle_with_mean(p: np.ndarray, values: np.ndarray, s: float) -> np.ndarray:
    """The distribution on `values` of mean `s` closest (in likelihood) to the frequencies `p`.

    ``p_i / (1 + lam (a_i - s))`` with ``lam`` the one root of
    ``sum p_i (a_i - s) / (1 + lam (a_i - s)) = 0`` between the poles ``-1/max(a - s)`` and
    ``-1/min(a - s)`` (the function decreases from +inf to -inf there). `s` must lie strictly
    between the smallest and largest value.
    """
    d = values - s
    lo, hi = -1.0 / d.max(), -1.0 / d.min()
    # Stay clear of the poles by a relative hair; the root is never that close to them because
    # every p_i > 0.
    width = hi - lo
    # Imported here: scipy.optimize loads all of itself (0.3-0.4 s of CPU), which every worker
    # process (workers.store imports sim.stats) would otherwise pay at start.
    from scipy.optimize import brentq

    lam = brentq(
        lambda x: float((p * d / (1.0 + x * d)).sum()),
        lo + 1e-12 * width,
        hi - 1e-12 * width,
        xtol=1e-15,
        rtol=4 * np.finfo(float).eps,
        maxiter=500,
    )
    return p / (1.0 + lam * d)


def llr_pentanomial(counts: Sequence[int], elo0: float, elo1: float) -> float:
    """Exact GSPRT log-likelihood ratio of H1 (elo1) against H0 (elo0) for a pentanomial.

    ``N sum p_i (log p_i(s1) - log p_i(s0))`` with ``p`` the observed frequencies (an empty cell
    counted as 1e-3, as fishtest does) and ``p(s)`` the maximum-likelihood distribution of mean
    ``s = elo_to_score(elo)`` (`_mle_with_mean`). 0 when there are no pairs.
    """
    n = np.asarray(counts, dtype=np.float64)
    if n.sum() == 0:
        return 0.0
    n = np.where(n == 0, ZERO_COUNT, n)
    total = n.sum()
    p = n / total
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    p0 = _mle_with_mean(p, PENTANOMIAL_VALUES, s0)
    p1 = _mle_with_mean(p, PENTANOMIAL_VALUES, s1)
    return float(total * (p * (np.log(p1) - np.log(p0))).sum())


def llr_normal(n: int, mean: float | None, var: float | None, m0: float, m1: float) -> float:
    """Normal-approximation GSPRT LLR of mean ``m1`` against ``m0`` for n i.i.d. samples:
    ``n (m1 - m0) (2 mean - m0 - m1) / (2 var)``. 0 with no samples or no spread yet (the test
    cannot tell anything from samples that are all equal)."""
    if n <= 0 or mean is None or not var or var <= 0:
        return 0.0
    return n * (m1 - m0) * (2.0 * mean - m0 - m1) / (2.0 * var)


def fixed_sample_size(var: float, m0: float, m1: float, alpha: float, beta: float) -> float:
    """Samples a fixed-size one-sided z-test of ``m0`` against ``m1`` needs for error rates
    alpha and beta: ``((z_{1-alpha} + z_{1-beta}) sigma / (m1 - m0))^2`` (for comparing with
    the SPRT's mean sample size)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(1 - beta)
    return (z * math.sqrt(var) / (m1 - m0)) ** 2
