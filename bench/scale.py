"""The ceiling of one Redis: chunk merges per second through the real merge path.

Starts a private ``redis-server`` (loopback, no persistence), creates one job per player count
through `workers.store.JobStore`, and drives it from ``--clients`` worker processes that each loop
over their chunks exactly as a Celery chunk task does after playing (`workers.tasks`):
``JobStore.begin_chunk`` (the ``begin_chunk.lua`` script, after the context read), then
``JobStore.merge_chunk`` (``merge_chunk.lua``) with the counters of a real chunk (`sim.stats.count`
of games really played: 2p and 4p counters differ in size). No games are played in the loop, so the
clients are as fast as they can be and the figure is the store's, not the engine's.

It reports, per player count:

- ``merges_per_s``: chunks begun and merged per wall second with every client running (the
  clients share this machine's cores with Redis, so this is a lower bound);
- ``redis_cpu_ms_per_merge``: Redis CPU (``INFO cpu`` user + sys, main process) per chunk, both
  scripts included, and from it ``ceiling_merges_per_s`` = 1 / that: what one Redis serves with a
  core of its own — the figure that sizes a cluster;
- ``commandstats``: Redis's own per-command time (``INFO commandstats``), calls from inside Lua
  included: it says where a merge spends its time;
- ``largest_cluster_cores``: ``ceiling_merges_per_s * chunk_seconds``, where ``chunk_seconds`` is
  the default chunk (``AZULSIM_CHUNK_GAMES`` greedy-cost games, `workers.settings`) at this
  machine's greedy speed per CPU-second (measured here): how many busy worker cores one Redis
  keeps up with at its ceiling (halve it to leave Redis half idle);
- the API's calls/s per server process, read from ``bench/results/load.json`` when present
  (`bench/load.py` measures it).

Usage: ``python bench/scale.py [--clients 8] [--seconds 5] [--players 2 4]``. Writes
``bench/results/scale.json``. CPU figures are process CPU time, so they hold on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

RESULTS = ROOT / "bench" / "results" / "scale.json"
BOTS = {2: ["greedy", "random"], 4: ["greedy", "random", "heuristic", "greedy"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return port if port != 6379 else free_port()


def start_redis(workdir: Path) -> tuple[subprocess.Popen, int]:
    binary = os.environ.get("AZULSIM_REDIS_SERVER") or shutil.which("redis-server")
    if not binary:
        raise SystemExit("bench/scale.py needs redis-server on PATH (or AZULSIM_REDIS_SERVER)")
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    argv += ["no", "--dir", str(workdir), "--maxmemory-policy", "noeviction"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return proc, port
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("redis-server did not start") from None
            time.sleep(0.05)


def chunk_counters(players: int, games: int = 2000) -> dict[str, int]:
    """The counters of one real chunk (what a worker merges)."""
    from sim.jobs.play import play_games
    from sim.jobs.spec import Configuration
    from sim.stats import count

    config = Configuration(players, BOTS[players])
    return count(play_games(config, 1, 0, games), 0, config)


def greedy_games_per_cpu_second(games: int = 65536) -> float:
    from sim.jobs.alloc import tune_allocator
    from sim.jobs.play import play_games
    from sim.jobs.spec import Configuration

    tune_allocator()
    config = Configuration(2, ["greedy", "greedy"])
    play_games(config, 1, 0, 1000)
    t = time.process_time()
    play_games(config, 1, 0, games)
    return games / (time.process_time() - t)


def _client(port, settings, job_id, request_id, counters, games, me, clients, seconds, out):
    """One simulated worker: begin + merge its chunks (me, me + clients, ...) until time is up."""
    import redis

    from workers.store import JobStore

    store = JobStore(redis.Redis(port=port), settings)
    merged = 0
    chunk = me
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        status, _ = store.begin_chunk(job_id, chunk)
        if status != "run":
            raise RuntimeError(f"begin_chunk({chunk}) -> {status}")
        code, _ = store.merge_chunk(job_id, chunk, games, counters, request_id)
        if code != 1:
            raise RuntimeError(f"merge_chunk({chunk}) -> {code}")
        merged += 1
        chunk += clients
    out.put((merged, time.perf_counter() - start))


def redis_cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def command_stats(client) -> dict[str, dict]:
    return {
        k.removeprefix("cmdstat_"): {"calls": v["calls"], "usec": v["usec"]}
        for k, v in client.info("commandstats").items()
    }


def measure(port: int, players: int, clients: int, seconds: float) -> dict:
    import redis

    from sim.jobs.spec import Configuration, JobSpec
    from workers.settings import Settings
    from workers.store import JobStore

    settings = Settings(redis_url=f"redis://127.0.0.1:{port}", prefix=f"scale{players}")
    client = redis.Redis(port=port)
    store = JobStore(client, settings)
    spec = JobSpec([Configuration(players, BOTS[players])], games=10**12, seed=1)
    request_id = f"scale-{players}"
    job, _ = store.create_job(spec, request_id)
    counters = chunk_counters(players)
    games = settings.chunk_games
    client.config_resetstat()
    cpu0 = redis_cpu(client)
    out = multiprocessing.get_context("fork").Queue()
    procs = [
        multiprocessing.get_context("fork").Process(
            target=_client,
            args=(port, settings, job.job_id, request_id, counters, games, i, clients, seconds)
            + (out,),
        )
        for i in range(clients)
    ]
    began = time.perf_counter()
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 60) for _ in procs]
    wall = time.perf_counter() - began
    for p in procs:
        p.join()
    cpu = redis_cpu(client) - cpu0
    merges = sum(m for m, _ in results)
    stats = command_stats(client)
    # Every merge landed once: the job's chunks_done and one counter agree with what was sent.
    meta = store.get_job(job.job_id)
    if meta.chunks_done != merges:
        raise RuntimeError(f"chunks_done {meta.chunks_done} != merges {merges}")
    key = "c0|games"
    got = int(client.hget(store.job_keys(job.job_id)["counters"], key))
    if got != merges * counters[key]:
        raise RuntimeError(f"{key} = {got}, expected {merges * counters[key]}")
    client.delete(*store.job_keys(job.job_id).values())
    per_merge = cpu / merges
    return {
        "players": players,
        "counter_fields": len(counters),
        "extrema_fields": sum(k.startswith(("min|", "max|")) for k in counters),
        "clients": clients,
        "merges": merges,
        "seconds": round(wall, 3),
        "merges_per_s": round(merges / wall, 1),
        "redis_cpu_ms_per_merge": round(per_merge * 1e3, 4),
        "ceiling_merges_per_s": round(1 / per_merge, 1),
        "commandstats_usec_per_merge": {
            name: round(v["usec"] / merges, 2)
            for name, v in sorted(stats.items(), key=lambda kv: -kv[1]["usec"])
            if v["usec"] / merges >= 0.5
        },
    }


def api_calls_per_s() -> dict | None:
    """Back-to-back API calls/s of one server process, from bench/load.py's last run."""
    path = ROOT / "bench" / "results" / "load.json"
    try:
        runs = json.loads(path.read_text())["clients"]["runs"]
    except (OSError, KeyError, ValueError):
        return None
    busiest = min(runs, key=lambda r: r.get("think_ms", 0))
    methods = {
        k: v["calls_per_s"]
        for k, v in busiest.items()
        if isinstance(v, dict) and "calls_per_s" in v
    }
    return {
        "source": "bench/results/load.json",
        "think_ms": busiest.get("think_ms"),
        "per_method": methods,
        "total": round(sum(methods.values()), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="simulated worker processes")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per run")
    parser.add_argument("--players", type=int, nargs="+", default=[2, 4], choices=[2, 4])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from workers.settings import Settings

    chunk_games = Settings().chunk_games
    greedy = greedy_games_per_cpu_second()
    chunk_seconds = chunk_games / greedy
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_redis(Path(tmp))
        try:
            for players in args.players:
                row = measure(port, players, args.clients, args.seconds)
                row["largest_cluster_cores"] = round(row["ceiling_merges_per_s"] * chunk_seconds)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    doc = {
        "benchmark": "scale",
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "chunk_games": chunk_games,
        "greedy_games_per_cpu_second": round(greedy),
        "chunk_seconds": round(chunk_seconds, 3),
        "api_calls_per_s_per_server_process": api_calls_per_s(),
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k != "results"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
