"""The deal: filling the factories from the bag at the start of a round (RULES.md §7.2–§7.3)."""

from __future__ import annotations

import numpy as np

from . import rng
from . import tables as T
from .state import BatchState

_FIELD_ONES = np.int64(0x01010101)
_FIELD_BIAS = np.int64(0x7F7F7F7F)
_SHIFTS = np.array([0, 8, 16, 24], dtype=np.int64)


# Colour c adds 1 to the cumulative-count fields of colours c..3.
_CUM_WEIGHTS = [np.int64(sum(1 << (8 * k) for k in range(c, 4))) for c in range(4)]
# F_c's weight in a factory's packed 6-bit fields (see the decode in `deal`).
_DECODE6 = [np.int64((1 << (6 * c)) - (1 << (6 * (c + 1)))) for c in range(4)]


def _pack_cumulative(counts: np.ndarray) -> np.ndarray:
    """(5, n) colour counts -> int64 with the cumulative counts of colours 0..3 in 8-bit fields."""
    packed = counts[0].astype(np.int64) * _CUM_WEIGHTS[0]
    for c in range(1, 4):
        packed += counts[c].astype(np.int64) * _CUM_WEIGHTS[c]
    return packed


def deal(st: BatchState, slots: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """Fill the factories of `slots` for round `rounds` (RULES §7.2); returns tiles dealt (n,).

    Factory i, slot j draws with counter ``round * 64 + 4 * i + j``; the lid is poured into the bag
    only when the bag is empty at a draw, and filling stops for good when both are empty.

    The draw itself is branch-free SWAR (notes/numpy_speed.md, technique 5): the bag's cumulative
    counts of colours 0..3 sit in four 8-bit fields of an int64; for a draw ``x`` the "thermometer"
    ``therm`` has a 1 in every field c with ``cum_c > x``, i.e. c >= the drawn colour, so the colour
    is ``4 - popcount(therm)`` and ``packed -= therm`` removes the tile. Summing the thermometers of
    a factory's 4 draws gives its cumulative colour counts.
    """
    n = slots.shape[0]
    f = st.factories
    draws = 4 * f
    bag = np.take(st.bag, slots, axis=1)  # C order (an [:, slots] gather is F-ordered)
    lid = np.take(st.lid, slots, axis=1)
    in_bag = bag.sum(axis=0, dtype=np.int64)
    in_lid = lid.sum(axis=0, dtype=np.int64)
    # Tiles in the bag before draw t: the bag's, then after the pour at t == in_bag the lid's too.
    # Every array below is (draws, n): draw t of every game in one row.
    t = np.arange(draws, dtype=np.int64)[:, None]
    before = in_bag - t
    before = np.where(before > 0, before, before + in_lid)
    live = (before > 0).astype(np.int64)
    counters = rounds.astype(np.uint64) * np.uint64(64) + t.astype(np.uint64)
    x = rng.pick(rng.uniform32(st.deal_key[slots], counters), np.maximum(before, 0))
    x_fields = x * _FIELD_ONES
    packed = _pack_cumulative(bag)
    packed_lid = _pack_cumulative(lid)
    pour_at = np.where(in_lid > 0, in_bag, -1)  # draw index where the lid is poured, if ever
    poured = (pour_at >= 0) & (pour_at < draws)
    pours = np.zeros(draws, bool)  # the draws where some game pours
    pours[pour_at[poured]] = True
    sums = np.zeros((f, n), np.int64)
    for j in range(draws):
        if pours[j]:
            packed = np.where(pour_at == j, packed + packed_lid, packed)
        therm = (((packed + _FIELD_BIAS - x_fields[j]) >> 7) & _FIELD_ONES) * live[j]
        packed -= therm
        sums[j // 4] += therm
    # Decode: field c of a sum of thermometers counts the draws of colours <= c (F_c); live draws
    # per factory give white. Live draws are a prefix of the draws, so factory i got
    # clip(dealt - 4i, 0, 4) tiles, and its 6-bit fields are one weighted sum of the F_c:
    # sum_c (F_c - F_c-1) 64^c + (dealt_i - F_3) 64^4.
    dealt = np.minimum(in_bag + in_lid, draws)
    sources = np.clip(dealt - 4 * np.arange(f)[:, None], 0, 4) << 24  # (f, n)
    for c in range(4):
        sources += ((sums >> (8 * c)) & 255) * _DECODE6[c]
    # Bag and lid after the deal (poured games start from bag + lid), from all draws at once.
    total = sums.sum(axis=0)
    cum_drawn = (total >> _SHIFTS[:, None]) & 255  # (4, n)
    drawn = np.empty((5, n), np.int16)
    drawn[0] = cum_drawn[0]
    drawn[1:4] = np.diff(cum_drawn, axis=0)
    drawn[4] = dealt - cum_drawn[3]
    st.bag[:, slots] = np.where(poured, bag + lid, bag).astype(np.int16) - drawn
    st.lid[:, slots] = np.where(poured, 0, lid)
    st.sources[0, slots] = 0
    st.sources[1:, slots] = sources
    # Presence: bit 11c + 1 + i when factory i holds colour c.
    has = T.SPREAD11[T.nonzero_colours(sources)] << np.arange(1, f + 1)[:, None]
    st.presence[slots] = np.bitwise_or.reduce(has, axis=0)
    return dealt.astype(np.int16)
