"""`azulsim simulate` of an enormous job: flat memory, and a clean stop on SIGTERM / SIGINT.

Before the fix, ``--games 10**12 --workers 2`` held 1.2 GB in the main process and in each pool
process (every chunk task was listed up front), and SIGTERM left both pool processes running with
PPID 1 while they printed ``BrokenPipeError`` tracebacks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.waits import wait_until

ROOT = Path(__file__).resolve().parents[1]
RSS_BOUND_MB = 300  # per process; the target


def _rss_mb(pid: int) -> int | None:
    try:
        return psutil.Process(pid).memory_info().rss // 2**20
    except psutil.NoSuchProcess:
        return None


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_huge_job_has_flat_memory_and_stops_cleanly(signum):
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "simulate", "--bots", "greedy,greedy"]
        + ["--games", str(10**12), "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    kids: set[int] = set()
    peak: dict[int, int] = {}
    try:
        # The window starts once the pool exists: on a loaded machine the imports alone can take
        # seconds, and a pool made after the window would be missed (and, once the main process
        # was killed, left behind).
        kids.update(
            wait_until(
                lambda: len(_children(proc.pid)) == 2 and _children(proc.pid),
                60,
                "the two pool processes",
                details=lambda: "" if proc.poll() is None else proc.stderr.read(),
            )
        )
        began = time.monotonic()
        while time.monotonic() - began < 5.0:  # several chunks' worth of play in each process
            kids.update(_children(proc.pid))
            for pid in (proc.pid, *kids):
                rss = _rss_mb(pid)
                if rss is not None:
                    peak[pid] = max(peak.get(pid, 0), rss)
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        pool = _children(proc.pid)
        assert len(pool) == 2, f"expected 2 pool processes, saw {pool}"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in kids:  # never leave a stray process behind, even when the test fails
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert max(peak.values()) < RSS_BOUND_MB, f"peak RSS (MB) per process: {peak}"
    time.sleep(0.2)
    left = [pid for pid in kids if _alive(pid)]
    assert not left, f"pool processes left running: {left}"
    assert "Traceback" not in err, err
    assert "interrupted" in err
    assert proc.returncode == 130
