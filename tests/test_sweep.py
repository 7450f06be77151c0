"""Sweeps (sim/experiments/sweep.py, sim/stats/focal.py): expansion of ranges, lists and grids,
errors naming the field, pairing on the same deals, and the sweep section against a plain loop over
real games."""

from __future__ import annotations

import numpy as np
import pytest

from service.convert import spec_from_proto, spec_to_proto
from sim.experiments.sweep import expand_range, sweep_spec
from sim.jobs.local import run_local
from sim.jobs.play import play_games
from sim.jobs.spec import JobSpec
from sim.stats import derive
from sim.stats.intervals import Z95, wilson


@pytest.mark.parametrize(
    "text, values",
    [
        ("0..3/0.5", ["0", "0.5", "1", "1.5", "2", "2.5", "3"]),
        ("0..1/0.1", ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]),
        ("1..2/0.4", ["1", "1.4", "1.8"]),  # STOP not on a step: left out
        ("-1..1/1", ["-1", "0", "1"]),
        ("2..2/1", ["2"]),
    ],
)
def test_ranges_expand_to_their_values(text, values):
    assert expand_range(text, "x") == values


def test_a_range_a_list_and_a_grid():
    spec = sweep_spec(["heuristic:floor=0..2/1", "greedy"], games=10)
    assert [c.bots for c in spec.configurations] == [
        ("heuristic:floor=0.0", "greedy"),
        ("heuristic", "greedy"),  # floor=1 is the default: the canonical label drops it
        ("heuristic:floor=2.0", "greedy"),
    ]
    assert spec.baseline == 0 and spec.sweep == ("floor",)
    grid = sweep_spec(["heuristic:floor=0|1|2,marker=0..1/0.5,points=2", "random"], games=10,
                      baseline="floor=1,marker=0.5")  # fmt: skip
    assert len(grid.configurations) == 9 and grid.sweep == ("floor", "marker")
    firsts = [c.bot_specs[0].params for c in grid.configurations]
    assert [(p["floor"], p["marker"]) for p in firsts][:4] == [(0, 0), (0, 0.5), (0, 1), (1, 0)]
    assert all(p["points"] == 2 for p in firsts)
    assert grid.configurations[grid.baseline].bot_specs[0].params["marker"] == 0.5
    assert grid.configurations[grid.baseline].bot_specs[0].params["floor"] == 1
    three = sweep_spec(["heuristic:floor=0|1", "greedy"], games=9, players=3)
    assert three.configurations[0].bots == ("heuristic:floor=0.0", "greedy", "greedy")


def test_a_ten_by_ten_grid_is_one_job_through_the_proto():
    spec = sweep_spec(["heuristic:floor=0..4.5/0.5,marker=0..0.9/0.1", "greedy"], games=10)
    assert len(spec.configurations) == 100
    assert spec_from_proto(spec_to_proto(spec)) == spec
    assert JobSpec.from_json(spec.to_json()) == spec
    with pytest.raises(ValueError, match="at most 100"):
        sweep_spec(["heuristic:floor=0..4.5/0.5,marker=0..1/0.1", "greedy"], games=10)


@pytest.mark.parametrize(
    "bots, kwargs, message",
    [
        (["heuristic:floor=0..3/0", "greedy"], {}, "STEP must be positive"),
        (["heuristic:floor=3..0/1", "greedy"], {}, "STOP must be at least START"),
        (["heuristic:floor=a..3/1", "greedy"], {}, "a range is START..STOP/STEP"),
        (["heuristic:floor=0..9/1", "greedy"], {}, "parameter 'floor' must be between"),
        (["heuristic:flor=0..3/1", "greedy"], {}, "unknown parameter 'flor'"),
        (["heuristic:floor=2", "greedy"], {}, "sweeps no parameter"),
        (["heuristic:floor=0|1", "heuristic:floor=0|1"], {}, r"bots\[1\]: only the first bot"),
        (["heuristic:floor=0|1,marker=0|1,points=1|2", "greedy"], {}, "at most 2"),
        (["heuristic:floor=0|1", "heuristic"], {}, "same bot as an opponent"),
        (["heuristic:floor=0|1", "greedy"], {"baseline": "floor=3"}, "baseline must be one of"),
        (["heuristic:floor=0|1"], {}, "the swept bot and its opponents"),
    ],
)
def test_bad_sweeps_name_the_field(bots, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep_spec(bots, games=10, **kwargs)


def test_bad_sweep_field_of_a_spec():
    data = {"configurations": [{"players": 2, "bots": ["heuristic", "greedy"]}], "games": 2,
            "seed": 1, "baseline": 0}  # fmt: skip
    with pytest.raises(ValueError, match=r"sweep\[0\] must be a parameter of the focal bot"):
        JobSpec.from_dict({**data, "sweep": ["width"]})
    with pytest.raises(ValueError, match="sweep needs a baseline"):
        JobSpec.from_dict(
            {**{k: v for k, v in data.items() if k != "baseline"}, "sweep": ["floor"]}
        )


@pytest.fixture(scope="module")
def swept():
    spec = sweep_spec(["heuristic:floor=0..2/1", "greedy"], games=120, seed=4, baseline="floor=1")
    result = run_local(spec, workers=1, chunk_size=50)
    return spec, result.counters, result.statistics()


def test_sweep_section_matches_a_plain_loop(swept):
    spec, _, doc = swept
    sw = doc["sweep"]
    assert sw["parameters"] == ["floor"] and sw["baseline"] == 1 and sw["opponents"] == ["greedy"]
    base = play_games(spec.configurations[1], spec.seed, 0, spec.games)
    best_rate = -1.0
    for k, row in enumerate(sw["rows"]):
        rec = play_games(spec.configurations[k], spec.seed, 0, spec.games)
        # The same deals and seats as the baseline, game for game.
        assert (rec.seat_bot == base.seat_bot).all() and (
            rec.first_player == base.first_player
        ).all()
        fin = ~rec.truncated
        seat = np.argmax(rec.seat_bot == 0, axis=1)
        rows = np.arange(len(rec))
        won = rec.winners[rows, seat][fin]
        score = rec.scores[rows, seat][fin].astype(float)
        assert row["values"] == {"floor": float(k)}
        assert row["games"] == fin.sum() and row["wins"] == won.sum()
        assert row["win_rate_ci95"] == pytest.approx(wilson(int(won.sum()), int(fin.sum())))
        half = Z95 * score.std(ddof=1) / np.sqrt(len(score))
        assert row["score"] == pytest.approx(score.mean())
        assert row["score_ci95"] == pytest.approx([score.mean() - half, score.mean() + half])
        both = fin & ~base.truncated
        d = (rec.scores[rows, seat] - base.scores[rows, seat])[both].astype(float)
        if k == 1:
            assert row["score_diff"] is None
        else:
            assert row["score_diff"] == pytest.approx(d.mean())
            half = Z95 * d.std(ddof=1) / np.sqrt(len(d))
            assert row["score_diff_ci95"] == pytest.approx([d.mean() - half, d.mean() + half])
        best_rate = max(best_rate, row["win_rate"])
    assert sw["best"]["win_rate"] == best_rate
    assert sw["best"] in sw["rows"]


def test_sweep_is_chunking_independent(swept):
    spec, counters, doc = swept
    other = run_local(spec, workers=1, chunk_size=40)
    assert other.counters == counters
    assert derive(other.counters, spec)["sweep"] == doc["sweep"]


def test_holm_adjusts_step_down():
    from sim.stats.focal import holm

    adjusted = holm({1: 0.01, 2: 0.04, 3: 0.03, 4: None})  # m = 4: a missing p still counts
    assert adjusted[1] == pytest.approx(0.04) and adjusted[3] == pytest.approx(0.09)
    assert adjusted[2] == pytest.approx(0.09) and adjusted[4] is None  # monotone: max so far
    assert holm({1: 0.5, 2: 0.9}) == {1: 1.0, 2: 1.0}


def test_each_value_is_tested_against_the_best_on_the_same_games(swept):
    """`vs_best` per row: the paired win-indicator difference to the best, its interval and
    two-sided z-test p from the games both finished, Holm-adjusted over the other values."""
    import math

    from sim.stats.focal import ALPHA, holm

    spec, _, doc = swept
    sw = doc["sweep"]
    best = sw["best"]["configuration"]
    recs = [play_games(c, spec.seed, 0, spec.games) for c in spec.configurations]
    seat = np.argmax(recs[0].seat_bot == 0, axis=1)
    rows = np.arange(spec.games)
    wins = [r.winners[rows, seat].astype(float) for r in recs]
    raw = {}
    for k, row in enumerate(sw["rows"]):
        if k == best:
            assert row["vs_best"] is None
            continue
        both = ~recs[k].truncated & ~recs[best].truncated
        d = (wins[k] - wins[best])[both]
        t = row["vs_best"]
        assert t["games"] == both.sum() and t["win_rate_diff"] == pytest.approx(d.mean())
        half = Z95 * d.std(ddof=1) / np.sqrt(len(d))
        assert t["win_rate_diff_ci95"] == pytest.approx([d.mean() - half, d.mean() + half])
        z = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
        assert t["p"] == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
        raw[k] = t["p"]
    adjusted = holm(raw)
    same = sorted([best] + [k for k, p in adjusted.items() if p > ALPHA])
    assert sw["versus_best"] == {"test": "paired z on the win indicator",
                                 "multiple_comparisons": "holm", "alpha": 0.05,
                                 "indistinguishable": same}  # fmt: skip
    for k, p in adjusted.items():
        assert sw["rows"][k]["vs_best"]["p_holm"] == pytest.approx(p)
        assert sw["rows"][k]["vs_best"]["distinguishable"] == (p <= ALPHA)


def test_the_table_says_which_values_match_the_best_in_points(capsys):
    from service.cli import main

    argv = ["sweep", "--bots", "heuristic:floor=0..2/1,greedy", "--games", "60", "--seed", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "win rate - best (Holm p)" in text and " pp" in text
    assert "(paired tests, Holm at 5 %)" in text
