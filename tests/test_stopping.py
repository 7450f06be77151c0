"""Spec validation of mirrored seating, baselines and stopping rules: every bad rule is refused
with a message naming the field."""

from __future__ import annotations

import numpy as np
import pytest

from sim.jobs.spec import Configuration, JobSpec, deal_keys, first_player, seat_assignment
from sim.jobs.stopping import StopRule


def job(**over):
    data = {
        "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
        "games": 100,
        "seed": 7,
        "stop": {"rule": "sprt", "elo0": 0, "elo1": 20},
    }
    data.update(over)
    return data


def paired(**over):
    data = {
        "configurations": [
            {"players": 4, "bots": ["heuristic", "greedy", "greedy", "greedy"]},
            {"players": 4, "bots": ["heuristic:floor=2", "greedy", "greedy", "greedy"]},
        ],
        "games": 100,
        "seed": 7,
        "baseline": 0,
    }
    data.update(over)
    return data


def test_valid_specs_round_trip():
    spec = JobSpec.from_dict(job())
    assert spec.stop.rule == "sprt" and spec.stop.elo1 == 20 and spec.stop.alpha == 0.05
    assert JobSpec.from_json(spec.to_json()) == spec
    p = JobSpec.from_dict(
        paired(stop={"rule": "sprt", "configuration": 1, "delta0": 0, "delta1": 3})
    )
    assert p.paired_configurations() == [1]
    assert p.stop.statistic == "paired_score"
    assert JobSpec.from_json(p.to_json()) == p
    prec = JobSpec.from_dict(job(stop={"rule": "precision", "statistic": "elo", "eps": 10}))
    assert prec.stop.eps == 10.0
    # No optional keys: the JSON of an old spec is unchanged.
    plain = JobSpec.from_dict(job(stop=None))
    assert "stop" not in plain.to_dict() and "baseline" not in plain.to_dict()


@pytest.mark.parametrize(
    "over,message",
    [
        ({"stop": {"rule": "sprt", "elo0": 5, "elo1": 5}}, "stop.elo1 must be greater than"),
        ({"stop": {"rule": "sprt", "elo0": 10, "elo1": 0}}, "stop.elo1 must be greater than"),
        ({"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "alpha": 0.5}}, "stop.alpha must lie"),
        ({"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "alpha": 0}}, "stop.alpha must lie"),
        ({"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "beta": 0.7}}, "stop.beta must lie"),
        ({"stop": {"rule": "sprt", "elo0": 0}}, "stop.elo1 must be a finite number"),
        ({"stop": {"rule": "precision", "eps": 0}}, "stop.eps must be greater than 0"),
        ({"stop": {"rule": "precision", "eps": -1}}, "stop.eps must be greater than 0"),
        ({"stop": {"rule": "precision", "statistic": "x", "eps": 1}}, "stop.statistic must be"),
        ({"stop": {"rule": "guess"}}, "stop.rule must be one of sprt, precision"),
        (
            {"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "configuration": 3}},
            "stop.configuration must be in 0..0",
        ),
        ({"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "check_every": 0}}, "stop.check_every"),
        (
            {"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "check_every": 3}},
            "stop.check_every must be a multiple of configurations[0].players",
        ),
        ({"stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "bogus": 1}}, "stop: unknown field"),
        ({"games": 101}, "games must be a multiple of configurations[0].players (2)"),
        (
            {"configurations": [{"players": 2, "bots": ["greedy", "random"]}]},
            "needs mirrored seating in configurations[0].seating",
        ),
        ({"baseline": 1}, "baseline must be a configuration index in 0..0"),
        ({"baseline": -1}, "baseline must be a configuration index in 0..0"),
    ],
)
def test_bad_rules_name_the_field(over, message):
    with pytest.raises(ValueError) as err:
        JobSpec.from_dict(job(**over))
    assert message in str(err.value)


@pytest.mark.parametrize(
    "over,message",
    [
        (
            {"stop": {"rule": "sprt", "configuration": 0, "delta0": 0, "delta1": 3}},
            "stop.configuration must not be the baseline",
        ),
        (
            {"stop": {"rule": "sprt", "configuration": 1, "delta0": 3, "delta1": 3}},
            "stop.delta1 must be greater than stop.delta0",
        ),
        (
            {
                "baseline": None,
                "stop": {"rule": "sprt", "configuration": 1, "delta0": 0, "delta1": 3},
            },
            "needs a baseline configuration",
        ),
        ({"baseline": 2}, "baseline must be a configuration index in 0..1"),
        (
            {
                "configurations": [
                    {"players": 4, "bots": ["heuristic", "greedy", "greedy", "greedy"]},
                    {"players": 4, "bots": ["greedy"] * 4, "seating": "shuffle"},
                ]
            },
            "configurations[1].seating must be the baseline's ('rotate')",
        ),
    ],
)
def test_bad_paired_specs_name_the_field(over, message):
    with pytest.raises(ValueError) as err:
        JobSpec.from_dict(paired(**over))
    assert message in str(err.value)


def test_unpaired_configuration_cannot_carry_a_paired_rule():
    data = paired(
        configurations=[
            {"players": 4, "bots": ["heuristic", "greedy", "greedy", "greedy"]},
            {"players": 3, "bots": ["heuristic", "greedy", "greedy"]},
        ],
        stop={"rule": "sprt", "configuration": 1, "delta0": 0, "delta1": 3},
    )
    with pytest.raises(ValueError, match="stop.configuration 1 is not paired"):
        JobSpec.from_dict(data)


def test_check_points_are_fixed_by_the_spec():
    rule = StopRule.from_dict({"rule": "sprt", "elo0": 0, "elo1": 5, "check_every": 40})
    assert rule.check_points(100) == [40, 80, 100]
    assert rule.check_points(80) == [40, 80]


@pytest.mark.parametrize("players", [2, 3, 4])
def test_mirrored_groups_share_deal_and_start_and_rotate_seats(players):
    config = Configuration(players, tuple(["greedy"] + ["random"] * (players - 1)), "mirrored")
    games = np.arange(12 * players)
    keys = deal_keys(5, games, players, "mirrored").reshape(-1, players)
    assert (keys == keys[:, :1]).all()  # one deal per group
    assert len(np.unique(keys[:, 0])) == 12  # groups differ
    start = first_player(5, games, players, "mirrored").reshape(-1, players)
    assert (start == start[:, :1]).all()
    seats = seat_assignment(config, 5, games).reshape(-1, players, players)
    # Within a group each bot index sits in each seat once, so each bot also starts once.
    for group in seats:
        for p in range(players):
            assert sorted(group[:, p]) == list(range(players))
    # Game g's deal depends on g alone, not on which games are asked for.
    assert deal_keys(5, games[players + 1 :], players, "mirrored")[0] == keys[1, 1]
    assert (deal_keys(5, games, players) != deal_keys(5, games, players, "mirrored")).any()


def test_sprt_bounds_move_in_by_siegmunds_correction():
    """evaluate's bounds: nominal +- 0.583 sqrt(m (s1 - s0)^2 / var), written out by hand."""
    import math

    from sim.jobs.stopping import evaluate

    spec = JobSpec.from_dict(job(stop={"rule": "sprt", "elo0": -10, "elo1": 30,
                                       "check_every": 40}))  # fmt: skip
    penta = [3, 5, 20, 9, 3]  # 40 pairs: 80 games, two check points of 20 pairs
    t = [0, 6, 12, 18, 24]  # group totals in 1/12
    counters = {f"c0|penta|n{i}": n for i, n in enumerate(penta)}
    pairs = list(zip(penta, t, strict=True))
    counters["c0|group|n"] = 40
    counters["c0|group|sum"] = sum(n * x for n, x in pairs)
    counters["c0|group|sumsq"] = sum(n * x * x for n, x in pairs)
    point = evaluate(spec.stop, counters, spec, 80)
    y = [x / 24 for x in t]
    mu = sum(n * v for n, v in zip(penta, y, strict=True)) / 40
    var = sum(n * (v - mu) ** 2 for n, v in zip(penta, y, strict=True)) / 40
    s0, s1 = (1 / (1 + 10 ** (-e / 400)) for e in (-10, 30))
    shift = 0.583 * math.sqrt(20 * (s1 - s0) ** 2 / var)
    assert point["llr_bounds"] == pytest.approx([math.log(0.05 / 0.95) + shift,
                                                 math.log(0.95 / 0.05) - shift])  # fmt: skip
    # The last, short interval (games not a multiple of check_every) is corrected for its size.
    short = evaluate(spec.stop, counters, spec, 50)  # 10 games = 5 pairs since the last point
    assert short["llr_bounds"][1] - point["llr_bounds"][1] == pytest.approx(
        shift - 0.583 * math.sqrt(5 * (s1 - s0) ** 2 / var)
    )
