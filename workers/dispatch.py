"""Submit a job: create it in the store, then publish the first chunks as plain Celery tasks.

No chord, no group, no result backend (docs/design.md, "Jobs"): each chunk is an independent message
with JSON arguments ``[job_id, chunk]``, merged idempotently by ``merge_chunk.lua``.

Chunks are published lazily, in a window: submit publishes the first ``publish_window`` chunks
(so its time does not grow with the job's size), and each merged chunk publishes the chunks that
now fit (`publish_window`, called by `workers.tasks` after every merge and by the reconciler for a
window nobody filled). The window is counted from the merged chunks, or, for a job with a
stopping rule, from its merged prefix: a chunk retried or taken over waits behind at most a
window of its own job, and a job that stops early never had its later chunks queued at all.
If publishing stops half-way (broker down, API killed), the job stays QUEUED; the claimed chunks
carry their publish time, and the reconciler publishes those it then finds missing.
"""

from __future__ import annotations

from sim.jobs.spec import JobSpec

from .publish import publish_chunks, publish_window
from .store import JobInfo, JobStore

__all__ = ["publish_chunks", "publish_window", "submit"]


def submit(store: JobStore, app, spec: JobSpec, request_id: str | None) -> tuple[JobInfo, bool]:
    """Create the job (idempotent by `request_id`, see `JobStore.create_job`) and, unless that was
    done before, publish its first window of chunks. Returns ``(job, created)``.

    Raises `RequestConflict` (same request id, another spec) and `StoreUnavailable`.
    Blocking: from asyncio, run it in a thread pool (the server runs it in its own,
    `service.server.servicer`).
    """
    job, created = store.create_job(spec, request_id)
    if created or (not job.finished and not store.is_published(job.job_id)):
        if not created:
            # A retry after a publish that stopped half-way (the API killed): what the first
            # attempt claimed goes out again, recorded as published now, so that the
            # reconciler does not publish it a third time. Duplicates merge once.
            again = store.resend_window(job.job_id)
            if again:
                publish_chunks(app, job.job_id, again)
        publish_window(store, app, job.job_id)
        store.mark_published(job.job_id)
    return job, created
