"""The `search` bot: a two-ply Max-N search within the round, batched over games.

Definition. At each decision of seat ``me``:

1. **My candidates**: the ``width`` best picks by the `heuristic`'s value (`rollout`'s candidate
   list: distinct factories only, fewer when fewer picks are legal).
2. **Replies**: each candidate is played on a copy of the game. If the round goes on, the seat to
   move next (``q``) answers with each of its ``replies`` best picks by the heuristic, each on its
   own copy.
3. **Play-out**: on every copy, every seat plays the heuristic (same weights, `playout.play_out`)
   until ``me`` has made ``depth`` more picks after its candidate -- ``depth * P - 1`` picks after
   the reply, 3 with two players at the default -- stopping earlier when the factories and the
   centre are empty. Then the round is ended as the engine does (wall tiling, floor penalties, end
   bonuses if the game ends; no tiles are dealt), so a copy stopped with tiles still out is scored
   as if the round ended there.
4. **Values**: each seat's value of a copy is `rollout`'s round-end value (score, bonus potential of
   the wall, credit for incomplete lines, the marker), and its *margin* is its value less the best
   other seat's.
5. **Max-N back-up**: ``q`` is taken to play the reply with the highest margin for ``q``; each
   candidate is worth ``me``'s margin after that reply (after the candidate itself when it ends the
   round); with 3-4 players, ``caution`` times that plus ``1 - caution`` times its margin after
   the heuristic's reply. ``me`` plays the candidate worth the most; ties go to the heuristic's
   order.

Chance: the search never deals. Within a round nothing is random, and it stops at the round's end,
where the next deal would be drawn; the round-end value stands in for the future. It reads only
public information (no bag order, no deal stream). It uses no random numbers, so its decisions
depend only on the position and its parameters.

With two players the search is minimax, and most of the tree is skipped by exact bounds
(`SearchBot._search_two`): the same choice as the whole tree from about width + replies copies per
decision instead of width * replies.

Cost per decision: at most ``width * replies`` copies, each played ``min(depth * P, rest of the
round)`` heuristic picks, plus one round end and one valuation per copy and a candidate list per
expanded candidate. Games are searched in groups (`GROUP`, `COPIES`) so the copies of a large batch
stay within a few hundred MB.
"""

from __future__ import annotations

import numpy as np

from ..rules import engine
from .base import compiled_columns
from .features import column_keys, end_bonuses, first_max, substate
from .heuristic import PARAMS as HEURISTIC_PARAMS
from .playout import play_out
from .registry import Param
from .rollout import RolloutBot

PARAMS = (
    # The bounds keep a chunk of the fewest games the service plans (200) under a minute or so.
    Param("width", "int", 6, 1, 12, doc="candidate picks of the seat to move"),
    Param("replies", "int", 4, 1, 8, doc="replies of the next seat searched per candidate"),
    # A play-out ends right after the searching seat's depth-th pick after its candidate: depth * P
    # - 1 picks after the reply. In the printed game 10 always reaches the round's end (20 / 28 /
    # 36 tiles for 2 / 3 / 4 seats: at most 19 / 27 / 35 picks after the candidate); a rule set
    # dealing more tiles (up to 64) may leave a round unfinished there, valued where it stops.
    Param(
        "depth",
        "int",
        2,
        0,
        10,
        doc="own picks of the seat to move in each play-out (it ends right after the last one)",
    ),
    Param(
        "caution",
        "float",
        0.5,
        0,
        1,
        doc="3-4 players: weight of the next seat's best reply (the rest: the heuristic's reply)",
    ),
) + HEURISTIC_PARAMS

# Games searched together: at most GROUP, and at most COPIES / (width * replies) (the copies live
# at once with 3-4 players; fewer with 2), so a large budget stays within a few hundred MB. Fewer
# games per group would cost more: a batch's fixed cost is as large as its copies' here.
GROUP = 2048
COPIES = 2048 * 24


@compiled_columns(lambda bot, rule_set: column_keys(float(bot.policy.bonus), end_bonuses(rule_set)))
class SearchBot:
    def __init__(
        self, width: int = 6, replies: int = 4, depth: int = 2, caution: float = 0.5, **heuristic
    ):
        self.caution = float(caution)
        self.width = int(width)
        self.replies = int(replies)
        self.depth = int(depth)
        self.mine = RolloutBot(width=self.width, **heuristic)  # candidates, round-end values
        self.theirs = RolloutBot(width=self.replies, **heuristic)
        self.policy = self.mine.policy

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        return self.policy.choose_columns(st, slots, seat, row, colours, legal)

    def act(self, st, slots, keys=None) -> np.ndarray:
        out = np.empty(slots.shape[0], np.int64)
        plies = max(self.depth * st.players - 1, 0)  # after the reply: `depth` picks of ours
        search = self._search_two if st.players == 2 else self._search
        group = max(1, min(GROUP, COPIES // (self.width * self.replies)))
        for lo in range(0, slots.shape[0], group):
            out[lo : lo + group] = search(st, slots[lo : lo + group], plies)
        return out

    def _play_out(self, tree, depth: int) -> np.ndarray:
        """Heuristic picks for at most `depth` plies, then the round's end: (P, copies) values."""
        play_out(self.policy, tree, plies=depth)  # tiles where depth stops
        return self.mine.position_values(tree)

    def _search_two(self, st, slots: np.ndarray, plies: int) -> np.ndarray:
        """Two players: the same choice as `_search`, with fewer copies.

        With two seats the reply seat's margin is minus ours, so Max-N is minimax and a
        candidate's value after the heuristic's reply alone (reply 0) bounds its value from above.
        The candidate with the best bound is expanded to all its replies first; then every other
        candidate whose bound could still beat that value (ties: the earlier candidate wins, as in
        `_search`) is expanded, all in one batch; the rest cannot win and are skipped. (Expanding
        candidate by candidate would skip a few more copies but costs a batch per step, and the
        fixed cost of a batch is as large as its copies' here.)
        """
        n = slots.shape[0]
        k1, k2 = self.width, self.replies
        cand = self.mine.candidates(st, slots)  # (k1, n)
        if n == 0 or k1 == 1:
            return cand[0]
        # The list repeats its first pick when short: a repeat can never win, and a game with one
        # distinct candidate needs no search at all.
        distinct = np.ones((k1, n), bool)
        distinct[1:] = cand[1:] != cand[0]
        open_ = np.flatnonzero(distinct[1:].any(axis=0))
        out = cand[0].copy()
        if open_.size == 0:
            return out
        cand, distinct, slots = cand[:, open_], distinct[:, open_], slots[open_]
        n = open_.size
        cols = np.arange(n)
        me = st.current[slots].astype(np.intp)
        # Reply 0 to every distinct candidate: the heuristic's pick, so plies + 1 heuristic plies.
        js, gs = np.nonzero(distinct)
        first = substate(st, slots[gs])
        engine.play(first, np.arange(gs.size), cand[js, gs], defer_round_end=True)
        value = self._play_out(first, plies + 1)
        bound = np.full((k1, n), -np.inf, np.float32)
        bound[js, gs] = _margins(value[:, None], me[gs], np.arange(gs.size))[0]
        top = first_max(bound)  # the best bound, ties to the earlier candidate
        if k2 == 1:
            out[open_] = cand[top, cols]
            return out
        exact = np.full((k1, n), -np.inf, np.float32)  # -inf: skipped, it cannot win
        best = np.minimum(bound[top, cols], self._other_replies(st, slots, cand[top, cols], plies))
        exact[top, cols] = best
        j = np.arange(k1)[:, None]
        rival = distinct & (j != top) & ((bound > best) | ((bound == best) & (j < top)))
        jr, gr = np.nonzero(rival)
        if jr.size:
            others = self._other_replies(st, slots[gr], cand[jr, gr], plies)
            exact[jr, gr] = np.minimum(bound[jr, gr], others)
        out[open_] = cand[first_max(exact), cols]
        return out

    def _other_replies(self, st, slots: np.ndarray, moves: np.ndarray, plies: int) -> np.ndarray:
        """(g,) our worst margin over replies 1..k2-1 to `moves` (inf where there are none)."""
        g = slots.shape[0]
        worst = np.full(g, np.inf, np.float32)
        first = substate(st, slots)
        engine.play(first, np.arange(g), moves, defer_round_end=True)
        going = np.flatnonzero(first.tiles_left > 0)
        if going.size == 0:
            return worst
        replies = self.theirs.candidates(first, going)  # (k2, len(going))
        r, c = np.nonzero(replies[1:] != replies[0])  # distinct replies after the first
        if r.size == 0:
            return worst
        parent = going[c]
        tree = substate(first, parent)
        engine.play(tree, np.arange(parent.size), replies[1 + r, c], defer_round_end=True)
        value = self._play_out(tree, plies)
        me = st.current[slots[parent]].astype(np.intp)
        margin = _margins(value[:, None], me, np.arange(parent.size))[0]
        np.minimum.at(worst, parent, margin.astype(np.float32))
        return worst

    def _search(self, st, slots: np.ndarray, plies: int) -> np.ndarray:
        n = slots.shape[0]
        k1, k2 = self.width, self.replies
        cand = self.mine.candidates(st, slots)  # (k1, n)
        if n == 0 or k1 == 1:
            return cand[0]
        m1 = k1 * n
        first = substate(st, np.tile(slots, k1))  # copy j * n + i: candidate j of game i
        engine.play(first, np.arange(m1), cand.reshape(-1), defer_round_end=True)
        going = np.flatnonzero(first.tiles_left > 0)
        reply_seat = first.current.astype(np.intp)  # (m1,) the seat that replies
        replies = np.full((k2, m1), -1, np.int64)
        if going.size:
            replies[:, going] = self.theirs.candidates(first, going)
        # Copy r * m1 + c: reply r to copy c. Copies whose round ended get no reply (all equal).
        tree = substate(first, np.tile(np.arange(m1), k2))
        flat = replies.reshape(-1)
        answered = np.flatnonzero(flat >= 0)
        if answered.size:
            engine.play(tree, answered, flat[answered], defer_round_end=True)
        value = self._play_out(tree, plies).reshape(st.players, k2, m1)
        copies = np.arange(m1)
        theirs = _margins(value, reply_seat, copies)  # (k2, m1)
        chosen = first_max(theirs)  # the reply the next seat prefers
        me = np.tile(st.current[slots].astype(np.intp), k1)
        margins = _margins(value, me, copies)
        mine = margins[chosen, copies]
        if st.players > 2 and self.caution < 1:
            mine = self.caution * mine + (1 - self.caution) * margins[0]
        return cand[first_max(mine.reshape(k1, n)), np.arange(n)]


def _margins(value: np.ndarray, seat: np.ndarray, copies: np.ndarray) -> np.ndarray:
    """(k2, m) margin of `seat[c]` in copy c: its value less the best other seat's value."""
    own = value[seat, :, copies].T  # (k2, m)
    others = value.copy()
    others[seat, :, copies] = -np.inf
    return own - others.max(axis=0)


def make_search(params: dict) -> SearchBot:
    return SearchBot(**params)


def search_cost(params: dict) -> float:
    """Time per game relative to greedy, an upper bound over 2-4 players.

    Four players cost the most: ``width * replies`` copies, each of a candidate, a reply and
    ``4 * depth - 1`` play-out picks (at most 35: a round has 36 tiles; fewer are left on
    average, hence the small weight per pick). Fitted about 30 % above the 4-player measurements
    of ``python bench/search.py --cost-grid`` (bench/results/search.json, its ``cost_grid``: the
    default 69 x greedy with 4 players, 64 with 3, 43 with 2; declared 93), for the noise of a
    shared machine; tests/test_search_bot.py checks the declaration against them.
    """
    copies = params["width"] * params["replies"]
    plies = min(max(4 * params["depth"] - 1, 0), 35)
    return 8.0 + 0.6 * params["width"] + copies * (2.9 + 0.07 * plies)
