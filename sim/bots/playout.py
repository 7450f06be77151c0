"""Heuristic play-outs: every game of a copy played with the `heuristic` to the end of its round.

The search bots (`rollout`, `search`) value a candidate by playing it out on a `features.substate`
copy with every seat playing the heuristic. `play_out` does that for all the copies at once; it
plays exactly the moves ``policy.act`` would, step by step (`heuristic.best_actions`), with less
work:

- **Line values kept.** Within a round the walls do not change. On the gray wall a seat's line
  values do not depend on its pattern lines, so they are computed once per seat and copy. On the
  coloured wall they are those of the wall "as it will be once the full lines are tiled": its masks
  are kept per seat and copy, a line that fills adds its cell, and the values are a table look-up
  from them (`features.pending_line_values`). ``partial_share`` (a wall with a row of 4) is fixed
  for the round too.
- **Centre only.** Late in a round most copies have no factory tiles left; those are valued on
  the centre alone.
- **Blocks** of at most `BLOCK` copies keep the (k, colour, line, copy) arrays in the CPU's cache.

`Remembered` keeps a bot's chosen play-outs for its next decision. Nothing here is random, and each
copy's moves depend only on that copy.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from .. import engine
from ..actions import ACTION_COLOUR
from ..constants import wall_column
from ..tables import ACTION_CAP, ACTION_LINE
from .features import pending_line_values, pending_wall, seat_to_move
from .heuristic import (
    HeuristicBot,
    best_actions,
    factories_empty,
    partial_share,
    seat_line_values,
)

# Copies evaluated together in one step: (4, 5, 5, BLOCK) float32 is 800 kB.
BLOCK = 4096
# Copies without factory tiles are valued apart (centre only) when there are at least this many.
MIN_GROUP = 128
_CELLS = np.arange(25)[:, None]
# The cell and the row-colour bit a pick adds to the pending wall once its line is full.
_WALL_BIT = (np.int32(1) << (5 * ACTION_LINE + wall_column(ACTION_LINE, ACTION_COLOUR))).astype(
    np.int32
)
_ROW_COLOUR_BIT = (np.int32(1) << (5 * ACTION_LINE + ACTION_COLOUR)).astype(np.int32)


class LineValues:
    """The heuristic's line values of every seat of every copy of `tree`, kept current as it plays.

    Gray wall: the values themselves, ``values[p * 25 + 5 * c + r, i]`` = ``V[c, r]`` of seat
    ``p`` in copy ``i``. Coloured wall: the `pending_wall` masks of every seat (a line that fills
    adds its cell), from which a seat's values take one table look-up.
    """

    def __init__(self, policy: HeuristicBot, tree):
        self.policy = policy
        self.gray = tree.gray
        b = tree.batch
        everyone = np.arange(b)
        if self.gray:
            self.values = np.empty((tree.players * 25, b), np.float32)
            for p in range(tree.players):
                seat = np.full(b, p, np.intp)
                value = seat_line_values(policy, tree, seat, everyone)
                self.values[25 * p : 25 * p + 25] = value.reshape(25, b)
        else:
            self.wall = np.empty((tree.players, b), np.int32)
            self.row_colours = np.empty((tree.players, b), np.int32)
            for p in range(tree.players):
                self.wall[p], self.row_colours[p] = pending_wall(
                    tree.wall[p], tree.row_colours[p], tree.line_count[p], tree.line_colour[p]
                )
        self.partial = partial_share(policy, tree, everyone)

    def of(self, seat: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """(5 c, 5 r, n) line values of `seat` in copies `slots`."""
        b = self.partial.shape[0]
        if self.gray:
            at = (seat * 25)[None] + _CELLS
            return self.values.reshape(-1).take(at * b + slots).reshape(5, 5, -1)
        at = seat * b + slots
        wall = self.wall.reshape(-1).take(at)
        row_colours = self.row_colours.reshape(-1).take(at)
        return pending_line_values(wall, row_colours, self.policy.points, self.policy.bonus)

    def played(self, tree, slots: np.ndarray, seat: np.ndarray, actions: np.ndarray) -> None:
        """`seat` played `actions` in `slots`: a line that filled adds its cell (coloured wall)."""
        if self.gray:  # the gray wall's line values do not depend on the pattern lines
            return
        cap = ACTION_CAP.take(actions)
        b = tree.batch
        count = tree.line_count.reshape(-1).take((seat * 5 + ACTION_LINE.take(actions)) * b + slots)
        filled = np.flatnonzero((count == cap) & (cap > 0))
        if filled.size:
            at = seat.take(filled) * b + slots.take(filled)
            done = actions.take(filled)
            self.wall.reshape(-1)[at] |= _WALL_BIT.take(done)
            self.row_colours.reshape(-1)[at] |= _ROW_COLOUR_BIT.take(done)


def heuristic_step(policy: HeuristicBot, tree, slots: np.ndarray, lines: LineValues) -> np.ndarray:
    """``policy.act(tree, slots)``, from the cached line values, in blocks of `BLOCK` copies
    (copies whose factories are empty valued apart: only their centre is left)."""
    out = np.empty(slots.shape[0], np.int64)
    bare = factories_empty(tree, slots)
    if np.count_nonzero(bare) < MIN_GROUP:  # too few to pay for a call of their own
        bare[:] = False
    for part, factories in ((np.flatnonzero(~bare), True), (np.flatnonzero(bare), False)):
        for lo in range(0, part.size, BLOCK):
            at = part[lo : lo + BLOCK]
            group = slots.take(at)
            value = lines.of(seat_to_move(tree, group), group)
            partial = lines.partial.take(group)
            out[at] = best_actions(policy, tree, group, value, partial, factories)
    return out


def play_out(policy: HeuristicBot, tree, columns=None, plies: int | None = None) -> None:
    """Play every running copy of `tree` with the heuristic `policy` until its round's factories
    and centre are empty (or for at most `plies` picks), then end those rounds without a deal.

    `tree` is a copy the caller owns (`features.substate`), changed in place; `columns` is the
    gray wall's column choice for the round end (``engine.end_rounds``). Plays exactly what
    ``policy.act`` step by step would.
    """
    lines = None
    step = 0
    while plies is None or step < plies:
        running = np.flatnonzero(~tree.done & (tree.tiles_left > 0))
        if running.size == 0:
            break
        if lines is None:
            lines = LineValues(policy, tree)
        seat = seat_to_move(tree, running)
        actions = heuristic_step(policy, tree, running, lines)
        engine.play(tree, running, actions, defer_round_end=True)
        lines.played(tree, running, seat, actions)
        step += 1
    waiting = np.flatnonzero(~tree.done)
    if waiting.size:
        engine.end_rounds(tree, waiting, columns if tree.gray else None, deal=False)


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
