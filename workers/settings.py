"""Settings of the job store, the Celery app, the workers and the reconciler, from the environment.

Every process (gRPC server, workers, monitoring) reads the same variables, so the broker options
that must agree everywhere (notes/service.md §1.1: "the shortest visibility timeout wins") come
from one place. `load_settings` validates them and their order::

    soft limit < hard limit < visibility timeout < stall threshold < job TTL

================================  ==============  ================================================
variable                          default         meaning
================================  ==============  ================================================
``AZULSIM_REDIS_URL``             local, db 0     ``redis://127.0.0.1:6379/0``: Redis for both the
                                                  Celery broker and the job store
``AZULSIM_PREFIX``                ``azulsim``     prefix of every job-store key
``AZULSIM_QUEUE``                 azulsim.chunks  Celery queue of the chunk tasks
``AZULSIM_JOB_TTL_S``             604800 (7 d)    seconds a finished job's keys are kept; also the
                                                  idle expiry of a job nobody works on
``AZULSIM_CHUNK_GAMES``           50000           games per chunk, fixed per job when created:
                                                  ~2-3 s of greedy play on one core
                                                  (bench/chunk_overhead.py); lower it for search
                                                  bots (rollout plays ~200-600 games/s)
``AZULSIM_MAX_ATTEMPTS``          5               attempts per chunk before the job FAILS
``AZULSIM_TASK_SOFT_LIMIT_S``     300             soft time limit of a chunk task (raises in the
                                                  task: a failed attempt)
``AZULSIM_TASK_HARD_LIMIT_S``     360             hard time limit (the pool child is killed)
``AZULSIM_VISIBILITY_TIMEOUT_S``  600             kombu visibility timeout: an unacked message is
                                                  redelivered after this long
``AZULSIM_STALL_S``               900             the reconciler looks through a non-empty chunk
                                                  queue for lost messages at most once per this
                                                  many seconds (one LRANGE of the queue)
``AZULSIM_LEASE_S``               60              a started chunk's lease: its worker renews it
                                                  every third of this while the chunk plays; the
                                                  reconciler leaves a leased chunk alone
``AZULSIM_RECONCILE_INTERVAL_S``  30              seconds between reconciler sweeps in each
                                                  worker's main process; 0 turns them off
``AZULSIM_MAX_TASKS_PER_CHILD``   200             a pool child is replaced after this many chunks
                                                  (bounds memory growth); 0 = never
``AZULSIM_CONCURRENCY``           CPU count       pool processes of ``azulsim worker``
``AZULSIM_PREFIX_BROKER_KEYS``    1               1: Celery's own Redis keys (the queue list,
                                                  ``unacked``, ``_kombu.binding.*``) go under
                                                  ``<prefix>:celery:`` too (kombu's
                                                  ``global_keyprefix``), so every key of the
                                                  service is under the one prefix; 0 leaves them
                                                  bare (a broker shared with other Celery apps
                                                  that expect the plain queue name)
================================  ==============  ================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass(frozen=True)
class Settings:
    """Validated settings; see the module docstring for each field's variable and default."""

    redis_url: str = DEFAULT_REDIS_URL
    prefix: str = "azulsim"
    queue: str = "azulsim.chunks"
    job_ttl_s: int = 7 * 24 * 3600
    chunk_games: int = 50000
    max_attempts: int = 5
    task_soft_limit_s: float = 300.0
    task_hard_limit_s: float = 360.0
    visibility_timeout_s: int = 600
    stall_s: float = 900.0
    lease_s: float = 60.0
    reconcile_interval_s: float = 30.0
    max_tasks_per_child: int = 200
    concurrency: int | None = None
    prefix_broker_keys: bool = True

    @property
    def broker_key_prefix(self) -> str:
        """What kombu puts before each of its Redis keys: ``<prefix>:celery:`` when
        ``prefix_broker_keys``, else nothing (the queue list is then the bare queue name)."""
        return f"{self.prefix}:celery:" if self.prefix_broker_keys else ""

    @property
    def queue_key(self) -> str:
        """The Redis list holding the chunk queue's waiting messages."""
        return self.broker_key_prefix + self.queue

    def __post_init__(self) -> None:
        if not self.prefix or any(c in self.prefix for c in " {}"):
            raise ValueError(
                f"AZULSIM_PREFIX must be non-empty without spaces or braces; got {self.prefix!r}"
            )
        if not self.queue:
            raise ValueError("AZULSIM_QUEUE must not be empty")
        for name, low in (("chunk_games", 1), ("max_attempts", 1), ("job_ttl_s", 1)):
            if getattr(self, name) < low:
                raise ValueError(
                    f"AZULSIM_{name.upper()} must be at least {low}; got {getattr(self, name)}"
                )
        if not self.lease_s > 0:
            raise ValueError(f"AZULSIM_LEASE_S must be positive; got {self.lease_s}")
        if self.reconcile_interval_s < 0 or self.max_tasks_per_child < 0:
            raise ValueError(
                "AZULSIM_RECONCILE_INTERVAL_S and AZULSIM_MAX_TASKS_PER_CHILD must not be negative"
            )
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


_FIELDS = {
    "AZULSIM_REDIS_URL": ("redis_url", str),
    "AZULSIM_PREFIX": ("prefix", str),
    "AZULSIM_QUEUE": ("queue", str),
    "AZULSIM_JOB_TTL_S": ("job_ttl_s", int),
    "AZULSIM_CHUNK_GAMES": ("chunk_games", int),
    "AZULSIM_MAX_ATTEMPTS": ("max_attempts", int),
    "AZULSIM_TASK_SOFT_LIMIT_S": ("task_soft_limit_s", float),
    "AZULSIM_TASK_HARD_LIMIT_S": ("task_hard_limit_s", float),
    "AZULSIM_VISIBILITY_TIMEOUT_S": ("visibility_timeout_s", int),
    "AZULSIM_STALL_S": ("stall_s", float),
    "AZULSIM_LEASE_S": ("lease_s", float),
    "AZULSIM_RECONCILE_INTERVAL_S": ("reconcile_interval_s", float),
    "AZULSIM_MAX_TASKS_PER_CHILD": ("max_tasks_per_child", int),
    "AZULSIM_CONCURRENCY": ("concurrency", int),
    "AZULSIM_PREFIX_BROKER_KEYS": ("prefix_broker_keys", bool),
}
_FLAGS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}  # fmt: skip


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build `Settings` from environment variables (default `os.environ`); unset or empty
    variables take their defaults. Raises ValueError naming the variable on a bad value."""
    env = os.environ if env is None else env
    kwargs = {}
    for var, (name, kind) in _FIELDS.items():
        raw = env.get(var, "").strip()
        if not raw:
            continue
        if kind is bool:
            if raw.lower() not in _FLAGS:
                raise ValueError(f"{var} must be 0 or 1; got {raw!r}")
            kwargs[name] = _FLAGS[raw.lower()]
            continue
        try:
            kwargs[name] = kind(raw)
        except ValueError:
            raise ValueError(
                f"{var} must be {'an integer' if kind is int else 'a number'}; got {raw!r}"
            ) from None
    return Settings(**kwargs)
