"""The one way tests wait: poll a condition until it holds or a timeout fails the test with what
was awaited and the details that explain it (worker logs, the job record)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.05,
    details: Callable[[], str] | None = None,
) -> T:
    """Poll `predicate` until it returns something truthy (returned) or `timeout` passes
    (AssertionError naming `what`, with `details()` appended)."""
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
    """The logs of worker processes: a list of them, or the ``celery_worker_process`` factory."""
    return "\n".join(w.log() for w in getattr(workers, "started", workers or ()))


def wait_job(store, job_id: str, workers: Any = None, timeout: float = 90.0):
    """The job's record once it is SUCCEEDED, FAILED or CANCELLED (read from `store`, a
    `workers.store.JobStore`); on a timeout, fail with the record and the workers' logs."""
    return wait_until(
        lambda: (job := store.get_job(job_id)).finished and job,
        timeout,
        f"job {job_id} to finish",
        interval=0.1,
        details=lambda: f"{store.get_job(job_id)}\n{logs_of(workers)[-6000:]}",
    )
