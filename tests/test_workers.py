"""Jobs through real Celery workers on a real Redis: no eager mode, no fakes.

Each test starts a worker subprocess (``celery_worker_process``, prefork pool) on its own Redis
database, prefix and queue; the job's counters must equal `sim.jobs.local.run_local`'s exactly.
"""

from __future__ import annotations

import re
import time

import pytest
import redis

from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from sim.stats import derive
from tests.waits import wait_job, wait_until
from workers.app import celery_config, make_app
from workers.broker import chunk_of_raw
from workers.dispatch import publish_chunks, submit
from workers.reconciler import queue_length, reconcile_once
from workers.settings import load_settings
from workers.store import JobStore

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {"players": 4, "bots": ["random", "greedy", "random", "greedy"], "wall": "gray"},
        ],
        "games": 130,
        "seed": 23,
    }
)


@pytest.fixture(scope="module")
def expected():
    return run_local(SPEC, workers=1).counters


@pytest.fixture
def env(azulsim_env):
    return dict(azulsim_env)


@pytest.fixture
def stack(env):
    settings = load_settings(env)
    client = redis.Redis.from_url(settings.redis_url)
    app = make_app(settings)
    yield JobStore(client, settings), app
    client.close()


def test_config_is_at_least_once_and_json_only(env):
    conf = celery_config(load_settings(env))
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1 and conf["task_ignore_result"]
    assert conf["accept_content"] == ["json"] and conf["task_serializer"] == "json"
    vt = conf["broker_transport_options"]["visibility_timeout"]
    assert conf["visibility_timeout"] == vt
    assert conf["task_soft_time_limit"] < conf["task_time_limit"] < vt
    assert conf["result_backend"] is None


def test_submit_retried_after_a_lost_reply_publishes_the_chunks(stack):
    store, app = stack
    job, created = store.create_job(SPEC, "w-lost")  # created, then the reply was lost
    assert created and queue_length(store, store.settings.queue) == 0
    again, created = submit(store, app, SPEC, "w-lost")  # the client retries
    assert not created and again.job_id == job.job_id
    assert queue_length(store, store.settings.queue) == job.chunks_total
    submit(store, app, SPEC, "w-lost")  # published once: a third call adds nothing
    assert queue_length(store, store.settings.queue) == job.chunks_total


def test_worker_runs_a_job_exactly(stack, env, expected, celery_worker_process):
    store, app = stack
    job, created = submit(store, app, SPEC, "w-1")
    assert created and job.chunks_total == 6
    again, created = submit(store, app, SPEC, "w-1")  # idempotent: nothing published twice
    assert not created and again.job_id == job.job_id
    assert queue_length(store, store.settings.queue) == 6
    worker = celery_worker_process(env, concurrency=2)
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "SUCCEEDED", done.error
    assert (done.games_done, done.chunks_done) == (260, 6)
    assert store.counters(job.job_id) == expected
    assert derive(store.counters(job.job_id), done.spec)["games_done"] == 260
    # Each pool child loaded the engine when it started, before its first chunk (workers/app.py):
    # the load never counts against a chunk's time limits.
    log = worker.log()
    children = set(re.findall(r"/(ForkPoolWorker-\d+)\] chunk ", log))
    assert children, log
    for child in children:
        loaded = log.find(f"/{child}] compiled engine loaded in ")
        assert 0 <= loaded < log.find(f"/{child}] chunk "), log


def test_chunk_published_twice_counts_once(stack, env, expected, celery_worker_process):
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    publish_chunks(app, job.job_id, [0, 3, 3, 5])  # duplicates, as a redelivery would make
    worker = celery_worker_process(env, concurrency=1)
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "SUCCEEDED" and done.chunks_done == 6
    assert store.counters(job.job_id) == expected
    wait_until(lambda: not queue_length(store, store.settings.queue), 30, "the queue to drain")
    # the copies ran as no-ops: skipped at start (or refused by the merge script)
    worker.wait_for_log("skipped")


def test_reconciler_republishes_a_lost_chunk(stack, env, expected, celery_worker_process):
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    queue = store.settings.queue_key  # the queue's Redis list
    # Lose two messages (as a Redis restart without AOF or a dropped prefetch would).
    raw = store.redis.lrange(queue, 0, -1)
    assert len(raw) == 6
    store.redis.lrem(queue, 1, raw[0])
    store.redis.lrem(queue, 1, raw[3])
    lost = sorted(chunk_of_raw(raw[i])[1] for i in (0, 3))
    # While the other messages wait (and the queue is not scanned), nothing looks lost.
    assert reconcile_once(store, app, grace_s=0.0, scan=False) == {}
    worker = celery_worker_process(env, concurrency=1)
    wait_until(lambda: store.get_job(job.job_id).chunks_done >= 4, 60, "4 chunks merged")
    job_now = store.get_job(job.job_id)
    assert job_now.state == "RUNNING" and job_now.chunks_done == 4, worker.log()
    time.sleep(0.5)
    assert queue_length(store, queue) == 0
    # Queue empty, nothing unacked, no lease: marked at one sweep, published at the next.
    assert reconcile_once(store, app, grace_s=60.0) == {}  # published a moment ago
    now = time.time()
    assert reconcile_once(store, app, now=now, grace_s=0.0) == {}
    assert reconcile_once(store, app, now=now + 1, grace_s=0.0) == {job.job_id: lost}
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "SUCCEEDED" and done.chunks_done == 6
    assert store.counters(job.job_id) == expected
    assert reconcile_once(store, app, grace_s=0.0) == {}


def test_reconciler_restarts_a_chunk_whose_worker_died(stack, env, expected, celery_worker_process):
    """A chunk whose attempt started and never came back (its lease lapsed, its message in no
    queue and unacked by no one: acked as failed, at the hard time limit say) is published
    again; while the lease holds, it is left alone."""
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    store.redis.delete(store.settings.queue_key)  # all lost; pretend chunk 1 started and died
    assert store.begin_chunk(job.job_id, 1) == ("run", "1")
    now = time.time()
    assert reconcile_once(store, app, now=now, grace_s=0.0) == {}  # marks the never-started
    got = reconcile_once(store, app, now=now + 1, grace_s=0.0)
    assert sorted(got[job.job_id]) == [0, 2, 3, 4, 5]
    assert reconcile_once(store, app, now=now + 2, grace_s=0.0) == {}  # chunk 1 is leased
    celery_worker_process(env, concurrency=2)
    wait_until(lambda: store.get_job(job.job_id).chunks_done >= 5, 60, "5 chunks merged")
    assert store.get_job(job.job_id).state == "RUNNING"
    # Its attempt never comes back: once its lease lapsed, it is marked, then published again.
    later = time.time() + store.settings.lease_s + 1
    assert reconcile_once(store, app, now=later, grace_s=0.0) == {}
    assert reconcile_once(store, app, now=later + 1, grace_s=0.0) == {job.job_id: [1]}
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "SUCCEEDED"
    assert store.counters(job.job_id) == expected


def test_cancel_stops_a_running_job(stack, env, celery_worker_process):
    store, app = stack
    spec = JobSpec.from_dict({**SPEC.to_dict(), "games": 2000})
    job, _ = submit(store, app, spec, None)
    celery_worker_process(env, concurrency=1)
    wait_until(lambda: store.get_job(job.job_id).chunks_done >= 1, 60, "a chunk merged")
    cancelled = store.cancel_job(job.job_id)
    frozen = store.counters(job.job_id)
    assert cancelled.state == "CANCELLED" and cancelled.chunks_done < cancelled.chunks_total
    wait_until(lambda: not queue_length(store, store.settings.queue), 60, "the queue to drain")
    time.sleep(0.5)
    assert store.counters(job.job_id) == frozen
    assert store.get_job(job.job_id).state == "CANCELLED"


BREAK_CHUNK_2 = """
import sim.jobs.play
_play = sim.jobs.play.play_games
def _broken(config, seed, start, stop, max_rounds=100):
    if config.players == 2 and start == 100:
        raise RuntimeError("injected failure")
    return _play(config, seed, start, stop, max_rounds)
sim.jobs.play.play_games = _broken
"""


def test_failing_chunk_fails_the_job_after_max_attempts(stack, env, celery_worker_process):
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    # Break chunk 2 for good: the worker's play function raises on its games.
    celery_worker_process(env, concurrency=1, preamble=BREAK_CHUNK_2)
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "FAILED"
    assert "chunk 2 (configuration 0, games 100..129) failed 3 attempts" in done.error
    assert "injected failure" in done.error


SLOW_FIRST_ATTEMPT = """
import os, time, sim.jobs.play
_play = sim.jobs.play.play_games
def _slow_once(config, seed, start, stop, max_rounds=100):
    marker = os.environ["AZULSIM_TEST_MARKER"]
    if config.players == 4 and start == 0 and not os.path.exists(marker):
        with open(marker + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)
        time.sleep(120)
    return _play(config, seed, start, stop, max_rounds)
sim.jobs.play.play_games = _slow_once
"""


def test_pool_child_killed_mid_chunk_is_redelivered(
    stack, env, expected, celery_worker_process, tmp_path
):
    """SIGKILL of the pool child running a chunk: the message is requeued at once
    (task_reject_on_worker_lost), the chunk runs again and the job's counters are exact."""
    import os
    import signal

    store, app = stack
    marker = tmp_path / "child.pid"
    job, _ = submit(store, app, SPEC, None)
    worker = celery_worker_process(
        env,
        concurrency=1,
        preamble=SLOW_FIRST_ATTEMPT,
        extra_env={"AZULSIM_TEST_MARKER": str(marker)},
    )
    wait_until(marker.exists, 60, "the marker of the chunk to kill", details=worker.log)
    os.kill(int(marker.read_text()), signal.SIGKILL)
    done = wait_job(store, job.job_id, celery_worker_process)
    assert done.state == "SUCCEEDED", done.error
    assert store.counters(job.job_id) == expected
    assert "WorkerLostError" in worker.log()


def test_worker_timer_reconciles_without_help(stack, env, expected, celery_worker_process):
    """The sweep on the worker's own timer finds lost chunks and publishes them again."""
    store, app = stack
    job, _ = submit(store, app, SPEC, None)
    raw = store.redis.lrange(store.settings.queue_key, 0, -1)
    store.redis.lrem(store.settings.queue_key, 1, raw[2])  # lost before any worker saw it
    worker = celery_worker_process(
        env, concurrency=1, extra_env={"AZULSIM_RECONCILE_INTERVAL_S": "1"}
    )
    done = wait_job(store, job.job_id, celery_worker_process, timeout=60)
    assert done.state == "SUCCEEDED"
    assert store.counters(job.job_id) == expected
    assert "published 1 chunk(s) again" in worker.log()
