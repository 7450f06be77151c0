"""The worker liveness watchdog (workers/watchdog.py): a consumer that is connected but takes no
message while chunks wait makes the worker exit with status 70; a healthy one, or one cut off
from Redis, keeps running and (for the first) touches its liveness file.

The stuck consumer is made the way celery#8030 leaves one: the worker is connected and ready,
but kombu never sends another BRPOP (the preamble turns ``Channel._brpop_start`` into a no-op
before the worker starts), so the queue fills and nothing is taken.
"""

from __future__ import annotations

import time

import pytest

from sim.jobs.spec import JobSpec
from tests.stack_util import open_stack
from tests.waits import wait_job, wait_until
from workers.dispatch import submit
from workers.settings import load_settings
from workers.watchdog import EXIT_STUCK, ConsumeClock

SPEC = JobSpec.from_dict(
    {"configurations": [{"players": 2, "bots": ["random", "random"]}], "games": 200, "seed": 5}
)

NEVER_BRPOP = "import kombu.transport.redis as _r; _r.Channel._brpop_start = lambda *a, **k: None"


def test_clock_needs_every_condition_for_the_whole_limit():
    clock = ConsumeClock(limit_s=10)
    assert not clock.observe(0, True, 5).stuck
    assert not clock.observe(9, True, 5).stuck
    assert clock.observe(11, True, 5).stuck
    # Redis not answering, or an empty queue, starts the clock again
    for args in ((False, 5), (True, 0)):
        clock = ConsumeClock(limit_s=10)
        clock.observe(0, True, 5)
        assert not clock.observe(6, *args).stuck
        assert not clock.observe(15, True, 5).stuck
        assert clock.observe(26, True, 5).stuck
    clock = ConsumeClock(limit_s=10)
    clock.observe(0, True, 5)
    clock.received(8)
    assert not clock.observe(17, True, 5).stuck
    assert "no task received for" in clock.observe(30, True, 5).reason


def test_limit_must_exceed_the_hard_time_limit():
    with pytest.raises(ValueError, match="AZULSIM_WATCHDOG_S .* AZULSIM_TASK_HARD_LIMIT_S"):
        load_settings({"AZULSIM_WATCHDOG_S": "300"})  # hard limit 360 by default
    assert load_settings({"AZULSIM_WATCHDOG_S": "0"}).watchdog_s == 0


@pytest.fixture
def env(azulsim_env, tmp_path):
    return {
        **azulsim_env,
        "AZULSIM_TASK_SOFT_LIMIT_S": "1",
        "AZULSIM_TASK_HARD_LIMIT_S": "2",
        "AZULSIM_WATCHDOG_S": "3",
        "AZULSIM_LIVENESS_FILE": str(tmp_path / "alive"),
    }


def _submit(env):
    store, app = open_stack(env)
    job, _ = submit(store, app, SPEC, None)
    return store, job


def test_stuck_consumer_exits_non_zero(env, celery_worker_process, tmp_path):
    worker = celery_worker_process(env, concurrency=1, preamble=NEVER_BRPOP)
    alive = tmp_path / "alive"
    wait_until(alive.exists, 20, "the liveness file")
    store, job = _submit(env)
    t0 = time.monotonic()
    code = wait_until(
        lambda: worker.proc.poll(), 30, "the stuck worker to exit", details=worker.log
    )
    took = time.monotonic() - t0
    assert code == EXIT_STUCK, worker.log()
    assert "the consumer is stuck" in worker.log()
    assert store.get_job(job.job_id).chunks_done == 0  # nothing was consumed: it was stuck
    assert time.time() - alive.stat().st_mtime > 0.5  # no longer touched once stuck
    print(f"\nWATCHDOG stuck consumer exited {took:.1f} s after work arrived (limit 3 s)")
    store.redis.close()


def test_healthy_worker_is_left_alone(env, celery_worker_process, tmp_path):
    worker = celery_worker_process(env, concurrency=1)
    store, job = _submit(env)
    wait_job(store, job.job_id, [worker], timeout=60)
    time.sleep(4)  # past the limit with an empty queue
    assert worker.proc.poll() is None, worker.log()
    # Still touched: a touch after the sleep (waited for, not timed: a busy machine delays it).
    alive, slept = tmp_path / "alive", time.time()
    wait_until(lambda: alive.stat().st_mtime > slept, 10, "a touch of the liveness file")
    assert worker.proc.poll() is None, worker.log()
    store.redis.close()
