"""Built-in bots: legal actions everywhere, determinism, greedy's rule, parameters, strength."""

from __future__ import annotations

import numpy as np
import pytest

from sim.bots import make_bot, parse_bot_spec
from sim.bots.features import column_masks, first_max, substate
from sim.bots.greedy import greedy_actions
from sim.bots.heuristic import HeuristicBot
from sim.bots.rollout import RolloutBot
from sim.jobs.play import play_batch, play_games
from sim.jobs.spec import Configuration, first_player
from sim.rules import engine
from sim.rules.actions import encode
from sim.rules.scoring import placement_points
from tests.positions import random_positions

BOTS = ["random", "greedy", "heuristic", "heuristic:floor=2.5,centre=0", "rollout:width=2"]
COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]
RED, BLUE, YELLOW, WHITE = 2, 0, 1, 4


def _positions(players: int, wall: str, games: int = 40, seed: int = 5):
    return random_positions(players, wall, games, seed)


@pytest.mark.parametrize("players,wall", COMBOS)
def test_every_bot_plays_legal_actions_and_leaves_the_state_alone(players, wall):
    st, keys = _positions(players, wall)
    slots = np.flatnonzero(~st.done)
    assert slots.size > 20
    mask = engine.legal_mask(st)[slots]
    for spec in BOTS:
        before = st.copy()
        actions = make_bot(spec).act(st, slots, keys[slots])
        assert actions.shape == slots.shape
        assert mask[np.arange(slots.size), actions].all(), spec
        for name, value in vars(before).items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(value, getattr(st, name)), (spec, name)


@pytest.mark.parametrize("spec", BOTS)
def test_bots_finish_games_on_both_walls(spec):
    # The engine rejects illegal picks and illegal gray-wall columns, so finishing is the check.
    setups = ((2, "gray"), (4, "coloured"), (3, "gray"))
    for players, wall in setups[:1] if spec.startswith("rollout") else setups:
        config = Configuration(players, [spec] + ["greedy"] * (players - 1), wall=wall)
        rec = play_games(config, 3, 0, 6 if spec.startswith("rollout") else 30)
        assert (rec.rounds >= 1).all()


@pytest.mark.parametrize("bot", ["greedy", "heuristic", "rollout"])
def test_gray_columns_are_legal_and_follow_adjacency(bot):
    st, keys = _positions(2, "gray", games=30)
    slots = np.flatnonzero(~st.done)
    wall = st.wall[0, slots]
    free = 31 & ~((wall >> 5) & 31)  # row 1
    legal = np.where(free == 0, 1, free)  # any non-empty mask
    cols = make_bot(bot).choose_columns(st, slots, 0, 1, np.zeros(slots.size, int), legal, keys)
    assert (((legal >> cols) & 1) == 1).all()
    if bot == "greedy":  # most adjacency points, ties leftmost
        cells = ((wall[:, None] >> np.arange(25)) & 1).reshape(-1, 5, 5)  # before the tile

        def points_at(c):  # an occupied (illegal) cell is scored as if free, then masked below
            free = cells.copy()
            free[:, 1, c] = 0
            return placement_points(free, 1, c)

        points = np.stack([points_at(c) for c in range(5)])
        points = np.where((legal[None] >> np.arange(5)[:, None]) & 1, points, -1)
        assert np.array_equal(cols, first_max(points))


def _records_equal(a, b):
    for name, value in vars(a).items():
        assert np.array_equal(value, getattr(b, name)), name


@pytest.mark.parametrize(
    "bots,wall,games",
    [
        (("greedy", "random"), "coloured", 36),
        (("rollout:width=2", "heuristic"), "gray", 8),
        (("heuristic", "greedy", "random"), "gray", 36),
        (("greedy", "heuristic:partial=0.2", "greedy", "random"), "coloured", 36),
    ],
)
def test_same_seed_same_games_whatever_the_chunking(bots, wall, games):
    config = Configuration(len(bots), list(bots), seating="shuffle", wall=wall)
    whole = play_games(config, 21, 0, games)
    cuts = (0, games // 7, games // 2, games)
    parts = [play_games(config, 21, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    from sim.rules.records import GameRecords

    _records_equal(whole, GameRecords.concat(parts))
    # And in a batch narrower than the games (continuous batching, other slots).
    games = np.arange(games)
    seat_bot = whole.seat_bot
    unique = list(dict.fromkeys(config.bots))
    narrow = play_batch(
        config.players,
        wall,
        21,
        games,
        first_player(21, games, config.players),
        np.array([[unique.index(config.bots[k]) for k in row] for row in seat_bot], np.int8),
        [make_bot(s) for s in unique],
        batch=8,
    )
    assert np.array_equal(narrow.scores, whole.scores)
    assert np.array_equal(narrow.turns, whole.turns)


# --- greedy's rule on hand-made positions --------------------------------------------------------


def _position(factories, centre, lines, marker=True):
    """A 2p position, seat 0 to move; `factories`: index -> {colour: n}; lines: (colour, count)."""
    st = engine.new_games(2, "coloured", 0, np.array([0]), np.array([0]))
    st.sources[:] = 0
    for i, tiles in factories.items():
        st.sources[1 + i, 0] = sum(n << (6 * c) for c, n in tiles.items())
    st.sources[0, 0] = sum(n << (6 * c) for c, n in centre.items())
    st.tiles_left[0] = sum(sum(t.values()) for t in factories.values()) + sum(centre.values())
    st.marker_in_centre[0] = marker
    for r, (colour, count) in enumerate(lines):
        st.line_colour[0, r, 0] = colour
        st.line_count[0, r, 0] = count
    st.current[0] = 0
    engine.refresh_accept(st, np.array([0]))
    return st


def _greedy_choices(st, ties: int = 64):
    """Every action greedy can play here: u swept over [0, 2**32)."""
    u = (np.arange(ties, dtype=np.uint64) << np.uint64(32)) // np.uint64(ties)
    slots = np.zeros(ties, np.intp)
    return set(greedy_actions(st, slots, u).tolist())


def test_greedy_most_tiles_then_ties_at_random():
    st = _position({0: {RED: 3, BLUE: 1}, 1: {RED: 2, YELLOW: 2}}, {YELLOW: 1}, [(-1, 0)] * 5)
    # 3 red fit whole on lines 2, 3 and 4: those three tie, each is played for some u.
    assert _greedy_choices(st) == {encode(1, RED, 2), encode(1, RED, 3), encode(1, RED, 4)}


def test_greedy_then_fewest_to_the_floor():
    lines = [(WHITE, 1), (BLUE, 1), (RED, 2), (YELLOW, 1), (YELLOW, 4)]
    st = _position({0: {RED: 3, BLUE: 1}, 1: {RED: 2, YELLOW: 2}}, {YELLOW: 1}, lines)
    # Only 2 yellow onto line 3 places two tiles with nothing on the floor.
    assert _greedy_choices(st) == {encode(2, YELLOW, 3)}
    lines = [(WHITE, 1), (BLUE, 1), (RED, 2), (YELLOW, 3), (YELLOW, 4)]
    st = _position({0: {RED: 3, BLUE: 1}, 1: {RED: 2, YELLOW: 2}}, {}, lines)
    # One tile at most fits anywhere; fewest floored: blue to line 1 (0), red 2 to line 2 (1).
    assert _greedy_choices(st) == {encode(1, BLUE, 1)}


def test_greedy_counts_the_marker_as_floored():
    st = _position({0: {YELLOW: 1}, 1: {BLUE: 1}}, {YELLOW: 1}, [(-1, 0)] * 5)
    expected = {encode(1 + f, c, r) for f, c in ((0, YELLOW), (1, BLUE)) for r in range(5)}
    assert _greedy_choices(st, 256) == expected
    st = _position({0: {YELLOW: 1}, 1: {BLUE: 1}}, {YELLOW: 1}, [(-1, 0)] * 5, marker=False)
    assert _greedy_choices(st, 256) == expected | {encode(0, YELLOW, r) for r in range(5)}


# --- parameters ----------------------------------------------------------------------------------


def test_parameters_are_validated_by_the_registry():
    with pytest.raises(ValueError, match="unknown parameter 'speed'"):
        parse_bot_spec("heuristic:speed=2")
    with pytest.raises(ValueError, match="'floor' must be between 0 and 5; got 9.0"):
        parse_bot_spec("heuristic:floor=9")
    with pytest.raises(ValueError, match="'width' must be between 1 and 12"):
        parse_bot_spec("rollout:width=0")
    with pytest.raises(ValueError, match="must be an integer"):
        parse_bot_spec("rollout:width=2.5")
    with pytest.raises(ValueError, match="unknown parameter"):
        parse_bot_spec("greedy:floor=1")
    assert parse_bot_spec("heuristic:floor=2.50").label == "heuristic:floor=2.5"
    bot = make_bot("heuristic:floor=2.5,centre=0")
    assert isinstance(bot, HeuristicBot) and bot.floor_w == 2.5 and bot.centre == 0
    rollout = make_bot("rollout:width=3,bonus=0.5")
    assert isinstance(rollout, RolloutBot) and rollout.width == 3 and rollout.policy.bonus == 0.5


def test_heuristic_weights_change_its_play():
    st, _ = _positions(2, "coloured", games=60)
    slots = np.flatnonzero(~st.done)
    plain = make_bot("heuristic").act(st, slots)
    floor_heavy = make_bot("heuristic:floor=5,points=0.1").act(st, slots)
    assert (plain != floor_heavy).any()


def test_column_masks_multiply_gather():
    rng = np.random.default_rng(0)
    masks = rng.integers(0, 1 << 25, 200).astype(np.int32)
    got = column_masks(masks)
    for col in range(5):
        want = sum(((masks >> (5 * r + col)) & 1) << r for r in range(5))
        assert np.array_equal(got[col], want)


def test_substate_is_an_independent_copy():
    st, keys = _positions(2, "coloured", games=10)
    slots = np.flatnonzero(~st.done)[:3]
    sub = substate(st, np.tile(slots, 2))
    before = st.copy()
    every = np.arange(sub.batch)
    engine.play(sub, every, make_bot("greedy").act(sub, every, keys[np.tile(slots, 2)]))
    assert np.array_equal(before.sources, st.sources)
    assert not np.array_equal(sub.sources, st.sources[:, np.tile(slots, 2)])


# --- strength ------------------------------------------------------------------------------------


def _win_rate(a: str, b: str, games: int, players: int = 2) -> float:
    rec = play_games(Configuration(players, [a] + [b] * (players - 1)), 99, 0, games)
    natural = ~rec.truncated
    return float((rec.winners & (rec.seat_bot == 0)).any(axis=1)[natural].mean())


def test_greedy_beats_random():
    assert _win_rate("greedy", "random", 200) >= 0.9


def test_heuristic_beats_greedy():
    assert _win_rate("heuristic", "greedy", 200) >= 0.65


def test_rollout_beats_heuristic():
    assert _win_rate("rollout:width=3", "heuristic", 40) >= 0.6
