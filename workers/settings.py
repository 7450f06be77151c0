"""The settings models of the workers, read by the one loader (`sim.settings`: `setting`,
`from_env`).

A model is a frozen dataclass whose fields are declared with `setting`: the variable's name, its
default and how its text is read. The models:

- `Settings` (here): the job store, the Celery app, the workers and the reconciler — what every
  process that shares a Redis must agree on;
- `MetricsSettings`, `LogSettings` (here): the Prometheus endpoint and the log format;
- `service.config.ServerConfig`, `ClientSettings`, `StackSettings`: the API server, the client
  commands, the local stack;
- `sim.bots.external.ExternalSettings`: which external bots may run.

docs/configuration.md is the one table of them for users; tests/test_settings.py checks it against
these models (every variable, its default), and `Settings` checks the order of its time limits::

    soft limit < hard limit < visibility timeout < stall threshold < job TTL
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from sim.quote import shown
from sim.settings import (  # noqa: F401 - the loader, re-exported for service.config and tests
    COUNT,
    FLAG,
    INTEGER,
    LOG_FORMAT,
    LOG_FORMATS,
    LOG_LEVEL,
    NUMBER,
    PORT,
    SECONDS,
    TEXT,
    TOKENS,
    Kind,
    from_env,
    setting,
    variables,
)

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def _sentinels(var: str, text: str) -> tuple[str, ...]:
    """``host:port,host:port`` -> ``("host:port", ...)``; each port 1..65535."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{var} must be host:port items, comma-separated; got {item!r}")
        out.append(f"{host}:{int(port)}")
    return tuple(out)


SENTINELS = Kind("host:port list", _sentinels)

# --- the models of this package -------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The job store, the Celery app, the workers and the reconciler (docs/configuration.md).

    Every process (gRPC server, workers, monitoring) reads the same variables, so the broker
    options that must agree everywhere (docs/reliability.md: "the shortest visibility timeout
    wins") come from one place.
    """

    redis_url: str = setting("AZULSIM_REDIS_URL", DEFAULT_REDIS_URL)
    # Redis Sentinel (`workers.store.connect`, docs/reliability.md "Failover"): ``host:port`` of
    # each Sentinel, comma-separated; set, every process asks them for the primary of
    # `redis_master` (AZULSIM_REDIS_URL then gives only the password and the database).
    redis_sentinels: tuple[str, ...] = setting(
        "AZULSIM_REDIS_SENTINELS", (), SENTINELS, doc_default="unset"
    )
    redis_master: str = setting("AZULSIM_REDIS_MASTER", "azulsim")
    # Replicas that must hold a chunk's merge (Redis WAIT) before its message is acked, and how
    # long to wait for them; None: 1 with Sentinels, else 0 (`wait_for`).
    redis_wait_replicas: int | None = setting(
        "AZULSIM_REDIS_WAIT_REPLICAS", None, INTEGER, doc_default="1 with Sentinels, else 0"
    )
    redis_wait_timeout_s: float = setting("AZULSIM_REDIS_WAIT_TIMEOUT_S", 5.0, NUMBER)
    prefix: str = setting("AZULSIM_PREFIX", "azulsim")
    queue: str = setting("AZULSIM_QUEUE", "azulsim.chunks")
    job_ttl_s: int = setting("AZULSIM_JOB_TTL_S", 7 * 24 * 3600, INTEGER)
    chunk_games: int = setting("AZULSIM_CHUNK_GAMES", 50000, INTEGER)
    max_attempts: int = setting("AZULSIM_MAX_ATTEMPTS", 5, INTEGER)
    task_soft_limit_s: float = setting("AZULSIM_TASK_SOFT_LIMIT_S", 300.0, NUMBER)
    task_hard_limit_s: float = setting("AZULSIM_TASK_HARD_LIMIT_S", 360.0, NUMBER)
    visibility_timeout_s: int = setting("AZULSIM_VISIBILITY_TIMEOUT_S", 600, INTEGER)
    stall_s: float = setting("AZULSIM_STALL_S", 900.0, NUMBER)
    # A started chunk's lease: its worker renews it while the chunk plays (`workers.reconciler`).
    lease_s: float = setting("AZULSIM_LEASE_S", 60.0, NUMBER)
    reconcile_interval_s: float = setting("AZULSIM_RECONCILE_INTERVAL_S", 30.0, NUMBER)
    max_tasks_per_child: int = setting("AZULSIM_MAX_TASKS_PER_CHILD", 200, INTEGER)
    concurrency: int | None = setting("AZULSIM_CONCURRENCY", None, INTEGER, doc_default="CPU count")
    prefix_broker_keys: bool = setting("AZULSIM_PREFIX_BROKER_KEYS", True, FLAG)
    # Chunks of a job published ahead of its merged ones (`workers.dispatch`): submit publishes
    # this many, each merge the next; a retried chunk waits behind at most this many of its job.
    publish_window: int = setting("AZULSIM_PUBLISH_WINDOW", 256, INTEGER)
    # Connections to Redis (`redis_client_options`, `workers.app.celery_config`): a command on a
    # silently dead connection fails after `redis_timeout_s`, then is retried.
    redis_timeout_s: float = setting("AZULSIM_REDIS_TIMEOUT_S", 15.0, NUMBER)
    redis_connect_s: float = setting("AZULSIM_REDIS_CONNECT_S", 5.0, NUMBER)
    redis_keepalive_s: int = setting("AZULSIM_REDIS_KEEPALIVE_S", 10, INTEGER)
    redis_user_timeout_s: float = setting("AZULSIM_REDIS_USER_TIMEOUT_S", 20.0, NUMBER)
    broker_health_s: int = setting("AZULSIM_BROKER_HEALTH_S", 10, INTEGER)
    api_redis_timeout_s: float = setting("AZULSIM_API_REDIS_TIMEOUT_S", 3.0, NUMBER)
    # The worker liveness watchdog (`workers.watchdog`); 0 turns it off.
    watchdog_s: float = setting("AZULSIM_WATCHDOG_S", 420.0, NUMBER)
    liveness_file: str = setting("AZULSIM_LIVENESS_FILE", "", doc_default="unset")
    remote_control: bool = setting("AZULSIM_REMOTE_CONTROL", False, FLAG)
    # Per-game records of jobs with game_records (`sim.jobs.gamerows`): a directory shared by the
    # cluster, one folder per job, gathered by `azulsim export`; unset: such jobs are refused.
    games_dir: str = setting("AZULSIM_GAMES_DIR", "", doc_default="unset")

    @property
    def wait_for(self) -> int:
        """Replicas a merge must reach before its chunk's message is acked (0: no WAIT)."""
        if self.redis_wait_replicas is not None:
            return self.redis_wait_replicas
        return 1 if self.redis_sentinels else 0

    @property
    def broker_key_prefix(self) -> str:
        """What kombu puts before each of its Redis keys: ``<prefix>:celery:`` when
        ``prefix_broker_keys``, else nothing (the queue list is then the bare queue name)."""
        return f"{self.prefix}:celery:" if self.prefix_broker_keys else ""

    def broker_key(self, name: str) -> str:
        """The Redis key kombu uses for `name` (a queue, ``unacked``): the prefix first."""
        return self.broker_key_prefix + name

    @property
    def queue_key(self) -> str:
        """The Redis list holding the chunk queue's waiting messages (priority 0: all of them;
        `workers.broker.queue_keys` has the other levels' lists)."""
        return self.broker_key(self.queue)

    def __post_init__(self) -> None:
        if not self.prefix or any(c in self.prefix for c in " {}"):
            raise ValueError(
                "AZULSIM_PREFIX must be non-empty without spaces or braces; "
                f"got {shown(self.prefix)}"
            )
        if not self.queue:
            raise ValueError("AZULSIM_QUEUE must not be empty")
        for name, low in (
            ("chunk_games", 1),
            ("max_attempts", 1),
            ("job_ttl_s", 1),
            ("publish_window", 1),
        ):
            if getattr(self, name) < low:
                raise ValueError(
                    f"AZULSIM_{name.upper()} must be at least {low}; got {getattr(self, name)}"
                )
        if self.reconcile_interval_s < 0 or self.max_tasks_per_child < 0:
            raise ValueError(
                "AZULSIM_RECONCILE_INTERVAL_S and AZULSIM_MAX_TASKS_PER_CHILD must not be negative"
            )
        if not self.lease_s > 0:
            raise ValueError(f"AZULSIM_LEASE_S must be positive; got {self.lease_s}")
        for name in ("redis_timeout_s", "redis_connect_s", "redis_keepalive_s",
                     "redis_user_timeout_s", "broker_health_s", "api_redis_timeout_s"):  # fmt: skip
            if getattr(self, name) <= 0:
                value = getattr(self, name)
                raise ValueError(f"AZULSIM_{name.upper()} must be positive; got {value}")
        if self.redis_wait_replicas is not None and self.redis_wait_replicas < 0:
            raise ValueError(
                f"AZULSIM_REDIS_WAIT_REPLICAS must not be negative; got {self.redis_wait_replicas}"
            )
        if not self.redis_wait_timeout_s > 0:
            raise ValueError(
                f"AZULSIM_REDIS_WAIT_TIMEOUT_S must be positive; got {self.redis_wait_timeout_s}"
            )
        for var, limit in (("AZULSIM_REDIS_TIMEOUT_S", self.redis_timeout_s),
                           ("AZULSIM_TASK_SOFT_LIMIT_S", self.task_soft_limit_s)):  # fmt: skip
            # else the socket times out first and sends the WAIT again, or the chunk's time
            # limit fires while it waits
            if self.wait_for and not self.redis_wait_timeout_s < limit / 2:
                raise ValueError(
                    f"AZULSIM_REDIS_WAIT_TIMEOUT_S ({self.redis_wait_timeout_s}) must be less "
                    f"than half of {var} ({limit})"
                )
        if self.redis_sentinels and not self.redis_master.strip():
            raise ValueError("AZULSIM_REDIS_MASTER must not be empty with AZULSIM_REDIS_SENTINELS")
        if self.watchdog_s < 0:
            raise ValueError(f"AZULSIM_WATCHDOG_S must not be negative; got {self.watchdog_s}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"AZULSIM_CONCURRENCY must be at least 1; got {self.concurrency}")
        order = [
            ("AZULSIM_TASK_SOFT_LIMIT_S", self.task_soft_limit_s),
            ("AZULSIM_TASK_HARD_LIMIT_S", self.task_hard_limit_s),
            ("AZULSIM_VISIBILITY_TIMEOUT_S", self.visibility_timeout_s),
            ("AZULSIM_STALL_S", self.stall_s),
            ("AZULSIM_JOB_TTL_S", self.job_ttl_s),
        ]
        if order[0][1] <= 0:
            raise ValueError(f"AZULSIM_TASK_SOFT_LIMIT_S must be positive; got {order[0][1]}")
        for (a, va), (b, vb) in zip(order, order[1:], strict=False):
            if not va < vb:
                raise ValueError(f"{a} ({va}) must be less than {b} ({vb})")
        if 0 < self.watchdog_s <= self.task_hard_limit_s:  # a busy worker receives nothing
            raise ValueError(  # until its running chunks end: at most the hard limit
                f"AZULSIM_WATCHDOG_S ({self.watchdog_s}) must be more than "
                f"AZULSIM_TASK_HARD_LIMIT_S ({self.task_hard_limit_s}), or 0 (off)"
            )


@dataclass(frozen=True)
class MetricsSettings:
    """The Prometheus endpoint of the API and of each worker's main process."""

    port: int | None = setting("AZULSIM_METRICS_PORT", None, PORT, doc_default="unset")
    addr: str = setting("AZULSIM_METRICS_ADDR", "0.0.0.0")


@dataclass(frozen=True)
class LogSettings:
    """How every process logs (`workers.logs`)."""

    format: str = setting("AZULSIM_LOG_FORMAT", "text", LOG_FORMAT)
    level: int = setting("AZULSIM_LOG_LEVEL", logging.INFO, LOG_LEVEL, doc_default="INFO")


MODELS = (Settings, MetricsSettings, LogSettings)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """`Settings` from environment variables (default `os.environ`); unset or empty variables take
    their defaults. Raises ValueError naming the variable on a bad value."""
    return from_env(Settings, env)


def tcp_options(settings: Settings) -> dict[int, int]:
    """``socket_keepalive_options`` for redis-py and kombu (set with ``IPPROTO_TCP``).

    Why each: a partition drops packets silently, so without them a connection to Redis can hang
    for the kernel's ~15 min of retransmissions (idle: for ever). Keepalives end an idle one
    (the consumer's between BRPOPs; the job store's between chunks); TCP_USER_TIMEOUT ends one
    with a request in flight, which keepalives never probe.
    """
    import socket

    opts: dict[int, int] = {}
    idle = int(settings.redis_keepalive_s)
    for name, value in (
        ("TCP_KEEPIDLE", idle),
        ("TCP_KEEPINTVL", max(1, idle // 3)),
        ("TCP_KEEPCNT", 3),
        ("TCP_USER_TIMEOUT", int(settings.redis_user_timeout_s * 1000)),  # milliseconds
    ):
        if hasattr(socket, name):  # Linux has all four; others may lack some
            opts[getattr(socket, name)] = value
    return opts


def redis_client_options(settings: Settings, api: bool = False) -> dict:
    """Keyword arguments of ``redis.Redis`` for the job store of a worker, or (``api``) of the
    API server. Reasons:

    * ``socket_timeout``: a command on a dead connection fails instead of waiting for ever; the
      API's is short (`api_redis_timeout_s`) so that a call answers UNAVAILABLE in its deadline;
    * ``socket_connect_timeout``: a connect into a partition gives up quickly, then retries;
    * keepalive and TCP_USER_TIMEOUT (`tcp_options`): see there;
    * ``health_check_interval``: a connection idle that long is PINGed before use, so a stale
      one is replaced before a script is sent on it;
    * ``retry``: 3 retries with jittered back-off capped at 1 s ride over a reset or a short
      flap (a repeated script is harmless: the done bit refuses a second merge, and an attempt
      counted twice only brings the attempt cap nearer); the API retries once, to stay inside a
      deadline. redis-py 8's default is 10 retries, each waiting out the socket timeout: a
      command into a partition then blocks for minutes.
    """
    import socket

    from redis.backoff import ExponentialWithJitterBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.retry import Retry

    timeout = settings.api_redis_timeout_s if api else settings.redis_timeout_s
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": min(settings.redis_connect_s, timeout),
        "socket_keepalive": True,
        "socket_keepalive_options": tcp_options(settings),
        "health_check_interval": settings.broker_health_s,
        "retry": Retry(
            ExponentialWithJitterBackoff(base=0.1, cap=1.0),
            1 if api else 3,
            supported_errors=(RedisConnectionError, RedisTimeoutError, socket.timeout),
        ),
    }
