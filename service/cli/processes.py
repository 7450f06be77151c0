"""``azulsim serve`` and ``azulsim worker``: one API server or one Celery worker, in this
process, on the Redis of ``$AZULSIM_REDIS_URL`` (the processes a deployment runs)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from .common import CommandError, UsageError, whole_number


def add_serve(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the gRPC API server",
        description="Run the gRPC API server on the Redis of $AZULSIM_REDIS_URL until SIGTERM or "
        "Ctrl-C; with --web (or AZULSIM_WEB_LISTEN) also the read-only web view of the jobs. "
        "Limits, auth and TLS come from AZULSIM_* variables (service/config.py).",
    )
    p.add_argument(
        "--listen", help="host:port to bind (default $AZULSIM_LISTEN or 127.0.0.1:50051)"
    )
    p.add_argument("--port-file", help="write the bound port to this file once serving")
    p.add_argument(
        "--web",
        metavar="HOST:PORT",
        help="also serve the read-only web view there (default $AZULSIM_WEB_LISTEN; unset: none)",
    )
    p.add_argument("--web-port-file", help="write the web view's bound port to this file")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from workers.logs import configure_logging

    from ..config import ServerConfig
    from ..server import serve

    try:
        configure_logging()  # AZULSIM_LOG_FORMAT (text or json), AZULSIM_LOG_LEVEL
        config = ServerConfig.from_env(**({"web_listen": args.web} if args.web else {}))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    listen = args.listen or config.listen

    def ready(port: int) -> None:
        host = listen.rpartition(":")[0] or "0.0.0.0"
        tls = " (TLS)" if config.tls_cert else ""
        auth = ", bearer-token auth" if config.auth_tokens else ""
        print(f"azulsim API listening on {host}:{port}{tls}{auth}", file=sys.stderr, flush=True)
        if args.port_file:
            _write_port(args.port_file, port)

    def web_ready(port: int) -> None:
        host = config.web_listen.rpartition(":")[0] or "0.0.0.0"
        scheme = "https" if config.tls_cert else "http"
        print(f"azulsim web view on {scheme}://{host}:{port}/", file=sys.stderr, flush=True)
        if args.web_port_file:
            _write_port(args.web_port_file, port)

    try:
        asyncio.run(serve(config, listen, on_ready=ready, on_web=web_ready))
    except OSError as exc:
        raise CommandError(str(exc)) from None
    return 0


def _write_port(path: str, port: int) -> None:
    tmp = Path(path + ".tmp")
    tmp.write_text(str(port))
    tmp.replace(path)


def add_worker(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "worker",
        help="run a Celery worker that plays chunks",
        description="Run a Celery chunk worker (prefork pool) on the Redis of $AZULSIM_REDIS_URL.",
    )
    p.add_argument(
        "--concurrency", type=whole_number, help="pool processes (default: one per core)"
    )
    p.add_argument("--loglevel", default="INFO", help="Celery log level (default INFO)")
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    from workers.app import run_worker

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1; got {args.concurrency}")
    run_worker(concurrency=args.concurrency, argv=[f"--loglevel={args.loglevel}"])
    return 0
