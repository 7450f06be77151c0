"""The health service's status: SERVING while Redis answers, NOT_SERVING while it does not."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from grpc_health.v1 import health_pb2

from ..api import SERVICE_NAME

HEALTH_POLL_S = 5.0
HEALTH_PING_S = 3.0  # a ping stuck in a partition counts as "Redis does not answer" after this


async def set_health(health, pool: ThreadPoolExecutor, ping: Callable[[], None]) -> None:
    """Ping the store once (in the pool) and set both health entries from the answer."""
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(pool, ping), HEALTH_PING_S)
        status = health_pb2.HealthCheckResponse.SERVING
    except Exception:  # noqa: BLE001 - any failure to reach Redis means not serving
        status = health_pb2.HealthCheckResponse.NOT_SERVING
    await health.set("", status)
    await health.set(SERVICE_NAME, status)


async def poll_health(health, pool: ThreadPoolExecutor, ping: Callable[[], None]) -> None:
    """Flip health to NOT_SERVING while Redis is unreachable, and back (until cancelled)."""
    while True:
        await asyncio.sleep(HEALTH_POLL_S)
        await set_health(health, pool, ping)
