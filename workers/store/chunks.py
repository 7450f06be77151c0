"""The chunk protocol of `workers.tasks`: begin an attempt, record a failure, merge the counters.

Each step is one Lua script that checks the job's state and the chunk's done bit atomically, so a
duplicate delivery never counts twice and a cancelled or failed job never moves.
"""

from __future__ import annotations

import time
from typing import Any

from sim.jobs.chunk import chunk_games_range

from .base import StoreBase
from .errors import NotReplicated, unavailable
from .records import parse_spec, text


class ChunkProtocol(StoreBase):
    def _chunk_script(self, name: str, job_id: str, chunk: int, *extra) -> tuple[str, str]:
        """Run a chunk-attempt script (`begin_chunk`, `fail_chunk`); a vanished job is
        ``('state', '')``."""
        raw = self.redis.hmget(self.meta_key(job_id), "spec", "chunk_games", "request_id")
        if raw[0] is None:
            return "state", ""
        spec = parse_spec(text(raw[0]))
        config, start, stop = chunk_games_range(spec, int(text(raw[1])), chunk)
        # The job's error if this attempt is the one past the cap (the script decides).
        where = "every configuration" if config is None else f"configuration {config}"
        failed = (
            f"chunk {chunk} ({where}, games {start}..{stop - 1}) failed "
            f"{self.settings.max_attempts} attempts"
        )
        (status, detail), replicas = self._replicated(
            name,
            keys=self.script_keys(job_id, text(raw[2]) if raw[2] else None),
            args=[
                job_id,
                chunk,
                repr(time.time()),
                self.settings.job_ttl_s,
                self.settings.max_attempts,
                *extra,
                failed,
            ],
            must=False,
        )
        status, detail = text(status), text(detail)
        if status != "run" and replicas < self.settings.wait_for:
            # The message is acked after this answer ("done": merged already; a failure
            # recorded): it must rest on replicated state. A "run" is only an attempt counted.
            raise NotReplicated(f"{name} of chunk {chunk}: {replicas} replica(s) confirmed it")
        return status, detail

    @unavailable
    def begin_chunk(self, job_id: str, chunk: int) -> tuple[str, str]:
        """Start an attempt at a chunk: ``('run', attempt)`` to play it, ``('done', state)`` if
        merged already, ``('state', state)`` if the job is not QUEUED/RUNNING (``''``: gone), or
        ``('failed', error)`` if this attempt is past the cap (the job is now FAILED)."""
        return self._chunk_script("begin_chunk", job_id, chunk, self.settings.lease_s)

    @unavailable
    def renew_lease(self, job_id: str, chunk: int) -> bool:
        """Push the chunk's lease to now + ``lease_s`` (its attempt still plays); False when the
        job ended or the chunk is merged (nothing written)."""
        keys = self.job_keys(job_id)
        deadline = repr(time.time() + self.settings.lease_s)
        return bool(
            self._scripts["lease_chunk"](
                keys=[keys["meta"], keys["done"], keys["chunks"]], args=[chunk, deadline]
            )
        )

    @unavailable
    def fail_chunk(self, job_id: str, chunk: int, error: str) -> tuple[str, str]:
        """Record a failed attempt: ``('retry', attempts)`` (publish the chunk again now),
        ``('failed', error)`` (cap reached, the job is FAILED), ``('done'|'state', state)``."""
        return self._chunk_script("fail_chunk", job_id, chunk, error[:2000])

    @unavailable
    def merge_chunk(
        self,
        job_id: str,
        chunk: int,
        games: int,
        counters: dict[str, int],
        request_id: str | None = None,
    ) -> tuple[int, str]:
        """Merge one chunk's counters with one Lua script: ``(code, state)``.

        code 1 merged; 2 merged and the job SUCCEEDED with it; 0 duplicate (the chunk's done bit
        was set: nothing changed); -1 the job is not QUEUED/RUNNING (nothing changed).
        """
        additive: list[Any] = []
        extrema: list[Any] = []
        for key, value in counters.items():
            if not isinstance(value, int):  # numpy ints and bools are refused before Redis
                value = int(value)
            (extrema if key.startswith(("min|", "max|")) else additive).extend((key, value))
        if request_id is None:
            raw = self.redis.hget(self.meta_key(job_id), "request_id")
            request_id = text(raw) if raw else None
        (code, state), _ = self._replicated(
            "merge_chunk",
            keys=self.script_keys(job_id, request_id),
            args=[
                job_id,
                chunk,
                games,
                repr(time.time()),
                self.settings.job_ttl_s,
                len(additive) // 2,
                *additive,
                *extrema,
            ],
        )
        return int(code), text(state)
