"""The Redis job store: job records, progress, counters and the atomic chunk merge (DESIGN.md §5).

Keys (``P`` = ``settings.prefix``; a job's keys share the hash tag ``{<job id>}``)::

    P:job:{J}            hash    the job record: state, spec (JSON), request_id, games_total,
                                 games_done, chunks_total, chunks_done, chunk_games, created_at,
                                 started_at, finished_at, updated_at, published_at, error,
                                 rules_version, seq
    P:job:{J}:counters   hash    merged `sim.stats` counters (keyed by group: bounded in size)
    P:job:{J}:done       bitmap  bit c set once chunk c is merged (chunks / 8 bytes)
    P:job:{J}:chunks     hash    bookkeeping of chunks in flight only, deleted when merged:
                                 s:<c> attempts started, t:<c> last start, p:<c> republishes,
                                 q:<c> last republish, e:<c> last error
    P:jobs               zset    every job, score = creation sequence number (for listing)
    P:active             set     jobs QUEUED or RUNNING
    P:seq                string  the sequence counter
    P:req:<sha256>       string  request id -> job id (idempotent submit)

Memory per job is a few kilobytes whatever the number of games: counters are per group and
statistic, done bits are one bit per chunk, and bookkeeping exists only for chunks in flight.

Every state change that matters is a Lua script in ``workers/lua`` (``common.lua`` is prepended to
each), so concurrent workers, retries and cancels never see or leave a half-updated job. Finished
jobs (SUCCEEDED, FAILED, CANCELLED) have every key expire after ``settings.job_ttl_s``; a job that
nobody works on expires after the same time without progress. The global keys (``jobs``, ``active``)
are pruned lazily of jobs that expired.
"""

from __future__ import annotations

import functools
import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from sim import RULES_VERSION
from sim.spec import JobSpec
from sim.stats import derive

from .settings import Settings

STATES = ("QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
ACTIVE_STATES = ("QUEUED", "RUNNING")
LUA_DIR = Path(__file__).with_name("lua")
MIN_CHUNK_GAMES = 200  # however slow the bots: below this a chunk costs more in overhead than play


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
            f"request_id {request_id!r} was already used for job {job_id} with a different spec"
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


@dataclass(frozen=True)
class JobInfo:
    """A job's record as stored; times are unix seconds (float) or None when not yet reached."""

    job_id: str
    state: str  # QUEUED | RUNNING | SUCCEEDED | FAILED | CANCELLED
    spec: JobSpec
    request_id: str | None
    games_total: int
    games_done: int
    chunks_total: int
    chunks_done: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    error: str
    rules_version: str
    chunk_games: int = 0  # games per chunk, fixed when the job was created

    @property
    def finished(self) -> bool:
        return self.state not in ACTIVE_STATES


def _unavailable(method):
    """Turn redis-py's connection and timeout errors into `StoreUnavailable`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc

    return wrapper


def _text(value: Any) -> str:
    if value is None:  # a missing key or field: never the string "None" (issue 10 item 1)
        raise TypeError("_text(None): the caller must handle a missing value")
    return value.decode() if isinstance(value, bytes) else str(value)


def _float_or_none(value: Any) -> float | None:
    if value is None or value == b"" or value == "":
        return None
    return float(_text(value))


def chunk_games_range(spec: JobSpec, chunk_games: int, chunk: int) -> tuple[int, int, int]:
    """``(configuration index, start, stop)`` of a job's chunk number `chunk`.

    Chunks are numbered configuration by configuration: chunk ``c`` is chunk ``k = c % per`` of
    configuration ``c // per``, where ``per = ceil(games / chunk_games)``, and covers games
    ``[k * chunk_games, min((k + 1) * chunk_games, games))``.
    """
    per = -(-spec.games // chunk_games)
    config, k = divmod(chunk, per)
    if not 0 <= config < len(spec.configurations):
        raise ValueError(
            f"chunk {chunk} out of range (the job has {per * len(spec.configurations)})"
        )
    start = k * chunk_games
    return config, start, min(start + chunk_games, spec.games)


def chunk_games_for(spec: JobSpec, chunk_games: int) -> int:
    """Games per chunk of a job: `chunk_games` greedy-equivalent games (AZULSIM_CHUNK_GAMES), scaled
    down by the job's bot cost (`JobSpec.cost`) so that a chunk of slow bots still takes seconds,
    and at most the configuration's games."""
    scaled = max(MIN_CHUNK_GAMES, int(chunk_games / max(1.0, spec.cost)))
    return max(1, min(spec.games, chunk_games, scaled))


def chunks_total(spec: JobSpec, chunk_games: int) -> int:
    """Number of chunks of a job: ``ceil(games / chunk_games)`` per configuration."""
    return -(-spec.games // chunk_games) * len(spec.configurations)


class JobStore:
    """Jobs in Redis (sync redis-py); every key under ``settings.prefix``.

    Parameters
    ----------
    redis : a `redis.Redis` client (bytes or decoded responses both work)
    settings : `workers.settings.Settings`; ``prefix``, ``job_ttl_s``, ``chunk_games`` and
        ``max_attempts`` are used
    """

    def __init__(self, redis: redis.Redis, settings: Settings):
        self.redis = redis
        self.settings = settings
        self.prefix = settings.prefix
        common = (LUA_DIR / "common.lua").read_text()
        self._scripts = {
            name: redis.register_script(common + "\n" + (LUA_DIR / f"{name}.lua").read_text())
            for name in (
                "create_job",
                "begin_chunk",
                "merge_chunk",
                "fail_chunk",
                "cancel_job",
                "republish",
                "lease_chunk",
                "take_over",
                "mark_missing",
            )
        }

    # -- key names --------------------------------------------------------------------------

    def meta_key(self, job_id: str) -> str:
        return f"{self.prefix}:job:{{{job_id}}}"

    def job_keys(self, job_id: str) -> dict[str, str]:
        meta = self.meta_key(job_id)
        return {
            "meta": meta,
            "counters": meta + ":counters",
            "done": meta + ":done",
            "chunks": meta + ":chunks",
        }

    def request_key(self, request_id: str | None) -> str | None:
        if not request_id:
            return None
        digest = hashlib.sha256(request_id.encode()).hexdigest()
        return f"{self.prefix}:req:{digest}"

    @property
    def jobs_key(self) -> str:
        return f"{self.prefix}:jobs"

    @property
    def active_key(self) -> str:
        return f"{self.prefix}:active"

    @property
    def republished_key(self) -> str:
        """Chunks the reconciler published again, service-wide (a counter; never expires)."""
        return f"{self.prefix}:republished"

    def _script_keys(self, job_id: str, request_id: str | None) -> list[str]:
        k = self.job_keys(job_id)
        req = self.request_key(request_id) or k["meta"]
        return [k["meta"], k["counters"], k["done"], k["chunks"], self.active_key, req]

    # -- jobs ---------------------------------------------------------------------------------

    @_unavailable
    def create_job(self, spec: JobSpec, request_id: str | None) -> tuple[JobInfo, bool]:
        """Create a QUEUED job for `spec`; ``(job, created)``.

        Idempotent by `request_id`: the same request id with the same spec returns the existing
        job and ``created=False``; with a different spec it raises `RequestConflict`. A request id
        is remembered as long as its job (until the job's keys expire). Publishing the chunks is
        `workers.dispatch.submit`'s job, not this method's.
        """
        job_id = uuid.uuid4().hex
        chunk_games = chunk_games_for(spec, self.settings.chunk_games)
        now = repr(time.time())
        meta = self.meta_key(job_id)
        req = self.request_key(request_id) or meta
        fields = {
            "state": "QUEUED",
            "request_id": request_id or "",
            "games_total": spec.total_games,
            "games_done": 0,
            "chunks_total": chunks_total(spec, chunk_games),
            "chunks_done": 0,
            "chunk_games": chunk_games,
            "created_at": now,
            "published_at": now,
            "published": 0,  # 1 once submit has published every chunk (see mark_published)
            "updated_at": now,
            "rules_version": RULES_VERSION,
        }
        args: list[Any] = [job_id, spec.to_json(), self.settings.job_ttl_s, f"{self.prefix}:job:{{"]
        for key, value in fields.items():
            args += [key, value]
        status, got = self._scripts["create_job"](
            keys=[meta, req, self.jobs_key, self.active_key, f"{self.prefix}:seq"], args=args
        )
        status, got = _text(status), _text(got)
        if status == "conflict":
            raise RequestConflict(request_id or "", got)
        return self.get_job(got), status == "created"

    @_unavailable
    def mark_published(self, job_id: str) -> None:
        """Record that every chunk of the job was published once (a retried submit skips it)."""
        self.redis.hset(self.meta_key(job_id), "published", 1)

    @_unavailable
    def is_published(self, job_id: str) -> bool:
        raw = self.redis.hget(self.meta_key(job_id), "published")
        return raw is None or _text(raw) != "0"  # no field: a job from before the mark

    @_unavailable
    def job_for_request(self, request_id: str | None) -> str | None:
        """The id of the live job created for `request_id`, if any (idempotent resubmits)."""
        key = self.request_key(request_id)
        raw = self.redis.get(key) if key else None
        return _text(raw) if raw is not None else None

    @_unavailable
    def get_job(self, job_id: str) -> JobInfo:
        """The job's record; raises `JobNotFound`."""
        raw = self.redis.hgetall(self.meta_key(job_id)) if job_id else {}
        if not raw or b"spec" not in raw and "spec" not in raw:
            raise JobNotFound(f"no job {job_id!r}")
        return self._info(job_id, raw)

    def _info(self, job_id: str, raw: dict) -> JobInfo:
        m = {_text(k): _text(v) for k, v in raw.items()}
        return JobInfo(
            job_id=job_id,
            state=m["state"],
            spec=self._spec(job_id, m["spec"]),
            request_id=m.get("request_id") or None,
            games_total=int(m["games_total"]),
            games_done=int(m.get("games_done", 0)),
            chunks_total=int(m["chunks_total"]),
            chunks_done=int(m.get("chunks_done", 0)),
            created_at=float(m["created_at"]),
            started_at=_float_or_none(m.get("started_at")),
            finished_at=_float_or_none(m.get("finished_at")),
            error=m.get("error", ""),
            rules_version=m.get("rules_version", ""),
            chunk_games=int(m.get("chunk_games", 0)),
        )

    _spec_cache: dict[str, JobSpec] = {}

    def _spec(self, job_id: str, text: str) -> JobSpec:
        """Parse a stored spec once per process (specs never change; parsing validates bots)."""
        cache = JobStore._spec_cache
        spec = cache.get(text)
        if spec is None:
            spec = JobSpec.from_json(text)
            if len(cache) >= 256:
                cache.pop(next(iter(cache)))
            cache[text] = spec
        return spec

    @_unavailable
    def job_state(self, job_id: str) -> str | None:
        """The job's state alone (one HGET); None when there is no such job."""
        state = self.redis.hget(self.meta_key(job_id), "state")
        return _text(state) if state is not None else None

    @_unavailable
    def load_spec(self, job_id: str) -> JobSpec:
        """The job's spec alone (one HGET, parsed once per process); raises `JobNotFound`."""
        text = self.redis.hget(self.meta_key(job_id), "spec")
        if text is None:
            raise JobNotFound(f"no job {job_id!r}")
        return self._spec(job_id, _text(text))

    @_unavailable
    def list_jobs(self, page_size: int, page_token: str = "") -> tuple[list[JobInfo], str]:
        """Jobs, newest first: ``(page, next_page_token)``; the token is ``""`` after the last page.

        `page_token` is the token of the previous page (opaque; ``""`` for the first page). Pages
        are stable while jobs are added: a new job never shifts the pages after the first. Raises
        ValueError on a malformed token or a `page_size` below 1.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1; got {page_size}")
        if page_token:
            try:
                upper = int(page_token)
            except ValueError:
                raise ValueError(
                    f"page_token is not a token from list_jobs: {page_token!r}"
                ) from None
            upper_arg: str = f"({upper}"
        else:
            upper_arg = "+inf"
        out: list[JobInfo] = []
        last_seq = None
        while len(out) < page_size:
            want = page_size - len(out)
            rows = self.redis.zrevrangebyscore(
                self.jobs_key, upper_arg, "-inf", start=0, num=want + 1, withscores=True
            )
            if not rows:
                return out, ""
            pipe = self.redis.pipeline(transaction=False)
            for member, _ in rows[:want]:
                pipe.hgetall(self.meta_key(_text(member)))
            metas = pipe.execute()
            gone = []
            for (member, score), raw in zip(rows, metas, strict=False):
                job_id = _text(member)
                last_seq = int(score)
                if raw:
                    out.append(self._info(job_id, raw))
                else:
                    gone.append(job_id)
            if gone:  # expired jobs: drop them from the index
                self.redis.zrem(self.jobs_key, *gone)
            if len(rows) <= want:
                return out, ""
            upper_arg = f"({last_seq}"
        return out, str(last_seq)

    @_unavailable
    def cancel_job(self, job_id: str) -> JobInfo:
        """QUEUED/RUNNING -> CANCELLED and return the job; counters freeze at that moment.

        Raises `JobNotFound`, or `JobFinished` (with the job) when it is already SUCCEEDED, FAILED
        or CANCELLED: a finished job is left unchanged.
        """
        raw = self.redis.hmget(self.meta_key(job_id), "request_id")
        status, _ = self._scripts["cancel_job"](
            keys=self._script_keys(job_id, _text(raw[0]) if raw[0] else None),
            args=[job_id, repr(time.time()), self.settings.job_ttl_s],
        )
        status = _text(status)
        if status == "missing":
            raise JobNotFound(f"no job {job_id!r}")
        job = self.get_job(job_id)
        if status == "finished":
            raise JobFinished(job)
        return job

    @_unavailable
    def counters(self, job_id: str) -> dict[str, int]:
        """The job's merged counters so far (partial while it runs), as `sim.stats.merge` gives
        them: additive keys that are 0 are left out. Raises `JobNotFound`."""
        keys = self.job_keys(job_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(keys["meta"])
        pipe.hgetall(keys["counters"])
        exists, raw = pipe.execute()
        if not exists:
            raise JobNotFound(f"no job {job_id!r}")
        out = {}
        for k, v in raw.items():
            key, value = _text(k), int(v)
            if value != 0 or key.startswith(("min|", "max|")):
                out[key] = value
        return out

    @_unavailable
    def statistics(self, job_id: str, job: JobInfo | None = None) -> dict:
        """The statistics document, `sim.stats.derive` of the counters so far (``games_done`` and
        ``games_total`` included): the same as ``azulsim simulate --json`` without ``timing``.
        `job` saves a read when the caller has just read the job's record."""
        job = job or self.get_job(job_id)
        return derive(self.counters(job_id), job.spec)

    @_unavailable
    def count_queued(self, at_least: int = 0) -> int:
        """Jobs QUEUED or RUNNING (pruning expired ones from the active set).

        With `at_least`, a count below it is taken from SCARD alone (one call, whatever the number
        of jobs): members only leave the set when a job ends, so an exact count is needed only
        near the limit."""
        if at_least and (size := self.redis.scard(self.active_key)) < at_least:
            return size
        members = [_text(m) for m in self.redis.smembers(self.active_key)]
        if not members:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for job_id in members:
            pipe.exists(self.meta_key(job_id))
        gone = [j for j, e in zip(members, pipe.execute(), strict=True) if not e]
        if gone:
            self.redis.srem(self.active_key, *gone)
        return len(members) - len(gone)

    @_unavailable
    def active_jobs(self) -> list[str]:
        """Ids of the jobs QUEUED or RUNNING (possibly some that just expired)."""
        return [_text(m) for m in self.redis.smembers(self.active_key)]

    def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers."""
        try:
            self.redis.ping()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc

    # -- chunks (used by workers.tasks and workers.reconciler) --------------------------------

    def _fail_message(self, job: dict, chunk: int, spec: JobSpec) -> str:
        config, start, stop = chunk_games_range(spec, int(job["chunk_games"]), chunk)
        return (
            f"chunk {chunk} (configuration {config}, games {start}..{stop - 1}) failed "
            f"{self.settings.max_attempts} attempts"
        )

    def _chunk_context(self, job_id: str) -> tuple[dict, JobSpec]:
        raw = self.redis.hmget(self.meta_key(job_id), "spec", "chunk_games", "request_id")
        if raw[0] is None:
            raise JobNotFound(f"no job {job_id!r}")
        spec = self._spec(job_id, _text(raw[0]))
        return {"chunk_games": _text(raw[1]), "request_id": _text(raw[2]) if raw[2] else None}, spec

    def _chunk_script(self, name: str, job_id: str, chunk: int, *extra) -> tuple[str, str]:
        """Run a chunk-attempt script (`begin_chunk`, `fail_chunk`); a vanished job is
        ``('state', '')``."""
        try:
            job, spec = self._chunk_context(job_id)
        except JobNotFound:
            return "state", ""
        status, detail = self._scripts[name](
            keys=self._script_keys(job_id, job["request_id"]),
            args=[
                job_id,
                chunk,
                repr(time.time()),
                self.settings.job_ttl_s,
                self.settings.max_attempts,
                *extra,
                self._fail_message(job, chunk, spec),
            ],
        )
        return _text(status), _text(detail)

    @_unavailable
    def begin_chunk(self, job_id: str, chunk: int) -> tuple[str, str]:
        """Start an attempt at a chunk: ``('run', attempt)`` to play it, ``('done', state)`` if
        merged already, ``('state', state)`` if the job is not QUEUED/RUNNING (``''``: gone), or
        ``('failed', error)`` if this attempt is past the cap (the job is now FAILED)."""
        return self._chunk_script("begin_chunk", job_id, chunk, self.settings.lease_s)

    @_unavailable
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

    @_unavailable
    def fail_chunk(self, job_id: str, chunk: int, error: str) -> tuple[str, str]:
        """Record a failed attempt: ``('retry', attempts)`` (publish the chunk again now),
        ``('failed', error)`` (cap reached, the job is FAILED), ``('done'|'state', state)``."""
        return self._chunk_script("fail_chunk", job_id, chunk, error[:2000])

    @_unavailable
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
            request_id = _text(raw) if raw else None
        code, state = self._scripts["merge_chunk"](
            keys=self._script_keys(job_id, request_id),
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
        return int(code), _text(state)

    @_unavailable
    def chunk_state(self, job_id: str) -> dict[str, Any]:
        """What the reconciler needs: meta fields, the done bitmap and the in-flight bookkeeping."""
        keys = self.job_keys(job_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hmget(keys["meta"], "state", "chunks_total", "published_at", "updated_at")
        pipe.get(keys["done"])
        pipe.hgetall(keys["chunks"])
        (state, total, published, updated), done, chunks = pipe.execute()
        return {
            "state": _text(state) if state else None,
            "chunks_total": int(total) if total else 0,
            "published_at": _float_or_none(published) or 0.0,
            "updated_at": _float_or_none(updated) or 0.0,
            "done": bytes(done or b""),
            "chunks": {_text(k): _text(v) for k, v in chunks.items()},
        }

    @_unavailable
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
        return [int(_text(c)) for c in got]

    @_unavailable
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
                args=[repr(time.time() if now is None else now), self.settings.job_ttl_s, chunk,
                      *tags],
            )
        )

    @_unavailable
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

    @_unavailable
    def republished_total(self) -> int:
        """Chunks the reconciler has published again so far, service-wide."""
        raw = self.redis.get(self.republished_key)
        return int(raw) if raw is not None else 0
