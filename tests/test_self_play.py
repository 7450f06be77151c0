"""Whole games in compiled code (sim/jobs/self_play.py, `compiled.play_games`) against the engine
stepped pick by pick with the bots' own (numpy) choices, as `play_batch` plays any line-up.

`self_play.play_compiled` must leave every game exactly as the stepped engine and the `random`
and `greedy` bots leave it: each field of the state, from positions at every stage of a game
(fresh, mid-round, waiting for a round end, at the round cap, with an empty bag and lid), at 2-4
players on both walls; and `play_batch` must return the same records by either path, for any mix
of `random` and `greedy`, for `heuristic` self-play (whose compiled play-outs
tests/test_playout.py checks pick by pick) and for one `heuristic` among `random` and `greedy`.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from sim.bots import make_bot
from sim.bots.base import turn_uniforms
from sim.bots.greedy import GreedyBot, greedy_actions
from sim.bots.random_bot import RandomBot
from sim.bots.sampling import uniform_legal
from sim.jobs import self_play
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
from sim.rules import engine, rng
from sim.rules.constants import END_NO_TILES, END_ROUND_CAP
from sim.rules.rulesets import RuleSet
from sim.rules.tables import NTH_DEST_FLAT


class NumpyRandom(RandomBot):
    """The `random` bot's definition in numpy (`sampling.uniform_legal`), which the compiled
    choice (`RandomBot.act`, `compiled.play_games`) must match."""

    def act(self, st, slots, keys):
        return uniform_legal(st, slots, turn_uniforms(st, slots, keys))


class NumpyGreedy(GreedyBot):
    """The `greedy` bot's definition in numpy (`greedy.greedy_actions`)."""

    def act(self, st, slots, keys):
        return greedy_actions(st, slots, turn_uniforms(st, slots, keys))


BOT = NumpyRandom()
GREEDY = NumpyGreedy()


def _columns(keys, bot):
    def choose(st, slots, seat, row, colours, legal):
        return bot.choose_columns(st, slots, seat, row, colours, legal, keys[slots])

    choose.all_seats = True
    return choose


def numpy_play(st, keys, steps=None, bot=BOT):
    """The engine stepped with `bot`'s numpy choices in every seat: round ends (with the deal)
    for the games waiting for one, then a pick in every running game; `steps` picks at most. The
    columns are asked row by row (not the compiled column rules)."""
    columns = _columns(keys, bot) if st.gray else None
    step = 0
    while steps is None or step < steps:
        waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
        if waiting.size:
            engine.end_rounds(st, waiting, columns)
        running = np.flatnonzero(~st.done & (st.tiles_left > 0))
        if not running.size:
            break
        actions = bot.act(st, running, keys[running])
        engine.play(st, running, actions, columns, defer_round_end=True)
        step += 1


def assert_same_state(a, b):
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "wall_cells":  # cells the wall does not hold are not cleared (sim.rules.state)
            np.testing.assert_array_equal(engine.wall_colours(a), engine.wall_colours(b))
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert x == y, f.name


def new_games(players, wall, n, seed=5, max_rounds=100):
    games = np.arange(n) * 7 + 3
    first = (games % players).astype(np.int8)
    st = engine.new_games(players, wall, seed, games, first, max_rounds)
    return st, rng.game_keys(seed, games, rng.BOT)


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("wall", ["coloured", "gray"])
@pytest.mark.parametrize("steps", [0, 5, 31, 140])
def test_compiled_games_end_as_the_numpy_engine_ends_them(players, wall, steps):
    st, keys = new_games(players, wall, 300)
    numpy_play(st, keys, steps)  # positions at every stage: some rounds are waiting to end
    if steps:
        assert (~st.done & (st.tiles_left == 0)).any() or st.done.any() or steps < 20
    expected, got = st.copy(), st.copy()
    numpy_play(expected, keys)
    self_play.play_random(got, np.arange(got.batch), keys)
    assert expected.done.all()
    assert_same_state(expected, got)


@pytest.mark.parametrize("players", [2, 4])
@pytest.mark.parametrize("wall", ["coloured", "gray"])
@pytest.mark.parametrize("steps", [0, 23])
def test_compiled_greedy_games_end_as_the_stepped_engine_ends_them(players, wall, steps):
    st, keys = new_games(players, wall, 200)
    numpy_play(st, keys, steps, GREEDY)
    expected, got = st.copy(), st.copy()
    numpy_play(expected, keys, bot=GREEDY)
    self_play.play_compiled(got, keys, np.ones((got.batch, players), np.int8))
    assert expected.done.all()
    assert_same_state(expected, got)


@pytest.mark.parametrize(
    "players,wall,rules",
    [
        (2, "coloured", ""),
        (3, "gray", "factories=5/6/9,tiles_per_factory=3,marker=3"),
        (4, "coloured", "factories=5/7/8,tiles_per_factory=5,tiles_per_colour=30,marker=off"),
        (2, "gray", "factories=6/6/6,tiles_per_factory=10,tiles_per_colour=50"),
        (4, "gray", "tiles_per_factory=1,marker=0"),
    ],
)
def test_the_compiled_choices_are_the_numpy_bots_choices(players, wall, rules):
    """`RandomBot.act` and `GreedyBot.act` (compiled, `engine.bot_picks`) choose as their numpy
    definitions at every turn of stepped games, under printed and variant rules."""
    rule_set = RuleSet.parse(rules) if rules else None
    games = np.arange(300) * 5 + 1
    st = engine.new_games(players, wall, 9, games, games % players, rule_set=rule_set)
    keys = rng.game_keys(9, games, rng.BOT)
    seen = 0
    for turn in range(400):
        waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
        if waiting.size:
            engine.end_rounds(st, waiting)
        running = np.flatnonzero(~st.done & (st.tiles_left > 0))
        if not running.size:
            break
        for numpy_bot, bot in ((BOT, RandomBot()), (GREEDY, GreedyBot())):
            np.testing.assert_array_equal(
                numpy_bot.act(st, running, keys[running]), bot.act(st, running, keys[running])
            )
        seen += running.size
        mover = GREEDY if turn % 3 else BOT  # greedy and random positions alike
        engine.play(st, running, mover.act(st, running, keys[running]), defer_round_end=True)
    assert st.done.all() and seen > 300 * 40


def test_only_the_given_slots_are_played_by_compiled_greedy():
    st, keys = new_games(3, "gray", 40)
    numpy_play(st, keys, 9, GREEDY)
    before = st.copy()
    slots = np.arange(1, 40, 4)
    self_play.play_compiled(st, keys, np.ones((40, 3), np.int8), slots)
    rest = np.setdiff1d(np.arange(40), slots)
    assert st.done[slots].all() and not before.done[rest].any()
    assert_same_state(before.take(rest), st.take(rest))


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_round_cap_and_an_empty_bag_end_games_as_in_numpy(wall):
    st, keys = new_games(2, wall, 200, max_rounds=3)
    numpy_play(st, keys, 12)
    # Some games waiting for their round end find neither bag nor lid: the next deal is empty.
    waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
    empty = waiting[: max(1, waiting.size // 2)]
    st.bag[:, empty] = 0
    st.lid[:, empty] = 0
    expected, got = st.copy(), st.copy()
    numpy_play(expected, keys)
    self_play.play_random(got, np.arange(got.batch), keys)
    assert (expected.end_reason == END_NO_TILES).any()
    assert (expected.end_reason == END_ROUND_CAP).any()
    assert_same_state(expected, got)


def test_only_the_given_slots_are_played():
    st, keys = new_games(3, "gray", 40)
    numpy_play(st, keys, 9)
    before = st.copy()
    slots = np.arange(0, 40, 3)
    self_play.play_random(st, slots, keys)
    rest = np.setdiff1d(np.arange(40), slots)
    assert st.done[slots].all() and not before.done[rest].any()
    assert_same_state(before.take(rest), st.take(rest))


@pytest.mark.parametrize(
    "bot,players,wall,seating",
    [
        ("random", 2, "gray", "rotate"),
        ("random", 3, "coloured", "shuffle"),
        ("random", 4, "gray", "mirrored"),
        ("greedy", 2, "gray", "rotate"),
        ("greedy", 4, "coloured", "shuffle"),
        ("random+greedy", 2, "gray", "rotate"),
        ("greedy+random+greedy", 3, "gray", "mirrored"),
        ("heuristic", 2, "coloured", "rotate"),
        ("heuristic:floor=2.5,centre=0.3", 3, "gray", "mirrored"),
        ("heuristic", 4, "gray", "shuffle"),
        ("random+heuristic", 2, "coloured", "rotate"),
        ("heuristic:floor=2.5,centre=0.3+greedy", 2, "gray", "mirrored"),
        ("greedy+heuristic+random", 3, "coloured", "shuffle"),
        ("heuristic+random+greedy+heuristic", 4, "gray", "rotate"),
        ("random+heuristic+greedy", 3, "gray", "rotate|row_bonus=4,colour_bonus=5,floor=1/3/5"),
    ],
)
def test_play_batch_gives_the_same_records_by_either_path(monkeypatch, bot, players, wall, seating):
    seating, _, rules = seating.partition("|")
    lineup = bot.split("+") if "+" in bot else [bot] * players
    rule_set = RuleSet.parse(rules) if rules else RuleSet()
    config = Configuration(players, lineup, wall=wall, seating=seating, rules=rule_set)
    monkeypatch.setattr(self_play, "MIN_GAMES", float("inf"))
    numpy_records = play_games(config, 11, 40, 1240)  # stepped, the bots' numpy choices
    finished = []
    monkeypatch.setattr(self_play, "MIN_GAMES", 1000)
    monkeypatch.setattr(self_play, "BLOCK", 256)  # several blocks, the last one short
    real = self_play.play_games

    def counted(finish, *args):
        finished.append(finish)
        return real(finish, *args)

    monkeypatch.setattr(self_play, "play_games", counted)
    compiled_records = play_games(config, 11, 40, 1240)
    assert len(finished) == 1
    for f in fields(numpy_records):
        np.testing.assert_array_equal(
            getattr(numpy_records, f.name), getattr(compiled_records, f.name), err_msg=f.name
        )


class LeftmostColumns(RandomBot):
    def choose_columns(self, st, slots, seat, row, colours, legal, keys):
        return NTH_DEST_FLAT.take(legal * 6).astype(np.intp)


def test_only_line_ups_of_compiled_bots_play_whole_games():
    assert self_play.finisher([make_bot("random")]) is not None
    assert self_play.finisher([make_bot("heuristic:floor=2")]) is not None
    assert self_play.finisher([make_bot("greedy")]) is not None
    assert self_play.finisher([make_bot("random"), make_bot("greedy")]) is not None
    assert self_play.finisher([make_bot("random"), make_bot("heuristic")]) is not None
    assert self_play.finisher([make_bot("greedy"), make_bot("heuristic:floor=2")]) is not None
    assert self_play.finisher([make_bot("rollout")]) is None
    assert self_play.finisher([make_bot("rollout"), make_bot("random")]) is None
    # Two sets of heuristic weights: one play-out has one.
    assert self_play.finisher([make_bot("heuristic"), make_bot("heuristic:floor=2")]) is None
    # A subclass may play otherwise (here, other gray-wall columns), and so may an instance.
    assert self_play.finisher([LeftmostColumns()]) is None
    instance = make_bot("greedy")
    instance.choose_columns = LeftmostColumns().choose_columns
    assert self_play.finisher([instance]) is None


def test_the_bot_kinds_named_literally_are_the_compiled_ones():
    from sim.bots import kernels
    from sim.rules import compiled

    assert self_play._BOT_KIND == {
        "random": compiled.BOT_RANDOM,
        "greedy": compiled.BOT_GREEDY,
        "heuristic": kernels.BOT_HEURISTIC,
    }
    assert self_play._COLUMNS_RANDOM == compiled.COLUMNS_RANDOM
