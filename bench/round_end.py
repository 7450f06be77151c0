"""Deferred round ends: how long games wait for a round end before it runs (`sim.jobs.play`).

`sim.jobs.play.play_batch` lets games whose round ran dry wait until ``width // ROUND_END_FRACTION``
of the batch needs a round end. This plays the same uniform-random games with several fractions
(``width``: no waiting, every round end at once) and prints games per CPU second of this process
(`time.process_time`, so other load on the machine matters less than for wall time)::

    {"players": 2, "fraction": 6, "threshold": 2730, "games": ..., "cpu_seconds": ...,
     "games_per_cpu_second": ...}

Every fraction plays the same games to the same records (checked here); only the speed differs.
Figures are written to ``bench/results/round_end.json``.

Usage: ``python bench/round_end.py [--players 2 4] [--games 65536] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

import sim.jobs.play  # noqa: E402
from sim.jobs.play import DEFAULT_BATCH, play_games  # noqa: E402
from sim.jobs.spec import Configuration  # noqa: E402

FRACTIONS = (DEFAULT_BATCH, 24, 12, 6, 3)


def measure(players: int, games: int, repeat: int) -> list[dict]:
    config = Configuration(players=players, bots=["random"] * players)
    play_games(config, 1, 0, 2000)  # warm caches and tables
    out, reference = [], None
    for fraction in FRACTIONS:
        sim.jobs.play.ROUND_END_FRACTION = fraction
        best = None
        for _ in range(repeat):
            t = time.process_time()
            records = play_games(config, 1, 0, games)
            cpu = time.process_time() - t
            best = cpu if best is None else min(best, cpu)
        if reference is None:
            reference = records.scores
        assert np.array_equal(records.scores, reference), "a fraction changed the games"
        out.append(
            {
                "players": players,
                "fraction": fraction,
                "threshold": max(1, min(DEFAULT_BATCH, games) // fraction),
                "games": games,
                "cpu_seconds": round(best, 3),
                "games_per_cpu_second": round(games / best),
            }
        )
        print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()  # every process that plays sets the allocator (sim.jobs.alloc)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--games", type=int, default=4 * DEFAULT_BATCH)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    saved = sim.jobs.play.ROUND_END_FRACTION
    try:
        rows = [row for p in args.players for row in measure(p, args.games, args.repeat)]
    finally:
        sim.jobs.play.ROUND_END_FRACTION = saved
    result = {"cpu": cpu_model(), "batch": DEFAULT_BATCH, "chosen": saved, "rows": rows}
    path = ROOT / "bench" / "results" / "round_end.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
