"""Constant tables of the game, built once at import (docs/rules.md §2, §5.3, §12.3)."""

from __future__ import annotations

import numpy as np

COLOURS = ("blue", "yellow", "red", "black", "white")
COLOUR_LETTERS = "BYRKW"
N_COLOURS = 5
TILES_PER_COLOUR = 20
TILES_PER_FACTORY = 4
FLOOR_SLOTS = 7
WALLS = ("coloured", "gray")
DEFAULT_MAX_ROUNDS = 100

# Cumulative floor penalty for n occupied slots (docs/rules.md §5.3): -1 -1 -2 -2 -2 -3 -3.
FLOOR_CUM = np.array([0, 1, 2, 4, 6, 8, 11, 14], dtype=np.int16)

# End reasons recorded for every finished game (docs/rules.md §10.7).
END_ROW_COMPLETED = 0
END_ROUND_CAP = 1
END_NO_TILES = 2
END_REASONS = ("row_completed", "round_cap", "no_tiles")


def factories_for(players: int) -> int:
    """Number of factory displays, 2n+1 (docs/rules.md §3.2)."""
    return 2 * players + 1


def wall_column(row, colour):
    """Column of `colour` in `row` on the coloured wall (docs/rules.md §2.3)."""
    return (colour + row) % 5


def wall_colour(row, col):
    """Colour printed at `(row, col)` on the coloured wall (docs/rules.md §2.3)."""
    return (col - row) % 5


def _runs() -> np.ndarray:
    # RUN[mask, j]: length of the run of 1s of the 5-bit `mask` holding bit j (0 if j is unset).
    run = np.zeros((32, 5), dtype=np.int8)
    for mask in range(32):
        for j in range(5):
            if not mask >> j & 1:
                continue
            lo = j
            while lo > 0 and mask >> (lo - 1) & 1:
                lo -= 1
            hi = j
            while hi < 4 and mask >> (hi + 1) & 1:
                hi += 1
            run[mask, j] = hi - lo + 1
    return run


RUN = _runs()
