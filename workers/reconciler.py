"""The reconciler: publish again the chunks of QUEUED/RUNNING jobs that went missing.

Messages can be lost (a Redis restart without AOF, a warm shutdown dropping prefetched messages,
celery#4354; a submit that died half-way through publishing) or stuck (a whole node died: kombu
redelivers only after the visibility timeout, and only while some worker consumes). Merging is
idempotent, so publishing a chunk once too often costs a skipped task at worst; the rules below
keep that rare.

For each chunk that is not done, the store keeps (only while the chunk is in flight) how many
attempts started (``s``) and when the last one did (``t``), and how many times it was published
again (``p``) and when (``q``; the job's ``published_at`` for the first publish). A sweep at time
``now`` publishes a chunk again when

* every published message has started (``s >= 1 + p``) and the last start is older than
  ``stall_s``: the attempt died with its worker (``stall_s`` > hard time limit, so it cannot be
  running still); or
* a message should still be waiting (``s < 1 + p``), was published more than ``grace_s`` (two
  sweep intervals) ago, and either the chunk queue is empty (so it is not there: lost), or the
  job has made no progress for ``stall_s`` and the message is older than ``stall_s`` (a long
  backlog: republished at most once per ``stall_s``).

Republishes start attempts like any other, so the attempt cap still ends a poison chunk.

Where it runs: every worker runs a sweep every ``AZULSIM_RECONCILE_INTERVAL_S`` on its own event
loop timer (`workers.app.ReconcilerStep`; no beat), and a Redis lock lets only one of them sweep
per interval. `run_reconciler` runs the same sweeps as a standalone loop.
"""

from __future__ import annotations

import logging
import time
import uuid

from .broker import queue_key, queue_lengths
from .settings import Settings
from .store import ACTIVE_STATES, JobStore

log = logging.getLogger("azulsim.reconciler")

DEFAULT_GRACE_S = 10.0  # a message is between the queue and its task's start for milliseconds


def queue_length(store: JobStore, queue: str) -> int:
    """Messages waiting in the Celery queue `queue`, every priority level (`workers.broker`: the
    figure of the ``azulsim_queue_length`` gauge)."""
    key = queue_key(store.settings.broker_key_prefix, queue)
    return queue_lengths(store.redis, [key])[key]


def _is_done(bitmap: bytes, chunk: int) -> bool:
    byte = chunk >> 3
    return byte < len(bitmap) and bool(bitmap[byte] & (0x80 >> (chunk & 7)))


def lost_chunks(
    state: dict, now: float, stall_s: float, grace_s: float, queue_empty: bool
) -> list[int]:
    """The chunks of one job to publish again (rules in the module docstring).

    `state` is `JobStore.chunk_state`'s dict.
    """
    if state["state"] not in ACTIVE_STATES:
        return []
    info = state["chunks"]
    stalled = now - max(state["updated_at"], state["published_at"]) > stall_s
    out = []
    for chunk in range(state["chunks_total"]):
        if _is_done(state["done"], chunk):
            continue
        starts = int(info.get(f"s:{chunk}", 0))
        published = 1 + int(info.get(f"p:{chunk}", 0))
        last_pub = float(info.get(f"q:{chunk}", state["published_at"]))
        if starts >= published:
            if now - float(info.get(f"t:{chunk}", 0.0)) > stall_s:
                out.append(chunk)
        elif now - last_pub > grace_s and (queue_empty or (stalled and now - last_pub > stall_s)):
            out.append(chunk)
    return out


def reconcile_once(
    store: JobStore, app, now: float | None = None, grace_s: float | None = None
) -> dict[str, list[int]]:
    """One sweep over the active jobs; returns ``{job_id: chunks published again}``.

    `grace_s` defaults to two sweep intervals (``2 * reconcile_interval_s``, or `DEFAULT_GRACE_S`
    when sweeps are off): a never-started chunk counts as lost only once it is that old.
    """
    from .dispatch import publish_chunks

    settings: Settings = store.settings
    now = time.time() if now is None else now
    if grace_s is None:
        grace_s = 2 * settings.reconcile_interval_s or DEFAULT_GRACE_S
    queue_empty = queue_length(store, settings.queue) == 0
    out: dict[str, list[int]] = {}
    for job_id in store.active_jobs():
        state = store.chunk_state(job_id)
        if state["state"] is None:  # expired: drop it from the active set
            store.redis.srem(store.active_key, job_id)
            continue
        lost = lost_chunks(state, now, settings.stall_s, grace_s, queue_empty)
        if not lost:
            continue
        wanted = store.mark_republished(job_id, lost)
        if wanted:
            publish_chunks(app, job_id, wanted)
            out[job_id] = wanted
            log.warning(
                "reconciler: job %s: published %d chunk(s) again: %s",
                job_id,
                len(wanted),
                wanted[:20],
            )
    return out


def _lock(store: JobStore, ttl_s: float) -> bool:
    """Take the cluster-wide sweep lock for `ttl_s` (it expires by itself)."""
    key = f"{store.prefix}:reconciler"
    return bool(store.redis.set(key, uuid.uuid4().hex, nx=True, px=max(1, int(ttl_s * 1000))))


def reconcile_tick(app, interval: float | None = None) -> None:
    """A timer callback for workers: sweep unless another process swept within `interval`
    (default ``reconcile_interval_s``). Never raises: an error is logged, the next tick retries."""
    from .tasks import store_for

    settings: Settings = app.azulsim_settings
    interval = interval or settings.reconcile_interval_s or 30.0
    try:
        store = store_for(settings)
        if _lock(store, interval * 0.9):
            reconcile_once(store, app)
    except Exception:
        log.exception("reconciler sweep failed")


def run_reconciler(app, interval: float | None = None, iterations: int | None = None) -> None:
    """Sweep every `interval` seconds (default the app's ``reconcile_interval_s``, else 30) until
    stopped, or `iterations` times; shares the workers' lock, so it can run beside them. `app` is
    the Celery app to publish with (`workers.app.make_app`; this module never builds one, so that
    `workers.app` may import it)."""
    interval = interval or app.azulsim_settings.reconcile_interval_s or 30.0
    n = 0
    while iterations is None or n < iterations:
        reconcile_tick(app, interval)
        n += 1
        if iterations is None or n < iterations:
            time.sleep(interval)
