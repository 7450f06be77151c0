"""The job store and Celery app that a test drives, as the API server holds them: a
`workers.store.JobStore` on the Redis of an ``AZULSIM_*`` environment and the app that publishes
its chunks. The ``job_stack`` fixture (tests/conftest.py) is `open_stack` of the test's ``env``."""

from __future__ import annotations

import redis
from celery import Celery

from workers.app import make_app
from workers.settings import load_settings
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
