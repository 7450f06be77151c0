"""End-to-end throughput of the service: a 2p greedy job through gRPC, Celery and Redis.

Starts the local stack (`service.stack.Stack`: a private redis-server, one Celery worker with
`--workers` pool processes, the gRPC server), submits one job of `--games` games of 2-player
``greedy`` vs ``greedy`` through the API, watches it to the end and reports games/s end to end
(from submit to SUCCEEDED). For scale, it also measures the in-process single-core rate in this
process — `sim.jobs.play.play_games` plus `sim.stats.count` on chunks of the same size the workers
use — and reports ``ratio = end-to-end rate / (workers x single-core rate)``: 1.0 would be perfect
scaling with no overhead from the queue, Redis merges or the API.

    python bench/service.py                      # 2,000,000 games, 2 workers
    python bench/service.py --games 200000       # smaller
    python bench/service.py --workers 4 --out /tmp/service.json

Writes its figures to ``bench/results/service.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.client import Client  # noqa: E402
from service.stack import Stack  # noqa: E402
from sim.jobs.play import play_games  # noqa: E402
from sim.jobs.spec import JobSpec  # noqa: E402
from sim.stats import count  # noqa: E402


def single_core_rate(spec: JobSpec, chunk: int, seconds: float) -> tuple[float, int]:
    """Games/s of play + count in this process, on whole chunks, for at least `seconds`."""
    config = spec.configurations[0]
    play_games(config, spec.seed, 0, min(chunk, 2000), spec.max_rounds)  # warm up
    games, start, began = 0, 0, time.perf_counter()
    while True:
        stop = start + chunk
        records = play_games(config, spec.seed, start, stop, spec.max_rounds)
        count(records, 0, config)
        games += chunk
        start = stop
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return games / elapsed, games


def main(argv: list[str] | None = None) -> int:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()  # every process that plays sets the allocator (sim.jobs.alloc)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=2_000_000, help="games in the job (default 2M)")
    p.add_argument("--workers", type=int, default=2, help="worker pool processes (default 2)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline-s", type=float, default=10.0, help="seconds of single-core timing")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "service.json"))
    args = p.parse_args(argv)

    from workers.settings import load_settings

    chunk = load_settings().chunk_games
    spec = JobSpec.from_dict(
        {
            "configurations": [{"players": 2, "bots": ["greedy", "greedy"]}],
            "games": args.games,
            "seed": args.seed,
        }
    )
    print(f"single-core baseline: play_games + count, chunks of {chunk:,} games…", flush=True)
    single, single_games = single_core_rate(spec, chunk, args.baseline_s)
    print(f"  {single:,.0f} games/s ({single_games:,} games)", flush=True)

    env = {k: v for k, v in os.environ.items() if k != "AZULSIM_REDIS_URL"}
    with Stack(workers=args.workers, listen="127.0.0.1:0", env=env) as stack:
        with Client(stack.address, token="", timeout=60) as client:
            client.wait_ready(30)
            time.sleep(3.0)  # let the worker's pool processes start
            began = time.perf_counter()
            job, _ = client.submit(spec)
            last = None
            for update in client.watch(job.job_id, interval_ms=200):
                last = update
            seconds = time.perf_counter() - began
            stats = client.statistics(job.job_id)
    stack.cleanup()
    if last is None or last.state != 3:  # SUCCEEDED
        print(f"job did not succeed: {last}", file=sys.stderr)
        return 1
    rate = args.games / seconds
    ratio = rate / (args.workers * single)
    result = {
        "games": args.games,
        "players": 2,
        "bots": ["greedy", "greedy"],
        "workers": args.workers,
        "chunks": last.chunks_total,
        "games_per_chunk": -(-args.games // max(1, last.chunks_total)),
        "baseline_chunk_games": chunk,
        "seconds_end_to_end": round(seconds, 3),
        "games_per_second_end_to_end": round(rate, 1),
        "single_core_games_per_second": round(single, 1),
        "ratio_to_workers_x_single_core": round(ratio, 3),
        "games_counted": stats.games_done,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "command": " ".join(
            ["python bench/service.py", *(argv if argv is not None else sys.argv[1:])]
        ),
    }
    print(
        f"{args.games:,} games in {seconds:.1f} s end to end: {rate:,.0f} games/s with "
        f"{args.workers} workers = {ratio:.2f} x ({args.workers} x single-core {single:,.0f})"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
