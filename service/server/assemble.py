"""Building, running and stopping the server: options, interceptors, the services, the port."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from ..api import SERVICE_NAME
from ..api import azulsim_pb2_grpc as pb_grpc
from ..config import ServerConfig
from ..metrics import MetricsInterceptor, start_api_metrics
from .backend import Backend, make_backend
from .health import poll_health, set_health
from .interceptors import BearerTokenInterceptor, MalformedRequestInterceptor
from .reflection import enable_reflection
from .servicer import AzulSimServicer

log = logging.getLogger("azulsim.server")


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: Any  # grpc_health.v1.health.aio.HealthServicer
    pool: ThreadPoolExecutor
    backend: Backend
    _health_task: asyncio.Task | None = None
    web: Any = None  # service.web.RunningWeb when AZULSIM_WEB_LISTEN is set

    @property
    def web_port(self) -> int | None:
        return self.web.port if self.web is not None else None

    async def stop(self, grace: float | None = None) -> None:
        """Graceful shutdown: health NOT_SERVING, refuse new calls, let open ones finish."""
        await self.health.enter_graceful_shutdown()
        if self.web is not None:  # its event streams end; the pool below is shared
            await self.web.stop()
        if self._health_task:
            self._health_task.cancel()
        await self.server.stop(grace)
        self.pool.shutdown(wait=False, cancel_futures=True)


class CallEndedInCore(logging.Filter):
    """grpc logs at ERROR an operation its core refused on a call that core had already ended
    (``ExecuteBatchError raised in core by servicer method``): the client cancelled, its deadline
    passed or its connection dropped while the servicer was sending (a stream's status, for one,
    as a client cancels just after the last message). Nothing went wrong on the server and there
    is nothing to act on, so the record goes on at INFO; every other record is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.levelno >= logging.ERROR and type(exc).__name__ == "ExecuteBatchError":
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_CALL_ENDED = CallEndedInCore()


def server_options(config: ServerConfig) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Clients that keep a Watch open may ping every 30 s (docs/reliability.md).
        ("grpc.http2.min_ping_interval_without_data_ms", 20_000),
        ("grpc.keepalive_permit_without_calls", 1),
        # gRPC sets SO_REUSEPORT by default: a second server on the same address would bind
        # beside this one and share its calls. Off, the second one fails at start instead.
        ("grpc.so_reuseport", 0),
    ]


def bind_addresses(address: str) -> list[str]:
    """The addresses to bind for `address`: a host name (``localhost:50051``) becomes one address
    per IP it resolves to, so that each is bound and checked on its own. gRPC binds a name's
    addresses itself but goes on when some fail ("Only 1 addresses added out of total 2
    resolved"): beside a server holding 127.0.0.1, ``localhost`` started on [::1] alone. IP
    literals, wildcards and anything else are left to gRPC as they are."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        return [address]
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return [address]  # an IP literal, the wildcards included
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return [address]  # gRPC says why it cannot bind it
    out: list[str] = []
    for family, *_, sockaddr in infos:
        ip = f"[{sockaddr[0]}]" if family == socket.AF_INET6 else str(sockaddr[0])
        if ip not in out:
            out.append(ip)
    return [f"{ip}:{port}" for ip in out] or [address]


def _bind(server: grpc.aio.Server, address: str, creds) -> int:
    """Bind every address of `address` (`bind_addresses`), all on one port; the port, or 0 when
    any of them did not bind."""
    port = 0
    for one in bind_addresses(address):
        if port:  # an ephemeral port (":0") is the first address's, for all
            one = f"{one.rpartition(':')[0]}:{port}"
        try:
            got = server.add_secure_port(one, creds) if creds else server.add_insecure_port(one)
        except RuntimeError:  # grpc: "Failed to bind to address ..."
            got = 0
        if not got:
            return 0
        port = got
    return port


async def start_server(
    backend_factory: Callable[[], Backend] | Backend,
    config: ServerConfig,
    listen: str | None = None,
) -> RunningServer:
    """Build, bind and start the server; returns it with the port it bound."""
    backend = backend_factory if isinstance(backend_factory, Backend) else backend_factory()
    logging.getLogger("grpc._cython.cygrpc").addFilter(_CALL_ENDED)  # once: a set of filters
    pool = ThreadPoolExecutor(max_workers=config.threads, thread_name_prefix="azulsim-rpc")
    interceptors = [BearerTokenInterceptor(config.auth_tokens)] if config.auth_tokens else []
    interceptors.insert(0, MetricsInterceptor())  # first: it also counts the refused calls
    interceptors.append(MalformedRequestInterceptor())  # last: it wraps the method's handler
    server = grpc.aio.server(
        interceptors=interceptors,
        options=server_options(config),
        # A backstop only (grpc#41531); the servicer keeps its own limits on watches and replays.
        maximum_concurrent_rpcs=max(64, 4 * config.max_watches),
    )
    servicer = AzulSimServicer(backend, pool, config)
    pb_grpc.add_AzulSimServicer_to_server(servicer, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name), server
    )
    address = listen or config.listen
    creds = None
    if config.tls_cert:
        creds = grpc.ssl_server_credentials(
            [(Path(config.tls_key).read_bytes(), Path(config.tls_cert).read_bytes())]
        )
    port = _bind(server, address, creds)
    if not port:
        pool.shutdown(wait=False)
        raise OSError(
            f"cannot listen on {address}: the address is in use (another `azulsim serve` or "
            "`azulsim up`?) or not available on this host"
        )
    await server.start()
    running = RunningServer(server, port, health_servicer, pool, backend)
    if config.web_listen:  # the web view: this loop, pool, backend and statistics cache
        from ..web import start_web

        try:
            running.web = await start_web(backend, pool, servicer.replies, config)
        except BaseException:
            await server.stop(None)
            pool.shutdown(wait=False)
            raise
    await set_health(health_servicer, pool, backend.ping)
    running._health_task = asyncio.create_task(poll_health(health_servicer, pool, backend.ping))
    return running


async def serve(
    config: ServerConfig | None = None,
    listen: str | None = None,
    on_ready: Callable[[int], None] | None = None,
    backend: Backend | None = None,
    on_web: Callable[[int], None] | None = None,
) -> None:
    """Run the server until SIGTERM or SIGINT, then shut down gracefully. `on_web` gets the web
    view's port (when it serves one) before `on_ready` gets the gRPC one."""
    config = config or ServerConfig.from_env()
    running = await start_server(backend or partial(make_backend, config), config, listen)
    start_api_metrics()  # http://$AZULSIM_METRICS_ADDR:$AZULSIM_METRICS_PORT/metrics when set
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    if on_web and running.web_port is not None:
        on_web(running.web_port)
    if on_ready:
        on_ready(running.port)
    await stop.wait()
    log.info("shutting down (grace %.0f s)", config.grace_s)
    await running.stop(config.grace_s)
