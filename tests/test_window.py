"""Chunks are published lazily, a window ahead of the merged ones (`workers.dispatch`): submit
publishes a window whatever the job's size, each merge publishes what now fits, a job with a
stopping rule counts its window from the merged prefix, and the reconciler fills a window that
nobody filled. Real Redis, real Celery messages, a real worker where chunks are played."""

from __future__ import annotations

import time

import pytest
import redis

from sim.jobs.chunk import play_chunk
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.waits import wait_job
from workers.app import make_app
from workers.broker import chunk_of_raw
from workers.dispatch import publish_window, submit
from workers.reconciler import reconcile_once
from workers.settings import load_settings
from workers.store import JobStore
from workers.tasks import advance

SPEC = JobSpec.from_dict(
    {
        "configurations": [{"players": 2, "bots": ["greedy", "random"]}],
        "games": 500,  # 10 chunks of 50
        "seed": 8,
    }
)
SPRT = JobSpec.from_dict(
    {
        "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
        "games": 2000,  # 100 chunks of 20; stops at game 420 (chunk 20)
        "seed": 5,
        "stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "check_every": 20},
    }
)


@pytest.fixture
def env(azulsim_env):
    return {**azulsim_env, "AZULSIM_PUBLISH_WINDOW": "3", "AZULSIM_CHUNK_GAMES": "50"}


def open_stack(env):
    settings = load_settings(env)
    return JobStore(redis.Redis.from_url(settings.redis_url), settings), make_app(settings)


def queued(store: JobStore, job_id: str) -> list[int]:
    """The job's chunks waiting in the queue, in the order they will be taken."""
    raw = store.redis.lrange(store.settings.queue_key, 0, -1)
    return [c for j, c in map(chunk_of_raw, reversed(raw)) if j == job_id]


def merge(store: JobStore, spec: JobSpec, job_id: str, chunk: int) -> None:
    games, counters, _, _ = play_chunk(spec, store.get_job(job_id).chunk_games, chunk)
    assert store.merge_chunk(job_id, chunk, games, counters)[0] >= 1


def test_submit_publishes_one_window_and_each_merge_the_next(env):
    store, app = open_stack(env)
    job, _ = submit(store, app, SPEC, None)
    assert job.chunks_total == 10
    assert queued(store, job.job_id) == [0, 1, 2]
    store.redis.delete(store.settings.queue_key)  # the test plays them itself
    merge(store, SPEC, job.job_id, 1)  # out of order: the window counts merged chunks
    assert publish_window(store, app, job.job_id) == 1
    assert publish_window(store, app, job.job_id) == 0  # claimed once, whoever asks
    assert queued(store, job.job_id) == [3]
    for c in (0, 2):
        merge(store, SPEC, job.job_id, c)
    assert publish_window(store, app, job.job_id) == 2
    assert queued(store, job.job_id) == [3, 4, 5]
    assert submit(store, app, SPEC, None)[0].job_id != job.job_id  # no request id: a new job


def test_a_stopping_rule_counts_the_window_from_the_merged_prefix(env):
    env = {**env, "AZULSIM_CHUNK_GAMES": "20"}
    store, app = open_stack(env)
    job, _ = submit(store, app, SPRT, None)
    assert queued(store, job.job_id) == [0, 1, 2]
    store.redis.delete(store.settings.queue_key)
    for c in (1, 2):  # parked past the prefix: no room
        assert store.park_chunk(job.job_id, c, play_chunk(SPRT, 20, c).joint)[0] == 1
        advance(store, store.get_job(job.job_id))
        assert publish_window(store, app, job.job_id) == 0
    store.park_chunk(job.job_id, 0, play_chunk(SPRT, 20, 0).joint)
    advance(store, store.get_job(job.job_id))  # the prefix moves over 0, 1, 2
    assert publish_window(store, app, job.job_id) == 3
    assert queued(store, job.job_id) == [3, 4, 5]


def test_a_worker_plays_a_job_wider_than_its_window(env, celery_worker_process):
    store, app = open_stack(env)
    job, _ = submit(store, app, SPEC, None)
    worker = celery_worker_process(env, concurrency=2)
    done = wait_job(store, job.job_id, [worker])
    assert done.state == "SUCCEEDED", done.error
    assert store.counters(job.job_id) == run_local(SPEC, workers=1).counters
    assert store.republished_total() == 0


def test_an_sprt_job_never_queues_chunks_far_past_its_stop(env, celery_worker_process):
    env = {**env, "AZULSIM_CHUNK_GAMES": "20", "AZULSIM_PUBLISH_WINDOW": "4"}
    store, app = open_stack(env)
    job, _ = submit(store, app, SPRT, None)
    worker = celery_worker_process(env, concurrency=2)
    done = wait_job(store, job.job_id, [worker], timeout=180)
    local = run_local(SPRT, workers=1, chunk_size=20)
    assert done.state == "SUCCEEDED" and done.games_done == local.stopping["games"] == 420
    assert store.counters(job.job_id) == local.counters
    # The prefix stopped in chunk 20: nothing past 20 + the window was ever published.
    assert int(store.redis.hget(store.meta_key(job.job_id), "next")) <= 21 + 4


def test_the_reconciler_fills_a_window_nobody_filled(env):
    """A submit that died after creating the job and before publishing: the sweep publishes the
    first window (and only it); a chunk merged whose worker died before refilling: the next
    sweep publishes what fits."""
    store, app = open_stack(env)
    job, _ = store.create_job(SPEC, "req-1")
    assert queued(store, job.job_id) == []
    assert reconcile_once(store, app, now=time.time(), grace_s=10, scan=False) == {}
    assert queued(store, job.job_id) == [0, 1, 2]
    store.redis.delete(store.settings.queue_key)
    merge(store, SPEC, job.job_id, 0)
    reconcile_once(store, app, now=time.time(), grace_s=10, scan=False)
    assert queued(store, job.job_id) == [3]
    # The client's retry of the submit: the claimed, unmerged chunks go out once more.
    again, created = submit(store, app, SPEC, "req-1")
    assert (again.job_id, created) == (job.job_id, False)
    assert sorted(queued(store, job.job_id)) == [1, 2, 3, 3]
