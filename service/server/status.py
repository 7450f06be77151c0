"""Exceptions to gRPC status codes: the one table every path of the servicer uses.

Validation errors (`BadRequest`, which `checked` makes of a ``ValueError``) are INVALID_ARGUMENT,
`JobNotFound` NOT_FOUND, `RequestConflict` ALREADY_EXISTS, `JobFinished` and `Precondition`
FAILED_PRECONDITION, `LimitExceeded` RESOURCE_EXHAUSTED, and an unreachable Redis or broker
UNAVAILABLE. Any other exception is a bug: no code, so the servicer logs it and gRPC says UNKNOWN.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

T = TypeVar("T")

# The longest status message sent. Values are quoted short where the message is written
# (`sim.quote.shown`); this cap is the last guard, since a message travels in the trailers,
# which gRPC limits (16 KB by default: a longer one reaches the client as RESOURCE_EXHAUSTED).
MAX_MESSAGE = 1000


class BadRequest(ValueError):
    """A request field is invalid: INVALID_ARGUMENT with this message."""


class LimitExceeded(Exception):
    """A server limit (games per job, queued jobs, concurrent watches): RESOURCE_EXHAUSTED."""


class Precondition(Exception):
    """The job is not in a state that allows the call: FAILED_PRECONDITION."""


def checked(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with its ``ValueError`` (a validation message naming the field) turned into
    `BadRequest`; any other exception passes unchanged."""
    try:
        return fn(*args)
    except BadRequest:
        raise
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


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
def _table() -> dict[type, grpc.StatusCode]:
    table = {
        BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
        LimitExceeded: grpc.StatusCode.RESOURCE_EXHAUSTED,
        Precondition: grpc.StatusCode.FAILED_PRECONDITION,
    }
    table.update(_store_errors())
    return table


def status_of(exc: BaseException) -> grpc.StatusCode | None:
    """The status code for an exception of a call, or None for an unexpected one."""
    table = _table()
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return None


def message(exc: BaseException) -> str:
    """The status message: a validation message as written; any other on one line, and an
    unreachable store says it is Redis. At most `MAX_MESSAGE` characters."""
    if isinstance(exc, BadRequest):
        return capped(str(exc))
    text = " ".join(str(exc).split())
    if status_of(exc) == grpc.StatusCode.UNAVAILABLE and "Redis" not in text:
        text = f"the job store (Redis) is unavailable: {text or type(exc).__name__}"
    return capped(text or type(exc).__name__)


def capped(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text`, or its start and how long it was when longer than `limit` characters."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... (message cut: {len(text)} characters)"
