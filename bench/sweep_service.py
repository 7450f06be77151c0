"""A 10 x 10 sweep through the service's chunk path: Redis memory per job and chunk overhead.

The job is ``azulsim sweep --bots 'heuristic:floor=0..4.5/0.5,marker=0..0.9/0.1,greedy' --games
10000``: 100 paired configurations, 1,000,000 games. Its chunks are cut as the service cuts them
(`sim.jobs.chunk.chunk_games_for` at the default AZULSIM_CHUNK_GAMES); this plays the first
``--chunks`` of them (default 2) as a worker does (`sim.jobs.chunk.play_chunk`), merges each into a
private redis-server (`JobStore.merge_chunk`, one Lua script) and reports, in process CPU time (the
machine is shared), play, count and merge per chunk and the job's Redis memory after each chunk
(`MEMORY USAGE` of every key of the job). Memory after chunk 1 and after chunk 2 are equal when it
is independent of the games played. Writes bench/results/sweep_service.json::

    python bench/sweep_service.py [--chunks 2] [--games 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BOTS = ["heuristic:floor=0..4.5/0.5,marker=0..0.9/0.1", "greedy"]


def _redis():
    from service.stack import free_port, redis_argv, redis_binary, redis_ready

    port = free_port()
    proc = subprocess.Popen(
        redis_argv(redis_binary(), port, Path(tempfile.mkdtemp())), stdout=subprocess.DEVNULL
    )
    while not redis_ready(port):
        time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def _cpu() -> float:
    return time.process_time()


def main() -> None:
    import redis

    from sim.experiments.sweep import sweep_spec
    from sim.jobs.chunk import chunk_games_for, chunks_total
    from sim.jobs.play import play_games
    from sim.jobs.sequential import count_chunk
    from workers.settings import Settings
    from workers.store import JobStore

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000, help="games per configuration")
    parser.add_argument("--chunks", type=int, default=2, help="chunks to play and merge")
    args = parser.parse_args()
    spec = sweep_spec(BOTS, games=args.games, seed=1)
    settings_games = Settings().chunk_games
    chunk_games = chunk_games_for(spec, settings_games)
    proc, url = _redis()
    try:
        client = redis.Redis.from_url(url)
        store = JobStore(client, Settings(redis_url=url, prefix="bench"))
        job, _ = store.create_job(spec, None)
        keys = store.job_keys(job.job_id)

        def job_bytes() -> int:
            return sum(client.memory_usage(k, samples=0) or 0 for k in keys.values())

        before = job_bytes()
        chunks = []
        for chunk in range(min(args.chunks, chunks_total(spec, chunk_games))):
            start, stop = chunk * chunk_games, min((chunk + 1) * chunk_games, spec.games)
            t0 = _cpu()
            records = [play_games(c, spec.seed, start, stop) for c in spec.configurations]
            t1 = _cpu()
            joint = count_chunk(spec, records, start, stop)  # what play_chunk does, timed apart
            t2 = _cpu()
            del records
            games = (stop - start) * len(spec.configurations)
            store.merge_chunk(job.job_id, chunk, games, joint["counters"])
            t3 = _cpu()
            counters = joint["counters"]
            row = {
                "chunk": chunk,
                "games": games,
                "play_cpu_s": round(t1 - t0, 3),
                "count_cpu_s": round(t2 - t1, 3),
                "merge_client_cpu_s": round(t3 - t2, 3),
                "counter_keys": len(counters),
                "job_redis_bytes": job_bytes(),
            }
            chunks.append(row)
            print(json.dumps(row), flush=True)
        # The merge's server side: time one more merge of the same counters (into a scratch job).
        scratch, _ = store.create_job(spec, "scratch")
        t0 = time.perf_counter()
        store.merge_chunk(scratch.job_id, 0, games, counters)
        merge_wall = time.perf_counter() - t0
        redis_cpu = client.info("cpu")
        play = sum(c["play_cpu_s"] for c in chunks)
        count = sum(c["count_cpu_s"] for c in chunks)
        summary = {
            "benchmark": "sweep_service",
            "command": "python bench/sweep_service.py " + " ".join(sys.argv[1:]),
            "spec": {
                "bots": BOTS,
                "configurations": len(spec.configurations),
                "games_per_configuration": spec.games,
            },  # fmt: skip
            "chunk_games_setting": settings_games,
            "chunk_games_per_configuration": chunk_games,
            "chunks_in_job": chunks_total(spec, chunk_games),
            "job_redis_bytes_empty": before,
            "chunks": chunks,
            "merge_wall_s": round(merge_wall, 3),
            "redis_used_cpu_s": redis_cpu.get("used_cpu_sys", 0)
            + redis_cpu.get("used_cpu_user", 0),
            "count_pct_of_play": round(100 * count / play, 2),
            "count_and_merge_pct_of_play": round(
                100 * (count + len(chunks) * merge_wall) / play, 2
            ),
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cores": os.cpu_count(),
            "note": "CPU seconds of this process (play, count); merge as wall time of one Lua "
            "merge on an idle private redis-server. The machine is shared.",
        }
        out = ROOT / "bench" / "results" / "sweep_service.json"
        out.write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps({k: v for k, v in summary.items() if k != "chunks"}, indent=1))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
