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
        return self.chunk_states([job_id])[job_id]

    @unavailable
    def chunk_states(self, job_ids: list[str]) -> dict[str, dict[str, Any]]:
        """`chunk_state` of many jobs in one round trip: the reconciler sweeps on a worker's event
        loop, which delivers no message while it runs."""
        pipe = self.redis.pipeline(transaction=False)
        for job_id in job_ids:
            keys = self.job_keys(job_id)
            pipe.hmget(
                keys["meta"],
                *("state", "chunks_total", "published_at", "updated_at"),
                *("next", "ordered", "prefix", "chunks_done"),
            )
            pipe.get(keys["done"])
            pipe.hgetall(keys["chunks"])
        replies = pipe.execute()
        out = {}
        for i, job_id in enumerate(job_ids):
            (state, total, published, updated, nxt, ordered, prefix, merged), done, chunks = (
                replies[3 * i : 3 * i + 3]
            )
            total = int(total) if total else 0
            base = int(prefix or 0) if ordered and text(ordered) == "1" else int(merged or 0)
            out[job_id] = {
                "state": text(state) if state else None,
                "chunks_total": total,
                # chunks claimed for publishing (none past it has a message); a job from before
                # windows had all published
                "next": total if nxt is None else int(nxt),
                "window_base": base,  # what the window counts from (dispatch.publish_window)
                "published_at": float_or_none(published) or 0.0,
                "updated_at": float_or_none(updated) or 0.0,
                "done": bytes(done or b""),
                "chunks": {text(k): text(v) for k, v in chunks.items()},
            }
        return out

    @unavailable
    def mark_republished(
        self, job_id: str, seen: dict[int, int], now: float | None = None
    ) -> list[int]:
        """Count a republish of each chunk still wanted; returns those to publish.

        `seen` maps each chunk to the start count the reconciler's decision saw: a chunk that
        started since, holds a live lease (at `now`, default the clock) or merged is dropped
        (republish.lua)."""
        if not seen:
            return []
        keys = self.job_keys(job_id)
        args: list[Any] = [repr(time.time() if now is None else now), self.settings.job_ttl_s]
        for chunk, starts in seen.items():
            args += [chunk, starts]
        got = self._scripts["republish"](
            keys=[keys["meta"], keys["done"], keys["chunks"], self.republished_key], args=args
        )
        return [int(text(c)) for c in got]

    @unavailable
    def take_over(
        self, job_id: str, chunk: int, unacked: str, tags: list[str], now: float | None = None
    ) -> bool:
        """Remove the chunk's entries (`tags`) from kombu's unacked hash `unacked` (and its index)
        if no live lease (at `now`) holds the chunk; True: publish it again (take_over.lua)."""
        keys = self.job_keys(job_id)
        return bool(
            self._scripts["take_over"](
                keys=[
                    keys["meta"],
                    keys["done"],
                    keys["chunks"],
                    unacked,
                    unacked + "_index",
                    self.republished_key,
                ],
                args=[
                    repr(time.time() if now is None else now),
                    self.settings.job_ttl_s,
                    chunk,
                    *tags,
                ],
            )
        )

    @unavailable
    def mark_missing(self, job_id: str, marks: dict[int, str]) -> int:
        """Write the reconciler's "missing" marks (``m:<chunk>``) of chunks not merged."""
        if not marks:
            return 0
        keys = self.job_keys(job_id)
        args: list[Any] = [self.settings.job_ttl_s]
        for chunk, mark in marks.items():
            args += [chunk, mark]
        return int(
            self._scripts["mark_missing"](
                keys=[keys["meta"], keys["done"], keys["chunks"]], args=args
            )
        )

    @unavailable
    def republished_total(self) -> int:
        """Chunks the reconciler has published again so far, service-wide."""
        raw = self.redis.get(self.republished_key)
        return int(raw) if raw is not None else 0
