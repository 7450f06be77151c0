"""The active set (jobs QUEUED or RUNNING) and what the reconciler reads and writes of a job's
chunks (`workers.reconciler`)."""

from __future__ import annotations

import time
from typing import Any

from .base import StoreBase
from .errors import unavailable
from .records import float_or_none, text


class ActiveJobs(StoreBase):
    @unavailable
    def count_queued(self, at_least: int = 0) -> int:
        """Jobs QUEUED or RUNNING (pruning expired ones from the active set).

        With `at_least`, a count below it is taken from SCARD alone (one call, whatever the number
        of jobs): members only leave the set when a job ends, so an exact count is needed only
        near the limit."""
        if at_least and (size := self.redis.scard(self.active_key)) < at_least:
            return size
        members = [text(m) for m in self.redis.smembers(self.active_key)]
        if not members:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for job_id in members:
            pipe.exists(self.meta_key(job_id))
        gone = [j for j, e in zip(members, pipe.execute(), strict=True) if not e]
        if gone:
            self.redis.srem(self.active_key, *gone)
        return len(members) - len(gone)

    @unavailable
    def active_jobs(self) -> list[str]:
        """Ids of the jobs QUEUED or RUNNING (possibly some that just expired)."""
        return [text(m) for m in self.redis.smembers(self.active_key)]

    @unavailable
    def chunk_state(self, job_id: str) -> dict[str, Any]:
        """What the reconciler needs: meta fields, the done bitmap and the in-flight bookkeeping."""
        keys = self.job_keys(job_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hmget(keys["meta"], "state", "chunks_total", "published_at", "updated_at")
        pipe.get(keys["done"])
        pipe.hgetall(keys["chunks"])
        (state, total, published, updated), done, chunks = pipe.execute()
        return {
            "state": text(state) if state else None,
            "chunks_total": int(total) if total else 0,
            "published_at": float_or_none(published) or 0.0,
            "updated_at": float_or_none(updated) or 0.0,
            "done": bytes(done or b""),
            "chunks": {text(k): text(v) for k, v in chunks.items()},
        }

    @unavailable
    def mark_republished(self, job_id: str, chunk_ids: list[int]) -> list[int]:
        """Count a republish of each chunk still wanted; returns those to publish."""
        if not chunk_ids:
            return []
        keys = self.job_keys(job_id)
        got = self._scripts["republish"](
            keys=[keys["meta"], keys["done"], keys["chunks"]],
            args=[repr(time.time()), self.settings.job_ttl_s, *chunk_ids],
        )
        return [int(text(c)) for c in got]
