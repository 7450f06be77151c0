"""The parts of the stack that a test starts in its own process, on the Redis of an ``AZULSIM_*``
environment: the job store and the Celery app that publishes its chunks, as the API server holds
them (`open_stack`; the ``job_stack`` fixture of tests/conftest.py is `open_stack` of the test's
``env``), an in-process API server (`api_thread`) and one as a child process (`ApiProcess`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis
from celery import Celery

from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from tests.waits import wait_until
from workers.app import make_app
from workers.settings import Settings, load_settings
from workers.store import JobStore

REPO = Path(__file__).resolve().parent.parent


def open_store(env: dict[str, str]) -> JobStore:
    """A `JobStore` on ``AZULSIM_REDIS_URL`` of `env`, with `env`'s settings (close its
    ``.redis`` when done)."""
    settings = load_settings(env)
    return JobStore(redis.Redis.from_url(settings.redis_url), settings)


def open_stack(env: dict[str, str]) -> tuple[JobStore, Celery]:
    """``(store, app)`` for `env`: `open_store` and `workers.app.make_app` of the same settings."""
    store = open_store(env)
    return store, make_app(store.settings)


def api_thread(
    env: dict[str, str] | Settings, config: ServerConfig | None = None, listen: str = "127.0.0.1:0"
) -> ServerThread:
    """An in-process API server on the Redis and settings of `env` (``AZULSIM_*`` variables, or
    their `Settings`) with `config` (default ``ServerConfig()``), on a free port unless `listen`;
    not started: ``with api_thread(env) as server:``, or ``.start()`` and ``.stop()``."""
    settings = env if isinstance(env, Settings) else load_settings(env)
    config = config or ServerConfig()
    return ServerThread(make_backend(config, settings), config, listen=listen)


class ApiProcess:
    """``azulsim serve`` (``python -m service serve``) as a child process on `port` (0: a free
    one, chosen at the first start), which a test may kill and start again there; its output
    goes to ``api-<start>.log`` files in `workdir` (`log`)."""

    def __init__(self, env: dict[str, str], port: int, workdir: Path):
        self.env = {**os.environ, **env, "PYTHONPATH": str(REPO)}
        self.port, self.workdir = port, workdir
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ApiProcess:
        port_file = self.workdir / "api.port"
        port_file.unlink(missing_ok=True)
        log = open(self.workdir / f"api-{self.starts}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--listen", self.address,
             "--port-file", str(port_file)],
            env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self.starts += 1
        wait_until(
            lambda: port_file.exists() or self.proc.poll() is not None,
            60,
            "the API server to listen",
            details=self.log,
        )
        assert self.proc.poll() is None, self.log()
        self.port = int(port_file.read_text())
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("api-*")))


def answered(fn):
    """``fn()`` (a call of the API), or None while the API, or the Redis behind it, is down
    (UNAVAILABLE, DEADLINE_EXCEEDED): for waits across a restart."""
    import grpc

    try:
        return fn()
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return None
        raise
