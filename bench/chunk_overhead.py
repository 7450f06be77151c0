"""What a chunk task spends beside playing: counting (`sim.stats.count`) and the Redis merge.

Plays one chunk per configuration below (default 50,000 games; ``--games N``), then times
`sim.stats.count` and `JobStore.merge_chunk` (one Lua script) against a private redis-server
started here, and writes bench/results/chunk_overhead.json::

    python bench/chunk_overhead.py [--games 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = [
    {"players": 2, "bots": ["greedy", "greedy"]},
    {"players": 4, "bots": ["greedy", "random", "greedy", "random"]},
]


def main() -> None:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()  # every process that plays sets the allocator (sim.jobs.alloc)
    import redis

    from sim.jobs.play import play_games
    from sim.jobs.spec import JobSpec
    from sim.stats import count
    from workers.settings import Settings
    from workers.store import JobStore

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=50_000)
    args = parser.parse_args()
    from service.stack import RedisServer

    server = RedisServer(Path(tempfile.mkdtemp())).start()
    url = server.url
    try:
        client = redis.Redis.from_url(url)
        store = JobStore(client, Settings(redis_url=url, prefix="bench", chunk_games=args.games))
        results = []
        for cfg in CONFIGS:
            spec = JobSpec.from_dict({"configurations": [cfg], "games": args.games * 4, "seed": 1})
            config = spec.configurations[0]
            t0 = time.perf_counter()
            records = play_games(config, spec.seed, 0, args.games, spec.max_rounds)
            t1 = time.perf_counter()
            counters = count(records, 0, config)
            t2 = time.perf_counter()
            job, _ = store.create_job(spec, None)
            t3 = time.perf_counter()
            store.merge_chunk(job.job_id, 0, args.games, counters)
            t4 = time.perf_counter()
            results.append(
                {
                    "players": cfg["players"],
                    "bots": cfg["bots"],
                    "games": args.games,
                    "play_s": round(t1 - t0, 3),
                    "count_s": round(t2 - t1, 4),
                    "merge_s": round(t4 - t3, 4),
                    "counter_keys": len(counters),
                    "overhead_pct": round(100 * (t4 - t3 + t2 - t1) / (t1 - t0), 2),
                    "redis_bytes": sum(
                        client.memory_usage(k, samples=0) or 0
                        for k in store.job_keys(job.job_id).values()
                    ),
                }
            )
            print(json.dumps(results[-1]))
        out = ROOT / "bench" / "results" / "chunk_overhead.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(
                {"benchmark": "chunk_overhead", "cores": os.cpu_count(), "results": results},
                indent=1,
            )
            + "\n"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
