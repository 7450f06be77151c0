"""Chaos: one long job while a seeded schedule of faults fires, through the service's own client.

The stack is real and owned by the test: a ``redis-server`` with AOF (``appendfsync always``),
two Celery worker nodes (prefork, 2 children each, the reconciler sweeping every second) and an
``azulsim serve`` process. The job is submitted and followed with `service.client.Client`. A
`random.Random(seed)` draws the order of the faults and the pauses between them:

``child``  SIGKILL a pool child while it plays a chunk (its node requeues the message);
``node``   SIGKILL a whole worker node (main process and pool) and start a replacement at once
           (its delivered messages come back by the reconciler's take-over or kombu's restore);
``redis``  SIGKILL Redis, start it again a second later on the same port and AOF;
``api``    SIGKILL the API server and start it again on the same port.

Whatever fired, the job must end SUCCEEDED with statistics equal to a clean in-process run
(`sim.jobs.local.run_local`) and counters equal one for one: no game lost or counted twice. The
short variant (one fault of each kind) is in the default run; the slow one draws 12 faults.
Each run prints a ``CHAOS`` line (``-s``) with the faults fired and the figures.
"""

from __future__ import annotations

import json
import random
import signal
import time

import grpc
import psutil
import pytest
import redis

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.stack import RedisServer, free_port
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.faults_util import FAULT_PREAMBLE, ApiProcess, busy_children, pid_alive
from tests.waits import wait_until
from workers.settings import load_settings
from workers.store import JobStore

FAULTS = ("child", "node", "redis", "api")

# Short limits, in the order the settings demand; attempts are generous because a chunk may be
# hit by several faults in a row (a child kill, then its node, then a Redis restart).
CHAOS_LIMITS = {
    "AZULSIM_MAX_ATTEMPTS": "25",
    "AZULSIM_TASK_SOFT_LIMIT_S": "6",
    "AZULSIM_TASK_HARD_LIMIT_S": "8",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
    "AZULSIM_STALL_S": "12",
    "AZULSIM_LEASE_S": "3",
    "AZULSIM_RECONCILE_INTERVAL_S": "1",
}


def chaos_spec(games: int, seed: int) -> JobSpec:
    return JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["greedy", "random"]},
                {"players": 3, "bots": ["random", "heuristic", "greedy"]},
                {"players": 4, "bots": ["random", "greedy", "random", "greedy"], "wall": "gray"},
            ],
            "games": games,
            "seed": seed,
        }
    )


def schedule(seed: int, n: int) -> list[tuple[str, float]]:
    """`n` faults (each kind at least once when n >= 4) in a seeded order, each with the pause
    before it (seconds)."""
    rng = random.Random(seed)
    kinds = list(FAULTS) + [rng.choice(FAULTS) for _ in range(max(0, n - len(FAULTS)))]
    rng.shuffle(kinds)
    return [(kind, round(rng.uniform(0.5, 2.5), 2)) for kind in kinds[:n]]


def _answer(fn):
    """fn() once the API answers (None while it, or Redis behind it, is down)."""
    try:
        return fn()
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return None
        raise


class Chaos:
    """The stack of one chaos run and the faults it can fire."""

    def __init__(self, tmp_path, azulsim_env, celery_worker_process, rng: random.Random):
        (tmp_path / "faults").mkdir()
        (tmp_path / "api").mkdir()
        self.redis = RedisServer(tmp_path / "redis", aof=True).start()
        self.fault_dir = tmp_path / "faults"
        self.env = {
            **azulsim_env,
            **CHAOS_LIMITS,
            "AZULSIM_REDIS_URL": self.redis.url,
            "AZULSIM_FAULT_DIR": str(self.fault_dir),
            "AZULSIM_FAULT_DELAY": "0.6",  # a chunk plays ~0.6 s more: faults land mid-chunk
        }
        self.start_worker = celery_worker_process
        self.nodes = [self._node(), self._node()]
        self.api = ApiProcess(self.env, free_port(), tmp_path / "api").start()
        self.rng = rng
        self.store = JobStore(redis.Redis.from_url(self.redis.url), load_settings(self.env))

    def _node(self, ready: bool = True):
        return self.start_worker(self.env, concurrency=2, preamble=FAULT_PREAMBLE, ready=ready)

    def logs(self) -> str:
        return (
            "\n".join(w.log()[-3000:] for w in self.start_worker.started) + self.api.log()[-2000:]
        )

    def fire(self, kind: str) -> str:
        """Fire one fault; returns what was hit."""
        if kind == "child":
            busy = busy_children(self.fault_dir)
            if not busy:  # nothing in play this instant: any pool child of a live node
                busy = {
                    c.pid: -1
                    for n in self.nodes
                    if pid_alive(n.pid)
                    for c in psutil.Process(n.pid).children()
                }
            pid = self.rng.choice(sorted(busy))
            psutil.Process(pid).send_signal(signal.SIGKILL)
            return f"child {pid} (chunk {busy[pid]})"
        if kind == "node":
            node = self.nodes.pop(self.rng.randrange(len(self.nodes)))
            node.kill()
            # The replacement, at once, and not awaited: on a busy machine a worker takes seconds
            # to start, which the job (played on by the other node) spent getting ahead of the
            # schedule, until it ended before every fault fired.
            self.nodes.append(self._node(ready=False))
            return f"node {node.pid}"
        if kind == "redis":
            self.redis.kill()
            time.sleep(1.0)
            self.redis.start()
            return f"redis (start {self.redis.starts})"
        if kind == "api":
            self.api.stop(signal.SIGKILL)
            self.api.start()
            return f"api (start {self.api.starts})"
        raise ValueError(kind)

    def close(self) -> None:
        self.api.stop(signal.SIGKILL)
        self.store.redis.close()
        self.redis.stop()


def run_chaos(tmp_path, azulsim_env, celery_worker_process, seed: int, faults: int, games: int):
    spec = chaos_spec(games, seed)
    clean = run_local(spec, workers=1)  # the clean in-process run, played once
    local = clean.statistics()
    local.pop("timing")
    expected = clean.counters
    chaos = Chaos(tmp_path, azulsim_env, celery_worker_process, random.Random(seed))
    fired: list[dict] = []
    try:
        with Client(chaos.api.address, token="", timeout=5) as client:
            began = time.monotonic()
            job, _ = client.submit(spec, request_id=f"chaos-{seed}")
            for kind, pause in schedule(seed, faults):
                time.sleep(pause)
                state = chaos.store.get_job(job.job_id)
                if state.finished:
                    break
                hit = chaos.fire(kind)
                fired.append(
                    {
                        "fault": kind,
                        "hit": hit,
                        "at_s": round(time.monotonic() - began, 1),
                        "chunks_done": state.chunks_done,
                    }
                )
            done = wait_until(
                lambda: (
                    (j := _answer(lambda: client.get(job.job_id, timeout=2)))
                    and j.state not in (pb.QUEUED, pb.RUNNING)
                    and j
                ),
                180,
                f"chaos job {job.job_id} to end",
                interval=0.2,
                details=chaos.logs,
            )
            job_s = round(time.monotonic() - began, 1)
            assert done.state == pb.SUCCEEDED, (done, chaos.logs())
            assert client.statistics_document(job.job_id) == local
        assert chaos.store.counters(job.job_id) == expected
        record = chaos.store.get_job(job.job_id)
        assert (record.games_done, record.chunks_done) == (spec.total_games, record.chunks_total)
        print(
            "\nCHAOS "
            + json.dumps(
                {
                    "seed": seed,
                    "chunks": record.chunks_total,
                    "games": spec.total_games,
                    "faults": fired,
                    "job_s": job_s,
                    "republished": chaos.store.republished_total(),
                    "lost": 0,
                    "double": 0,
                }
            )
        )
        assert len(fired) == faults, f"the job ended before every fault fired: {fired}"
        return fired
    finally:
        chaos.close()


def test_schedule_is_seeded_and_has_every_fault():
    assert schedule(7, 4) == schedule(7, 4)
    assert sorted(kind for kind, _ in schedule(7, 4)) == sorted(FAULTS)
    assert {kind for kind, _ in schedule(3, 12)} == set(FAULTS) and len(schedule(3, 12)) == 12


def test_chaos_short(tmp_path, azulsim_env, celery_worker_process):
    """One fault of each kind, in a seeded order, during a 90-chunk job: long enough (at least
    13.5 s of chunk delays on four pool children, and the faults' stalls) to outlast the schedule
    (6.6 s of pauses and the restarts) on a busy machine."""
    run_chaos(tmp_path, azulsim_env, celery_worker_process, seed=11, faults=4, games=1500)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [101, 202, 303])
def test_chaos_long(tmp_path, azulsim_env, celery_worker_process, seed):
    """Twelve seeded faults during a 180-chunk job."""
    run_chaos(tmp_path, azulsim_env, celery_worker_process, seed=seed, faults=12, games=3000)
