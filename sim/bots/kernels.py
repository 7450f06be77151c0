"""The search bots' play-outs, compiled: loops over copies of games, each touching one game.

A play-out is many short dependent steps (a pick, then the next seat's pick on the new position)
on a few thousand copies, and each step in numpy is a few dozen passes over small arrays: most of
its time went to the passes, not the arithmetic. Here each function is one compiled loop over the
games (numba), with no Python in it:

- `play_picks`: the heuristic's picks to the end of each copy's round (`heuristic._Picks.best`,
  then the engine's pick, `sim.rules.compiled.pick`); the round ends are the engine's
  (`sim.rules.compiled.end_rounds`, with the heuristic's gray-wall columns);
- `round_values`: `rollout`'s round-end value of every seat (`search.RolloutBot`, step 3);
- `ranked_picks`: the candidate lists (`playout.candidates`).

Each does the same float32 operations in the same order as the numpy definition it replaces, so
the same numbers, the same first maxima and the same games; tests/test_playout.py checks every one
number for number, move for move and field for field against the heuristic and the engine.
`playout.ready` compiles them once per process (or loads them from numba's cache).
"""

from __future__ import annotations

import numba
import numpy as np

from ..rules.compiled import (
    BOT_GREEDY,
    BOT_RANDOM,
    column_mask,
    greedy_pick,
    pick,
    random_pick,
    tile_points,
)
from ..rules.rulesets import (
    MAX_TILES_PER_COLOUR,
    MAX_TILES_PER_FACTORY,
    RULE_COLOUR_BONUS,
    RULE_COLUMN_BONUS,
    RULE_END_ROWS,
    RULE_ROW_BONUS,
)
from ..rules.tables import POPCOUNT, WALL_COLUMN
from .features import FLOOR_MAX_X

# Kept literal in the compiled code: numba freezes module globals as constants. The rules of a
# game are read from its rule table (`RuleSet.table`, ``RULE_*``) at run time, or from tables
# made of it once per rule set (`heuristic.RuleWeights`), so no rule set compiles anything.
_KM = 102  # the stride of a (floor, room) row of `RuleWeights.floor_costs`: 2 * 50 + 2
# A factory pick's best value per (k, colour), [5 (k - 1) + c]: k up to 10 tiles.
PICKS = 5 * MAX_TILES_PER_FACTORY
assert _KM == 2 * (MAX_TILES_PER_COLOUR + 1)
_BIG = np.float32(1e4)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_LEGAL = np.float32(-1e3)  # an action valued at or below this is not legal (`playout.candidates`)
_SQUARES = (np.arange(6) ** 2).astype(np.float32)
assert FLOOR_MAX_X == 32
# The heuristic's seats in a `play_picks` line-up, beside `compiled.BOT_RANDOM` and `BOT_GREEDY`.
BOT_HEURISTIC = 2


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _column_masks(cm, w):
    """cm[col]: the 5-bit mask (bit r = row r) of wall `w`'s column col."""
    for col in range(5):
        cm[col] = column_mask(w, col)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pending_wall(w, rc, line_count, line_colour, p, i):
    """Seat p's wall and row colours in game i once its full lines are tiled (the coloured wall's
    `features.pending_wall`)."""
    for r in range(5):
        if line_count[p, r, i] == r + 1:
            c = max(line_colour[p, r, i], 0)
            w |= 1 << (5 * r + WALL_COLUMN[5 * c + r])
            rc |= 1 << (5 * r + c)
    return w, rc


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _coloured_value(cm, w, rc, r, c, cells, colour_bonus):
    """One of `_coloured_values`' numbers: V[c, r] (`cm`: the column masks of `w`)."""
    have = POPCOUNT[column_mask(rc, c)]
    col = WALL_COLUMN[5 * c + r]
    rm = (w >> (5 * r)) & 31
    return cells[(5 * r + col) * 1024 + rm * 32 + cm[col]] + colour_bonus[have]


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _coloured_values(v, cm, w, rc, cells, colour_bonus):
    """v[5 c + r]: `features.pending_line_values` of the pending wall `w` and row colours `rc`,
    from its tables (`features.coloured_tables`)."""
    _column_masks(cm, w)
    for c in range(5):
        bonus = colour_bonus[POPCOUNT[column_mask(rc, c)]]
        for r in range(5):
            col = WALL_COLUMN[5 * c + r]
            rm = (w >> (5 * r)) & 31
            v[5 * c + r] = cells[(5 * r + col) * 1024 + rm * 32 + cm[col]] + bonus


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gray_values(v, cm, row, w, rc, cc, cells, colour_bonus, dead):
    """v[5 c + r]: the gray wall's `features.line_values` of wall `w`, row colours `rc` and column
    colours `cc` (its tables, `features.gray_tables`: a cell 1e4 lower when occupied, 1e4 more
    when its column holds the colour; the best column, or the dead end ``-dead * (r + 1)``);
    `cm` and `row` are scratch."""
    _column_masks(cm, w)
    for r in range(5):
        at = 5 * r * 1024 + ((w >> (5 * r)) & 31) * 32
        end = -dead * np.float32(r + 1)
        for col in range(5):  # the row's cells, whatever the colour
            row[col] = cells[at + col * 1024 + cm[col]]
        for c in range(5):
            best = _ZERO
            for col in range(5):
                t = row[col]
                if (cc >> (5 * col + c)) & 1:
                    t = t - _BIG
                best = t if col == 0 or t > best else best
            v[5 * c + r] = best if best > end else end
    for c in range(5):
        bonus = colour_bonus[POPCOUNT[column_mask(rc, c)]]
        for r in range(5):
            v[5 * c + r] = v[5 * c + r] + bonus


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gray_value(cm, w, rc, cc, r, c, cells, colour_bonus, dead):
    """One of `_gray_values`' numbers: V[c, r] (`cm`: the column masks of `w`)."""
    at = 5 * r * 1024 + ((w >> (5 * r)) & 31) * 32
    best = _ZERO
    for col in range(5):
        t = cells[at + col * 1024 + cm[col]]
        if (cc >> (5 * col + c)) & 1:
            t = t - _BIG
        best = t if col == 0 or t > best else best
    end = -dead * np.float32(r + 1)
    best = best if best > end else end
    return best + colour_bonus[POPCOUNT[column_mask(rc, c)]]


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _line_values(v, cm, row, p, i, gray, wall, rows, cols, cells, colour_bonus, dead):
    """Fill v[c, r] (25,) with the line values of seat p in copy i (`playout.LineValues`): gray,
    from the wall, row and column colours; coloured, from the pending wall and row colours. `cm`
    is scratch for the wall's column masks."""
    if gray:
        _gray_values(v, cm, row, wall[p, i], rows[p, i], cols[p, i], cells, colour_bonus, dead)
    else:
        _coloured_values(v, cm, wall[p, i], rows[p, i], cells, colour_bonus)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _credits(a, b, v, share, acc, counts, rows_from, rows_to):
    """a[c, r]: the credit per tile of an incomplete line r; b[c, r]: the rest of its value once it
    completes (`heuristic._Picks`), for the lines rows_from..rows_to - 1; -1e4 where the line may
    not take the colour."""
    for r in range(rows_from, rows_to):
        frac = np.float32(counts[r]) / np.float32(r + 1)
        per_tile = share / np.float32(r + 1)
        rest = _ONE - share * frac
        for c in range(5):
            j = 5 * c + r
            x = v[j] * per_tile
            y = v[j] * rest
            if (acc >> j) & 1 == 0:
                x = x - _BIG
                y = y - _BIG
            a[j] = x
            b[j] = y


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _factory_line(a, b, costs, room, at, j, r, k, kf):
    """The value of k tiles from a factory on line r (`_Picks`' v[k, c, r], j = 5 c + r)."""
    low = _ONE if room[r] > k else _ZERO
    return (((kf * a[j] - b[j]) * low) - costs[at[r] + 2 * k]) + b[j]


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _centre_line(a, b, costs, room, at, j, r, k, kf, m, fcm):
    """The value of the centre's k tiles (and the marker when m = 1) on line r (`_Picks`' v[0])."""
    low = _ONE if room[r] > k else _ZERO
    return ((((kf * a[j] - fcm) - b[j]) + fcm) * low) + (b[j] - costs[at[r] + 2 * k + m])


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _source_tiles(held):
    """Tiles on a packed source (6-bit field per colour)."""
    total = 0
    for c in range(5):
        total += (held >> (6 * c)) & 63
    return total


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _seat_rows(room, at, counts, fl):
    """Each line's room and its row of the floor costs (`heuristic._Picks`); the floor's row."""
    for r in range(5):
        room[r] = r + 1 - counts[r]
        at[r] = (fl * 6 + room[r]) * _KM
    return fl * 6 * _KM


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _best_pick(a, b, costs, room, at, at0, sources, i, m, centre_w, marker_w, best, known):
    """The heuristic's action in copy i (`heuristic._Picks.best`): every (source, colour) pick
    present in action order, the first best, then the first best destination for it."""
    fcm = costs[at0 + m]
    centre = sources[0, i]
    pick = -1
    pick_value = _ZERO
    for c in range(5):
        k = (centre >> (6 * c)) & 63
        if k == 0:
            continue
        kf = np.float32(k)
        top = _ZERO
        for r in range(5):
            t = _centre_line(a, b, costs, room, at, 5 * c + r, r, k, kf, m, fcm)
            top = t if r == 0 or t > top else top
        to_floor = -costs[at0 + 2 * k + m]
        top = top if top > to_floor else to_floor
        top = top + marker_w * np.float32(m)  # `_Picks` also subtracts 4e4 * (k == 0): 0
        if pick < 0 or top > pick_value:
            pick, pick_value = c, top
    known[:] = False
    for s in range(1, sources.shape[0]):
        held = sources[s, i]
        if held == 0:
            continue
        total = _source_tiles(held)
        for c in range(5):
            k = (held >> (6 * c)) & 63
            if k == 0:
                continue
            q = 5 * (k - 1) + c
            if not known[q]:  # the best line (or the floor) for k tiles of colour c
                kf = np.float32(k)
                top = _ZERO
                for r in range(5):
                    t = _factory_line(a, b, costs, room, at, 5 * c + r, r, k, kf)
                    top = t if r == 0 or t > top else top
                to_floor = -costs[at0 + 2 * k]
                best[q] = top if top > to_floor else to_floor
                known[q] = True
            top = best[q] - centre_w * np.float32(total - k)
            if pick < 0 or top > pick_value:
                pick, pick_value = 5 * s + c, top
    source = pick // 5
    colour = pick % 5
    taken = (sources[source, i] >> (6 * colour)) & 63
    mm = m if source == 0 else 0
    kf = np.float32(taken)
    dest = 5
    top = -costs[at0 + 2 * taken + mm]
    for r in range(4, -1, -1):  # backwards, so the first of equal values wins
        j = 5 * colour + r
        if source == 0:
            t = _centre_line(a, b, costs, room, at, j, r, taken, kf, m, fcm)
        else:
            t = _factory_line(a, b, costs, room, at, j, r, taken, kf)
        if t >= top:
            dest, top = r, t
    return source, colour, dest


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _game_ending(wall, i, end_rows):
    """Some seat's wall in game i has at least `end_rows` rows of 4 tiles or more
    (`heuristic.game_ending`)."""
    for p in range(wall.shape[0]):
        near = 0
        for r in range(5):
            if POPCOUNT[(wall[p, i] >> (5 * r)) & 31] >= 4:
                near += 1
        if near >= end_rows:
            return True
    return False


@numba.njit(cache=True, nogil=True, error_model="numpy")
def ranked_picks(
    rules,
    gray,
    wall,
    row_colours,
    col_colours,
    line_colour,
    cells,
    colour_bonus,
    dead,
    partial_w,
    endgame_w,
    sources,
    marker_in_centre,
    line_count,
    accept,
    floor,
    current,
    slots,
    costs,
    centre_w,
    marker_w,
    out,
):
    """`rollout`'s candidates (`playout.candidates`): out[0, j] the heuristic's action in game
    slots[j], then the next actions by value (`heuristic._Evaluation.action_values`: ties in
    action order, a factory holding the same tiles as an earlier one skipped, only values above
    -1e3), the first repeated where fewer are legal. The mover's line values come from the
    wall variant's `cells` tables (gray, with the dead end's weight `dead`); its share for
    incomplete lines from `partial_w` and `endgame_w` (`heuristic.partial_share`, the end by the
    rule table `rules`'s end rows); the floor and the marker from `costs` (`RuleWeights`)."""
    a, b, v, cm, row, counts, room, at, best, known, ids, scores = rank_scratch(sources.shape[0])
    for j in range(slots.shape[0]):
        rank_game(
            rules, gray, wall, row_colours, col_colours, line_colour, cells, colour_bonus, dead,
            partial_w, endgame_w, sources, marker_in_centre, line_count, accept, floor, current,
            slots[j], costs, centre_w, marker_w, out, j,
            a, b, v, cm, row, counts, room, at, best, known, ids, scores,
        )  # fmt: skip


@numba.njit(cache=True, nogil=True, error_model="numpy")
def rank_scratch(n_sources):
    """`rank_game`'s scratch for a table of `n_sources` sources (the factories and the centre):
    credits a, b, line values v, column masks, a row's values, line counts, rooms, floor-cost
    offsets, a factory pick's best value and whether it is known, and every action's id and
    value."""
    return (
        np.empty(25, np.float32),
        np.empty(25, np.float32),
        np.empty(25, np.float32),
        np.empty(5, np.int64),
        np.empty(5, np.float32),
        np.empty(5, np.int64),
        np.empty(5, np.int64),
        np.empty(5, np.int64),
        np.empty(PICKS, np.float32),
        np.zeros(PICKS, np.bool_),
        np.empty(n_sources * 30, np.int64),
        np.empty(n_sources * 30, np.float32),
    )


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def rank_game(
    rules, gray, wall, row_colours, col_colours, line_colour, cells, colour_bonus, dead,
    partial_w, endgame_w, sources, marker_in_centre, line_count, accept, floor, current,
    i, costs, centre_w, marker_w, out, j,
    a, b, v, cm, row, counts, room, at, best, known, ids, scores,
):  # fmt: skip
    """`ranked_picks` of game i into out[:, j] (the rest: scratch, allocated by the caller); the
    one definition, which `ranked_picks` and the `alphabeta` bot's nodes (`sim.bots.alphabeta`)
    use."""
    end_rows = rules[RULE_END_ROWS]
    n_sources = sources.shape[0]
    width = out.shape[0]
    p = current[i]
    for r in range(5):
        counts[r] = line_count[p, r, i]
    w = wall[p, i]
    rc = row_colours[p, i]
    if gray:
        _gray_values(v, cm, row, w, rc, col_colours[p, i], cells, colour_bonus, dead)
    else:
        w, rc = _pending_wall(w, rc, line_count, line_colour, p, i)
        _coloured_values(v, cm, w, rc, cells, colour_bonus)
    share = partial_w * (_ONE - (endgame_w if _game_ending(wall, i, end_rows) else _ZERO))
    _credits(a, b, v, share, accept[p, i], counts, 0, 5)
    at0 = _seat_rows(room, at, counts, floor[p, i])
    m = 1 if marker_in_centre[i] else 0
    source, colour, dest = _best_pick(
        a, b, costs, room, at, at0, sources, i, m, centre_w, marker_w, best, known
    )
    first = (source * 5 + colour) * 6 + dest
    out[0, j] = first
    if width == 1:  # the heuristic's own choice (`HeuristicBot.act`): nothing else to rank
        return
    # Every other legal action's value, in action order.
    fcm = costs[at0 + m]
    found = 0
    for s in range(n_sources):
        held = sources[s, i]
        if held == 0:
            continue
        if s > 1:  # a factory holding exactly an earlier one's tiles leads nowhere new
            repeat = False
            for e in range(1, s):
                if sources[e, i] == held:
                    repeat = True
            if repeat:
                continue
        total = _source_tiles(held)
        for c in range(5):
            k = (held >> (6 * c)) & 63
            if k == 0:
                continue
            kf = np.float32(k)
            for d in range(6):
                if d < 5:
                    jj = 5 * c + d
                    if s == 0:
                        t = _centre_line(a, b, costs, room, at, jj, d, k, kf, m, fcm)
                    else:
                        t = _factory_line(a, b, costs, room, at, jj, d, k, kf)
                else:
                    t = -costs[at0 + 2 * k + (m if s == 0 else 0)]
                if s == 0:
                    t = t + marker_w * np.float32(m)
                else:
                    t = t - centre_w * np.float32(total - k)
                action = (s * 5 + c) * 6 + d
                if t > _LEGAL and action != first:
                    ids[found] = action
                    scores[found] = t
                    found += 1
    for w in range(1, width):  # the best left, the first of equal values
        top = -1
        for e in range(found):
            if ids[e] >= 0 and (top < 0 or scores[e] > scores[top]):
                top = e
        if top < 0:
            out[w, j] = first
        else:
            out[w, j] = ids[top]
            ids[top] = -1


# Without numba's reference counts (the engine's batch calls: `sim.rules.compiled.jit`): the picks
# use the state tuple, whose ~35 arrays would otherwise be counted up and down at every pick.
@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def play_picks(
    S,
    slots,
    plies,
    wall,
    rows,
    partial,
    cells,
    colour_bonus,
    dead,
    costs,
    centre_w,
    marker_w,
    v,
    a,
    b,
    counts,
    best,
    known,
    room,
    at,
    cm,
    row,
    seat_kind,
    bot_keys,
):
    """Play the heuristic's picks in each copy of `slots` until its factories and centre are
    empty, or for at most `plies` picks (``plies < 0``: no limit). `S` is the copies'
    `EngineState`, changed in place; their walls: gray, the copies' `wall` and `rows` colours
    (`cells` the gray tables, `dead` the dead end's weight); coloured, `playout.LineValues`'
    pending `wall` and `rows` masks, kept current here. With a `seat_kind` of a row per game (none:
    the heuristic in every seat), seat p of game i is the compiled bot ``seat_kind[i, p]``
    (`BOT_HEURISTIC`, or `compiled.BOT_RANDOM` and `BOT_GREEDY` with bot-stream key
    ``bot_keys[i]``). The rest is scratch (the caller's: this allocates nothing): per seat of the
    copy being played, line values `v`, credits `a`, `b` and line counts (a pick changes only its
    own line's credits, and every value, on the coloured wall, when it fills the line)."""
    mixed = seat_kind.shape[0] > 0
    gray = S.gray
    players = S.wall.shape[0]
    cols = S.col_colours
    line_count = S.line_count
    accept = S.accept
    tiles_left = S.tiles_left
    for i in slots:
        if tiles_left[i] == 0:
            continue
        share = partial[i]
        for p in range(players):
            for r in range(5):
                counts[p, r] = line_count[p, r, i]
            _line_values(v[p], cm, row, p, i, gray, wall, rows, cols, cells, colour_bonus, dead)
            _credits(a[p], b[p], v[p], share, accept[p, i], counts[p], 0, 5)
        step = 0
        while tiles_left[i] > 0 and (plies < 0 or step < plies):
            step += 1
            p = S.current[i]
            ap = a[p]
            bp = b[p]
            kind = seat_kind[i, p] if mixed else BOT_HEURISTIC
            if kind == BOT_RANDOM:
                source, colour, dest = random_pick(S, i, bot_keys[i])
            elif kind == BOT_GREEDY:
                source, colour, dest = greedy_pick(S, i, bot_keys[i])
            else:
                at0 = _seat_rows(room, at, counts[p], S.floor[p, i])
                m = 1 if S.marker_in_centre[i] else 0
                source, colour, dest = _best_pick(
                    ap, bp, costs, room, at, at0, S.sources, i, m, centre_w, marker_w, best, known
                )
            new = pick(S, i, source, colour, dest)
            if new < 0:  # to the floor: no line's credits change
                continue
            counts[p, dest] = new
            if new == dest + 1 and not gray:  # a full line's cell joins the pending wall
                wall[p, i] |= 1 << (5 * dest + WALL_COLUMN[5 * colour + dest])
                rows[p, i] |= 1 << (5 * dest + colour)
                _line_values(v[p], cm, row, p, i, gray, wall, rows, cols, cells, colour_bonus, dead)
                _credits(ap, bp, v[p], share, accept[p, i], counts[p], 0, 5)
            else:
                _credits(ap, bp, v[p], share, accept[p, i], counts[p], dest, dest + 1)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def round_values(S, terms, out):
    """`rollout`'s value of each seat of each game between rounds (`search.RolloutBot` step 3),
    into out (P, B): the score; while the game goes on, plus the wall's bonus potential, the
    credit for incomplete lines and the marker. `S` is the games' `EngineState` (the end bonuses
    and end rows are its rule table's), `terms` the value's tables and weights
    (`playout.value_terms`). The same float32 operations as the numpy definition
    (`heuristic.position_values`; tests/test_playout.py)."""
    cm = np.empty(5, np.int64)
    for i in range(out.shape[1]):
        game_round_values(S, terms, cm, i, out, i)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def game_round_values(S, terms, cm, i, out, j):
    """`round_values` of game i into out[:, j] (`cm`: scratch for 5 column masks); the one
    definition, which `round_values` and the `alphabeta` bot's leaves (`sim.bots.alphabeta`) use.
    `terms`: the wall variant's line tables `cells`, `colour_bonus` and dead-end weight `dead`,
    the incomplete lines' share and its end-game cut, the bonus potential's weight, the
    marker's and the open term's (`playout.value_terms`; `open_points` x `rounds_left`)."""
    cells, colour_bonus, dead, partial_w, endgame_w, bonus_w, marker_w, open_w = terms
    rules, scores, done, wall = S.rules, S.scores, S.done, S.wall
    row_colours, col_colours, line_count, line_colour = (
        S.row_colours, S.col_colours, S.line_count, S.line_colour
    )  # fmt: skip
    gray, marker_holder = S.gray, S.marker_holder
    players = out.shape[0]
    end_rows = rules[RULE_END_ROWS]
    row_v = np.float32(rules[RULE_ROW_BONUS])
    col_v = np.float32(rules[RULE_COLUMN_BONUS])
    colour_v = np.float32(rules[RULE_COLOUR_BONUS])
    share = partial_w * (_ONE - (endgame_w if _game_ending(wall, i, end_rows) else _ZERO))
    left = rounds_left(wall, i, players, end_rows) if open_w > _ZERO else _ZERO
    for p in range(players):
        value = np.float32(scores[p, i])
        if done[i]:  # `going` is 0: score + 0 * (...) is the score
            out[p, j] = value
            continue
        w = wall[p, i]
        rc = row_colours[p, i]
        # Bonus potential: a group worth g holding m of its 5 tiles counts g * m^2 / 25.
        rows = _ZERO
        cols = _ZERO
        colours = _ZERO
        for r in range(5):
            rows = rows + _SQUARES[POPCOUNT[(w >> (5 * r)) & 31]]
        for col in range(5):
            cols = cols + _SQUARES[POPCOUNT[column_mask(w, col)]]
            colours = colours + _SQUARES[POPCOUNT[column_mask(rc, col)]]
        potential = (row_v * rows + col_v * cols + colour_v * colours) * bonus_w
        # Credit: each line's value for its own colour, by the share of it filled; only
        # lines holding tiles count (an empty line adds 0: the sum is the same).
        cc = col_colours[p, i]
        if not gray:
            w, rc = _pending_wall(w, rc, line_count, line_colour, p, i)
        _column_masks(cm, w)
        credit = _ZERO
        for r in range(5):
            count = line_count[p, r, i]
            if count == 0:
                continue
            c = line_colour[p, r, i]
            if gray:
                line = _gray_value(cm, w, rc, cc, r, c, cells, colour_bonus, dead)
            else:
                line = _coloured_value(cm, w, rc, r, c, cells, colour_bonus)
            credit = credit + line * (np.float32(count) / np.float32(r + 1))
        credit = credit * share
        holder = marker_w if marker_holder[i] == p else _ZERO
        if left > _ZERO:  # added to the marker's term: with open_w = 0 the sum is as it was
            holder = holder + open_w * left * open_points(wall[p, i])
        out[p, j] = value + ((potential + credit) + holder)  # `going` is 1: x * 1 is x


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def rounds_left(wall, i, players, end_rows):
    """The fewest rounds game i can last, as float32: a wall's `end_rows`-th fullest row takes
    one tile a round at most, and the game ends once some wall has `end_rows` full rows."""
    fewest = 5
    for p in range(players):
        for t in range(5, -1, -1):  # the end_rows-th fullest row of seat p holds t tiles
            rows = 0
            for r in range(5):
                if POPCOUNT[(wall[p, i] >> (5 * r)) & 31] >= t:
                    rows += 1
            if rows >= end_rows:
                fewest = min(fewest, 5 - t)
                break
    return np.float32(fewest)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def open_points(w):
    """The mean, over the empty cells of wall `w`, of the points a tile placed there alone
    would score beyond 1: the adjacency its neighbours hold for later rounds."""
    total = 0
    empty = 0
    for r in range(5):
        for col in range(5):
            bit = 1 << (5 * r + col)
            if w & bit:
                continue
            empty += 1
            total += tile_points(w | bit, r, col) - 1
    return np.float32(total) / np.float32(max(empty, 1))
