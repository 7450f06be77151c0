"""The parts of the stack that a test starts in its own process, on the Redis of an ``AZULSIM_*``
environment: the job store and the Celery app that publishes its chunks, as the API server holds
them (`open_stack`; the ``job_stack`` fixture of tests/conftest.py is `open_stack` of the test's
``env``), and an in-process API server (`api_thread`)."""

from __future__ import annotations

import redis
from celery import Celery

from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from workers.app import make_app
from workers.settings import Settings, load_settings
from workers.store import JobStore


def open_store(env: dict[str, str]) -> JobStore:
    """A `JobStore` on ``AZULSIM_REDIS_URL`` of `env`, with `env`'s settings (close its
    ``.redis`` when done)."""
    settings = load_settings(env)
    return JobStore(redis.Redis.from_url(settings.redis_url), settings)


def open_stack(env: dict[str, str]) -> tuple[JobStore, Celery]:
    """``(store, app)`` for `env`: `open_store` and `workers.app.make_app` of the same settings."""
    store = open_store(env)
    return store, make_app(store.settings)


def api_thread(
    env: dict[str, str] | Settings, config: ServerConfig | None = None, listen: str = "127.0.0.1:0"
) -> ServerThread:
    """An in-process API server on the Redis and settings of `env` (``AZULSIM_*`` variables, or
    their `Settings`) with `config` (default ``ServerConfig()``), on a free port unless `listen`;
    not started: ``with api_thread(env) as server:``, or ``.start()`` and ``.stop()``."""
    settings = env if isinstance(env, Settings) else load_settings(env)
    config = config or ServerConfig()
    return ServerThread(make_backend(config, settings), config, listen=listen)
