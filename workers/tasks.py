"""The chunk task: play one chunk of a job's games, count them, merge the counters atomically.

A chunk task has two JSON arguments, ``(job_id, chunk)``. Its steps:

1. ``begin_chunk.lua``: skip if the job is not QUEUED/RUNNING (cancelled, failed, gone) or the
   chunk is merged already; otherwise count the attempt (a job whose chunk is past
   ``max_attempts`` attempts becomes FAILED here, which also ends a redelivery loop of a chunk
   that kills its process), give the attempt a lease on the chunk and move the job to RUNNING;
2. while a thread renews the lease (`workers.leases`: the reconciler leaves a leased chunk
   alone), load the spec (parsed once per process), then play and count the chunk's games with
   `sim.jobs.chunk.play_chunk` (the function `sim.jobs.local` uses too);
3. check the job is still running, then merge with ``merge_chunk.lua`` (which checks again,
   atomically, and test-and-sets the chunk's done bit, so a duplicate never counts twice);
4. with replicas to wait for (``AZULSIM_REDIS_WAIT_REPLICAS``, 1 with Sentinels), ``WAIT`` for
   them after the merge: unconfirmed, the message is requeued, not acked, so a failover that
   loses the merge replays the chunk rather than losing it (`workers.store.NotReplicated`).
5. publish the chunks the merge made room for in the job's window (`refill`,
   `workers.publish.publish_window`).

A job with a stopping rule parks its chunks instead (``park_chunk.lua``) and then moves the
contiguous prefix over every chunk parked in order (`advance`): the rule is read at each check
point, and the first that decides ends the job SUCCEEDED; chunks past it are dropped. Every
delivery of such a chunk advances, duplicates too, so a worker killed between parking and
advancing leaves nothing stuck: the redelivered message does it.

A pool child that dies mid-chunk has its message requeued at the front of the queue
(`workers.requeue`). An exception in step 2 or 3 is recorded (``fail_chunk.lua``) and the chunk
is published again at once (no countdown or ETA, which would hold it on the worker), or the job
FAILS once the attempts are spent. The task itself then returns normally, so its message is acked.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from typing import Any

from celery.exceptions import Reject

from sim.jobs.chunk import play_chunk  # a module global: tests/faults_util.py wraps it

from .leases import keep_lease
from .publish import TASK_NAME, publish_window
from .settings import Settings
from .store import JobStore, NotReplicated, StoreUnavailable, connect

log = logging.getLogger("azulsim.workers")


_stores: dict[tuple[int, Settings], JobStore] = {}


def store_for(settings: Settings) -> JobStore:
    """This process's `JobStore` for `settings` (created lazily, after any fork)."""
    key = (os.getpid(), settings)
    store = _stores.get(key)
    if store is None:
        store = _stores[key] = JobStore(connect(settings), settings)
    return store


def run_chunk(app, job_id: str, chunk: int) -> dict[str, Any]:
    """The body of the chunk task (callable directly in tests); returns what happened."""
    settings: Settings = app.azulsim_settings
    store = store_for(settings)
    try:
        status, detail = store.begin_chunk(job_id, chunk)
    except StoreUnavailable as exc:
        # The attempt may have been counted with its reply lost: requeue the message rather than
        # let it be acked as a failure, which would leave the chunk to the reconciler (a lapsed
        # lease, message nowhere). tests/test_faults.py::test_lost_script_reply
        if isinstance(exc, NotReplicated):  # a redelivery of a merged chunk, as below
            log.warning("chunk %s/%d not acked: %s", job_id, chunk, exc)
        raise Reject(exc, requeue=True) from exc
    if status != "run":
        log.info("chunk %s/%d skipped: %s %s", job_id, chunk, status, detail)
        if status == "done":  # parked by an attempt that may have died before advancing
            job = store.get_job(job_id)
            if job.spec.stop is not None:
                try:
                    advance(store, job)
                except StoreUnavailable as exc:  # NotReplicated too: the advance may be lost
                    raise Reject(exc, requeue=True) from exc
            refill(app, store, job_id)  # ... or before publishing what its merge made room for
        return {"status": "skipped", "reason": status, "detail": detail}
    attempt = int(detail)
    try:
        with keep_lease(store, job_id, chunk):  # the reconciler leaves a leased chunk alone
            job = store.get_job(job_id)
            if job.spec.game_records:  # every game as a row, to the cluster's shared directory
                from sim.jobs.gamerows import job_directory, play_chunk_with_rows

                directory = job_directory(settings.games_dir, job_id)
                result = play_chunk_with_rows(job.spec, job.chunk_games, chunk, directory)
            else:
                result = play_chunk(job.spec, job.chunk_games, chunk)
            games, counters, timings, joint = result
            if store.job_state(job_id) not in ("QUEUED", "RUNNING"):  # cancelled while playing
                log.info("chunk %s/%d skipped: state (ended while it played)", job_id, chunk)
                return {"status": "skipped", "reason": "state"}
            t0 = time.perf_counter()
            if job.spec.stop is not None:
                code, state = store.park_chunk(job_id, chunk, joint, job.request_id)
                state = advance(store, job)
                if code == 1 and state == "SUCCEEDED":
                    code = 2
            else:
                code, state = store.merge_chunk(job_id, chunk, games, counters, job.request_id)
            timings["merge"] = time.perf_counter() - t0
    except NotReplicated as exc:
        # Merged on a primary whose replica did not confirm it: not acked, so a failover that
        # loses the merge replays the chunk; if it is not lost, the redelivery finds the done
        # bit and only waits for the replica again (docs/reliability.md "Failover").
        log.warning("chunk %s/%d attempt %d not acked: %s", job_id, chunk, attempt, exc)
        raise Reject(exc, requeue=True) from exc
    except Exception as exc:  # SoftTimeLimitExceeded included: a failed attempt
        error = f"{type(exc).__name__}: {exc}"
        log.error(
            "chunk %s/%d attempt %d failed: %s\n%s",
            job_id,
            chunk,
            attempt,
            error,
            traceback.format_exc(),
        )
        try:
            outcome, info = store.fail_chunk(job_id, chunk, error)
        except Exception:  # Redis down: requeue the message (the visibility timeout if the
            # broker is down too); acked as a failure, it would wait for the reconciler's stall
            log.exception("chunk %s/%d: could not record the failure", job_id, chunk)
            raise Reject(exc, requeue=True) from None
        if outcome == "retry":
            app.send_task(TASK_NAME, args=[job_id, chunk], queue=settings.queue)
        elif outcome == "failed":
            log.error("job %s FAILED: %s", job_id, info)
        return {"status": "failed", "outcome": outcome, "error": error}
    result = {"merge": {2: "finished", 1: "merged", 0: "duplicate", -1: "refused"}[code]}
    if code >= 0:
        refill(app, store, job_id)
    log.info(
        "chunk %s/%d attempt %d: %d games, %s (job %s); play %.3f s, count %.3f s, merge %.3f s",
        job_id,
        chunk,
        attempt,
        games,
        result["merge"],
        state,
        timings["play"],
        timings["count"],
        timings["merge"],
    )
    return {"status": "ok", "games": games, "state": state, "timings": timings, **result}


def refill(app, store: JobStore, job_id: str) -> None:
    """Publish the chunks a merge made room for in the job's window (`workers.dispatch`). A
    failure is logged, not raised: the chunk is merged; the reconciler fills the window later."""
    try:
        publish_window(store, app, job_id)
    except Exception:
        log.exception("job %s: could not publish the next chunks", job_id)


def advance(store: JobStore, job) -> str:
    """Move the prefix of `job` (a stopping rule) over every chunk parked in order; the job's
    state after. A stop inside a chunk has that chunk's games up to the check point played again
    here and counted alone (game g plays the same every time)."""
    from sim.jobs.sequential import Prefix, play_joint

    spec = job.spec
    while True:
        state, p, stored, parked = store.prefix_position(job.job_id)
        if state not in ("QUEUED", "RUNNING") or parked is None:
            return state
        prefix = Prefix.restore(spec, stored)
        if parked["start"] != prefix.end:  # chunk p must start where the prefix ends
            raise RuntimeError(
                f"job {job.job_id}: chunk {p} starts at game {parked['start']}, the prefix ends "
                f"at {prefix.end}"
            )
        prefix.add(parked)
        counters = parked["counters"]
        if prefix.trim is not None:
            recount = play_joint(spec, *prefix.trim)
            prefix.finish(recount)
            counters = recount["counters"]
        games_done = prefix.end * len(spec.configurations)
        code, state = store.advance_prefix(
            job.job_id, p, counters, prefix.state(), games_done, prefix.reason, job.request_id
        )
        if code == 2:
            log.info("job %s SUCCEEDED: %s at %d games", job.job_id, prefix.reason, prefix.end)
        if code in (-1, 2):
            return state


def register(celery) -> None:
    """Register the chunk task (name ``azulsim.chunk``) on a Celery app."""

    @celery.task(
        name=TASK_NAME,
        bind=True,
        ignore_result=True,
        acks_late=True,
        Request="workers.requeue:ChunkRequest",  # a lost pool child's chunk plays next
    )
    def chunk_task(self, job_id: str, chunk: int) -> dict[str, Any]:
        """Play, count and merge chunk `chunk` of job `job_id` (see the module docstring)."""
        return run_chunk(self.app, str(job_id), int(chunk))

    celery.chunk_task = chunk_task
