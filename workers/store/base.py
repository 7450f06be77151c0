"""What every part of the job store shares: the Redis client, the settings, the key names and the
Lua scripts.

Every state change that matters is a Lua script in ``workers/lua`` (``common.lua`` is prepended to
each), so concurrent workers, retries and cancels never see or leave a half-updated job.
"""

from __future__ import annotations

from pathlib import Path

import redis

from ..settings import Settings
from .errors import StoreUnavailable
from .keys import KeyNames

LUA_DIR = Path(__file__).resolve().parent.parent / "lua"
SCRIPTS = (
    "create_job",
    "begin_chunk",
    "merge_chunk",
    "fail_chunk",
    "cancel_job",
    "republish",
    "lease_chunk",
    "take_over",
    "mark_missing",
    "park_chunk",
    "advance_prefix",
    "claim_window",
    "resend_window",
)


class StoreBase(KeyNames):
    """The Redis client, settings and scripts of a `workers.store.JobStore`.

    Parameters
    ----------
    redis : a `redis.Redis` client (bytes or decoded responses both work)
    settings : `workers.settings.Settings`; ``prefix``, ``job_ttl_s``, ``chunk_games`` and
        ``max_attempts`` are used
    """

    def __init__(self, redis: redis.Redis, settings: Settings):
        super().__init__(settings.prefix)
        self.redis = redis
        self.settings = settings
        common = (LUA_DIR / "common.lua").read_text()
        self._scripts = {
            name: redis.register_script(common + "\n" + (LUA_DIR / f"{name}.lua").read_text())
            for name in SCRIPTS
        }

    def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers."""
        try:
            self.redis.ping()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc
