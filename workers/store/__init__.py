"""The Redis job store: job records, progress, counters and the atomic chunk merge (docs/design.md,
"Jobs").

One module per job: `keys` (the key names and layout), `records` (`JobInfo` from a stored hash),
`jobs` (create, read, cancel; the merged counters), `paging` (listing), `chunks` (the chunk
protocol of `workers.tasks`), `prefix` (chunks of jobs with a stopping rule, merged in game
order), `active` (the active set and the reconciler's reads), `errors`, `connect` (a plain URL
or the primary the Sentinels name).
`JobStore` puts them together; import everything from here.

Memory per job is a few kilobytes whatever the number of games: counters are per group and
statistic, done bits are one bit per chunk, and bookkeeping exists only for chunks in flight.
Finished jobs (SUCCEEDED, FAILED, CANCELLED) have every key expire after ``settings.job_ttl_s``; a
job that nobody works on expires after the same time without progress. The global keys (``jobs``,
``active``) are pruned lazily of jobs that expired.
"""

from __future__ import annotations

from .active import ActiveJobs
from .base import LUA_DIR
from .chunks import ChunkProtocol
from .connect import broker_url, connect
from .errors import (
    JobFinished,
    JobNotFound,
    NotReplicated,
    RequestConflict,
    StoreError,
    StoreUnavailable,
)
from .jobs import JobRecords
from .paging import JobPages
from .prefix import PrefixProtocol
from .records import ACTIVE_STATES, JobInfo

__all__ = [
    "ACTIVE_STATES",
    "LUA_DIR",
    "JobFinished",
    "JobInfo",
    "JobNotFound",
    "JobStore",
    "NotReplicated",
    "RequestConflict",
    "StoreError",
    "StoreUnavailable",
    "broker_url",
    "connect",
]


class JobStore(JobRecords, JobPages, ChunkProtocol, PrefixProtocol, ActiveJobs):
    """Jobs in Redis (sync redis-py); every key under ``settings.prefix``.

    ``JobStore(redis, settings)``: a `redis.Redis` client (bytes or decoded responses both work)
    and `workers.settings.Settings` (``prefix``, ``job_ttl_s``, ``chunk_games`` and
    ``max_attempts`` are used).
    """
