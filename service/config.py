"""Settings of the gRPC server, from ``AZULSIM_*`` environment variables (DESIGN.md §6).

Redis, queue and chunk settings belong to the workers (`workers.settings`); this module holds only
what the API server adds: where it listens, its limits, auth and TLS.

- ``AZULSIM_LISTEN`` (``127.0.0.1:50051``): address to bind; ``0.0.0.0:50051`` for every
  interface, port 0 for any free port.
- ``AZULSIM_MAX_GAMES_PER_JOB`` (100000000): games per job, all configurations together; above:
  RESOURCE_EXHAUSTED.
- ``AZULSIM_MAX_QUEUED_JOBS`` (1000): jobs queued or running at once; a submit beyond it gets
  RESOURCE_EXHAUSTED (0: no limit).
- ``AZULSIM_MAX_MESSAGE_BYTES`` (4194304): largest request or reply; larger: RESOURCE_EXHAUSTED.
- ``AZULSIM_MAX_WATCHES`` (256): concurrent WatchJob streams; beyond: RESOURCE_EXHAUSTED.
- ``AZULSIM_MAX_REPLAYS`` (2): concurrent ReplayGame computations; beyond: RESOURCE_EXHAUSTED.
- ``AZULSIM_AUTH_TOKENS`` (unset): comma-separated bearer tokens; when set, every call but health
  and reflection needs metadata ``authorization: Bearer <token>`` (else UNAUTHENTICATED).
- ``AZULSIM_TLS_CERT`` / ``AZULSIM_TLS_KEY`` (unset): PEM files; both set: TLS only.
- ``AZULSIM_GRACE_S`` (10): seconds open calls get to finish on shutdown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerConfig:
    """What the API server needs beyond the workers' settings; see the module docstring."""

    listen: str = "127.0.0.1:50051"
    max_games_per_job: int = 100_000_000
    max_queued_jobs: int = 1000
    max_message_bytes: int = 4 * 1024 * 1024
    max_watches: int = 256
    max_replays: int = 2
    auth_tokens: tuple[str, ...] = ()
    tls_cert: str | None = None
    tls_key: str | None = None
    grace_s: float = 10.0
    threads: int = 16  # threads running the (blocking) Redis and Celery calls

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> ServerConfig:
        """Read the ``AZULSIM_*`` variables of `env` (default ``os.environ``); `overrides` win."""
        env = os.environ if env is None else env

        def num(name: str, default, kind=int):
            text = env.get(name, "").strip()
            if not text:
                return default
            try:
                value = kind(text)
            except ValueError:
                raise ValueError(f"{name} must be a number; got {text!r}") from None
            if value < 0:
                raise ValueError(f"{name} must not be negative; got {text!r}")
            return value

        tokens = tuple(
            t.strip() for t in env.get("AZULSIM_AUTH_TOKENS", "").split(",") if t.strip()
        )
        values = dict(
            listen=env.get("AZULSIM_LISTEN", "").strip() or cls.listen,
            max_games_per_job=num("AZULSIM_MAX_GAMES_PER_JOB", cls.max_games_per_job),
            max_queued_jobs=num("AZULSIM_MAX_QUEUED_JOBS", cls.max_queued_jobs),
            max_message_bytes=num("AZULSIM_MAX_MESSAGE_BYTES", cls.max_message_bytes),
            max_watches=num("AZULSIM_MAX_WATCHES", cls.max_watches),
            max_replays=num("AZULSIM_MAX_REPLAYS", cls.max_replays),
            auth_tokens=tokens,
            tls_cert=env.get("AZULSIM_TLS_CERT") or None,
            tls_key=env.get("AZULSIM_TLS_KEY") or None,
            grace_s=num("AZULSIM_GRACE_S", cls.grace_s, float),
        )
        values.update(overrides)
        config = cls(**values)
        if bool(config.tls_cert) != bool(config.tls_key):
            raise ValueError("AZULSIM_TLS_CERT and AZULSIM_TLS_KEY must be set together")
        return config
