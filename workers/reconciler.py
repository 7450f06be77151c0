"""The reconciler: publish again the chunks of QUEUED/RUNNING jobs whose message is lost.

Messages can be lost (a Redis restart without AOF, a warm shutdown dropping prefetched messages,
celery#4354; a submit that died half-way through publishing; an attempt acked as failed without
a retry, e.g. at the hard time limit) or stuck (a whole node died with messages delivered to it:
kombu redelivers those only after the visibility timeout, and only while some worker consumes).
Merging is idempotent, so an extra copy costs a skipped task; but every copy also inflates the
queue length the autoscaler reads, so the reconciler publishes a chunk again only on evidence
that no copy of it is waiting or playing:

* a started attempt holds a **lease** (`workers.leases`: ``l:<chunk>``, renewed by its worker
  every ``lease_s / 3``); a leased chunk is playing, whatever its age;
* a chunk with an entry in kombu's ``unacked`` hash was taken by a consumer (`workers.broker`);
  it is left alone, unless an attempt started after that delivery and its lease lapsed, with the
  delivery older than ``lease_s + grace_s``: the process playing it is gone. (A delivery that
  never started may sit with a live but busy consumer: the worker's event loop delivers nothing
  while a sweep runs on it. It is taken over only past ``visibility_timeout_s + grace_s``, when
  kombu would restore it too.) The entry is then removed (atomically, so kombu's restore cannot
  bring a second copy back) and the chunk published once (**take-over**);
* otherwise the chunk's message should be in the queue. If the queue is empty, or a scan of it
  (one LRANGE, at most once per ``stall_s`` service-wide) does not find it, the chunk is
  **marked** missing; a sweep at least ``grace_s`` later publishes it if it is still neither
  leased nor unacked and nothing started or was published meanwhile (one look could catch a
  message between the queue and the unacked hash, where kombu keeps it for milliseconds).

A chunk published or started less than ``grace_s`` ago is not looked at. ``grace_s`` is two
sweep intervals. Recovery bounds (defaults: lease 60 s, sweeps every 30 s, grace 60 s, scan every
900 s), from the moment the message is lost or its node dies:

* node killed with the chunk in play: at the first sweep after the lease lapsed and the delivery
  is ``lease_s + grace_s`` old: ``lease_s + grace_s + interval`` (150 s); with the chunk
  delivered but not started: ``visibility_timeout_s + grace_s + interval`` (690 s; kombu's
  restore at a consuming worker's sweep may come first);
* message lost, queue empty: marked at the first sweep ``grace_s`` after its last publish or
  start, published ``grace_s`` later: ``lease_s + 2 grace_s + 2 interval`` at most (4 min);
* message lost while a backlog waits: marked at the next queue scan, published ``grace_s``
  later: ``stall_s + grace_s + interval`` at most (16.5 min); the job cannot finish before the
  backlog ahead of it anyway.

A message that only waits, however long (a burst, a backlog with no worker, a requeued chunk of
a killed pool child at the back of the queue), is never published again. Republishes and
take-overs count attempts like any other start, so the attempt cap still ends a poison chunk; the
service-wide count is ``<prefix>:republished`` (`JobStore.republished_total`).

Where it runs: every worker runs a sweep every ``AZULSIM_RECONCILE_INTERVAL_S`` on its own event
loop timer (`workers.app.ReconcilerStep`; no beat), and a Redis lock lets only one of them sweep
per interval. `run_reconciler` runs the same sweeps as a standalone loop.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

from sim.quote import shown

from .broker import Unacked, queue_lengths, read_unacked, waiting_chunks
from .settings import Settings
from .store import ACTIVE_STATES, JobStore

log = logging.getLogger("azulsim.reconciler")

DEFAULT_GRACE_S = 10.0  # with sweeps off (run_reconciler / tests): a message is in flight for ms


def queue_length(store: JobStore, queue: str) -> int:
    """Messages waiting in the Celery queue `queue`, every priority level (`workers.broker`: the
    figure of the ``azulsim_queue_length`` gauge too)."""
    key = store.settings.broker_key(queue)
    return queue_lengths(store.redis, [key])[key]


def _is_done(bitmap: bytes, chunk: int) -> bool:
    byte = chunk >> 3
    return byte < len(bitmap) and bool(bitmap[byte] & (0x80 >> (chunk & 7)))


@dataclass
class Decision:
    """What one sweep does for one job's chunks."""

    republish: dict[int, int] = field(default_factory=dict)  # chunk -> starts seen
    take_over: dict[int, list[str]] = field(default_factory=dict)  # chunk -> unacked tags
    mark: dict[int, str] = field(default_factory=dict)  # chunk -> mark ("" clears it)
    unknown: list[int] = field(default_factory=list)  # no message seen, queue not scanned


def decide(
    job_id: str,
    state: dict,
    now: float,
    lease_s: float,
    visibility_s: float,
    grace_s: float,
    unacked: Unacked,
    queue_empty: bool,
    waiting: set | None,
) -> Decision:
    """The chunks of one job to publish again, take over or mark (rules in the module docstring).

    `state` is `JobStore.chunk_state`'s dict; `waiting` the chunks found in the queue by a scan
    (None: not scanned)."""
    out = Decision()
    if state["state"] not in ACTIVE_STATES:
        return out
    info = state["chunks"]
    for chunk in range(min(state["chunks_total"], state.get("next", state["chunks_total"]))):
        if _is_done(state["done"], chunk):
            continue
        if float(info.get(f"l:{chunk}", 0.0)) > now:
            continue  # leased: an attempt plays it
        entries = unacked.of(job_id, chunk)
        if entries:
            started = float(info.get(f"t:{chunk}", 0.0))
            if all(
                # started after the delivery (clocks of two hosts: 2 s of slack), lease lapsed
                (started >= delivered - 2.0 and now - delivered > lease_s + grace_s)
                # never started: a slow consumer is not a dead one; kombu's own bound
                or now - delivered > visibility_s + grace_s
                for _, delivered in entries
            ):
                out.take_over[chunk] = [tag for tag, _ in entries]
            continue  # taken by a consumer, about to start (or just taken over)
        starts, published = int(info.get(f"s:{chunk}", 0)), int(info.get(f"p:{chunk}", 0))
        last = max(
            float(info.get(f"q:{chunk}", state["published_at"])), float(info.get(f"t:{chunk}", 0))
        )
        if now - last <= grace_s:
            continue  # published or started a moment ago
        mark = info.get(f"m:{chunk}", "")
        if waiting is not None and (job_id, chunk) in waiting:
            if mark:
                out.mark[chunk] = ""  # found after all (restored): forget the mark
            continue
        ms, mp, mt = (mark.split(":") + ["", "", ""])[:3] if mark else ("", "", "")
        if mark and (ms, mp) == (str(starts), str(published)):
            if now - float(mt or now) >= grace_s:
                out.republish[chunk] = starts  # missing twice, nothing moved in between
        elif queue_empty or waiting is not None:
            out.mark[chunk] = f"{starts}:{published}:{shown(now)}"
        else:
            out.unknown.append(chunk)
    return out


def window_has_room(state: dict, window: int) -> bool:
    """Whether chunks of the job fit in its publishing window and were never published
    (`workers.dispatch`); `state` is `JobStore.chunk_state`'s dict."""
    nxt = state.get("next", state["chunks_total"])
    return nxt < state["chunks_total"] and nxt < state["window_base"] + window


def _scan_due(store: JobStore) -> bool:
    """Take the service-wide slot for one queue scan per ``stall_s``."""
    key = f"{store.prefix}:reconciler:scan"
    return bool(store.redis.set(key, "1", nx=True, px=max(1, int(store.settings.stall_s * 1000))))


def reconcile_once(
    store: JobStore,
    app,
    now: float | None = None,
    grace_s: float | None = None,
    scan: bool | None = None,
) -> dict[str, list[int]]:
    """One sweep over the active jobs; returns ``{job_id: chunks published again}``.

    `grace_s` defaults to two sweep intervals (``2 * reconcile_interval_s``, or `DEFAULT_GRACE_S`
    when sweeps are off). `scan`: None scans a non-empty queue when some chunk needs it and the
    ``stall_s`` slot is free; True always scans then; False never.
    """
    from .publish import publish_chunks, publish_window

    settings: Settings = store.settings
    now = time.time() if now is None else now
    if grace_s is None:
        grace_s = 2 * settings.reconcile_interval_s or DEFAULT_GRACE_S
    states = store.chunk_states(store.active_jobs())
    gone = [job_id for job_id, state in states.items() if state["state"] is None]
    if gone:  # expired: drop them from the active set
        store.redis.srem(store.active_key, *gone)
    states = {job_id: state for job_id, state in states.items() if state["state"] is not None}
    if not states:
        return {}
    # Queue first, then unacked: a message moves from the one to the other, never back unseen.
    queue_empty = queue_length(store, settings.queue) == 0
    unacked = read_unacked(store)
    args = (now, settings.lease_s, settings.visibility_timeout_s, grace_s, unacked, queue_empty)
    decisions = {job: decide(job, st, *args, None) for job, st in states.items()}
    unknown = [job for job, d in decisions.items() if d.unknown]
    if unknown and scan is not False and (scan or _scan_due(store)):
        waiting = waiting_chunks(store, unknown)
        for job in unknown:
            decisions[job] = decide(job, states[job], *args, waiting)
    out: dict[str, list[int]] = {}
    for job_id, st in states.items():  # a window whose last merge died before refilling it
        if st["state"] in ACTIVE_STATES and window_has_room(st, settings.publish_window):
            publish_window(store, app, job_id)
    for job_id, d in decisions.items():
        if d.mark:
            store.mark_missing(job_id, d.mark)
        wanted = store.mark_republished(job_id, d.republish, now=now) if d.republish else []
        for chunk, tags in d.take_over.items():
            if store.take_over(job_id, chunk, unacked.key, tags, now=now):
                wanted.append(chunk)
        if wanted:
            publish_chunks(app, job_id, wanted)
            out[job_id] = sorted(wanted)
            log.warning(
                "reconciler: job %s: published %d chunk(s) again: %s (%d taken from a gone worker)",
                job_id,
                len(wanted),
                sorted(wanted)[:20],
                len([c for c in wanted if c in d.take_over]),
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
        store = store_for(settings, bounded=True)  # on the event loop: give up in seconds
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
