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
    """5-bit mask (int32) of the columns where `colour` may go on gray-wall row `row` (RULES §9.3):
    the cell is free and the column holds no tile of that colour."""
    # Bit c of `has`: column c holds the colour (`_gather5` in uint32: the product wraps only
    # above bit 31, and bits 16..20 take no carries, so they are the same).
    bits = ((col_colours >> colour) & T.COLUMN0).view(np.uint32)
    has = ((bits * _GATHER_COLUMN32) >> 16).view(np.int32)
    return ~((wall >> (5 * row)) | has) & 31


_GATHER_COLUMN32 = np.uint32(T.GATHER_COLUMN)


def _gray_columns(st, slots, row, full, hue, wall, col_colours, choose_columns):
    """The full lines of gray-wall row `row` that have a legal column, and those columns.

    Returns ``(at, seat, game, chosen)``: flat positions ``seat * n + game`` into the (P, n)
    arrays, their seats and games (indices into `slots`), and the chosen columns (int32); a full
    line not listed is a dead end (RULES §9.3-4). A `choose_columns` whose ``all_seats``
    attribute is true takes every seat of the row in one call (``seat`` an array, element by
    element with the slots); otherwise it is called seat by seat with an int ``seat``, as
    `sim.bots.base` describes. Everything is gathered through flat positions: 2-D ``nonzero``
    and fancy indexing cost several times more at these sizes.
    """
    n = full.shape[1]
    legal = _legal_columns(wall, col_colours, row, hue)
    legal *= full
    legal_flat = legal.reshape(-1)
    if choose_columns is not None and not getattr(choose_columns, "all_seats", False):
        parts = []
        for p in range(st.players):
            pick = (legal[p] != 0).nonzero()[0]
            if pick.size == 0:
                continue
            ok = legal[p].take(pick)
            colour = hue[p].take(pick)
            chosen = np.asarray(choose_columns(st, slots.take(pick), p, row, colour, ok), np.int32)
            _check_columns(chosen, ok, p, row)
            parts.append((p * n + pick, pick, chosen))
        if not parts:
            return (_EMPTY,) * 3 + (_EMPTY.astype(np.int32),)
        at = np.concatenate([a for a, _, _ in parts])
        game = np.concatenate([g for _, g, _ in parts])
        return at, at // n, game, np.concatenate([c for _, _, c in parts])
    at = (legal_flat != 0).nonzero()[0]
    seat = at // n
    game = at - seat * n
    ok = legal_flat.take(at)
    if choose_columns is None:  # leftmost legal column (decision 9.3.1)
        return at, seat, game, T.NTH_DEST_FLAT.take(ok * 6).astype(np.int32)
    if at.size == 0:
        return at, seat, game, np.zeros(0, np.int32)
    colour = hue.reshape(-1).take(at)
    chosen = np.asarray(choose_columns(st, slots.take(game), seat, row, colour, ok), np.int32)
    _check_columns(chosen, ok, seat, row)
    return at, seat, game, chosen


_EMPTY = np.zeros(0, np.intp)


# _COLUMN_BIT[c + 1]: bit c of a 5-bit column mask for c in 0..4, and 0 for anything else (the
# look-up clips c + 1 into 0..6).
_COLUMN_BIT = np.array([0, 1, 2, 4, 8, 16, 0], np.int32)


def _check_columns(chosen: np.ndarray, legal: np.ndarray, seat, row: int) -> None:
    """Raise ValueError unless every chosen column is one of its 5-bit `legal` mask's."""
    bad = (_COLUMN_BIT.take(chosen + 1, mode="clip") & legal) == 0
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
        hue = np.maximum(colour, 0)
        if st.gray:
            at, seat, game, chosen = _gray_columns(
                st, slots, r, full, hue, wall, col_colours, choose_columns
            )
            col = np.zeros(full.shape, np.int32)
            col.reshape(-1)[at] = chosen
            on = np.zeros(full.shape, np.int32)
            on.reshape(-1)[at] = 1
            to_lid = full * np.int32(r)
            dead = full > on  # full, with no legal column
            if dead.any():
                # Dead end: all r+1 tiles to the floor at once (RULES §9.4); they reach the lid.
                floor = np.minimum(floor + dead * np.int32(r + 1), FLOOR_SLOTS)
                to_lid += dead
            # Gray walls keep each cell's colour; the coloured wall's follow from the layout.
            cell_at = (seat * 25 + 5 * r + chosen) * b_all + slots.take(game)
            cells[cell_at] = hue.reshape(-1).take(at).astype(np.int8)  # int8: a faster scatter
        else:
            col = T.COLOURED_COLUMN[r].take(colour + 1)
            on = full.astype(np.int32)
            to_lid = full * np.int32(r)
        wall |= on << (5 * r + col)
        row_colours |= on << (5 * r + hue)
        col_colours |= on << (5 * col + hue)
        points += on * tile_points(wall, r, col)
        # The other r tiles of a tiled line go to the lid (§6.1); added up once below.
        lid_at[r] = hue * n + cols
        lid_add[r] = to_lid
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
