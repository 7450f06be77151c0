"""Logging for every AzulSim process: plain text (default) or JSON lines, with the job id and the
chunk index on every line a worker writes while it runs a chunk.

=========================  ===========  ==========================================================
variable                   default      meaning
=========================  ===========  ==========================================================
``AZULSIM_LOG_FORMAT``     ``text``     ``text`` or ``json`` (one JSON object per line)
``AZULSIM_LOG_LEVEL``      ``INFO``     level of ``azulsim serve``'s logs (a worker takes
                                        ``--loglevel``)
=========================  ===========  ==========================================================

A JSON line has ``ts`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message``,
``process``, then ``job_id``, ``chunk``, ``task_id`` and ``redelivered`` while a chunk task runs
in that process, any ``extra={...}`` fields of the call (the API's ``rpc_method``, ``grpc_code``,
``peer``, ``duration_ms``), and ``exc`` with the traceback when there is one. In text format the
same context is appended as `` [job=<id> chunk=<n>]``.

How it reaches every line: the context lives in `contextvars`, set by Celery's ``task_prerun``
signal (from the task's arguments: ``job_id`` and ``chunk``) and cleared by ``task_postrun``;
`ContextFilter` copies it onto each record at the *handler*, so records of every logger —
Celery's own ``celery.app.trace`` included — carry it. Celery's ``after_setup_logger`` and
``after_setup_task_logger`` signals put the filter (and the JSON formatter) on the handlers
Celery sets up, in the main process and again in each pool child.

Hooks: ``install(app)`` (idempotent) in `workers.app.make_app`; `configure_logging` in
``azulsim serve`` instead of ``logging.basicConfig``. The variables are read through
`workers.settings.LogSettings`.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import json
import logging
import sys
import traceback
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from .settings import LOG_FORMATS, LogSettings, from_env

FORMATS = LOG_FORMATS
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# The fields a chunk task puts on its log records, in output order.
CONTEXT_FIELDS = ("job_id", "chunk", "task_id", "redelivered")
_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "azulsim_log_context", default=None
)

# Attributes every LogRecord has: anything else on a record came from ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
    *CONTEXT_FIELDS,
}


def log_format(env: Mapping[str, str] | None = None) -> str:
    """``AZULSIM_LOG_FORMAT``: ``text`` (default) or ``json``; ValueError otherwise."""
    return from_env(LogSettings, env).format


def log_level(env: Mapping[str, str] | None = None) -> int:
    """``AZULSIM_LOG_LEVEL`` as a `logging` level (INFO when unset); ValueError otherwise."""
    return from_env(LogSettings, env).level


# --- context ----------------------------------------------------------------------------------


def current_context() -> dict[str, Any]:
    """The log context of the running chunk (empty outside one)."""
    return dict(_context.get() or {})


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Put `fields` (e.g. ``job_id=..., chunk=...``) on every record logged inside the block."""
    token = _context.set({**(_context.get() or {}), **fields})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Copies the chunk context onto each record (None where unset); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _context.get() or {}
        for name in CONTEXT_FIELDS:
            if not hasattr(record, name) or name in ctx:
                setattr(record, name, ctx.get(name))
        return True


# --- formatters -------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring for the fields)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        elif record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out, default=str, ensure_ascii=False)


class ContextTextFormatter(logging.Formatter):
    """Wraps a text formatter and appends `` [job=<id> chunk=<n>]`` inside a chunk."""

    def __init__(self, inner: logging.Formatter | None = None):
        super().__init__()
        self.inner = inner or logging.Formatter(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = self.inner.format(record)
        job, chunk = getattr(record, "job_id", None), getattr(record, "chunk", None)
        if job is None:
            return text
        first, sep, rest = text.partition("\n")  # keep a traceback below the tagged line
        return f"{first} [job={job} chunk={chunk}]{sep}{rest}"


def apply_to_handlers(logger: logging.Logger, fmt: str | None = None) -> None:
    """Give each handler of `logger` the context filter and the formatter of `fmt` (default
    ``AZULSIM_LOG_FORMAT``); idempotent."""
    fmt = fmt or log_format()
    for handler in logger.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
        current = handler.formatter
        if fmt == "json":
            if not isinstance(current, JsonFormatter):
                handler.setFormatter(JsonFormatter())
        elif not isinstance(current, ContextTextFormatter):
            handler.setFormatter(ContextTextFormatter(current))


def configure_logging(
    fmt: str | None = None, level: int | str | None = None, stream=None
) -> logging.Handler:
    """Set the root logger up for a process that is not a Celery worker (``azulsim serve``):
    one stream handler (stderr), the format of `fmt` (default ``AZULSIM_LOG_FORMAT``) and the
    level of `level` (default ``AZULSIM_LOG_LEVEL``, INFO). Replaces the root's handlers."""
    fmt = fmt or log_format()
    if level is None:
        level = log_level()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    apply_to_handlers(root, fmt)
    return handler


# --- Celery signals ---------------------------------------------------------------------------


def task_context(task, args, kwargs) -> dict[str, Any]:
    """``job_id`` and ``chunk`` of a task call, read by the task's own signature (so positional
    and keyword calls both work); empty for tasks without them."""
    args, kwargs = list(args or ()), dict(kwargs or {})
    try:
        bound = inspect.signature(task.run).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = kwargs
    ctx: dict[str, Any] = {}
    if "job_id" in bound:
        ctx["job_id"] = str(bound["job_id"])
    for name in ("chunk", "chunk_index"):
        if name in bound:
            try:
                ctx["chunk"] = int(bound[name])
            except (TypeError, ValueError):
                ctx["chunk"] = bound[name]
            break
    return ctx


_tokens: dict[str, contextvars.Token] = {}
_installed = False


def _on_prerun(sender=None, task_id=None, task=None, args=None, kwargs=None, **_):
    task = task or sender
    ctx = task_context(task, args, kwargs)
    if not ctx:
        return
    ctx["task_id"] = task_id
    delivery = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    if delivery.get("redelivered"):
        ctx["redelivered"] = True
    _tokens[task_id] = _context.set(ctx)


def _on_postrun(sender=None, task_id=None, **_):
    token = _tokens.pop(task_id, None)
    if token is not None:
        try:
            _context.reset(token)
        except ValueError:  # set in another context (a thread pool): just clear it
            _context.set(None)


def _on_setup_logger(logger=None, **_):
    try:
        fmt = log_format()
    except ValueError as exc:
        print(f"azulsim: {exc}; using text logs", file=sys.stderr)
        fmt = "text"
    if logger is not None:
        apply_to_handlers(logger, fmt)
    root = logging.getLogger()
    if logger is not root:
        apply_to_handlers(root, fmt)


def install(app=None) -> None:
    """Connect the logging signal handlers (once per process)."""
    global _installed
    if _installed:
        return
    from celery import signals

    signals.after_setup_logger.connect(
        _on_setup_logger, weak=False, dispatch_uid="azulsim.logging.setup"
    )
    signals.after_setup_task_logger.connect(
        _on_setup_logger, weak=False, dispatch_uid="azulsim.logging.setup_task"
    )
    signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid="azulsim.logging.prerun")
    signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid="azulsim.logging.postrun")
    _installed = True
