"""Golden games (tests/goldens/*.json, written by ``python -m sim.rules.goldens --regenerate``).

Each golden is replayed move by move on the reference engine and, once it exists, on the batch
engine; every dealt factory, bag/lid after the deal, move, column choice, score, board after tiling
and the final record must match. A failure here means the game changed: if that is intended (a
rules change), regenerate and review the diff.
"""

from __future__ import annotations

import pytest

from sim import RULES_VERSION
from sim.rules import goldens

NAMES = sorted(goldens.GOLDENS)


@pytest.fixture(scope="module", params=NAMES)
def golden(request):
    return request.param, goldens.load(request.param)


def test_golden_parameters(golden):
    name, g = golden
    assert g["rules_version"] == RULES_VERSION
    params = (g["players"], g["wall"], g["seed"], g["game"], g["first_player"])
    assert params == goldens.GOLDENS[name]
    assert g["record"]["turns"] == sum(len(r["moves"]) for r in g["rounds"])
    assert g["record"]["rounds"] == g["rounds"][-1]["round"] == len(g["rounds"])


def test_golden_replays_on_reference(golden):
    _, g = golden
    assert goldens.replay_reference(g) == g


def test_golden_policy_is_stable(golden):
    # The BOT-stream policy still picks the recorded moves (sim.rules.rng and legal ordering
    # unchanged).
    name, g = golden
    assert goldens.play_reference(*goldens.GOLDENS[name]) == g


def test_golden_replays_on_batch_engine(golden):
    _, g = golden
    assert goldens.replay_batch(g) == g


@pytest.mark.parametrize("players", [2, 3, 4])
def test_gray_goldens_have_column_choices(players):
    # One gray-wall golden per player count, replayed above through the compiled engine that
    # plays every job's games (`sim.jobs.play.play_batch`).
    g = goldens.load(f"{players}p_gray")
    assert g["players"] == players and g["wall"] == "gray"
    assert any(r["columns"] for r in g["rounds"])


def test_regenerate_needs_the_flag(capsys):
    with pytest.raises(SystemExit):
        goldens.main([])
    assert "--regenerate" in capsys.readouterr().err
