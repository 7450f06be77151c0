"""bench/vs_external.py: our bots against any outside engine, here the example external bot."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.bench_util import bench_script

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "docs" / "examples" / "random_bot.py"


def _bench():
    return bench_script("vs_external")


def test_a_budgeted_bot_plays_at_the_engines_measured_cpu_per_move():
    bench = _bench()
    args = argparse.Namespace(
        name="example",
        cmd=f"{sys.executable} {EXAMPLE} --budget {{budget}}",  # the example ignores its argv
        budgets=["1", "2.5"],
        ours=["deep:ms={ms},nodes=8"],
        players=[2],
        wall="coloured",
        walls="coloured",
        supports_players="24",
        games=4,
        seed=3,
        calibrate_games=2,
        calibrate_against="heuristic",
        ms_scale=2.0,
        move_ms=0.0,
    )
    rows = bench.run(args)
    assert [(r["budget"], r["engine"], r["players"], r["games"]) for r in rows] == [
        ("1", "example", 2, 4),
        ("2.5", "example", 2, 4),
    ]
    for r in rows:
        assert r["b"] == bench.engine_name("example", r["budget"])
        assert r["a"].startswith("deep:ms=") and "{ms}" not in r["a"]
        assert r["us_per_move_a"] > 0 and r["us_per_move_b"] > 0  # both sides accounted
        assert r["score"] > 0.5  # a search against random picks
        lo, hi = r["score_ci95"]
        assert lo <= r["score"] <= hi
    assert bench.engine_name("astra", "2.5") == "astra_2_5"
    assert bench.fill("deep:ms={ms}", 0.2) == "deep:ms=0.2"
    assert bench.fill("deep:ms={ms}", 0.0) == "deep:ms=0.001"
    assert bench.fill("search", 3.0) == "search"


def test_a_row_won_outright_prints_without_an_elo():
    # A side that won every game has no finite Elo (the results hold null): the table says so.
    cells = bench_script("deep").result_cells(
        {"games": 4, "score": 1.0, "score_ci95": [1.0, 1.0], "elo": None, "elo_ci95": [None, None]}
    )
    assert cells == ["4", "100.0 % [100.0, 100.0]", "— [—, —]"]
    row = {"games": 40, "score": 0.75, "score_ci95": [0.64, 0.86], "elo": 190.8}
    cells = bench_script("deep").result_cells({**row, "elo_ci95": [100.3, 314.7]})
    assert cells[2] == "+191 [+100, +315]"
