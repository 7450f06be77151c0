"""Exceptions to HTTP statuses: the gRPC table (`service.server.status`) read as HTTP, so a page
and an RPC refuse the same request the same way (INVALID_ARGUMENT is 400, NOT_FOUND 404, …)."""

from __future__ import annotations

import grpc

from ..server.status import message, status_of

HTTP_OF = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
}


def http_status(exc: BaseException) -> tuple[int, str]:
    """``(status, message)`` for an exception of a page's call; 500 for an unexpected one (a bug:
    the caller logs it)."""
    code = status_of(exc)
    if code is None:
        return 500, "internal error (logged by the server)"
    return HTTP_OF.get(code, 500), message(exc)
