"""What loading the compiled engine costs a process: CPU seconds and resident memory.

Each measurement runs in a fresh Python process (the engine loads once per process, at its first
game): the process imports what the API server imports for a replay, then times its first
``ReplayGame`` (`service.replay.replay_game`, one game recorded step by step) and a second one,
and the first and second `sim.jobs.play.play_games` call of a worker. The cache is warm (the machine
code is loaded from numba's cache, not compiled); a ``--cold`` run points the cache at an empty
folder and so includes the compile. Writes ``bench/results/engine_load.json``.

Usage: ``python bench/engine_load.py [--cold]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "engine_load.json"

PROBE = r"""
import json, resource, time
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 // 2**20
def mark(label, t0):
    out[label] = {"cpu_seconds": round(time.process_time() - t0, 3), "rss_mb": rss()}
out = {}
t0 = time.process_time()
import sim.jobs.play, sim.jobs.spec, service.replay
mark("imports", t0)
from sim.jobs.spec import JobSpec, Configuration
spec = JobSpec(
    configurations=[Configuration(2, ["greedy", "heuristic"], wall="gray")], games=10, seed=1
)
t0 = time.process_time()
service.replay.replay_game(spec, 0, 3)
mark("first_replay_game", t0)
t0 = time.process_time()
service.replay.replay_game(spec, 0, 4)
mark("second_replay_game", t0)
t0 = time.process_time()
sim.jobs.play.play_games(Configuration(2, ["random", "greedy"]), 1, 0, 1000)
mark("then_1000_random_greedy_games", t0)
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cold", action="store_true", help="compile into an empty cache")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as empty:
        if args.cold:
            env["NUMBA_CACHE_DIR"] = empty
        run = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        )
    doc = {"benchmark": "engine_load", "cache": "cold" if args.cold else "warm"}
    doc.update(json.loads(run.stdout.splitlines()[-1]))
    print(json.dumps(doc, indent=1))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
