"""JobSpec / Configuration validation, JSON round trip, seat assignment and first player."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sim.bots.registry import Param, register_bot, unregister_bot
from sim.jobs.spec import Configuration, JobSpec, first_player, seat_assignment
from sim.rules import rng


@pytest.fixture(autouse=True)
def bots():
    register_bot("s_a", "a", lambda p: p, [Param("w", "float", 1.0, 0, 5)], replace=True)
    register_bot("s_b", "b", lambda p: p, replace=True)
    yield
    unregister_bot("s_a")
    unregister_bot("s_b")


def job(**over):
    data = {
        "configurations": [{"players": 2, "bots": ["s_a", "s_b"]}],
        "games": 10,
        "seed": 7,
    }
    data.update(over)
    return data


def test_defaults_and_canonical_bots():
    spec = JobSpec.from_dict(
        job(
            configurations=[
                {"players": 3, "bots": ["s_a:w=2.50", "s_b", "s_a:w=1"], "wall": "colored"}
            ]
        )
    )
    cfg = spec.configurations[0]
    assert cfg.bots == ("s_a:w=2.5", "s_b", "s_a")
    assert cfg.seating == "rotate" and cfg.wall == "coloured"
    assert spec.max_rounds == 100
    assert spec.total_games == 10
    assert [s.name for s in cfg.bot_specs] == ["s_a", "s_b", "s_a"]


def test_json_round_trip_is_stable():
    spec = JobSpec.from_dict(
        job(
            configurations=[
                {"players": 2, "bots": ["s_a:w=3", "s_b"], "seating": "shuffle", "wall": "gray"},
                {"players": 4, "bots": ["s_a", "s_b", "s_b", "s_a"], "seating": "fixed"},
            ],
            max_rounds=50,
        )
    )
    text = spec.to_json()
    again = JobSpec.from_json(text)
    assert again == spec
    assert again.to_json() == text
    assert JobSpec.from_dict(json.loads(text)).to_dict() == spec.to_dict()
    direct = JobSpec(
        configurations=[
            Configuration(2, ["s_a:w=3.0", "s_b"], "shuffle", "gray"),
            Configuration(4, ["s_a", "s_b", "s_b", "s_a"], "fixed"),
        ],
        games=10,
        seed=7,
        max_rounds=50,
    )
    assert direct == spec


@pytest.mark.parametrize(
    "over, message",
    [
        (
            {"configurations": [{"players": 5, "bots": ["s_a"] * 5}]},
            "configurations[0].players must be 2, 3 or 4; got 5",
        ),
        (
            {"configurations": [{"players": True, "bots": ["s_a"]}]},
            "configurations[0].players must be 2, 3 or 4; got True",
        ),
        (
            {"configurations": [{"players": 2, "bots": ["s_a"]}]},
            "configurations[0].bots must name one bot per seat (2); got 1",
        ),
        (
            {"configurations": [{"players": 2, "bots": "s_a,s_b"}]},
            "configurations[0].bots must be a list of bot specs",
        ),
        (
            {
                "configurations": [
                    {"players": 2, "bots": ["s_a", "s_a"]},
                    {"players": 2, "bots": ["s_a", "nope"]},
                ]
            },
            "configurations[1].bots[1]: unknown bot 'nope'",
        ),
        (
            {"configurations": [{"players": 2, "bots": ["s_a:w=9", "s_b"]}]},
            "configurations[0].bots[0]: bot 's_a': parameter 'w' must be between 0 and 5; got 9.0",
        ),
        (
            {"configurations": [{"players": 2, "bots": ["s_a", "s_b"], "seating": "random"}]},
            "configurations[0].seating must be one of rotate, fixed, shuffle, mirrored; "
            "got 'random'",
        ),
        (
            {"configurations": [{"players": 2, "bots": ["s_a", "s_b"], "wall": "pink"}]},
            "configurations[0].wall must be one of coloured, gray; got 'pink'",
        ),
        (
            {"configurations": [{"players": 2, "bots": ["s_a", "s_b"], "colour": 1}]},
            "configurations[0]: unknown field 'colour'",
        ),
        ({"configurations": [{"players": 2}]}, "configurations[0].bots is required"),
        ({"configurations": [{"bots": "s_a"}]}, "configurations[0].players must be 2, 3 or 4"),
        ({"configurations": []}, "configurations must hold at least one configuration"),
        ({"configurations": {"players": 2}}, "configurations must be a list of configurations"),
        ({"games": 0}, "games must be an integer of at least 1; got 0"),
        ({"games": 1.5}, "games must be an integer of at least 1; got 1.5"),
        ({"seed": -1}, "seed must be an integer between 0 and 2**63-1; got -1"),
        ({"seed": 2**63}, "seed must be an integer between 0 and 2**63-1"),
        ({"max_rounds": 0}, "max_rounds must be an integer between 1 and 1000; got 0"),
        ({"max_rounds": 1001}, "max_rounds must be an integer between 1 and 1000; got 1001"),
        ({"rounds": 3}, "job spec: unknown field 'rounds'"),
    ],
)
def test_errors_name_field_value_and_allowed(over, message):
    with pytest.raises(ValueError) as err:
        JobSpec.from_dict(job(**over))
    assert message in str(err.value)


def test_a_spec_file_needs_only_the_bots():
    """The file format has the CLI's defaults: players = number of bots, 1000 games, seed 0;
    "grey" is the gray wall as "colored" is the coloured one."""
    spec = JobSpec.from_dict({"configurations": [{"bots": ["s_a", "s_b", "s_b"], "wall": "grey"}]})
    assert spec.to_dict() == {
        "configurations": [
            {"players": 3, "bots": ["s_a", "s_b", "s_b"], "seating": "rotate", "wall": "gray"}
        ],
        "games": 1000,
        "seed": 0,
        "max_rounds": 100,
    }


def test_limits_accepted():
    JobSpec.from_dict(job(seed=0, games=1, max_rounds=1))
    JobSpec.from_dict(job(seed=2**63 - 1, max_rounds=1000))


def test_from_json_rejects_bad_json():
    with pytest.raises(ValueError, match="not valid JSON"):
        JobSpec.from_json("{")


def config(players, seating):
    return Configuration(players, ["s_a"] * players, seating)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_fixed_and_rotate(players):
    games = np.arange(5, 5 + 4 * players)
    fixed = seat_assignment(config(players, "fixed"), 1, games)
    assert fixed.dtype == np.int8 and fixed.shape == (games.size, players)
    assert (fixed == np.arange(players)).all()
    rot = seat_assignment(config(players, "rotate"), 1, games)
    for i, g in enumerate(games):
        assert list(rot[i]) == [(p + g) % players for p in range(players)]
    # Any multiple of P consecutive games: every bot in every seat equally often.
    for p in range(players):
        assert (np.bincount(rot[:, p], minlength=players) == 4).all()


def shuffle_reference(seed, game, players):
    """Scalar Fisher-Yates from the documented draws."""
    perm = list(range(players))
    for k in range(players - 1):
        i = players - 1 - k
        u = rng.scalar_uniform32(seed, game, rng.DEAL, rng.SEATING_COUNTER + k)
        j = (u * (i + 1)) >> 32
        perm[i], perm[j] = perm[j], perm[i]
    return perm


@pytest.mark.parametrize("players", [2, 3, 4])
def test_shuffle_matches_reference_and_is_per_game(players):
    games = np.array([0, 1, 2, 17, 1000, 2**40])
    got = seat_assignment(config(players, "shuffle"), 123, games)
    for i, g in enumerate(games):
        assert list(got[i]) == shuffle_reference(123, int(g), players)
    # Same game, different batch: same seating.
    alone = seat_assignment(config(players, "shuffle"), 123, games[3:4])
    assert (alone[0] == got[3]).all()


def test_shuffle_is_uniform_over_permutations():
    got = seat_assignment(config(3, "shuffle"), 9, np.arange(6000))
    assert (np.sort(got, axis=1) == np.arange(3)).all()
    counts = {perm: 0 for perm in itertools.permutations(range(3))}
    for row in got:
        counts[tuple(int(x) for x in row)] += 1
    assert all(850 < c < 1150 for c in counts.values()), counts


def test_first_player():
    games = np.arange(4000)
    fp = first_player(5, games, 4)
    assert fp.dtype == np.int8 and fp.shape == (4000,)
    assert (np.bincount(fp, minlength=4) > 850).all()
    for g in (0, 3, 999):
        u = rng.scalar_uniform32(5, g, rng.DEAL, rng.START_COUNTER)
        assert fp[g] == (u * 4) >> 32
    assert (first_player(5, games[10:20], 4) == fp[10:20]).all()
    assert not (first_player(6, games, 4) == fp).all()
