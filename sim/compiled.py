"""The rules compiled for one game at a time (numba): where numpy's fixed cost per step counts.

A numpy step costs a fixed ~0.1 ms whether it moves 16,384 games or three: the search bots'
play-outs take a few dependent steps on a few thousand copies, and random self-play's picks are
so cheap that the fixed cost is a large share (`sim.self_play`). Here the same transitions are
loops over single games:

- `pick`: one pick, as `engine.play` plays it (§5);
- `end_round`: one round end, as `engine.end_rounds(..., deal=False)` ends it (§6-§8) and the
  leader records with it (`record_leaders`, `sim.leaders`), with the
  gray wall's columns uniformly random (the `random` bot's) or by the highest key of a table
  (the heuristic's, `features.column_keys`);
- `start_round`: the next deal, as `engine.start_rounds` deals it (§7, §10.5);
- `play_random`: games played to their end by the `random` bot in every seat
  (`sampling.uniform_legal`, `sampling.random_columns`), the kernel of `sim.self_play`.

Every draw is `sim.rng`'s counter-based value, so each game plays exactly as the numpy engine plays
it (tests/test_self_play.py checks them field for field). The search bots' kernels
(`sim.bots.kernels`) share `pick` and `end_round`. numba keys its cache by a function's own source
file only, so after an edit here the search kernels' cache is stale: the test session drops it
(tests/conftest.py); elsewhere delete ``sim/bots/__pycache__/kernels.*.nb[ic]``.
"""

from __future__ import annotations

import numba
import numpy as np

from .constants import (
    END_NO_TILES,
    END_ROUND_CAP,
    END_ROW_COMPLETED,
    FLOOR_CUM,
    FLOOR_SLOTS,
    RUN,
    wall_column,
)
from .rng import COLUMN_COUNTER
from .tables import ACTION_GONE, NTH_DEST_FLAT, NTH_SOURCE_FLAT, SPREAD, SPREAD11

jit = numba.njit(cache=True, nogil=True, error_model="numpy")
inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

# Kept literal in the compiled code: numba freezes module globals as constants.
_RUN = RUN.astype(np.int64).ravel()  # RUN[mask * 5 + j]
_FLOOR_CUM = FLOOR_CUM.astype(np.int64)
# WALL_COLUMN[5 * colour + row]: the column of the colour on that row of the coloured wall.
WALL_COLUMN = np.array([wall_column(r, c) for c in range(5) for r in range(5)], np.int64)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_COLUMN_COUNTER = np.uint64(COLUMN_COUNTER)
_POP11 = np.array([bin(m).count("1") for m in range(2048)], np.int64)  # popcount of 11 bits
assert FLOOR_SLOTS == 7


@inline
def uniform32(key, counter):
    """`rng.uniform32` of one key at one counter (uint64 throughout: numba would turn a mix of
    uint64 and int64 into floats)."""
    z = key + np.uint64(counter) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return (z ^ (z >> np.uint64(31))) >> np.uint64(32)


@inline
def draw(u, n):
    """`rng.pick`: ``(u * n) >> 32``, a uniform32 `u` mapped to ``0..n-1``."""
    return np.int64((u * np.uint64(n)) >> np.uint64(32))


@inline
def column_mask(bits, k):
    """Bits k, k + 5, ..., k + 20 of `bits` as a 5-bit mask (bit r from bit 5 r + k): column k's
    cells of a wall, or the columns holding colour k in its column colours. One multiply moves
    bit 5 r to bit 16 + r; no two products meet and nothing carries."""
    return (((bits >> k) & 0x108421) * 0x11111 >> 16) & 31


@inline
def tile_points(w, r, col):
    """Points for the tile just placed at (r, col) of wall `w` (which holds it, RULES §6.2)."""
    rm = (w >> (5 * r)) & 31
    cm = column_mask(w, col)
    h = _RUN[rm * 5 + col]
    u = _RUN[cm * 5 + r]
    return h + u if h > 1 and u > 1 else h + u - 1


@inline
def pick(
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
    players,
    i,
    source,
    colour,
    dest,
):
    """Play the pick (source, colour, dest) of the seat to move in game i, as `engine.play` does
    (§5); returns the pattern line's new tile count (-1 for a pick to the floor)."""
    p = current[i]
    shift = 6 * colour
    held = sources[source, i]
    taken = (held >> shift) & 63
    action = (source * 5 + colour) * 6 + dest
    rest = held - (taken << shift)
    gained = 0
    if source > 0:  # a factory's leftovers go to the centre
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
    if source == 0 and marker_in_centre[i]:  # the first pick from the centre takes the marker
        marker_in_centre[i] = False
        marker_holder[i] = p
        marker_takes[p, i] += 1
        if f < FLOOR_SLOTS:
            f += 1
    excess = taken
    new = -1
    if dest < 5:
        cap = dest + 1
        count = line_count[p, dest, i]
        placed = min(taken, max(cap - count, 0))
        excess = taken - placed
        new = count + placed
        line_count[p, dest, i] = new
        if placed > 0:
            line_colour[p, dest, i] = colour
        keep = accept[p, i] & ~(np.int32(0x108421) << dest)  # the line's bit of every colour
        if new < cap:
            keep |= 1 << (5 * colour + dest)
        accept[p, i] = keep
    floor[p, i] = min(f + excess, FLOOR_SLOTS)  # the overflow goes to the lid at once (5.3.2)
    lid[colour, i] += excess
    turn[i] += 1
    current[i] = (p + 1) % players
    return new


@inline
def finish(i, reason, wall, row_colours, scores, bonus, done, end_reason):
    """End game i (`engine._finish`): the end bonuses, added to the scores on a natural end only
    (§8.2, §10.7)."""
    done[i] = True
    end_reason[i] = reason
    for p in range(wall.shape[0]):
        w = wall[p, i]
        rc = row_colours[p, i]
        got = 0
        for k in range(5):  # row k, column k, colour k complete
            if (w >> (5 * k)) & 31 == 31:
                got += 2
            if column_mask(w, k) == 31:
                got += 7
            if column_mask(rc, k) == 31:
                got += 10
        bonus[p, i] = got
        if reason == END_ROW_COMPLETED:
            scores[p, i] += got


@inline
def record_leaders(i, scores, rounds, lead_changes, trailing_rounds, last_trailing_round):
    """`leaders.record_leaders` of game i: the leader records of the wall tiling just done."""
    players = scores.shape[0]
    r = rounds[i]
    top = scores[0, i]
    for p in range(1, players):
        top = max(top, scores[p, i])
    changed = False
    for p in range(players):
        trailing = scores[p, i] < top
        if r >= 2 and trailing != (last_trailing_round[p, i] == r - 1):
            changed = True
        if trailing:
            if r <= 63:
                trailing_rounds[p, i] |= np.int64(1) << np.int64(r - 1)
            last_trailing_round[p, i] = r
    if changed:
        lead_changes[i] += 1


@inline
def end_round(
    i,
    wall,
    row_colours,
    col_colours,
    wall_cells,
    floor,
    line_count,
    line_colour,
    lid,
    accept,
    floor_penalty,
    scores,
    bonus,
    lead_changes,
    trailing_rounds,
    last_trailing_round,
    start_player,
    current,
    marker_holder,
    done,
    end_reason,
    rounds,
    max_rounds,
    gray,
    column_keys,
    bot_key,
):
    """`engine.end_rounds` of game i without the deal: every seat's full lines tiled row by row
    and scored, the floor penalty, the next start player, and the end of the game (§6-§8).

    Gray wall: with a `column_keys` table (not empty) the legal column of the highest key, as
    `features.best_columns` ranks them on the wall as the round ended; otherwise uniformly random
    among the legal columns from the bot stream key `bot_key` (`sampling.random_columns`)."""
    players = wall.shape[0]
    for p in range(players):
        w0 = w = wall[p, i]
        rc = row_colours[p, i]
        cc = col_colours[p, i]
        fl = floor[p, i]
        acc = accept[p, i]
        points = 0
        for r in range(5):
            if line_count[p, r, i] != r + 1:
                continue
            hue = max(line_colour[p, r, i], 0)
            to_lid = r
            if gray:
                has = column_mask(cc, hue)  # bit c: column c holds the colour
                legal = ~((w >> (5 * r)) | has) & 31
                if legal == 0:  # a dead end: the whole line to the floor (§9.4)
                    fl = min(fl + r + 1, FLOOR_SLOTS)
                    to_lid += 1
                    col = -1
                elif column_keys.size == 0:
                    counter = _COLUMN_COUNTER + np.uint64((rounds[i] * 4 + p) * 5 + r)
                    k = draw(uniform32(bot_key, counter), _POP11[legal])
                    col = NTH_DEST_FLAT[legal * 6 + k]
                else:
                    # The heuristic reads the game's wall, which the engine updates once every
                    # row is tiled: the wall as the round ended.
                    rm = (w0 >> (5 * r)) & 31
                    top = 0
                    for c in range(5):
                        if (legal >> c) & 1:
                            cm = column_mask(w0, c)
                            top = max(top, column_keys[(rm * 32 + cm) * 25 + 5 * r + c])
                    col = 4 - (top & 7)
                if col >= 0:
                    wall_cells[p, 5 * r + col, i] = hue
            else:
                col = WALL_COLUMN[5 * hue + r]
            if col >= 0:
                w |= 1 << (5 * r + col)
                rc |= 1 << (5 * r + hue)
                cc |= 1 << (5 * col + hue)
                points += tile_points(w, r, col)
            lid[hue, i] += to_lid
            line_count[p, r, i] = 0
            line_colour[p, r, i] = -1
            # The cleared line accepts every colour its wall row lacks.
            acc |= SPREAD[31 & ~(rc >> (5 * r))] << r
        penalty = _FLOOR_CUM[fl]
        wall[p, i] = w
        row_colours[p, i] = rc
        col_colours[p, i] = cc
        accept[p, i] = acc
        floor_penalty[p, i] += penalty
        scores[p, i] = max(0, scores[p, i] + points - penalty)
        floor[p, i] = 0
    record_leaders(i, scores, rounds, lead_changes, trailing_rounds, last_trailing_round)
    holder = marker_holder[i]
    start = holder if holder >= 0 else start_player[i]
    start_player[i] = start
    current[i] = start
    ended = False  # some wall has a complete row
    for p in range(players):
        for r in range(5):
            if (wall[p, i] >> (5 * r)) & 31 == 31:
                ended = True
    if ended:
        finish(i, END_ROW_COMPLETED, wall, row_colours, scores, bonus, done, end_reason)
    elif rounds[i] >= max_rounds:
        finish(i, END_ROUND_CAP, wall, row_colours, scores, bonus, done, end_reason)


@inline
def start_round(
    i,
    sources,
    presence,
    bag,
    lid,
    deal_key,
    tiles_left,
    current,
    start_player,
    rounds,
    marker_in_centre,
    marker_holder,
    wall,
    row_colours,
    scores,
    bonus,
    done,
    end_reason,
    counts,
):
    """Deal game i's next round (`engine.start_rounds`, `deal.deal`): draw t of round R takes the
    tile at ``rng.pick(uniform32(deal_key, R * 64 + t), tiles in the bag)`` in colour order, the
    lid poured into the bag when the bag is empty at a draw; a deal of nothing ends the game
    `no_tiles` (§7.2-§7.3, §10.5). `counts` (factories, 5) is scratch."""
    factories = counts.shape[0]
    next_round = rounds[i] + 1
    in_bag = 0
    in_lid = 0
    for c in range(5):
        in_bag += bag[c, i]
        in_lid += lid[c, i]
    dealt = min(in_bag + in_lid, 4 * factories)
    counts[:] = 0
    key = deal_key[i]
    for t in range(dealt):
        if t == in_bag:  # the bag is empty (and the lid is not, or this draw would not be live)
            for c in range(5):
                bag[c, i] += lid[c, i]
                lid[c, i] = 0
        left = in_bag - t if t < in_bag else in_bag + in_lid - t
        x = draw(uniform32(key, next_round * 64 + t), left)
        colour = 0
        below = bag[0, i]
        while x >= below and colour < 4:  # x < the tiles left: always stops by white
            colour += 1
            below += bag[colour, i]
        bag[colour, i] -= 1
        counts[t // 4, colour] += 1
    sources[0, i] = 0
    held = 0
    for f in range(factories):
        packed = 0
        for c in range(5):
            packed |= counts[f, c] << (6 * c)
            if counts[f, c]:
                held |= np.int64(1) << (11 * c + 1 + f)
        sources[1 + f, i] = packed
    presence[i] = held
    tiles_left[i] = dealt
    current[i] = start_player[i]
    if dealt == 0:  # not played: the marker stays where the last round left it
        finish(i, END_NO_TILES, wall, row_colours, scores, bonus, done, end_reason)
    else:
        rounds[i] = next_round
        marker_in_centre[i] = True
        marker_holder[i] = -1


@inline
def random_pick(presence, accept, current, turn, i, bot_key):
    """The `random` bot's pick in game i (`sampling.uniform_legal`): the ``(u * N) >> 32``-th of
    its N legal actions, colour by colour, source by source, destination by destination, at the
    bot stream's counter ``turn * 8``."""
    held = presence[i]
    acc = accept[current[i], i]
    total = 0
    for c in range(5):
        total += _POP11[(held >> (11 * c)) & 2047] * (_POP11[(acc >> (5 * c)) & 31] + 1)
    j = draw(uniform32(bot_key, turn[i] * 8), total)
    for c in range(5):
        sources = (held >> (11 * c)) & 2047
        lines = (acc >> (5 * c)) & 31
        n = _POP11[lines] + 1
        weight = _POP11[sources] * n
        if j < weight:
            return NTH_SOURCE_FLAT[sources * 10 + j // n], c, NTH_DEST_FLAT[lines * 6 + j % n]
        j -= weight
    return -1, -1, -1  # not reached: the floor always takes a pick


@jit
def play_random(
    slots,
    bot_keys,
    sources,
    presence,
    marker_in_centre,
    marker_holder,
    tiles_left,
    bag,
    lid,
    line_colour,
    line_count,
    wall,
    row_colours,
    col_colours,
    wall_cells,
    accept,
    floor,
    scores,
    current,
    start_player,
    rounds,
    turn,
    done,
    end_reason,
    floor_penalty,
    marker_takes,
    bonus,
    lead_changes,
    trailing_rounds,
    last_trailing_round,
    deal_key,
    max_rounds,
    gray,
    factories,
):
    """Play the games in `slots` to their end with the `random` bot in every seat, in place: the
    arrays are a `BatchState`'s fields, `bot_keys` each slot's bot-stream key. A game may wait for
    its round end (no tiles left); a finished one is left as it is."""
    players = wall.shape[0]
    counts = np.zeros((factories, 5), np.int64)
    no_keys = np.zeros(0, np.int64)
    for i in slots:
        key = bot_keys[i]
        while not done[i]:
            if tiles_left[i] > 0:
                source, colour, dest = random_pick(presence, accept, current, turn, i, key)
                pick(
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
                    players,
                    i,
                    source,
                    colour,
                    dest,
                )
                continue
            end_round(
                i,
                wall,
                row_colours,
                col_colours,
                wall_cells,
                floor,
                line_count,
                line_colour,
                lid,
                accept,
                floor_penalty,
                scores,
                bonus,
                lead_changes,
                trailing_rounds,
                last_trailing_round,
                start_player,
                current,
                marker_holder,
                done,
                end_reason,
                rounds,
                max_rounds,
                gray,
                no_keys,
                key,
            )
            if not done[i]:
                start_round(
                    i,
                    sources,
                    presence,
                    bag,
                    lid,
                    deal_key,
                    tiles_left,
                    current,
                    start_player,
                    rounds,
                    marker_in_centre,
                    marker_holder,
                    wall,
                    row_colours,
                    scores,
                    bonus,
                    done,
                    end_reason,
                    counts,
                )
