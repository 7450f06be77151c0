"""The `deep` bot: a Max-N tree search within the round whose strength grows with its budget.

Definition. At each decision, for a budget of ``nodes`` leaves and at most ``width`` children per
node, the tree's shape is fixed by the budget alone (`shape`): level widths ``w1, w2, ...``, each
``min(width, nodes // (w1 * ... ))``, while that is 2 or more: 8 -> 6, 24 -> 6 x 4 (`search`'s
shape), 100 -> 6 x 6 x 2, 1000 -> 6 x 6 x 6 x 4. Level ``l`` is the ``l``-th pick from the
position, whoever makes it (the seats take turns), so a larger budget looks further ahead.

1. **Children**: a node's children are the ``w`` best picks of the seat to move there by the
   `heuristic`'s value (the search bots' candidate lists, `playout.candidates`: distinct factories
   only, the first repeated when fewer are legal). A node whose round is over (no tiles left) has
   copies of itself as children.
2. **Leaves**: every leaf is played on by the heuristic for ``tail`` more picks (every seat,
   `playout.play_out`), then the round is ended as the engine ends it (wall tiling, floor, end
   bonuses if the game ends; nothing dealt), and valued as `rollout` values a position (score,
   bonus potential, incomplete-line credit, marker: `playout.round_values`), plus ``open`` x
   `alphabeta`'s open term (`kernels.open_points`).
3. **Back-up (Max-N)**: the seat to move at a node takes the child where its *margin* (its value
   less the best other seat's) is largest, ties to the better-ranked pick; with two players that
   is minimax. The root plays the pick so chosen.

It reads public information only and draws no random numbers: with ``ms=0`` a decision depends on
the position and the parameters alone, so games replay exactly. ``ms > 0`` makes it *anytime*: it
searches 8 leaves, then the largest budget up to ``nodes`` that the rest of ``ms`` milliseconds of
CPU per position still fits (predicted from the last search's CPU per leaf), again while that is
at least twice the last, each over the whole batch; it plays the last completed search. That
depends on the machine's speed, so such games do not replay: use ``nodes`` for reproducible
experiments, ``ms`` for play at a clock.

The whole batch is searched level by level (numpy over copies; the picks of the play-outs
compiled), in groups of games such that at most `COPIES` leaves exist at once.
"""

from __future__ import annotations

import time

import numpy as np

from ..rules import engine
from .base import Bot, elementwise_columns
from .features import first_max, substate
from .heuristic import PARAMS as HEURISTIC_PARAMS
from .heuristic import HeuristicBot
from .playout import candidates, play_out, ready, round_values
from .registry import Param

PARAMS = (
    Param("nodes", "int", 96, 1, 200000, doc="leaves searched per decision at most (the budget)"),
    Param("width", "int", 6, 2, 12, doc="children per node at most (the tree's breadth)"),
    Param("tail", "int", 3, 0, 40, doc="heuristic picks played at each leaf before it is valued"),
    Param("ms", "float", 0.0, 0, 600000, doc="CPU ms per decision, anytime (0: nodes, exact)"),
    Param(
        "caution",
        "float",
        0.5,
        0,
        1,
        doc="3-4 players: weight of an opponent's best pick (the rest: the heuristic's pick)",
    ),
    Param("open", "float", 0.0, 0, 5, doc="leaf weight of the adjacency waiting on empty cells"),
) + HEURISTIC_PARAMS

COPIES = 65536  # leaves alive at once: a few tens of MB of states
FILL = 0.9  # share of an anytime search's time left that its next search is sized to


def leaves(nodes: int, width: int) -> int:
    """The leaves of the tree of a budget of `nodes` (at most `nodes`; 1 for the heuristic)."""
    return int(np.prod(shape(nodes, width) or (1,)))


def shape(nodes: int, width: int) -> tuple[int, ...]:
    """The level widths of the tree for a budget of `nodes` leaves (module docstring)."""
    widths: list[int] = []
    product = 1
    while True:
        w = min(width, nodes // product)
        if w < 2:
            return tuple(widths)
        widths.append(w)
        product *= w


@elementwise_columns
class DeepBot(Bot):
    cpu_accounted = True  # its CPU per move is in the job's timing (`sim.jobs.play.BotClock`)

    def __init__(
        self,
        nodes: int = 96,
        width: int = 6,
        tail: int = 3,
        ms: float = 0.0,
        caution: float = 0.5,
        open: float = 0.0,
        **heur,
    ):
        self.nodes, self.width, self.tail, self.ms = int(nodes), int(width), int(tail), float(ms)
        self.caution, self.open = float(caution), float(open)
        self.policy = HeuristicBot(**heur)

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        """The heuristic's gray-wall columns, as in the play-outs."""
        return self.policy.choose_columns(st, slots, seat, row, colours, legal)

    def act(self, st, slots, keys=None) -> np.ndarray:
        if self.ms <= 0:
            return self.search(st, slots, shape(self.nodes, self.width))
        return self._anytime(st, slots)

    def _anytime(self, st, slots) -> np.ndarray:
        """Budget 8, then the largest budget the time left still fits, while that is 2x more.

        The fit is predicted from the last search's CPU per leaf, which only falls as searches
        grow (their fixed costs are shared by more leaves), so it errs on the short side; the
        next search then fills what is left. A ladder of fixed steps (x3) played a search of
        about a third of the clock; this plays one of most of it.
        """
        allowed = self.ms / 1000.0 * slots.shape[0]
        t0 = time.process_time()
        budget = min(8, self.nodes)
        out = self.search(st, slots, shape(budget, self.width))
        last = time.process_time() - t0
        while budget < self.nodes:
            left = allowed - (time.process_time() - t0)
            per_leaf = max(last, 1e-9) / leaves(budget, self.width)
            nxt = min(self.nodes, int(FILL * left / per_leaf))
            if nxt < min(self.nodes, 2 * budget):
                break
            t1 = time.process_time()
            out = self.search(st, slots, shape(nxt, self.width))
            budget, last = nxt, time.process_time() - t1
        return out

    def search(self, st, slots: np.ndarray, widths: tuple[int, ...]) -> np.ndarray:
        """The pick of the tree of level `widths` in each game of `slots`."""
        out = np.empty(slots.shape[0], np.int64)
        count = int(np.prod(widths)) if widths else 1
        group = max(1, COPIES // count)
        for lo in range(0, slots.shape[0], group):
            out[lo : lo + group] = self._tree(st, slots[lo : lo + group], widths)
        return out

    def _tree(self, st, slots: np.ndarray, widths: tuple[int, ...]) -> np.ndarray:
        """Max-N over the tree of level `widths` in each game of `slots`.

        Node ``c * w + j`` of a level is pick ``j`` of node ``c`` above it. Only *distinct*
        nodes are played: a pick that repeats the first of its list (fewer legal than ``w``) and
        the copies below a node whose round is over would have the first child's value, and ties
        go to the first, so they are left out (margin −inf) without changing any choice.
        """
        n = slots.shape[0]
        if n == 0:
            return np.empty(0, np.int64)
        if not widths:
            return candidates(self.policy, st, slots, 1)[0]
        level = substate(st, slots)
        ids = np.arange(n)  # the node of each copy of `level`, in its level's numbering
        size = n  # nodes of the level, played or not
        movers: list[np.ndarray] = []  # seat to move at each level's nodes (dense)
        first = None
        for w in widths:
            m = ids.shape[0]
            going = np.flatnonzero(~level.done & (level.tiles_left > 0))
            picks = np.full((w, m), -1, np.int64)
            if going.size:
                picks[:, going] = candidates(self.policy, level, going, w)
            if first is None:
                first = picks
            mover = np.zeros(size, np.intp)
            mover[ids] = level.current
            movers.append(mover)
            keep = np.zeros((w, m), bool)
            keep[0] = True
            keep[1:] = (picks[1:] != picks[0]) & (picks[0] >= 0)
            js, cs = np.nonzero(keep.T)[::-1]  # parent-major: (c, j) in node order
            child = substate(level, cs)
            moves = picks[js, cs]
            played = np.flatnonzero(moves >= 0)
            if played.size:
                engine.play(child, played, moves[played], defer_round_end=True)
            level, ids, size = child, ids[cs] * w + js, size * w
        play_out(self.policy, level, plies=self.tail)
        leaf = round_values(self.policy, level, self.open)  # (P, copies)
        players = leaf.shape[0]
        value = np.zeros((players, size), np.float32)
        value[:, ids] = leaf
        alive = np.zeros(size, bool)
        alive[ids] = True
        root = movers[0]  # the seat deciding, at the n roots
        for w, mover in zip(reversed(widths), reversed(movers), strict=True):
            m = mover.shape[0]
            v = value.reshape(players, m, w)
            cols = np.arange(m)
            own = v[mover, cols, :]  # (m, w)
            others = v.copy()
            others[mover, cols, :] = -np.inf
            margin = own - others.max(axis=0)
            live = alive.reshape(m, w)
            margin[~live] = -np.inf
            best = first_max(margin.T)  # (m,) ties to the better-ranked pick
            value = v[:, cols, best]
            if players > 2 and self.caution < 1:
                # An opponent plays its best pick with weight `caution`, else the heuristic's.
                rival = mover != root[cols // (m // n)]
                mixed = self.caution * value + (1 - self.caution) * v[:, cols, 0]
                value = np.where(rival[None, :], mixed, value)
            alive = live.any(axis=1)
        return first[best, np.arange(n)]


def make_deep(params: dict) -> DeepBot:
    ready()  # compiled now: neither its clock nor the job's CPU per move pays for it
    return DeepBot(**params)


def deep_cost(params: dict) -> float:
    """Time per game relative to greedy, for chunk sizes: about `search`'s per leaf (a leaf is a
    copy played out `tail` picks and valued), with the inner levels' copies on top; an ``ms``
    budget is ~60 decisions of that many ms against greedy's ~0.03 ms per game."""
    if params["ms"] > 0:
        return min(100000.0, 8.0 + 2000.0 * params["ms"])
    n = leaves(params["nodes"], params["width"])
    return 8.0 + 1.5 * n * (2.9 + 0.28 * min(params["tail"], 35))
