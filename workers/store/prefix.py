"""The prefix protocol of jobs with a stopping rule (`sim.jobs.sequential`): chunks are parked as
they finish and merged in game order only, the rule read at each check point on the way.

- `park_chunk`: one Lua script test-and-sets the chunk's done bit and keeps its result (full
  counters and the rule's per-segment counters) in the job's ``pending`` hash;
- `prefix_position`: where the prefix is (the next chunk to merge), its state, and that chunk's
  parked result if it is there;
- `advance_prefix`: one Lua script merges the counters the caller passes for chunk p, stores the
  new prefix state and moves the position to p + 1 - only if the position is still p - and ends
  the job SUCCEEDED when the rule decided (or the last chunk is in).

`workers.tasks.advance` drives them; the decision itself is computed in Python
(`sim.jobs.sequential.Prefix`), a pure function of the prefix, so whichever worker computes it gets
the same answer and the position check makes it count once.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .base import StoreBase
from .errors import unavailable
from .records import text


class PrefixProtocol(StoreBase):
    def pending_key(self, job_id: str) -> str:
        """``P:job:{J}:pending``: chunk index -> parked chunk result (JSON)."""
        return self.meta_key(job_id) + ":pending"

    def _prefix_keys(self, job_id: str, request_id: str | None) -> list[str]:
        return [*self.script_keys(job_id, request_id), self.pending_key(job_id)]

    @unavailable
    def park_chunk(
        self, job_id: str, chunk: int, result: dict[str, Any], request_id: str | None = None
    ) -> tuple[int, str]:
        """Park chunk `chunk`'s result: ``(code, state)``, code 1 parked, 0 duplicate, -1 the job
        is not QUEUED/RUNNING."""
        (code, state), _ = self._replicated(
            "park_chunk",
            keys=self._prefix_keys(job_id, request_id),
            args=[
                job_id,
                chunk,
                repr(time.time()),
                self.settings.job_ttl_s,
                json.dumps(result, separators=(",", ":")),
            ],
        )
        return int(code), text(state)

    @unavailable
    def prefix_position(self, job_id: str) -> tuple[str, int, dict | None, dict | None]:
        """``(state, p, prefix state, parked result of chunk p or None)``."""
        meta = self.meta_key(job_id)
        state, at, stored = self.redis.hmget(meta, "state", "prefix", "stopping")
        p = int(text(at)) if at else 0
        raw = self.redis.hget(self.pending_key(job_id), p)
        return (
            text(state) if state else "",
            p,
            json.loads(text(stored)) if stored else None,
            json.loads(text(raw)) if raw else None,
        )

    @unavailable
    def advance_prefix(
        self,
        job_id: str,
        p: int,
        counters: dict[str, int],
        state: dict[str, Any],
        games_done: int,
        reason: str | None,
        request_id: str | None = None,
    ) -> tuple[int, str]:
        """Merge `counters` as chunk p's and move the prefix to p + 1 (see the module docstring):
        ``(code, state)``, code 2 the job SUCCEEDED with it, 1 advanced, 0 stale, -1 not active."""
        additive: list[Any] = []
        extrema: list[Any] = []
        for key, value in counters.items():
            (extrema if key.startswith(("min|", "max|")) else additive).extend((key, int(value)))
        (code, job_state), _ = self._replicated(
            "advance_prefix",
            keys=self._prefix_keys(job_id, request_id),
            args=[
                job_id,
                p,
                repr(time.time()),
                self.settings.job_ttl_s,
                json.dumps(state, separators=(",", ":")),
                games_done,
                reason or "",
                len(additive) // 2,
                *additive,
                *extrema,
            ],
        )
        return int(code), text(job_state)
