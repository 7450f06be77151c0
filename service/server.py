"""The gRPC server (``grpc.aio``): the ``azulsim.v1.AzulSim`` service, health and reflection.

The servicer is thin (STYLE.md): each method validates its request once (`service.convert`),
calls one plain blocking function of `Backend` in a thread pool — so Redis and Celery calls never
block the event loop — and builds the reply. Exceptions become status codes in one place
(`_status_of`): validation errors INVALID_ARGUMENT, `JobNotFound` NOT_FOUND, `RequestConflict`
ALREADY_EXISTS, `JobFinished` FAILED_PRECONDITION, `LimitExceeded` RESOURCE_EXHAUSTED, and an
unreachable Redis or broker UNAVAILABLE.

The server never plays batches: `SubmitJob` only stores the job and publishes its chunks
(`workers.dispatch.submit`); `ReplayGame` replays one game (milliseconds).

Run it with ``azulsim serve`` (settings: `service.config` and `workers.settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import logging
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from . import convert
from .api import SERVICE_NAME
from .api import azulsim_pb2 as pb
from .api import azulsim_pb2_grpc as pb_grpc
from .config import ServerConfig
from .metrics import MetricsInterceptor, start_api_metrics
from .reflection import enable_reflection

log = logging.getLogger("azulsim.server")

T = TypeVar("T")

# Calls that never need a token: load balancers and grpcurl must reach them.
AUTH_EXEMPT = ("/grpc.health.v1.Health/", "/grpc.reflection.")
HEALTH_POLL_S = 5.0


class BadRequest(ValueError):
    """A request field is invalid: INVALID_ARGUMENT with this message."""


class LimitExceeded(Exception):
    """A server limit (games per job, queued jobs, concurrent watches): RESOURCE_EXHAUSTED."""


class Precondition(Exception):
    """The job is not in a state that allows the call: FAILED_PRECONDITION."""


def validated(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with its ``ValueError`` turned into `BadRequest`."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


# --- the plain functions ----------------------------------------------------------------------


@dataclass
class Backend:
    """Blocking calls on the job store and the Celery app, with the server's limits."""

    store: Any  # workers.store.JobStore
    app: Any  # the Celery app (workers.app.app)
    config: ServerConfig

    def submit(self, spec, request_id: str):
        limit = self.config.max_games_per_job
        if limit and spec.total_games > limit:
            raise LimitExceeded(
                f"spec.games x configurations is {spec.total_games:,} games; this server takes at "
                f"most {limit:,} per job"
            )
        most = self.config.max_queued_jobs
        # A resubmit of a known request is answered from its job, whatever the queue holds.
        known = request_id and self.store.job_for_request(request_id)
        if most and not known and self.store.count_queued(at_least=most) >= most:
            raise LimitExceeded(
                f"{most:,} jobs are already queued or running (the server's limit); retry later"
            )
        from workers.dispatch import submit

        return submit(self.store, self.app, spec, request_id)

    def get(self, job_id: str):
        return self.store.get_job(job_id)

    def list(self, page_size: int, page_token: str):
        try:
            return self.store.list_jobs(page_size, page_token)
        except ValueError as exc:  # a malformed page_token
            raise BadRequest(str(exc)) from None

    def cancel(self, job_id: str):
        from workers.store import JobFinished

        try:
            return self.store.cancel_job(job_id)
        except JobFinished as exc:
            if exc.job.state == "CANCELLED":  # cancelling twice is not an error
                return exc.job
            raise

    def statistics(self, info):
        """The statistics document of a job whose record `info` was just read."""
        return self.store.statistics(info.job_id, info)

    def replay(self, job_id: str, configuration: int, game: int):
        import sim
        from sim.spec import JobSpec

        from .replay import replay_game

        info = self.store.get_job(job_id)
        if info.rules_version and info.rules_version != sim.RULES_VERSION:
            raise Precondition(
                f"job {job_id} was played with rules version {info.rules_version}; this server "
                f"replays {sim.RULES_VERSION}"
            )
        spec = info.spec if isinstance(info.spec, JobSpec) else convert._spec_of(info)
        replay = validated(replay_game, spec, configuration, game)
        return info, replay

    def ping(self) -> None:
        self.store.ping()


def _store_errors() -> dict[type, grpc.StatusCode]:
    from workers.store import JobFinished, JobNotFound, RequestConflict, StoreUnavailable

    errors: dict[type, grpc.StatusCode] = {
        JobNotFound: grpc.StatusCode.NOT_FOUND,
        RequestConflict: grpc.StatusCode.ALREADY_EXISTS,
        JobFinished: grpc.StatusCode.FAILED_PRECONDITION,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    }
    with contextlib.suppress(ImportError):
        import redis.exceptions

        errors[redis.exceptions.ConnectionError] = grpc.StatusCode.UNAVAILABLE
        errors[redis.exceptions.TimeoutError] = grpc.StatusCode.UNAVAILABLE
        errors[redis.exceptions.BusyLoadingError] = grpc.StatusCode.UNAVAILABLE
    with contextlib.suppress(ImportError):
        import kombu.exceptions

        errors[kombu.exceptions.OperationalError] = grpc.StatusCode.UNAVAILABLE
    return errors


@functools.cache
def _status_table() -> dict[type, grpc.StatusCode]:
    table = {
        BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
        LimitExceeded: grpc.StatusCode.RESOURCE_EXHAUSTED,
        Precondition: grpc.StatusCode.FAILED_PRECONDITION,
    }
    table.update(_store_errors())
    return table


def _status_of(exc: BaseException) -> grpc.StatusCode | None:
    """The status code for an exception of the backend, or None for an unexpected one."""
    table = _status_table()
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return None


def _message(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if _status_of(exc) == grpc.StatusCode.UNAVAILABLE and "Redis" not in text:
        text = f"the job store (Redis) is unavailable: {text or type(exc).__name__}"
    return text or type(exc).__name__


# --- the servicer -----------------------------------------------------------------------------


class StatisticsReplies:
    """The last GetStatistics replies, by job record. The counters change only when a chunk
    merges, which moves ``chunks_done`` in the same Lua script, and the rest of the record only
    with the state; so (job, state, chunks done, start and end times) names the counters."""

    def __init__(self, size: int = 256):
        self.size = size
        self.replies: OrderedDict[tuple, pb.Statistics] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def _key(info) -> tuple:
        return (info.job_id, info.state, info.chunks_done, info.started_at, info.finished_at)

    def get(self, info) -> pb.Statistics | None:
        with self.lock:
            return self.replies.get(self._key(info))

    def put(self, info, reply: pb.Statistics) -> None:
        with self.lock:
            self.replies[self._key(info)] = reply
            while len(self.replies) > self.size:
                self.replies.popitem(last=False)


class AzulSimServicer(pb_grpc.AzulSimServicer):
    """``azulsim.v1.AzulSim``: validate, call `Backend` in a thread, build the reply."""

    def __init__(self, backend: Backend, pool: ThreadPoolExecutor, config: ServerConfig):
        self.backend, self.pool, self.config = backend, pool, config
        self.watches = 0
        self.replays = 0
        self.replies = StatisticsReplies()

    async def _call(self, context, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in the pool; map its exception to a status and abort with it."""
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, partial(fn, *args))
        except Exception as exc:  # noqa: BLE001 - mapped to a status below, or re-raised
            code = _status_of(exc)
            if code is None:
                log.exception("unexpected error in %s", getattr(fn, "__name__", fn))
                raise
            await context.abort(code, _message(exc))
            raise  # unreachable: abort raises

    async def _check(self, context, fn: Callable[..., T], *args: Any) -> T:
        """Validate a request field (in the loop: it is cheap); INVALID_ARGUMENT on failure."""
        try:
            return fn(*args)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            raise  # unreachable

    async def SubmitJob(self, request, context):
        spec = await self._check(
            context, convert.spec_from_proto, request.spec, request.HasField("spec")
        )
        request_id = await self._check(context, convert.check_request_id, request.request_id)
        info, created = await self._call(context, self.backend.submit, spec, request_id)
        return pb.SubmitJobResponse(job=convert.job_to_proto(info), created=created)

    async def GetJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        return convert.job_to_proto(await self._call(context, self.backend.get, job_id))

    async def ListJobs(self, request, context):
        size = await self._check(context, convert.page_size, request.page_size)
        jobs, token = await self._call(context, self.backend.list, size, request.page_token)
        return pb.ListJobsResponse(
            jobs=[convert.job_to_proto(j) for j in jobs], next_page_token=token or ""
        )

    async def WatchJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        interval = await self._check(context, convert.watch_interval_s, request.interval_ms)
        if self.watches >= self.config.max_watches:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.config.max_watches} WatchJob streams are open (the server's limit); "
                "poll GetJob or retry later",
            )
        self.watches += 1
        try:
            last = None
            while True:
                info = await self._call(context, self.backend.get, job_id)
                job = convert.job_to_proto(info)
                key = job.SerializeToString(deterministic=True)
                if key != last:
                    last = key
                    yield job
                if info.state in convert.TERMINAL:
                    return
                await asyncio.sleep(interval)
        finally:
            self.watches -= 1

    async def CancelJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        return convert.job_to_proto(await self._call(context, self.backend.cancel, job_id))

    async def GetStatistics(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        return await self._call(context, self._statistics, job_id)

    def _statistics(self, job_id: str) -> pb.Statistics:
        """The reply for the job as it is now (in the pool): many clients polling one running job
        share one derivation per merged chunk."""
        info = self.backend.get(job_id)
        reply = self.replies.get(info)
        if reply is None:
            reply = convert.statistics_to_proto(info, self.backend.statistics(info))
            self.replies.put(info, reply)
        return reply

    async def ListBots(self, request, context):
        from sim.bots.registry import list_bots

        return convert.bots_to_proto(await self._call(context, list_bots))

    async def ReplayGame(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        if request.configuration < 0:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"configuration must be at least 0; got {request.configuration}",
            )
        if request.game < 0:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"game must be at least 0; got {request.game}"
            )
        if self.replays >= self.config.max_replays:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.config.max_replays} replays are running (the server's limit); retry later",
            )
        self.replays += 1
        try:
            info, replay = await self._call(
                context, self.backend.replay, job_id, request.configuration, request.game
            )
        finally:
            self.replays -= 1
        reply = convert.replay_to_proto(job_id, replay, info.rules_version or "")
        # Said here, naming the game and the setting, rather than as gRPC's bare "sent message
        # larger than max" (a game near a 1,000-round cap can run to tens of MiB).
        if (size := reply.ByteSize()) > self.config.max_message_bytes:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the replay of game {request.game} ({len(reply.steps):,} steps) is {size:,} "
                f"bytes, above this server's message limit of {self.config.max_message_bytes:,} "
                "(AZULSIM_MAX_MESSAGE_BYTES)",
            )
        return reply


# --- auth -------------------------------------------------------------------------------------


def _deny(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape as `handler` that aborts with UNAUTHENTICATED."""

    async def unary(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def stream(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - makes this an async generator

    kwargs = dict(
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(stream, **kwargs)
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(unary, **kwargs)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(unary, **kwargs)
    return grpc.stream_stream_rpc_method_handler(stream, **kwargs)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """UNAUTHENTICATED unless ``authorization: Bearer <token>`` holds one of `tokens`.

    Health and reflection are exempt. Tokens are compared in constant time.
    """

    def __init__(self, tokens: Iterable[str]):
        self.tokens = [t.encode() for t in tokens]

    def _allowed(self, metadata) -> bool:
        for key, value in metadata or ():
            if key != "authorization":
                continue
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer":
                return False
            given = token.strip().encode()
            # Compare with every token, so the time taken does not tell which one matched.
            return sum(hmac.compare_digest(given, t) for t in self.tokens) > 0
        return False

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method or ""
        if handler is None or method.startswith(AUTH_EXEMPT):
            return handler
        if self._allowed(handler_call_details.invocation_metadata):
            return handler
        return _deny(
            handler, "this server needs a bearer token: metadata 'authorization: Bearer <token>'"
        )


# --- malformed requests -----------------------------------------------------------------------


class _Malformed:
    """What the tolerant deserializer returns for bytes that are not the method's message."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _tolerant(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:  # noqa: BLE001 - DecodeError (corrupt wire data, bad UTF-8)
            return _Malformed(exc)

    return parse


class MalformedRequestInterceptor(grpc.aio.ServerInterceptor):
    """INVALID_ARGUMENT for request bytes that do not parse as the method's message.

    Without it grpc answers UNKNOWN ("Unexpected <class DecodeError>") and logs a traceback at
    ERROR for every such request. Only ``azulsim.v1.AzulSim`` methods are wrapped.
    """

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method or ""
        if (
            handler is None
            or handler.request_deserializer is None
            or not method.startswith(f"/{SERVICE_NAME}/")
        ):
            return handler
        kind = method.rpartition("/")[2]

        async def reject(request, context):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"request: not a valid {kind} request message: "
                + " ".join(str(request.error).split()),
            )

        kwargs = dict(
            request_deserializer=_tolerant(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
        if handler.unary_unary:
            inner = handler.unary_unary

            async def unary(request, context):
                if isinstance(request, _Malformed):
                    await reject(request, context)
                return await inner(request, context)

            return grpc.unary_unary_rpc_method_handler(unary, **kwargs)
        if handler.unary_stream:
            inner_stream = handler.unary_stream

            async def stream(request, context):
                if isinstance(request, _Malformed):
                    await reject(request, context)
                async for reply in inner_stream(request, context):
                    yield reply

            return grpc.unary_stream_rpc_method_handler(stream, **kwargs)
        return handler  # no streaming requests in this service


# --- building and running ---------------------------------------------------------------------


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: Any  # grpc_health.v1.health.aio.HealthServicer
    pool: ThreadPoolExecutor
    backend: Backend
    _health_task: asyncio.Task | None = None

    async def stop(self, grace: float | None = None) -> None:
        """Graceful shutdown: health NOT_SERVING, refuse new calls, let open ones finish."""
        await self.health.enter_graceful_shutdown()
        if self._health_task:
            self._health_task.cancel()
        await self.server.stop(grace)
        self.pool.shutdown(wait=False, cancel_futures=True)


def server_options(config: ServerConfig) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Clients that keep a Watch open may ping every 30 s (notes/service.md §6.6).
        ("grpc.http2.min_ping_interval_without_data_ms", 20_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]


async def start_server(
    backend_factory: Callable[[], Backend] | Backend,
    config: ServerConfig,
    listen: str | None = None,
) -> RunningServer:
    """Build, bind and start the server; returns it with the port it bound."""
    backend = backend_factory if isinstance(backend_factory, Backend) else backend_factory()
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
    pb_grpc.add_AzulSimServicer_to_server(AzulSimServicer(backend, pool, config), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name), server
    )
    address = listen or config.listen
    if config.tls_cert:
        creds = grpc.ssl_server_credentials(
            [(Path(config.tls_key).read_bytes(), Path(config.tls_cert).read_bytes())]
        )
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if not port:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    running = RunningServer(server, port, health_servicer, pool, backend)
    await _set_health(running)
    running._health_task = asyncio.create_task(_watch_health(running))
    return running


async def _set_health(running: RunningServer) -> None:
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(running.pool, running.backend.ping)
        status = health_pb2.HealthCheckResponse.SERVING
    except Exception:  # noqa: BLE001 - any failure to reach Redis means not serving
        status = health_pb2.HealthCheckResponse.NOT_SERVING
    await running.health.set("", status)
    await running.health.set(SERVICE_NAME, status)


async def _watch_health(running: RunningServer) -> None:
    """Flip health to NOT_SERVING while Redis is unreachable, and back."""
    while True:
        await asyncio.sleep(HEALTH_POLL_S)
        await _set_health(running)


def make_backend(config: ServerConfig, settings=None) -> Backend:
    """A `Backend` on the Redis of `settings` (default: `workers.settings.load_settings()`)."""
    import redis

    from workers.settings import load_settings
    from workers.store import JobStore

    settings = settings or load_settings()
    client = redis.Redis.from_url(
        settings.redis_url, socket_timeout=10, socket_connect_timeout=3, health_check_interval=30
    )
    from workers.app import make_app

    return Backend(JobStore(client, settings), make_app(settings), config)


async def serve(
    config: ServerConfig | None = None,
    listen: str | None = None,
    on_ready: Callable[[int], None] | None = None,
    backend: Backend | None = None,
) -> None:
    """Run the server until SIGTERM or SIGINT, then shut down gracefully."""
    config = config or ServerConfig.from_env()
    running = await start_server(backend or partial(make_backend, config), config, listen)
    start_api_metrics()  # http://$AZULSIM_METRICS_ADDR:$AZULSIM_METRICS_PORT/metrics when set
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    if on_ready:
        on_ready(running.port)
    await stop.wait()
    log.info("shutting down (grace %.0f s)", config.grace_s)
    await running.stop(config.grace_s)
