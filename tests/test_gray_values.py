"""Gray-wall bot features against their definitions, bit for bit: `line_values` (the heuristic's
and rollout's line values) and `best_columns` (greedy's and the heuristic's column choice).

The references are the plain formulations these replaced for speed: the best over the columns of
each cell's value less a penalty of 1e4 per reason it is illegal, and the first maximum of the
values of a row's cells. Positions come from random play and from random bit masks (anything a
bot could be shown), with parameters at the ends of the heuristic's ranges (a spec's ``-0`` is
read as 0.0; the column choice is also checked at -0.0).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots import features
from sim.bots.features import (
    CAP,
    best_columns,
    cell_values,
    colour_progress,
    first_max,
    line_values,
    row_cell_values,
)
from sim.bots.heuristic import HeuristicBot
from sim.bots.rollout import RolloutBot
from tests.positions import random_positions

# (points, bonus, floor): the heuristic's ranges are points, bonus, floor in [0, 5]; its dead end
# is 2 * floor.
WEIGHTS = [
    (1.0, 1.0, 1.0),
    (0.0, 0.0, 0.0),
    (5.0, 5.0, 5.0),
    (0.0, 5.0, 5.0),
    (5.0, 0.0, 0.0),
    (0.3, 4.7, 2.5),
    (1e-5, 1e-5, 1e-5),
]


def _line_values_by_penalty(wall, row_colours, col_colours, points, bonus, dead_end):
    """Gray `line_values` as it was defined: illegal cells 1e4 below their value per reason."""
    base = cell_values(wall, points, bonus)
    colour = colour_progress(row_colours, bonus)[:, None, :]
    n = wall.shape[0]
    big = np.float32(1e4)
    cell = (5 * np.arange(5)[:, None] + np.arange(5)[None, :])[:, :, None]
    occupied = ((wall[None, None] >> cell) & 1).astype(np.float32)
    best = np.full((5, 5, n), -2 * big, np.float32)
    for col in range(5):
        has = ((col_colours[None] >> (5 * col + np.arange(5)[:, None])) & 1).astype(np.float32)
        cand = base[None, :, col] - big * (occupied[None, :, col] + has[:, None, :])
        np.maximum(best, cand, out=best)
    dead = -np.float32(dead_end) * CAP.astype(np.float32)[None]
    return np.maximum(best, dead) + colour


def _best_columns_by_value(wall, row, legal, bonus):
    base = row_cell_values(wall, row, 1.0, bonus)
    ok = (legal[None] >> np.arange(5)[:, None]) & 1
    return first_max(base - np.float32(1e4) * (1 - ok))


def _walls():
    """(wall, row_colours, col_colours) of every seat of random-play gray positions, then random
    25-bit masks."""
    parts = []
    for players in (2, 4):
        st, _ = random_positions(players, "gray", games=300, seed=players)
        parts.append(
            [getattr(st, name).reshape(-1) for name in ("wall", "row_colours", "col_colours")]
        )
    rng = np.random.default_rng(7)
    parts.append([rng.integers(0, 1 << 25, 3000).astype(np.int32) for _ in range(3)])
    # Nearly full walls: the dead ends and the last free cells.
    full = ((1 << 25) - 1) & ~(1 << rng.integers(0, 25, 3000))
    parts.append([full.astype(np.int32), *(rng.integers(0, 1 << 25, (2, 3000)).astype(np.int32))])
    return [np.concatenate(column) for column in zip(*parts, strict=True)]


@pytest.mark.parametrize("points,bonus,floor", WEIGHTS)
def test_gray_line_values_equal_the_penalty_formulation(points, bonus, floor):
    wall, row_colours, col_colours = _walls()
    unused = np.zeros((5, wall.size), np.int8)  # the gray wall ignores the pattern lines
    dead_end = 2 * floor
    got = line_values(True, wall, row_colours, col_colours, unused, unused, points, bonus, dead_end)
    want = _line_values_by_penalty(wall, row_colours, col_colours, points, bonus, dead_end)
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got.view(np.int32), want.view(np.int32))  # the same bits, -0.0 included


@pytest.mark.parametrize("bonus", [0.0, -0.0, 1.0, 5.0, 0.3, 2.5, 4.999, 1e-5])
def test_best_columns_equal_the_first_best_value(bonus):
    wall = _walls()[0]
    rng = np.random.default_rng(11)
    for row in range(5):
        legal = rng.integers(1, 32, wall.size).astype(np.int32)  # never empty, as tiling asks
        got = best_columns(wall, row, legal, bonus)
        assert np.array_equal(got, _best_columns_by_value(wall, row, legal, bonus)), row
        assert (((legal >> got) & 1) == 1).all()


def test_column_keys_are_cached_per_bonus():
    assert features.column_keys(2.5) is features.column_keys(2.5)
    assert features.column_keys(0.0).dtype == np.int16


def test_rollout_takes_the_heuristics_gray_columns():
    """sim/bots/rollout.py, step 4: rollout's own columns in the game are the heuristic's with its
    weights, as in its play-outs (they were the base class's uniform ones)."""
    st, keys = random_positions(2, "gray", games=200, seed=3)
    slots = np.flatnonzero(~st.done)
    rollout = RolloutBot(width=2, bonus=3.0)
    assert rollout.all_seats  # asked once per row for every seat
    rng = np.random.default_rng(5)
    seat = rng.integers(0, 2, slots.size)
    colours = rng.integers(0, 5, slots.size)
    for row in range(5):
        legal = rng.integers(1, 32, slots.size).astype(np.int32)
        got = rollout.choose_columns(st, slots, seat, row, colours, legal, keys[slots])
        want = HeuristicBot(bonus=3.0).choose_columns(st, slots, seat, row, colours, legal)
        assert np.array_equal(got, want), row
