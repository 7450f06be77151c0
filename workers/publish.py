"""Publishing chunk tasks: one message per chunk (JSON arguments ``[job_id, chunk]``), and the
chunks of a job that fit in its window (`workers.dispatch` explains the window). Its own module
so that the chunk task (`workers.tasks`, which publishes after each merge), submit and the
reconciler share it without importing each other.
"""

from __future__ import annotations

import redis
from kombu.exceptions import OperationalError

from .store import JobStore, StoreUnavailable

TASK_NAME = "azulsim.chunk"


def publish_chunks(app, job_id: str, chunks) -> int:
    """Publish chunk tasks of `job_id` on one producer connection; returns how many."""
    queue = app.azulsim_settings.queue
    n = 0
    try:
        with app.producer_or_acquire() as producer:
            for chunk in chunks:
                app.send_task(TASK_NAME, args=[job_id, int(chunk)], queue=queue, producer=producer)
                n += 1
    except (OperationalError, OSError, redis.ConnectionError, redis.TimeoutError) as exc:
        raise StoreUnavailable(f"could not publish chunks of job {job_id}: {exc}") from exc
    return n


def publish_window(store: JobStore, app, job_id: str) -> int:
    """Publish the chunks of `job_id` that now fit in its window (each claimed once, whoever
    calls); returns how many."""
    chunks = store.claim_window(job_id)
    return publish_chunks(app, job_id, chunks) if chunks else 0
