"""Wall tiling and the floor penalty at the end of a round (RULES.md §6, §9.3–§9.4)."""

from __future__ import annotations

import numpy as np

from . import rng
from . import tables as T
from .constants import FLOOR_SLOTS
from .sampling import column_counter
from .state import BatchState


def tile_points(wall: np.ndarray, row: int, col: np.ndarray) -> np.ndarray:
    """Points for the tile just placed at (row, col) of `wall` (which includes it, §6.2)."""
    row_mask = (wall >> (5 * row)) & 31
    bits = np.asarray((wall >> col) & T.COLUMN0)
    bits = bits.view(np.uint32) if bits.dtype == np.int32 else bits.astype(np.uint32)
    col_mask = _gather5_32(bits)
    # _POINTS[row][(row_mask * 5 + col) * 32 + col_mask]: one look-up for both runs.
    return _POINTS[row].take((row_mask * 5 + col) * 32 + col_mask.view(np.int32))


def _gather5_32(bits: np.ndarray) -> np.ndarray:
    """Bits 0, 5, 10, 15, 20 of the uint32 `bits` (nothing else set) as a 5-bit mask (uint32)."""
    # One multiply moves bit 5r to bit 16 + r: the products 5r + 4j never collide, so nothing
    # carries (j = 4 - r lands on 16 + r); in uint32 the product wraps only above bit 31.
    return ((bits * _GATHER_COLUMN32) >> 16) & 31


def _points_table() -> np.ndarray:
    """(5, 32 * 5 * 32) int16: the points of a tile at (row, col) from its row's 5-bit mask and
    its column's (both holding the tile): the horizontal run plus the vertical run, or the one
    run when the other is the tile alone (§6.2)."""
    table = np.zeros((5, 32, 5, 32), np.int16)
    for row in range(5):
        h = T.RUN.astype(np.int16)[:, :, None]  # (row_mask, col)
        v = T.RUN.astype(np.int16)[:, row][None, None, :]  # (col_mask,)
        table[row] = np.where((h > 1) & (v > 1), h + v, h + v - 1)
    return table.reshape(5, -1)


def _legal_columns(wall: np.ndarray, col_colours: np.ndarray, row: int, colour) -> np.ndarray:
    """5-bit mask (int32) of the columns where `colour` may go on gray-wall row `row` (RULES §9.3):
    the cell is free and the column holds no tile of that colour."""
    # Bit c of `has`: column c holds the colour (`_gather5` in uint32: the product wraps only
    # above bit 31, and bits 16..20 take no carries, so they are the same).
    bits = ((col_colours >> colour) & T.COLUMN0).astype(np.int32, copy=False).view(np.uint32)
    has = ((bits * _GATHER_COLUMN32) >> 16).view(np.int32)
    return ~((wall >> (5 * row)) | has) & 31


_GATHER_COLUMN32 = np.uint32(T.GATHER_COLUMN)
_POINTS = _points_table()


def _chosen_columns(st, slots, row, at, ok, hue, choose_columns):
    """The columns (int32) `choose_columns` picks for the full lines `at` of gray-wall row `row`
    that have a legal column, `ok` their 5-bit masks of legal columns (RULES §9.3).

    Lines are flat positions ``seat * n + game`` into the (P, n) arrays (sorted); `hue` (P, n)
    holds each line's colour. A `choose_columns` whose ``all_seats`` attribute is true takes
    every seat of the row in one call (``seat`` an array, element by element with the slots);
    otherwise it is called seat by seat with an int ``seat``, as `sim.bots.base` describes. None
    picks the leftmost legal column (decision 9.3.1).
    """
    if choose_columns is None:  # leftmost legal column (decision 9.3.1)
        return _NTH_COLUMN.take(ok * 6)
    n = hue.shape[1]
    colour = hue.reshape(-1).take(at)
    if not getattr(choose_columns, "all_seats", False):
        parts = []
        ends = np.searchsorted(at, np.arange(1, st.players + 1) * n)
        for p in range(st.players):
            lo, hi = (ends[p - 1] if p else 0), ends[p]
            if lo == hi:
                continue
            pick, ok_p = at[lo:hi] - p * n, ok[lo:hi]
            chosen = choose_columns(st, slots.take(pick), p, row, colour[lo:hi], ok_p)
            chosen = np.asarray(chosen, np.int32)
            _check_columns(chosen, ok_p, p, row)
            parts.append(chosen)
        return np.concatenate(parts) if parts else _EMPTY.astype(np.int32)
    if at.size == 0:
        return _EMPTY.astype(np.int32)
    seat, slot = np.divmod(at, n)
    chosen = np.asarray(choose_columns(st, slots.take(slot), seat, row, colour, ok), np.int32)
    _check_columns(chosen, ok, seat, row)
    return chosen


_SEATS = np.arange(4)[None, :, None]  # int64, as the column counters are
_ROWS = np.arange(5)[:, None, None]
_ROW_CAP = np.arange(1, 6, dtype=np.int8)[:, None]  # a full line r holds r + 1 tiles
_ROW_INDEX = np.arange(5, dtype=np.int32)[:, None, None]
# _NTH_COLUMN[mask * 6 + j]: the j-th set bit of a 5-bit column mask (0 for the empty mask).
_NTH_COLUMN = np.where(T.NTH_DEST_FLAT == 5, 0, T.NTH_DEST_FLAT).astype(np.int32)
_S32 = np.uint64(32)


def _column_draws(st, slots, full, keys) -> np.ndarray:
    """(5, P * n) uint64: the bot stream's uniform32 of the column choice of each full line
    (`full`, (5, P, n)) at counter ``COLUMN_COUNTER + (round * 4 + seat) * 5 + row``, as
    `sim.sampling.random_columns` draws it; the other entries are not set. Drawn once for the
    five rows: a draw depends only on its line."""
    players, n = full.shape[1], full.shape[2]
    at = np.flatnonzero(full)
    counter = column_counter(st.round[slots], _SEATS[:, :players], _ROWS)  # (5, P, n)
    out = np.empty(5 * players * n, np.uint64)
    out[at] = rng.uniform32(keys.take(at % n), counter.reshape(-1).take(at))
    return out.reshape(5, players * n)


def _tile_gray(st, slots, choose_columns, full_all, hues, wall, row_colours, col_colours):
    """Gray-wall tiling of the full lines `full_all` (5, P, n), row by row (RULES §9.3-4):
    updates `wall`, `row_colours`, `col_colours` (P, n) and ``st.wall_cells`` in place and
    returns ``(points, tiled)``: each wall's points (P, n) and the (5, P, n) mask of the full
    lines that had a legal column (the others are dead ends).

    Only the tiled lines' walls, column colours and points change, so they are updated at their
    flat positions ``seat * n + game``; everything that no later row reads (the row colours,
    the points, the cell colours) is done once for the five rows.
    """
    players, n = wall.shape
    flat_wall, flat_cols = wall.reshape(-1), col_colours.reshape(-1)
    points = np.zeros((5, players * n), np.int32)  # the points of each row's tile
    tiled = np.empty((5, players * n), bool)
    keys_of = getattr(choose_columns, "uniform_column_keys", None)
    draws = None if keys_of is None else _column_draws(st, slots, full_all, keys_of(slots))
    lines, cells, hue_lines = [], [], []
    for r in range(5):
        hue = hues[r]
        legal = _legal_columns(wall, col_colours, r, hue)
        legal *= full_all[r]
        legal_flat = legal.reshape(-1)
        np.not_equal(legal_flat, 0, out=tiled[r])
        at = tiled[r].nonzero()[0]  # (bool nonzero is several times faster than int32's)
        ok = legal_flat.take(at)
        if draws is not None:  # uniform among the legal columns (rng.pick: (u * count) >> 32)
            k = (draws[r].take(at) * np.bitwise_count(ok)) >> _S32
            chosen = _NTH_COLUMN.take(k.view(np.int64) + ok * 6)
        else:
            chosen = _chosen_columns(st, slots, r, at, ok, hue, choose_columns)
        hue_at = hue.reshape(-1).take(at)
        cell = chosen + 5 * r  # bit of the cell in `wall`
        placed = flat_wall.take(at) | (1 << cell)
        flat_wall[at] = placed
        flat_cols[at] = flat_cols.take(at) | (1 << (5 * chosen + hue_at))
        points[r][at] = tile_points(placed, r, chosen)
        lines.append(at)
        cells.append(cell)
        hue_lines.append(hue_at)
    tiled = tiled.reshape(full_all.shape)
    # Row colours: bit 5r + colour of each tiled line.
    row_colours |= np.bitwise_or.reduce(tiled << (hues + 5 * _ROW_INDEX), axis=0)
    # Gray walls keep each cell's colour (the coloured wall's follow from the layout): cell
    # 5r + col of seat p in slot b is st.wall_cells' flat (p * 25 + 5r + col) * B + b.
    at, cell = np.concatenate(lines), np.concatenate(cells)
    b_all = st.batch
    cell0 = ((np.arange(players) * (25 * b_all))[:, None] + slots).reshape(-1)
    st.wall_cells.reshape(-1)[cell0.take(at) + cell * b_all] = np.concatenate(hue_lines)
    return points.sum(axis=0).reshape(players, n), tiled


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
    counts = np.take(st.line_count, slots, axis=-1)  # (P, 5, n)
    colours = np.take(st.line_colour, slots, axis=-1)
    lid = np.take(st.lid, slots, axis=-1).astype(np.int16)
    accept = np.take(st.accept, slots, axis=-1)
    players, n = wall.shape
    # The lines row first, (5, P, n), so that each row's lines are one contiguous (P, n) block.
    full_all = np.empty((5, players, n), bool)
    np.equal(counts.transpose(1, 0, 2), _ROW_CAP[:, :, None], out=full_all)
    hues = np.empty((5, players, n), np.int32)  # colour, 0 for an empty line
    np.maximum(colours.transpose(1, 0, 2), 0, out=hues)
    # The other r tiles of a tiled line go to the lid (§6.1), and all r+1 of a dead end (§9.4):
    # added up by slot and colour once at the end.
    lid_at = hues * n + np.arange(n)
    lid_add = full_all * _ROW_INDEX
    if st.gray:
        points, tiled = _tile_gray(
            st, slots, choose_columns, full_all, hues, wall, row_colours, col_colours
        )
        dead = full_all > tiled  # full, no legal column (RULES §9.4)
        if dead.any():
            # Dead end: all r+1 tiles to the floor at once (the rest to the lid), penalised in
            # this round's floor step.
            floor = np.minimum(floor + (dead * (_ROW_INDEX + 1)).sum(axis=0), FLOOR_SLOTS)
            lid_add += dead
    else:
        points = np.zeros(wall.shape, np.int32)
        for r in range(5):
            hue = hues[r]
            col = T.COLOURED_COLUMN[r].take(hue + 1)
            on = full_all[r].astype(np.int32)
            wall |= on << (5 * r + col)
            row_colours |= on << (5 * r + hue)
            col_colours |= on << (5 * col + hue)
            points += on * tile_points(wall, r, col)
    for r in range(5):
        # A cleared line accepts every colour its wall row lacks (it accepted none while full).
        accept |= full_all[r] * (T.SPREAD[31 & ~(row_colours >> (5 * r))] << r)
    # The full lines are cleared: count 0 and colour -1 (-1 has every bit set).
    full_lines = full_all.transpose(1, 0, 2)
    counts *= ~full_lines
    colours |= np.negative(full_lines.view(np.int8))
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
