"""The heuristic's fast paths (bots/heuristic.py, playout.py, features.py) against its definition.

`_Evaluation` is the heuristic written as its docstring reads; the compiled evaluation (the bot's
act and the candidates), the table-driven coloured line values, the play-out's line values and
`Remembered` compute the same decisions with less work. Each is checked number for number (or
move for move) on random positions from every stage of a round, for several weightings, 2-4
players and both walls.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots import kernels, make_bot
from sim.bots.features import (
    COLOURED_CELL,
    cell_values,
    colour_progress,
    coloured_tables,
    column_masks,
    first_max,
    flat,
    gray_tables,
    line_values,
    pending_line_values,
    pending_line_values_at,
    pending_wall,
    per_line,
    per_seat,
    row_masks,
    substate,
)
from sim.bots.heuristic import (
    _Evaluation,
    factories_empty,
    game_ending,
    seat_line_values,
)
from sim.bots.playout import (
    LineValues,
    Remembered,
    candidates,
    play_out,
    play_picks,
    round_values,
)
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
from sim.rules import engine
from sim.rules.tables import POP5
from tests.positions import heuristic_positions, random_positions

COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]
WEIGHTS = [
    "heuristic",
    "heuristic:floor=2.5,centre=0,partial=0",
    "heuristic:points=0.3,partial=1.7,marker=4,endgame=0.5,floor=5,bonus=0",
]


def _running(players, wall, games=300, seed=4):
    st, _ = random_positions(players, wall, games, seed)
    return st, np.flatnonzero(~st.done & (st.tiles_left > 0))


def _reference_action(bot, st, slots):
    ev = _Evaluation(bot, st, slots)
    return ev.action(first_max(ev.values))


def _reference_candidates(bot, st, slots, width):
    """`rollout`'s candidate list as it was defined: `_Evaluation.action_values` first maxima."""
    ev = _Evaluation(bot, st, slots)
    n = slots.shape[0]
    cols = np.arange(n)
    out = np.empty((width, n), np.int64)
    out[0] = ev.action(first_max(ev.values))
    values = ev.action_values()
    flat(values)[out[0] * n + cols] = -1e9
    for j in range(1, width):
        q = first_max(values)
        at = q * n + cols
        out[j] = np.where(flat(values).take(at) > -1e3, q, out[0])
        flat(values)[at] = -1e9
    return out


@pytest.mark.parametrize("players,wall", COMBOS)
@pytest.mark.parametrize("spec", WEIGHTS)
def test_act_is_the_evaluations_choice(players, wall, spec):
    bot = make_bot(spec)
    for seed in (4, 5):
        st, slots = _running(players, wall, seed=seed)
        assert np.array_equal(bot.act(st, slots), _reference_action(bot, st, slots))
        # The centre-only path, on the games whose factories are empty.
        bare = slots[factories_empty(st, slots)]
        assert bare.size > 10
        assert np.array_equal(bot.act(st, bare), _reference_action(bot, st, bare))


def test_act_in_a_large_batch():
    # Index arithmetic past int16 (5 * n > 32767) and blocks: copies of 9000 positions.
    bot = make_bot("heuristic")
    for players, wall in ((2, "coloured"), (4, "gray")):
        st, slots = _running(players, wall, games=400, seed=9)
        big = substate(st, np.resize(slots, 9000))
        every = np.arange(9000)
        assert np.array_equal(bot.act(big, every), _reference_action(bot, big, every))


@pytest.mark.parametrize("players,wall", COMBOS)
@pytest.mark.parametrize("spec", WEIGHTS)
def test_the_compiled_candidates_are_the_evaluations(players, wall, spec):
    bot = make_bot(spec)
    st, slots = _running(players, wall, games=1200, seed=6)
    for width in (1, 4, 12):
        expected = _reference_candidates(bot, st, slots, width)
        assert np.array_equal(candidates(bot, st, slots, width), expected)


@pytest.mark.parametrize("points,bonus", [(1.0, 1.0), (0.3, 2.5), (5.0, 0.0)])
def test_coloured_line_values_from_tables(points, bonus):
    for players in (2, 4):
        st, _ = random_positions(players, "coloured", 300, 3)
        games = np.arange(st.batch)
        for p in range(players):
            seat = np.full(st.batch, p)
            wall, row_colours = (
                per_seat(st.wall, seat, games),
                per_seat(st.row_colours, seat, games),
            )
            counts, colours = (
                per_line(st.line_count, seat, games),
                per_line(st.line_colour, seat, games),
            )
            pending, pending_colours = pending_wall(wall, row_colours, counts, colours)
            base = cell_values(pending, points, bonus).reshape(25, -1)[COLOURED_CELL]
            expected = base.reshape(5, 5, -1) + colour_progress(pending_colours, bonus)[:, None, :]
            got = line_values(False, wall, row_colours, None, counts, colours, points, bonus, 2.0)
            assert np.array_equal(got, expected)
            own = np.maximum(colours, 0)
            at = own.astype(np.intp) * 5 + np.arange(5)[:, None]
            at_colour = pending_line_values_at(pending, pending_colours, own, points, bonus)
            assert np.array_equal(at_colour, flat(expected).take(at * st.batch + games))


@pytest.mark.parametrize("players,wall", COMBOS)
def test_play_out_line_values_stay_those_of_the_position(players, wall):
    # Play one pick at a time: before every pick the coloured wall's pending-wall masks the
    # play-out keeps give the line values computed afresh from the position, and the pick and the
    # state after it are the heuristic's through the engine.
    bot = make_bot("heuristic:points=0.7,bonus=1.3")
    st, slots = _running(players, wall, seed=8)
    tree = substate(st, slots)
    for _ in range(40):
        running = np.flatnonzero(~tree.done & (tree.tiles_left > 0))
        if running.size == 0:
            break
        lines = LineValues(bot, tree)
        for p in range(players if not tree.gray else 0):  # gray: the walls as they stand
            seat = np.full(running.size, p)
            fresh = seat_line_values(bot, tree, seat, running)
            wall_p, rows_p = lines.wall[p].take(running), lines.rows[p].take(running)
            kept = pending_line_values(wall_p, rows_p, bot.points, bot.bonus)
            assert np.array_equal(kept, fresh)
        expected = _reference_action(bot, tree, running)
        before = tree.copy()
        after = play_picks(bot, tree, running, plies=1)
        engine.play(before, running, expected, defer_round_end=True)
        for name, value in vars(before).items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(getattr(tree, name), value), name
        if not tree.gray:  # the masks the picks kept are those of the new position
            for p in range(players):
                pending = pending_wall(
                    tree.wall[p], tree.row_colours[p], tree.line_count[p], tree.line_colour[p]
                )
                assert np.array_equal(after.wall[p].take(running), pending[0].take(running))
                assert np.array_equal(after.rows[p].take(running), pending[1].take(running))
    assert running.size == 0


@pytest.mark.parametrize("players,wall", COMBOS)
@pytest.mark.parametrize("spec", WEIGHTS)
def test_play_out_is_the_heuristic_to_the_end_of_the_round(players, wall, spec):
    # The compiled picks against the heuristic's definition played through the engine, field for
    # field, on 1,200 positions from every stage of a round.
    bot = make_bot(spec)
    st, slots = _running(players, wall, games=1200, seed=10)
    for plies in (None, 3):
        fast = substate(st, slots)
        play_out(bot, fast, plies=plies)
        slow = substate(st, slots)
        step = 0
        while plies is None or step < plies:
            running = np.flatnonzero(~slow.done & (slow.tiles_left > 0))
            if running.size == 0:
                break
            actions = _reference_action(bot, slow, running)
            engine.play(slow, running, actions, defer_round_end=True)
            step += 1
        waiting = np.flatnonzero(~slow.done)
        engine.end_rounds(slow, waiting, bot.choose_columns if slow.gray else None, deal=False)
        for name, value in vars(slow).items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(getattr(fast, name), value), (plies, name)


def test_remembered_only_the_same_position():
    st, slots = _running(2, "coloured", seed=11)
    memo = Remembered()
    known, _ = memo.recall(st, slots)
    assert not known.any()
    values = np.arange(2 * slots.size, dtype=np.float32).reshape(2, -1)
    memo.keep(st, slots, substate(st, slots), values)
    known, got = memo.recall(st, slots[::-1])
    assert known.all() and np.array_equal(got, values[:, ::-1])
    changed = st.copy()
    changed.floor_penalty[1, slots[3]] += 1  # any field at all
    known, _ = memo.recall(changed, slots)
    assert not known[3] and known[np.arange(slots.size) != 3].all()
    other = st.copy()
    other.max_rounds += 1
    assert not memo.recall(other, slots)[0].any()


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_rollout_plays_the_same_without_its_memory(wall, monkeypatch):
    config = Configuration(2, ["rollout:width=3"] * 2, wall=wall)  # one object plays both seats
    recall = Remembered.recall
    hits = []

    def counted(self, st, slots):
        known, values = recall(self, st, slots)
        hits.append(int(known.sum()))
        return known, values

    monkeypatch.setattr(Remembered, "recall", counted)
    remembered = play_games(config, 5, 0, 40)
    assert sum(hits) > 100  # the memory was used
    monkeypatch.setattr(Remembered, "recall", _forget)
    fresh = play_games(config, 5, 0, 40)
    for name, value in vars(remembered).items():
        assert np.array_equal(value, getattr(fresh, name)), name


def _forget(self, st, slots):
    return np.zeros(slots.shape[0], bool), np.zeros((st.players, slots.shape[0]), np.float32)


_SQUARES = (np.arange(6) ** 2).astype(np.float32)
_CAPF = np.arange(1, 6, dtype=np.float32)[:, None]


def _reference_round_values(h, st):
    """`rollout`'s position values as numpy computes them (search.RolloutBot step 3)."""
    b = st.batch
    going = (~st.done).astype(np.float32)
    ending = game_ending(st, np.arange(b))
    partial = np.float32(h.partial) * (1 - np.float32(h.endgame) * ending)
    out = st.scores.astype(np.float32)
    for p in range(st.players):
        wall = st.wall[p]
        row_colours = st.row_colours[p]
        potential = (
            2 * _SQUARES[POP5[row_masks(wall)]].sum(axis=0)
            + 7 * _SQUARES[POP5[column_masks(wall)]].sum(axis=0)
            + 10 * _SQUARES[POP5[column_masks(row_colours)]].sum(axis=0)
        ) * np.float32(h.bonus / 25)
        counts = st.line_count[p]
        colours = st.line_colour[p]
        colour = np.maximum(colours, 0)
        if st.gray:
            value = line_values(
                st.gray,
                wall,
                row_colours,
                st.col_colours[p],
                counts,
                colours,
                h.points,
                h.bonus,
                2.0 * h.floor_w,
            )  # (5 c, 5 r, B)
            at = colour.astype(np.intp) * 5 + np.arange(5)[:, None]
            line = flat(value).take(at * b + np.arange(b))  # (5 r, B): V[colour of line r, r]
        else:  # the same numbers, computed for the lines' own colours only
            pending = pending_wall(wall, row_colours, counts, colours)
            line = pending_line_values_at(*pending, colour, h.points, h.bonus)
        credit = (line * (counts.astype(np.float32) / _CAPF)).sum(axis=0) * partial
        holder = (st.marker_holder == p).astype(np.float32) * np.float32(h.marker)
        out[p] += going * (potential + credit + holder)
    return out


@pytest.mark.parametrize("players,wall", COMBOS)
@pytest.mark.parametrize("spec", WEIGHTS)
def test_round_values_are_the_numpy_definition(players, wall, spec):
    # Mid-round positions, the same after their round's end and after a cut play-out, and games
    # that ended: number for number.
    bot = make_bot(spec)
    st, slots = _running(players, wall, games=1200, seed=12)
    cut = substate(st, slots)
    play_out(bot, cut, plies=3)
    ended = substate(st, slots)
    play_out(bot, ended)
    finished = ended.copy()
    finished.done[::3] = True  # a finished game is worth its score
    for position in (st, cut, ended, finished):
        assert np.array_equal(round_values(bot, position), _reference_round_values(bot, position))


def _late_positions(players, wall, games=600, seed=14):
    """Positions from every stage of whole games of `heuristic` self-play (game g stops after
    13·g mod 130 picks, or at its end): late walls with complete rows and full lines."""
    return heuristic_positions(players, wall, games, seed, step=13)


@pytest.mark.parametrize("players,wall", COMBOS)
@pytest.mark.parametrize("spec", WEIGHTS)
def test_the_compiled_round_end_is_the_engines(players, wall, spec):
    # Every running game's round ended where it stands, late games included (complete rows, end
    # bonuses, dead ends on the gray wall), and again with the round cap reached: field for field
    # equal to engine.end_rounds with the heuristic's columns.
    bot = make_bot(spec)
    st = _late_positions(players, wall)
    running = np.flatnonzero(~st.done)
    for cap in (st.max_rounds, 1):
        fast = substate(st, running)
        fast.max_rounds = cap
        fast.tiles_left[:] = 0  # play_out ends the round of every game not done
        play_out(bot, fast)
        slow = substate(st, running)
        slow.max_rounds = cap
        slow.tiles_left[:] = 0
        columns = bot.choose_columns if slow.gray else None
        engine.end_rounds(slow, np.arange(running.size), columns, deal=False)
        for name, value in vars(slow).items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(getattr(fast, name), value), (cap, name)
        assert (slow.end_reason[slow.done] == 0).any() or cap == 1
    assert slow.done.all()


@pytest.mark.parametrize("wall", ["coloured", "gray"])
@pytest.mark.parametrize("spec", WEIGHTS)
def test_the_compiled_line_values_are_the_heuristics(wall, spec):
    # Every seat of 300 positions from whole games: the kernels' 25 line values, number for number.
    bot = make_bot(spec)
    st = _late_positions(3, wall, games=300)
    table = gray_tables if st.gray else coloured_tables
    cells, colour_bonus = table(float(bot.points), float(bot.bonus))
    v = np.empty(25, np.float32)
    cm = np.empty(5, np.int64)
    row = np.empty(5, np.float32)
    for p in range(3):
        seat = np.full(st.batch, p)
        expected = seat_line_values(bot, st, seat, np.arange(st.batch)).reshape(25, -1)
        if st.gray:
            walls, rows = st.wall[p], st.row_colours[p]
        else:
            walls, rows = pending_wall(
                st.wall[p], st.row_colours[p], st.line_count[p], st.line_colour[p]
            )
        for i in range(st.batch):
            if st.gray:
                dead = np.float32(2.0 * bot.floor_w)
                cc = int(st.col_colours[p, i])
                kernels._gray_values(
                    v, cm, row, int(walls[i]), int(rows[i]), cc, cells, colour_bonus, dead
                )
            else:
                kernels._coloured_values(v, cm, int(walls[i]), int(rows[i]), cells, colour_bonus)
            assert np.array_equal(v, expected[:, i]), (p, i)
