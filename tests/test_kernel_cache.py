"""The compiled play-outs when several processes start at once (sim/bots/playout.py `ready`).

Processes that start together (a worker's pool, test runners) find no cached machine code; one
compiles and writes numba's cache while the others wait on the lock, then load it. Each must play
the same games as any other process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLAY = """
from sim.play import play_games
from sim.spec import Configuration
for wall in ("coloured", "gray"):
    records = play_games(Configuration(2, ["search", "rollout"], wall=wall), 3, 0, 20)
    print(int(records.scores.sum()), int(records.turns.sum()))
"""


def test_processes_starting_together_compile_once_and_play_the_same_games(tmp_path):
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "NUMBA_DEBUG_CACHE": "1",  # numba says what it saves to and loads from its cache
        "PYTHONPATH": str(ROOT),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PLAY], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    games, saved = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-2000:]
        assert b"Warning" not in err, err.decode()[-2000:]
        lines = out.decode().splitlines()
        games.append([line for line in lines if not line.startswith("[cache]")])
        saved.append(sum("data saved" in line for line in lines))
    assert games[0] and games.count(games[0]) == 3
    # One process compiled every kernel and saved it; the others loaded what it saved.
    assert sorted(saved)[:2] == [0, 0] and max(saved) >= 4, saved


def test_only_a_search_imports_numba():
    # numba costs about 50 MB and 0.1 s to import: the API server, spec validation and the other
    # bots' workers do without it.
    script = (
        "import sys\n"
        "from sim.bots import make_bot\n"
        "from sim.play import play_games\n"
        "from sim.spec import Configuration\n"
        "make_bot('search'), make_bot('rollout')\n"
        "play_games(Configuration(2, ['greedy', 'heuristic']), 1, 0, 10)\n"
        "print('numba' in sys.modules)\n"
        "play_games(Configuration(2, ['rollout', 'greedy']), 1, 0, 2)\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    ).stdout.split()
    assert out == ["False", "True"]
