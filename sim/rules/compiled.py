"""The rules engine, compiled (numba): deal, pick, wall tiling on both walls, round end, game end.

This is the one fast implementation of the rules (docs/rules.md §3-§10); `sim.rules.reference` is
the readable one that checks it (tests/test_lockstep.py, tests/test_goldens.py). Every function
works on one game ``i`` of a `BatchState`, passed as its `EngineState` tuple ``S``
(`BatchState.arrays`, the one place that lists what compiled code reads):

- `start_round`: the next deal (§7, §10.5);
- `pick`: one pick (§5);
- `end_round`: every seat's wall tiling, the floor penalty, the lead, the next start player and
  the end of the game (§6, §8, §9.3-§9.4);
- `finish`: the end bonuses (§8.2, §10.7).

Loops over the slots of a batch call them: `start_rounds`, `play_actions`, `end_rounds`; these
are what `sim.rules.engine` (and so `sim.jobs.play.play_batch`, for every line-up) calls. Built-in
bots whose choices are compiled play whole games through the same functions: `play_games` (`random`
and `greedy`, any mix of them), and the search bots' play-outs (`sim.bots.kernels`).

Gray-wall columns (§9.3) are chosen per seat of a game by a *column rule* (`COLUMNS_*`): uniform
among the legal columns from the bot stream (the `random` bot's), the legal column of the highest
key of a table (`features.column_keys`: the greedy and heuristic bots'), the leftmost legal one,
or one given by the caller (bots whose choice is not compiled: `engine.end_rounds` asks them row
by row, `gray_row_legal`).

Every rule a game is played by (bonuses, floor, factories, tiles, marker, end rows: docs/rules.md,
"Rule variants") is read from the state's table ``S.rules`` (`sim.rules.rulesets.RuleSet.table`), so
every rule set plays on the same machine code.

Every draw is `sim.rules.rng`'s counter-based value, so a game plays the same in any batch or slot.
"""

from __future__ import annotations

from .kernel_cache import configure

# before numba compiles or loads anything: the cache's folder (sim/rules/kernel_cache.py)
configure()

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros  # noqa: E402

from .constants import END_NO_TILES, END_ROUND_CAP, END_ROW_COMPLETED  # noqa: E402
from .rng import COLUMN_COUNTER, GOLDEN, MIX1, MIX2  # noqa: E402
from .rulesets import (  # noqa: E402
    MARKER_FLOOR,
    MARKER_OFF,
    MARKER_POINTS,
    RULE_COLOUR_BONUS,
    RULE_COLUMN_BONUS,
    RULE_END_ROWS,
    RULE_FACTORIES,
    RULE_FLOOR_CUM,
    RULE_FLOOR_SLOTS,
    RULE_MARKER,
    RULE_MARKER_POINTS,
    RULE_ROW_BONUS,
    RULE_TILES_PER_FACTORY,
)
from .tables import (  # noqa: E402
    ACTION_GONE,
    ACTION_NEEDS,
    FLOOR_OK,
    NTH_DEST_FLAT,
    NTH_SOURCE_FLAT,
    POPCOUNT,
    RUN_FLAT,
    SPREAD,
    SPREAD11,
    WALL_COLUMN,
)

# The batch calls take every array from their caller and allocate nothing, so they run without
# numba's reference counts: with them, every use of the state tuple counted each of its ~35
# arrays up and down again, which made whole games four times slower.
jit = numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

# Module globals are frozen into the machine code as constants.
_RUN = RUN_FLAT.astype(np.int64)  # RUN[mask * 5 + j]
_COLUMN_COUNTER = np.uint64(COLUMN_COUNTER)

# Column rules of a seat (gray wall); a rule k >= 0 is row k of the tables of column keys.
COLUMNS_RANDOM = -1  # uniform among the legal columns, bot stream (`sampling.random_columns`)
COLUMNS_GIVEN = -2  # the caller's choice, ``given[j, row, seat]``
COLUMNS_LEFTMOST = -3  # the leftmost legal column (decision 9.3.1)

# Codes of `play_actions`.
ACTION_OUT_OF_RANGE = 0
ACTION_ILLEGAL = 1


@inline
def uniform32(key, counter):
    """`rng.uniform32` of one key at one counter (uint64 throughout: numba would turn a mix of
    uint64 and int64 into floats)."""
    z = key + np.uint64(counter) * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
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
def tile_points(wall, row, col):
    """Points for the tile just placed at (row, col) of `wall`, which holds it (§6.2)."""
    across = _RUN[((wall >> (5 * row)) & 31) * 5 + col]
    down = _RUN[column_mask(wall, col) * 5 + row]
    return across + down if across > 1 and down > 1 else across + down - 1


@inline
def legal_columns(wall, col_colours, row, colour):
    """Gray wall: the 5-bit mask of the columns where `colour` may go on `row` (§9.3): the cell
    is free and its column holds no tile of the colour."""
    return ~((wall >> (5 * row)) | column_mask(col_colours, colour)) & 31


@inline
def completions(wall, row_colours):
    """Complete rows, columns and colours of one wall (§8.2)."""
    rows = cols = colours = 0
    for k in range(5):
        if (wall >> (5 * k)) & 31 == 31:
            rows += 1
        if column_mask(wall, k) == 31:
            cols += 1
        if column_mask(row_colours, k) == 31:
            colours += 1
    return rows, cols, colours


@inline
def finish(S, i, reason):
    """End game i: the end bonuses, added to the scores on a natural end only (§8.2, §10.7)."""
    S.done[i] = True
    S.end_reason[i] = reason
    row_bonus = S.rules[RULE_ROW_BONUS]
    column_bonus = S.rules[RULE_COLUMN_BONUS]
    colour_bonus = S.rules[RULE_COLOUR_BONUS]
    for p in range(S.wall.shape[0]):
        rows, cols, colours = completions(S.wall[p, i], S.row_colours[p, i])
        got = row_bonus * rows + column_bonus * cols + colour_bonus * colours
        S.bonus[p, i] = got
        if reason == END_ROW_COMPLETED:
            S.scores[p, i] += got


@inline
def check_action(S, i, action, limit):
    """-1 when `action` is a legal pick of the seat to move in game i, else why not."""
    if action < 0 or action >= limit:
        return ACTION_OUT_OF_RANGE
    source = action // 30
    colour = (action // 6) % 5
    taken = (S.sources[source, i] >> (6 * colour)) & 63
    accept = S.accept[S.current[i], i]
    if taken == 0 or ((accept | FLOOR_OK) & ACTION_NEEDS[action]) == 0:
        return ACTION_ILLEGAL
    return -1


@inline
def legal_count(S, i):
    """The number of legal picks of the seat to move in game i: per colour, the sources holding
    it times the pattern lines accepting it and the floor (`random_pick`'s N)."""
    present = S.presence[i]
    accept = S.accept[S.current[i], i]
    total = 0
    for c in range(5):
        total += POPCOUNT[(present >> (11 * c)) & 2047] * (POPCOUNT[(accept >> (5 * c)) & 31] + 1)
    return total


@inline
def line_accepts(count, colour, row_colours, row):
    """The colours pattern line `row` accepts, as bits ``5 * colour + row`` of a seat's accept
    mask (§5.2): empty, every colour not yet on its wall row; started and not full, its own colour
    (never one on the wall row, §12.2); full, none."""
    if count == 0:
        return SPREAD[31 & ~(row_colours >> (5 * row))] << row
    if count < row + 1:
        return np.int32(1) << (5 * colour + row)
    return np.int32(0)


@inline
def pick(S, i, source, colour, dest):
    """Play the pick (source, colour, dest) of the seat to move in game i (§5); returns the pattern
    line's new tile count (-1 for a pick to the floor). The turn's legal picks are counted first,
    whoever chose this one (`BatchState.decision_turns`)."""
    legal = legal_count(S, i)
    S.legal_actions[i] += legal
    if legal > 1:
        S.decision_turns[i] += 1
    p = S.current[i]
    shift = 6 * colour
    held = S.sources[source, i]
    taken = (held >> shift) & 63
    action = (source * 5 + colour) * 6 + dest
    rest = held - (taken << shift)
    gained = 0
    if source > 0:  # a factory's leftovers go to the centre
        S.sources[source, i] = 0
        S.sources[0, i] = rest + S.sources[0, i]
        colours = 0
        for c in range(5):
            if (rest >> (6 * c)) & 63:
                colours |= 1 << c
        gained = SPREAD11[colours]
    else:
        S.sources[0, i] = rest
    S.presence[i] = (S.presence[i] & ~ACTION_GONE[action]) | gained
    S.tiles_left[i] -= taken
    on_floor = S.floor[p, i]
    slots = S.rules[RULE_FLOOR_SLOTS]
    if source == 0 and S.marker_in_centre[i]:  # the first pick from the centre takes the marker
        S.marker_in_centre[i] = False
        S.marker_holder[i] = p
        S.marker_takes[p, i] += 1
        if on_floor < slots and S.rules[RULE_MARKER] == MARKER_FLOOR:  # a marker of points: none
            on_floor += 1
    excess = taken
    new = -1
    if dest < 5:
        capacity = dest + 1
        count = S.line_count[p, dest, i]
        placed = min(taken, max(capacity - count, 0))
        excess = taken - placed
        new = count + placed
        S.line_count[p, dest, i] = new
        if placed > 0:
            S.line_colour[p, dest, i] = colour
        keep = S.accept[p, i] & ~(np.int32(0x108421) << dest)  # the line's bit of every colour
        S.accept[p, i] = keep | line_accepts(new, colour, S.row_colours[p, i], dest)
    S.floor[p, i] = min(on_floor + excess, slots)  # the overflow goes to the lid (5.3.2)
    S.lid[colour, i] += excess  # tiles on the floor are counted in the lid at once
    S.turn[i] += 1
    S.current[i] = (p + 1) % S.wall.shape[0]
    return new


@inline
def gray_column(S, i, j, p, row, legal, wall_before, columns, tables, bot_keys, given):
    """The column of seat p's full line `row` in game i (position j of the call's games), among
    the non-empty 5-bit mask `legal`, by the seat's column rule ``columns[j, p]`` (module
    docstring)."""
    rule = columns[j, p]
    if rule == COLUMNS_RANDOM:
        counter = _COLUMN_COUNTER + np.uint64((S.round[i] * 4 + p) * 5 + row)
        k = draw(uniform32(bot_keys[j], counter), POPCOUNT[legal])
        return NTH_DEST_FLAT[legal * 6 + k]
    if rule == COLUMNS_GIVEN:
        return given[j, row, p]
    if rule == COLUMNS_LEFTMOST:
        return NTH_DEST_FLAT[legal * 6]
    # The highest key, read on the wall as it stood before this tiling (the bots see the state,
    # which changes once every row is tiled).
    row_mask = (wall_before >> (5 * row)) & 31
    top = 0
    for c in range(5):
        if (legal >> c) & 1:
            at = (row_mask * 32 + column_mask(wall_before, c)) * 25 + 5 * row + c
            top = max(top, np.int64(tables[rule, at]))
    return 4 - (top & 7)


@inline
def tile_wall(S, i, j, p, columns, tables, bot_keys, given):
    """Seat p's wall tiling in game i: its full lines row by row, top to bottom (decision 6.1.1),
    scored, cleared and their tiles to the lid (§6, gray: §9.3-§9.4), then the floor penalty (a
    marker of points: its holder's points with it) and the clamp at 0 (§5.3, §6.3)."""
    wall_before = wall = S.wall[p, i]
    row_colours = S.row_colours[p, i]
    col_colours = S.col_colours[p, i]
    on_floor = S.floor[p, i]
    accept = S.accept[p, i]
    points = 0
    for row in range(5):
        if S.line_count[p, row, i] != row + 1:
            continue
        colour = max(S.line_colour[p, row, i], 0)
        to_lid = row  # the tile placed stays on the wall
        col = WALL_COLUMN[5 * colour + row]
        if S.gray:
            legal = legal_columns(wall, col_colours, row, colour)
            if legal == 0:  # a dead end: the whole line to the floor (§9.4)
                on_floor = min(on_floor + row + 1, S.rules[RULE_FLOOR_SLOTS])
                to_lid += 1
                col = -1
            else:
                col = gray_column(
                    S, i, j, p, row, legal, wall_before, columns, tables, bot_keys, given
                )
                S.wall_cells[p, 5 * row + col, i] = colour
        if col >= 0:
            wall |= 1 << (5 * row + col)
            row_colours |= 1 << (5 * row + colour)
            col_colours |= 1 << (5 * col + colour)
            points += tile_points(wall, row, col)
        S.lid[colour, i] += to_lid
        S.line_count[p, row, i] = 0
        S.line_colour[p, row, i] = -1
        accept |= line_accepts(0, -1, row_colours, row)  # the line was full: it accepted none
    penalty = S.rules[RULE_FLOOR_CUM + on_floor]
    if S.marker_holder[i] == p and S.rules[RULE_MARKER] == MARKER_POINTS:
        penalty += S.rules[RULE_MARKER_POINTS]
    S.wall[p, i] = wall
    S.row_colours[p, i] = row_colours
    S.col_colours[p, i] = col_colours
    S.accept[p, i] = accept
    S.floor_penalty[p, i] += penalty
    S.scores[p, i] = max(0, S.scores[p, i] + points - penalty)
    S.floor[p, i] = 0


@inline
def count_lead(S, i):
    """The lead after game i's wall tiling of round r (`BatchState.leaders`): a change of the
    leading seats since the last tiling, and the seats below the highest score."""
    players = S.wall.shape[0]
    r = S.round[i]
    top = S.scores[0, i]
    for p in range(1, players):
        top = max(top, S.scores[p, i])
    leaders = 0
    for p in range(players):
        if S.scores[p, i] == top:
            leaders |= 1 << p
        else:
            if r <= 63:
                S.trailing_rounds[p, i] |= np.int64(1) << (r - 1)
            S.last_trailing_round[p, i] = r
    if S.leaders[i] != 0 and S.leaders[i] != leaders:
        S.lead_changes[i] += 1
    S.leaders[i] = leaders


@inline
def end_round(S, i, j, columns, tables, bot_keys, given):
    """Game i's round end without the deal: every seat's wall tiling (`tile_wall`), the lead,
    the next start player, and the end of the game: a seat with the rules' complete rows, else the
    round cap (§8, §10.6). `j` is the game's position in the call's `columns`, `bot_keys` and
    `given` (gray wall)."""
    players = S.wall.shape[0]
    for p in range(players):
        tile_wall(S, i, j, p, columns, tables, bot_keys, given)
    count_lead(S, i)
    # The marker's holder starts, else the same seat (decision 10.4); with no marker, the seat
    # left of this round's start player.
    holder = S.marker_holder[i]
    start = holder if holder >= 0 else S.start_player[i]
    if S.rules[RULE_MARKER] == MARKER_OFF:
        start = (S.start_player[i] + 1) % players
    S.start_player[i] = start
    S.current[i] = start
    ended = False
    end_rows = S.rules[RULE_END_ROWS]
    for p in range(players):
        rows = 0
        for row in range(5):
            if (S.wall[p, i] >> (5 * row)) & 31 == 31:
                rows += 1
        if rows >= end_rows:
            ended = True
    if ended:
        finish(S, i, END_ROW_COMPLETED)
    elif S.round[i] >= S.max_rounds:
        finish(S, i, END_ROUND_CAP)


@inline
def start_round(S, i, counts):
    """Deal game i's next round: draw t of round R takes the tile at ``rng.pick(uniform32(deal_key,
    R * 64 + t), tiles in the bag)`` in colour order, the lid poured into the bag when the bag is
    empty at a draw, factory t // tiles_per_factory getting it; a deal of nothing ends the game
    `no_tiles` and the round is not played (§7.2-§7.3, §10.5). `counts` (factories, 5) is
    scratch."""
    factories = S.rules[RULE_FACTORIES]
    per_factory = S.rules[RULE_TILES_PER_FACTORY]
    next_round = S.round[i] + 1
    in_bag = 0
    in_lid = 0
    for c in range(5):
        in_bag += S.bag[c, i]
        in_lid += S.lid[c, i]
    dealt = min(in_bag + in_lid, per_factory * factories)
    counts[:] = 0
    key = S.deal_key[i]
    for t in range(dealt):
        if t == in_bag:  # the bag is empty (and the lid is not, or this draw would not be live)
            for c in range(5):
                S.bag[c, i] += S.lid[c, i]
                S.lid[c, i] = 0
        left = in_bag - t if t < in_bag else in_bag + in_lid - t
        x = draw(uniform32(key, next_round * 64 + t), left)
        colour = 0
        below = S.bag[0, i]
        while x >= below and colour < 4:  # x < the tiles left: always stops by white
            colour += 1
            below += S.bag[colour, i]
        S.bag[colour, i] -= 1
        counts[t // per_factory, colour] += 1
    S.sources[0, i] = 0
    present = 0
    for f in range(factories):
        packed = 0
        for c in range(5):
            packed |= counts[f, c] << (6 * c)
            if counts[f, c]:
                present |= np.int64(1) << (11 * c + 1 + f)
        S.sources[1 + f, i] = packed
    S.presence[i] = present
    S.tiles_left[i] = dealt
    S.current[i] = S.start_player[i]
    if dealt == 0:  # not played: the marker stays where the last round left it
        finish(S, i, END_NO_TILES)
    else:
        S.round[i] = next_round
        S.marker_in_centre[i] = S.rules[RULE_MARKER] != MARKER_OFF
        S.marker_holder[i] = -1


# --- the compiled bots -------------------------------------------------------------------------


@inline
def random_pick(S, i, bot_key):
    """The `random` bot's pick in game i (`sampling.uniform_legal`): the ``(u * N) >> 32``-th of
    its N legal actions, colour by colour, source by source, destination by destination, at the
    bot stream's counter ``turn * 8``."""
    present = S.presence[i]
    accept = S.accept[S.current[i], i]
    total = 0
    for c in range(5):
        sources = POPCOUNT[(present >> (11 * c)) & 2047]
        total += sources * (POPCOUNT[(accept >> (5 * c)) & 31] + 1)
    j = draw(uniform32(bot_key, S.turn[i] * 8), total)
    for c in range(5):
        sources = (present >> (11 * c)) & 2047
        lines = (accept >> (5 * c)) & 31
        n = POPCOUNT[lines] + 1
        weight = POPCOUNT[sources] * n
        if j < weight:
            return NTH_SOURCE_FLAT[sources * 10 + j // n], c, NTH_DEST_FLAT[lines * 6 + j % n]
        j -= weight
    return -1, -1, -1  # not reached: the floor always takes a pick


@inline
def factory_counts(S, i):
    """Per colour c, how many factories of game i hold exactly k tiles of c, at the 4-bit field
    4 k (k = 0..10 by the rules: at most 9 factories to a field). One pass over the factories
    without branches, for the five colours at once."""
    c0 = c1 = c2 = c3 = c4 = np.int64(0)
    for f in range(1, S.rules[RULE_FACTORIES] + 1):
        packed = np.int64(S.sources[f, i])
        c0 += np.int64(1) << (4 * (packed & 63))
        c1 += np.int64(1) << (4 * ((packed >> 6) & 63))
        c2 += np.int64(1) << (4 * ((packed >> 12) & 63))
        c3 += np.int64(1) << (4 * ((packed >> 18) & 63))
        c4 += np.int64(1) << (4 * ((packed >> 24) & 63))
    return c0, c1, c2, c3, c4


_COUNTS_HELD = np.int64(sum(1 << (4 * k) for k in range(1, 11)))  # bit 4 k: field k's lowest


@inline
def counts_held(count_of):
    """Bit 4 k of a colour's `factory_counts` set when some factory holds exactly k (k >= 1)."""
    return (count_of | (count_of >> 1) | (count_of >> 2) | (count_of >> 3)) & _COUNTS_HELD


@inline
def factory_take(held, room):
    """The factory count greedy takes for a destination of room `room` (0: the floor) among the
    counts `held` (`counts_held`; 0: no factory holds the colour, and the answer is 0): the
    smallest k >= room (all placed, the least excess), else the largest k. Written without
    branches: ``2 ** 44`` stands for "no k >= room"."""
    above = room + (trailing_zeros((held >> (4 * room)) | (np.int64(1) << 44)) >> 2)
    return above if above <= 10 else (63 - leading_zeros(held | 1)) >> 2


@inline
def destination_key(centre, count_of, room, marker, none):
    """For a (colour, destination) of room `room`: the centre's key (`centre` tiles there), the
    factories' best key (`count_of`: the colour's `factory_counts`), how many factories have it
    (`none` where nobody holds the colour), and the factory count taken."""
    held = counts_held(count_of)
    k = factory_take(held, room)
    centre_key = 65 * min(centre, room) - centre - marker if centre else none
    factory_key = 65 * min(k, room) - k if held else none
    return centre_key, factory_key, (count_of >> (4 * k)) & 15, k


@inline
def most_room(lines, rooms):
    """The most room among the pattern lines of the 5-bit mask `lines` (0: none, the floor)."""
    room = 0
    for line in range(5):
        if (lines >> line) & 1:
            room = max(room, rooms[line])
    return room


@inline
def nth_factory(S, i, c, present, k, nth):
    """The index of the `nth` (0-based) factory among `present` (bit s: source s holds colour c)
    that holds exactly k tiles of colour c."""
    left = present & ~1
    while left:
        low = left & -left
        left ^= low
        s = POPCOUNT[low - 1]
        if (S.sources[s, i] >> (6 * c)) & 63 == k:
            if nth == 0:
                return s
            nth -= 1
    return -1  # not reached: `nth` is below the number of such factories


@inline
def greedy_pick(S, i, bot_key):
    """The `greedy` bot's pick in game i (`sim.bots.greedy`): the most tiles placed on a line,
    then the fewest objects to the floor, i.e. the highest ``65 * placed - taken - marker``; the
    ``(u * T) >> 32``-th of the T tied actions (bot stream, counter ``turn * 8``), enumerated
    colour by colour, destination by destination (lines, then the floor), source by source.

    Per (colour, destination) the factories' best is the count `factory_take` gives, held by the
    factories holding exactly it (the key ``65 * min(k, room) - k`` is one-to-one in k). A
    colour's key never falls as the room grows, so its best is at its line of the most room, and
    a line of room r reaches it iff r >= the tiles placed there (P): the sources placing P tiles
    at the most room place P at any room from P up, and none does better. So the tied actions of
    a colour are its lines of room >= P times the same sources each, and a pick evaluates one
    destination per colour (docs/engine.md, "The greedy pick")."""
    p = S.current[i]
    accept = S.accept[p, i]
    presence = S.presence[i]
    marker = 1 if S.marker_in_centre[i] else 0
    none = -(1 << 30)
    centres = np.int64(S.sources[0, i])
    counts = factory_counts(S, i)
    rooms = (
        1 - np.int64(S.line_count[p, 0, i]),
        2 - np.int64(S.line_count[p, 1, i]),
        3 - np.int64(S.line_count[p, 2, i]),
        4 - np.int64(S.line_count[p, 3, i]),
        5 - np.int64(S.line_count[p, 4, i]),
    )
    best = none
    colours = 0  # bit c: colour c reaches the best key
    # At colour c's own best key: the sources (4-bit field 4 c), whether the centre is one (bit
    # c) and the factory count taken (4-bit field 4 c).
    sources_at = centre_at = takes_at = np.int64(0)
    for c in range(5):
        if (presence >> (11 * c)) & 2047 == 0:
            continue
        centre_key, factory_key, factories, k = destination_key(
            (centres >> (6 * c)) & 63,
            counts[c],
            most_room((accept >> (5 * c)) & 31, rooms),
            marker,
            none,
        )
        key = max(centre_key, factory_key)
        sources_at |= ((centre_key == key) + (factories if factory_key == key else 0)) << (4 * c)
        centre_at |= np.int64(centre_key == key) << c
        takes_at |= k << (4 * c)
        if key > best:
            best, colours = key, 1 << c
        elif key == best:
            colours |= 1 << c
    placed = (best + 64) // 65  # P: taken + marker is 1..64, so the key is in (65 P - 65, 65 P)
    reach = 0  # bit r: line r has room for P (0 when the floor is the best: P = 0)
    if placed > 0:
        for line in range(5):
            reach |= (rooms[line] >= placed) << line
    tied = 0
    for c in range(5):
        if (colours >> c) & 1:
            destinations = POPCOUNT[(accept >> (5 * c)) & reach] if placed > 0 else 1
            tied += destinations * ((sources_at >> (4 * c)) & 15)
    j = draw(uniform32(bot_key, S.turn[i] * 8), tied) if tied > 1 else 0
    c = sources = lines = 0
    while c < 5:  # the colour of the j-th tied action
        if (colours >> c) & 1:
            sources = (sources_at >> (4 * c)) & 15
            lines = (accept >> (5 * c)) & reach
            here = (POPCOUNT[lines] if placed > 0 else 1) * sources
            if j < here:
                break
            j -= here
        c += 1
    if c == 5:  # no tile left (a round over): no pick
        return -1, -1, -1
    dest = NTH_DEST_FLAT[lines * 6 + j // sources]  # the floor (5) when lines is 0
    j %= sources
    if (centre_at >> c) & 1:
        if j == 0:
            return 0, c, dest
        j -= 1
    k = (takes_at >> (4 * c)) & 15
    return nth_factory(S, i, c, (presence >> (11 * c)) & 2047, k, j), c, dest


# Bots `play_games` plays, per seat.
BOT_RANDOM = 0
BOT_GREEDY = 1


@inline
def play_game(S, i, j, seat_bots, with_greedy, columns, tables, bot_keys, counts, given):
    """Play game i (position j of the call) to its end; `with_greedy` is False when no seat is
    greedy's (a loop without greedy's code: random self-play keeps its speed)."""
    key = bot_keys[j]
    while not S.done[i]:
        if S.tiles_left[i] > 0:
            if with_greedy and seat_bots[j, S.current[i]] == BOT_GREEDY:
                source, colour, dest = greedy_pick(S, i, key)
            else:
                source, colour, dest = random_pick(S, i, key)
            pick(S, i, source, colour, dest)
            continue
        end_round(S, i, j, columns, tables, bot_keys, given)
        if not S.done[i]:
            start_round(S, i, counts)


@jit
def play_games(S, slots, seat_bots, bot_keys, columns, tables, counts, given):
    """Play the games in `slots` to their end, in place: seat p of game slots[j] is the compiled
    bot ``seat_bots[j, p]`` (`BOT_*`), with bot-stream key ``bot_keys[j]`` and gray-wall column
    rule ``columns[j, p]``; `counts` (factories, 5) and `given` (1, 5, P) are scratch. A game may
    wait for its round end (no tiles left); a finished one is left as it is."""
    for j in range(slots.shape[0]):
        i = slots[j]
        greedy_seats = 0
        for p in range(S.wall.shape[0]):
            greedy_seats += seat_bots[j, p] == BOT_GREEDY
        if greedy_seats:
            play_game(S, i, j, seat_bots, True, columns, tables, bot_keys, counts, given)
        else:
            play_game(S, i, j, seat_bots, False, columns, tables, bot_keys, counts, given)


# --- the batch calls of `sim.rules.engine`
# -----------------------------------------------------------


@jit
def play_actions(S, slots, actions, limit):
    """Play ``actions[j]`` in game ``slots[j]`` for every j, unless one is not a legal action id
    (0..limit-1) of the seat to move: then nothing is played and the answer is ``2 * j + code``
    for the first such j (out-of-range ids reported before illegal ones); -1 once played."""
    first_illegal = -1
    for j in range(slots.shape[0]):
        why = check_action(S, slots[j], actions[j], limit)
        if why == ACTION_OUT_OF_RANGE:
            return 2 * j + ACTION_OUT_OF_RANGE
        if why == ACTION_ILLEGAL and first_illegal < 0:
            first_illegal = j
    if first_illegal >= 0:
        return 2 * first_illegal + ACTION_ILLEGAL
    for j in range(slots.shape[0]):
        action = actions[j]
        pick(S, slots[j], action // 30, (action // 6) % 5, action % 6)
    return -1


@jit
def choose_picks(S, slots, bot, bot_keys, actions):
    """``actions[j]``: the compiled bot `bot`'s (`BOT_*`) action id in game ``slots[j]``, with
    bot-stream key ``bot_keys[j]`` (the `random` and `greedy` bots' `act` in a stepped line-up:
    the choice `play_games` makes, for every game of a step in one call)."""
    for j in range(slots.shape[0]):
        i = slots[j]
        if bot == BOT_GREEDY:
            source, colour, dest = greedy_pick(S, i, bot_keys[j])
        else:
            source, colour, dest = random_pick(S, i, bot_keys[j])
        actions[j] = (source * 5 + colour) * 6 + dest


@jit
def end_rounds(S, slots, columns, tables, bot_keys, given):
    """`end_round` of every game of `slots` (j-th: ``columns[j]``, ``bot_keys[j]``,
    ``given[j]``)."""
    for j in range(slots.shape[0]):
        end_round(S, slots[j], j, columns, tables, bot_keys, given)


@jit
def start_rounds(S, slots, counts):
    """`start_round` of every game of `slots`; `counts` (factories, 5) is scratch."""
    for i in slots:
        start_round(S, i, counts)


@jit
def refresh_accept(S, slots):
    """Every seat's accept mask in the games of `slots`, from its pattern lines and wall (a state
    set up outside the engine: `engine.from_snapshots`)."""
    for i in slots:
        for p in range(S.wall.shape[0]):
            accept = np.int32(0)
            for row in range(5):
                count = S.line_count[p, row, i]
                accept |= line_accepts(count, S.line_colour[p, row, i], S.row_colours[p, i], row)
            S.accept[p, i] = accept


@jit
def gray_row_legal(S, slots, row, given, out):
    """Gray wall, for the columns of `row` chosen outside compiled code: out[p, j] the 5-bit mask
    of the legal columns of seat p's line `row` in game slots[j] when the line is full, on the
    wall with the columns ``given[j, r, p]`` of rows r < row placed (0: not full, or a dead end).
    `end_rounds` with the rule `COLUMNS_GIVEN` then tiles with the same columns."""
    for j in range(slots.shape[0]):
        i = slots[j]
        for p in range(S.wall.shape[0]):
            out[p, j] = 0
            if S.line_count[p, row, i] != row + 1:
                continue
            wall = S.wall[p, i]
            col_colours = S.col_colours[p, i]
            for r in range(row):
                if S.line_count[p, r, i] != r + 1:
                    continue
                colour = max(S.line_colour[p, r, i], 0)
                if legal_columns(wall, col_colours, r, colour) == 0:  # a dead end
                    continue
                col = given[j, r, p]
                wall |= 1 << (5 * r + col)
                col_colours |= 1 << (5 * col + colour)
            colour = max(S.line_colour[p, row, i], 0)
            out[p, j] = legal_columns(wall, col_colours, row, colour)


@jit
def count_completions(S, slots, out, provisional):
    """out[:, p, j]: the complete rows, columns and colours of seat p's wall in game slots[j];
    provisional[p, j]: seat p is among its winners by §8.3 on the scores as they stand (the
    highest score, then the most complete rows among the tied only; a remaining tie is shared)."""
    players = S.wall.shape[0]
    for j in range(slots.shape[0]):
        i = slots[j]
        top = S.scores[0, i]
        for p in range(players):
            out[0, p, j], out[1, p, j], out[2, p, j] = completions(
                S.wall[p, i], S.row_colours[p, i]
            )
            top = max(top, S.scores[p, i])
        most = 0
        for p in range(players):
            if S.scores[p, i] == top:
                most = max(most, out[0, p, j])
        for p in range(players):
            provisional[p, j] = S.scores[p, i] == top and out[0, p, j] == most


@jit
def placement_table(out):
    """out[(row_mask * 32 + col_mask) * 25 + 5 r + col]: `tile_points` of a tile put at (r, col)
    of a wall whose row r holds `row_mask` and whose column col holds `col_mask` (bit = row)
    besides it: the bots' table of placement points (`sim.bots.features.cell_points`)."""
    for row_mask in range(32):
        for col_mask in range(32):
            for r in range(5):
                for col in range(5):
                    wall = (row_mask | (1 << col)) << (5 * r)  # the tile included
                    for k in range(5):
                        if (col_mask >> k) & 1:
                            wall |= 1 << (5 * k + col)
                    at = (row_mask * 32 + col_mask) * 25 + 5 * r + col
                    out[at] = tile_points(wall, r, col)
