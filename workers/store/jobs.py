"""Job records: create, read, cancel, and the merged counters (read as they are: deriving
statistics from them is the reader's job, `sim.stats.derive`)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from sim import RULES_VERSION
from sim.jobs.chunk import chunk_games_for, chunks_total
from sim.jobs.spec import JobSpec
from sim.quote import shown

from .base import StoreBase
from .errors import JobFinished, JobNotFound, RequestConflict, unavailable
from .records import JobInfo, job_info, parse_spec, text

# A job id is at most 64 characters (the API refuses longer ones): a message quotes it whole.
_ID_SHOWN = 66


def _no_job(job_id: str) -> JobNotFound:
    return JobNotFound(f"no job {shown(job_id, _ID_SHOWN)}")


class JobRecords(StoreBase):
    """The job record's life: created QUEUED, read, cancelled; its counters read."""

    @unavailable
    def create_job(self, spec: JobSpec, request_id: str | None) -> tuple[JobInfo, bool]:
        """Create a QUEUED job for `spec`; ``(job, created)``.

        Idempotent by `request_id`: the same request id with the same spec returns the existing
        job and ``created=False``; with a different spec it raises `RequestConflict`. A request id
        is remembered as long as its job (until the job's keys expire). Publishing the chunks is
        `workers.dispatch.submit`'s job, not this method's. With ``AZULSIM_REDIS_WAIT_REPLICAS``,
        `NotReplicated` when the replicas did not confirm the job.
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
            "published": 0,  # 1 once submit has published its first window (mark_published)
            "next": 0,  # the first chunk not yet published (claim_window)
            "ordered": 1 if spec.stop is not None else 0,  # chunks merge in game order
            "updated_at": now,
            "rules_version": RULES_VERSION,
        }
        args: list[Any] = [job_id, spec.to_json(), self.settings.job_ttl_s, self.meta_key_start]
        for key, value in fields.items():
            args += [key, value]
        # With replicas to wait for, the job (or the one of this request id) is on them before
        # it is answered: a failover right after SubmitJob returns cannot lose it. Unconfirmed:
        # `NotReplicated` (UNAVAILABLE); a retry with the same request id confirms it.
        (status, got), _ = self._replicated(
            "create_job", keys=[meta, req, self.jobs_key, self.active_key, self.seq_key], args=args
        )
        status, got = text(status), text(got)
        if status == "conflict":
            raise RequestConflict(request_id or "", got)
        return self.get_job(got), status == "created"

    @unavailable
    def claim_window(self, job_id: str) -> range:
        """Claim the chunks to publish now: those of the job's window (``publish_window`` ahead
        of its merged chunks, or of its merged prefix with a stopping rule) not claimed before;
        each is claimed once (claim_window.lua). Empty once the job ended."""
        keys = self.job_keys(job_id)
        start, stop = self._scripts["claim_window"](
            keys=[keys["meta"], keys["chunks"]],
            args=[self.settings.publish_window, repr(time.time()), self.settings.job_ttl_s],
        )
        return range(int(start), int(stop))

    @unavailable
    def resend_window(self, job_id: str) -> list[int]:
        """The claimed chunks not merged, for a retried submit to publish again, their publish
        time renewed and the reconciler's marks dropped (resend_window.lua)."""
        keys = self.job_keys(job_id)
        got = self._scripts["resend_window"](
            keys=[keys["meta"], keys["done"], keys["chunks"]],
            args=[repr(time.time()), self.settings.job_ttl_s],
        )
        return [int(text(c)) for c in got]

    @unavailable
    def mark_published(self, job_id: str) -> None:
        """Record that submit published the job's first window (a retried submit skips it)."""
        self.redis.hset(self.meta_key(job_id), "published", 1)

    @unavailable
    def is_published(self, job_id: str) -> bool:
        raw = self.redis.hget(self.meta_key(job_id), "published")
        return raw is None or text(raw) != "0"  # no field: a job from before the mark

    @unavailable
    def job_for_request(self, request_id: str | None) -> str | None:
        """The id of the live job created for `request_id`, if any (idempotent resubmits)."""
        key = self.request_key(request_id)
        raw = self.redis.get(key) if key else None
        return text(raw) if raw is not None else None

    @unavailable
    def get_job(self, job_id: str) -> JobInfo:
        """The job's record; raises `JobNotFound`."""
        raw = self.redis.hgetall(self.meta_key(job_id)) if job_id else {}
        if not raw or b"spec" not in raw and "spec" not in raw:
            raise _no_job(job_id)
        return job_info(job_id, raw)

    @unavailable
    def job_state(self, job_id: str) -> str | None:
        """The job's state alone (one HGET); None when there is no such job."""
        state = self.redis.hget(self.meta_key(job_id), "state")
        return text(state) if state is not None else None

    @unavailable
    def load_spec(self, job_id: str) -> JobSpec:
        """The job's spec alone (one HGET, parsed once per process); raises `JobNotFound`."""
        stored = self.redis.hget(self.meta_key(job_id), "spec")
        if stored is None:
            raise _no_job(job_id)
        return parse_spec(text(stored))

    @unavailable
    def cancel_job(self, job_id: str) -> JobInfo:
        """QUEUED/RUNNING -> CANCELLED and return the job; counters freeze at that moment.

        Raises `JobNotFound`, or `JobFinished` (with the job) when it is already SUCCEEDED, FAILED
        or CANCELLED: a finished job is left unchanged; `NotReplicated` when the replicas did not
        confirm it (``AZULSIM_REDIS_WAIT_REPLICAS``).
        """
        raw = self.redis.hmget(self.meta_key(job_id), "request_id")
        # On the replicas before it is answered, as a submit (`create_job`); "finished" too:
        # a retried cancel's "already CANCELLED" must rest on replicated state.
        (status, _), _ = self._replicated(
            "cancel_job",
            keys=self.script_keys(job_id, text(raw[0]) if raw[0] else None),
            args=[job_id, repr(time.time()), self.settings.job_ttl_s],
        )
        status = text(status)
        if status == "missing":
            raise _no_job(job_id)
        job = self.get_job(job_id)
        if status == "finished":
            raise JobFinished(job)
        return job

    @unavailable
    def counters(self, job_id: str) -> dict[str, int]:
        """The job's merged counters so far (partial while it runs), as `sim.stats.merge` gives
        them: additive keys that are 0 are left out. Raises `JobNotFound`."""
        keys = self.job_keys(job_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(keys["meta"])
        pipe.hgetall(keys["counters"])
        exists, raw = pipe.execute()
        if not exists:
            raise _no_job(job_id)
        # In C where it can be (a 100-configuration job holds some 70,000 counters): the names
        # decoded and the values parsed by map, zeros dropped in one comprehension.
        name = bytes.decode if raw and isinstance(next(iter(raw)), bytes) else str
        return {
            key: value
            for key, value in zip(map(name, raw), map(int, raw.values()), strict=True)
            if value or key.startswith(("min|", "max|"))
        }
