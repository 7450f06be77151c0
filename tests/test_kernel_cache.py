"""The compiled kernels when several processes start at once (sim/compile_once.py): the search
bots' play-outs (sim/bots/playout.py `ready`) and self-play (sim/self_play.py).

Processes that start together (a worker's pool, test runners) find no cached machine code; one
compiles and writes numba's cache while the others wait on the lock, then load it. Each must play
the same games as any other process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import generous

ROOT = Path(__file__).resolve().parent.parent

PLAY = """
from sim import self_play
from sim.play import play_games
from sim.spec import Configuration
for wall in ("coloured", "gray"):
    records = play_games(Configuration(2, ["search", "rollout"], wall=wall), 3, 0, 20)
    print(int(records.scores.sum()), int(records.turns.sum()))
    records = play_games(Configuration(2, ["random"] * 2, wall=wall), 3, 0, self_play.MIN_GAMES)
    print(int(records.scores.sum()), int(records.turns.sum()))
"""


# Three processes compiling numba's kernels at once: minutes of CPU on a busy two-core machine.
@pytest.mark.timeout(1800)
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
        out, err = proc.communicate(timeout=generous(240))
        assert proc.returncode == 0, err.decode()[-2000:]
        assert b"Warning" not in err, err.decode()[-2000:]
        lines = out.decode().splitlines()
        games.append([line for line in lines if not line.startswith("[cache]")])
        saved += [line.split("data saved to")[1] for line in lines if "data saved to" in line]
    assert games[0] and games.count(games[0]) == 3
    # Each kernel was compiled and saved by one process; the others loaded what it saved.
    assert len(saved) == len(set(saved)), saved
    names = {Path(path.strip(" '\"")).name.split("-")[0] for path in saved}
    assert {"kernels.play_picks", "kernels.end_rounds", "compiled.play_random"} <= names, names


def _numba_imported_after(*calls: str) -> list[bool]:
    """In a fresh process, whether numba is imported after each of the `calls` (in turn)."""
    script = "import sys\nfrom sim import self_play\nfrom sim.bots import make_bot\n"
    script += "from sim.play import play_games\nfrom sim.spec import Configuration as C\n"
    script += "".join(f"{call}\nprint('numba' in sys.modules)\n" for call in calls)
    return [
        line == "True"
        for line in subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=generous(240),
            check=True,
        ).stdout.split()
    ]


@pytest.mark.timeout(1800)
def test_only_a_search_or_large_self_play_imports_numba():
    # numba costs about 50 MB and 0.3 s to import: the API server, spec validation, small runs
    # and the other bots' workers do without it.
    assert _numba_imported_after(
        "make_bot('search'), make_bot('rollout')",
        "play_games(C(2, ['greedy', 'heuristic']), 1, 0, 10)",
        "play_games(C(2, ['rollout', 'greedy']), 1, 0, 2)",
    ) == [False, False, True]
    assert _numba_imported_after(
        "play_games(C(2, ['random', 'random'], wall='gray'), 1, 0, 2000)",
        "play_games(C(2, ['heuristic', 'heuristic']), 1, 0, 500)",
        "play_games(C(2, ['random', 'greedy']), 1, 0, self_play.MIN_GAMES)",
        "play_games(C(2, ['random', 'random']), 1, 0, self_play.MIN_GAMES)",
    ) == [False, False, False, True]
