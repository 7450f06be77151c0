"""Wall tiling and the floor penalty at the end of a round (RULES.md §6, §9.3–§9.4)."""

from __future__ import annotations

import numpy as np

from . import rng
from . import tables as T
from .constants import FLOOR_SLOTS
from .state import BatchState


def tile_points(wall: np.ndarray, row: int, col: np.ndarray) -> np.ndarray:
    """Points for the tile just placed at (row, col) of `wall` (which includes it, §6.2)."""
    row_mask = (wall >> (5 * row)) & 31
    bits = np.asarray((wall >> col) & T.COLUMN0)
    col_mask = _gather5_32(bits.view(np.uint32) if bits.dtype == np.int32 else bits.astype(np.uint32))
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


def _gray_columns(st, slots, row, full, hue, wall, col_colours, choose_columns, seat_of, slot_of):
    """The full lines of gray-wall row `row` that have a legal column, and those columns.

    Lines are flat positions ``seat * n + game`` into the (P, n) arrays; `seat_of` and `slot_of`
    give each position's seat and slot. Returns ``(at, chosen, dead)``: the lines with
    a legal column, the chosen columns (int32), and the (P, n) mask of the full lines without one
    (RULES §9.3-4), None when there is none. A `choose_columns` whose
    ``all_seats`` attribute is true takes every seat of the row in one call (``seat`` an array,
    element by element with the slots); otherwise it is called seat by seat with an int ``seat``,
    as `sim.bots.base` describes. Everything goes through flat positions: 2-D ``nonzero`` and
    fancy indexing cost several times more at round-end sizes.
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
            parts.append((p * n + pick, chosen))
        at = np.concatenate([a for a, _ in parts]) if parts else _EMPTY
        chosen = np.concatenate([c for _, c in parts]) if parts else _EMPTY.astype(np.int32)
    else:
        at = (legal_flat != 0).nonzero()[0]
        ok = legal_flat.take(at)
        if choose_columns is None:  # leftmost legal column (decision 9.3.1)
            chosen = T.NTH_DEST_FLAT.take(ok * 6).astype(np.int32)
        elif at.size == 0:
            chosen = _EMPTY.astype(np.int32)
        else:
            seat, slot = seat_of.take(at), slot_of.take(at)
            colour = hue.reshape(-1).take(at)
            chosen = np.asarray(choose_columns(st, slot, seat, row, colour, ok), np.int32)
            _check_columns(chosen, ok, seat, row)
    dead = full & (legal == 0) if at.size < np.count_nonzero(full) else None
    return at, chosen, dead


# (seat * 5 + row) * GOLDEN for the column counters (`sim.rng`, `sim.sampling.random_columns`).
_LINE_OFFSET = (np.arange(20, dtype=np.uint64) * rng.GOLDEN).reshape(4, 5)
_ROW_CAP = np.arange(1, 6, dtype=np.int8)[:, None]  # a full line r holds r + 1 tiles
_ROW_INDEX = np.arange(5, dtype=np.int32)[:, None]
# _NTH_COLUMN[mask * 6 + j]: the j-th set bit of a 5-bit column mask (0 for the empty mask).
_NTH_COLUMN = np.where(T.NTH_DEST_FLAT == 5, 0, T.NTH_DEST_FLAT).astype(np.int32)


def _column_draws(st, slots, full, keys) -> np.ndarray:
    """(5, P * n) uint64: the bot stream's uniform32 of each full line's column choice (`full`,
    (5, P, n)), at
    counter ``COLUMN_COUNTER + (round * 4 + seat) * 5 + row`` (`sim.sampling.random_columns`);
    other entries are not set. Drawn once for the five rows: the draws depend only on the line."""
    players, n = full.shape[1], full.shape[2]
    at = np.flatnonzero(full)
    # keys + counter * GOLDEN, the input of rng.uniform32's mix, for every line (wrapping).
    with np.errstate(over="ignore"):
        base = st.round[slots].astype(np.uint64) * np.uint64(20) + np.uint64(rng.COLUMN_COUNTER)
        base = keys + base * rng.GOLDEN
        z = base + _LINE_OFFSET[:players].T[:, :, None]  # (5, P, n)
    out = np.empty(5 * players * n, np.uint64)
    out[at] = rng.mix_to_uniform32(z.reshape(-1).take(at))
    return out.reshape(5, players * n)


def _uniform_columns(row, full, hue, wall, col_colours, draws):
    """`_gray_columns` for a column uniformly random among the legal ones from `draws` (the
    row's `_column_draws`): ``(at, chosen, dead)`` as `_gray_columns`, the same columns as
    `sim.sampling.random_columns`."""
    legal = _legal_columns(wall, col_colours, row, hue)
    legal *= full
    legal_flat = legal.reshape(-1)
    at = (legal_flat != 0).nonzero()[0]  # (bool nonzero is several times faster than int32)
    ok = legal_flat.take(at)
    k = (draws.take(at) * np.bitwise_count(ok)) >> _S32  # rng.pick: (u * count) >> 32
    chosen = _NTH_COLUMN.take(k.view(np.int64) + ok * 6)
    dead = full & (legal == 0) if at.size < np.count_nonzero(full) else None
    return at, chosen, dead


_S32 = np.uint64(32)


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
    full_all = counts == _ROW_CAP  # (P, 5, n)
    hues = np.maximum(colours, 0)
    # The other r tiles of a tiled line go to the lid (§6.1), all r+1 of a dead end (§9.4): added
    # up by slot and colour once at the end.
    lid_at = hues * n + np.arange(n)
    lid_add = full_all * _ROW_INDEX
    if st.gray:
        seat_of = np.repeat(np.arange(st.players), n)  # seat and slot of each flat (P, n) position
        slot_of = np.tile(slots, st.players)
        flat_wall, flat_rows, flat_cols, flat_points = (
            a.reshape(-1) for a in (wall, row_colours, col_colours, points)
        )
        # Flat index into st.wall_cells of cell 0 of each (P, n) position's wall.
        cell0 = ((np.arange(st.players) * (25 * b_all))[:, None] + slots).reshape(-1)
        keys_of = getattr(choose_columns, "uniform_column_keys", None)
        if keys_of is not None:
            draws = _column_draws(st, slots, full_all.transpose(1, 0, 2), keys_of(slots))
        else:
            draws = None
    for r in range(5):
        full = full_all[:, r]
        colour = colours[:, r]
        hue = hues[:, r]
        if st.gray:
            if draws is None:
                at, chosen, dead = _gray_columns(
                    st, slots, r, full, hue, wall, col_colours, choose_columns, seat_of, slot_of
                )
            else:
                at, chosen, dead = _uniform_columns(r, full, hue, wall, col_colours, draws[r])
            if dead is not None:
                # Dead end: all r+1 tiles to the floor at once (RULES §9.4); they reach the lid.
                floor = np.minimum(floor + dead * np.int32(r + 1), FLOOR_SLOTS)
                lid_add[:, r] += dead
            # Only the tiled lines' walls, colours and points change: updated where they are.
            hue_at = hue.reshape(-1).take(at)
            cell = chosen + 5 * r  # bit of the cell in `wall`
            tiled = flat_wall.take(at) | (1 << cell)
            flat_wall[at] = tiled
            flat_rows[at] = flat_rows.take(at) | (1 << (5 * r + hue_at))
            flat_cols[at] = flat_cols.take(at) | (1 << (5 * chosen + hue_at))
            flat_points[at] = flat_points.take(at) + tile_points(tiled, r, chosen)
            # Gray walls keep each cell's colour; the coloured wall's follow from the layout.
            cells[cell0.take(at) + cell * b_all] = hue_at.astype(np.int8)
        else:
            col = T.COLOURED_COLUMN[r].take(colour + 1)
            on = full.astype(np.int32)
            wall |= on << (5 * r + col)
            row_colours |= on << (5 * r + hue)
            col_colours |= on << (5 * col + hue)
            points += on * tile_points(wall, r, col)
        # A cleared line accepts every colour its wall row lacks (it accepted none while full).
        accept |= full * (T.SPREAD[31 & ~(row_colours >> (5 * r))] << r)
    # The full lines are cleared: count 0 and colour -1 (-1 has every bit set).
    counts *= ~full_all
    colours |= np.negative(full_all.view(np.int8))
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
