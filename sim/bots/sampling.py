"""Uniform sampling of legal actions without building a dense ``(games, actions)`` mask.

For colour c, the number of legal actions is ``m_c * n_c``: ``m_c`` sources hold the colour and
``n_c`` destinations accept it (the legal pattern lines plus the floor). A uniform draw ``j`` over
all legal actions, enumerated colour by colour, then source by source (ascending index), then
destination by destination (lines ascending, the floor last), is decoded with a few table look-ups
(docs/engine.md). This order is part of the definition of the `random` bot.
"""

from __future__ import annotations

import numpy as np

from ..rules import rng
from ..rules.state import BatchState
from ..rules.tables import NTH_DEST_FLAT, NTH_SOURCE_FLAT

_SHIFT11 = (np.arange(5, dtype=np.int64) * 11)[:, None]  # colour c's presence field
_SHIFT5 = (np.arange(5, dtype=np.int32) * 5)[:, None]  # colour c's accept field
# Offset j inside a colour (j < m * n <= 10 sources x 6 destinations) -> j // n and j % n, at
# index 8j + n: two small look-ups instead of an int64 divmod.
_J, _N = np.divmod(np.arange(64 * 8), 8)
_QUOT = np.where(_N > 0, _J // np.maximum(_N, 1), 0).astype(np.int16)
_REM = np.where(_N > 0, _J % np.maximum(_N, 1), 0).astype(np.int16)


def legal_counts(st: BatchState, slots: np.ndarray):
    """Per-colour legal counts of the seat to move: ``(presence, lines5, m, n)``, each (5, n).

    presence : bit s set when source s holds the colour; lines5 : 5-bit masks of the pattern lines
    accepting it; m : sources holding it; n : its destinations (legal lines plus the floor); m and
    n are uint8.
    """
    b_all = st.batch
    presence = ((st.presence[slots] >> _SHIFT11) & 2047).astype(np.int16)  # popcount: int16
    acc = st.accept.reshape(-1).take(st.current[slots].astype(np.intp) * b_all + slots)
    lines5 = (acc >> _SHIFT5) & 31
    return presence, lines5, np.bitwise_count(presence), np.bitwise_count(lines5) + 1


def uniform_legal(st: BatchState, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One legal action per game of `slots`, the `u`-th (uniform32) of its legal actions.

    Returns
    -------
    actions : (n,) int64 action ids
    """
    presence, lines5, m, n = legal_counts(st, slots)
    weight = m * n  # uint8: at most 60
    k = slots.shape[0]
    cum = np.zeros((6, k), np.int32)  # cum[c + 1]: legal actions of colours 0..c
    for c in range(5):
        np.add(cum[c], weight[c], out=cum[c + 1])
    j = rng.pick(u, cum[5])
    colour = (cum[1:5] <= j).view(np.int8).sum(axis=0, dtype=np.int8).astype(np.intp)
    flat = colour * k + np.arange(k)
    at = (j - cum.reshape(-1).take(flat)) * 8 + n.reshape(-1).take(flat)
    source = NTH_SOURCE_FLAT[presence.reshape(-1).take(flat) * 10 + _QUOT.take(at)]
    dest = NTH_DEST_FLAT[lines5.reshape(-1).take(flat) * 6 + _REM.take(at)]
    return (source * 5 + colour) * 6 + dest


def column_counter(rounds, seat, row) -> np.ndarray:
    """The bot-stream counter (`sim.rules.rng`) of a gray-wall column choice: ``COLUMN_COUNTER +
    (round * 4 + seat) * 5 + row`` (uint64; the arguments broadcast)."""
    # All non-negative: int64 arithmetic viewed as uint64.
    counter = np.asarray(rounds).astype(np.int64) * 20 + (seat * 5 + (rng.COLUMN_COUNTER + row))
    return np.ascontiguousarray(counter).view(np.uint64)


def random_columns(bot_keys: np.ndarray, rounds, seat: int, row: int, legal: np.ndarray):
    """A uniformly random legal gray-wall column from the bot stream (`column_counter`)."""
    counter = column_counter(rounds, seat, row)
    k = rng.pick(rng.uniform32(bot_keys, counter), np.bitwise_count(legal))
    return NTH_DEST_FLAT.take(legal * 6 + k)
