"""Turn-order counters and the ``turn_order`` section: does starting round 1 pay?

Rotated and mirrored seating put every bot in every seat equally often, so a per-seat table reads
50/50 by construction; what is left of seat luck is *who starts*. The start seat of each game is
drawn from the deal stream (`sim.jobs.spec.first_player`), independent of the bots. Counted over
finished games of configuration ``k`` (``c{k}|turn|...``):

- ``start={s}|pos={q}|n``, ``wins``, ``score.sum``, ``score.sumsq``: the player-games in
  turn-order position ``q`` (seat ``(s + q) % P``; position 0 starts) of the games seat ``s``
  started. Summed over ``s`` they are the ``positions`` groups; at ``q = 0`` they are the start
  player's record per start seat.
- ``bot={label}|pos={q}|...``: the same four per bot label and position.
- ``adv.score.sum``, ``adv.score.sumsq``: per game, ``P * x_0 - sum_p x_p`` for the final score
  ``x`` (an integer; divided by ``P - 1`` on read it is the start player's score minus the mean of
  the others); ``adv.win.*``: the same for the win indicator (a shared win is a win). One sample
  per game, so the interval accounts for the players of a game being dependent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..rules.records import GameRecords
from .intervals import moments, wilson

Counters = dict[str, int]

_FIELDS = ("n", "wins", "score.sum", "score.sumsq")


def _cell_sums(cell: np.ndarray, ncells: int, won: np.ndarray, score: np.ndarray):
    """(n, wins, score sum, score sumsq) per cell; inputs flat over player-games."""
    return (
        np.bincount(cell, minlength=ncells),
        np.bincount(cell, weights=won, minlength=ncells),
        np.bincount(cell, weights=score, minlength=ncells),
        np.bincount(cell, weights=score * score, minlength=ncells),
    )


def count_turn_order(records: GameRecords, config_index: int, seat_label, labels) -> Counters:
    """Turn-order counters of a batch of games of one configuration.

    Parameters
    ----------
    records : the games (any subset, any order)
    config_index : the ``k`` of ``c{k}``
    seat_label : (N, P) int64, index into `labels` of the bot in each seat
    labels : the configuration's unique canonical bot labels
    """
    fin = ~records.truncated
    if not fin.any():
        return {}
    players = records.players
    first = records.first_player[fin].astype(np.int64)
    score = records.scores[fin].astype(np.int64)
    won = records.winners[fin].astype(np.int64)
    seat = np.arange(players)[None, :]
    pos = (seat - first[:, None]) % players  # (n, P) position of each seat
    start = np.broadcast_to(first[:, None], pos.shape)
    flat_score = score.reshape(-1).astype(np.float64)  # exact: sums stay far below 2**53
    flat_won = won.reshape(-1).astype(np.float64)
    out: Counters = {}
    c = f"c{config_index}|turn"

    def emit(prefix: str, sums) -> None:
        for name, value in zip(_FIELDS, sums, strict=True):
            if value:
                out[f"{prefix}|{name}"] = int(value)

    by_start = _cell_sums(
        (start * players + pos).reshape(-1), players * players, flat_won, flat_score
    )
    for s in range(players):
        for q in range(players):
            emit(f"{c}|start={s}|pos={q}", [v[s * players + q] for v in by_start])
    lab = seat_label[fin].astype(np.int64)
    by_bot = _cell_sums(
        (lab * players + pos).reshape(-1), len(labels) * players, flat_won, flat_score
    )
    for li, label in enumerate(labels):
        for q in range(players):
            emit(f"{c}|bot={label}|pos={q}", [v[li * players + q] for v in by_bot])
    rows = np.arange(len(first))
    for name, x in (("score", score), ("win", won)):
        adv = players * x[rows, first] - x.sum(axis=1)
        for key, value in (("sum", adv.sum()), ("sumsq", (adv * adv).sum())):
            if value:
                out[f"{c}|adv.{name}.{key}"] = int(value)
    return out


# --- derived on read ----------------------------------------------------------------------------


def _raw(counters: Counters, prefix: str) -> list[int]:
    """A cell's counters, in `_FIELDS` order."""
    get = counters.get
    return [int(get(f"{prefix}|{f}", 0)) for f in _FIELDS]


def _cell(counters: Counters, prefix: str) -> dict[str, Any]:
    return _figures(*_raw(counters, prefix))


def _figures(n: int, wins: int, s: int, q: int) -> dict[str, Any]:
    score = moments(n, s, q)
    return {
        "player_games": n,
        "wins": wins,
        "win_rate": wins / n if n else None,
        "win_rate_ci95": wilson(wins, n),
        "score": score["mean"],
        "score_ci95": score["ci95"],
    }


def _advantage(counters: Counters, c: str, name: str, games: int, players: int):
    """Mean and 95 % interval of ``x_start - mean(x_others)`` over finished games."""
    m = moments(
        games,
        int(counters.get(f"{c}|adv.{name}.sum", 0)),
        int(counters.get(f"{c}|adv.{name}.sumsq", 0)),
    )
    scale = players - 1
    if m["mean"] is None:
        return None, None
    ci = [v / scale for v in m["ci95"]] if m["ci95"] else None
    return m["mean"] / scale, ci


def derive_turn_order(counters: Counters, k: int, config) -> dict[str, Any]:
    """The ``turn_order`` section of configuration `k` (docs/statistics.md)."""
    players = config.players
    c = f"c{k}|turn"
    raw = [
        [_raw(counters, f"{c}|start={s}|pos={q}") for q in range(players)] for s in range(players)
    ]
    cells = [[_figures(*got) for got in row] for row in raw]
    positions = []
    for q in range(players):  # each position over every start seat: the cells' sums
        sums = [sum(raw[s][q][i] for s in range(players)) for i in range(len(_FIELDS))]
        positions.append({"position": q, **_figures(*sums)})
    games = positions[0]["player_games"]  # one start player per finished game
    start_seats = [
        {
            "seat": s,
            "games": cells[s][0]["player_games"],
            **_strip(cells[s][0]),
            "positions": [{"position": q, **cells[s][q]} for q in range(players)],
        }
        for s in range(players)
    ]
    labels = list(dict.fromkeys(config.bots))
    bots = {
        label: [
            {"position": q, **_cell(counters, f"{c}|bot={label}|pos={q}")} for q in range(players)
        ]
        for label in labels
    }
    score_diff, score_ci = _advantage(counters, c, "score", games, players)
    win_diff, win_ci = _advantage(counters, c, "win", games, players)
    start = positions[0]
    return {
        "games": games,
        "first_player": {
            "fair_win_rate": 1.0 / players,
            "win_rate": start["win_rate"],
            "win_rate_ci95": start["win_rate_ci95"],
            "score_diff": score_diff,
            "score_diff_ci95": score_ci,
            "win_rate_diff": win_diff,
            "win_rate_diff_ci95": win_ci,
        },
        "positions": positions,
        "start_seats": start_seats,
        "bots": bots,
    }


def _strip(cell: dict[str, Any]) -> dict[str, Any]:
    """The start player's figures of a start seat (its player-games are the games)."""
    return {key: value for key, value in cell.items() if key != "player_games"}
