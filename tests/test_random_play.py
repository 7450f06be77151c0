"""Random self-play in compiled code (sim/random_play.py, sim/compiled.py) against the numpy engine.

`compiled.play_random` must leave every game exactly as the numpy engine and the `random` bot
leave it: each field of the state, from positions at every stage of a game (fresh, mid-round,
waiting for a round end, at the round cap, with an empty bag and lid), at 2-4 players on both
walls; and `play_batch` must return the same records by either path.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from sim import engine, random_play, rng
from sim.bots import make_bot
from sim.bots.base import Bot
from sim.bots.random_bot import RandomBot
from sim.constants import END_NO_TILES, END_ROUND_CAP
from sim.play import play_games
from sim.spec import Configuration
from sim.tables import NTH_DEST_FLAT

BOT = RandomBot()


def _columns(keys):
    def choose(st, slots, seat, row, colours, legal):
        return BOT.choose_columns(st, slots, seat, row, colours, legal, keys[slots])

    choose.all_seats = True
    return choose


def numpy_play(st, keys, steps=None):
    """The numpy engine with the random bot in every seat: round ends (with the deal) for the
    games waiting for one, then a pick in every running game; `steps` picks at most."""
    columns = _columns(keys) if st.gray else None
    step = 0
    while steps is None or step < steps:
        waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
        if waiting.size:
            engine.end_rounds(st, waiting, columns)
        running = np.flatnonzero(~st.done & (st.tiles_left > 0))
        if not running.size:
            break
        actions = BOT.act(st, running, keys[running])
        engine.play(st, running, actions, columns, defer_round_end=True)
        step += 1


def assert_same_state(a, b):
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "wall_cells":  # cells the wall does not hold are not cleared (sim.state)
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
    random_play.finish(got, np.arange(got.batch), keys)
    assert expected.done.all()
    assert_same_state(expected, got)


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
    random_play.finish(got, np.arange(got.batch), keys)
    assert (expected.end_reason == END_NO_TILES).any()
    assert (expected.end_reason == END_ROUND_CAP).any()
    assert_same_state(expected, got)


def test_only_the_given_slots_are_played():
    st, keys = new_games(3, "gray", 40)
    numpy_play(st, keys, 9)
    before = st.copy()
    slots = np.arange(0, 40, 3)
    random_play.finish(st, slots, keys)
    rest = np.setdiff1d(np.arange(40), slots)
    assert st.done[slots].all() and not before.done[rest].any()
    assert_same_state(before.take(rest), st.take(rest))


@pytest.mark.parametrize(
    "players,wall,seating",
    [(2, "gray", "rotate"), (3, "coloured", "shuffle"), (4, "gray", "mirrored")],
)
def test_play_batch_gives_the_same_records_by_either_path(monkeypatch, players, wall, seating):
    config = Configuration(players, ["random"] * players, wall=wall, seating=seating)
    numpy_records = play_games(config, 11, 40, 1240)  # below MIN_GAMES: numpy
    calls = []
    monkeypatch.setattr(random_play, "MIN_GAMES", 1000)
    monkeypatch.setattr(random_play, "BLOCK", 256)  # several blocks, the last one short
    random_play.ready()
    real = random_play.compiled.play_random

    def counted(*args):
        calls.append(len(args[0]))
        return real(*args)

    monkeypatch.setattr(random_play.compiled, "play_random", counted)
    compiled_records = play_games(config, 11, 40, 1240)
    assert sum(calls) == 1200 and len(calls) == 5
    for f in fields(numpy_records):
        np.testing.assert_array_equal(
            getattr(numpy_records, f.name), getattr(compiled_records, f.name), err_msg=f.name
        )


class LeftmostColumns(RandomBot):
    def choose_columns(self, st, slots, seat, row, colours, legal, keys):
        return NTH_DEST_FLAT.take(legal * 6).astype(np.intp)


def test_only_random_self_play_takes_the_compiled_path():
    assert random_play.plays_random(make_bot("random"))
    assert not random_play.plays_random(make_bot("greedy"))
    assert not random_play.plays_random(Bot())  # no picks of its own
    # A random bot with other gray-wall columns plays other games.
    assert not random_play.plays_random(LeftmostColumns())
