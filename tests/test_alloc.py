"""The allocator is set in every process that plays (`sim.jobs.alloc`, docs/engine.md).

Without it, heuristic play faults in about 18 fresh pages per game (its numpy temporaries are
mmap'd and unmapped every step); with it, well under one. The bound below sits between the two.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import generous

ROOT = Path(__file__).resolve().parents[1]

# Plays a warm-up job, then N heuristic games through run_local, and prints the minor page faults
# per game of this process and of its (reaped) pool children.
SCRIPT = """
import json, resource, sys
from sim.jobs.local import run_local
from sim.jobs.spec import Configuration, JobSpec

workers, games = int(sys.argv[1]), int(sys.argv[2])
def spec(n):
    return JobSpec(configurations=[Configuration(2, ["heuristic", "heuristic"])], games=n, seed=3)
run_local(spec(2000), workers=1, chunk_size=2000)  # imports, tables, first heap growth
before = [resource.getrusage(w).ru_minflt for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
run_local(spec(games), workers=workers, chunk_size=games // 4)
after = [resource.getrusage(w).ru_minflt for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print(json.dumps({"per_game": (sum(after) - sum(before)) / games}))
"""

BOUND = 3.0  # minor faults per game; untuned glibc gives about 18


def faults_per_game(workers: int, games: int, env_extra: dict | None = None) -> float:
    import os

    env = {**os.environ, **(env_extra or {})}
    for var in ("MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        env.pop(var, None)  # the fix must not depend on the environment
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(workers), str(games)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=generous(300),
    ).stdout
    return json.loads(out)["per_game"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
@pytest.mark.parametrize("workers", [1, 2])
def test_page_faults_per_game_bounded(workers):
    per_game = faults_per_game(workers, 16384)
    assert per_game < BOUND, f"{per_game:.1f} minor page faults per game (bound {BOUND})"


def test_tune_allocator_is_in_force():
    from sim.jobs.alloc import tune_allocator

    assert tune_allocator() is True  # glibc: mallopt accepted every setting
    assert tune_allocator() is True  # idempotent


def test_celery_worker_processes_tune_the_allocator():
    from celery import signals

    import workers.app  # noqa: F401  (make_app connects the handlers)

    for signal, uid in (
        (signals.worker_init, "azulsim.alloc.worker"),
        (signals.worker_process_init, "azulsim.alloc.child"),
    ):
        assert any(key[0] == uid for key, _ in signal.receivers), f"{uid} not connected"
