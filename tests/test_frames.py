"""The Python path for notebooks (sim/stats/frames.py): plain rows and pandas DataFrames of the
statistics, turn order, ratings, sweeps and comparisons, equal to the document they come from."""

from __future__ import annotations

import pandas as pd
import pytest

from sim.experiments.sweep import sweep_spec
from sim.experiments.tournament import tournament_spec
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec


@pytest.fixture(scope="module")
def tournament():
    return run_local(
        tournament_spec(["random", "greedy", "heuristic"], games_per_pair=40), workers=1
    )


def test_ratings_and_turn_order_frames(tournament):
    doc = tournament.statistics()
    assert tournament.ratings() == doc["ratings"]
    df = tournament.ratings_frame()
    assert isinstance(df, pd.DataFrame)
    assert list(df["bot"]) == [b["bot"] for b in doc["ratings"]["bots"]]
    assert list(df["elo_ci95_hi"]) == [b["elo_ci95"][1] for b in doc["ratings"]["bots"]]
    h2h = tournament.frame("head_to_head")
    assert len(h2h) == 3 and set(h2h["agrees"]) <= {True, False}
    turn = tournament.turn_order_frame()
    assert len(turn) == 3 * 2  # three pairings, two positions each
    first = doc["configurations"][2]["turn_order"]["positions"][0]
    row = turn[(turn.configuration == 2) & (turn.position == 0)].iloc[0]
    assert row["wins"] == first["wins"] and row["win_rate_ci95_lo"] == first["win_rate_ci95"][0]
    stats = tournament.statistics_frame()
    assert set(stats["group"]) == {"all", "bot", "seat", "bot_seat", "position"}
    assert len(tournament.comparison_frame()) == 3  # every pairing is mirrored
    with pytest.raises(ValueError, match="table must be one of"):
        tournament.frame("nope")


def test_sweep_frame_has_the_parameters_as_columns():
    result = run_local(sweep_spec(["heuristic:floor=0|2", "greedy"], games=30), workers=1)
    df = result.sweep_frame()
    assert list(df["floor"]) == [0.0, 2.0]
    assert df["score_diff"].isna().tolist() == [True, False]
    # The test against the best, flat: the best's own row has none.
    doc = result.statistics()["sweep"]
    best = doc["best"]["configuration"]
    for k, row in df.iterrows():
        test = doc["rows"][k]["vs_best"]
        if k == best:
            assert pd.isna(row["best_diff"]) and not row["best_distinguishable"]
        else:
            assert row["best_diff"] == test["win_rate_diff"]
            assert row["best_p_holm"] == test["p_holm"]
            assert row["best_distinguishable"] == test["distinguishable"]
    paired = result.comparison_frame()
    assert list(paired["configuration"]) == [1]


def test_not_a_tournament():
    spec = JobSpec.from_dict({"configurations": [{"players": 2, "bots": ["greedy", "random"]}],
                              "games": 4, "seed": 1})  # fmt: skip
    with pytest.raises(ValueError, match="not a tournament"):
        run_local(spec, workers=1).ratings()
