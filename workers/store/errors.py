"""The job store's errors, and the wrapper that turns Redis connection errors into one of them."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import redis

from sim.quote import shown

if TYPE_CHECKING:
    from .records import JobInfo


class StoreError(Exception):
    """Base of the job store's errors."""


class JobNotFound(StoreError, KeyError):
    """No job with this id (never created, or expired)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "job not found"


class RequestConflict(StoreError):
    """The request id was already used for a job with another spec."""

    def __init__(self, request_id: str, job_id: str):
        super().__init__(
            f"request_id {shown(request_id)} was already used for job {job_id} "
            "with a different spec"
        )
        self.request_id = request_id
        self.job_id = job_id


class JobFinished(StoreError):
    """The job is already SUCCEEDED, FAILED or CANCELLED (cancel is refused)."""

    def __init__(self, job: JobInfo):
        super().__init__(f"job {job.job_id} is already {job.state}")
        self.job = job


class StoreUnavailable(StoreError):
    """Redis cannot be reached (connection refused, reset or timed out)."""


class NotReplicated(StoreUnavailable):
    """A write was applied on the primary but fewer replicas than ``AZULSIM_REDIS_WAIT_REPLICAS``
    confirmed it within ``AZULSIM_REDIS_WAIT_TIMEOUT_S``: a failover now could lose it, so the
    chunk's message must not be acked (the task requeues it: replayed, never lost)."""


def unavailable(method):
    """Turn redis-py's connection and timeout errors into `StoreUnavailable`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc
        except redis.ResponseError as exc:
            # A primary cut off from its replicas refuses writes (min-replicas-to-write): as
            # unavailable as a dead one, and the next connection may find the new primary.
            if str(exc).startswith(("NOREPLICAS", "READONLY", "MASTERDOWN")):
                raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc
            raise
        except redis.RedisError:
            raise
        except BaseException:
            # Raised between a request and its reply (a soft time limit's signal lands anywhere,
            # and a WAIT makes a merge's replies slow): the connection, back in the pool, may
            # hold unread replies that the next command would take for its own. Drop them.
            client = getattr(args[0], "redis", None) if args else None
            pool = getattr(client, "connection_pool", None)
            if pool is not None:
                pool.disconnect(inuse_connections=False)
            raise

    return wrapper
