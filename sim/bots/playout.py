"""Heuristic play-outs: every game of a copy played with the `heuristic` to the end of its round.

The search bots (`rollout`, `search`) value a candidate by playing it out on a `features.substate`
copy with every seat playing the heuristic. `play_out` does that for all the copies at once; it
plays exactly the moves ``policy.act`` would, step by step, with less work:

- **Compiled picks.** `kernels.play_picks` plays each copy's picks to the end of its round
  in one compiled loop (numba): the same float32 numbers as `heuristic.best_actions` and the
  engine's own pick (`sim.rules.compiled.pick`), without a few dozen numpy passes per pick. The
  round ends are the engine's (`engine.end_rounds`, compiled, once per play-out).
- **Line values kept.** Within a round the walls do not change. On the gray wall a seat's line
  values do not depend on its pattern lines, so they are computed once per seat and copy. On the
  coloured wall they are those of the wall "as it will be once the full lines are tiled": its masks
  are kept per seat and copy, a line that fills adds its cell, and the values are a table look-up
  from them (`features.pending_line_values`). ``partial_share`` (`heuristic.game_ending`) is fixed
  for the round too.

`Remembered` keeps a bot's chosen play-outs for its next decision. Nothing here is random, and each
copy's moves depend only on that copy.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from ..rules import compile_once, engine
from ..rules.rulesets import PRINTED_RULES, RuleSet
from ..rules.tables import POP5
from .features import (
    column_keys,
    column_masks,
    end_bonuses,
    flat,
    line_values,
    pending_line_values_at,
    pending_wall,
    row_masks,
)
from .heuristic import HeuristicBot, candidates, compiled_kernels, partial_share
from .heuristic import line_tables as _tables


class LineValues:
    """What the play-out's picks read of the walls, for one round. Gray wall: the walls as they
    stand (a seat's line values do not depend on its pattern lines); coloured wall: the
    `pending_wall` masks of every seat (`wall`, `rows`; a line that fills adds its cell as it is
    played), from which a seat's values take one table look-up. ``partial`` is each copy's
    `partial_share`.
    """

    def __init__(self, policy: HeuristicBot, tree):
        self.gray = tree.gray
        if self.gray:
            self.wall, self.rows = tree.wall, tree.row_colours
        else:
            self.wall = np.empty((tree.players, tree.batch), np.int32)
            self.rows = np.empty((tree.players, tree.batch), np.int32)
            for p in range(tree.players):
                self.wall[p], self.rows[p] = pending_wall(
                    tree.wall[p], tree.row_colours[p], tree.line_count[p], tree.line_colour[p]
                )
        self.partial = partial_share(policy, tree, np.arange(tree.batch))


# sim.bots.kernels once `ready` has run: numba takes about 50 MB and 0.1 s to import, which the
# processes that only validate specs or play other bots should not pay.
kernels = None


def ready() -> None:
    """Compile the kernels (or load them from numba's cache) once per process, one process at a
    time (`compile_once.under_lock`). Called by every function here that runs a kernel; a later
    call is a flag test."""
    global kernels
    if kernels is not None:
        return
    kernels = compiled_kernels()  # set first: the warm-up below calls back into this module
    compile_once.under_lock(_warm)


def _warm() -> None:
    """Every kernel, with the argument types of real calls."""
    policy = HeuristicBot()
    for wall in ("coloured", "gray"):
        ids = np.arange(2)
        st = engine.new_games(2, wall, 0, ids, np.zeros(2, np.int8))
        candidates(policy, st, ids, 2)
        play_out(policy, st.copy())
        round_values(policy, st)


def round_values(policy: HeuristicBot, st, open_w: float = 0.0) -> np.ndarray:
    """(P, B) float32: `rollout`'s value of each seat's position between rounds (the score, and
    while the game goes on the wall's bonus potential, the credit for incomplete lines and the
    marker: `search.RolloutBot` step 3), by `kernels.round_values`; with `open_w`, plus the
    search leaves' open term (`kernels.open_points`)."""
    ready()
    out = np.empty((st.players, st.batch), np.float32)
    kernels.round_values(st.arrays(), value_terms(policy, st.gray, st.rule_set, open_w), out)
    return out


def value_terms(
    policy: HeuristicBot, gray: bool, rule_set: RuleSet = PRINTED_RULES, open_w: float = 0.0
) -> tuple:
    """The round-end value's tables and weights as compiled code takes them
    (`kernels.game_round_values`): the wall variant's line tables (cells, colour bonus, the dead
    end's weight), ``partial`` and ``endgame`` (the incomplete lines' share), ``bonus / 25`` (the
    bonus potential's weight per square), ``marker`` and `open_w`, the weight of the adjacency
    waiting on the walls' empty cells (`kernels.open_points`; the `open` parameter of `alphabeta`
    and `deep`, 0 elsewhere)."""
    cells, colour_bonus, dead = _tables(policy, gray, rule_set)
    return (
        cells,
        colour_bonus,
        dead,
        np.float32(policy.partial),
        np.float32(policy.endgame),
        np.float32(policy.bonus / 25),
        np.float32(policy.marker),
        np.float32(open_w),
    )


_SQUARES = (np.arange(6) ** 2).astype(np.float32)
_CAPF = np.arange(1, 6, dtype=np.float32)[:, None]


def position_values(policy: HeuristicBot, st) -> np.ndarray:
    """(P, B) float32: `round_values` as its definition reads (`search.RolloutBot`, step 3), in
    numpy: each seat's score; while the game goes on, plus ``bonus`` x the wall's bonus potential
    (a row, column or colour group worth the rule set's bonus v holding m of its 5 tiles counts
    ``v * m**2 / 25``), ``p`` x each incomplete line's value by the share of it filled (the
    heuristic's line values and ``partial_share``) and ``marker`` for the seat holding the
    first-player marker. `kernels.round_values` does the same float32 operations, number for
    number (tests/test_playout.py)."""
    b = st.batch
    going = (~st.done).astype(np.float32)
    partial = partial_share(policy, st, np.arange(b))
    row_v, col_v, colour_v = end_bonuses(st.rule_set)
    dead = _tables(policy, st.gray, st.rule_set)[2]
    out = st.scores.astype(np.float32)
    for p in range(st.players):
        wall = st.wall[p]
        row_colours = st.row_colours[p]
        potential = (
            np.float32(row_v) * _SQUARES[POP5[row_masks(wall)]].sum(axis=0)
            + np.float32(col_v) * _SQUARES[POP5[column_masks(wall)]].sum(axis=0)
            + np.float32(colour_v) * _SQUARES[POP5[column_masks(row_colours)]].sum(axis=0)
        ) * np.float32(policy.bonus / 25)
        counts = st.line_count[p]
        colours = st.line_colour[p]
        colour = np.maximum(colours, 0)
        bonuses = (row_v, col_v, colour_v)
        if st.gray:
            value = line_values(
                True, wall, row_colours, st.col_colours[p], counts, colours,
                policy.points, policy.bonus, dead, bonuses,
            )  # fmt: skip
            at = colour.astype(np.intp) * 5 + np.arange(5)[:, None]
            line = flat(value).take(at * b + np.arange(b))  # (5 r, B): V[colour of line r, r]
        else:  # the same numbers, computed for the lines' own colours only
            pending = pending_wall(wall, row_colours, counts, colours)
            line = pending_line_values_at(*pending, colour, policy.points, policy.bonus, bonuses)
        credit = (line * (counts.astype(np.float32) / _CAPF)).sum(axis=0) * partial
        holder = (st.marker_holder == p).astype(np.float32) * np.float32(policy.marker)
        out[p] += going * (potential + credit + holder)
    return out


def play_picks(
    policy: HeuristicBot,
    st,
    slots: np.ndarray,
    plies: int | None = None,
    seat_kind: np.ndarray | None = None,
    bot_keys: np.ndarray | None = None,
) -> LineValues:
    """Play the heuristic `policy`'s picks in the copies `slots` of `st` until their factories and
    centre are empty, or for at most `plies` picks; their rounds are left to end. Returns the line
    values as they stand after the picks. With `seat_kind` (B, P) int8, seat p of game i is the
    compiled bot ``seat_kind[i, p]`` (`kernels.BOT_HEURISTIC`, `compiled.BOT_RANDOM`,
    `BOT_GREEDY`), the last two with bot-stream key ``bot_keys[i]`` (B,)."""
    ready()
    lines = LineValues(policy, st)
    cells, colour_bonus, dead = _tables(policy, st.gray, st.rule_set)
    players = st.players
    scratch = (
        np.empty((players, 25), np.float32),  # line values
        np.empty((players, 25), np.float32),  # credits a, b
        np.empty((players, 25), np.float32),
        np.empty((players, 5), np.int64),  # line counts
        np.empty(kernels.PICKS, np.float32),  # a factory pick's best value, [5 (k - 1) + c]
        np.zeros(kernels.PICKS, np.bool_),
        np.empty(5, np.int64),  # room, table offsets, column masks, a row's values
        np.empty(5, np.int64),
        np.empty(5, np.int64),
        np.empty(5, np.float32),
    )
    kernels.play_picks(
        st.arrays(),
        np.ascontiguousarray(slots, np.int64),
        -1 if plies is None else int(plies),
        lines.wall,
        lines.rows,
        lines.partial,
        cells,
        colour_bonus,
        dead,
        policy.rule_weights(st.rule_set).floor_costs,
        np.float32(policy.centre),
        np.float32(policy.marker),
        *scratch,
        _EVERY_SEAT if seat_kind is None else np.ascontiguousarray(seat_kind, np.int8),
        _NO_KEYS if bot_keys is None else np.ascontiguousarray(bot_keys, np.uint64),
    )
    return lines


_EVERY_SEAT = np.zeros((0, 4), np.int8)  # no line-up: the heuristic plays every seat
_NO_KEYS = np.zeros(0, np.uint64)


def play_out(policy: HeuristicBot, tree, plies: int | None = None) -> None:
    """Play every running copy of `tree` with the heuristic `policy` until its round's factories
    and centre are empty (or for at most `plies` picks), then end those rounds without a deal,
    with the heuristic's gray-wall columns.

    `tree` is a copy the caller owns (`features.substate`), changed in place. Plays exactly what
    ``policy.act`` step by step, then ``engine.end_rounds(tree, waiting, policy.choose_columns,
    deal=False)`` would.
    """
    ready()
    running = np.flatnonzero(~tree.done & (tree.tiles_left > 0))
    if running.size:
        play_picks(policy, tree, running, plies)
    waiting = np.flatnonzero(~tree.done)
    if waiting.size:
        engine.end_rounds(tree, waiting, heuristic_columns(policy, tree.rule_set), deal=False)


def heuristic_columns(policy: HeuristicBot, rule_set: RuleSet = PRINTED_RULES):
    """`policy`'s gray-wall column choice for `engine.end_rounds` in a game of `rule_set`,
    compiled: every seat by the highest of its `features.column_keys` (`features.best_columns`)."""
    keys = column_keys(float(policy.bonus), end_bonuses(rule_set))
    return engine.CompiledColumns.of_table(keys)


def play_games_out(policy: HeuristicBot, st) -> None:
    """Every game of `st` played to its end with `policy` in every seat (`sim.jobs.self_play`): its
    play-outs round after round (its picks to the round's end, then its round end), each followed
    by the next deal."""
    while True:
        play_out(policy, st)
        going = np.flatnonzero(~st.done)
        if going.size == 0:
            return
        engine.start_rounds(st, going)


def play_line_up(policy: HeuristicBot, st, seat_kind: np.ndarray, bot_keys: np.ndarray, columns):
    """Every game of `st` played to its end by a line-up of `policy` and compiled bots: seat p of
    game i is ``seat_kind[i, p]`` (`play_picks`), with bot-stream key ``bot_keys[i]``; `columns`
    (`engine.CompiledColumns`) are the seats' gray-wall columns. Round after round: the picks to
    the round's end, then the round end and the next deal (`sim.jobs.self_play`)."""
    ready()
    while True:
        running = np.flatnonzero(~st.done & (st.tiles_left > 0))
        if running.size:
            play_picks(policy, st, running, None, seat_kind, bot_keys)
        waiting = np.flatnonzero(~st.done)
        if waiting.size:
            engine.end_rounds(st, waiting, columns, deal=False)
        going = np.flatnonzero(~st.done)
        if going.size == 0:
            return
        engine.start_rounds(st, going)


class Remembered:
    """The play-outs a search bot chose at its last decision, for its next one.

    The bot plays a candidate, the game goes on, and its next decision in that game (its own, or
    the next seat's when it plays every seat) often starts from exactly the position its chosen
    candidate led to. Its first candidate there is the heuristic's pick, whose play-out is the
    rest of the play-out it already did: the same picks, the same round end, the same values. A
    position is known when every field of the state is equal to the one remembered, so a value
    is reused only where a new play-out would compute it again, number for number.
    """

    def __init__(self):
        self.slots = None  # (g,) the slots of the games remembered, in the batch of `batch`
        self.batch = -1
        self.states = None  # a BatchState of the g positions, after the chosen candidate
        self.values = None  # (P, g) float32: each seat's round-end value of its play-out

    def keep(self, st, slots: np.ndarray, states, values: np.ndarray) -> None:
        self.slots, self.batch, self.states, self.values = slots, st.batch, states, values

    def recall(self, st, slots: np.ndarray):
        """(known, values): games of `slots` whose position is remembered, (P, n) their values."""
        n = slots.shape[0]
        known = np.zeros(n, bool)
        values = np.zeros((st.players, n), np.float32)
        memo = self.states
        if memo is None or self.batch != st.batch:
            return known, values
        arrays = []
        for f in fields(st):
            now = getattr(st, f.name)
            if isinstance(now, np.ndarray):
                arrays.append(f.name)
            elif now != getattr(memo, f.name):
                return known, values
        at = np.full(st.batch, -1, np.intp)
        at[self.slots] = np.arange(self.slots.size)
        mine = at.take(slots)
        where = np.flatnonzero(mine >= 0)
        if where.size == 0:
            return known, values
        mine = mine.take(where)
        here = slots.take(where)
        same = np.ones(where.size, bool)
        for name in arrays:
            then = np.take(getattr(memo, name), mine, axis=-1)
            now = np.take(getattr(st, name), here, axis=-1)
            same &= (now == then).reshape(-1, where.size).all(axis=0)
        known[where[same]] = True
        values[:, where[same]] = self.values[:, mine[same]]
        return known, values


def concat_states(a, b):
    """The games of `a`, then those of `b` (states of the same kind), as one state."""
    out = {}
    for f in fields(a):
        x = getattr(a, f.name)
        out[f.name] = (
            np.concatenate([x, getattr(b, f.name)], axis=-1) if isinstance(x, np.ndarray) else x
        )
    return type(a)(**out)
