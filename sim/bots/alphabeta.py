"""The `alphabeta` bot: compiled alpha-beta within the round, deepened while its budget lasts.

Definition. At each decision, from the position to decide:

1. **Moves**: a node's moves are the ``width`` best picks of the seat to move by the `heuristic`'s
   value (the search bots' candidate lists, `playout.candidates`); at the root ``root_width``,
   and ``rival`` (if above 0) where another seat than the deciding one moves.
2. **Leaves**: a position at the search's depth, or one whose factories and centre are empty, is
   played on by the heuristic for ``tail`` more picks, its round ended as the engine ends it (no
   deal), and valued as `rollout` values a position (`playout.round_values`). Its value is the
   deciding seat's margin: its value less the best other seat's.
3. **Search**: alpha-beta over that margin (the deciding seat maximises it, every other seat
   minimises it: minimax with two players; with more, another seat's node is worth ``caution``
   x its least child plus (1 - ``caution``) x its heuristic pick's, as `deep` mixes a rival's
   best and heuristic picks, and ``caution=1`` is the paranoid reduction), the moves in the
   heuristic's order, deepened one ply at a time with the last best root move first, until
   ``nodes`` picks have been searched, ``depth`` plies are reached or every leaf is a round's end.
   The move of the deepest completed search is played; a search the budget cut short counts only
   for a root move it searched whole and found better.
4. **Widening**: a search that reaches every round's end with budget left is searched again 4
   moves wider at every node, up to ``widen`` times; a wider search replaces the narrower one only
   once it too reaches every round's end.

With ``ms=0`` a decision depends on the position and the parameters alone (no random numbers,
no clock), so games replay exactly. ``ms > 0`` gives each decision a budget of nodes: the clock
times the nodes per CPU ms this process has measured for the bot, times a stretch kept so that
decisions spend about ``ms`` on average (`AlphaBetaBot.act`), at most ``nodes``: games then
depend on the machine's speed and do not replay; use ``nodes`` for reproducible experiments.

The search itself is `sim.bots.alphabeta_kernel`, compiled: each game of a call on its own
slots of one scratch copy of the batch.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import fields

import numpy as np

from ..rules import compile_once
from ..rules.rulesets import RuleSet
from .base import Bot, compiled_columns, elementwise_columns
from .features import column_keys, end_bonuses
from .heuristic import PARAMS as HEURISTIC_PARAMS
from .heuristic import HeuristicBot, compiled_kernels
from .playout import value_terms
from .registry import Param

PARAMS = (
    Param("nodes", "int", 2000, 1, 10_000_000, doc="picks searched per decision at most (budget)"),
    Param("ms", "float", 0.0, 0, 600000, doc="CPU ms per decision (0: by nodes, exact)"),
    Param("width", "int", 12, 1, 30, doc="moves searched per node (the heuristic's best)"),
    Param("root_width", "int", 16, 1, 60, doc="moves searched at the root"),
    Param("rival", "int", 0, 0, 30, doc="moves searched where another seat moves (0: width)"),
    Param("depth", "int", 40, 1, 120, doc="plies searched at most"),
    Param("tail", "int", 3, 0, 40, doc="heuristic picks played at each leaf before it is valued"),
    Param(
        "widen", "int", 5, 0, 5, doc="times the search is widened by 4 once it sees the round out"
    ),
    Param("open", "float", 2.0, 0, 5, doc="leaf weight of the adjacency waiting on empty cells"),
    Param(
        "caution",
        "float",
        0.5,
        0,
        1,
        doc="3-4 players: weight of a rival's worst-for-us pick (the rest: the heuristic's pick)",
    ),
) + HEURISTIC_PARAMS

_FIRST_RATE = 200.0  # nodes per CPU ms assumed before this process has measured its own
STRETCH = 10.0  # the most a clocked decision's budget grows by the clock left unspent
TABLE_SIZE = 1 << 18  # transposition-table entries (about 10 MB); a power of two


def _table(size: int) -> tuple:
    """An empty transposition table: key, decision stamp (-1: empty), depth, value, bound, move."""
    return (
        np.zeros(size, np.uint64),
        np.full(size, -1, np.int64),
        np.zeros(size, np.int64),
        np.zeros(size, np.float64),
        np.zeros(size, np.int8),
        np.full(size, -1, np.int64),
    )


_DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint64)
_GROUP = {np.dtype(t): k for k, t in enumerate(_DTYPES)}


def game_fields(st) -> tuple:
    """Every per-game array of `st` as a (rows, batch) view, grouped by dtype (`_DTYPES`, each
    group a tuple), so compiled code copies a game from slot to slot by a loop over each group."""
    groups = [[] for _ in _DTYPES]
    for f in fields(st):
        v = getattr(st, f.name)
        if isinstance(v, np.ndarray):
            view = v.reshape(-1, st.batch)
            assert np.shares_memory(view, v), f.name  # a copy would take no copies of games
            groups[_GROUP[v.dtype]].append(view)
    return tuple(tuple(g) for g in groups)


class _Search:
    """What a process keeps between its `alphabeta` bots (a job makes one per chunk): the
    transposition table, the decisions' stamp (each decision's entries carry its own, so no
    decision reads another's) and, per clocked bot, its measured clock."""

    table: tuple | None = None
    stamp = 0
    clocks: dict = {}


class _Clock:
    """A clocked bot's CPU ms spent so far, the nodes searched in them, and its stretch."""

    def __init__(self):
        self.spent = self.searched = 0.0
        self.stretch = 1.0  # the budget's multiple of the clock at the measured rate


def _columns_of(bot, rule_set: RuleSet):
    return column_keys(float(bot.policy.bonus), end_bonuses(rule_set))


@compiled_columns(_columns_of)
@elementwise_columns
class AlphaBetaBot(Bot):
    cpu_accounted = True  # its CPU per move is in the job's timing (`sim.jobs.play.BotClock`)

    def __init__(
        self,
        nodes: int = 2000,
        ms: float = 0.0,
        width: int = 12,
        root_width: int = 16,
        rival: int = 0,
        depth: int = 40,
        tail: int = 3,
        widen: int = 5,
        open: float = 2.0,
        caution: float = 0.5,
        **heur,
    ):
        self.nodes, self.ms = int(nodes), float(ms)
        self.width, self.root_width, self.rival = int(width), int(root_width), int(rival)
        self.depth, self.tail, self.widen = int(depth), int(tail), int(widen)
        self.open, self.caution = float(open), float(caution)
        self.policy = HeuristicBot(**heur)
        self.key = (self.nodes, self.ms, self.width, self.root_width, self.rival, self.depth,
                    self.tail, self.widen, self.open, self.caution,
                    tuple(sorted(heur.items())))  # fmt: skip
        self.last_nodes = np.zeros(0, np.int64)  # the last call's nodes and depths, per game
        self.last_depth = np.zeros(0, np.int64)
        self._columns: dict = {}  # rule set -> the table of the leaves' gray-wall columns

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        """The heuristic's gray-wall columns, as in the leaves' round ends."""
        return self.policy.choose_columns(st, slots, seat, row, colours, legal)

    def act(self, st, slots, keys=None) -> np.ndarray:
        slots = np.asarray(slots, np.int64)
        if self.ms <= 0:
            return self.search(st, slots, self.nodes)
        clock = _Search.clocks.setdefault((self.key, st.players), _Clock())
        rate = clock.searched / clock.spent if clock.searched > 0 else _FIRST_RATE
        budget = int(min(self.nodes, max(1.0, self.ms * rate * clock.stretch)))
        t0 = time.process_time()
        out = self.search(st, slots, budget)
        spent = (time.process_time() - t0) * 1000.0
        clock.spent += spent
        clock.searched += float(self.last_nodes.sum())
        # Searches that reach every round's end spend less than their budget, so the budget
        # grows while decisions spend less than their clock and shrinks while they spend more
        # (at most a tenth a call): on average a decision then spends about its `ms`.
        given = self.ms * slots.shape[0]
        step = min(1.1, max(0.9, (given / max(spent, 1e-6)) ** 0.5))
        clock.stretch = min(STRETCH, max(1.0, clock.stretch * step))
        return out

    def search(self, st, slots: np.ndarray, budget: int) -> np.ndarray:
        """The move of each game of `slots` by a search of at most `budget` nodes."""
        from . import alphabeta_kernel

        ready()
        n = slots.shape[0]
        # a ply takes at least one tile, so no search is deeper than the tiles on the table
        depth = max(1, min(self.depth, int(st.tiles_left[slots].max(initial=1))))
        stride = depth + 1
        scratch = _Scratch.of(st, n * stride)
        alphabeta_kernel.load_games(_fields_of(st), slots, scratch.fields, stride)
        policy = self.policy
        columns = self._columns.get(st.rule_set)
        if columns is None:
            tables = np.ascontiguousarray(_columns_of(self, st.rule_set), np.int16)[None]
            columns = self._columns[st.rule_set] = tables
        out = np.empty(n, np.int64)
        self.last_nodes = np.empty(n, np.int64)
        self.last_depth = np.empty(n, np.int64)
        if _Search.table is None:
            _Search.table = _table(TABLE_SIZE)
        alphabeta_kernel.search_games(
            scratch.arrays,
            scratch.fields,
            stride,
            int(budget),
            depth,
            max(1, self.width),
            max(1, self.root_width),
            min(self.rival, max(1, self.width)),
            self.caution,
            self.tail,
            min(self.widen, alphabeta_kernel.WIDENINGS - 1),
            value_terms(policy, st.gray, st.rule_set, self.open),
            policy.rule_weights(st.rule_set).floor_costs,
            np.float32(policy.centre),
            scratch.column_rules,  # every seat: row 0 of `columns`
            columns,
            _NO_KEYS,
            _NO_GIVEN,
            scratch.pending_wall,
            scratch.pending_rows,
            scratch.partial,
            *_Search.table,
            _Search.stamp,
            out,
            self.last_nodes,
            self.last_depth,
        )
        _Search.stamp += n * alphabeta_kernel.WIDENINGS
        return out


_ready = False


def ready() -> None:
    """Compile the search (or load it from numba's cache) once per process, one process at a
    time (`compile_once.under_lock`); a later call is a flag test."""
    global _ready
    if _ready:
        return
    compiled_kernels()
    _ready = True  # set first: the warm-up searches through `search`, which calls this
    compile_once.under_lock(_warm)


def _warm() -> None:
    """A small search on each wall, with the argument types of real calls."""
    from ..rules import engine

    ids = np.arange(2)
    for wall in ("coloured", "gray"):
        st = engine.new_games(2, wall, 0, ids, np.zeros(2, np.int8))
        AlphaBetaBot(nodes=20).search(st, ids, 20)


_NO_KEYS = np.zeros(1, np.uint64)
_NO_GIVEN = np.zeros((1, 5, 4), np.int8)


class _Scratch:
    """A process's scratch state for the searches of one kind of game (players, wall, round cap,
    rule set), grown as needed: each game searched owns ``stride`` slots of it. Kept, with its
    arrays as compiled code takes them, because making them took most of a small search's time."""

    kept: dict = {}

    def __init__(self, st, size: int):
        self.state = st.take(np.zeros(size, np.int64))  # any game: every slot is loaded first
        self.size = size
        self.arrays = self.state.arrays()
        self.fields = game_fields(self.state)
        self.column_rules = np.zeros((1, st.players), np.int8)
        self.pending_wall = np.zeros((st.players, size), np.int32)
        self.pending_rows = np.zeros((st.players, size), np.int32)
        self.partial = np.zeros(size, np.float32)

    @classmethod
    def of(cls, st, size: int) -> _Scratch:
        kind = (st.players, st.gray, st.max_rounds, st.rule_set)
        kept = cls.kept.get(kind)
        if kept is None or kept.size < size:
            kept = cls.kept[kind] = cls(st, max(size, 2 * (kept.size if kept else 0), 256))
        return kept


_FIELDS: dict = {}  # id of a state -> (a weak reference to it, its arrays' ids, `game_fields`)


def _fields_of(st) -> tuple:
    """`game_fields` of `st`, kept while `st` lives and holds the same arrays (a job plays every
    turn of a chunk on one state)."""
    ids = tuple(id(v) for v in vars(st).values())
    kept = _FIELDS.get(id(st))
    if kept is not None and kept[0]() is st and kept[1] == ids:
        return kept[2]
    if len(_FIELDS) > 64:
        _FIELDS.clear()
    made = game_fields(st)
    _FIELDS[id(st)] = (weakref.ref(st), ids, made)
    return made


def make_alphabeta(params: dict) -> AlphaBetaBot:
    ready()  # compiled now: neither its clock nor the job's CPU per move pays for it
    return AlphaBetaBot(**params)


def alphabeta_cost(params: dict) -> float:
    """Time per game relative to greedy, for chunk sizes: about 1 µs per node searched
    (docs/bots.md, "`alphabeta`"), ~60 decisions a game against greedy's ~0.03 ms per game."""
    if params["ms"] > 0:
        return min(100000.0, 8.0 + 2000.0 * params["ms"])
    return min(100000.0, 8.0 + 2.0 * params["nodes"])
