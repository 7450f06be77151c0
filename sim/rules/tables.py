"""Constant tables of the batch engine, built once at import (bit layouts in `sim.rules.state`)."""

from __future__ import annotations

import numpy as np

from .actions import ACTION_COLOUR, ACTION_DESTINATION, ACTION_SOURCE
from .constants import FLOOR_CUM, RUN, wall_column

RUN_FLAT = RUN.ravel().astype(np.int16)
# Bits 5*r + k for r in 0..4: with k a column, the cells of column k; with k a colour, that
# colour's bits in `row_colours`.
STRIDE5 = np.array([sum(1 << (5 * r + k) for r in range(5)) for k in range(5)], dtype=np.int32)
# Bits of one wall row.
ROW_BITS = np.array([31 << (5 * r) for r in range(5)], dtype=np.int32)
# accept-mask bits of pattern line r for every colour (accept bit is 5*colour + r).
LINE_BITS = np.array([sum(1 << (5 * c + r) for c in range(5)) for r in range(5)], dtype=np.int32)
# POPCOUNT[m]: set bits of an 11-bit mask (a colour's sources, 5-bit line and column masks).
POPCOUNT = np.array([bin(m).count("1") for m in range(2048)], dtype=np.int64)
POP5 = POPCOUNT[:32].astype(np.int16)
# NTH_DEST[mask, j]: the j-th set bit of a 5-bit line mask, or 5 (the floor) for j == popcount.
NTH_DEST = np.full((32, 6), 5, dtype=np.int16)
for _m in range(32):
    for _j, _bit in enumerate(b for b in range(5) if _m >> b & 1):
        NTH_DEST[_m, _j] = _bit
NTH_DEST_FLAT = NTH_DEST.ravel()
# SPREAD[mask5]: the 5 colour bits of a mask moved to bits 5*colour (line 0's accept bits).
SPREAD = np.array([sum(1 << (5 * c) for c in range(5) if m >> c & 1) for m in range(32)], np.int32)
# The j-th set bit of an 11-bit group of the presence mask (S <= 10 sources).
NTH_SOURCE = np.zeros((2048, 10), dtype=np.int16)
for _m in range(2048):
    for _j, _bit in enumerate(b for b in range(10) if _m >> b & 1):
        NTH_SOURCE[_m, _j] = _bit
NTH_SOURCE_FLAT = NTH_SOURCE.ravel()
# Packed sources: colour c is the 6-bit field at 6c. FIELD_LOW has bit 6c set for every colour.
FIELD6 = np.array([6 * c for c in range(5)], dtype=np.int32)
FIELD_LOW = np.int32(sum(1 << (6 * c) for c in range(5)))
FIELD_NONZERO_ADD = np.int32(31 * FIELD_LOW)  # field + 31 reaches bit 6c+5 iff field > 0
GATHER_NONZERO = np.int64(sum(1 << (5 * j) for j in range(5)))  # bits 6c -> bit 20 + c
# SPREAD11[mask5]: bit 11c for each colour bit c of a 5-bit mask (source 0, the centre).
SPREAD11 = np.array(
    [sum(1 << (11 * c) for c in range(5) if m >> c & 1) for m in range(32)], np.int64
)
ALL_COLOURS11 = np.int64(SPREAD11[31])


def nonzero_colours(packed: np.ndarray) -> np.ndarray:
    """5-bit mask of the colours whose 6-bit field in `packed` is non-zero."""
    bits = ((packed + FIELD_NONZERO_ADD) >> 5) & FIELD_LOW  # bit 6c when field c > 0
    return (bits.astype(np.int64) * GATHER_NONZERO >> 20) & 31


def unpack_sources(packed: np.ndarray) -> np.ndarray:
    """(..., ) packed sources -> (5, ...) tiles per colour."""
    return np.stack([(packed >> (6 * c)) & 63 for c in range(5)])


FLOOR_CUM32 = FLOOR_CUM.astype(np.int32)

# Per action id (`sim.rules.actions`), what a pick does to its pattern line: the line (4 for the
# floor, whose row is then left as it is), its capacity (0 for the floor), its accept bit 5*colour +
# line (0 for the floor), and the accept bits it keeps once the line holds the colour (all, floor).
_TO_LINE = ACTION_DESTINATION < 5
ACTION_LINE = np.minimum(ACTION_DESTINATION, 4)
ACTION_CAP = np.where(_TO_LINE, ACTION_LINE + 1, 0).astype(np.int16)
ACTION_BIT = np.where(_TO_LINE, 1 << (5 * ACTION_COLOUR + ACTION_LINE), 0).astype(np.int32)
ACTION_KEEP = np.where(_TO_LINE, ~LINE_BITS[ACTION_LINE], -1).astype(np.int32)
# Presence bits a pick clears: every colour of its factory, or the taken colour of the centre.
ACTION_GONE = np.where(
    ACTION_SOURCE > 0, ALL_COLOURS11 << ACTION_SOURCE, np.int64(1) << (11 * ACTION_COLOUR)
).astype(np.int64)
ACTION_SHIFT6 = (6 * ACTION_COLOUR).astype(np.int32)  # the taken colour's field in a source
# NEXT_SEAT[players][seat]: the seat after `seat`, clockwise (docs/rules.md §4.2).
NEXT_SEAT = {p: ((np.arange(p) + 1) % p).astype(np.int8) for p in (2, 3, 4)}
# Legality: a line pick needs its accept bit; a floor pick checks FLOOR_OK, set in every mask.
FLOOR_OK = np.int32(1 << 30)
ACTION_NEEDS = np.where(_TO_LINE, ACTION_BIT, FLOOR_OK).astype(np.int32)
# COLOURED_COLUMN[row, colour + 1]: column of the colour on the coloured wall (-1 -> 0, unused).
COLOURED_COLUMN = np.array(
    [[0] + [wall_column(r, c) for c in range(5)] for r in range(5)], np.int32
)
# WALL_COLUMN[5 * colour + row]: the column of the colour on that row of the coloured wall.
WALL_COLUMN = np.array([wall_column(r, c) for c in range(5) for r in range(5)], np.int64)
COLUMN0 = np.int32(sum(1 << (5 * r) for r in range(5)))  # the cells of column 0
GATHER_COLUMN = np.int64(sum(1 << (4 * j) for j in range(5)))
ALL_ACCEPT = np.int32((1 << 25) - 1)  # every empty line accepts every colour
