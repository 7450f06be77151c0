"""Prometheus metrics of the API server: a ``grpc.aio`` server interceptor and the endpoint.

Per RPC, labelled ``grpc_type`` (unary, server_stream, …), ``grpc_service`` and
``grpc_method`` — the names of the go-grpc-prometheus / py-grpc-prometheus conventions, so the
usual Grafana dashboards apply — and ``grpc_code`` (the status code name, ``OK`` …):

======================================  ==========================================================
metric                                  meaning
======================================  ==========================================================
``grpc_server_started_total``           RPCs started
``grpc_server_handled_total``           RPCs completed, by status code
``grpc_server_handling_seconds``        histogram of the time to complete an RPC (a WatchJob
                                        stream: its whole life)
``azulsim_api_errors_total``            RPCs that ended with a code other than OK, by method
                                        and code
``azulsim_queue_length{queue}``         messages waiting in the chunk queue (Redis ``LLEN`` at
                                        scrape time; `workers.metrics.QueueDepthCollector`)
``azulsim_redis_up``                    1 when the last scrape reached Redis
======================================  ==========================================================

Hooks in `service.server` (each one line):

- ``start_server``: ``interceptors = [MetricsInterceptor(), *auth]`` — first, so that it also
  sees the calls the token check refuses;
- ``serve``: ``start_api_metrics()`` starts ``http://$AZULSIM_METRICS_ADDR:$AZULSIM_METRICS_PORT
  /metrics`` when the port is set (default registry: the RPC metrics, the process collectors and
  the queue depth).

The interceptor also logs each completed call on the ``azulsim.rpc`` logger (method, peer, code,
milliseconds): DEBUG when OK, INFO otherwise — with ``AZULSIM_LOG_FORMAT=json`` these become
JSON fields (`workers.logs`).
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

import grpc
from prometheus_client import REGISTRY, Counter, Histogram

from workers.metrics import QueueDepthCollector, metrics_addr, metrics_port, start_metrics_server

log = logging.getLogger("azulsim.rpc")

# RPC latency buckets, seconds: Redis round trips (ms) up to long WatchJob streams (minutes).
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
)

_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
STARTED = Counter("grpc_server_started", "RPCs started on the server", _LABELS)
HANDLED = Counter(
    "grpc_server_handled", "RPCs completed on the server, by status code", [*_LABELS, "grpc_code"]
)
LATENCY = Histogram(
    "grpc_server_handling_seconds",
    "Time to complete an RPC on the server",
    _LABELS,
    buckets=LATENCY_BUCKETS,
)
ERRORS = Counter(
    "azulsim_api_errors",
    "RPCs that ended with a status other than OK",
    ["grpc_service", "grpc_method", "grpc_code"],
)

_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def code_name(code: Any) -> str | None:
    """The status code's name (``OK``, ``NOT_FOUND``, …) from a `grpc.StatusCode`, an int
    (what a ``grpc.aio`` context's ``code()`` may hold) or None."""
    if code is None:
        return None
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(code, int):
        return _CODE_NAMES.get(code, str(code))
    return getattr(code, "name", None) or str(code)


def split_method(full: str) -> tuple[str, str]:
    """``/pkg.Service/Method`` -> ``("pkg.Service", "Method")``."""
    _, _, rest = (full or "").partition("/")
    service, _, method = rest.partition("/")
    return service or "unknown", method or "unknown"


def _rpc_type(handler: grpc.RpcMethodHandler) -> str:
    if handler.unary_unary:
        return "unary"
    if handler.unary_stream:
        return "server_stream"
    if handler.stream_unary:
        return "client_stream"
    return "bidi_stream"


class _Call:
    """Bookkeeping of one RPC: started on creation, `done` once."""

    def __init__(self, rpc_type: str, service: str, method: str):
        self.labels = (rpc_type, service, method)
        self.began = time.perf_counter()
        STARTED.labels(*self.labels).inc()

    def done(self, context, exc: BaseException | None) -> None:
        if exc is None:
            code = code_name(_context_code(context)) or "OK"
        elif isinstance(exc, grpc.aio.AbortError):
            code = code_name(_context_code(context)) or "UNKNOWN"
        elif isinstance(exc, _cancelled_errors()):
            code = "CANCELLED"
        else:
            code = "UNKNOWN"
        seconds = time.perf_counter() - self.began
        HANDLED.labels(*self.labels, code).inc()
        LATENCY.labels(*self.labels).observe(seconds)
        _, service, method = self.labels
        if code != "OK":
            ERRORS.labels(service, method, code).inc()
        level = logging.DEBUG if code == "OK" else logging.INFO
        if log.isEnabledFor(level):
            peer = _safe(lambda: context.peer())
            log.log(
                level,
                "%s/%s %s %.1f ms",
                service,
                method,
                code,
                1000 * seconds,
                extra={
                    "rpc_service": service,
                    "rpc_method": method,
                    "grpc_code": code,
                    "peer": peer,
                    "duration_ms": round(1000 * seconds, 3),
                },
            )


def _cancelled_errors() -> tuple[type[BaseException], ...]:
    import asyncio

    return (asyncio.CancelledError,)


def _context_code(context) -> Any:
    return _safe(lambda: context.code())


def _safe(fn):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a metric must never break a call
        return None


def _wrap_unary(behavior, rpc_type, service, method):
    async def wrapper(request_or_iterator, context):
        call = _Call(rpc_type, service, method)
        try:
            result = behavior(request_or_iterator, context)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as exc:
            call.done(context, exc)
            raise
        call.done(context, None)
        return result

    return wrapper


def _wrap_stream(behavior, rpc_type, service, method):
    async def wrapper(request_or_iterator, context):
        call = _Call(rpc_type, service, method)
        try:
            result = behavior(request_or_iterator, context)
            if inspect.isasyncgen(result):
                async for item in result:
                    yield item
            elif inspect.isawaitable(result):  # a handler that writes with context.write
                await result
            else:  # a plain iterator
                for item in result:
                    yield item
        except BaseException as exc:
            call.done(context, exc)
            raise
        call.done(context, None)

    return wrapper


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts, times and logs every RPC (see the module docstring). Put it first in the
    server's interceptor list so that it wraps the others."""

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None:  # unknown method: grpc answers UNIMPLEMENTED itself
            return None
        service, method = split_method(handler_call_details.method)
        rpc_type = _rpc_type(handler)
        kwargs = dict(
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(handler.unary_unary, rpc_type, service, method), **kwargs
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                _wrap_unary(handler.stream_unary, rpc_type, service, method), **kwargs
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                _wrap_stream(handler.unary_stream, rpc_type, service, method), **kwargs
            )
        return grpc.stream_stream_rpc_method_handler(
            _wrap_stream(handler.stream_stream, rpc_type, service, method), **kwargs
        )


_queue_collector: QueueDepthCollector | None = None


def register_queue_depth(settings=None, registry=REGISTRY) -> QueueDepthCollector:
    """Add ``azulsim_queue_length`` for the chunk queue of `settings` (default: the
    environment's) to `registry`; once per process."""
    global _queue_collector
    if _queue_collector is None:
        if settings is None:
            from workers.settings import load_settings

            settings = load_settings()
        _queue_collector = QueueDepthCollector(
            settings.redis_url,
            [settings.queue],
            key_prefix=settings.broker_key_prefix,
            settings=settings,
        )
        registry.register(_queue_collector)
    return _queue_collector


def start_api_metrics(settings=None, env=None):
    """Start the API's metrics endpoint when ``AZULSIM_METRICS_PORT`` is set; returns
    ``(server, thread)`` or None. A bad port or a port in use is logged, not raised: metrics
    must not keep the API from serving."""
    try:
        port = metrics_port(env)
    except ValueError as exc:
        log.error("metrics off: %s", exc)
        return None
    if port is None:
        return None
    register_queue_depth(settings)
    try:
        started = start_metrics_server(port, REGISTRY, metrics_addr(env))
    except OSError as exc:
        log.error("metrics endpoint on port %d: %s", port, exc)
        return None
    logging.getLogger("azulsim.server").info(
        "metrics on http://%s:%d/metrics", metrics_addr(env), port
    )
    return started
