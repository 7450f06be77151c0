"""A chunk attempt's lease, renewed by its worker while the chunk plays.

``begin_chunk.lua`` gives a started attempt a lease on its chunk (``l:<chunk>`` in the job's
chunks hash: a deadline ``lease_s`` ahead). `keep_lease` renews it from a thread of the pool
child every third of ``lease_s`` until the attempt ends; the merge and the failure scripts clear
it. The reconciler (`workers.reconciler`) never publishes a leased chunk again: a lease that
lapsed means the process playing it is gone (killed, frozen, cut off from Redis) or the attempt
ended without telling.

A thread, because the play is one long numpy call chain: it releases the GIL often enough for a
renewal every ``lease_s / 3`` seconds (20 s by default), far above the interpreter's 5 ms switch
interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .store import JobStore

log = logging.getLogger("azulsim.workers")


@contextmanager
def keep_lease(store: JobStore, job_id: str, chunk: int) -> Iterator[None]:
    """Renew the chunk's lease every ``lease_s / 3`` seconds while the block runs."""
    stop = threading.Event()
    period = store.settings.lease_s / 3

    def renew() -> None:
        while not stop.wait(period):
            try:
                if not store.renew_lease(job_id, chunk):
                    return  # the job ended or the chunk merged: nothing left to hold
            except Exception as exc:  # Redis away: try again next period; the lease may lapse
                log.warning("chunk %s/%d: lease not renewed: %s", job_id, chunk, exc)

    thread = threading.Thread(target=renew, name=f"lease-{chunk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
