"""Vectorised views of a batch for bots: the seat to move, its lines, and wall-cell values.

Everything here works on a set of game slots at once, batch axis last, with no loop over games.
Bots read the state only; `substate` makes the independent copy a search bot plays on.

Shapes use ``n`` for the number of slots, ``F`` for factories and ``S = F + 1`` for sources.
"""

from __future__ import annotations

import functools
from functools import lru_cache

import numpy as np

from ..rules.constants import RUN, wall_column
from ..rules.rulesets import PRINTED_RULES, RULE_FLOOR_CUM, RULE_FLOOR_SLOTS, RuleSet
from ..rules.state import BatchState
from ..rules.tables import POP5

CAP = np.arange(1, 6, dtype=np.int16)[:, None]  # (5, 1): capacity of pattern line r
_R5 = np.arange(5)
_R5_32 = _R5.astype(np.int32)  # int32 shifts of the int32 masks stay int32 (half the bytes)
FIELD6 = np.array([6 * c for c in range(5)], dtype=np.int32)
# Bits 0, 5, 10, 15, 20 (one per row) times this land on bits 20..24 with no carries between
# the cross terms (their positions 20 + 5i - 4j are all distinct), so a column of a 25-bit
# row-major mask becomes a 5-bit mask (bit r = row r) in one multiply.
_COLUMN_BITS = np.int64(sum(1 << (5 * r) for r in range(5)))
_COLUMN_MUL = np.int64(sum(1 << (20 - 4 * r) for r in range(5)))

# The end bonuses of the printed game: a complete row, column and colour (RULES §8.2). Every value
# below takes the rule set's as ``bonuses`` (`end_bonuses`); these are its default.
PRINTED_BONUSES = (2, 7, 10)

# Floor cost of x more objects on a floor holding f: CUM[min(f + x, 7)] - CUM[f]; x clipped to 31.
# CUM is the rule set's (`RuleSet.table`: totals past the floor's length repeat its full total, so
# a shorter floor costs nothing past its last slot).
FLOOR_MAX_X = 32


def floor_cost_table(table: np.ndarray) -> np.ndarray:
    """(8 * FLOOR_MAX_X,) float32: ``CUM[min(f + x, 7)] - CUM[f]`` at ``f * FLOOR_MAX_X + x``, for
    the floor totals of a rule table (``RULE_FLOOR_CUM + n``)."""
    cum = [int(table[RULE_FLOOR_CUM + n]) for n in range(8)]
    return np.array(
        [[cum[min(f + x, 7)] - cum[f] for x in range(FLOOR_MAX_X)] for f in range(8)],
        dtype=np.float32,
    ).ravel()


_FLOOR_COST = floor_cost_table(PRINTED_RULES.table(2))  # the printed floor's


def end_bonuses(rule_set: RuleSet) -> tuple[int, int, int]:
    """(row, column, colour): the rule set's end bonuses, the ``bonuses`` of the values here."""
    return rule_set.row_bonus, rule_set.column_bonus, rule_set.colour_bonus


def slot_penalty(table: np.ndarray) -> float:
    """The mean penalty of a floor slot of a rule table (printed: 14 / 7 = 2): what the heuristic
    counts per tile of a gray-wall line that cannot be tiled (its tiles go to the floor)."""
    slots = int(table[RULE_FLOOR_SLOTS])
    return float(table[RULE_FLOOR_CUM + slots]) / slots


def _cell_points() -> np.ndarray:
    """PTS[row_mask, col_mask, r, col]: points for a tile put at (r, col) (RULES §6.2).

    ``row_mask`` is the 5-bit mask of row r and ``col_mask`` that of column col (bit = row), both
    without the new tile.
    """
    rm = np.arange(32)[:, None, None, None]
    cm = np.arange(32)[None, :, None, None]
    r = _R5[None, None, :, None]
    col = _R5[None, None, None, :]
    h = RUN[rm | (1 << col), col].astype(np.int16)
    v = RUN[cm | (1 << r), r].astype(np.int16)
    return np.where((h > 1) & (v > 1), h + v, h + v - 1).astype(np.float32)


PTS = _cell_points().ravel()
_CELL = (5 * _R5[:, None] + _R5[None, :])[:, :, None]  # (5 r, 5 col, 1): cell index 5r + col
_CELL32 = _CELL.astype(np.int32)
_COLOUR_IN_COLUMN = _CELL32  # (5 col, 5 c, 1): bit 5 col + c of `col_colours`
# Row-major cell (r, wall_column(r, c)) of colour c on the coloured wall, ordered (c, r).
COLOURED_CELL = np.array([5 * r + wall_column(r, c) for c in range(5) for r in range(5)])


def column_masks(mask: np.ndarray) -> np.ndarray:
    """(5, n) 5-bit column masks (bit r = row r) of (n,) 25-bit row-major masks.

    Works for any mask laid out as bit ``5 * r + k``: with `row_colours` it gives, per colour k,
    the rows that hold it.
    """
    shifted = (mask.astype(np.int64)[None] >> _R5[:, None]) & _COLUMN_BITS
    return ((shifted * _COLUMN_MUL) >> 20) & 31


def _column_masks32(mask: np.ndarray) -> np.ndarray:
    """`column_masks` of int32 masks, in int32: the uint32 product wraps only above bit 31, and
    bits 20..24 take no carries, so they are the same."""
    mask = mask.astype(np.int32, copy=False)  # the views below need 4-byte elements
    shifted = ((mask[None] >> _R5_32[:, None]) & np.int32(_COLUMN_BITS)).view(np.uint32)
    return ((shifted * np.uint32(_COLUMN_MUL)) >> 20).view(np.int32) & 31


def row_masks(mask: np.ndarray) -> np.ndarray:
    """(5, n) 5-bit row masks of (n,) 25-bit row-major masks."""
    return (mask[None] >> (5 * _R5[:, None])) & 31


def flat(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(-1)


def seat_to_move(st: BatchState, slots: np.ndarray) -> np.ndarray:
    return st.current[slots].astype(np.intp)


def per_seat(arr: np.ndarray, seat: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``arr[seat, slot]`` of a (P, B) array, (n,)."""
    return flat(arr).take(seat * arr.shape[-1] + slots)


def per_line(arr: np.ndarray, seat: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``arr[seat, r, slot]`` of a (P, 5, B) array, (5, n)."""
    b_all = arr.shape[-1]
    return flat(arr).take(((seat * 5)[None] + _R5[:, None]) * b_all + slots[None])


def unpack(packed: np.ndarray) -> np.ndarray:
    """(S, n) packed sources -> (S, 5, n) int16 tiles per colour."""
    return ((packed[:, None, :] >> FIELD6[None, :, None]) & 63).astype(np.int16)


def pending_wall(wall, row_colours, counts, colours):
    """Coloured wall: the wall and row colours once the already full pattern lines are tiled."""
    wall = wall.copy()
    row_colours = row_colours.copy()
    for r in range(5):
        full = counts[r] == r + 1
        colour = np.maximum(colours[r], 0).astype(np.int32)
        wall |= full * (np.int32(1) << (5 * r + wall_column(r, colour)))
        row_colours |= full * (np.int32(1) << (5 * r + colour))
    return wall.astype(np.int32), row_colours.astype(np.int32)


def cell_values(wall: np.ndarray, points: float, bonus: float, bonuses=PRINTED_BONUSES):
    """Value of putting a tile on each empty cell, for one seat per game.

    The value is ``points`` times its adjacency points (RULES §6.2, on `wall` as it stands) plus
    ``bonus`` times its share of the row and column end bonuses (`bonuses`: row, column, colour;
    printed 2, 7, 10): a group worth v holding m of its 5 cells counts ``v * m**2 / 25``, so this
    tile adds ``v * (2m + 1) / 25``.

    Returns
    -------
    base : (5 rows, 5 cols, n) float32 (meaningless on occupied cells)
    """
    rm = row_masks(wall)
    cm = column_masks(wall)
    idx = (rm[:, None, :] * 32 + cm[None, :, :]) * 25 + _CELL
    pts = PTS.take(idx)
    row_v, col_v, _ = bonuses
    rows = (2 * POP5[rm] + 1).astype(np.float32) * (row_v * bonus / 25)
    cols = (2 * POP5[cm] + 1).astype(np.float32) * (col_v * bonus / 25)
    return pts * np.float32(points) + rows[:, None, :] + cols[None, :, :]


def row_cell_values(
    wall: np.ndarray, row: int, points: float, bonus: float, bonuses=PRINTED_BONUSES
) -> np.ndarray:
    """``cell_values(wall, points, bonus, bonuses)[row]``, (5 cols, n), computing only that row."""
    rm = (wall >> (5 * row)) & 31
    cm = column_masks(wall)
    pts = PTS.take((rm[None] * 32 + cm) * 25 + (5 * row + _R5[:, None]))
    row_v, col_v, _ = bonuses
    rows = (2 * POP5[rm] + 1).astype(np.float32) * (row_v * bonus / 25)
    cols = (2 * POP5[cm] + 1).astype(np.float32) * (col_v * bonus / 25)
    return pts * np.float32(points) + rows[None, :] + cols


def colour_progress(row_colours: np.ndarray, bonus: float, bonuses=PRINTED_BONUSES) -> np.ndarray:
    """(5 colours, n) float32: the colour-bonus share (worth ``bonuses[2]``, printed 10) of one
    more tile of each colour."""
    have = POP5[column_masks(row_colours)]
    return (2 * have + 1).astype(np.float32) * np.float32(bonuses[2] * bonus / 25)


@lru_cache(maxsize=64)
def coloured_tables(
    points: float, bonus: float, bonuses=PRINTED_BONUSES
) -> tuple[np.ndarray, np.ndarray]:
    """`cell_values` and `colour_progress` as tables, by the same float32 operations on every
    input: ``cells[(5 r + col) * 1024 + row_mask * 32 + col_mask]``, ``colours[tiles of it]``."""
    rm = np.arange(32)[:, None, None]
    cm = np.arange(32)[None, :, None]
    pts = PTS.reshape(32, 32, 25)
    row_v, col_v, colour_v = bonuses
    rows = (2 * POP5[rm] + 1).astype(np.float32) * (row_v * bonus / 25)
    cols = (2 * POP5[cm] + 1).astype(np.float32) * (col_v * bonus / 25)
    cells = pts * np.float32(points) + rows + cols  # (row mask, col mask, cell)
    have = np.arange(6, dtype=np.int16)  # tiles of a colour on the wall
    colours = (2 * have + 1).astype(np.float32) * np.float32(colour_v * bonus / 25)
    return np.ascontiguousarray(cells.transpose(2, 0, 1)).ravel(), colours


# The table row of colour c's cell in row r, (5 c, 5 r, 1): cell 5 r + (c + r) % 5.
_CELL_AT = (COLOURED_CELL * 1024).reshape(5, 5, 1)


def coloured_line_values(
    wall, row_colours, counts, colours, points: float, bonus: float, bonuses=PRINTED_BONUSES
):
    """`line_values` of the coloured wall, (5 c, 5 r, n)."""
    pending = pending_wall(wall, row_colours, counts, colours)
    return pending_line_values(*pending, points, bonus, bonuses)


def pending_line_values(
    wall, row_colours, points: float, bonus: float, bonuses=PRINTED_BONUSES
) -> np.ndarray:
    """Coloured wall: `line_values` from the `pending_wall` masks, (5 c, 5 r, n): the cell value
    of ``(r, (c + r) % 5)`` plus the colour share, the same float32 numbers from two tables."""
    cells, colour_bonus = coloured_tables(float(points), float(bonus), tuple(bonuses))
    n = wall.shape[0]
    rm = row_masks(wall).astype(np.intp) * 32  # (5 r, n)
    cm = column_masks(wall)  # (5 col, n)
    twice = np.concatenate([cm, cm])  # column (c + r) % 5 is row c + r of this
    step = twice.strides[0]
    cm_at = np.lib.stride_tricks.as_strided(twice, (5, 5, n), (step, step, twice.strides[1]))
    at = cm_at + (rm + _CELL_AT)  # (5 c, 5 r, n)
    have = POP5[column_masks(row_colours)]  # (5 c, n) tiles of each colour
    return cells.take(at) + colour_bonus.take(have)[:, None, :]


def pending_line_values_at(
    wall, row_colours, colour, points: float, bonus: float, bonuses=PRINTED_BONUSES
) -> np.ndarray:
    """``pending_line_values(wall, row_colours, ...)[colour[r], r]``, (5 r, n): each row's value
    for one colour (``colour`` (5 r, n), 0..4), computing only those."""
    cells, colour_bonus = coloured_tables(float(points), float(bonus), tuple(bonuses))
    n = wall.shape[0]
    games = np.arange(n)
    colour = colour.astype(np.intp)
    col = (colour + _R5[:, None]) % 5  # (5 r, n): the colour's column in row r
    cm = column_masks(wall).reshape(-1).take(col * n + games)
    at = (col + 5 * _R5[:, None]) * 1024 + row_masks(wall) * 32 + cm
    have = POP5[column_masks(row_colours)].reshape(-1).take(colour * n + games)
    return cells.take(at) + colour_bonus.take(have)


@lru_cache(maxsize=64)
def gray_tables(
    points: float, bonus: float, bonuses=PRINTED_BONUSES
) -> tuple[np.ndarray, np.ndarray]:
    """`coloured_tables` with each occupied cell 1e4 lower (the cell ``(r, col)`` of the row mask
    ``rm`` is occupied when ``rm`` has bit ``col``): ``cell_values - 1e4 * occupied`` by the same
    float32 operations. The table row of cell (r, col) is ``(5 r + col) * 1024``."""
    cells, colours = coloured_tables(points, bonus, bonuses)
    rm = np.arange(32)[None, :, None]
    col = (np.arange(25) % 5)[:, None, None]  # the column of cell 5 r + col
    occupied = ((rm >> col) & 1).astype(np.float32)  # (25 cells, 32 row masks, 1)
    return (cells.reshape(25, 32, 32) - np.float32(1e4) * occupied).ravel(), colours


_GRAY_CELL_AT = ((5 * _R5[:, None] + _R5[None, :]) * 1024)[:, :, None].astype(np.int32)


def line_values(
    gray: bool,
    wall: np.ndarray,
    row_colours: np.ndarray,
    col_colours: np.ndarray,
    counts: np.ndarray,
    colours: np.ndarray,
    points: float,
    bonus: float,
    dead_end: float,
    bonuses=PRINTED_BONUSES,
) -> np.ndarray:
    """(5 colours, 5 rows, n) float32: value of tiling colour c from line r this round
    (`bonuses`: the rule set's end bonuses, `end_bonuses`).

    Coloured wall: the cell value (`cell_values`) of ``(r, (c + r) % 5)`` on the wall with the
    already full lines tiled, plus the colour share. Gray wall: the best legal column of the row
    (RULES §9.3) on the wall as it stands, or ``-dead_end * (r + 1)`` when none is legal (§9.4).
    """
    bonuses = tuple(bonuses)
    if not gray:
        return coloured_line_values(wall, row_colours, counts, colours, points, bonus, bonuses)
    # The best over the columns with an illegal cell (occupied, or its column holds the colour)
    # 1e4 or 2e4 below its value: it never wins (values lie in [0, 400), the dead end in
    # [-500, 0], at the rules' and weights' limits),
    # so this is the best legal column or the dead end, however the illegal values round. The
    # penalty splits into a row part, in the table, and a colour part: one broadcast subtraction
    # per column.
    cells, colour_bonus = gray_tables(float(points), float(bonus), bonuses)
    rows = ((wall[None] >> (5 * _R5_32[:, None])) & 31) * 32
    at = np.add((rows[:, None] + _GRAY_CELL_AT), _column_masks32(wall)[None], dtype=np.intp)
    by_row = cells.take(at)  # (5 r, 5 col, n): cell (r, col)'s value, 1e4 less when occupied
    have = np.bitwise_count(_column_masks32(row_colours))  # (5 c, n): tiles of each colour
    colour = colour_bonus.take(have)[:, None, :]  # colour_progress
    big = np.float32(1e4)
    has = ((col_colours[None] >> _COLOUR_IN_COLUMN) & 1).astype(np.float32)  # (5 col, 5 c, n)
    by_colour = (big * has)[:, :, None]  # (5 col, 5 c, 1, n)
    best = by_row[None, :, 0] - by_colour[0]
    cand = np.empty_like(best)
    for col in range(1, 5):
        np.subtract(by_row[None, :, col], by_colour[col], out=cand)
        np.maximum(best, cand, out=best)
    dead = -np.float32(dead_end) * CAP.astype(np.float32)[None]  # (1, 5, 1)
    np.maximum(best, dead, out=best)
    best += colour
    return best


def best_columns(
    wall: np.ndarray, row: int, legal: np.ndarray, bonus: float, bonuses=PRINTED_BONUSES
) -> np.ndarray:
    """Gray wall: the legal column (5-bit mask `legal`, never empty) of `row` with the highest
    cell value (adjacency points plus `bonus` times the row/column shares of the end `bonuses`:
    `row_cell_values` with ``points = 1``), ties leftmost.

    A cell's value depends only on its row's and column's masks, so `column_keys` ranks every
    (row mask, column mask, row, column) once per `bonus`; the best column is the highest rank,
    integer work on (5, n) instead of the float values and their first maximum.
    """
    rm = (wall >> (5 * row)) & 31
    at = (rm[None] * 32 + _column_masks32(wall)) * 25 + (5 * row + _R5_32[:, None])  # (5, n)
    key = column_keys(float(bonus), tuple(bonuses)).take(at)
    key *= (legal[None] >> _R5_32[:, None]) & 1  # an illegal column's key is 0
    return (4 - (key.max(axis=0) & 7)).astype(np.intp)


@functools.lru_cache(maxsize=32)
def column_keys(bonus: float, bonuses=PRINTED_BONUSES) -> np.ndarray:
    """KEY[(rm * 32 + cm) * 25 + 5 r + col] (int16): ``rank * 8 + 4 - col``, ``rank`` (from 1) the
    rank of `row_cell_values`'s float32 value of (r, col) among all such values, for the row
    mask ``rm`` and column mask ``cm`` (bit = row) without the new tile. Equal values share a
    rank, so the highest key is the first maximum of the values."""
    rm = np.arange(32)[:, None, None, None]
    cm = np.arange(32)[None, :, None, None]
    pts = PTS.reshape(32, 32, 5, 5)
    # The operations of `row_cell_values`, element by element, so the same float32 roundings.
    row_v, col_v, _ = bonuses
    rows = (2 * POP5[rm] + 1).astype(np.float32) * (row_v * bonus / 25)
    cols = (2 * POP5[cm] + 1).astype(np.float32) * (col_v * bonus / 25)
    value = pts * np.float32(1.0) + rows + cols
    # A value is one of the points (at most 10) by the two popcounts (6 each): rank * 8 < 2**15.
    rank = np.searchsorted(np.unique(value), value) + 1
    key = rank * 8 + (4 - _R5)[None, None, None, :]
    return key.astype(np.int16).ravel()


def first_max(values: np.ndarray) -> np.ndarray:
    """Index along axis 0 of the first maximum of a (Q, n) array (argmax along axis 0 is slow)."""
    q = values.shape[0]
    hit = values == values.max(axis=0)
    weight = np.arange(q - 1, -1, -1, dtype=np.uint8 if q <= 256 else np.int16)[:, None]
    return (q - 1) - (hit * weight).max(axis=0).astype(np.intp)


def running_sum(values: np.ndarray) -> np.ndarray:
    """Cumulative sum along axis 0 of a small-leading-axis array (row adds beat ``cumsum`` here)."""
    out = values.copy()
    for i in range(1, out.shape[0]):
        out[i] += out[i - 1]
    return out


def floor_cost(floor: np.ndarray, extra, table: np.ndarray | None = None) -> np.ndarray:
    """``CUM[min(floor + extra, 7)] - CUM[floor]`` (float32) of the rule table `table` (default
    the printed floor); `extra` broadcasts against `floor`."""
    x = np.minimum(extra, FLOOR_MAX_X - 1)
    costs = _FLOOR_COST if table is None else floor_cost_table(table)
    return costs.take(floor.astype(np.intp) * FLOOR_MAX_X + x)


def substate(st: BatchState, slots: np.ndarray) -> BatchState:
    """An independent copy of the games in `slots` (repeats allowed), in that order.

    Arrays must be C-contiguous: the engine writes through ``reshape(-1)`` views, which would
    silently be copies of the F-ordered result of a ``[..., slots]`` gather; ``np.take`` along the
    last axis gives a C-ordered copy in one pass (`BatchState.take`).
    """
    return st.take(slots)
