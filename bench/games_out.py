"""`--games-out`: rows per second written, its share of play time, and memory at 1,000,000 games.

Plays one chunk of ``--chunk`` greedy-vs-random games (default 50,000; CPU time measured), then
writes ``--games`` rows (default 1,000,000) as the chunks of a job would be written: one chunk file
per chunk (`sim.jobs.gamerows.write_chunk`, the played records with their game indices moved on),
and gathers them into one file (`gather`), as service workers and ``azulsim export`` do, and writes
the same rows straight into one file as ``azulsim simulate --games-out`` does (`GamesWriter`).
Reports, in process CPU time (the machine is shared), rows per second of writing and of
gathering, the cost per game against playing it, and the peak RSS before and after writing (flat
when memory does not grow with the game count). Writes bench/results/games_out.json::

    python bench/games_out.py [--games 1000000] [--chunk 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import pyarrow.parquet as pq

    from sim.jobs.gamerows import gather, write_chunk
    from sim.jobs.play import play_games
    from sim.jobs.spec import JobSpec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    args = parser.parse_args()
    spec = JobSpec.from_dict(
        {
            "configurations": [{"players": 2, "bots": ["greedy", "random"]}],
            "games": args.games,
            "seed": 1,
        }  # fmt: skip
    )
    t0 = time.process_time()
    records = play_games(spec.configurations[0], spec.seed, 0, args.chunk)
    play_s = time.process_time() - t0
    rss_played = _rss_mb()
    work = Path(tempfile.mkdtemp(prefix="azulsim-games-out-"))
    try:
        chunks = -(-args.games // args.chunk)
        t0 = time.process_time()
        for c in range(chunks):
            n = min(args.chunk, args.games - c * args.chunk)
            rec = records.take(slice(0, n))
            rec.game = records.game[:n] + c * args.chunk
            write_chunk(work / "chunks", c, spec, [(0, rec)])
        write_s = time.process_time() - t0
        rss_written = _rss_mb()
        t0 = time.process_time()
        rows = gather(work / "chunks", work / "games.parquet", spec, expected_chunks=chunks)
        gather_s = time.process_time() - t0
        rss_gathered = _rss_mb()
        # In process (`simulate --games-out` without a baseline): chunks stream straight into
        # the file.
        from sim.jobs.gamerows import GamesWriter

        t0 = time.process_time()
        with GamesWriter(work / "direct.parquet", spec) as writer:
            for c in range(chunks):
                n = min(args.chunk, args.games - c * args.chunk)
                rec = records.take(slice(0, n))
                rec.game = records.game[:n] + c * args.chunk
                writer.write(0, rec)
        direct_s = time.process_time() - t0
        rss_direct = _rss_mb()
        assert pq.read_table(work / "direct.parquet").equals(pq.read_table(work / "games.parquet"))
        check = pq.ParquetFile(work / "games.parquet")
        assert check.metadata.num_rows == rows == args.games
        per_game_play = play_s / args.chunk
        per_game_rows = (write_s + gather_s) / rows
        result = {
            "benchmark": "games_out",
            "command": "python bench/games_out.py " + " ".join(sys.argv[1:]),
            "games": rows,
            "chunk_games": args.chunk,
            "play_cpu_s_per_game": per_game_play,
            "write_cpu_s": round(write_s, 3),
            "gather_cpu_s": round(gather_s, 3),
            "write_rows_per_s": round(rows / write_s),
            "gather_rows_per_s": round(rows / gather_s),
            "rows_per_s_write_and_gather": round(rows / (write_s + gather_s)),
            "pct_of_play_time_chunk_files_and_gather": round(
                100 * per_game_rows / per_game_play, 2
            ),
            "in_process_cpu_s": round(direct_s, 3),
            "in_process_rows_per_s": round(rows / direct_s),
            "in_process_pct_of_play_time": round(100 * direct_s / rows / per_game_play, 2),
            "file_bytes": (work / "games.parquet").stat().st_size,
            "peak_rss_mb": {
                "after_play": round(rss_played, 1),
                "after_write": round(rss_written, 1),
                "after_gather": round(rss_gathered, 1),
                "after_in_process": round(rss_direct, 1),
            },
            "cores": os.cpu_count(),
            "note": "process CPU time; the share of play time is against greedy vs random, the "
            "fastest pair (slower bots make it smaller)",
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "bench" / "results" / "games_out.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
