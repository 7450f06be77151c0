"""The `greedy` bot: the best immediate value of a pick.

Definition. For a legal action ``a = (source, colour, destination)`` taking ``k`` tiles:

- ``placed(a)``: tiles that go onto the pattern line, ``min(k, room)`` with ``room = r + 1 -
  count`` for line ``r``, and 0 for the floor;
- ``floored(a)``: objects that fall on the floor line, ``k - placed(a)``, plus 1 when the source
  is the centre and the first-player marker still lies there.

Greedy plays an action with the most ``placed``, then the fewest ``floored``. Among the ``T``
actions left tied, it plays the ``j``-th with ``j = (u * T) >> 32``, ``u`` the bot stream's
uniform32 at counter ``turn * 8`` (`sim.rules.rng`), the tied actions enumerated colour by colour,
then destination by destination (lines 0..4, then the floor), then source by source (the centre,
then factories in index order). On the gray wall a full line goes to the legal column where the
tile scores the most adjacency points on the wall as it stood before this tiling, ties leftmost.

Implementation: everything is computed per (colour, destination) from per-colour data, without a
dense action mask. For a destination with room ``R``, the best factory for colour c is the one
whose count ``k`` of c is the smallest ``k >= R`` (all placed, least excess), else the largest
``k``; factories hold 1..4 tiles of a colour, so a table over the 4-bit mask of the counts present
gives it, and the number of factories holding exactly that count gives the tie multiplicity. Those
counts come bit-sliced from the packed factories (`count_classes`). A rule set that deals more than
4 tiles to a factory (``tiles_per_factory``) is played by the same choice computed over the
factories' counts directly (`factory_choice`).

Greedy counts no rule's points: the marker is one more object taken whatever it costs (a floor
slot, or points), and the floor's length and penalties do not change what it plays.
"""

from __future__ import annotations

import numpy as np

from ..rules import rng
from ..rules.rulesets import RULE_TILES_PER_FACTORY
from .base import Bot, compiled_columns, elementwise_columns
from .features import (
    CAP,
    FIELD6,
    best_columns,
    column_keys,
    flat,
    per_line,
    per_seat,
    running_sum,
    seat_to_move,
    unpack,
)

_NEG = np.int16(-20000)
# Accept bit 5c + r of colour c, line r, arranged (5 colours, 5 lines, 1).
_ACCEPT_BIT = np.int32(1) << (5 * np.arange(5)[:, None] + np.arange(5)[None, :])[:, :, None].astype(
    np.int32
)
_LOW = np.int32(sum(1 << (6 * c) for c in range(5)))  # bit 6c of every colour field
_LOW31 = np.int32(31 * _LOW)
_F6 = (6 * np.arange(5, dtype=np.int32))[:, None]


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
    return table


# BEST_ROW[mask]: BEST_K[mask, R + 1] for R = -1..5 in the 3-bit fields at 3 (R + 1), so one
# (5, n) look-up per colour and a shift per destination replace a (5, 6, n) gather.
_BEST_ROW = np.array(
    [sum(int(k) << (3 * i) for i, k in enumerate(row)) for row in _best_k()], np.int32
)


def count_classes(factories: np.ndarray):
    """How many factories hold exactly k = 1..4 tiles of each colour, from (F, n) packed factories.

    Bit-sliced: a factory holds 0..4 tiles of a colour (bits b2 b1 b0 of its field), so exactly 1
    is ``b0 & ~b1``, 2 is ``b1 & ~b0``, 3 is ``b0 & b1`` and 4 is ``b2``; these land on bit 6c and
    are summed over the factories in the same 6-bit fields (at most 9 factories: no carries).

    Returns
    -------
    avail : (5, n) intp, bit k - 1 set when some factory holds exactly k tiles of the colour
    counts : (5, n) int32, the count for k in the 4-bit field at 4 (k - 1)
    """
    b0 = factories & _LOW
    b1 = (factories >> 1) & _LOW
    e3 = b0 & b1
    exactly = [b0 ^ e3, b1 ^ e3, e3, (factories >> 2) & _LOW]  # k = 1, 2, 3, 4
    sums = [e.sum(axis=0, dtype=np.int32) for e in exactly]
    nz = np.zeros_like(sums[0])
    for k, s in enumerate(sums):
        nz |= (((s + _LOW31) >> 5) & _LOW) << k  # bit 6c + k - 1: some factory holds exactly k
    avail = ((nz[None] >> _F6) & 15).astype(np.intp)
    counts = np.zeros((5, factories.shape[1]), np.int32)
    for k, s in enumerate(sums):
        counts |= ((s[None] >> _F6) & 15) << (4 * k)
    return avail, counts


def factory_choice(factories: np.ndarray, big_r: np.ndarray):
    """The factory count greedy takes per (colour, destination) and how many factories hold it,
    from (F, n) packed factories holding any number of tiles of a colour, and `big_r` (5 c, 6 d, n)
    the rooms (-1: illegal, 0: the floor): the highest ``65 * min(k, R) - k`` over the factories
    holding k > 0 (the smallest k >= R, else the largest: one k per key, so the ties are the
    factories holding exactly it).

    Returns
    -------
    kstar : (5, 6, n) int16, 0 where no factory holds the colour or the destination is illegal
    mult : (30, n) int16, the factories holding exactly kstar
    """
    held = unpack(factories)[:, :, None, :]  # (F, 5 c, 1, n)
    room = big_r[None]
    valid = (held > 0) & (room >= 0)
    key = np.where(valid, 65 * np.minimum(held, room) - held, _NEG)
    top = key.max(axis=0, initial=_NEG)
    hit = valid & (key == top[None])
    kstar = np.where(hit, held, 0).max(axis=0, initial=0).astype(np.int16)
    mult = hit.sum(axis=0, dtype=np.int16).reshape(30, -1)
    return kstar, mult


def _sum8(mask: np.ndarray) -> np.ndarray:
    """Number of True along axis 0 of a (Q <= 127, n) bool array (a bool sum widens to int64)."""
    return mask.view(np.int8).sum(axis=0, dtype=np.int8)


def greedy_actions(st, slots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Greedy's action (module docstring) in each game of `slots`; `u` the (n,) uniform32 draws."""
    n = slots.shape[0]
    seat = seat_to_move(st, slots)
    acc = per_seat(st.accept, seat, slots)
    room = (CAP - per_line(st.line_count, seat, slots)).astype(np.int16)  # (5, n)
    src = np.take(st.sources, slots, axis=1)  # C order (a [:, slots] gather is F-ordered)
    centre = ((src[0][None] >> FIELD6[:, None]) & 63).astype(np.int16)  # (5, n)
    factories = src[1:]
    marker = (st.marker_in_centre[slots]).astype(np.int16)

    # R[c, d]: room of destination d for colour c, -1 when illegal, 0 for the floor.
    big_r = np.zeros((5, 6, n), np.int16)
    legal = ((acc[None, None] & _ACCEPT_BIT) != 0).view(np.int8)  # (5 c, 5 r, n)
    big_r[:, :5] = legal * (room[None] + 1) - 1
    small = int(st.rules[RULE_TILES_PER_FACTORY]) <= 4  # a factory holds 0..4 of a colour
    if small:
        avail, counts = count_classes(factories)
        kstar = ((_BEST_ROW.take(avail)[:, None, :] >> (3 * (big_r + 1))) & 7).astype(np.int16)
    else:
        kstar, mult_f = factory_choice(factories, big_r)
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
    if small:  # factories tied in each (colour, destination): those holding exactly kstar of the
        # colour (kstar = 0 shifts by 28: nothing)
        mult_f = ((counts[:, None, :] >> ((4 * kstar - 4) & 31)) & 15).astype(np.int16)
        mult_f = mult_f.reshape(30, n)
    tie_c = (key_c == best).astype(np.int16)
    mult = (key_f == best) * mult_f + tie_c
    total = mult.sum(axis=0, dtype=np.int16)
    j = rng.pick(u, total)
    cum = running_sum(mult)
    q = _sum8(cum <= j).astype(np.intp)  # the (colour, destination) holding the j-th tied action
    at = q * n + cols
    rank = j - (flat(cum).take(at) - flat(mult).take(at))
    colour = q // 6
    dest = q % 6
    tie_c_q = flat(tie_c).take(at)
    # Not the centre: the (rank - tie_c)-th factory holding exactly kstar tiles of the colour.
    want = flat(kstar).take(at)
    held = (factories >> (6 * colour).astype(np.int32)) & 63
    seen = running_sum((held == want).astype(np.int16))
    factory = _sum8(seen <= (rank - tie_c_q))
    source = np.where((tie_c_q == 1) & (rank == 0), 0, factory + 1)
    return (source * 5 + colour) * 6 + dest


@elementwise_columns
@compiled_columns(lambda bot, rule_set: column_keys(0.0))
class GreedyBot(Bot):
    def act(self, st, slots, keys) -> np.ndarray:
        """`greedy_actions`' choices, made in compiled code (`engine.bot_picks`: the pick
        whole-game self-play makes; tests/test_self_play.py checks the two agree)."""
        from ..rules import engine

        return engine.bot_picks(st, slots, keys, "greedy")

    def choose_columns(self, st, slots, seat, row, colours, legal, keys) -> np.ndarray:
        return best_columns(per_seat(st.wall, seat, slots), row, legal, 0.0)
