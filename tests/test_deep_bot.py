"""The budgeted search `deep` (sim/bots/deep.py): its tree against a plain recursive Max-N, legal
and pure at every table, deterministic by `nodes`, anytime by `ms`, registered with its cost."""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots import deep, make_bot, parse_bot_spec
from sim.bots.features import substate
from sim.bots.playout import candidates, play_out, round_values
from sim.bots.registry import get_bot_info
from sim.jobs.spec import JobSpec
from sim.rules import engine
from tests.positions import random_positions

COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]


def test_the_shape_is_fixed_by_the_budget():
    assert deep.shape(1, 6) == ()
    assert deep.shape(8, 6) == (6,)
    assert deep.shape(24, 6) == (6, 4)
    assert deep.shape(100, 6) == (6, 6, 2)
    assert deep.shape(1000, 6) == (6, 6, 6, 4)
    assert deep.shape(1000, 10) == (10, 10, 10)


def _reference(bot, st, slot: int, widths: tuple[int, ...]) -> int:
    """Max-N written as a recursion over one game: (pick at the root). With 3-4 players a node
    where another seat than the root's moves is worth ``caution`` x its best child + the rest x
    its first (the heuristic's pick)."""
    root = int(st.current[slot])

    def value(node, level):
        if level == len(widths):
            leaf = substate(node, np.array([0]))
            play_out(bot.policy, leaf, plies=bot.tail)
            return round_values(bot.policy, leaf, bot.open)[:, 0]
        going = not node.done[0] and node.tiles_left[0] > 0
        picks = candidates(bot.policy, node, np.array([0]), widths[level])[:, 0] if going else None
        mover = int(node.current[0])
        best, best_margin, best_pick, first = None, -np.inf, None, None
        for j in range(widths[level]):
            child = substate(node, np.array([0]))
            if going:
                engine.play(child, np.array([0]), np.array([picks[j]]), defer_round_end=True)
            v = value(child, level + 1)
            first = v if first is None else first
            margin = v[mover] - np.max(np.delete(v, mover))
            if margin > best_margin:  # ties: the earlier, better-ranked pick
                best, best_margin, best_pick = v, margin, None if picks is None else picks[j]
        if level == 0:
            return best, best_pick
        if st.players > 2 and mover != root:
            return (bot.caution * best + (1 - bot.caution) * first).astype(np.float32)
        return best

    return int(value(substate(st, np.array([slot])), 0)[1])


@pytest.mark.parametrize(
    "players,wall,caution,open",
    [(2, "coloured", 0.5, 0), (3, "gray", 0.5, 0), (4, "coloured", 0.5, 2), (3, "coloured", 1.0, 0),
     (2, "gray", 0.5, 2)],
)  # fmt: skip
def test_the_batched_tree_is_max_n_over_the_ranked_picks(players, wall, caution, open):
    st, keys = random_positions(players, wall, games=12, seed=9)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    bot = make_bot(f"deep:nodes=12,width=3,tail=2,caution={caution},open={open}")
    widths = deep.shape(12, 3)
    assert widths == (3, 3)
    actions = bot.act(st, slots, keys[slots])
    expected = [_reference(bot, st, int(s), widths) for s in slots]
    assert actions.tolist() == expected


@pytest.mark.parametrize("players,wall", COMBOS)
def test_legal_pure_and_independent_of_batch_and_groups(players, wall, monkeypatch):
    st, keys = random_positions(players, wall, games=30, seed=5)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    before = st.copy()
    bot = make_bot("deep:nodes=40")
    actions = bot.act(st, slots, keys[slots])
    assert engine.legal_mask(st)[slots][np.arange(slots.size), actions].all()
    for name, value in vars(before).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(st, name)), name
    monkeypatch.setattr(deep, "COPIES", 7 * 36)  # groups of 7 games
    again = bot.act(st, slots[::-1], np.zeros(slots.size, np.uint64))
    assert np.array_equal(again[::-1], actions)


def test_one_node_is_the_heuristic():
    st, keys = random_positions(2, "coloured", games=30, seed=2)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    one = make_bot("deep:nodes=1").act(st, slots, keys[slots])
    assert np.array_equal(one, make_bot("heuristic").act(st, slots, keys[slots]))


def test_an_ample_clock_reaches_the_node_budget():
    st, keys = random_positions(3, "coloured", games=20, seed=4)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    exact = make_bot("deep:nodes=24").act(st, slots, keys[slots])
    timed = make_bot("deep:nodes=24,ms=600000").act(st, slots, keys[slots])
    assert np.array_equal(exact, timed)
    # The least clock still completes the first budget (8 leaves): a legal pick every time.
    quick = make_bot("deep:nodes=1000,ms=0.001").act(st, slots, keys[slots])
    assert np.array_equal(quick, make_bot("deep:nodes=8").act(st, slots, keys[slots]))


def test_an_anytime_search_sizes_its_next_search_to_the_time_left(monkeypatch):
    """After the first 8 leaves, the next search is the largest budget the clock still fits (at
    the last search's CPU per leaf), not the next rung of a ladder: with an ample clock and a
    budget of 1,000 it plays the 1,000-leaf tree at once."""
    st, keys = random_positions(2, "coloured", games=6, seed=3)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    searched = []
    real = deep.DeepBot.search

    def spy(self, st, slots, widths):
        searched.append(widths)
        return real(self, st, slots, widths)

    monkeypatch.setattr(deep.DeepBot, "search", spy)
    timed = make_bot("deep:nodes=1000,ms=600000").act(st, slots, keys[slots])
    assert searched == [deep.shape(8, 6), deep.shape(1000, 6)]
    assert np.array_equal(timed, make_bot("deep:nodes=1000").act(st, slots, keys[slots]))
    assert deep.leaves(1000, 6) == 864 and deep.leaves(1, 6) == 1


def test_registered_with_a_cost_that_grows_with_the_budget():
    spec = parse_bot_spec("deep:nodes=96")
    assert spec.label == "deep"
    info = get_bot_info("deep")
    costs = [info.cost_of(parse_bot_spec(f"deep:nodes={n}").params) for n in (8, 96, 1000)]
    assert costs == sorted(costs) and costs[0] > 2.5  # dearer than the heuristic
    with pytest.raises(ValueError, match="'nodes' must be between 1 and 200000"):
        parse_bot_spec("deep:nodes=0")
    job = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["deep:nodes=24", "heuristic"]}], "games": 20}
    )
    assert job.cost > 1


def test_games_replay_and_cpu_is_accounted():
    from sim.jobs.local import run_local
    from sim.stats.cpu import strip

    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["deep:nodes=24", "heuristic"], "seating": "mirrored"}
            ],
            "games": 24,
            "seed": 3,
        }
    )
    a = run_local(spec, workers=1, chunk_size=24)
    b = run_local(spec, workers=1, chunk_size=8)
    assert strip(a.counters) == strip(b.counters)
    moves = a.counters["cpu|c0|bot=deep:nodes=24|moves"]
    assert moves == b.counters["cpu|c0|bot=deep:nodes=24|moves"] > 0
    assert not any("heuristic" in k for k in a.counters if k.startswith("cpu|"))


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_24_nodes_with_two_players_is_search(wall):
    # 6 x 4 leaves, 3 heuristic picks after the reply: `search`'s tree, whose pruning is exact.
    st, keys = random_positions(2, wall, games=40, seed=8)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    a = make_bot("deep:nodes=24").act(st, slots, keys[slots])
    assert np.array_equal(a, make_bot("search").act(st, slots, keys[slots]))


def test_compiled_when_made_so_no_clocked_decision_pays_for_it(monkeypatch):
    calls = []
    monkeypatch.setattr(deep, "ready", lambda: calls.append("ready"))
    make_bot("deep:ms=1")
    assert calls == ["ready"]
