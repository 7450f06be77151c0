"""The plain blocking functions behind the API: the job store and the Celery app, with the
server's limits. The servicer runs each in its thread pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ServerConfig
from .status import LimitExceeded, Precondition, checked


@dataclass
class Backend:
    """Blocking calls on the job store and the Celery app, with the server's limits."""

    store: Any  # workers.store.JobStore
    app: Any  # the Celery app (workers.app.app)
    config: ServerConfig

    def submit(self, spec, request_id: str):
        if spec.game_records and not getattr(self.store.settings, "games_dir", ""):
            raise Precondition(
                "spec.game_records needs a games directory shared by the cluster "
                "(AZULSIM_GAMES_DIR); this server has none"
            )
        limit = self.config.max_games_per_job
        if limit and spec.total_games > limit:
            raise LimitExceeded(
                f"spec.games x configurations is {spec.total_games:,} games; this server takes at "
                f"most {limit:,} per job"
            )
        most = self.config.max_queued_jobs
        # A resubmit of a known request is answered from its job, whatever the queue holds.
        known = request_id and self.store.job_for_request(request_id)
        if most and not known and self.store.count_queued(at_least=most) >= most:
            raise LimitExceeded(
                f"{most:,} jobs are already queued or running (the server's limit); retry later"
            )
        from workers.dispatch import submit

        return submit(self.store, self.app, spec, request_id)

    def get(self, job_id: str):
        return self.store.get_job(job_id)

    def list(self, page_size: int, page_token: str):
        return checked(self.store.list_jobs, page_size, page_token)  # a malformed page_token

    def cancel(self, job_id: str):
        from workers.store import JobFinished

        try:
            return self.store.cancel_job(job_id)
        except JobFinished as exc:
            if exc.job.state == "CANCELLED":  # cancelling twice is not an error
                return exc.job
            raise

    def statistics(self, info) -> dict:
        """The statistics document of a job whose record `info` was just read: `sim.stats.derive`
        of the counters merged so far (deriving is the reader's job, docs/design.md), the same as
        ``azulsim simulate --json`` without its wall-clock ``timing`` (only the CPU per move of the
        bots that account it, `sim.stats.cpu`)."""
        from sim.stats import derive
        from sim.stats.cpu import cpu_section

        from ..convert import stopping_summary

        counters = self.store.counters(info.job_id)
        doc = derive(counters, info.spec)
        cpu = cpu_section(counters)
        if cpu:  # measured CPU per move of the bots that account it: not part of the statistics
            doc["timing"] = {"cpu": cpu}
        summary = stopping_summary(info, info.spec)
        if summary is not None:  # the rule's path: LLR and estimate at every check point
            doc["stopping"] = summary
        return doc

    def replay(self, job_id: str, configuration: int, game: int):
        import sim

        from ..replay import replay_game

        info = self.store.get_job(job_id)
        if info.rules_version and info.rules_version != sim.RULES_VERSION:
            raise Precondition(
                f"job {job_id} was played with rules version {info.rules_version}; this server "
                f"replays {sim.RULES_VERSION}"
            )
        # Out-of-range configuration or game: a ValueError naming the field.
        return info, checked(replay_game, info.spec, configuration, game)

    def export_games(self, job_id: str, out) -> int:
        """Gather the per-game records of job `job_id` into the Parquet file `out`; the games
        (rows) written. The job must have asked for them and have ended (a running job's chunk
        files are still being written)."""
        from sim.jobs.gamerows import gather, job_directory

        from ..convert import TERMINAL

        info = self.store.get_job(job_id)  # NOT_FOUND for an unknown job
        if not info.spec.game_records:
            raise Precondition(
                f'job {job_id} has no per-game records: submit its spec with "game_records": true'
            )
        if info.state not in TERMINAL:
            raise Precondition(
                f"job {job_id} is {info.state}: its records are complete once it has ended "
                "(`azulsim watch` it first)"
            )
        games_dir = getattr(self.store.settings, "games_dir", "")
        if not games_dir:
            raise Precondition(
                "this server has no games directory (AZULSIM_GAMES_DIR), so it holds no records"
            )
        directory = job_directory(games_dir, job_id)
        if not directory.is_dir():
            raise Precondition(f"no records of job {job_id} in this server's games directory")
        try:  # every chunk file, of this spec (a cancelled job's are not all there)
            return gather(directory, out, info.spec)
        except ValueError as exc:
            raise Precondition(f"job {job_id}: {exc}") from None

    def ping(self) -> None:
        self.store.ping()


def make_backend(config: ServerConfig, settings=None) -> Backend:
    """A `Backend` on the Redis of `settings` (default: `workers.settings.load_settings()`)."""
    from workers.app import make_app
    from workers.settings import load_settings
    from workers.store import JobStore, connect

    settings = settings or load_settings()
    # Short timeouts and one retry (AZULSIM_API_REDIS_TIMEOUT_S): a call into a partition fails
    # UNAVAILABLE inside the client's deadline (tests/test_netns.py::test_api_partitioned...).
    # With Sentinels, the primary they name (workers.store.connect).
    return Backend(JobStore(connect(settings, api=True), settings), make_app(settings), config)
