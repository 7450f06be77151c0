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
        self._replicas_seen = 1 << 30  # replicas the primary had at the last ROLE (`_replicated`)
        common = (LUA_DIR / "common.lua").read_text()
        self._scripts = {
            name: redis.register_script(common + "\n" + (LUA_DIR / f"{name}.lua").read_text())
            for name in SCRIPTS
        }

    def _replicated(self, name: str, keys, args, must: bool = True):
        """Run script `name`; with ``settings.wait_for`` replicas, make sure they hold it.

        One pipeline (one connection, so one server) runs the script, a write that always
        replicates (so a script that changed nothing is covered too: its answer may rest on
        other connections' writes), ``WAIT`` for the replicas, ``ROLE`` and the server's run id.
        The WAIT is left out while the last ROLE showed fewer replicas connected than needed (it
        would only wait out its timeout); once they are back, a second pipeline waits, and
        checks by the run id that it reached the same server (WAIT covers all that server ran
        before it). With fewer replicas connected, the write is safe only if no failover could
        lose it: the Sentinels name this server the primary and know no replica of it that is
        up (`_alone`). Otherwise `NotReplicated` when `must`, else the answer anyway. Returns
        ``(answer, replicas confirmed)``."""
        need = self.settings.wait_for
        if need <= 0:
            return self._scripts[name](keys=keys, args=args), 0
        wait_s = self._wait_s()
        timeout_ms = int(wait_s * 1000)
        waits = self._replicas_seen >= need
        pipe = self.redis.pipeline(transaction=False)
        self._scripts[name](keys=keys, args=args, client=pipe)
        pipe.set(self.replicated_key, name, px=60_000)
        if waits:
            pipe.wait(need, timeout_ms)
        pipe.execute_command("ROLE")
        pipe.info("server")
        out = pipe.execute()
        answer, role, run_id = out[0], out[-2], out[-1].get("run_id")
        replicas = int(out[2]) if waits else 0
        master = text(role[0]) == "master"
        connected = len(role[2]) if master else 0
        self._replicas_seen = connected
        if not master:  # demoted while we wrote: the write is gone or refused
            ok = False
        elif replicas >= need:
            ok = True
        elif connected >= need and not waits:  # the replicas are back: wait for them now
            pipe = self.redis.pipeline(transaction=False)
            pipe.set(self.replicated_key, name, px=60_000)
            pipe.wait(need, timeout_ms)
            pipe.info("server")
            _, replicas, again = pipe.execute()
            ok = int(replicas) >= need and again.get("run_id") == run_id
        elif connected >= need:  # connected, and did not confirm in time
            ok = False
        else:
            ok = self._alone(run_id)
            if not ok and not waits:  # pace the redelivery as a WAIT would
                time.sleep(wait_s)
        if must and not ok:
            raise NotReplicated(
                f"{name}: {replicas} of {need} replica(s) confirmed it in {wait_s} s"
            )
        return answer, need if ok else int(replicas)

    def _wait_s(self) -> float:
        """How long a WAIT may block: ``AZULSIM_REDIS_WAIT_TIMEOUT_S``, at most half this
        client's socket timeout (the API's is 3 s): a WAIT that outlived it would time the
        socket out and be sent again by the client's retry."""
        wait_s = self.settings.redis_wait_timeout_s
        kwargs = getattr(self.redis.connection_pool, "connection_kwargs", {})
        socket_timeout = kwargs.get("socket_timeout")
        return min(wait_s, socket_timeout / 2) if socket_timeout else wait_s

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
