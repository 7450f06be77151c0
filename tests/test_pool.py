"""`sim.jobs.pool.ChunkPool`: results in completion order, errors with their remote traceback, a
dead process fails the run, and a stop at any moment ends every process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from sim.jobs.pool import ChunkPool, PoolProcessDied
from tests.waits import generous


def _nothing() -> None:
    pass


def _square(task: int) -> int:
    return task * task


def _fails_at_5(task: int) -> int:
    if task == 5:
        raise ValueError("task 5 is bad")
    return task


def _dies_at_5(task: int) -> int:
    if task == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return task


def test_every_task_once():
    with ChunkPool(2, _square, _nothing) as pool:
        got = list(pool.results(range(50), ahead=2))
    assert sorted(got) == [t * t for t in range(50)]


def test_a_tasks_error_is_raised_with_its_remote_traceback():
    with ChunkPool(2, _fails_at_5, _nothing) as pool, pytest.raises(ValueError) as caught:
        list(pool.results(range(20), ahead=2))
    assert "task 5 is bad" in str(caught.value)
    assert "_fails_at_5" in str(caught.value.__cause__)


def test_a_process_that_dies_fails_the_run():
    with ChunkPool(2, _dies_at_5, _nothing) as pool, pytest.raises(PoolProcessDied):
        list(pool.results(range(20), ahead=2))


# Stops while results are being sent: each result is 200 kB, more than a pipe holds, so at a stop
# a process is as a rule half way through sending one. multiprocessing.Pool hung here at the first
# stop: its terminate killed a process that held the lock of the result queue that its processes
# share, and the pool's own shutdown then waited on that lock for ever.
EARLY_STOPS = r"""
import sys
from sim.jobs.pool import ChunkPool

def big(task):
    return bytes(200_000)

def nothing():
    pass

for _ in range(int(sys.argv[1])):
    with ChunkPool(2, big, nothing) as pool:
        results = pool.results(range(1000), ahead=2)
        next(results), next(results)
        results.close()
print("done")
"""


def test_stops_while_results_are_being_sent_end_every_process():
    run = subprocess.Popen(
        [sys.executable, "-c", EARLY_STOPS, "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
        start_new_session=True,
    )
    try:
        out, err = run.communicate(timeout=generous(120))
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        out, err = run.communicate()
        pytest.fail(f"a stop of the pool hung:\n{err[-3000:]}")
    assert (run.returncode, out) == (0, "done\n"), err


def test_pool_processes_end_when_the_parent_is_killed():
    """Each process holds only its own pipe: when the parent dies (SIGKILL, no clean-up), each
    reads the end of its pipe and exits, not left behind."""
    code = (
        "import time\n"
        "from sim.jobs.pool import ChunkPool\n"
        "pool = ChunkPool(3, abs, lambda: None)\n"
        "print(' '.join(str(p.pid) for p in pool.processes), flush=True)\n"
        "time.sleep(600)\n"
    )
    run = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    pids = [int(p) for p in run.stdout.readline().split()]
    children = [psutil.Process(p) for p in pids]
    run.kill()
    run.wait()
    deadline = time.monotonic() + generous(30)
    while time.monotonic() < deadline:
        if not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children):
            break
        time.sleep(0.05)
    else:
        for c in children:
            c.kill()
        pytest.fail("pool processes outlived their killed parent")
