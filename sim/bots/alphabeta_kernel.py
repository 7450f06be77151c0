"""The `alphabeta` bot's search, compiled (numba): one game at a time, no Python inside.

Each game of a call owns ``stride`` consecutive slots of a scratch state: slot 0 is the position
to decide, slot d + 1 the child being searched below slot d (a leaf is valued in its own slot).
A branch is a copy of the slot and the engine's own `pick`; a leaf's round end is the engine's
`end_round`; candidates and values are the heuristic's one compiled definition
(`kernels.rank_game`, `kernels.play_picks`, `kernels.game_round_values`). So the search plays
the rules of the game's rule table and nothing else.

The search is alpha-beta over the root seat's margin (its value less the best other seat's):
the root seat's nodes maximise it, every other seat's minimise it (with two players, minimax;
with more, the "paranoid" reduction). With three or four players and a `caution` c below 1, an
other seat's node is worth c x its least child plus (1 - c) x its heuristic pick's: that pick is
searched first with no upper bound, so its value is exact, and the rest for the least child
within the window that the mix leaves, so the pruning stays exact. It is written as a loop over
an explicit stack of plies rather than a recursion, iteratively deepened one ply at a time (the
last best root move searched first) until the node budget runs out or the tree reaches every
round end.
"""

from __future__ import annotations

import numba
import numpy as np

from ..rules.compiled import end_round, pick
from ..rules.rulesets import RULE_END_ROWS
from .kernels import (
    _game_ending,
    _pending_wall,
    game_round_values,
    play_picks,
    rank_game,
    rank_scratch,
)

_INF = np.inf
# Transposition-table bounds: the value is exact, at least, or at most the position's.
EXACT, LOWER, UPPER = 0, 1, 2
WHOLE = 1000  # the depth of a value whose subtree reached every round's end: no deeper search
# Once a search reaches every round's end, it is searched again WIDEN moves wider at every node,
# at most WIDENINGS - 1 times (each pass with its own stamp in the table).
WIDEN = 4
WIDENINGS = 6
_MIX = np.uint64(0x9E3779B97F4A7C15)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)

inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")


@inline
def _copy_game(fields, src, dst):
    """Slot `src` copied to slot `dst` in every field of the state: `fields` are its arrays as
    (rows, batch) views, one tuple per dtype (`alphabeta.game_fields`)."""
    _load_group(fields[0], fields[0], src, dst)
    _load_group(fields[1], fields[1], src, dst)
    _load_group(fields[2], fields[2], src, dst)
    _load_group(fields[3], fields[3], src, dst)
    _load_group(fields[4], fields[4], src, dst)
    _load_group(fields[5], fields[5], src, dst)


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def load_games(source, slots, fields, stride):
    """Game slots[g] of the state of arrays `source` into slot ``g * stride`` of the state of
    arrays `fields` (both `alphabeta.game_fields`)."""
    for g in range(slots.shape[0]):
        _load_group(source[0], fields[0], slots[g], g * stride)
        _load_group(source[1], fields[1], slots[g], g * stride)
        _load_group(source[2], fields[2], slots[g], g * stride)
        _load_group(source[3], fields[3], slots[g], g * stride)
        _load_group(source[4], fields[4], slots[g], g * stride)
        _load_group(source[5], fields[5], slots[g], g * stride)


@inline
def _load_group(source, group, src, dst):
    """Slot `src` of the arrays `source` into slot `dst` of the arrays `group` (one dtype)."""
    for k in range(len(group)):
        field = group[k]
        rows = source[k]
        for x in range(field.shape[0]):
            field[x, dst] = rows[x, src]


@inline
def _rank(S, i, ranked, terms, costs, centre_w, a, b, v, cm, row, counts, room, at, best, known,
          ids, scores):  # fmt: skip
    """`rank_game` of slot i of the state `S` into ranked[:, 0] (its width: ranked's rows), with
    the heuristic's tables and weights `terms` (`playout.value_terms`); the rest is scratch."""
    cells, colour_bonus, dead, partial_w, endgame_w, _, marker_w, _ = terms
    rank_game(
        S.rules, S.gray, S.wall, S.row_colours, S.col_colours, S.line_colour, cells, colour_bonus,
        dead, partial_w, endgame_w, S.sources, S.marker_in_centre, S.line_count, S.accept, S.floor,
        S.current, i, costs, centre_w, marker_w, ranked, 0,
        a, b, v, cm, row, counts, room, at, best, known, ids, scores,
    )  # fmt: skip


@inline
def _candidates(ranked, first, moves, d):
    """Ply d's moves into moves[d]: `first` (a move searched here before; -1 for none), then the
    distinct moves of the ranked list (`rank_game`, its first repeated where fewer are legal).
    Returns their count and whether the list was full (the node has more moves than it took)."""
    k = 1
    while k < ranked.shape[0] and ranked[k, 0] != ranked[0, 0]:
        k += 1
    put = 0
    if first >= 0:
        moves[d, 0] = first
        put = 1
    for x in range(k):
        if ranked[x, 0] != first and put < ranked.shape[0]:
            moves[d, put] = ranked[x, 0]
            put += 1
    return put, k == ranked.shape[0]


@inline
def _lead_first(moves, d, count, first):
    """Moves of ply d with the heuristic's pick first (already there) and `first` (the table's
    move; -1 for none) second, for a node whose heuristic pick is searched first."""
    at = 1
    while at < count and moves[d, at] != first:
        at += 1
    if at < count:  # found beyond place 1: moved up to it
        for x in range(at, 1, -1):
            moves[d, x] = moves[d, x - 1]
        moves[d, 1] = first


@inline
def _margin(values, root):
    """The root seat's value less the best other seat's."""
    other = -_INF
    for p in range(values.shape[0]):
        if p != root and values[p, 0] > other:
            other = values[p, 0]
    return np.float64(values[root, 0]) - other


@inline
def _mix(h, x):
    """One step of the position key: `h` and the field value `x` mixed (splitmix64's finaliser)."""
    z = (h ^ np.uint64(x)) * _MIX
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@inline
def _position_key(S, i):
    """A 64-bit key of game i's position within a round (a decision reads only the entries
    stamped as its own, so the walls and scores, which change only at a round's end, are left
    out): the factories and centre, every seat's pattern lines and floor, the marker and the seat
    to move."""
    marker = (S.marker_holder[i] + 1) * 2 + (1 if S.marker_in_centre[i] else 0)
    h = _mix(np.uint64(0), S.current[i] + 8 * marker)  # mixed first: a raw h ^ x can cancel
    for s in range(S.sources.shape[0]):
        h = _mix(h, np.int64(S.sources[s, i]))
    for p in range(S.wall.shape[0]):
        lines = np.int64(S.floor[p, i])
        for r in range(5):
            line = np.int64(S.line_count[p, r, i]) * 8 + np.int64(S.line_colour[p, r, i] + 1)
            lines = lines * 64 + line
        h = _mix(h, lines)
    return h


@inline
def _usable(flag, value, low, high):
    """A stored value decides the node within (low, high): exact, or a bound past the window."""
    return flag == EXACT or (flag == LOWER and value >= high) or (flag == UPPER and value <= low)


@inline
def _store(
    tt_key, tt_stamp, tt_depth, tt_value, tt_flag, tt_move, key, stamp, depth, value, flag, move
):
    """Keep a node's result, over an older decision's or a shallower one."""
    e = np.int64(key & np.uint64(tt_key.shape[0] - 1))
    if tt_stamp[e] != stamp or tt_depth[e] <= depth:
        tt_key[e] = key
        tt_stamp[e] = stamp
        tt_depth[e] = depth
        tt_value[e] = value
        tt_flag[e] = flag
        tt_move[e] = move


@numba.njit(cache=True, nogil=True, error_model="numpy")
def search_games(
    S,
    fields,
    stride,
    budget,
    max_depth,
    width,
    root_width,
    rival_width,
    caution,
    tail,
    widenings,
    terms,
    costs,
    centre_w,
    columns,
    tables,
    bot_keys,
    given,
    pending_wall,
    pending_rows,
    partial,
    tt_key,
    tt_stamp,
    tt_depth,
    tt_value,
    tt_flag,
    tt_move,
    stamp,
    out,
    nodes_out,
    depth_out,
):
    """The move of each game g of the scratch state `S` (its position in slot ``g * stride``;
    `fields`: its arrays, `alphabeta.game_fields`) into out[g]; the nodes (picks) searched into
    nodes_out[g], the last completed depth into depth_out[g]. At most `budget` nodes per game
    after the first ply (which is always searched whole), at most `max_depth` plies (``stride -
    1`` or less); `width` candidates per node, `root_width` at the root, `rival_width` (if above
    0) where another seat than the root's moves, that node's value mixed by `caution` (the module
    docstring; 1: the least child's), `width` and `root_width` widened by WIDEN up to
    `widenings` times once the search reaches every round's end; a leaf is played on by
    the heuristic for `tail` picks, its round ended, then valued. `columns`, `tables`,
    `bot_keys` and `given` are the round end's gray-wall column rules (`engine.CompiledColumns`,
    one row); `pending_wall`, `pending_rows`, `partial` are per-slot scratch for the play-outs
    (`playout.LineValues`). ``tt_*`` is the transposition table (a power of two entries), its
    entries of game g's search pass k stamped ``stamp + g * WIDENINGS + k``."""
    players = S.wall.shape[0]
    # scratch of the candidates (`rank_game`) and the play-outs (`play_picks`)
    a, b, v, cm, row, counts, room, at, best_k, known, ids, scores = rank_scratch(
        S.sources.shape[0]
    )
    pv = np.empty((players, 25), np.float32)
    pa = np.empty((players, 25), np.float32)
    pb = np.empty((players, 25), np.float32)
    pcounts = np.empty((players, 5), np.int64)
    every_seat = np.zeros((0, 4), np.int8)
    no_keys = np.zeros(0, np.uint64)
    one = np.empty(1, np.int64)
    values = np.empty((players, 1), np.float32)
    root_ranked = np.empty((root_width + WIDEN * (WIDENINGS - 1), 1), np.int64)
    node_ranked = np.empty((width + WIDEN * (WIDENINGS - 1), 1), np.int64)
    wide = max(node_ranked.shape[0], root_ranked.shape[0])
    # the stack: per ply, its moves, the next to search, its window (and the window it was
    # entered with), its best so far, its key, and whether a leaf below it was cut short
    moves = np.empty((max_depth + 1, wide), np.int64)
    count = np.zeros(max_depth + 1, np.int64)
    index = np.zeros(max_depth + 1, np.int64)
    low = np.empty(max_depth + 1, np.float64)
    high = np.empty(max_depth + 1, np.float64)
    low0 = np.empty(max_depth + 1, np.float64)
    high0 = np.empty(max_depth + 1, np.float64)
    best = np.empty(max_depth + 1, np.float64)
    best_move = np.empty(max_depth + 1, np.int64)
    keys = np.empty(max_depth + 1, np.uint64)
    cut = np.zeros(max_depth + 1, np.bool_)
    lead = np.empty(max_depth + 1, np.float64)
    mixed = np.zeros(max_depth + 1, np.bool_)
    _search_games(
        S, fields, stride, budget, max_depth, width, root_width, rival_width, caution, tail,
        widenings,
        terms, costs, centre_w, columns, tables,
        bot_keys, given, pending_wall, pending_rows, partial, tt_key, tt_stamp, tt_depth,
        tt_value, tt_flag, tt_move, stamp, out, nodes_out, depth_out,
        a, b, v, cm, row, counts, room, at, best_k, known, ids, scores, pv, pa, pb, pcounts,
        every_seat, no_keys, one, values, root_ranked, node_ranked, moves, count, index,
        low, high, low0, high0, best, best_move, keys, cut, lead, mixed,
    )  # fmt: skip


# Without numba's reference counts (as the engine's batch calls, `sim.rules.compiled.jit`): with
# them, every call with the state tuple counted its ~35 arrays up and down again, which took half
# the search's time.
@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _search_games(
    S, fields, stride, budget, max_depth, width, root_width, rival_width, caution, tail,
    widenings,
    terms, costs, centre_w, columns, tables, bot_keys, given,
    pending_wall, pending_rows, partial, tt_key, tt_stamp, tt_depth, tt_value, tt_flag, tt_move,
    stamp, out, nodes_out, depth_out,
    a, b, v, cm, row, counts, room, at, best_k, known, ids, scores, pv, pa, pb, pcounts,
    every_seat, no_keys, one, values, root_ranked, node_ranked, moves, count, index, low, high,
    low0, high0, best, best_move, keys, cut, lead, mixed,
):  # fmt: skip
    """`search_games` with its scratch, allocated by the caller."""
    cells, colour_bonus, dead, partial_w, endgame_w, _, marker_w, _ = terms
    players = S.wall.shape[0]
    gray = S.gray
    end_rows = S.rules[RULE_END_ROWS]
    mask = np.uint64(tt_key.shape[0] - 1)
    mixing = players > 2 and caution < 1.0
    for g in range(out.shape[0]):
        base = g * stride
        root = S.current[base]
        nodes = 0
        depth = 0
        chosen = -1
        for widening in range(widenings + 1):
            w_root = min(root_width + WIDEN * widening, root_ranked.shape[0])
            w_node = min(width + WIDEN * widening, node_ranked.shape[0])
            mark = stamp + g * WIDENINGS + widening
            ranked = root_ranked[:w_root]
            _rank(S, base, ranked, terms, costs, centre_w,
                  a, b, v, cm, row, counts, room, at, best_k, known, ids, scores)  # fmt: skip
            # the last pass's choice first (a wider list holds the narrower); `truncated`: a
            # node had more moves than it searched
            root_count, truncated = _candidates(ranked, chosen, moves, 0)
            pass_choice = moves[0, 0]
            pass_depth = 0
            whole = False
            for limit in range(1, max_depth + 1):
                d = 0
                count[0] = root_count
                index[0] = 0
                low[0] = low0[0] = -_INF
                high[0] = high0[0] = _INF
                best[0] = -_INF
                best_move[0] = moves[0, 0]
                cut[0] = False
                aborted = False
                while True:
                    if index[d] < count[d] and low[d] < high[d]:
                        m = moves[d, index[d]]
                        index[d] += 1
                        c = base + d + 1
                        _copy_game(fields, base + d, c)
                        pick(S, c, m // 30, (m // 6) % 5, m % 6)
                        nodes += 1
                        if limit > 1 and nodes > budget:
                            aborted = True
                            break
                        remaining = limit - (d + 1)
                        over = S.tiles_left[c] == 0
                        key = _position_key(S, c)
                        e = np.int64(key & mask)
                        hit = tt_stamp[e] == mark and tt_key[e] == key
                        if (
                            hit
                            and (over or tt_depth[e] >= remaining)
                            and _usable(tt_flag[e], tt_value[e], low[d], high[d])
                        ):
                            value = tt_value[e]
                            if tt_depth[e] < WHOLE:
                                cut[d] = True
                        elif over or remaining == 0:
                            # A leaf: played on by the heuristic, its round ended, valued.
                            leaf = c  # valued in its slot: the next sibling is copied over it
                            if tail != 0 and not over:
                                for p in range(players):
                                    w = S.wall[p, leaf]
                                    rc = S.row_colours[p, leaf]
                                    if not gray:
                                        w, rc = _pending_wall(
                                            w, rc, S.line_count, S.line_colour, p, leaf
                                        )
                                    pending_wall[p, leaf] = w
                                    pending_rows[p, leaf] = rc
                                ending = _game_ending(S.wall, leaf, end_rows)
                                partial[leaf] = partial_w * (
                                    _ONE - (endgame_w if ending else _ZERO)
                                )
                                one[0] = leaf
                                play_picks(
                                    S, one, tail, pending_wall, pending_rows, partial, cells,
                                    colour_bonus, dead, costs, centre_w, marker_w, pv, pa, pb,
                                    pcounts, best_k, known, room, at, cm, row, every_seat, no_keys,
                                )  # fmt: skip
                            if not S.done[leaf]:
                                end_round(S, leaf, 0, columns, tables, bot_keys, given)
                            game_round_values(S, terms, cm, leaf, values, 0)
                            value = _margin(values, root)
                            if not over:
                                cut[d] = True
                            _store(
                                tt_key, tt_stamp, tt_depth, tt_value, tt_flag, tt_move, key, mark,
                                WHOLE if over else 0, value, EXACT, -1,
                            )  # fmt: skip
                        else:
                            d += 1
                            rival = S.current[c] != root and rival_width > 0
                            ranked = node_ranked[: rival_width if rival else w_node]
                            _rank(S, c, ranked, terms, costs, centre_w, a, b, v, cm, row,
                                  counts, room, at, best_k, known, ids, scores)  # fmt: skip
                            # The stored best move first (it was searched here before), then
                            # the heuristic's order.
                            first = tt_move[e] if hit else -1
                            mixed[d] = mixing and S.current[c] != root
                            if mixed[d]:  # the heuristic's pick first, for its exact value
                                count[d], full = _candidates(ranked, -1, moves, d)
                                _lead_first(moves, d, count[d], first)
                            else:
                                count[d], full = _candidates(ranked, first, moves, d)
                            if full and not rival:
                                truncated = True
                            index[d] = 0
                            low[d] = low0[d] = low[d - 1]
                            high0[d] = high[d - 1]
                            # a mixed node's heuristic pick is searched with no upper bound, for
                            # its exact value (the node is worth at most it: a fail high says
                            # nothing of the node)
                            high[d] = _INF if mixed[d] else high[d - 1]
                            best[d] = -_INF if S.current[c] == root else _INF
                            best_move[d] = moves[d, 0]
                            keys[d] = key
                            cut[d] = False
                            continue
                    else:
                        if d == 0:
                            break
                        value = best[d]
                        if mixed[d]:
                            value = caution * value + (1.0 - caution) * lead[d]
                        flag = EXACT
                        if value <= low0[d]:
                            flag = UPPER
                        elif value >= high0[d]:
                            flag = LOWER
                        _store(
                            tt_key, tt_stamp, tt_depth, tt_value, tt_flag, tt_move, keys[d], mark,
                            limit - d if cut[d] else WHOLE, value, flag, best_move[d],
                        )  # fmt: skip
                        if cut[d]:
                            cut[d - 1] = True
                        d -= 1
                        m = moves[d, index[d] - 1]
                    # The value of move m at ply d: the seat to move there keeps its best.
                    if S.current[base + d] == root:
                        if value > best[d]:
                            best[d] = value
                            best_move[d] = m
                            if value > low[d]:
                                low[d] = value
                    elif mixed[d] and index[d] == 1:
                        # The heuristic's pick, exact above low0 (no upper bound): the least
                        # child is searched within the window the mix c * least + (1 - c) * lead
                        # leaves, below lead; at or below low0 the node fails low.
                        lead[d] = value
                        best[d] = value
                        best_move[d] = m
                        if value <= low0[d] or caution <= 0.0:
                            high[d] = -_INF
                        else:
                            low[d] = (low0[d] - (1.0 - caution) * value) / caution
                            high[d] = min(value, (high0[d] - (1.0 - caution) * value) / caution)
                    elif value < best[d]:
                        best[d] = value
                        best_move[d] = m
                        if value < high[d]:
                            high[d] = value
                if aborted:
                    # The root's best so far starts as the last search's best (searched first) and
                    # changes only for a move searched whole and found better: keep it.
                    pass_choice = best_move[0]
                    break
                pass_choice = best_move[0]
                pass_depth = limit
                # The best move first in the next, deeper search.
                at_best = 0
                while moves[0, at_best] != pass_choice:
                    at_best += 1
                for x in range(at_best, 0, -1):
                    moves[0, x] = moves[0, x - 1]
                moves[0, 0] = pass_choice
                if not cut[0]:  # every leaf was a round's end: deeper finds nothing new
                    whole = True
                    break
            # A wider search replaces the narrower one only once it too reaches every round's
            # end; a wider one is tried while the budget lasts and some node had more moves.
            if widening == 0 or whole:
                chosen = pass_choice
                depth = pass_depth
            if not whole or not truncated or nodes >= budget:
                break

        out[g] = chosen
        nodes_out[g] = nodes
        depth_out[g] = depth
