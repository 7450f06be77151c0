"""`azulsim simulate` scaling: the same greedy job with --workers 1 and --workers 2.

Runs ``azulsim simulate --players 2 --bots greedy,greedy --games N --seed 7 --json`` once per
worker count, reads the run's own ``timing`` section, checks that both runs print the same
statistics, and writes ``bench/results/simulate_scaling.json``. Target: on this 2-core
machine, 2 workers run at ≥ 1.8× the speed of 1 on a 1,000,000-game job.

Usage: ``python bench/simulate_scaling.py [--games 1000000] [--workers 1 2]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_seconds, machine  # noqa: E402  (bench/, the script's own directory)


def run(games: int, workers: int) -> tuple[dict, float]:
    """The run's statistics document and the CPU seconds it used (it and its pool processes)."""
    cmd = [sys.executable, "-m", "service.cli", "simulate", "--players", "2"]
    cmd += ["--bots", "greedy,greedy", "--games", str(games), "--seed", "7"]
    cmd += ["--workers", str(workers), "--json"]
    cpu0 = cpu_seconds()
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out), cpu_seconds() - cpu0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "simulate_scaling.json"
    )
    args = parser.parse_args(argv)
    rows, docs = [], []
    for workers in args.workers:
        doc, cpu = run(args.games, workers)
        timing = doc.pop("timing")
        docs.append(doc)
        row = {"workers": workers, "games": args.games, **timing}
        row["cpu_seconds"] = round(cpu, 3)  # the whole process and its pool, start-up included
        row["games_per_cpu_second"] = round(args.games / cpu)
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]["games_per_second"]
    for row in rows:
        row["speedup"] = round(row["games_per_second"] / base, 3)
    summary = {
        "benchmark": "simulate_scaling",
        "machine": machine(),
        "identical_statistics": all(d == docs[0] for d in docs),
        "results": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
