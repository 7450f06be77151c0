"""The reconciler tells a chunk that waits from one that is lost (docs/reliability.md).

Real Redis, real Celery messages (published by `workers.dispatch.submit`), real workers where a
chunk must be played. Sweeps are run in the test process with a simulated clock (`now`) where
the test stands for hours of waiting; kombu's ``unacked`` entries are written as kombu writes
them where a test stands for a node that died holding a message.
"""

from __future__ import annotations

import json
import time

import pytest
import redis

from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.faults_util import FAULT_PREAMBLE
from tests.waits import wait_job, wait_until
from workers.app import make_app
from workers.broker import chunk_of_raw, read_unacked
from workers.dispatch import submit
from workers.reconciler import queue_length, reconcile_once
from workers.settings import load_settings
from workers.store import JobStore

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {"players": 3, "bots": ["random", "greedy", "random"]},
        ],
        "games": 130,  # 3 chunks of <= 50 per configuration: 6 chunks
        "seed": 31,
    }
)
CHUNKS = 6
SWEEP_S = 30.0  # the default sweep interval: the simulated clock moves by this much per sweep


@pytest.fixture
def stack(azulsim_env):
    settings = load_settings(azulsim_env)
    client = redis.Redis.from_url(settings.redis_url)
    yield JobStore(client, settings), make_app(settings)
    client.close()


def _queued(store: JobStore) -> list[bytes]:
    return store.redis.lrange(store.settings.queue_key, 0, -1)


def test_a_long_backlog_is_never_published_again(stack, azulsim_env, celery_worker_process):
    """30 jobs wait with no worker for 30 simulated minutes (a sweep every 30 s, twelve times
    AZULSIM_STALL_S): not one chunk is published again, although every job is 'stalled' and
    one chunk even started once (a pool child killed mid-play, its message requeued at the back).
    Then a worker with its own sweeps every second plays them all: still none, and every job's
    counters are exact. Before leases, the sweeps republished every waiting chunk."""
    store, app = stack
    jobs = [submit(store, app, SPEC, None)[0] for _ in range(30)]
    assert queue_length(store, store.settings.queue) == 30 * CHUNKS
    assert store.begin_chunk(jobs[0].job_id, 2)[0] == "run"  # started; its message waits again
    t0 = time.time()
    republished = {}
    for k in range(1, 61):
        for job_id, chunks in reconcile_once(store, app, now=t0 + k * SWEEP_S).items():
            republished.setdefault(job_id, []).extend(chunks)
    assert republished == {}
    assert queue_length(store, store.settings.queue) == 30 * CHUNKS  # nothing added
    worker = celery_worker_process(
        azulsim_env, concurrency=2, extra_env={"AZULSIM_RECONCILE_INTERVAL_S": "1"}
    )
    expected = run_local(SPEC, workers=1).counters
    for job in jobs:
        done = wait_until(
            lambda j=job: (info := store.get_job(j.job_id)).finished and info,
            120,
            f"job {job.job_id}",
            details=worker.log,
        )
        assert done.state == "SUCCEEDED", done.error
        assert store.counters(job.job_id) == expected
    assert "again" not in worker.log()
    assert store.republished_total() == 0


def test_a_message_lost_in_a_backlog_is_found_by_a_queue_scan(stack):
    """Two messages of job 3 of 20 vanish from the middle of a waiting queue. Sweeps that may not
    scan the queue cannot tell, and do nothing; a scan marks the two, and the next sweep (after
    the grace) publishes exactly those two, once."""
    store, app = stack
    jobs = [submit(store, app, SPEC, None)[0] for _ in range(20)]
    lost_job = jobs[3].job_id
    for raw in _queued(store):
        if chunk_of_raw(raw) in ((lost_job, 1), (lost_job, 4)):
            assert store.redis.lrem(store.settings.queue_key, 1, raw) == 1
    t0 = time.time() + 3600
    assert reconcile_once(store, app, now=t0, grace_s=60, scan=False) == {}
    assert reconcile_once(store, app, now=t0 + 30, grace_s=60, scan=True) == {}  # marks
    marks = {k for k in store.chunk_state(lost_job)["chunks"] if k.startswith("m:")}
    assert marks == {"m:1", "m:4"}
    assert reconcile_once(store, app, now=t0 + 60, grace_s=60, scan=False) == {}  # too soon
    got = reconcile_once(store, app, now=t0 + 90, grace_s=60, scan=False)
    assert got == {lost_job: [1, 4]}
    assert reconcile_once(store, app, now=t0 + 120, grace_s=60, scan=True) == {}
    assert reconcile_once(store, app, now=t0 + 180, grace_s=60, scan=True) == {}
    assert queue_length(store, store.settings.queue) == 20 * CHUNKS
    assert store.republished_total() == 2


def test_a_message_in_flight_is_not_taken_for_lost(stack):
    """A scan that misses a message because a worker took it meanwhile (off the queue, not yet
    started) only marks the chunk; the start in between cancels the mark."""
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    (raw,) = [m for m in _queued(store) if chunk_of_raw(m) == (job.job_id, 0)]
    store.redis.lrem(store.settings.queue_key, 1, raw)  # BRPOP'd, not in unacked yet
    t0 = time.time()
    assert reconcile_once(store, app, now=t0 + 100, grace_s=10, scan=True) == {}
    assert "m:0" in store.chunk_state(job.job_id)["chunks"]
    assert store.begin_chunk(job.job_id, 0)[0] == "run"  # ... and it starts
    assert "m:0" not in store.chunk_state(job.job_id)["chunks"]
    # Even once its lease lapsed, it is not published on the strength of the old mark: the
    # sweep after that only marks it again (the attempt may have requeued it).
    later = time.time() + store.settings.lease_s + 100
    assert reconcile_once(store, app, now=later, grace_s=10, scan=False) == {}
    assert reconcile_once(store, app, now=later + 1, grace_s=10, scan=True) == {}
    assert reconcile_once(store, app, now=later + 20, grace_s=10, scan=False) == {job.job_id: [0]}


def _deliver_to_dead_node(store: JobStore, raw: bytes, tag: str, at: float) -> None:
    """Move a message from the queue into kombu's unacked bookkeeping, as a consumer does on
    delivery (``QoS.append``): then kill nobody, since no consumer exists here."""
    key = store.settings.broker_key_prefix + "unacked"
    assert store.redis.lrem(store.settings.queue_key, 1, raw) == 1
    store.redis.hset(key, tag, json.dumps([json.loads(raw), "", store.settings.queue]))
    store.redis.zadd(key + "_index", {tag: at})


def test_a_dead_nodes_message_is_taken_over_once(stack):
    """Chunk 5 was delivered to a node that died while playing it: its message sits in kombu's
    unacked hash, which only a consuming worker's visibility-timeout sweep would restore. While
    its lease holds, nothing happens; after the lease and the grace, the reconciler removes the
    unacked entry and publishes the chunk once; kombu has nothing left to restore. Chunk 4 was
    delivered too but never started: its consumer may be alive and busy (a sweep on its event
    loop), so it is left to the visibility timeout."""
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    by_chunk = {chunk_of_raw(m): m for m in _queued(store)}
    now = time.time()
    _deliver_to_dead_node(store, by_chunk[(job.job_id, 5)], "tag-5", now)
    _deliver_to_dead_node(store, by_chunk[(job.job_id, 4)], "tag-4", now)
    assert store.begin_chunk(job.job_id, 5)[0] == "run"
    assert set(read_unacked(store).entries) == {(job.job_id, 5), (job.job_id, 4)}
    assert reconcile_once(store, app, now=now + 20, grace_s=10) == {}  # leased; 4 delivered
    lease = store.settings.lease_s
    assert reconcile_once(store, app, now=now + lease + 5, grace_s=10) == {}  # grace
    assert reconcile_once(store, app, now=now + lease + 11, grace_s=10) == {job.job_id: [5]}
    assert set(read_unacked(store).entries) == {(job.job_id, 4)}
    vt = store.settings.visibility_timeout_s
    assert reconcile_once(store, app, now=now + vt + 5, grace_s=10) == {}
    assert reconcile_once(store, app, now=now + vt + 11, grace_s=10) == {job.job_id: [4]}
    assert read_unacked(store).entries == {}
    assert store.redis.zcard(store.settings.broker_key_prefix + "unacked_index") == 0
    assert reconcile_once(store, app, now=now + vt + 60, grace_s=10, scan=True) == {}
    queued = [chunk_of_raw(m) for m in _queued(store)]
    assert queued.count((job.job_id, 5)) == queued.count((job.job_id, 4)) == 1
    assert store.republished_total() == 2


@pytest.mark.slow
def test_a_burst_with_workers_is_never_published_again(
    stack, azulsim_env, celery_worker_process, tmp_path
):
    """150 one-chunk jobs at once on one worker (2 children, each chunk slowed to 0.2 s), so the
    last ones wait about 20 s, well past a stall time of 12 s, with the worker's sweeps every
    second: no chunk is published again (before leases, each job still queued after the stall
    time was)."""
    store, app = stack
    env = {
        **azulsim_env,
        "AZULSIM_TASK_SOFT_LIMIT_S": "6",
        "AZULSIM_TASK_HARD_LIMIT_S": "8",
        "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
        "AZULSIM_STALL_S": "12",
        "AZULSIM_LEASE_S": "3",
        "AZULSIM_RECONCILE_INTERVAL_S": "1",
    }
    small = JobSpec.from_dict(
        {**SPEC.to_dict(), "configurations": SPEC.to_dict()["configurations"][:1], "games": 20}
    )
    jobs = [submit(store, app, small, None)[0] for _ in range(150)]
    fault_dir = tmp_path / "faults"
    fault_dir.mkdir()
    worker = celery_worker_process(
        env,
        concurrency=2,
        preamble=FAULT_PREAMBLE,
        extra_env={"AZULSIM_FAULT_DIR": str(fault_dir), "AZULSIM_FAULT_DELAY": "0.2"},
    )
    began = time.monotonic()
    for job in jobs:
        wait_until(
            lambda j=job: store.get_job(j.job_id).finished, 120, "the burst", details=worker.log
        )
    assert time.monotonic() - began > 12  # the last jobs waited past the stall time
    assert all(store.get_job(j.job_id).state == "SUCCEEDED" for j in jobs)
    assert "again" not in worker.log()
    assert store.republished_total() == 0


def test_the_lease_is_renewed_while_the_chunk_plays_and_never_outlives_its_job(azulsim_env):
    """`keep_lease` pushes the deadline on every third of the lease; once the chunk merged (or
    the job ended) a renewal writes nothing, so no chunks hash comes back without its TTL."""
    from workers.leases import keep_lease

    settings = load_settings({**azulsim_env, "AZULSIM_LEASE_S": "0.3"})
    store = JobStore(redis.Redis.from_url(settings.redis_url), settings)
    spec = JobSpec.from_dict({**SPEC.to_dict(), "games": 50})  # 2 chunks: one per configuration
    job, _ = store.create_job(spec, None)
    assert store.begin_chunk(job.job_id, 0)[0] == "run"

    def lease():
        return float(store.chunk_state(job.job_id)["chunks"]["l:0"])

    first = lease()
    with keep_lease(store, job.job_id, 0):
        wait_until(lambda: lease() > first + 0.2, 10, "two renewals")
    stopped = lease()
    time.sleep(0.5)
    assert lease() == stopped  # no renewal after the block
    counters = run_local(spec, workers=1).counters  # any counters do: only the key set matters
    assert store.merge_chunk(job.job_id, 0, 50, {k: 0 for k in counters})[0] == 1
    assert "l:0" not in store.chunk_state(job.job_id)["chunks"]  # cleared by the merge
    assert store.renew_lease(job.job_id, 0) is False
    assert store.begin_chunk(job.job_id, 1)[0] == "run"
    store.cancel_job(job.job_id)  # the chunks hash is deleted with the cancel
    assert store.renew_lease(job.job_id, 1) is False
    assert not store.redis.exists(store.job_keys(job.job_id)["chunks"])
    store.redis.close()


SUBMIT_AND_DIE = r"""
import os, signal, sys
import redis
from sim.jobs.spec import JobSpec
from workers.app import make_app
from workers.dispatch import submit
from workers.settings import load_settings
from workers.store import JobStore
settings = load_settings()
app = make_app(settings)
store = JobStore(redis.Redis.from_url(settings.redis_url), settings)
sent, die_at = [0], int(sys.argv[2])
_send = app.send_task
def send(*args, **kwargs):
    if sent[0] == die_at:
        os.kill(os.getpid(), signal.SIGKILL)  # the API process dies half-way through publishing
    sent[0] += 1
    return _send(*args, **kwargs)
app.send_task = send
submit(store, app, JobSpec.from_json(sys.argv[1]), sys.argv[3])
"""


def test_a_retried_submit_is_not_published_again_by_the_reconciler(
    stack, azulsim_env, celery_worker_process
):
    """The API dies (SIGKILL) after publishing 2 of a job's 6 chunks; a sweep finds the other 4
    missing and marks them; the client retries the same request, which publishes the job's
    chunks again. The sweep after that must see those publishes (they are fresh) and publish
    nothing: before, it published the 4 marked chunks a second time beside the retry's copies."""
    import subprocess
    import sys

    store, app = stack
    env = {**__import__("os").environ, **azulsim_env}
    proc = subprocess.run(
        [sys.executable, "-c", SUBMIT_AND_DIE, SPEC.to_json(), "2", "retried-request"],
        env=env, cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent),
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -9, proc.stderr.decode()[-3000:]
    assert queue_length(store, store.settings.queue) == 2
    t0 = time.time()
    assert reconcile_once(store, app, now=t0 + 100, grace_s=10, scan=True) == {}  # marks 4
    (job_id,) = store.active_jobs()
    marks = {k for k in store.chunk_state(job_id)["chunks"] if k.startswith("m:")}
    assert len(marks) == 4, marks
    job, created = submit(store, app, SPEC, "retried-request")
    assert (job.job_id, created) == (job_id, False)
    for k in range(1, 4):  # sweeps that may not scan the queue, past the grace
        assert reconcile_once(store, app, now=t0 + 100 + 30 * k, grace_s=10, scan=False) == {}
    assert store.republished_total() == 0
    assert queue_length(store, store.settings.queue) <= CHUNKS + 2  # the retry's copies only
    worker = celery_worker_process(azulsim_env, concurrency=1)
    done = wait_job(store, job_id, [worker], timeout=120)
    assert done.state == "SUCCEEDED", done.error
    assert store.counters(job_id) == run_local(SPEC, workers=1).counters
