"""Counters of mirrored groups and paired configurations, and the figures derived from them.

The **focal player** of a configuration is the bot listed first (``bots[0]``), in whatever seat
the seating rule puts it. Its **points** in a finished game are its share of the win: ``1/w`` when
it is among the ``w`` winners (RULES §8.3), else 0; counted in units of 1/12 so that a 2-, 3- or
4-way shared win is an integer.

Mirrored groups (``c{k}|group|...``, configurations with ``mirrored`` seating): the P games of a
group are one sample, the focal player's total points ``T`` (1/12 units) over them.

- ``n``: groups whose P games all finished; ``truncated``: groups with a truncated game (left out);
- ``sum``, ``sumsq``: of ``T``; ``game_sumsq``: of the per-game points squared (1/144 units),
  for the variance the same games would show counted independently;
- two players: ``c{k}|penta|n0`` .. ``n4``, pairs in which the focal player scored ``i`` half
  points (``T = 6 i``), the pentanomial.

Paired configurations (``c{k}|paired|...``, every configuration `JobSpec.paired_configurations`
pairs with the baseline): game g of configuration k and of the baseline share deal and seats; the
sample is the focal player's ``d = x_k(g) - x_base(g)``:

- ``n``: games finished in both; ``truncated``: the others;
- ``score.sum``, ``score.sumsq``: of the difference in final score (points on the board);
- ``win.sum``, ``win.sumsq``: of the difference in the win indicator (a shared win is a win, as in
  ``win_rate``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..rules.records import GameRecords
from . import sprt

Counters = dict[str, int]  # as sim.stats.counters (which imports this module)

UNIT = 12  # points are counted in 1/12: 12/w is an integer for w = 1..4 winners


def _focal_seat(records: GameRecords) -> np.ndarray:
    """(N,) seat of bot index 0 in each game."""
    return np.argmax(records.seat_bot == 0, axis=1)


def focal_points(records: GameRecords) -> np.ndarray:
    """(N,) int64 focal player's share of the win in 1/12 units (0 for truncated games)."""
    rows = np.arange(len(records))
    seat = _focal_seat(records)
    winners = records.winners.sum(axis=1).astype(np.int64)
    won = records.winners[rows, seat]
    return np.where(won, UNIT // np.maximum(winners, 1), 0).astype(np.int64)


def count_groups(records: GameRecords, config_index: int) -> Counters:
    """Group counters of mirrored games; `records` must hold whole groups, sorted by game."""
    players = records.players
    if len(records) == 0:
        return {}
    games = records.game.astype(np.int64)
    if len(records) % players or not (
        (games.reshape(-1, players) == games[::players, None] + np.arange(players)).all()
        and (games[::players] % players == 0).all()
    ):
        raise ValueError(
            f"mirrored configuration {config_index}: records must hold whole groups of "
            f"{players} games (game {players}k .. {players}k+{players - 1}), sorted by game"
        )
    pts = focal_points(records).reshape(-1, players)
    complete = ~records.truncated.reshape(-1, players).any(axis=1)
    total = pts[complete].sum(axis=1)
    c = f"c{config_index}"
    out: Counters = {
        f"{c}|group|n": int(complete.sum()),
        f"{c}|group|truncated": int((~complete).sum()),
        f"{c}|group|sum": int(total.sum()),
        f"{c}|group|sumsq": int((total * total).sum()),
        f"{c}|group|game_sumsq": int((pts[complete] ** 2).sum()),
    }
    if players == 2:
        half_points = np.bincount(total // (UNIT // 2), minlength=5)
        for i in range(5):
            out[f"{c}|penta|n{i}"] = int(half_points[i])
    return {k: v for k, v in out.items() if v}


def count_paired(base: GameRecords, other: GameRecords, config_index: int) -> Counters:
    """Paired-difference counters of configuration `config_index` against the baseline's games:
    the same game indices in the same order (the play driver returns records sorted by game)."""
    if len(base) != len(other) or not (base.game == other.game).all():
        raise ValueError("paired records must hold the same games in the same order")
    if len(base) == 0:
        return {}
    if not (base.seat_bot == other.seat_bot).all():
        raise ValueError("paired configurations must seat their bots alike game for game")
    both = ~base.truncated & ~other.truncated
    rows = np.arange(len(base))[both]
    seat = _focal_seat(base)[both]
    d_score = other.scores[rows, seat].astype(np.int64) - base.scores[rows, seat].astype(np.int64)
    d_win = other.winners[rows, seat].astype(np.int64) - base.winners[rows, seat].astype(np.int64)
    c = f"c{config_index}|paired"
    out = {
        f"{c}|n": int(both.sum()),
        f"{c}|truncated": int((~both).sum()),
        f"{c}|score.sum": int(d_score.sum()),
        f"{c}|score.sumsq": int((d_score * d_score).sum()),
        f"{c}|win.sum": int(d_win.sum()),
        f"{c}|win.sumsq": int((d_win * d_win).sum()),
    }
    return {k: v for k, v in out.items() if v}


# --- derived on read ----------------------------------------------------------------------------


def luce_elo(share: float, players: int) -> float:
    """Elo of a player whose expected share of the win against ``P - 1`` equal opponents is
    `share`: Luce's choice model ``share = pi / (pi + P - 1)``, ``elo = 400 log10 pi``. For two
    players this is the logistic Elo."""
    if share <= 0.0:
        return -math.inf
    if share >= 1.0:
        return math.inf
    return 400.0 * math.log10(share * (players - 1) / (1.0 - share))


def luce_share(elo: float, players: int) -> float:
    """Inverse of `luce_elo`: the share of the win of a player `elo` above ``P - 1`` equals."""
    pi = 10.0 ** (elo / 400.0)
    return pi / (pi + players - 1)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def group_moments(
    counters: Counters, k: int, players: int
) -> tuple[int, float | None, float | None]:
    """``(groups, mean, var)`` of the focal player's points per game over a group (the
    per-group sample ``T / (12 P)``); var is the maximum-likelihood variance."""
    c = f"c{k}|group"
    n = int(counters.get(f"{c}|n", 0))
    mean, var = sprt.sample_moments(
        n, int(counters.get(f"{c}|sum", 0)), int(counters.get(f"{c}|sumsq", 0)), UNIT * players
    )
    return n, mean, var


def derive_groups(counters: Counters, k: int, config) -> dict[str, Any]:
    """The ``groups`` section of a mirrored configuration (docs/statistics.md)."""
    players = config.players
    n, mean, var = group_moments(counters, k, players)
    doc: dict[str, Any] = {
        "focal": config.bots[0],
        "groups": n,
        "games": n * players,
        "truncated_groups": int(counters.get(f"c{k}|group|truncated", 0)),
        "score": mean,
        "score_ci95": None,
        "elo": None,
        "elo_ci95": None,
        "los": None,
        "variance_gain": None,
    }
    if players == 2:
        doc["pentanomial"] = [int(counters.get(f"c{k}|penta|n{i}", 0)) for i in range(5)]
    if n == 0:
        return doc
    fair = 1.0 / players
    if n >= 2:
        lo, hi = sprt.interval(mean, var, n)
        doc["score_ci95"] = [lo, hi]
        doc["elo_ci95"] = [_finite(luce_elo(lo, players)), _finite(luce_elo(hi, players))]
    doc["elo"] = _finite(luce_elo(mean, players))
    se = math.sqrt(var / n)
    doc["los"] = (
        sprt.normal_cdf((mean - fair) / se)
        if se > 0
        else (0.5 if mean == fair else float(mean > fair))
    )
    # Variance of the mean had the same n*P games been counted one by one, over the group's.
    games = n * players
    game_var = int(counters.get(f"c{k}|group|game_sumsq", 0)) / (UNIT * UNIT) / games - mean**2
    if var > 0:
        doc["variance_gain"] = (game_var / games) / (var / n)
    return doc


def paired_moments(counters: Counters, k: int, statistic: str):
    """``(n, mean, var)`` of the paired difference ``statistic`` ('score' or 'win')."""
    c = f"c{k}|paired"
    n = int(counters.get(f"{c}|n", 0))
    mean, var = sprt.sample_moments(
        n,
        int(counters.get(f"{c}|{statistic}.sum", 0)),
        int(counters.get(f"{c}|{statistic}.sumsq", 0)),
    )
    return n, mean, var


def derive_paired(counters: Counters, k: int, config, baseline: int) -> dict[str, Any]:
    """The ``paired`` section of a configuration paired with the baseline."""
    doc: dict[str, Any] = {
        "baseline": baseline,
        "focal": config.bots[0],
        "games": int(counters.get(f"c{k}|paired|n", 0)),
        "truncated": int(counters.get(f"c{k}|paired|truncated", 0)),
    }
    for statistic, name in (("score", "score_diff"), ("win", "win_rate_diff")):
        n, mean, var = paired_moments(counters, k, statistic)
        doc[name] = mean
        # Sample variance (n - 1) for the interval, as the other means of the document do.
        doc[f"{name}_ci95"] = sprt.interval(mean, var * n / (n - 1), n) if n >= 2 else None
    return doc
