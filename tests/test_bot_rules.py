"""The bots play the rules they are given (sim/rules/rulesets.py): every value of the heuristic (and
so of rollout, search and deep, whose candidates and position values are the heuristic's) and
greedy's choice read the state's rule set, in numpy and in the compiled kernels alike.

Positions come from the printed engine with the state's rule set replaced: what is checked is what
the bots read of the rules, whatever engine dealt the position.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.bots import make_bot
from sim.bots.base import column_table
from sim.bots.features import column_keys, substate
from sim.bots.greedy import greedy_actions
from sim.bots.heuristic import HeuristicBot, _Evaluation, game_ending, seat_line_values
from sim.bots.playout import candidates, position_values, round_values
from sim.rules import engine
from sim.rules.actions import encode
from sim.rules.rulesets import PRINTED_RULES, RuleSet
from tests.positions import random_positions
from tests.test_playout import _reference_candidates

BLUE, YELLOW, RED = 0, 1, 2
VARIANTS = [
    RuleSet(column_bonus=5, row_bonus=0, colour_bonus=20),
    RuleSet(floor=(1, 2, 3)),
    RuleSet(floor=(4,), marker="3"),
    RuleSet(marker="0", end_rows=2),
    RuleSet(floor=(0, 0, 5, 5, 5), marker="off", end_rows=3, colour_bonus=0),
]
SPECS = ["heuristic", "heuristic:floor=2.5,centre=0,partial=0,marker=4,endgame=0.5"]


def _ruled(st, rule_set: RuleSet):
    """The position of `st` in a game of `rule_set`; with no marker, none lies in the centre."""
    out = dataclasses.replace(st.copy(), rule_set=rule_set)
    if rule_set.marker == "off":
        out.marker_in_centre[:] = False
        out.marker_holder[:] = -1
    return out


def _running(players, wall, games=300, seed=4):
    st, _ = random_positions(players, wall, games, seed)
    return st, np.flatnonzero(~st.done & (st.tiles_left > 0))


def _position(factories, centre, floor=0, marker=True, rule_set=PRINTED_RULES):
    """A 2-player position, seat 0 to move, empty lines: `factories` index -> {colour: n}."""
    st = engine.new_games(2, "coloured", 0, np.array([0]), np.array([0]))
    st = dataclasses.replace(st, rule_set=rule_set)
    st.sources[:] = 0
    for i, tiles in factories.items():
        st.sources[1 + i, 0] = sum(n << (6 * c) for c, n in tiles.items())
    st.sources[0, 0] = sum(n << (6 * c) for c, n in centre.items())
    _presence(st)
    st.tiles_left[0] = sum(sum(t.values()) for t in factories.values()) + sum(centre.values())
    st.marker_in_centre[0] = marker
    st.floor[0, 0] = floor
    st.current[0] = 0
    engine.refresh_accept(st, np.array([0]))
    return st


def _presence(st):
    held = (st.sources[:, None, :] >> (6 * np.arange(5))[None, :, None]) & 63  # (S, 5, B)
    bits = (held > 0).astype(np.int64) << (
        11 * np.arange(5)[None, :, None] + np.arange(st.sources.shape[0])[:, None, None]
    )
    st.presence[:] = bits.sum(axis=(0, 1))


# --- the heuristic's values ----------------------------------------------------------------------


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_line_values_count_the_rules_end_bonuses(wall):
    # On an empty wall every cell scores 1 point and is the first of its row, column and colour:
    # V = points + bonus * (row + column + colour) / 25, of the rule set's bonuses.
    st = engine.new_games(3, wall, 2, np.arange(4), np.zeros(4, np.int8))
    bot = HeuristicBot(points=1.0, bonus=2.0)
    seat, slots = np.zeros(4, np.intp), np.arange(4)
    for rules, total in (
        (RuleSet(), 19),
        (RuleSet(row_bonus=0, column_bonus=5, colour_bonus=20), 25),
    ):
        v = seat_line_values(bot, _ruled(st, rules), seat, slots)
        assert np.allclose(v, 1.0 + 2.0 * total / 25), rules


def test_the_floor_and_the_marker_cost_what_the_rules_say():
    # 3 red in the centre to the floor, on a floor holding 1: the floor's cost of the objects that
    # fall (the marker one more when it takes a slot, its points when it costs points, nothing
    # when the game has none), times the floor weight 1.5.
    bot = HeuristicBot(floor=1.5, centre=0.0, marker=0.0)
    cases = [
        (RuleSet(), True, (1 + 2 + 2 + 2)),  # slots 2..5 of 1/1/2/2/2/3/3
        (RuleSet(floor=(1, 2, 3)), True, (2 + 3)),  # a 3-slot floor: slots 2, 3, then nothing
        (RuleSet(floor=(4,)), True, 0),  # a 1-slot floor already full
        (RuleSet(marker="3"), True, (1 + 2 + 2) + 3),  # 3 tiles on slots 2..4, the marker's 3
        (RuleSet(floor=(1, 2, 3), marker="5"), True, (2 + 3) + 5),
        (RuleSet(marker="off"), False, (1 + 2 + 2)),
    ]
    for rules, marker, points in cases:
        st = _position({0: {BLUE: 2, YELLOW: 2}}, {RED: 3}, floor=1, marker=marker, rule_set=rules)
        values = _Evaluation(bot, st, np.array([0])).action_values()
        assert values[encode(0, RED, 5), 0] == pytest.approx(-1.5 * points), rules
        # A factory pick to the floor never brings the marker: 2 blue on slots 2, 3.
        cum = (0, *np.cumsum(rules.floor), *[sum(rules.floor)] * 8)
        assert values[encode(1, BLUE, 5), 0] == pytest.approx(-1.5 * (cum[3] - cum[1])), rules


def test_the_marker_taken_onto_a_line_costs_its_slot_or_its_points():
    # 2 red from the centre onto the empty line 2 (room 3): only the marker can fall.
    bot = HeuristicBot(floor=2.0, centre=0.0, marker=0.0, partial=0.0)
    values = {}
    for rules in (RuleSet(), RuleSet(marker="4"), RuleSet(marker="0"), RuleSet(floor=(7, 1))):
        st = _position({0: {BLUE: 4}}, {RED: 2}, rule_set=rules)
        values[rules.label] = _Evaluation(bot, st, np.array([0])).action_values()[
            encode(0, RED, 2), 0
        ]
    assert values["marker=4"] == pytest.approx(values["marker=0"] - 2.0 * 4)
    assert values["printed"] == pytest.approx(values["marker=0"] - 2.0 * 1)  # its slot: 1 point
    assert values["floor=7/1"] == pytest.approx(values["marker=0"] - 2.0 * 7)


def test_the_end_of_the_game_is_read_from_end_rows():
    st = engine.new_games(2, "coloured", 0, np.arange(3), np.zeros(3, np.int8))
    st.wall[0, 0] = 0b01111  # game 0: one row of 4
    st.wall[1, 1] = 0b01111 | (0b11110 << 5)  # game 1: two rows of 4 on one wall
    st.wall[0, 2], st.wall[1, 2] = 0b01111, 0b11110 << 10  # game 2: one on each of two walls
    slots = np.arange(3)
    assert game_ending(st, slots).tolist() == [True, True, True]
    assert game_ending(_ruled(st, RuleSet(end_rows=2)), slots).tolist() == [False, True, False]
    assert game_ending(_ruled(st, RuleSet(end_rows=3)), slots).tolist() == [False, False, False]


@pytest.mark.parametrize("players,wall", [(2, "coloured"), (3, "gray"), (4, "coloured")])
@pytest.mark.parametrize("spec", SPECS)
def test_the_compiled_evaluation_reads_the_rules_as_numpy_does(players, wall, spec):
    # The compiled candidates (the heuristic's act, the search bots' lists) and round values
    # against the numpy definitions, under every variant: number for number, move for move.
    bot = make_bot(spec)
    base, slots = _running(players, wall)
    for rules in VARIANTS:
        st = _ruled(base, rules)
        assert np.array_equal(
            candidates(bot, st, slots, 6), _reference_candidates(bot, st, slots, 6)
        )
        assert np.array_equal(round_values(bot, st), position_values(bot, st)), rules
    changed = 0
    for rules in VARIANTS:
        changed += (
            candidates(bot, _ruled(base, rules), slots, 1) != candidates(bot, base, slots, 1)
        ).sum()
    assert changed > 0


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_a_game_without_end_bonuses_is_valued_as_a_bot_ignoring_them(wall):
    # No end bonus in the rules: the heuristic's values are those of bonus=0 in the printed game,
    # exactly (its candidates, rollout's round values, the gray-wall columns).
    st, slots = _running(3, wall, seed=7)
    none = _ruled(st, RuleSet(row_bonus=0, column_bonus=0, colour_bonus=0))
    weighted, blind = make_bot("heuristic:bonus=3"), make_bot("heuristic:bonus=0")
    assert np.array_equal(candidates(weighted, none, slots, 8), candidates(blind, st, slots, 8))
    assert np.array_equal(round_values(weighted, none), round_values(blind, st))
    assert not np.array_equal(round_values(weighted, st), round_values(blind, st))
    for bot in (weighted, make_bot("rollout:bonus=3"), make_bot("search:bonus=3")):
        assert np.array_equal(column_table(bot, none.rule_set), column_keys(0.0))
        assert not np.array_equal(column_table(bot), column_keys(0.0))


def test_factories_of_more_than_four_tiles_of_a_colour():
    # tiles_per_factory=6: the heuristic's factory picks of 5 and 6 tiles, compiled as in numpy.
    st, slots = _running(2, "coloured", games=400, seed=9)
    st = _ruled(st, RuleSet(tiles_per_factory=6))
    held = (st.sources[1:] >> (6 * np.arange(5))[:, None, None]) & 63  # (5 c, F, B)
    first = np.argmax(held > 0, axis=0)  # each factory's first colour
    has = held.max(axis=0) > 0
    st.sources[1:] += np.where(has, 2 << (6 * first), 0).astype(np.int32)
    _presence(st)
    bot = make_bot("heuristic")
    assert (((st.sources[1:, slots] >> (6 * np.arange(5))[:, None, None]) & 63) > 4).any()
    assert np.array_equal(candidates(bot, st, slots, 5), _reference_candidates(bot, st, slots, 5))


# --- greedy ---------------------------------------------------------------------------------------


def _greedy_choices(st, ties: int = 64):
    u = (np.arange(ties, dtype=np.uint64) << np.uint64(32)) // np.uint64(ties)
    return set(greedy_actions(st, np.zeros(ties, np.intp), u).tolist())


def _greedy_definition(st):
    """Greedy's best actions by its definition: the most placed, then the fewest floored."""
    best, out = None, set()
    for action in np.flatnonzero(engine.legal_mask(st)[0]):
        source, colour, dest = action // 30, action // 6 % 5, action % 6
        k = int(st.sources[source, 0]) >> (6 * colour) & 63
        room = 0 if dest == 5 else dest + 1 - int(st.line_count[0, dest, 0])
        placed = min(k, room)
        key = (placed, -(k - placed) - int(source == 0 and st.marker_in_centre[0]))
        if best is None or key > best:
            best, out = key, {int(action)}
        elif key == best:
            out.add(int(action))
    return out


def test_greedy_with_factories_of_more_than_four_tiles():
    rules = RuleSet(tiles_per_factory=7)
    for factories, centre in (
        ({0: {RED: 6, BLUE: 1}, 1: {RED: 5, YELLOW: 2}, 2: {RED: 5, BLUE: 2}}, {YELLOW: 1}),
        ({0: {RED: 7}, 1: {BLUE: 3, YELLOW: 4}, 3: {YELLOW: 6, RED: 1}}, {RED: 2, BLUE: 3}),
        ({0: {BLUE: 1, YELLOW: 6}, 1: {BLUE: 1, RED: 6}, 4: {BLUE: 5, RED: 2}}, {}),
    ):
        st = _position(factories, centre, rule_set=rules)
        assert _greedy_choices(st) == _greedy_definition(st)


def test_greedy_plays_the_same_with_either_count_of_factory_tiles():
    # tiles_per_factory=5 takes the general path on positions of at most 4 of a colour per factory.
    st, slots = _running(4, "coloured", games=300, seed=3)
    u = (slots.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(1 << 32)
    wide = _ruled(st, RuleSet(tiles_per_factory=5))
    assert np.array_equal(greedy_actions(wide, slots, u), greedy_actions(st, slots, u))


# --- the search bots ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["rollout", "search:width=3,replies=2", "deep:nodes=8", "alphabeta:nodes=60"]
)
def test_search_bots_value_positions_by_the_rules(spec):
    # Their candidates are the heuristic's under the state's rules (the first is its pick).
    st, slots = _running(2, "coloured", games=120, seed=5)
    rules = RuleSet(column_bonus=0, floor=(3, 3), marker="6")
    bot = make_bot(spec)
    policy = bot.policy
    ruled = _ruled(st, rules)
    assert np.array_equal(
        candidates(policy, ruled, slots, 1)[0], make_bot("heuristic").act(ruled, slots)
    )
    # They play legal moves under the rules, on copies: the position is left as it was.
    copy = substate(ruled, slots)
    actions = bot.act(copy, np.arange(slots.size))
    assert engine.legal_mask(copy)[np.arange(slots.size), actions].all()
    assert np.array_equal(copy.sources, ruled.sources[:, slots])
