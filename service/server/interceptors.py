"""Server interceptors: the bearer-token check, and INVALID_ARGUMENT for request bytes that do not
parse (`service.metrics.MetricsInterceptor` is the third)."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from typing import Any

import grpc

from ..api import SERVICE_NAME

# Calls that never need a token: load balancers and grpcurl must reach them.
AUTH_EXEMPT = ("/grpc.health.v1.Health/", "/grpc.reflection.")


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
                + " ".join(str(request.error).split())[:200],
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
