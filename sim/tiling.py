"""Wall tiling and the floor penalty at the end of a round (RULES.md §6, §9.3–§9.4)."""

from __future__ import annotations

import numpy as np

from . import tables as T
from .constants import FLOOR_SLOTS
from .state import BatchState


def tile_points(wall: np.ndarray, row: int, col: np.ndarray) -> np.ndarray:
    """Points for the tile just placed at (row, col) of `wall` (which includes it, §6.2)."""
    row_mask = (wall >> (5 * row)) & 31
    col_mask = _gather5((wall >> col) & T.COLUMN0)
    h = T.RUN_FLAT[row_mask * 5 + col]
    v = T.RUN_FLAT[col_mask * 5 + row]
    return np.where((h > 1) & (v > 1), h + v, h + v - 1)


def _gather5(bits: np.ndarray) -> np.ndarray:
    """Bits 0, 5, 10, 15, 20 of `bits` (nothing else set) as a 5-bit mask."""
    # One multiply moves bit 5r to bit 16 + r: the products 5r + 4j never collide, so nothing
    # carries (j = 4 - r lands on 16 + r).
    return (bits.astype(np.int64) * T.GATHER_COLUMN >> 16) & 31


def _legal_columns(wall: np.ndarray, col_colours: np.ndarray, row: int, colour) -> np.ndarray:
    """5-bit mask of the columns where `colour` may go on gray-wall row `row` (RULES §9.3):
    the cell is free and the column holds no tile of that colour."""
    free = ~(wall >> (5 * row)) & 31
    has_colour = _gather5((col_colours >> colour) & T.COLUMN0)  # bit c: column c has the colour
    return (free & ~has_colour).astype(wall.dtype)


def _gray_columns(st, slots, row, full, colour, wall, col_colours, choose_columns):
    """Columns (P, n) for the full lines of gray-wall row `row`; -1 is a dead end (RULES §9.3-4).

    A `choose_columns` whose ``all_seats`` attribute is true takes every seat of the row in one
    call (``seat`` an array, element by element with the slots); otherwise it is called seat by
    seat with an int ``seat``, as `sim.bots.base` describes.
    """
    legal = np.where(full, _legal_columns(wall, col_colours, row, np.maximum(colour, 0)), 0)
    if choose_columns is None:  # leftmost legal column (decision 9.3.1)
        return np.where(legal > 0, T.NTH_DEST_FLAT.take(legal * 6), -1).astype(np.int32)
    col = np.full(full.shape, -1, np.int32)
    if getattr(choose_columns, "all_seats", False):
        seats, games = np.nonzero(legal)
        if seats.size:
            ok = legal[seats, games]
            chosen = np.asarray(
                choose_columns(st, slots[games], seats, row, colour[seats, games], ok), np.int32
            )
            _check_columns(chosen, ok, seats, row)
            col[seats, games] = chosen
        return col
    for p in range(st.players):
        pick = np.flatnonzero(legal[p])
        if pick.size == 0:
            continue
        ok = legal[p, pick]
        chosen = np.asarray(choose_columns(st, slots[pick], p, row, colour[p, pick], ok), np.int32)
        _check_columns(chosen, ok, p, row)
        col[p, pick] = chosen
    return col


def _check_columns(chosen: np.ndarray, legal: np.ndarray, seat, row: int) -> None:
    """Raise ValueError unless every chosen column is one of its 5-bit `legal` mask's."""
    bad = (chosen.astype(np.uint32) > 4) | ((legal >> np.clip(chosen, 0, 4)) & 1 == 0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        who = seat if np.isscalar(seat) else int(seat[first])
        raise ValueError(f"choose_columns returned an illegal column for seat {who}, row {row}")


def tile_walls(st: BatchState, slots: np.ndarray, choose_columns=None) -> None:
    """Tile every seat's full pattern lines, score them, then apply the floor penalty (§6).

    Every seat is tiled at once, row by row strictly top to bottom (decision 6.1.1); on the gray
    wall `choose_columns` picks the columns (see `sim.engine.step`).
    """
    # np.take along the batch axis gives C-ordered copies (an ``[:, slots]`` gather is F-ordered,
    # which makes every per-row operation below strided) and is itself faster.
    wall = np.take(st.wall, slots, axis=-1)
    row_colours = np.take(st.row_colours, slots, axis=-1)
    col_colours = np.take(st.col_colours, slots, axis=-1)
    floor = np.take(st.floor, slots, axis=-1).astype(np.int32)
    counts = np.take(st.line_count, slots, axis=-1)
    colours = np.take(st.line_colour, slots, axis=-1).astype(np.int32)
    lid = np.take(st.lid, slots, axis=-1).astype(np.int16)
    accept = np.take(st.accept, slots, axis=-1)
    points = np.zeros(wall.shape, np.int32)
    cells = st.wall_cells.reshape(-1)
    b_all = st.batch
    n = slots.shape[0]
    cols = np.arange(n)
    lid_at = np.zeros((5, st.players, n), np.intp)
    lid_add = np.zeros((5, st.players, n), np.int32)
    for r in range(5):
        full = counts[:, r] == r + 1
        colour = colours[:, r]
        if st.gray:
            col = _gray_columns(st, slots, r, full, colour, wall, col_colours, choose_columns)
            dead = full & (col < 0)
            # Dead end: all r+1 tiles to the floor at once (RULES §9.4); they reach the lid.
            floor = np.minimum(floor + np.where(dead, r + 1, 0), FLOOR_SLOTS)
            placed = full & ~dead
            to_lid = np.where(placed, r, np.where(dead, r + 1, 0))
        else:
            col = T.COLOURED_COLUMN[r].take(colour + 1)
            placed = full
            to_lid = full * np.int32(r)
        col = np.maximum(col, 0)
        hue = np.maximum(colour, 0)
        on = placed.astype(np.int32)
        wall |= on << (5 * r + col)
        row_colours |= on << (5 * r + hue)
        col_colours |= on << (5 * col + hue)
        points += on * tile_points(wall, r, col)
        # The other r tiles of a tiled line go to the lid (§6.1); added up once below.
        lid_at[r] = hue * n + cols
        lid_add[r] = to_lid
        if st.gray and placed.any():
            # Gray walls keep each cell's colour; the coloured wall's follow from the layout.
            p_idx, g_idx = np.nonzero(placed)
            cells[(p_idx * 25 + 5 * r + col[p_idx, g_idx]) * b_all + slots[g_idx]] = colour[
                p_idx, g_idx
            ]
        counts[:, r] = np.where(full, 0, counts[:, r])
        colours[:, r] = np.where(full, -1, colour)
        # A cleared line accepts every colour its wall row lacks (it accepted none while full).
        accept |= full * (T.SPREAD[31 & ~(row_colours >> (5 * r))] << r)
    lid += (
        np.bincount(lid_at.ravel(), lid_add.ravel(), minlength=5 * n).reshape(5, n).astype(np.int16)
    )
    penalty = T.FLOOR_CUM32[floor]
    st.wall[:, slots] = wall
    st.row_colours[:, slots] = row_colours
    st.col_colours[:, slots] = col_colours
    st.line_count[:, :, slots] = counts
    st.line_colour[:, :, slots] = colours
    st.lid[:, slots] = lid
    st.accept[:, slots] = accept
    st.floor_penalty[:, slots] += penalty
    st.scores[:, slots] = np.maximum(0, st.scores[:, slots] + points - penalty)
    st.floor[:, slots] = 0
