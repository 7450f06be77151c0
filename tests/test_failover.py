"""Redis failover under a running job: a primary, a replica and three Sentinels
(`service.stack.SentinelGroup`, real ``redis-server`` processes on free loopback ports), real
Celery workers that find the primary through the Sentinels (``AZULSIM_REDIS_SENTINELS``).

The primary is SIGKILLed mid-job and never started again: the Sentinels promote the replica, the
workers and the test's own client follow them, and the job ends with the counters of a clean
in-process run (`sim.jobs.local.run_local`) — no chunk lost, none counted twice — and, for an SPRT
job, the same stop point. Each test prints a ``FAULT`` line with the recovery time (from the kill
to the next chunk merged on the new primary); docs/reliability.md "Failover" has the figures.
The split-brain case (the primary partitioned away while it still takes writes) is in
tests/test_failover_netns.py.
"""

from __future__ import annotations

import signal
import time
import uuid

import pytest
import redis

from service.stack import SentinelGroup
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.faults_util import FAULT_PREAMBLE, busy_children
from tests.test_compare_service import SPEC as SPRT_SPEC
from tests.test_compare_service import summary_of
from tests.test_faults import CHUNKS, FAST_LIMITS, SPEC, report
from tests.waits import logs_of, wait_until
from workers.app import make_app
from workers.dispatch import submit
from workers.settings import load_settings
from workers.store import JobStore, StoreUnavailable, connect

ERRORS = (StoreUnavailable, redis.RedisError)


@pytest.fixture
def group(tmp_path):
    with SentinelGroup(tmp_path / "redis") as g:
        yield g


def env_for(group: SentinelGroup, fault_dir) -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {
        **group.env,
        **FAST_LIMITS,
        "AZULSIM_PREFIX": f"test{tag}",
        "AZULSIM_QUEUE": f"test{tag}.chunks",
        "AZULSIM_CHUNK_GAMES": "50",
        "AZULSIM_RECONCILE_INTERVAL_S": "1",  # lost messages come back in seconds
        "AZULSIM_REDIS_WAIT_TIMEOUT_S": "1",  # below half the chunks' soft limit (6 s)
        "AZULSIM_FAULT_DIR": str(fault_dir),
    }


def settled(fn):
    """`fn()`, or None while Redis fails over (no primary yet, a connection to the dead one)."""
    try:
        return fn()
    except ERRORS:
        return None


def merged(store: JobStore, job_id: str) -> int | None:
    """Chunks whose done bit is set (merged, or parked for a stopping rule)."""
    return settled(lambda: store.redis.bitcount(store.job_keys(job_id)["done"]))


def wait_finished(store: JobStore, job_id: str, workers, timeout: float = 180.0):
    return wait_until(
        lambda: (job := settled(lambda: store.get_job(job_id))) and job.finished and job,
        timeout,
        f"job {job_id} to finish across the failover",
        interval=0.2,
        details=lambda: f"{settled(lambda: store.get_job(job_id))}\n{logs_of(workers)[-6000:]}",
    )


def kill_primary_mid_job(group, store, job_id, workers, fault_dir, after: int) -> dict:
    """Once `after` chunks are merged and one plays, SIGKILL the primary for good; wait for the
    next merge on the promoted replica. Returns the figures."""
    wait_until(
        lambda: (merged(store, job_id) or 0) >= after and busy_children(fault_dir),
        90,
        f"{after} chunks merged and one in play",
        details=lambda: logs_of(workers)[-4000:],
    )
    before = merged(store, job_id)
    old = group.primary
    old.kill()
    killed = time.monotonic()
    promoted = wait_until(
        lambda: (p := group.current_primary()) is not None and p is not old and p,
        60,
        "the Sentinels to promote the replica",
        interval=0.1,
        details=lambda: group.watchers[0].log(),
    )
    failover_s = time.monotonic() - killed
    wait_until(
        lambda: (merged(store, job_id) or 0) > before,
        120,
        "a chunk merged on the new primary",
        interval=0.1,
        details=lambda: logs_of(workers)[-6000:],
    )
    assert promoted.proc.poll() is None and old.proc.poll() is not None  # never restarted
    return {
        "failover_s": round(failover_s, 2),
        "recovery_s": round(time.monotonic() - killed, 2),
        "merged_at_kill": before,
    }


def start_workers(celery_worker_process, env, n=2, delay=0.6):
    extra = {"AZULSIM_FAULT_DELAY": str(delay)}
    return [
        celery_worker_process(env, concurrency=1, preamble=FAULT_PREAMBLE, extra_env=extra)
        for _ in range(n)
    ]


def test_primary_killed_for_good_mid_job(group, tmp_path, celery_worker_process):
    """The primary is SIGKILLed while chunks play and never comes back: the job still ends
    SUCCEEDED with every game counted exactly once (the counters of the clean run)."""
    fault_dir = tmp_path / "faults"
    fault_dir.mkdir()
    env = env_for(group, fault_dir)
    settings = load_settings(env)
    assert settings.wait_for == 1  # Sentinels: merges wait for the replica by default
    store, app = JobStore(connect(settings), settings), make_app(settings)
    workers = start_workers(celery_worker_process, env)
    job, _ = submit(store, app, SPEC, None)
    began = time.monotonic()
    figures = kill_primary_mid_job(group, store, job.job_id, workers, fault_dir, after=3)
    done = wait_finished(store, job.job_id, workers)
    assert done.state == "SUCCEEDED", f"{done}\n{logs_of(workers)[-6000:]}"
    assert (done.games_done, done.chunks_done) == (SPEC.total_games, CHUNKS)  # 0 lost, 0 twice
    expected = run_local(SPEC, workers=1).counters
    got = store.counters(job.job_id)
    diff = {k: (got.get(k), expected.get(k)) for k in set(got) | set(expected)}
    assert not {k: v for k, v in diff.items() if v[0] != v[1]}, "counters differ from in-process"
    text = logs_of(workers)
    report(
        "redis-primary-killed-for-good",
        job_s=round(time.monotonic() - began, 1),
        not_acked=text.count("not acked"),
        **figures,
    )


def test_failover_during_sprt_job_stops_where_in_process_stops(
    group, tmp_path, celery_worker_process
):
    """An SPRT job across a failover: the same verdict, stop point and statistics as
    in-process (`run_local`)."""
    fault_dir = tmp_path / "faults"
    fault_dir.mkdir()
    env = {**env_for(group, fault_dir), "AZULSIM_CHUNK_GAMES": "20"}
    settings = load_settings(env)
    store, app = JobStore(connect(settings), settings), make_app(settings)
    expected = run_local(SPRT_SPEC, workers=1, chunk_size=20)
    workers = start_workers(celery_worker_process, env, delay=0.4)
    job, _ = submit(store, app, SPRT_SPEC, None)
    figures = kill_primary_mid_job(group, store, job.job_id, workers, fault_dir, after=2)
    done = wait_finished(store, job.job_id, workers)
    assert done.state == "SUCCEEDED", f"{done}\n{logs_of(workers)[-6000:]}"
    assert store.counters(done.job_id) == expected.counters
    assert summary_of(store, done) == expected.stopping
    assert done.games_done == expected.stopping["games"] < done.games_total
    report("redis-failover-sprt", stop_games=done.games_done, **figures)


def test_merge_is_not_acked_until_the_replica_holds_it(group, tmp_path, celery_worker_process):
    """The replica is frozen (SIGSTOP): the chunk's merge lands on the primary, but its message
    is not acked ("not acked", requeued) while the replica cannot confirm it, so a failover to
    that replica would replay the chunk, not lose it. Once the replica runs again, the message
    is acked. (With ``AZULSIM_REDIS_WAIT_REPLICAS=0`` it is acked at once: this test fails.)"""
    fault_dir = tmp_path / "faults"
    fault_dir.mkdir()
    env = {**env_for(group, fault_dir), "AZULSIM_REDIS_WAIT_TIMEOUT_S": "0.5"}
    settings = load_settings(env)
    store, app = JobStore(connect(settings), settings), make_app(settings)
    workers = start_workers(celery_worker_process, env, n=1, delay=0.0)
    replica = group.servers[1]
    # One configuration, one chunk: the job is SUCCEEDED on the primary by its first merge, and
    # its message then comes back (at the queue's head) until the replica confirms the merge.
    d = SPEC.to_dict()
    spec = JobSpec.from_dict({**d, "configurations": d["configurations"][:1], "games": 50})
    replica.proc.send_signal(signal.SIGSTOP)
    try:
        job, _ = submit(store, app, spec, None)
        wait_until(
            lambda: logs_of(workers).count("not acked") >= 2,
            90,
            "the merge to wait for the frozen replica",
            details=lambda: logs_of(workers)[-4000:],
        )
        assert store.get_job(job.job_id).state == "SUCCEEDED"  # merged on the primary...
        unacked = store.redis.hlen(settings.broker_key("unacked"))
        waiting = store.redis.llen(settings.queue_key)
        assert unacked + waiting >= 1  # ...and its message kept for a replay
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    wait_until(
        lambda: store.redis.hlen(settings.broker_key("unacked")) == 0
        and store.redis.llen(settings.queue_key) == 0,
        90,
        "the message to be acked once the replica confirms",
        details=lambda: logs_of(workers)[-4000:],
    )
    report("redis-merge-waits-for-replica", not_acked=logs_of(workers).count("not acked"))
