"""What the replication guarantee costs a merge: `JobStore.merge_chunk` with and without the
WAIT for the replica (``AZULSIM_REDIS_WAIT_REPLICAS`` 1 vs 0), on a primary, a replica and three
Sentinels started here (`service.stack.SentinelGroup`, loopback), the store reaching the primary
through the Sentinels as the workers do.

Each round merges every chunk of a fresh job (real counters: one chunk played once and merged
again under each index), from 1 thread and from 4 (four pool processes merging at once), and
writes bench/results/failover_merge.json::

    python bench/failover_merge.py [--chunks 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SPEC = {
    "configurations": [{"players": 2, "bots": ["greedy", "random"]}],
    "seed": 1,
}


def merge_all(store, job_id: str, chunks: int, games: int, counters: dict, threads: int) -> float:
    """Seconds to merge chunks 0..chunks-1 of `job_id` from `threads` threads."""

    def one(c: int) -> None:
        code, _ = store.merge_chunk(job_id, c, games, counters)
        assert code in (1, 2), code

    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(chunks)))
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk-games", type=int, default=100)
    args = parser.parse_args()

    from service.stack import SentinelGroup
    from sim.jobs.chunk import play_chunk
    from sim.jobs.spec import JobSpec
    from workers.settings import load_settings
    from workers.store import JobStore, connect

    spec = JobSpec.from_dict({**SPEC, "games": args.chunks * args.chunk_games})
    games, counters, _, _ = play_chunk(spec, args.chunk_games, 0)
    results = []
    with tempfile.TemporaryDirectory() as tmp, SentinelGroup(Path(tmp)) as group:
        for wait in (0, 1):
            env = {**group.env, "AZULSIM_REDIS_WAIT_REPLICAS": str(wait), "AZULSIM_PREFIX": "b"}
            env["AZULSIM_CHUNK_GAMES"] = str(args.chunk_games)
            settings = load_settings(env)
            store = JobStore(connect(settings), settings)
            for threads in (1, 4):
                times = []
                for _ in range(args.rounds):
                    job, _ = store.create_job(spec, None)
                    assert job.chunks_total == args.chunks, job.chunks_total
                    seconds = merge_all(store, job.job_id, args.chunks, games, counters, threads)
                    times.append(seconds)
                best = min(times)
                results.append(
                    {
                        "wait_replicas": wait,
                        "threads": threads,
                        "chunks": args.chunks,
                        "counter_fields": len(counters),
                        "merges_per_s": round(args.chunks / best, 1),
                        "ms_per_merge": round(1000 * best / args.chunks, 3),
                        "rounds_s": [round(t, 3) for t in times],
                    }
                )
                print(json.dumps(results[-1]), flush=True)
            store.redis.close()
    by = {(r["wait_replicas"], r["threads"]): r["merges_per_s"] for r in results}
    summary = {f"threads_{t}": round(by[(1, t)] / by[(0, t)], 3) for t in (1, 4)}
    out = ROOT / "bench" / "results" / "failover_merge.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "failover_merge",
                "what": "JobStore.merge_chunk through the Sentinels, WAIT for 1 replica or not",
                "cores": os.cpu_count(),
                "note": "loopback primary and replica on the same (shared, loaded) machine",
                "throughput_with_wait_over_without": summary,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}: with WAIT / without = {summary}")


if __name__ == "__main__":
    main()
