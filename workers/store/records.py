"""Job records: `JobInfo` and reading one from the fields of its Redis hash."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sim.jobs.spec import JobSpec

ACTIVE_STATES = ("QUEUED", "RUNNING")


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
    stopping: str = ""  # a stopping rule's prefix state, JSON (`sim.jobs.sequential.Prefix.state`)

    @property
    def finished(self) -> bool:
        return self.state not in ACTIVE_STATES


def text(value: Any) -> str:
    """A Redis reply as text (the client may or may not decode responses)."""
    if value is None:  # a missing key or field: never the string "None"
        raise TypeError("text(None): the caller must handle a missing value")
    return value.decode() if isinstance(value, bytes) else str(value)


def float_or_none(value: Any) -> float | None:
    if value is None or value == b"" or value == "":
        return None
    return float(text(value))


@functools.lru_cache(maxsize=256)
def parse_spec(stored: str) -> JobSpec:
    """A stored spec, parsed once per process (specs never change; parsing validates the bots)."""
    return JobSpec.from_json(stored)


def job_info(job_id: str, raw: dict) -> JobInfo:
    """The `JobInfo` of the fields of a job's record (``HGETALL`` of its key)."""
    m = {text(k): text(v) for k, v in raw.items()}
    return JobInfo(
        job_id=job_id,
        state=m["state"],
        spec=parse_spec(m["spec"]),
        request_id=m.get("request_id") or None,
        games_total=int(m["games_total"]),
        games_done=int(m.get("games_done", 0)),
        chunks_total=int(m["chunks_total"]),
        chunks_done=int(m.get("chunks_done", 0)),
        created_at=float(m["created_at"]),
        started_at=float_or_none(m.get("started_at")),
        finished_at=float_or_none(m.get("finished_at")),
        error=m.get("error", ""),
        rules_version=m.get("rules_version", ""),
        chunk_games=int(m.get("chunk_games", 0)),
        stopping=m.get("stopping", ""),
    )
