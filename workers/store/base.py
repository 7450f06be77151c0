"""What every part of the job store shares: the Redis client, the settings, the key names and the
Lua scripts.

Every state change that matters is a Lua script in ``workers/lua`` (``common.lua`` is prepended to
each), so concurrent workers, retries and cancels never see or leave a half-updated job.
"""

from __future__ import annotations

import time
from pathlib import Path

import redis

from ..settings import Settings
from .errors import NotReplicated, StoreUnavailable
from .keys import KeyNames
from .records import text

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

    def _replicated(self, name: str, keys, args, must: bool = True):
        """Run script `name`; with ``settings.wait_for`` replicas, make sure they hold it.

        One pipeline (one connection, one server) runs the script, a write that always
        replicates (so a script that changed nothing is covered too: its answer may rest on
        other connections' writes), ``ROLE`` and the server's run id. With enough replicas
        connected, ``WAIT`` for them (a second pipeline, which checks it reached the same server:
        WAIT covers everything that server ran before it). With fewer, the write is safe only
        if no failover could lose it: the Sentinels name this server the primary and know no
        replica of it that is up (`_alone`). Otherwise `NotReplicated` when `must`, else the
        answer anyway. Returns ``(answer, replicas confirmed)``."""
        need = self.settings.wait_for
        if need <= 0:
            return self._scripts[name](keys=keys, args=args), 0
        pipe = self.redis.pipeline(transaction=False)
        self._scripts[name](keys=keys, args=args, client=pipe)
        pipe.set(self.replicated_key, name, px=60_000)
        pipe.execute_command("ROLE")
        pipe.info("server")
        answer, _, role, info = pipe.execute()
        run_id = info.get("run_id")
        replicas = 0
        if text(role[0]) != "master":  # demoted while we wrote: the write is gone or refused
            ok = False
        elif len(role[2]) >= need:
            pipe = self.redis.pipeline(transaction=False)
            pipe.set(self.replicated_key, name, px=60_000)
            pipe.wait(need, int(self.settings.redis_wait_timeout_s * 1000))
            pipe.info("server")
            _, replicas, again = pipe.execute()
            ok = int(replicas) >= need and again.get("run_id") == run_id
        else:
            ok = self._alone(run_id)
            if not ok:  # pace the redelivery as a WAIT would, not a loop without a pause
                time.sleep(self.settings.redis_wait_timeout_s)
        if must and not ok:
            raise NotReplicated(
                f"{name}: {replicas} of {need} replica(s) confirmed it in "
                f"{self.settings.redis_wait_timeout_s} s"
            )
        return answer, need if ok else int(replicas)

    def _alone(self, run_id) -> bool:
        """Whether the Sentinels name the server with `run_id` the primary and know no replica
        of it that is up: no failover can then lose its writes (there is nothing to promote).
        Without Sentinels, False. A server they no longer name (a primary partitioned away
        while it still takes writes) also makes the pool drop its connections, so that the
        next ones ask the Sentinels again."""
        pool = self.redis.connection_pool
        manager = getattr(pool, "sentinel_manager", None)
        if manager is None:
            return False
        master = self.settings.redis_master
        for sentinel in manager.sentinels:
            try:
                state = sentinel.sentinel_master(master)
                replicas = sentinel.sentinel_slaves(master)
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                continue
            named = state.get("runid") or state.get("run_id")
            if not named:  # just after a failover: it has not read the new primary's INFO yet
                continue
            if named != run_id:
                pool.disconnect()
                return False
            return not any(
                not ({"s_down", "o_down", "disconnected"} & set(_flags(r))) for r in replicas
            )
        return False

    def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers."""
        try:
            self.redis.ping()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from exc


def _flags(replica: dict) -> list[str]:
    """The flags of a replica in ``SENTINEL REPLICAS`` (redis-py parses them to booleans)."""
    flags = replica.get("flags", "")
    if isinstance(flags, str):
        return flags.split(",")
    return [key for key in ("s_down", "o_down", "disconnected") if replica.get(f"is_{key}")]
