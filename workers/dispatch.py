"""Submit a job: create it in the store, then publish one plain Celery task per chunk.

No chord, no group, no result backend (DESIGN.md §5): each chunk is an independent message with
JSON arguments ``[job_id, chunk]``, merged idempotently by ``merge_chunk.lua``. If publishing stops
half-way (broker down), the job stays QUEUED and the reconciler publishes the missing chunks.
"""

from __future__ import annotations

import redis
from kombu.exceptions import OperationalError

from sim.spec import JobSpec

from .store import JobInfo, JobStore, StoreUnavailable
from .tasks import TASK_NAME


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


def submit(store: JobStore, app, spec: JobSpec, request_id: str | None) -> tuple[JobInfo, bool]:
    """Create the job (idempotent by `request_id`, see `JobStore.create_job`) and, unless that was
    done before, publish every chunk as one Celery task. Returns ``(job, created)``.

    Raises `RequestConflict` (same request id, another spec) and `StoreUnavailable`.
    Blocking: from asyncio, run it in a thread pool (the server runs it in its own,
    `service.server.servicer`).
    """
    job, created = store.create_job(spec, request_id)
    # A retry after a lost reply (or a publish that stopped half-way) publishes again: duplicate
    # chunk messages are harmless, each chunk merges once.
    if created or (not job.finished and not store.is_published(job.job_id)):
        publish_chunks(app, job.job_id, range(job.chunks_total))
        store.mark_published(job.job_id)
    return job, created
