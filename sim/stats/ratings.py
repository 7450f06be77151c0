"""Ratings from a tournament: Bradley–Terry on the Elo scale, with 95 % intervals.

The model (docs/statistics.md, "Ratings"). Bot ``i`` has strength ``pi_i = exp(theta_i)``, and in
one *comparison* of bots ``i`` and ``j``::

    P(i finishes above j) = pi_i / (pi_i + pi_j)

A comparison is one meeting of two seats in a finished game (`sim.stats.counters`, head to head):
finishing higher (RULES §8.3 order: score, then complete rows) counts 1 to the higher bot, the
same score and rows ½ to each. Two-player games are one comparison each. A 3- or 4-player table is
decomposed into its pairs of seats, every pair one comparison (the pairwise decomposition used by
BayesElo-style tools); the comparisons of one table are treated as independent, which they are
not, so for tables the intervals are somewhat too narrow; for mirrored pairs the games of a deal
are positively dependent as well. The counts of every configuration of the job add up.

Fit: maximum likelihood by Hunter's (2004) MM iteration
``pi_i <- W_i / sum_j N_ij / (pi_i + pi_j)`` with ``W_i`` the points of ``i`` and ``N_ij`` the
comparisons of ``i`` and ``j``. A bot that never lost would have an infinite rating, so every
pair that met also gets `PRIOR_DRAWS` virtual drawn comparison (½ point each; the BayesElo
prior), which keeps the maximum finite and moves ratings from thousands of games by a hair.

Ratings: ``elo_i = 400 log10(pi_i / pi_anchor)``, so the anchor bot reads 0. Intervals: the
inverse of the observed information (the Hessian of the log-likelihood in ``theta``, anchor row
and column removed) gives the covariance of ``theta_i - theta_anchor``; the 95 % interval is
``elo ± 1.96 · 400/ln 10 · se``. The model's predicted rate for each pair is compared with the
observed score rate and its Wilson interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .intervals import Z95, wilson

Counters = dict[str, int]

PRIOR_DRAWS = 1.0
ELO_PER_NAT = 400.0 / math.log(10.0)
TOLERANCE = 1e-10
MAX_ITERATIONS = 10_000


def comparisons(counters: Counters, spec) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(labels, points, meetings)``: ``points[i, j]`` = comparisons bot i won against j (a level
    one ½), ``meetings[i, j]`` = comparisons of i and j, summed over every configuration."""
    labels = list(dict.fromkeys(b for c in spec.configurations for b in c.bots))
    index = {label: i for i, label in enumerate(labels)}
    n = len(labels)
    points = np.zeros((n, n))
    meetings = np.zeros((n, n))
    for k, config in enumerate(spec.configurations):
        present = list(dict.fromkeys(config.bots))
        for a in present:
            for b in present:
                if a == b:
                    continue
                key = f"c{k}|h2h={a}|vs={b}"
                i, j = index[a], index[b]
                meetings[i, j] += counters.get(f"{key}|meetings", 0)
                points[i, j] += (
                    counters.get(f"{key}|above", 0) + counters.get(f"{key}|level", 0) / 2
                )
    return labels, points, meetings


def fit(points: np.ndarray, meetings: np.ndarray, prior: float = PRIOR_DRAWS):
    """Bradley–Terry maximum likelihood by Hunter's MM iteration.

    Returns ``(theta, iterations, converged)``, ``theta = ln pi`` with mean 0, over the bots that
    have at least one comparison (the others get NaN).
    """
    met = meetings > 0
    w = points + prior / 2 * met
    m = meetings + prior * met
    n = len(w)
    theta = np.full(n, np.nan)
    active = m.sum(axis=1) > 0
    if not active.any():
        return theta, 0, True
    w, m = w[np.ix_(active, active)], m[np.ix_(active, active)]
    wins = w.sum(axis=1)
    pi = np.ones(len(w))
    converged, iterations = False, 0
    while iterations < MAX_ITERATIONS:
        iterations += 1
        denom = (m / (pi[:, None] + pi[None, :])).sum(axis=1)
        new = wins / denom
        new /= np.exp(np.log(new).mean())
        step = np.abs(np.log(new) - np.log(pi)).max()
        pi = new
        if step < TOLERANCE:
            converged = True
            break
    theta[active] = np.log(pi)
    return theta, iterations, converged


def information(theta: np.ndarray, meetings: np.ndarray, prior: float = PRIOR_DRAWS) -> np.ndarray:
    """Observed information (minus the Hessian of the log-likelihood) in ``theta``."""
    m = meetings + prior * (meetings > 0)
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i above j)
    h = m * p * (1.0 - p)
    info = -h
    np.fill_diagonal(info, h.sum(axis=1) - np.diag(h))
    return info


def derive_ratings(counters: Counters, spec) -> dict[str, Any]:
    """The ``ratings`` section of a job with ``spec.ratings`` (docs/statistics.md)."""
    anchor = spec.ratings.anchor
    labels, points, meetings = comparisons(counters, spec)
    multiplayer = any(c.players > 2 for c in spec.configurations)
    doc: dict[str, Any] = {
        "model": "bradley-terry"
        + (", pairwise decomposition of each table" if multiplayer else ""),
        "scale": "elo",
        "anchor": anchor,
        "prior_draws": PRIOR_DRAWS,
        "comparisons": int(meetings.sum() / 2),
        "iterations": 0,
        "converged": False,
        "bots": [],
        "head_to_head": [],
    }
    theta, iterations, converged = fit(points, meetings)
    doc["iterations"], doc["converged"] = int(iterations), bool(converged)
    a = labels.index(anchor)
    known = ~np.isnan(theta)
    if not known[a]:
        theta[:] = np.nan
    theta = theta - theta[a]
    free = [i for i in range(len(labels)) if known[i] and i != a]
    se = np.full(len(labels), np.nan)
    if free and known[a]:
        info = information(np.nan_to_num(theta), meetings)[np.ix_(free, free)]
        try:
            cov = np.linalg.inv(info)
            se[free] = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        except np.linalg.LinAlgError:  # a bot not connected to the anchor: no interval
            pass
        se[a] = 0.0
    rows = []
    for i, label in enumerate(labels):
        n = meetings[i].sum()
        elo = float(theta[i] * ELO_PER_NAT) if known[i] else None
        half = (
            float(Z95 * ELO_PER_NAT * se[i]) if elo is not None and not math.isnan(se[i]) else None
        )
        rows.append(
            {
                "bot": label,
                "elo": elo,
                "elo_ci95": [elo - half, elo + half] if half is not None else None,
                "se": float(se[i] * ELO_PER_NAT) if half is not None else None,
                "comparisons": int(n),
                "score_rate": float(points[i].sum() / n) if n else None,
            }
        )
    doc["bots"] = sorted(rows, key=lambda r: (r["elo"] is None, -(r["elo"] or 0.0), r["bot"]))
    for i, x in enumerate(labels):
        for j, y in enumerate(labels):
            if i >= j or not meetings[i, j]:
                continue
            n = int(meetings[i, j])
            observed = float(points[i, j] / n)
            # Wilson on the points, a level comparison counting as half a win.
            ci = wilson(float(points[i, j]), n)
            predicted = (
                1.0 / (1.0 + math.exp(theta[j] - theta[i])) if known[i] and known[j] else None
            )
            doc["head_to_head"].append(
                {
                    "bot": x,
                    "opponent": y,
                    "comparisons": n,
                    "observed": observed,
                    "observed_ci95": ci,
                    "predicted": predicted,
                    "agrees": bool(predicted is not None and ci[0] <= predicted <= ci[1]),
                }
            )
    return doc
