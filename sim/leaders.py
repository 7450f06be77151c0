"""The score leaders after each wall tiling: what lead changes, decisiveness and comebacks read.

After wall tiling r of a game (r = 1..R: the floor penalties applied and the scores clamped at 0,
the end bonuses not yet added), the *leaders* L_r are the seats whose score is the largest. Every
engine keeps three running records of them (`sim.records.GameRecords`):

- ``lead_changes``: the rounds r in 2..R with L_r != L_{r-1} (a tie joining or leaving the lead
  is a change);
- ``trailing_rounds``: per seat, bit r - 1 set iff the seat was not in L_r (r <= 63; later rounds
  are not recorded here);
- ``last_trailing_round``: per seat, the last r after which it was not in L_r (0 if never).

The seats that trailed after round r - 1 are those whose ``last_trailing_round`` is r - 1 when
round r is tiled, so no other state is kept. This is the numpy engine's update; `sim.compiled`'s
``record_leaders`` is the same for one game, and `sim.reference` keeps the whole score history.
"""

from __future__ import annotations

import numpy as np

from .state import BatchState

TRAILING_BITS = 63  # rounds recorded in trailing_rounds (bit 63 would be the int64 sign)


def record_leaders(st: BatchState, slots: np.ndarray) -> None:
    """Update the leader records of `slots` for the wall tiling just done (round ``st.round``)."""
    scores = np.take(st.scores, slots, axis=1)
    trailing = scores < scores.max(axis=0)  # (P, n)
    r = st.round[slots].astype(np.int64)
    last = np.take(st.last_trailing_round, slots, axis=1)
    changed = (r >= 2) & (trailing != (last == r - 1)).any(axis=0)
    st.lead_changes[slots] += changed.astype(np.int16)
    bit = np.where(r <= TRAILING_BITS, np.left_shift(1, np.maximum(r - 1, 0)), 0)
    st.trailing_rounds[:, slots] |= trailing * bit
    st.last_trailing_round[:, slots] = np.where(trailing, r.astype(np.int16), last)
