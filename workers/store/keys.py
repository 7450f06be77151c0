"""Key names of the job store (docs/design.md, "Jobs").

Keys (``P`` = ``settings.prefix``; a job's keys share the hash tag ``{<job id>}``)::

    P:job:{J}            hash    the job record: state, spec (JSON), request_id, games_total,
                                 games_done, chunks_total, chunks_done, chunk_games, created_at,
                                 started_at, finished_at, updated_at, published_at, error,
                                 rules_version, seq
    P:job:{J}:counters   hash    merged `sim.stats` counters (keyed by group: bounded in size)
    P:job:{J}:done       bitmap  bit c set once chunk c is merged (chunks / 8 bytes)
    P:job:{J}:chunks     hash    bookkeeping of chunks in flight only, deleted when merged:
                                 s:<c> attempts started, t:<c> last start, p:<c> republishes,
                                 q:<c> last republish, e:<c> last error, l:<c> lease deadline
                                 of the attempt playing it (`workers.leases`), m:<c> the
                                 reconciler's "missing" mark
    P:job:{J}:pending    hash    jobs with a stopping rule: chunk index -> its result (JSON),
                                 parked until the prefix reaches it (`workers.store.prefix`);
                                 the record also holds prefix (next chunk to merge), stopping
                                 (the rule's prefix state, JSON) and stop_reason
    P:jobs               zset    every job, score = creation sequence number (for listing)
    P:active             set     jobs QUEUED or RUNNING
    P:seq                string  the sequence counter
    P:req:<sha256>       string  request id -> job id (idempotent submit)
    P:reconciler         string  the reconciler's sweep lock (`workers.reconciler`)
    P:reconciler:scan    string  the reconciler's queue-scan slot (expires after AZULSIM_STALL_S)
    P:republished        string  chunks the reconciler published again, service-wide (a count)
    P:replicated         string  written before each WAIT for the replicas, a write that always
                                 replicates (`StoreBase._replicated`); expires after a minute
"""

from __future__ import annotations

import hashlib


class KeyNames:
    """The names of every key under one prefix."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def meta_key(self, job_id: str) -> str:
        return f"{self.prefix}:job:{{{job_id}}}"

    @property
    def meta_key_start(self) -> str:
        """What every job record's key starts with (`create_job.lua` prunes by it)."""
        return f"{self.prefix}:job:{{"

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
    def seq_key(self) -> str:
        return f"{self.prefix}:seq"

    @property
    def republished_key(self) -> str:
        """Chunks the reconciler published again, service-wide (a counter; never expires)."""
        return f"{self.prefix}:republished"

    @property
    def replicated_key(self) -> str:
        return f"{self.prefix}:replicated"

    def script_keys(self, job_id: str, request_id: str | None) -> list[str]:
        """KEYS of the per-job scripts: the job's four keys, the active set, the request key
        (the record's key again when there is no request id)."""
        k = self.job_keys(job_id)
        req = self.request_key(request_id) or k["meta"]
        return [k["meta"], k["counters"], k["done"], k["chunks"], self.active_key, req]
