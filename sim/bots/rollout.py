"""The `rollout` search bot: the heuristic's best picks, each played out to the end of the round.

Definition. At each decision:

1. Candidates: the ``width`` (source, colour) picks the `heuristic` values highest, each with the
   heuristic's destination for it (fewer when fewer picks are legal; ties in heuristic order).
2. Each candidate is played on a copy of the game, then every seat -- this bot included -- plays the
   `heuristic` (same weights) until the factories and the centre are empty; the round's wall
   tiling, floor penalties and, if the game ends, end bonuses are applied as the engine does
   (RULES §6, §8), and no tiles are dealt. Nothing in a round is random, so this is exact for
   opponents that play the heuristic.
3. Each seat's position is then valued: its score; plus, while the game goes on, the bonus
   potential of its wall (a row, column or colour group worth v holding m of its 5 tiles counts
   ``bonus * v * m**2 / 25``), the heuristic's credit for its incomplete pattern lines, and
   ``marker`` for the seat that took the first-player marker (it starts the next round).
4. The candidate with the highest ``own value - best opponent value`` is played (ties: the
   heuristic's order). Gray-wall columns are the heuristic's.

Uses no random numbers. Cost: about ``width`` times the rest of the round in heuristic moves per
decision. The copies are `features.substate` copies; the real state is never touched. The play-outs
are `playout.play_out` (shared with `search`); a candidate that repeats the first, or a game with a
single candidate, is not played out, and the first candidate's play-out is taken from the last
decision's chosen one where the game stands exactly where that play-out went (`Remembered`).
"""

from __future__ import annotations

import numpy as np

from ..rules import engine
from .base import Bot, compiled_columns, elementwise_columns
from .features import column_keys, end_bonuses, first_max, substate
from .heuristic import PARAMS as HEURISTIC_PARAMS
from .heuristic import HeuristicBot
from .playout import Remembered, candidates, concat_states, play_out, round_values
from .registry import Param

PARAMS = (
    Param("width", "int", 4, 1, 12, doc="candidate picks played out per decision"),
) + HEURISTIC_PARAMS


@elementwise_columns
@compiled_columns(lambda bot, rule_set: column_keys(float(bot.policy.bonus), end_bonuses(rule_set)))
class RolloutBot(Bot):
    def __init__(self, width: int = 4, **heuristic):
        self.width = int(width)
        self.policy = HeuristicBot(**heuristic)
        self._remembered = Remembered()

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        """The heuristic's gray-wall columns (step 4), as in the play-outs."""
        return self.policy.choose_columns(st, slots, seat, row, colours, legal)

    def candidates(self, st, slots: np.ndarray) -> np.ndarray:
        """(width, n) candidate actions, best first; missing ones repeat the best."""
        return candidates(self.policy, st, slots, self.width)

    def act(self, st, slots, keys=None) -> np.ndarray:
        n = slots.shape[0]
        cand = self.candidates(st, slots)
        if self.width == 1 or n == 0:
            return cand[0]
        # A short list repeats its first pick: a repeat can never win (ties go to the earlier
        # candidate), and a game with one distinct candidate needs no play-out at all.
        distinct = np.ones(cand.shape, bool)
        distinct[1:] = cand[1:] != cand[0]
        open_ = distinct[1:].any(axis=0)
        # The heuristic's pick from a position the last decision's chosen play-out went through
        # has that play-out's values (`Remembered`).
        known, known_values = self._remembered.recall(st, slots)
        play = distinct & open_
        play[0] &= ~known
        js, gs = np.nonzero(play)
        sub = substate(st, slots[gs])
        copies = np.arange(gs.size)
        engine.play(sub, copies, cand[js, gs], defer_round_end=True)
        after = sub.copy()
        play_out(self.policy, sub)
        value = self.position_values(sub)  # (P, copies)
        margin = np.full(cand.shape, -np.inf, np.float32)
        margin[js, gs] = _margins(value, st.current[slots[gs]])
        reused = np.flatnonzero(known & open_)
        margin[0, reused] = _margins(known_values[:, reused], st.current[slots[reused]])
        best = first_max(margin)
        self._remember(st, slots, cand[0], best, play, js, gs, after, value, known, known_values)
        return cand[best, np.arange(n)]

    def _remember(self, st, slots, first, best, play, js, gs, after, value, known, known_values):
        """Keep the chosen candidates' positions and play-out values for the next decision."""
        n = slots.shape[0]
        copy_of = np.full(play.shape, -1, np.intp)
        copy_of[js, gs] = np.arange(gs.size)
        chosen = copy_of[best, np.arange(n)]
        played = np.flatnonzero(chosen >= 0)
        # Chosen without a play-out here: the heuristic's pick, valued from the last decision.
        again = np.flatnonzero((chosen < 0) & known & (best == 0))
        states = substate(after, chosen.take(played))
        values = value[:, chosen.take(played)]
        if again.size:
            moved = substate(st, slots.take(again))
            engine.play(moved, np.arange(again.size), first.take(again), defer_round_end=True)
            states = concat_states(states, moved)
            values = np.concatenate([values, known_values[:, again]], axis=1)
        kept = np.concatenate([played, again])
        self._remembered.keep(st, slots.take(kept), states, values)

    def position_values(self, st) -> np.ndarray:
        """(P, B) float32: each seat's value of a position between rounds (docstring, step 3)."""
        return round_values(self.policy, st)


def _margins(value: np.ndarray, me: np.ndarray) -> np.ndarray:
    """(g,) float32: seat `me`'s value less the best other seat's, in each column of `value`."""
    cols = np.arange(value.shape[1])
    own = value[me.astype(np.intp), cols]
    others = value.copy()
    others[me.astype(np.intp), cols] = -np.inf
    return own - others.max(axis=0)


def make_rollout(params: dict) -> RolloutBot:
    return RolloutBot(**params)
