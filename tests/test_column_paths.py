"""Gray-wall column choice: the all-seats call (built-in bots) plays exactly as seat by seat.

Wall tiling asks a bot whose `choose_columns` works element by element (`Bot.all_seats`) once per
row for every seat; any other bot (a plugin, or a subclass that overrides `choose_columns`) is
asked seat by seat with an int seat. Both must give the same games.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots.greedy import GreedyBot
from sim.bots.heuristic import HeuristicBot
from sim.bots.random_bot import RandomBot
from sim.jobs.play import play_batch
from sim.jobs.spec import first_player


def _seat_by_seat(cls):
    class SeatBySeat(cls):
        def choose_columns(self, st, slots, seat, row, colours, legal, keys):
            assert isinstance(seat, int), "a bot that does not declare all_seats gets an int seat"
            return super().choose_columns(st, slots, seat, row, colours, legal, keys)

    return SeatBySeat


@pytest.mark.parametrize("cls", [RandomBot, GreedyBot, HeuristicBot])
@pytest.mark.parametrize("players", [2, 4])
def test_all_seats_and_seat_by_seat_play_the_same(cls, players):
    assert cls().all_seats and not _seat_by_seat(cls)().all_seats
    games = np.arange(300, dtype=np.int64)
    fp = first_player(5, games, players)
    seats = np.zeros((games.size, players), np.int8)
    runs = []
    for bots in ([cls()], [_seat_by_seat(cls)()], [cls(), _seat_by_seat(cls)()]):
        seat_bot = seats if len(bots) == 1 else (np.arange(players)[None] % 2 + seats)
        runs.append(play_batch(players, "gray", 5, games, fp, seat_bot, bots, batch=128))
    for other in runs[1:]:
        for name in ("scores", "rounds", "turns", "end_reason"):
            assert np.array_equal(getattr(runs[0], name), getattr(other, name)), name


def _lowest_bit(legal):
    """The leftmost column of each 5-bit mask."""
    legal = np.asarray(legal, np.int64)
    return np.bitwise_count((legal & -legal) - 1).astype(np.intp)


class _LeftmostBot(RandomBot):
    def choose_columns(self, st, slots, seat, row, colours, legal, keys):
        return _lowest_bit(legal)


def test_uniform_columns_drawn_by_tiling_only_for_the_base_choice():
    """Wall tiling draws the uniform columns itself (all rows at once) only for bots whose
    `choose_columns` is `Bot.choose_columns`; one set on the instance is asked like a subclass's."""
    games = np.arange(300, dtype=np.int64)
    fp = first_player(5, games, 2)
    seats = np.zeros((games.size, 2), np.int8)
    instance = RandomBot()
    instance.choose_columns = lambda st, slots, seat, row, colours, legal, keys: _lowest_bit(legal)
    runs = [
        play_batch(2, "gray", 5, games, fp, seats, [bot], batch=128)
        for bot in (RandomBot(), instance, _LeftmostBot())
    ]
    assert not np.array_equal(runs[0].scores, runs[1].scores)
    for name in ("scores", "rounds", "turns", "end_reason", "floor_penalty"):
        assert np.array_equal(getattr(runs[1], name), getattr(runs[2], name)), name
