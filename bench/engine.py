"""Engine throughput: uniform-random games in-process on one core.

Plays games of `random` bots through `sim.jobs.play.play_games` (the same path a job takes) in
chunks until `--seconds` have passed, and prints one JSON object per line per configuration::

    {"players": 2, "wall": "coloured", "games": ..., "seconds": ..., "games_per_second": ...,
     "cpu_seconds": ..., "games_per_cpu_second": ..., "batch": 16384, "first_batch_seconds": ...}

`first_batch_seconds` is the wall time of a fresh process that imports `sim` and plays its first
1,000 games (the "no long JIT" check). The process pins itself to one core where the OS allows.
Figures are also written to ``bench/results/engine.json``.

Usage: ``python bench/engine.py [--players 2 4] [--wall coloured gray] [--seconds 10]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

from sim.jobs.play import DEFAULT_BATCH, play_games  # noqa: E402
from sim.jobs.spec import Configuration  # noqa: E402

FIRST_BATCH = (
    "import time; t = time.perf_counter(); "
    "from sim.jobs.play import play_games; from sim.jobs.spec import Configuration; "
    "play_games(Configuration(players={p}, bots=['random'] * {p}, wall='{w}'), 0, 0, 1000); "
    "print(time.perf_counter() - t)"
)


def first_batch_seconds(players: int, wall: str) -> float:
    """Wall time for a fresh interpreter to import sim and play 1,000 games."""
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", FIRST_BATCH.format(p=players, w=wall)],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    return round(time.perf_counter() - t, 3)


def measure(players: int, wall: str, seconds: float, seed: int = 1) -> dict:
    config = Configuration(players=players, bots=["random"] * players, wall=wall)
    chunk = 8 * DEFAULT_BATCH  # large against the batch, so start-up and drain cost little
    play_games(config, seed, 0, 2000)  # warm caches and tables
    games = 0
    scores = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < seconds:
        records = play_games(config, seed, games, games + chunk)
        games += chunk
        scores += int(records.scores.sum())
    elapsed, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "players": players,
        "wall": wall,
        "games": games,
        "seconds": round(elapsed, 3),
        "games_per_second": round(games / elapsed),
        "cpu_seconds": round(cpu, 3),
        "games_per_cpu_second": round(games / cpu),
        "batch": DEFAULT_BATCH,
        "mean_score": round(scores / (games * players), 3),
        "first_batch_seconds": first_batch_seconds(players, wall),
    }


def main(argv: list[str] | None = None) -> int:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()  # every process that plays sets the allocator (sim.jobs.alloc)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=[2, 3, 4])
    parser.add_argument("--wall", nargs="+", default=["coloured"], choices=["coloured", "gray"])
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measuring time per configuration"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "engine.json")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rows = []
    for players in args.players:
        for wall in args.wall:
            row = measure(players, wall, args.seconds)
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "engine",
                "machine": {
                    "cpu": cpu_model(),
                    "cores": os.cpu_count(),
                },
                "numpy": np.__version__,
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
