"""What the balance measures cost a chunk: the leader records at every wall tiling, the decision
turns at every pick and the balance counters, against the chunk's play (target: at most 3 %).

For each case below, one chunk of games is played (``--games N`` each; the service's chunks are
20,000 heuristic games) and timed:

- ``leaders``: the leader records' share of play. The engine counts the lead inside its round
  end (`sim.compiled.count_lead`), so it is timed alone: called for every round of every game of
  the chunk, in a compiled loop, on the chunk's final scores;
- ``decisions``: the decision turns' share of play. The engine counts the legal picks inside its
  pick (`sim.compiled.legal_count`), so that count is timed alone: called for every turn of every
  game of the chunk, in a compiled loop, on made-up tile presences and line masks (table
  look-ups: its cost does not depend on them);
- ``counters``: `sim.stats.balance.count_balance` of the chunk, and
  `count_balance_paired` of the chunk against itself (a paired rule set's extra counting), the
  best of 3 calls (a worker counts chunk after chunk; the first call also pays cold caches);
- ``count``: all of `sim.stats.count` for context.

Writes bench/results/balance.json::

    python bench/balance.py [--games 20000]
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

    from sim import compiled

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


def _decisions_seconds(records) -> float:
    """Seconds of `compiled.legal_count` and its two counts for every turn of `records`."""
    from collections import namedtuple

    import numba
    import numpy as np

    from sim import compiled

    # The fields of the engine's state that the counting reads and writes.
    Choices = namedtuple("Choices", "presence accept current decision_turns legal_actions")

    @numba.njit(cache=False, nogil=True)
    def replay(S, turns, players):
        for i in range(S.presence.shape[0]):
            present = S.presence[i]
            for t in range(turns[i]):
                S.current[i] = t % players
                S.presence[i] = present >> (t % 11)  # not one value the loop may hoist
                legal = compiled.legal_count(S, i)
                S.legal_actions[i] += legal
                if legal > 1:
                    S.decision_turns[i] += 1

    n, players = len(records), records.players
    turns = records.turns.astype(np.int32)
    accept = np.ascontiguousarray((records.scores.T.astype(np.int64) * 2654435761) & 0x1FFFFFF)

    def fresh():
        return Choices(
            (np.arange(n, dtype=np.int64) * 0x5851F42D4C957F2D >> 9) & ((1 << 55) - 1),
            accept.astype(np.int32),
            np.zeros(n, np.int8),
            np.zeros(n, np.int32),
            np.zeros(n, np.int32),
        )

    replay(fresh(), turns, players)  # compile
    best = math.inf
    for _ in range(3):
        state = fresh()
        t = time.perf_counter()
        replay(state, turns, players)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    from sim.alloc import tune_allocator

    tune_allocator()
    import numpy as np

    from sim.play import play_games
    from sim.spec import JobSpec
    from sim.stats import count
    from sim.stats.balance import count_balance, count_balance_paired

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    args = parser.parse_args()
    results = []
    for label, cfg in CASES:
        spec = JobSpec.from_dict({"configurations": [cfg], "games": args.games, "seed": 1})
        config = spec.configurations[0]
        play_games(config, spec.seed, 0, min(args.games, 2_000), 100)  # warm: load the engine
        t0 = time.perf_counter()
        records = play_games(config, spec.seed, 0, args.games, spec.max_rounds)
        play_s = time.perf_counter() - t0
        leaders_s = _leaders_seconds(records)
        decisions_s = _decisions_seconds(records)
        counters_s = math.inf  # the best of 3: a worker counts chunk after chunk, warm
        for _ in range(3):
            t1 = time.perf_counter()
            count_balance(records, 0)
            count_balance_paired(records, records, 1)
            counters_s = min(counters_s, time.perf_counter() - t1)
        t2 = time.perf_counter()
        count(records, 0, config)
        count_s = time.perf_counter() - t2
        row = {
            "case": label,
            "games": args.games,
            "rounds_mean": float(np.mean(records.rounds)),
            "play_s": round(play_s, 4),
            "leaders_s": round(leaders_s, 5),
            "decisions_s": round(decisions_s, 5),
            "counters_s": round(counters_s, 5),
            "count_s": round(count_s, 4),
            "leaders_share": round(leaders_s / play_s, 5),
            "decisions_share": round(decisions_s / play_s, 5),
            "counters_share": round(counters_s / play_s, 5),
            "balance_share": round((leaders_s + decisions_s + counters_s) / play_s, 5),
        }
        results.append(row)
        print(json.dumps(row))
    out = {
        "benchmark": "balance",
        "command": f"python bench/balance.py --games {args.games}",
        "target": "leader records + decision turns + balance counters <= 3 % of a chunk's play",
        "machine": {"python": platform.python_version(), "processor": platform.processor()},
        "note": "measured on a shared, loaded 2-core machine: shares are what counts",
        "results": results,
        "worst_share": max(r["balance_share"] for r in results),
    }
    path = ROOT / "bench" / "results" / "balance.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}: worst share {out['worst_share']:.2%}")


if __name__ == "__main__":
    main()
