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
from .engine import _NTH_DEST_FLAT, _POP5
from .state import BatchState


def legal_counts(st: BatchState, slots: np.ndarray):
    """Per-colour legal counts of the seat to move: ``(present, lines5, m, n)``.

    present : (S, 5, n) bool, source holds the colour; lines5 : (5, n) 5-bit masks of the lines
    accepting each colour; m : (5, n) sources holding it; n : (5, n) its destinations (floor included).
    """
    b_all = st.batch
    if slots.shape[0] == b_all:
        present = st.sources > 0
    else:
        present = st.sources[:, :, slots] > 0
    acc = st.accept.reshape(-1).take(st.current[slots].astype(np.intp) * b_all + slots)
    lines5 = np.stack([(acc >> (5 * c)) & 31 for c in range(5)])
    m = present.sum(axis=0, dtype=np.int16)
    n = _POP5[lines5] + 1
    return present, lines5, m, n


def uniform_legal(st: BatchState, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One legal action per game of `slots`, the `u`-th (uniform32) of its legal actions.

    Returns
    -------
    actions : (n,) int64 action ids
    """
    present, lines5, m, n = legal_counts(st, slots)
    weight = (m * n).astype(np.int64)
    cum = np.cumsum(weight, axis=0)
    j = rng.pick(u, cum[4])
    colour = (cum[:4] <= j).sum(axis=0)
    cols = np.arange(slots.shape[0])
    before = np.where(colour > 0, cum[np.maximum(colour - 1, 0), cols], 0)
    off = j - before
    n_c = n[colour, cols].astype(np.int64)
    rank, di = np.divmod(off, n_c)
    in_sources = np.cumsum(present[:, colour, cols], axis=0)
    source = (in_sources <= rank).sum(axis=0)
    dest = _NTH_DEST_FLAT[lines5[colour, cols] * 6 + di]
    return (source * 5 + colour) * 6 + dest


def random_columns(bot_keys: np.ndarray, rounds, seat: int, row: int, legal: np.ndarray):
    """A uniformly random legal gray-wall column from the bot stream (counter in `sim.rng`)."""
    counter = rng.COLUMN_COUNTER + (np.asarray(rounds, np.int64) * 4 + seat) * 5 + row
    k = rng.pick(rng.uniform32(bot_keys, counter.astype(np.uint64)), _POP5[legal])
    return _NTH_DEST_FLAT[legal * 6 + k]
