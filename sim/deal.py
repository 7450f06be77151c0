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
    bag = st.bag[:, slots]
    lid = st.lid[:, slots]
    in_bag = bag.sum(axis=0, dtype=np.int64)
    in_lid = lid.sum(axis=0, dtype=np.int64)
    # Tiles in the bag before draw t: the bag's, then after the pour at t == in_bag the lid's too.
    t = np.arange(draws, dtype=np.int64)
    before = in_bag[:, None] - t
    before = np.where(before > 0, before, before + in_lid[:, None])
    live = before > 0
    counters = rounds.astype(np.uint64)[:, None] * np.uint64(64) + t.astype(np.uint64)
    x = rng.pick(rng.uniform32(st.deal_key[slots][:, None], counters), np.maximum(before, 0))
    x_fields = np.ascontiguousarray((x * _FIELD_ONES).T)  # (draws, n)
    live_t = np.ascontiguousarray(live.T).astype(np.int64)
    packed = _pack_cumulative(bag)
    packed_lid = _pack_cumulative(lid)
    pour_at = np.where(in_lid > 0, in_bag, -1)  # draw index where the lid is poured, if ever
    sums = np.zeros((f, n), np.int64)
    for j in range(draws):
        pour = pour_at == j
        if pour.any():
            packed = np.where(pour, packed + packed_lid, packed)
        therm = (((packed + _FIELD_BIAS - x_fields[j]) >> 7) & _FIELD_ONES) * live_t[j]
        packed -= therm
        sums[j // 4] += therm
    # Decode: field c of `sums` counts draws of colour <= c; live draws per factory give white.
    # Live draws are a prefix of the draws, so factory i got clip(dealt - 4i, 0, 4) tiles.
    dealt = np.minimum(in_bag + in_lid, draws)
    dealt_per = np.clip(dealt - 4 * np.arange(f)[:, None], 0, 4)  # (f, n)
    fields = (sums[None] >> _SHIFTS[:, None, None]) & 255  # (4, f, n)
    counts = np.empty((f, 5, n), np.int8)
    counts[:, 0] = fields[0]
    counts[:, 1:4] = (fields[1:] - fields[:-1]).transpose(1, 0, 2)
    counts[:, 4] = dealt_per - fields[3]
    # Bag and lid after the deal: poured games start from bag + lid.
    poured = (pour_at >= 0) & (pour_at < draws)
    remaining = np.where(poured, bag + lid, bag).astype(np.int16) - counts.sum(axis=0)
    st.bag[:, slots] = remaining
    st.lid[:, slots] = np.where(poured, 0, lid)
    st.sources[0, slots] = 0
    st.sources[1:, slots] = (counts.astype(np.int32) << T.FIELD6[None, :, None]).sum(axis=1)
    # Presence: bit 11c + 1 + i when factory i holds colour c.
    has = T.SPREAD11[T.nonzero_colours(st.sources[1:, slots])] << np.arange(1, f + 1)[:, None]
    st.presence[slots] = np.bitwise_or.reduce(has, axis=0)
    return dealt.astype(np.int16)
