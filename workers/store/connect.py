"""The one way a process opens Redis: a plain URL, or the primary that the Sentinels name.

With ``AZULSIM_REDIS_SENTINELS`` set, `connect` returns redis-py's Sentinel-managed client: each
new connection asks the Sentinels which server is the primary of ``AZULSIM_REDIS_MASTER``, and
a connection that finds itself on a demoted primary (``READONLY``) is dropped and made again, so
after a failover the next command reaches the promoted replica. ``AZULSIM_REDIS_URL`` then gives
only the password and the database number. `broker_url` is the same choice for Celery: kombu's
``sentinel://`` transport with the ``master_name`` transport option (`workers.app`).
"""

from __future__ import annotations

from urllib.parse import quote

import redis
from redis.connection import parse_url

from ..settings import Settings, redis_client_options


def sentinel_addresses(settings: Settings) -> list[tuple[str, int]]:
    """``[(host, port)]`` of the Sentinels (empty: no Sentinels)."""
    out = []
    for item in settings.redis_sentinels:
        host, _, port = item.rpartition(":")
        out.append((host, int(port)))
    return out


def sentinel_kwargs(settings: Settings) -> dict:
    """Options of the connections to the Sentinels themselves: short timeouts, so that a dead
    Sentinel costs seconds before the next is asked."""
    timeout = min(settings.redis_connect_s, 2.0)
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout}


def connect(settings: Settings, api: bool = False, **overrides) -> redis.Redis:
    """A `redis.Redis` for the job store of a worker, or (`api`) of the API server, with the
    options of `workers.settings.redis_client_options` (`overrides` win)."""
    options = {**redis_client_options(settings, api=api), **overrides}
    if not settings.redis_sentinels:
        return redis.Redis.from_url(settings.redis_url, **options)
    from redis.sentinel import Sentinel

    url = parse_url(settings.redis_url)  # the password and database of the primary
    for key in ("username", "password", "db"):
        if url.get(key) is not None:
            options.setdefault(key, url[key])
    sentinel = Sentinel(
        sentinel_addresses(settings), sentinel_kwargs=sentinel_kwargs(settings), **options
    )
    return sentinel.master_for(settings.redis_master, redis_class=redis.Redis)


def broker_url(settings: Settings) -> str:
    """Celery's broker URL: `settings.redis_url`, or one ``sentinel://`` item per Sentinel
    (``;``-separated, no trailing ``;``: kombu would add a localhost item) with the password
    and database of `settings.redis_url`."""
    if not settings.redis_sentinels:
        return settings.redis_url
    url = parse_url(settings.redis_url)
    user, password = url.get("username") or "", url.get("password") or ""
    auth = f"{quote(user, safe='')}:{quote(password, safe='')}@" if password else ""
    db = url.get("db", 0) or 0
    return ";".join(f"sentinel://{auth}{item}/{db}" for item in settings.redis_sentinels)
