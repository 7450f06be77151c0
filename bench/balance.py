"""What the balance measures cost a chunk: the leader records at every wall tiling, the decision
turns at every pick and the balance counters, against the chunk's play (target: at most 3 %).

For each case below, one chunk of games is played (``--games N`` each; the service's chunks are
20,000 heuristic games) and timed:

- ``leaders``: the leader records' share of play. The engine counts the lead inside its round
  end (`sim.rules.compiled.count_lead`), so it is timed alone: called for every round of every game
  of the chunk, in a compiled loop, on the chunk's final scores;
- ``decisions``: the decision turns' share of play. The engine counts the legal picks inside its
  pick (`sim.rules.compiled.pick` calls `legal_count`), so the chunk is played twice more, each in a
  fresh process: by this tree, and by a copy of its `sim/` with those four lines of `pick` taken
  out (the A/B); the difference of the two play times (best of ``--repeats``, CPU time, the two
  run by turns) is the count's cost, shown as measured (noise can make it negative) and counted
  in the total as at least 0;
- ``counters``: `sim.stats.balance.count_balance` of the chunk, and
  `count_balance_paired` of the chunk against itself (a paired rule set's extra counting), the
  best of 3 calls (a worker counts chunk after chunk; the first call also pays cold caches);
- ``count``: all of `sim.stats.count` for context.

Play is CPU time (``time.process_time``), the best of ``--repeats`` chunks.

Writes bench/results/balance.json::

    python bench/balance.py [--games 20000] [--repeats 9]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = [
    # (label, configuration)
    ("heuristic 2p coloured", {"players": 2, "bots": ["heuristic"] * 2}),
    ("heuristic 4p gray", {"players": 4, "bots": ["heuristic"] * 4, "wall": "gray"}),
    ("greedy+heuristic 2p", {"players": 2, "bots": ["greedy", "heuristic"]}),
    ("greedy+random 4p", {"players": 4, "bots": ["greedy", "random"] * 2}),
]


def _leaders_seconds(records) -> float:
    """Seconds of `compiled.count_lead` for every round of every game of `records`."""
    from collections import namedtuple

    import numba
    import numpy as np

    from sim.rules import compiled

    # The fields of the engine's state that count_lead reads and writes.
    Lead = namedtuple(
        "Lead", "wall round scores trailing_rounds last_trailing_round leaders lead_changes"
    )

    @numba.njit(cache=False, nogil=True)
    def replay(S, rounds):
        for i in range(S.scores.shape[1]):
            for r in range(1, rounds[i] + 1):
                S.round[i] = r
                compiled.count_lead(S, i)

    n, players = len(records), records.players
    rounds = records.rounds.astype(np.int16)

    def fresh():
        return Lead(
            np.zeros((players, 1), np.int8),  # only its shape (the seats) is read
            np.zeros(n, np.int16),
            np.ascontiguousarray(records.scores.T.astype(np.int32)),
            np.zeros((players, n), np.int64),
            np.zeros((players, n), np.int16),
            np.zeros(n, np.int8),
            np.zeros(n, np.int16),
        )

    replay(fresh(), rounds)  # compile
    best = math.inf
    for _ in range(3):
        state = fresh()
        t = time.perf_counter()
        replay(state, rounds)
        best = min(best, time.perf_counter() - t)
    return best


# The four lines of `sim.rules.compiled.pick` that count the turn's legal picks (decision turns).
COUNTING = """    legal = legal_count(S, i)
    S.legal_actions[i] += legal
    if legal > 1:
        S.decision_turns[i] += 1
"""

# Run in a fresh process with PYTHONPATH at one tree: the best CPU time of `repeats` chunks.
PLAY_TIMER = """
import json, sys, time
from sim.jobs.alloc import tune_allocator
tune_allocator()
from sim.jobs.play import play_games
from sim.jobs.spec import JobSpec
cfg, games, repeats = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
spec = JobSpec.from_dict({"configurations": [cfg], "games": games, "seed": 1})
c = spec.configurations[0]
play_games(c, spec.seed, 0, min(games, 2000), 100)  # load (and compile) the engine first
best = float("inf")
for _ in range(repeats):
    t = time.process_time()
    play_games(c, spec.seed, 0, games, spec.max_rounds)
    best = min(best, time.process_time() - t)
print(best)
"""


def _tree_without_counting(folder: Path) -> Path:
    """A copy of this tree's `sim/` under `folder` whose `pick` counts no legal picks."""
    import shutil

    shutil.copytree(ROOT / "sim", folder / "sim", ignore=shutil.ignore_patterns("__pycache__"))
    compiled = folder / "sim" / "rules" / "compiled.py"
    text = compiled.read_text()
    if COUNTING not in text:
        raise SystemExit("bench/balance.py: sim/rules/compiled.py's pick no longer has COUNTING")
    compiled.write_text(text.replace(COUNTING, "", 1))
    return folder


def _play_seconds(tree: Path, cfg: dict, games: int, repeats: int) -> float:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", PLAY_TIMER, json.dumps(cfg), str(games), str(repeats)],
        env=env, cwd=tree, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(out.stdout.split()[-1])


def _measure(args, stripped: Path) -> list[dict]:
    """One row per case (see the module's docstring)."""
    import numpy as np

    from sim.jobs.play import play_games
    from sim.jobs.spec import JobSpec
    from sim.stats import count
    from sim.stats.balance import count_balance, count_balance_paired

    results = []
    for label, cfg in CASES:
        spec = JobSpec.from_dict({"configurations": [cfg], "games": args.games, "seed": 1})
        config = spec.configurations[0]
        play_games(config, spec.seed, 0, min(args.games, 2_000), 100)  # warm: load the engine
        records = play_games(config, spec.seed, 0, args.games, spec.max_rounds)
        with_count, without = math.inf, math.inf
        for _ in range(2):  # by turns, so that a change of the machine's load hits both
            with_count = min(with_count, _play_seconds(ROOT, cfg, args.games, args.repeats))
            without = min(without, _play_seconds(stripped, cfg, args.games, args.repeats))
        play_s = with_count
        decisions_s = with_count - without
        leaders_s = _leaders_seconds(records)
        counters_s = math.inf  # the best of 3: a worker counts chunk after chunk, warm
        for _ in range(3):
            t1 = time.process_time()
            count_balance(records, 0)
            count_balance_paired(records, records, 1)
            counters_s = min(counters_s, time.process_time() - t1)
        t2 = time.process_time()
        count(records, 0, config)
        count_s = time.process_time() - t2
        row = {
            "case": label,
            "games": args.games,
            "rounds_mean": float(np.mean(records.rounds)),
            "play_s": round(play_s, 4),
            "play_without_count_s": round(without, 4),
            "leaders_s": round(leaders_s, 5),
            "decisions_s": round(decisions_s, 5),
            "counters_s": round(counters_s, 5),
            "count_s": round(count_s, 4),
            "leaders_share": round(leaders_s / play_s, 5),
            "decisions_share": round(decisions_s / play_s, 5),
            "counters_share": round(counters_s / play_s, 5),
            "balance_share": round((leaders_s + max(decisions_s, 0) + counters_s) / play_s, 5),
        }
        results.append(row)
        print(json.dumps(row))
    return results


def main() -> None:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="azulsim-bench-"))
    try:
        results = _measure(args, _tree_without_counting(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = {
        "benchmark": "balance",
        "command": f"python bench/balance.py --games {args.games} --repeats {args.repeats}",
        "target": "leader records + decision turns + balance counters <= 3 % of a chunk's play",
        "machine": {"python": platform.python_version(), "processor": platform.processor()},
        "note": "play is CPU time, best of --repeats; the shares are what counts",
        "results": results,
        "worst_share": max(r["balance_share"] for r in results),
    }
    path = ROOT / "bench" / "results" / "balance.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}: worst share {out['worst_share']:.2%}")


if __name__ == "__main__":
    main()
