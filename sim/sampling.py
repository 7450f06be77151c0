"""Uniform sampling of legal actions without building a dense ``(games, actions)`` mask.

For colour c, the number of legal actions is ``m_c * n_c``: ``m_c`` sources hold the colour and
``n_c`` destinations accept it (the legal pattern lines plus the floor). A uniform draw ``j`` over
all legal actions, enumerated colour by colour, then source by source (ascending index), then
destination by destination (lines ascending, the floor last), is decoded with a few table look-ups
(notes/numpy_speed.md, technique 2). This order is part of the definition of the `random` bot.
"""

from __future__ import annotations

import numpy as np

from . import rng
from .state import BatchState
from .tables import NTH_DEST_FLAT, NTH_SOURCE_FLAT, POP5, POP11


def legal_counts(st: BatchState, slots: np.ndarray):
    """Per-colour legal counts of the seat to move: ``(presence, lines5, m, n)``, each (5, n).

    presence : bit s set when source s holds the colour; lines5 : 5-bit masks of the pattern lines
    accepting it; m : sources holding it; n : its destinations (legal lines plus the floor).
    """
    b_all = st.batch
    packed = st.presence[slots]
    presence = np.stack([(packed >> (11 * c)) & 2047 for c in range(5)])
    acc = st.accept.reshape(-1).take(st.current[slots].astype(np.intp) * b_all + slots)
    lines5 = np.stack([(acc >> (5 * c)) & 31 for c in range(5)])
    return presence, lines5, POP11[presence], POP5[lines5] + 1


def uniform_legal(st: BatchState, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One legal action per game of `slots`, the `u`-th (uniform32) of its legal actions.

    Returns
    -------
    actions : (n,) int64 action ids
    """
    presence, lines5, m, n = legal_counts(st, slots)
    weight = (m * n).astype(np.int32)
    cum = weight.copy()
    for c in range(1, 5):
        cum[c] += cum[c - 1]
    j = rng.pick(u, cum[4])
    colour = (cum[:4] <= j).sum(axis=0)
    cols = np.arange(slots.shape[0])
    flat = colour * slots.shape[0] + cols
    before = np.where(colour > 0, cum.reshape(-1).take(flat - slots.shape[0]), 0)
    rank, di = np.divmod(j - before, n.reshape(-1).take(flat))
    source = NTH_SOURCE_FLAT[presence.reshape(-1).take(flat) * 10 + rank]
    dest = NTH_DEST_FLAT[lines5.reshape(-1).take(flat) * 6 + di]
    return (source * 5 + colour) * 6 + dest


def random_columns(bot_keys: np.ndarray, rounds, seat: int, row: int, legal: np.ndarray):
    """A uniformly random legal gray-wall column from the bot stream (counter in `sim.rng`)."""
    counter = rng.COLUMN_COUNTER + (np.asarray(rounds, np.int64) * 4 + seat) * 5 + row
    k = rng.pick(rng.uniform32(bot_keys, counter.astype(np.uint64)), POP5[legal])
    return NTH_DEST_FLAT[legal * 6 + k]
