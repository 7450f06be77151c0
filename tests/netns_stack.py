"""The whole AzulSim stack on five test hosts (tests/netns.py): Redis, the API, two workers and
a client, each in its own network namespace; used by tests/test_netns.py through the
``netns_stack`` fixture of tests/conftest.py.

::

    redis   192.0.2.6   redis-server on 6390, and the fault proxy (tests/netns_proxy.py) with one
                        route per Redis client host: w1 -> :7001, w2 -> :7002, api -> :7003
    api     192.0.2.10  ``python -m service serve`` on :50051, Redis through route ``api``
    w1, w2  .14, .18    ``workers.app.run_worker`` (prefork, 1 process), Redis through its route
    client  192.0.2.22  tests/netns_client.py: every API call of a test goes from here

Every Redis connection goes through the proxy, so latency, resets and stalls can be put on any
host's connections; links and partitions are cut at the router. The test process itself sees
Redis through a UNIX socket (a management path no network fault touches) to read counters and
done bits, and the client's replies through its pipes.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from service.stack import redis_binary
from tests.faults_util import FAULT_PREAMBLE
from tests.netns import Host, Network
from tests.waits import wait_until
from workers.settings import Settings, load_settings
from workers.store import JobStore

REPO = Path(__file__).resolve().parent.parent
REDIS_PORT = 6390
PROXY_PORTS = {"w1": 7001, "w2": 7002, "api": 7003}
API_PORT = 50051

# Writes "<time> <job> <chunk>" to recv-<host> in the fault directory for every task the
# worker's consumer receives: when each worker consumed, on one clock (one kernel).
RECV_PREAMBLE = r"""
import os as _o, time as _t
from celery import signals as _s
_recv_path = _o.path.join(_o.environ["AZULSIM_FAULT_DIR"], "recv-" + _o.environ["AZULSIM_NET_HOST"])
def _on_recv(request=None, **_kw):
    args = list(getattr(request, "args", None) or [])
    with open(_recv_path, "a") as f:
        job, chunk = (args + ["-", "-"])[:2]
        f.write("%.3f %s %s\n" % (_t.time(), job, chunk))
_s.task_received.connect(_on_recv, weak=False)
"""


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return env


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(timeout=10)


@dataclass
class NetWorker:
    host: Host
    proc: subprocess.Popen
    logfile: Path
    recvfile: Path
    respawn: object = None  # () -> Popen: start it again (what the supervisor calls)
    restarts: list = field(default_factory=list)  # (wall time, exit status) per restart

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def received(self) -> list[tuple[float, str, int]]:
        """``(time, job_id, chunk)`` of every task this worker's consumer received so far."""
        if not self.recvfile.exists():
            return []
        out = []
        for line in self.recvfile.read_text().splitlines():
            t, job, chunk = line.split()
            out.append((float(t), job, int(chunk) if chunk.isdigit() else -1))
        return out

    def first_received_after(self, t: float) -> float | None:
        return next((r[0] for r in self.received() if r[0] >= t), None)

    def busy_chunk(self, fault_dir: Path) -> int | None:
        """The chunk one of this worker's pool processes is playing now, if any."""
        from tests.faults_util import busy_children

        for pid, chunk in busy_children(fault_dir).items():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == self.proc.pid:
                        return chunk
            except (OSError, ValueError):
                continue
        return None

    def stop(self) -> None:
        _stop(self.proc, timeout=15)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


class ClientAgent:
    """tests/netns_client.py on the client host, one JSON command and reply at a time."""

    def __init__(self, host: Host, address: str, logfile: Path):
        self.proc = host.popen(
            [sys.executable, str(REPO / "tests" / "netns_client.py"), address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(logfile, "wb"),  # noqa: SIM115
            env=_child_env({}),
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.lines.get(timeout=60)
        if first is None or not json.loads(first).get("ready"):
            raise RuntimeError(f"client agent did not start: {logfile.read_text()}")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def call(self, op: str, timeout: float = 10.0, **kwargs) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, "timeout": timeout, **kwargs}) + "\n")
        self.proc.stdin.flush()
        line = self.lines.get(timeout=timeout + 30)
        if line is None:
            raise RuntimeError("client agent exited")
        return json.loads(line)

    def close(self) -> None:
        _stop(self.proc)


@dataclass
class NetStack:
    """The five hosts and what runs on them; `close` stops all of it (fixtures call it)."""

    workdir: Path
    env: dict[str, str]
    net: Network = field(default_factory=Network)
    procs: list[subprocess.Popen] = field(default_factory=list)
    workers: list[NetWorker] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fault_dir = self.workdir / "faults"
        self.fault_dir.mkdir(parents=True, exist_ok=True)
        for name in ("redis", "api", "w1", "w2", "client"):
            self.net.add_host(name)
        # UNIX socket paths must stay under 108 bytes: a short directory of their own.
        self.sockdir = Path(tempfile.mkdtemp(prefix=f"{self.net.tag}-", dir="/tmp"))
        self.redis_sock = str(self.sockdir / "redis.sock")
        self.proxy_sock = str(self.sockdir / "proxy.sock")
        self.settings: Settings = load_settings(self.env_for("w1"))
        self.store: JobStore | None = None
        self.client: ClientAgent | None = None

    # -- addresses ---------------------------------------------------------------------------

    def redis_url_for(self, host: str) -> str:
        return f"redis://{self.net['redis'].addr}:{PROXY_PORTS[host]}/0"

    def env_for(self, host: str) -> dict[str, str]:
        return {**self.env, "AZULSIM_REDIS_URL": self.redis_url_for(host)}

    @property
    def api_address(self) -> str:
        return f"{self.net['api'].addr}:{API_PORT}"

    # -- start -------------------------------------------------------------------------------

    def _spawn(self, host: str, argv: list[str], name: str, env: dict | None = None):
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115
        proc = self.net[host].popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_child_env(env or {}),
            start_new_session=True,
            cwd=REPO,
        )
        self.procs.append(proc)
        return proc

    def start(self) -> NetStack:
        binary = redis_binary()
        if binary is None:
            raise RuntimeError("no redis-server binary")
        redis_addr = self.net["redis"].addr
        self._spawn(
            "redis",
            [
                binary,
                "--port",
                str(REDIS_PORT),
                "--bind",
                "127.0.0.1",
                redis_addr,
                "--protected-mode",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--maxmemory-policy",
                "noeviction",
                "--unixsocket",
                self.redis_sock,
                "--unixsocketperm",
                "700",
            ],
            "redis",
        )
        client = redis.Redis(unix_socket_path=self.redis_sock, socket_timeout=10)
        wait_until(lambda: _ping(client), 30, "redis-server in the redis host")
        self.store = JobStore(client, self.settings)
        routes = [
            f"--route={h}={redis_addr}:{p}=127.0.0.1:{REDIS_PORT}" for h, p in PROXY_PORTS.items()
        ]
        self._spawn(
            "redis",
            [
                sys.executable,
                str(REPO / "tests" / "netns_proxy.py"),
                "--control",
                self.proxy_sock,
                *routes,
            ],
            "proxy",
        )
        wait_until(lambda: os.path.exists(self.proxy_sock), 30, "the fault proxy")
        port_file = self.workdir / "api.port"
        self._spawn(
            "api",
            [
                sys.executable,
                "-m",
                "service",
                "serve",
                "--listen",
                self.api_address,
                "--port-file",
                str(port_file),
            ],
            "api",
            self.env_for("api"),
        )
        wait_until(port_file.exists, 60, "the API server", details=lambda: self.tail("api"))
        self.client = ClientAgent(self.net["client"], self.api_address, self.workdir / "client.log")
        return self

    def start_worker(
        self, host: str, delay: float, extra: dict | None = None, argv: tuple[str, ...] = ()
    ) -> NetWorker:
        """A worker on `host` (one pool process), each chunk slowed by `delay` s; `extra`: more
        environment; `argv`: more ``celery worker`` options."""
        logfile = self.workdir / f"worker-{host}-{len(self.workers)}.log"
        env = {
            **self.env_for(host),
            "AZULSIM_FAULT_DIR": str(self.fault_dir),
            "AZULSIM_FAULT_DELAY": str(delay),
            "AZULSIM_NET_HOST": host,
            **(extra or {}),
        }
        code = (
            FAULT_PREAMBLE + RECV_PREAMBLE + "\nimport workers.app as a; a.run_worker("
            f"concurrency=1, argv=['--loglevel=INFO', '--hostname={host}-{os.getpid()}@%h', "
            f"'--logfile={logfile}', *{list(argv)!r}])"
        )
        argv = [sys.executable, "-c", code]
        proc = self._spawn(host, argv, f"worker-{host}-stdio", env)
        worker = NetWorker(
            self.net[host],
            proc,
            logfile,
            self.fault_dir / f"recv-{host}",
            respawn=lambda: self._spawn(host, argv, f"worker-{host}-stdio", env),
        )
        self.workers.append(worker)
        self._supervise()
        wait_until(
            lambda: " ready." in worker.log() or proc.poll() is not None,
            90,
            f"worker on {host}",
            details=worker.log,
        )
        if proc.poll() is not None:
            raise RuntimeError(f"worker on {host} exited {proc.returncode}:\n{worker.log()}")
        return worker

    def _supervise(self) -> None:
        """Restart a worker that exits with the watchdog's status, as Kubernetes restarts a
        container whose process ends (restartPolicy Always); one thread per stack."""
        from workers.watchdog import EXIT_STUCK

        if getattr(self, "_supervisor", None) is not None:
            return
        self._supervising = True

        def loop():
            while self._supervising:
                for w in list(self.workers):
                    code = w.proc.poll()
                    if code == EXIT_STUCK and self._supervising:
                        w.restarts.append((time.time(), code))
                        w.proc = w.respawn()
                time.sleep(0.2)

        self._supervisor = threading.Thread(target=loop, daemon=True)
        self._supervisor.start()

    # -- faults through the proxy -------------------------------------------------------------

    def proxy(self, op: str, **kwargs) -> dict:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.proxy_sock)
            s.sendall((json.dumps({"op": op, **kwargs}) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data)
        if not reply.get("ok"):
            raise RuntimeError(f"proxy {op}: {reply}")
        return reply

    def heal_all(self) -> None:
        """Undo every fault: links up, partitions healed, proxy latency 0 and no stall."""
        for name in self.net.hosts:
            self.net.link_up(name)
        for a, b in list(self.net.rules):
            self.net.heal(a, b)
        try:
            self.proxy("set", route="*", latency=0.0)
            self.proxy("stall", route="*", on=False)
        except (OSError, RuntimeError, ValueError):
            pass

    # -- reading -----------------------------------------------------------------------------

    def tail(self, name: str, chars: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def logs(self) -> str:
        parts = [f"--- {w.host.name} ---\n{w.log()[-3000:]}" for w in self.workers]
        return "\n".join(parts + [f"--- api ---\n{self.tail('api', 2000)}"])

    def stop_workers(self) -> None:
        self._supervising = False
        if getattr(self, "_supervisor", None) is not None:
            self._supervisor.join(5)
            self._supervisor = None
        for w in self.workers:
            w.stop()
        self.workers.clear()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        self.stop_workers()
        for proc in reversed(self.procs):
            _stop(proc)
        if self.store is not None:
            self.store.redis.close()
        self.net.close()
        shutil.rmtree(self.sockdir, ignore_errors=True)


def _ping(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
