"""The one way tests wait: poll a condition until it holds or a timeout fails the test with what
was awaited and the details that explain it (worker logs, the job record)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Every wait's timeout is multiplied by this: a timeout guards against a hang, not against a slow
# machine, and CI shares two cores with other work (a load of 14-18 made 30 s waits fail).
# AZULSIM_TEST_WAIT_SLACK=1 gives the timeouts as written.
SLACK = float(os.environ.get("AZULSIM_TEST_WAIT_SLACK", "4"))


def generous(timeout: float) -> float:
    """`timeout` with the suite's `SLACK`: for waits on a condition that should come, soon or
    late (never for a wait that is meant to run out)."""
    return timeout * SLACK


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.05,
    details: Callable[[], str] | None = None,
) -> T:
    """Poll `predicate` until it returns something truthy (returned) or `timeout` (times
    `SLACK`) passes (AssertionError naming `what`, with `details()` appended)."""
    timeout = generous(timeout)
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            extra = details() if details else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{extra}")
        time.sleep(interval)


def logs_of(workers: Any) -> str:
    """The logs of worker processes: a list of them, the ``celery_worker_process`` factory, or a
    stack with its own ``logs()`` (tests/netns_stack.py)."""
    if callable(getattr(workers, "logs", None)):
        return workers.logs()
    return "\n".join(w.log() for w in getattr(workers, "started", workers or ()))


def wait_job(store, job_id: str, workers: Any = None, timeout: float = 90.0):
    """The job's record once it is SUCCEEDED, FAILED or CANCELLED (read from `store`, a
    `workers.store.JobStore`); on a timeout, fail with the record and the logs of `workers`
    (as `logs_of` takes them)."""
    return wait_until(
        lambda: (job := store.get_job(job_id)).finished and job,
        timeout,
        f"job {job_id} to finish",
        interval=0.1,
        details=lambda: f"{store.get_job(job_id)}\n{logs_of(workers)[-6000:]}",
    )
