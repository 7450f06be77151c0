"""Heuristic play-outs: every game of a copy played with the `heuristic` to the end of its round.

The search bots (`rollout`, `search`) value a candidate by playing it out on a `features.substate`
copy with every seat playing the heuristic. `play_out` does that for all the copies at once; it
plays exactly the moves ``policy.act`` would, step by step, but cheaper:

- **Line values cached.** Within a round the walls do not change, so a seat's line values
  (`heuristic.seat_line_values`) change only on the coloured wall, and only when one of its
  pattern lines fills (the wall "as it will be once the full lines are tiled" gains a tile). They
  are computed once per seat and copy, and again only for the seat and copy whose line just filled
  (the gray wall's do not depend on the lines at all). ``partial_share`` (a wall with a row of 4)
  is fixed for the round too.
- **Blocks.** A step's evaluation works on arrays of (colour, line, k, games); it runs on blocks
  of at most `BLOCK` copies so that they stay in the CPU's cache.

Nothing here is random, and each copy's moves depend only on that copy.
"""

from __future__ import annotations

import numpy as np

from .. import engine
from ..tables import ACTION_CAP, ACTION_LINE
from .features import line_values, per_line, per_seat, seat_to_move
from .heuristic import HeuristicBot, best_actions, partial_share

# Copies evaluated together in one step: (4, 5, 5, BLOCK) float32 is 800 kB.
BLOCK = 2048
_CELLS = np.arange(25)[:, None]


class LineValues:
    """The heuristic's line values of every seat of every copy of `tree`, kept current as it plays.

    ``values[p * 25 + 5 * c + r, i]`` is ``V[c, r]`` of seat ``p`` in copy ``i``.
    """

    def __init__(self, policy: HeuristicBot, tree):
        self.policy = policy
        b = tree.batch
        everyone = np.arange(b)
        self.values = np.empty((tree.players * 25, b), np.float32)
        for p in range(tree.players):
            seat = np.full(b, p, np.intp)
            self.values[25 * p : 25 * p + 25] = self._compute(tree, seat, everyone).reshape(25, b)
        self.partial = partial_share(policy, tree, everyone)

    def _compute(self, tree, seat, slots) -> np.ndarray:
        h = self.policy
        return line_values(
            tree.gray,
            per_seat(tree.wall, seat, slots),
            per_seat(tree.row_colours, seat, slots),
            per_seat(tree.col_colours, seat, slots),
            per_line(tree.line_count, seat, slots),
            per_line(tree.line_colour, seat, slots),
            h.points,
            h.bonus,
            2.0 * h.floor_w,
        )

    def of(self, seat: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """(5 c, 5 r, n) line values of `seat` in copies `slots`."""
        b = self.values.shape[1]
        at = (seat * 25)[None] + _CELLS
        return self.values.reshape(-1).take(at * b + slots).reshape(5, 5, -1)

    def played(self, tree, slots: np.ndarray, seat: np.ndarray, actions: np.ndarray) -> None:
        """`seat` played `actions` in `slots`: recompute the values a filled line changed."""
        if tree.gray:  # the gray wall's line values do not depend on the pattern lines
            return
        line = ACTION_LINE.take(actions)
        count = tree.line_count.reshape(-1).take((seat * 5 + line) * tree.batch + slots)
        filled = (ACTION_CAP.take(actions) > 0) & (count == ACTION_CAP.take(actions))
        if not filled.any():
            return
        seat, slots = seat[filled], slots[filled]
        b = self.values.shape[1]
        at = (seat * 25)[None] + _CELLS
        self.values.reshape(-1)[at * b + slots] = self._compute(tree, seat, slots).reshape(25, -1)


def heuristic_step(policy: HeuristicBot, tree, slots: np.ndarray, lines: LineValues) -> np.ndarray:
    """``policy.act(tree, slots)``, from the cached line values, in blocks of `BLOCK` copies."""
    out = np.empty(slots.shape[0], np.int64)
    for lo in range(0, slots.shape[0], BLOCK):
        part = slots[lo : lo + BLOCK]
        value = lines.of(seat_to_move(tree, part), part)
        out[lo : lo + BLOCK] = best_actions(policy, tree, part, value, lines.partial.take(part))
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
