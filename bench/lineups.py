"""Games per CPU-second of self-play and mixed line-ups, for a side-by-side comparison of two trees.

Each row plays one line-up through `sim.jobs.play.play_games` (the path every chunk takes) in this
process, after a warm-up that loads the compiled engine, and reports games per CPU-second
(``time.process_time``: this process's CPU, so other load on a shared machine matters less than
for wall time). ``plugin`` is a bot of this script's own, as a third-party bot would be: the
`random` bot's picks with its own gray-wall column choice (Python, asked row by row);
``numpy_plugin`` one that chooses its picks itself, in numpy, as a third-party bot does (the
`random` bot's definition, `sim.bots.sampling.uniform_legal`: the same games as ``plugin``).

Run it once per tree with that tree first on ``PYTHONPATH`` and compare the ratios::

    PYTHONPATH=/path/to/other/tree python bench/lineups.py --out other.json
    python bench/lineups.py --against other.json    # writes bench/results/lineups.json

Figures on a loaded machine vary by tens of per cent from run to run; run both trees in turn.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "lineups.json"

LINEUPS = [
    ("random", "random"),
    ("greedy", "greedy"),
    ("heuristic", "heuristic"),
    ("random", "greedy"),
    ("random", "heuristic"),
    ("greedy", "heuristic"),
    ("greedy", "plugin"),
    ("greedy", "numpy_plugin"),
]
GAMES = {
    "random": 32_768,
    "greedy": 16_384,
    "heuristic": 16_384,
    "plugin": 8_192,
    "numpy_plugin": 8_192,
}


def _plugin_bot(name: str = "plugin"):
    from sim.bots.base import turn_uniforms
    from sim.bots.random_bot import RandomBot
    from sim.bots.sampling import uniform_legal

    class Plugin(RandomBot):
        """The random bot's picks; its gray-wall column the rightmost legal one."""

        def choose_columns(self, st, slots, seat, row, colours, legal, keys):
            return (np.log2(np.asarray(legal)).astype(np.int64)).astype(np.intp)

    class NumpyPlugin(Plugin):
        """`Plugin` choosing its picks in numpy."""

        def act(self, st, slots, keys):
            return uniform_legal(st, slots, turn_uniforms(st, slots, keys))

    return NumpyPlugin() if name == "numpy_plugin" else Plugin()


def play(lineup, wall: str, games: int):
    from sim.bots import make_bot
    from sim.jobs.play import play_batch
    from sim.jobs.spec import Configuration, first_player, seat_assignment

    names = list(lineup)
    unique = list(dict.fromkeys(names))  # one object per spec, as `sim.jobs.play.set_table` makes
    plugins = ("plugin", "numpy_plugin")
    bots = [_plugin_bot(n) if n in plugins else make_bot(n) for n in unique]
    config = Configuration(2, ["random" if n in plugins else n for n in names], wall=wall)
    ids = np.arange(games, dtype=np.int64)
    to_unique = np.array([unique.index(n) for n in names], np.int8)
    seat_bot = to_unique[seat_assignment(config, 2, ids)]
    cpu = time.process_time()
    records = play_batch(2, wall, 2, ids, first_player(2, ids, 2), seat_bot, bots)
    return records, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--against", help="another tree's --out, to print ratios beside it")
    parser.add_argument("--scale", type=float, default=1.0, help="games per row times this")
    parser.add_argument("--walls", default="coloured,gray")
    args = parser.parse_args()
    from sim.jobs.alloc import tune_allocator

    tune_allocator()
    # Load what either tree compiles: a tree may compile whole-game self-play only for calls of
    # 16,384 games or more.
    play(("random", "greedy"), "gray", 64)
    for bot in ("random", "greedy", "heuristic"):
        play((bot, bot), "gray", 16_384)
    rows = {}
    for wall in args.walls.split(","):
        for lineup in LINEUPS:
            games = int(min(GAMES[b] for b in lineup) * args.scale)
            records, cpu = play(lineup, wall, games)
            key = f"{'+'.join(lineup)}/{wall}"
            rows[key] = {
                "games": games,
                "games_per_cpu_second": round(games / cpu),
                "mean_score": round(float(records.scores.mean()), 4),
            }
            print(key, rows[key], flush=True)
    if args.against:
        with open(args.against) as f:
            other = json.load(f)
        for key, row in rows.items():
            if key in other:
                theirs = other[key]["games_per_cpu_second"]
                row["other_tree_games_per_cpu_second"] = theirs
                row["ratio"] = round(row["games_per_cpu_second"] / theirs, 2)
                row["same_games"] = row["mean_score"] == other[key]["mean_score"]
                print(f"{key:32s} {row['ratio']:5.2f}x  same games: {row['same_games']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
