"""The heuristic's play-out picks, compiled: `play_picks` plays the rest of a round copy by copy.

A play-out is many short dependent steps (a pick, then the next seat's pick on the new position)
on a few thousand copies, and each step in numpy is a few dozen passes over small arrays: most of
its time went to the passes, not the arithmetic. Here one compiled loop plays each copy's picks to
the end of its round, touching only that copy's numbers.

It computes exactly `heuristic._Picks.best` (the same float32 operations in the same order, so the
same values and the same first maximum) and plays the pick exactly as `engine.play` does; the
round end stays with the engine (`engine.end_rounds`). tests/test_playout.py checks both, move for
move and field for field, against the heuristic played step by step through the engine.

numba compiles it on first use (a few seconds) and caches the machine code beside this file
(``__pycache__``), so later processes load it in milliseconds.
"""

from __future__ import annotations

import numba
import numpy as np

from ..constants import FLOOR_SLOTS
from ..tables import ACTION_GONE, SPREAD11
from .features import COLOURED_CELL, FLOOR_MAX_X

# Kept literal in the compiled code: numba freezes module globals as constants.
_KM = 42  # the stride of a (floor, room) row of `HeuristicBot.floor_costs`: 2 * 20 + 2
_BIG = np.float32(1e4)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_COL = np.array([COLOURED_CELL[5 * c + r] - 5 * r for c in range(5) for r in range(5)], np.int64)
assert FLOOR_MAX_X == 32 and FLOOR_SLOTS == 7


@numba.njit(cache=True, nogil=True)
def _line_values(v, p, i, gray, values, wall, rows, cells, colour_bonus):
    """Fill v[c, r] (25,) with the line values of seat p in copy i (`playout.LineValues.of`)."""
    if gray:
        for j in range(25):
            v[j] = values[p * 25 + j, i]
        return
    w = wall[p, i]
    rc = rows[p, i]
    cm = np.empty(5, np.int64)
    for col in range(5):
        m = 0
        for r in range(5):
            m |= ((w >> (5 * r + col)) & 1) << r
        cm[col] = m
    for c in range(5):
        have = 0
        for r in range(5):
            have += (rc >> (5 * r + c)) & 1
        bonus = colour_bonus[have]
        for r in range(5):
            col = _COL[5 * c + r]
            rm = (w >> (5 * r)) & 31
            v[5 * c + r] = cells[(5 * r + col) * 1024 + rm * 32 + cm[col]] + bonus


@numba.njit(cache=True, nogil=True)
def play_picks(
    sources,
    presence,
    marker_in_centre,
    marker_holder,
    tiles_left,
    lid,
    line_colour,
    line_count,
    accept,
    floor,
    marker_takes,
    current,
    turn,
    slots,
    plies,
    gray,
    values,
    wall,
    rows,
    partial,
    cells,
    colour_bonus,
    costs,
    centre_w,
    marker_w,
    players,
):
    """Play the heuristic's picks in each copy of `slots` until its factories and centre are
    empty, or for at most `plies` picks (``plies < 0``: no limit). The arrays are the copies'
    state (`BatchState` fields, changed in place) and `playout.LineValues`' (gray: `values`;
    coloured: the pending `wall` and `rows` masks, kept current here)."""
    n_sources = sources.shape[0]
    v = np.empty(25, np.float32)
    a = np.empty(25, np.float32)
    b = np.empty(25, np.float32)
    best = np.empty(25, np.float32)  # [k - 1, c] for k = 1..4 tiles from a factory (20 used)
    room = np.empty(5, np.int64)
    frac = np.empty(5, np.float32)
    at = np.empty(5, np.int64)
    kc = np.empty(5, np.int64)
    for i in slots:
        step = 0
        while tiles_left[i] > 0 and (plies < 0 or step < plies):
            step += 1
            p = current[i]
            _line_values(v, p, i, gray, values, wall, rows, cells, colour_bonus)
            acc = accept[p, i]
            fl = floor[p, i]
            at0 = fl * 6 * _KM
            share = partial[i]
            for r in range(5):
                cap = r + 1
                count = line_count[p, r, i]
                room[r] = cap - count
                frac[r] = np.float32(count) / np.float32(cap)
                at[r] = (fl * 6 + room[r]) * _KM
            for c in range(5):
                for r in range(5):
                    j = 5 * c + r
                    x = v[j] * (share / np.float32(r + 1))
                    y = v[j] * (_ONE - share * frac[r])
                    if (acc >> j) & 1 == 0:  # the line may not take the colour
                        x = x - _BIG
                        y = y - _BIG
                    a[j] = x
                    b[j] = y
            # The best line (or the floor) for k = 1..4 factory tiles of each colour.
            for k in range(1, 5):
                kf = np.float32(k)
                to_floor = -costs[at0 + 2 * k]
                for c in range(5):
                    top = _ZERO
                    for r in range(5):
                        j = 5 * c + r
                        low = _ONE if room[r] > k else _ZERO
                        t = (((kf * a[j] - b[j]) * low) - costs[at[r] + 2 * k]) + b[j]
                        top = t if r == 0 or t > top else top
                    best[5 * (k - 1) + c] = top if top > to_floor else to_floor
            # Every (source, colour) pick present, in action order; the first best wins.
            m = 1 if marker_in_centre[i] else 0
            fcm = costs[at0 + m]
            centre = sources[0, i]
            pick = -1
            pick_value = _ZERO
            for c in range(5):
                kc[c] = (centre >> (6 * c)) & 63
                if kc[c] == 0:
                    continue
                kf = np.float32(kc[c])
                km = 2 * kc[c] + m
                top = _ZERO
                for r in range(5):
                    j = 5 * c + r
                    low = _ONE if room[r] > kc[c] else _ZERO
                    t = ((((kf * a[j] - fcm) - b[j]) + fcm) * low) + (b[j] - costs[at[r] + km])
                    top = t if r == 0 or t > top else top
                to_floor = -costs[at0 + km]
                top = top if top > to_floor else to_floor
                top = top + marker_w * np.float32(m)  # `_Picks` also subtracts 4e4 * (kc == 0): 0
                if pick < 0 or top > pick_value:
                    pick, pick_value = c, top
            for s in range(1, n_sources):
                held = sources[s, i]
                if held == 0:
                    continue
                total = 0
                for c in range(5):
                    total += (held >> (6 * c)) & 63
                for c in range(5):
                    k = (held >> (6 * c)) & 63
                    if k == 0:
                        continue
                    top = best[5 * (k - 1) + c] - centre_w * np.float32(total - k)
                    if pick < 0 or top > pick_value:
                        pick, pick_value = 5 * s + c, top
            source = pick // 5
            colour = pick % 5
            shift = 6 * colour
            held = sources[source, i]
            taken = (held >> shift) & 63
            # The destination: the first best of the pick's lines and the floor (`_Picks.best`).
            mm = m if source == 0 else 0
            kf = np.float32(taken)
            dest = 5
            top = -costs[at0 + 2 * taken + mm]
            for r in range(4, -1, -1):  # backwards, so the first of equal values wins
                j = 5 * colour + r
                low = _ONE if room[r] > taken else _ZERO
                if source == 0:
                    t = ((((kf * a[j] - fcm) - b[j]) + fcm) * low) + (
                        b[j] - costs[at[r] + 2 * taken + m]
                    )
                else:
                    t = (((kf * a[j] - b[j]) * low) - costs[at[r] + 2 * taken]) + b[j]
                if t >= top:
                    dest, top = r, t

            # The pick, as `engine.play` plays it (§5).
            action = (source * 5 + colour) * 6 + dest
            rest = held - (taken << shift)
            gained = 0
            if source > 0:
                sources[source, i] = 0
                sources[0, i] = rest + sources[0, i]
                colours = 0
                for c in range(5):
                    if (rest >> (6 * c)) & 63:
                        colours |= 1 << c
                gained = SPREAD11[colours]
            else:
                sources[0, i] = rest
            presence[i] = (presence[i] & ~ACTION_GONE[action]) | gained
            tiles_left[i] -= taken
            f = floor[p, i]
            if source == 0 and marker_in_centre[i]:
                marker_in_centre[i] = False
                marker_holder[i] = p
                marker_takes[p, i] += 1
                if f < FLOOR_SLOTS:
                    f += 1
            excess = taken
            if dest < 5:
                cap = dest + 1
                count = line_count[p, dest, i]
                placed = min(taken, max(cap - count, 0))
                excess = taken - placed
                new = count + placed
                line_count[p, dest, i] = new
                if placed > 0:
                    line_colour[p, dest, i] = colour
                keep = acc & ~(np.int32(0x108421) << dest)  # the line's bit of every colour
                if new < cap:
                    keep |= 1 << (5 * colour + dest)
                accept[p, i] = keep
                if new == cap and not gray:  # a full line's cell joins the pending wall
                    col = _COL[5 * colour + dest]
                    wall[p, i] |= 1 << (5 * dest + col)
                    rows[p, i] |= 1 << (5 * dest + colour)
            floor[p, i] = min(f + excess, FLOOR_SLOTS)
            lid[colour, i] += excess
            turn[i] += 1
            current[i] = (p + 1) % players
