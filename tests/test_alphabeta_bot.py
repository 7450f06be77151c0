"""The compiled alpha-beta bot `alphabeta` (sim/bots/alphabeta.py): its choice against a plain
recursive minimax over the same candidates and leaves, legal and pure at every table,
deterministic by `nodes`, anytime by `ms`, and registered with its cost."""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots import alphabeta, make_bot, parse_bot_spec
from sim.bots.features import substate
from sim.bots.playout import candidates, play_out, round_values
from sim.bots.registry import get_bot_info
from sim.jobs.spec import JobSpec
from sim.rules import engine
from sim.rules.reference import placement_points
from sim.rules.rulesets import RuleSet
from tests.positions import heuristic_positions, random_positions

COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]


def _distinct(policy, node, width: int) -> list[int]:
    """The candidate list of a one-game state: the heuristic's best picks, up to the first repeat
    of the first (fewer legal than `width`)."""
    picks = candidates(policy, node, np.array([0]), width)[:, 0].tolist()
    out = [picks[0]]
    for p in picks[1:]:
        if p == picks[0]:
            break
        out.append(p)
    return out


def _leaf_margin(bot, leaf, root: int) -> float:
    """The deciding seat `root`'s margin in a one-game state whose round has ended: its value
    less the best other seat's, as the bot values its leaves."""
    v = round_values(bot.policy, leaf, bot.open)[:, 0].astype(np.float64)
    return v[root] - np.max(np.delete(v, root))


def _minimax(bot, st, slot: int) -> dict[int, float]:
    """Each root move's value by a plain recursion to the round's end (no pruning, no table, no
    depth limit): the deciding seat's margin, maximised where it moves and minimised elsewhere;
    with 3-4 players, elsewhere `caution` x the least plus the rest x the heuristic pick's."""
    root = int(st.current[slot])
    c = bot.caution if st.players > 2 else 1.0

    def value(node):
        if node.tiles_left[0] == 0:
            leaf = substate(node, np.array([0]))
            play_out(bot.policy, leaf)  # the round end, as the engine plays it (no picks left)
            return _leaf_margin(bot, leaf, root)
        mover = int(node.current[0])
        values = []
        for move in _distinct(bot.policy, node, bot.width):
            child = substate(node, np.array([0]))
            engine.play(child, np.array([0]), np.array([move]), defer_round_end=True)
            values.append(value(child))
        if mover == root:
            return max(values)
        return c * min(values) + (1 - c) * values[0]

    top = substate(st, np.array([slot]))
    out = {}
    for move in _distinct(bot.policy, top, bot.root_width):
        child = substate(top, np.array([0]))
        engine.play(child, np.array([0]), np.array([move]), defer_round_end=True)
        out[move] = value(child)
    return out


def _late_positions(players: int, wall: str, most: int):
    """Positions with at most `most` picks' worth of (source, colour) groups on the table, so a
    search reaches the round's end: the random positions played on by the heuristic."""
    st, keys = random_positions(players, wall, games=24, seed=11)
    heuristic = make_bot("heuristic")
    for _ in range(30):
        groups = np.array([engine.legal_mask(st)[i].reshape(-1, 6).any(axis=1).sum() for i in
                           range(st.batch)])  # fmt: skip
        busy = np.flatnonzero(~st.done & (st.tiles_left > 0) & (groups > most))
        if busy.size == 0:
            break
        engine.play(st, busy, heuristic.act(st, busy, keys[busy]), defer_round_end=True)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    return st, keys, slots


@pytest.mark.parametrize(
    "players,wall,caution",
    [(2, "coloured", 1), (2, "gray", 1), (3, "coloured", 1), (3, "coloured", 0.5),
     (4, "coloured", 0.25), (4, "gray", 0.5), (3, "gray", 0)],
)  # fmt: skip
def test_the_search_plays_a_minimax_best_move_to_the_round_end(players, wall, caution):
    """With room to reach every round's end, the pruned, table-backed, deepened search plays a
    move whose value is the plain minimax's best (ties may go either way), rivals' nodes mixed
    by `caution` with 3-4 players."""
    st, keys, slots = _late_positions(players, wall, most=5)
    assert slots.size >= 8
    bot = make_bot(f"alphabeta:nodes=1000000,width=3,root_width=4,tail=0,widen=0,caution={caution}")
    actions = bot.act(st, slots, keys[slots])
    assert (bot.last_depth > 0).all()
    for slot, action in zip(slots.tolist(), actions.tolist(), strict=True):
        values = _minimax(bot, st, slot)
        assert action in values
        assert values[action] == pytest.approx(max(values.values()), abs=1e-9)


@pytest.mark.parametrize("players,wall", COMBOS)
def test_legal_pure_and_independent_of_the_batch(players, wall):
    st, keys = random_positions(players, wall, games=30, seed=5)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    before = st.copy()
    bot = make_bot("alphabeta:nodes=300")
    actions = bot.act(st, slots, keys[slots])
    assert engine.legal_mask(st)[slots][np.arange(slots.size), actions].all()
    for name, value in vars(before).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(st, name)), name
    again = make_bot("alphabeta:nodes=300").act(st, slots[::-1], np.zeros(slots.size, np.uint64))
    assert np.array_equal(again[::-1], actions)
    # the same bot again: its table's entries of earlier decisions are not read
    assert np.array_equal(bot.act(st, slots, keys[slots]), actions)


def test_one_ply_is_the_best_leaf_and_more_nodes_search_deeper():
    st, keys = random_positions(2, "coloured", games=30, seed=2)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0) & (st.tiles_left > 8))
    shallow = make_bot("alphabeta:nodes=1,depth=1")
    shallow.act(st, slots, keys[slots])
    assert (shallow.last_depth == 1).all()
    deep = make_bot("alphabeta:nodes=3000")
    deep.act(st, slots, keys[slots])
    assert (deep.last_depth >= 3).all() and (deep.last_nodes <= 3001 + 60).all()


@pytest.mark.parametrize(
    "players,wall,tail",
    [(2, "coloured", 3), (2, "gray", 5), (3, "coloured", 2), (4, "coloured", 3), (4, "gray", 1)],
)
def test_a_one_ply_search_values_each_leaf_after_its_play_out(players, wall, tail):
    """At one ply, each root move's leaf is played on by the heuristic for `tail` picks, its
    round ended, and valued as the deciding seat's margin; the search plays the best of them."""
    st, keys = random_positions(players, wall, games=30, seed=7)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 8))
    assert slots.size >= 10
    bot = make_bot(f"alphabeta:nodes=1,depth=1,root_width=6,tail={tail}")
    actions = bot.act(st, slots, keys[slots])
    for slot, action in zip(slots.tolist(), actions.tolist(), strict=True):
        root = int(st.current[slot])
        top = substate(st, np.array([slot]))
        values = {}
        for move in _distinct(bot.policy, top, bot.root_width):
            leaf = substate(top, np.array([0]))
            engine.play(leaf, np.array([0]), np.array([move]), defer_round_end=True)
            play_out(bot.policy, leaf, tail)
            values[move] = _leaf_margin(bot, leaf, root)
        assert action in values
        assert values[action] == pytest.approx(max(values.values()), abs=1e-5)


def test_an_ample_clock_reaches_the_node_budget():
    st, keys = random_positions(3, "coloured", games=20, seed=4)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    exact = make_bot("alphabeta:nodes=200").act(st, slots, keys[slots])
    timed = make_bot("alphabeta:nodes=200,ms=600000").act(st, slots, keys[slots])
    assert np.array_equal(exact, timed)


def test_compiled_when_made_so_no_clocked_decision_pays_for_it(monkeypatch):
    # A compile (or numba's cache load) inside the first `act` would count in its clock's rate
    # and in the job's CPU per move; `make_bot` is what a job calls before it plays.
    calls = []
    monkeypatch.setattr(alphabeta, "ready", lambda: calls.append("ready"))
    make_bot("alphabeta:ms=1")
    assert calls == ["ready"]


def test_registered_with_a_cost_that_grows_with_the_budget():
    assert parse_bot_spec("alphabeta").label == "alphabeta"
    info = get_bot_info("alphabeta")
    costs = [info.cost_of(parse_bot_spec(f"alphabeta:nodes={n}").params) for n in (10, 500, 5000)]
    assert costs == sorted(costs) and costs[0] > 2.5  # dearer than the heuristic
    with pytest.raises(ValueError, match="'nodes' must be between 1 and"):
        parse_bot_spec("alphabeta:nodes=0")


def test_games_replay_whatever_the_chunking_and_cpu_is_accounted():
    from sim.jobs.local import run_local
    from sim.stats.cpu import strip

    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["alphabeta:nodes=200", "heuristic"], "seating": "mirrored"},
                {"players": 3, "wall": "gray", "bots": ["alphabeta:nodes=100", "heuristic",
                                                         "heuristic"]},
            ],
            "games": 24,
            "seed": 3,
        }
    )  # fmt: skip
    a = run_local(spec, workers=1, chunk_size=24)
    b = run_local(spec, workers=1, chunk_size=8)
    assert strip(a.counters) == strip(b.counters)
    assert a.counters["cpu|c0|bot=alphabeta:nodes=200|moves"] > 0


def test_it_beats_the_heuristic():
    """Not a measurement (docs/bots.md has those): a sanity check, deterministic by `nodes`."""
    from sim.jobs.local import run_local

    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["alphabeta:nodes=400", "heuristic"], "seating": "mirrored"}
            ],
            "games": 40,
            "seed": 1,
        }
    )
    result = run_local(spec, workers=1, chunk_size=40)
    assert result.counters["c0|bot=alphabeta:nodes=400|wins"] >= 28  # of 40 (even: 20)


def test_game_fields_are_views_of_every_array():
    st, _ = random_positions(2, "gray", games=3, seed=1)
    groups = alphabeta.game_fields(st)
    views = [v for g in groups for v in g]
    arrays = [v for v in vars(st).values() if isinstance(v, np.ndarray)]
    assert len(views) == len(arrays)
    for v in views:
        assert v.shape[-1] == st.batch and any(np.shares_memory(v, a) for a in arrays)


@pytest.mark.parametrize("players,wall", [(2, "coloured"), (4, "coloured"), (3, "gray")])
@pytest.mark.parametrize("rules", ["printed", "end_rows=2"])
def test_the_open_term_is_the_adjacency_waiting_times_the_rounds_left(players, wall, rules):
    # Written from the rules' own placement scoring (reference.placement_points), cell by cell:
    # `open` adds w x (fewest rounds left) x (mean over the empty cells of the points beyond 1
    # that a tile there would score) to each seat's value while the game goes on.
    rule_set = RuleSet.parse(rules)
    st = heuristic_positions(players, wall, games=120, seed=21, step=11, rule_set=rule_set)
    policy = make_bot("heuristic")
    plain = round_values(policy, st).astype(np.float64)
    weighted = round_values(policy, st, 1.5).astype(np.float64)
    end_rows = rule_set.end_rows
    seen = set()
    for i in range(st.batch):
        grids = [[[bool(st.wall[p, i] >> (5 * r + c) & 1) for c in range(5)] for r in range(5)]
                 for p in range(players)]  # fmt: skip
        fills = [sorted((sum(row) for row in g), reverse=True) for g in grids]
        left = min(5 - f[end_rows - 1] for f in fills)
        for p in range(players):
            waiting = [placement_points(grids[p], r, c) - 1 for r in range(5) for c in range(5)
                       if not grids[p][r][c]]  # fmt: skip
            term = 0.0 if st.done[i] else 1.5 * left * sum(waiting) / max(len(waiting), 1)
            assert weighted[p, i] - plain[p, i] == pytest.approx(term, abs=1e-3), (i, p)
            seen.add((bool(st.done[i]), left, term > 0))
    assert (False, 5, False) in seen and (False, 4, True) in seen and (False, 1, True) in seen
