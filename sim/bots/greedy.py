"""The `greedy` bot: the best immediate value of a pick.

Definition. For a legal action ``a = (source, colour, destination)`` taking ``k`` tiles:

- ``placed(a)``: tiles that go onto the pattern line, ``min(k, room)`` with ``room = r + 1 -
  count`` for line ``r``, and 0 for the floor;
- ``floored(a)``: objects that fall on the floor line, ``k - placed(a)``, plus 1 when the source
  is the centre and the first-player marker still lies there.

Greedy plays an action with the most ``placed``, then the fewest ``floored``. Among the ``T``
actions left tied, it plays the ``j``-th with ``j = (u * T) >> 32``, ``u`` the bot stream's
uniform32 at counter ``turn * 8`` (`sim.rng`), the tied actions enumerated colour by colour,
then destination by destination (lines 0..4, then the floor), then source by source (the centre,
then factories in index order). On the gray wall a full line goes to the legal column where the
tile scores the most adjacency points on the wall as it stood before this tiling, ties leftmost.

Implementation: everything is computed per (colour, destination) from per-colour data, without a
dense action mask. For a destination with room ``R``, the best factory for colour c is the one
whose count ``k`` of c is the smallest ``k >= R`` (all placed, least excess), else the largest
``k``; factories hold 1..4 tiles of a colour, so a table over the 4-bit mask of the counts present
gives it, and the number of factories holding exactly that count gives the tie multiplicity.
"""

from __future__ import annotations

import numpy as np

from .. import rng
from .base import Bot, turn_uniforms
from .features import (
    CAP,
    FIELD6,
    best_columns,
    factory_classes,
    flat,
    per_line,
    per_seat,
    running_sum,
    seat_to_move,
)

_NEG = np.int16(-20000)
# Accept bit 5c + r of colour c, line r, arranged (5 colours, 5 lines, 1).
_ACCEPT_SHIFT = (5 * np.arange(5)[:, None] + np.arange(5)[None, :])[:, :, None].astype(np.int32)


def _best_k() -> np.ndarray:
    """BEST_K[mask, R + 1]: the factory count (1..4) greedy takes for a destination of room R.

    ``mask`` bit k - 1 is set when some factory holds exactly k tiles of the colour; R = -1 is an
    illegal destination (0: none), R = 0 the floor (the fewest tiles), R >= 1 a line (the smallest
    k >= R, else the largest k).
    """
    table = np.zeros((16, 7), np.int16)
    for mask in range(16):
        ks = [k for k in range(1, 5) if mask >> (k - 1) & 1]
        if not ks:
            continue
        table[mask, 1] = min(ks)
        for room in range(1, 6):
            above = [k for k in ks if k >= room]
            table[mask, room + 1] = min(above) if above else max(ks)
    return table.ravel()


_BEST_K = _best_k()


def greedy_actions(st, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Greedy's action (module docstring) in each game of `slots`; `u` the (n,) uniform32 draws."""
    n = slots.shape[0]
    seat = seat_to_move(st, slots)
    acc = per_seat(st.accept, seat, slots)
    room = (CAP - per_line(st.line_count, seat, slots)).astype(np.int16)  # (5, n)
    src = st.sources[:, slots]
    centre = ((src[0][None] >> FIELD6[:, None]) & 63).astype(np.int16)  # (5, n)
    classes = factory_classes(src[1:])  # (5 k, 5 c, n)
    avail = np.zeros((5, n), np.int16)
    for k in range(1, 5):
        avail |= (classes[k] > 0).astype(np.int16) << (k - 1)
    marker = (st.marker_in_centre[slots]).astype(np.int16)

    # R[c, d]: room of destination d for colour c, -1 when illegal, 0 for the floor.
    big_r = np.zeros((5, 6, n), np.int16)
    legal = ((acc[None, None] >> _ACCEPT_SHIFT) & 1).astype(np.int16)  # (5 c, 5 r, n)
    big_r[:, :5] = legal * (room[None] + 1) - 1
    kstar = _BEST_K.take(avail[:, None, :] * 7 + big_r + 1)  # (5, 6, n)
    placed_f = np.minimum(kstar, big_r)
    key_f = placed_f * 65 - kstar + _NEG * (kstar == 0)
    placed_c = np.minimum(centre[:, None, :], big_r)
    invalid_c = (centre == 0)[:, None, :] | (big_r < 0)
    key_c = placed_c * 65 - centre[:, None, :] - marker + _NEG * invalid_c
    key = np.maximum(key_f, key_c).reshape(30, n)
    best = key.max(axis=0)
    key_f = key_f.reshape(30, n)
    key_c = key_c.reshape(30, n)
    cols = np.arange(n)
    # Factories tied in each (colour, destination): those holding exactly kstar of the colour.
    colour_of = np.repeat(np.arange(5), 6)[:, None]
    mult_f = flat(classes).take((kstar.reshape(30, n) * 5 + colour_of) * n + cols)
    tie_c = (key_c == best).astype(np.int16)
    mult = (key_f == best) * mult_f + tie_c
    total = mult.sum(axis=0)
    j = rng.pick(u, total)
    cum = running_sum(mult)
    q = (cum <= j).sum(axis=0)  # the (colour, destination) holding the j-th tied action
    at = q * n + cols
    rank = j - (flat(cum).take(at) - flat(mult).take(at))
    colour = q // 6
    dest = q % 6
    tie_c_q = flat(tie_c).take(at)
    # Not the centre: the (rank - tie_c)-th factory holding exactly kstar tiles of the colour.
    want = flat(kstar).take(at)
    held = (src[1:] >> (6 * colour).astype(np.int32)) & 63
    seen = running_sum((held == want).astype(np.int16))
    factory = (seen <= (rank - tie_c_q)).sum(axis=0)
    source = np.where((tie_c_q == 1) & (rank == 0), 0, factory + 1)
    return (source * 5 + colour) * 6 + dest


class GreedyBot(Bot):
    def act(self, st, slots, keys) -> np.ndarray:
        return greedy_actions(st, slots, turn_uniforms(st, slots, keys))

    def choose_columns(self, st, slots, seat, row, colours, legal, keys) -> np.ndarray:
        return best_columns(st.wall[seat, slots], row, legal, 0.0)
