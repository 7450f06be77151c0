"""Faults on real processes: a job's final counters must equal a clean run of the same spec and
seed (`sim.jobs.local.run_local`), counter for counter, whatever is killed or restarted while it
runs.

Every test runs real ``redis-server``, Celery worker (prefork) and, where it matters, gRPC server
processes; faults are real signals (SIGKILL of a pool child, of a whole worker node, of Redis, of
the API server) or real duplicate broker messages. Chunks are slowed down by the worker preamble of
`tests.faults_util` so that a fault lands while a chunk is surely mid-way. docs/reliability.md
has the table of faults, what held and the figures; each test prints a ``FAULT`` line with its
figures (run with ``-s`` to see them).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import time
from pathlib import Path

import psutil
import pytest
import redis

from service.stack import RedisServer
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.faults_util import FAULT_PREAMBLE, ApiProcess, busy_children
from tests.waits import logs_of, wait_job, wait_until
from workers.app import make_app
from workers.dispatch import submit
from workers.reconciler import queue_length
from workers.settings import load_settings
from workers.store import JobStore

REPO = Path(__file__).resolve().parent.parent

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {"players": 4, "bots": ["random", "greedy", "random", "greedy"], "wall": "gray"},
        ],
        "games": 300,  # 6 chunks of 50 per configuration: 12 chunks
        "seed": 2024,
    }
)
CHUNKS = 12

# Short limits so that redelivery after a lost node takes seconds, in the order the settings
# demand (soft < hard < visibility < stall < TTL); an attempt takes ~0.1 s of play plus the
# injected delay, far below the soft limit even on two busy cores.
FAST_LIMITS = {
    "AZULSIM_MAX_ATTEMPTS": "5",
    "AZULSIM_TASK_SOFT_LIMIT_S": "6",
    "AZULSIM_TASK_HARD_LIMIT_S": "8",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
    "AZULSIM_STALL_S": "12",
    "AZULSIM_LEASE_S": "3",  # renewed every second while a chunk plays
    "AZULSIM_RECONCILE_INTERVAL_S": "0",
}

MERGED_RE = re.compile(r"chunk ([0-9a-f]+)/(\d+) attempt (\d+): \d+ games, (\w+)")
SKIPPED_RE = re.compile(r"chunk ([0-9a-f]+)/(\d+) skipped: (\w+)")


@pytest.fixture(scope="module")
def expected():
    return run_local(SPEC, workers=1).counters


@pytest.fixture
def fault_dir(tmp_path):
    path = tmp_path / "faults"
    path.mkdir()
    return path


@pytest.fixture
def env(azulsim_env, fault_dir):
    return {**azulsim_env, **FAST_LIMITS, "AZULSIM_FAULT_DIR": str(fault_dir)}


def open_store(env):
    settings = load_settings(env)
    return JobStore(redis.Redis.from_url(settings.redis_url), settings), make_app(settings)


@pytest.fixture
def stack(env):
    store, app = open_store(env)
    yield store, app
    store.redis.close()


def outcomes(text: str, job_id: str) -> dict[int, list[str]]:
    """Per chunk, what each attempt of it logged: merged/finished/duplicate/refused/skip-<why>."""
    out: dict[int, list[str]] = {}
    for line in text.splitlines():
        if (m := MERGED_RE.search(line)) and m.group(1) == job_id:
            out.setdefault(int(m.group(2)), []).append(m.group(4))
        elif (m := SKIPPED_RE.search(line)) and m.group(1) == job_id:
            out.setdefault(int(m.group(2)), []).append("skip-" + m.group(3))
    return out


def assert_exact(store: JobStore, job_id: str, expected: dict, workers) -> None:
    """SUCCEEDED with every game counted once: counters equal the clean run's, one for one."""
    job = store.get_job(job_id)
    assert job.state == "SUCCEEDED", f"{job}\n{logs_of(workers)[-6000:]}"
    assert (job.games_done, job.chunks_done) == (SPEC.total_games, CHUNKS)
    got = store.counters(job_id)
    diff = {k: (got.get(k), expected.get(k)) for k in set(got) | set(expected)}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    assert not diff, f"counters differ from the clean run (got, expected): {diff}"


def merged_times(store: JobStore, job_id: str, chunks, since: float, timeout: float = 90.0):
    """Seconds from `since` (monotonic) until each chunk's done bit is set, polling."""
    key = store.job_keys(job_id)["done"]
    left, got = set(chunks), {}

    def poll():
        now = time.monotonic()
        for c in list(left):
            if store.redis.getbit(key, c):
                got[c] = round(now - since, 2)
                left.discard(c)
        return not left

    wait_until(poll, timeout, f"chunks {sorted(left)} of {job_id} to be merged", interval=0.02)
    return got


def requeued_or_restarted(store: JobStore, job_id: str) -> set[int]:
    """Chunks with a message waiting in the queue, or whose attempt counter passed 1."""
    waiting = {chunk_of(m) for m in store.redis.lrange(store.settings.queue_key, 0, -1)}
    info = store.redis.hgetall(store.job_keys(job_id)["chunks"])
    again = {int(k[2:]) for k, v in info.items() if k.startswith(b"s:") and int(v) > 1}
    return waiting | again


def broker_idle(store: JobStore) -> bool:
    """No chunk message waiting and none delivered but unacked (kombu's ``unacked`` hash).

    Not enough to say every message has run: a worker takes a message off the queue (BRPOP) and
    only then records it in ``unacked`` (kombu ``QoS.append``), and in between it is in neither.
    Tests that read outcomes from the log wait for them with `wait_outcomes` first."""
    return (
        queue_length(store, store.settings.queue) == 0
        and store.redis.hlen(store.settings.broker_key_prefix + "unacked") == 0
    )


def wait_outcomes(workers, job_id: str, messages: int, timeout: float = 60.0) -> dict:
    """Wait until `messages` chunk messages of the job have each logged their outcome (every task
    that ends without being killed logs one), then until the broker is idle; the outcomes."""
    found = wait_until(
        lambda: (
            (seen := outcomes(logs_of(workers), job_id))
            and sum(map(len, seen.values())) >= messages
            and seen
        ),
        timeout,
        f"{messages} chunk outcomes of {job_id} in the log",
        details=lambda: logs_of(workers)[-6000:],
    )
    return found


def report(fault: str, **figures) -> None:
    print(f"\nFAULT {fault}: {json.dumps(figures, sort_keys=True)}")


def start_workers(celery_worker_process, env, n=1, concurrency=2, delay=0.0, **extra):
    """`n` workers with the fault preamble, each once its pool children have loaded the engine
    (workers/app.py): a message a worker took meanwhile would wait seconds on a busy machine, and
    a test's faults are timed from chunks in play, not from a load (a delivery older than the
    visibility timeout at a kill is restored by kombu, not taken over by the reconciler)."""
    extra = {"AZULSIM_FAULT_DELAY": str(delay), **{k: str(v) for k, v in extra.items()}}
    workers = [
        celery_worker_process(
            env, concurrency=concurrency, preamble=FAULT_PREAMBLE, extra_env=extra
        )
        for _ in range(n)
    ]
    for worker in workers:
        wait_until(
            lambda w=worker: w.log().count("compiled engine loaded in ") >= concurrency,
            60,
            "every pool child to load the engine",
            details=worker.log,
        )
    return workers


# --- 1. pool children SIGKILLed in the middle of chunks ---------------------------------------


def test_pool_children_sigkilled_mid_chunk(stack, env, expected, celery_worker_process, fault_dir):
    """Three pool children are SIGKILLed from outside (found with psutil) while they play a chunk:
    each message is requeued at once (task_reject_on_worker_lost), played again, counted once."""
    store, app = stack
    (worker,) = start_workers(celery_worker_process, env, concurrency=2, delay=0.8)
    job, _ = submit(store, app, SPEC, None)
    main = psutil.Process(worker.pid)
    killed: dict[int, float] = {}
    requeue_s: dict[int, float] = {}

    def note_requeued():
        # Timed while the test goes on hunting victims: waiting for each requeue before the next
        # kill let the job finish first on a busy CI machine (the first requeue can take ~5 s).
        for chunk in (set(killed) - set(requeue_s)) & requeued_or_restarted(store, job.job_id):
            requeue_s[chunk] = round(time.monotonic() - killed[chunk], 3)
        return set(requeue_s) == set(killed)

    def victim():
        note_requeued()
        children = {p.pid for p in main.children()}
        for pid, chunk in busy_children(fault_dir).items():
            if pid in children and chunk not in killed:
                return pid, chunk
        return None

    began = time.monotonic()
    while len(killed) < 3:
        pid, chunk = wait_until(victim, 60, "a pool child playing a chunk", details=worker.log)
        os.kill(pid, signal.SIGKILL)
        killed[chunk] = time.monotonic()
    # Requeued by the main process (to the front of the queue: workers.requeue), or already
    # taken again by another child.
    wait_until(note_requeued, 30, f"chunks {sorted(killed)} requeued", interval=0.01)
    recover = merged_times(store, job.job_id, killed, min(killed.values()))
    wait_job(store, job.job_id, [worker])
    assert_exact(store, job.job_id, expected, [worker])
    assert worker.log().count("WorkerLostError") >= 3
    # The job is SUCCEEDED once the last merge ran; its task logs it a moment later.
    seen = wait_outcomes([worker], job.job_id, CHUNKS)
    assert all(seen[c].count("merged") + seen[c].count("finished") == 1 for c in range(CHUNKS))
    per_chunk = {c: round(recover[c] - (killed[c] - min(killed.values())), 2) for c in killed}
    report(
        "pool-child-sigkill",
        kills=len(killed),
        requeue_s=requeue_s,
        merged_after_s=per_chunk,
        job_s=round(time.monotonic() - began, 1),
    )


def test_pool_child_sigkills_itself_at_each_phase(
    stack, env, expected, celery_worker_process, fault_dir
):
    """Pool children die by SIGKILL at every point of a chunk, first attempt only: half-way
    through the play (chunks 1, 7), after counting but before the Lua merge (3, 9), and after the
    merge but before the task returned and its message was acked (5, 11). The last kind is
    redelivered too and must be skipped as merged already."""
    store, app = stack
    kills = "play:1,play:7,merge:3,merge:9,acked:5,acked:11"
    (worker,) = start_workers(
        celery_worker_process, env, concurrency=2, delay=0.2, AZULSIM_FAULT_KILL=kills
    )
    began = time.monotonic()
    job, _ = submit(store, app, SPEC, None)
    wait_job(store, job.job_id, [worker])
    job_s = time.monotonic() - began
    assert_exact(store, job.job_id, expected, [worker])
    assert len(list(fault_dir.glob("killed-*"))) == 6
    assert worker.log().count("WorkerLostError") >= 6
    # Every message ends with one logged outcome, the redelivered ones included (the killed
    # attempts log none): 12. Then nothing is left in the broker.
    wait_outcomes([worker], job.job_id, CHUNKS)
    wait_until(lambda: broker_idle(store), 30, "the broker to drain", details=worker.log)
    seen = outcomes(worker.log(), job.job_id)
    for c in (1, 7, 3, 9):  # died before merging: the second attempt merged
        assert seen[c].count("merged") + seen[c].count("finished") == 1, seen[c]
    for c in (5, 11):  # died after merging: never logged a merge; the redelivery was skipped
        assert "merged" not in seen.get(c, []) and "finished" not in seen.get(c, []), seen
        assert seen[c] and all(o.startswith("skip-") for o in seen[c]), seen[c]
    assert store.redis.getbit(store.job_keys(job.job_id)["done"], 5)
    report("pool-child-self-sigkill", kills=6, job_s=round(job_s, 1))


# --- 2. a whole worker node SIGKILLed ---------------------------------------------------------


def _kill_node_mid_job(store, app, celery_worker_process, env, fault_dir):
    """Start node A, let it merge a chunk, SIGKILL its whole process group while both pool
    children play: returns (job, chunks in flight, time of the kill)."""
    (node_a,) = start_workers(celery_worker_process, env, concurrency=2, delay=1.5)
    job, _ = submit(store, app, SPEC, None)
    wait_until(
        lambda: store.get_job(job.job_id).chunks_done >= 1 and len(busy_children(fault_dir)) == 2,
        60,
        "one chunk merged and two in play",
        details=node_a.log,
    )
    in_flight = sorted(busy_children(fault_dir).values())
    node_a.kill()
    killed_at = time.monotonic()
    wait_until(lambda: not busy_children(fault_dir), 10, "node A's pool children to die")
    # Its two messages are stranded: delivered (kombu's unacked hash), never acked.
    assert store.redis.hlen(store.settings.broker_key_prefix + "unacked") >= 2
    assert all(not store.redis.getbit(store.job_keys(job.job_id)["done"], c) for c in in_flight)
    return job, in_flight, killed_at


def test_worker_node_killed_replaced_after_visibility_timeout(
    stack, env, expected, celery_worker_process, fault_dir
):
    """Node A (main process and pool) is SIGKILLed mid-chunk; node B starts once A's messages
    are past the visibility timeout, and restores them from kombu's unacked hash when it starts
    consuming. Reconciler off: the broker's redelivery alone recovers the job."""
    store, app = stack
    job, in_flight, killed_at = _kill_node_mid_job(
        store, app, celery_worker_process, env, fault_dir
    )
    vt = store.settings.visibility_timeout_s
    wait_until(
        lambda: all(
            time.time() - score > vt
            for _, score in store.redis.zrange(
                store.settings.broker_key_prefix + "unacked_index", 0, -1, withscores=True
            )
        ),
        vt + 10,
        "node A's messages to pass the visibility timeout",
    )
    (node_b,) = start_workers(celery_worker_process, env, concurrency=2)
    recover = merged_times(store, job.job_id, in_flight, killed_at, timeout=60)
    wait_job(store, job.job_id, celery_worker_process)
    assert_exact(store, job.job_id, expected, celery_worker_process)
    assert "published" not in node_b.log()  # the reconciler was off
    report(
        "node-sigkill/visibility-timeout",
        in_flight=in_flight,
        visibility_timeout_s=vt,
        recover_s=recover,
        job_s=round(time.monotonic() - killed_at, 1),
    )


def test_worker_node_killed_replaced_at_once_reconciler(
    stack, env, expected, celery_worker_process, fault_dir
):
    """Node A is SIGKILLed mid-chunk and node B starts at once, with the reconciler sweeping
    every second: once the leases of A's two chunks lapsed (AZULSIM_LEASE_S 3 s) and their
    deliveries are a lease and the grace (2 s) old, the reconciler takes their messages out of
    kombu's unacked hash and publishes each chunk once, before the visibility timeout (10 s):
    exactly 2 publishes, kombu restores nothing, every chunk merged once."""
    store, app = stack
    env["AZULSIM_RECONCILE_INTERVAL_S"] = "1"
    job, in_flight, killed_at = _kill_node_mid_job(
        store, app, celery_worker_process, env, fault_dir
    )
    (node_b,) = start_workers(celery_worker_process, env, concurrency=2)
    recover = merged_times(store, job.job_id, in_flight, killed_at, timeout=60)
    wait_job(store, job.job_id, celery_worker_process)
    assert_exact(store, job.job_id, expected, celery_worker_process)
    # Taken over (had kombu restored them first, take_over.lua would have found no entry and
    # published nothing), and published once each. Their merge comes later than the take-over:
    # a republished message joins the back of the queue.
    taken = re.findall(r"\((\d+) taken from a gone worker\)", node_b.log())
    assert sum(map(int, taken)) == len(in_flight), node_b.log()  # in one sweep or in two
    assert store.republished_total() == len(in_flight)
    seen = wait_outcomes(celery_worker_process, job.job_id, CHUNKS)  # A's and B's logs
    assert all(seen[c].count("merged") + seen[c].count("finished") == 1 for c in in_flight), seen
    report(
        "node-sigkill/reconciler",
        in_flight=in_flight,
        lease_s=store.settings.lease_s,
        recover_s=recover,
        republished=store.republished_total(),
        job_s=round(time.monotonic() - killed_at, 1),
    )


@pytest.mark.slow
def test_worker_node_killed_replaced_at_once_broker_only(
    stack, env, expected, celery_worker_process, fault_dir
):
    """Node A is SIGKILLed, node B starts at once, reconciler off: A's messages come back only
    at one of B's periodic kombu sweeps (every unacked_restore_interval x throttle = 30 s) after
    the visibility timeout."""
    store, app = stack
    job, in_flight, killed_at = _kill_node_mid_job(
        store, app, celery_worker_process, env, fault_dir
    )
    start_workers(celery_worker_process, env, concurrency=2)
    recover = merged_times(store, job.job_id, in_flight, killed_at, timeout=90)
    wait_job(store, job.job_id, celery_worker_process)
    assert_exact(store, job.job_id, expected, celery_worker_process)
    report(
        "node-sigkill/broker-sweep",
        in_flight=in_flight,
        recover_s=recover,
        job_s=round(time.monotonic() - killed_at, 1),
    )


# --- 3. the same message delivered twice ------------------------------------------------------


def test_duplicate_broker_messages_count_once(
    stack, env, expected, celery_worker_process, fault_dir
):
    """Byte-for-byte copies of real chunk messages (same task id, same delivery tag): two copies
    side by side in the queue (they run at the same time on two pool children), one pushed to the
    front after its chunk was merged, one after the job SUCCEEDED. Each chunk counts once."""
    store, app = stack
    queue = store.settings.queue_key  # the queue's Redis list
    job, _ = submit(store, app, SPEC, None)
    raw = store.redis.lrange(queue, 0, -1)  # LPUSH order: the last element is consumed first
    assert len(raw) == CHUNKS
    by_chunk = {chunk_of(m): m for m in raw}
    for c in (0, 6):  # adjacent copies: both delivered together to the two children
        assert store.redis.linsert(queue, "BEFORE", by_chunk[c], by_chunk[c]) > 0
    (worker,) = start_workers(
        celery_worker_process, env, concurrency=2, delay=0.3, AZULSIM_FAULT_DELIVER_DELAY="3:0.5"
    )
    wait_until(
        lambda: store.redis.getbit(store.job_keys(job.job_id)["done"], 1),
        60,
        "chunk 1 merged",
        details=worker.log,
    )
    assert not store.get_job(job.job_id).finished
    store.redis.rpush(queue, by_chunk[1])  # next to be consumed: a late copy of a merged chunk
    wait_job(store, job.job_id, [worker])
    store.redis.rpush(queue, by_chunk[3])  # a copy after the job finished
    # 12 messages, 2 twins, the late copy and the copy after the end: 16 outcomes. Waiting for
    # the broker to look idle instead missed the last copy while it was between the queue and
    # kombu's unacked hash (the worker's 0.5 s delay on chunk 3's deliveries widens that window).
    wait_outcomes([worker], job.job_id, CHUNKS + 4)
    wait_until(lambda: broker_idle(store), 30, "the broker to drain", details=worker.log)
    assert_exact(store, job.job_id, expected, [worker])
    seen = outcomes(worker.log(), job.job_id)
    assert sum(map(len, seen.values())) == CHUNKS + 4, seen
    for c in range(CHUNKS):
        assert seen[c].count("merged") + seen[c].count("finished") == 1, (c, seen[c])
    for c in (0, 6):  # the twin was skipped at start or refused by the merge's done bit
        assert len(seen[c]) == 2 and set(seen[c]) & {"duplicate", "skip-done"}, seen[c]
    assert seen[1][1:] == ["skip-done"], seen[1]
    assert seen[3][1:] == ["skip-state"], seen[3]
    report(
        "duplicate-message",
        copies=4,
        twin_outcomes={c: seen[c] for c in (0, 6)},
        late=seen[1],
        after_end=seen[3],
    )


def chunk_of(message: bytes) -> int:
    """The chunk index of a raw kombu message on Redis (Celery protocol 2: a base64 JSON body
    ``[args, kwargs, embed]`` with ``args = [job_id, chunk]``)."""
    return int(json.loads(base64.b64decode(json.loads(message)["body"]))[0][1])


# --- 4. Redis restarted mid-job, AOF on ---------------------------------------------------------


@pytest.fixture
def aof_redis(tmp_path):
    """A test-owned redis-server with ``--appendonly yes --appendfsync always`` on its own port and
    directory, which a test may kill and start again there (the AOF is replayed on start)."""
    with RedisServer(tmp_path / "redis-aof", aof=True) as server:
        yield server


@pytest.fixture
def aof_env(env, aof_redis):
    return {**env, "AZULSIM_REDIS_URL": aof_redis.url, "AZULSIM_RECONCILE_INTERVAL_S": "1"}


OUTAGE_S = 1.0  # how long Redis stays down: the fault's duration, not a wait for something


def _crash_redis(aof_redis: RedisServer) -> float:
    """SIGKILL Redis, leave it down `OUTAGE_S`, start it again on the same port and directory;
    returns the seconds it was unreachable."""
    began = time.monotonic()
    aof_redis.kill()
    time.sleep(OUTAGE_S)
    aof_redis.start()
    return round(time.monotonic() - began, 2)


def test_redis_crash_restart_with_aof_mid_job(
    aof_redis, aof_env, expected, celery_worker_process, fault_dir
):
    """Redis is SIGKILLed twice while chunks play and restarted on its AOF: the workers
    reconnect, and the job ends SUCCEEDED with the exact counters (never SUCCEEDED with wrong
    ones). What was lost with the connections comes back by kombu's visibility timeout or the
    reconciler; anything merged twice would show in the counters."""
    store, app = open_store(aof_env)
    workers = start_workers(celery_worker_process, aof_env, n=2, concurrency=1, delay=0.6)
    job, _ = submit(store, app, SPEC, None)
    began = time.monotonic()
    outages = []
    for at in (2, 6):
        wait_until(
            lambda at=at: store.get_job(job.job_id).chunks_done >= at and busy_children(fault_dir),
            60,
            f"{at} chunks merged and one in play",
            details=lambda: logs_of(workers)[-4000:],
        )
        outages.append(_crash_redis(aof_redis))
    done = wait_job(store, job.job_id, workers, timeout=120)
    total_s = round(time.monotonic() - began, 1)
    assert done.state == "SUCCEEDED", f"{done}\n{logs_of(workers)[-6000:]}"
    assert_exact(store, job.job_id, expected, workers)
    text = logs_of(workers)
    report(
        "redis-crash-aof",
        outages_s=outages,
        job_s=total_s,
        republished=text.count("published"),
        restored="Restoring" in text,
        worker_lost=text.count("WorkerLostError"),
    )
    store.redis.close()


def test_redis_dies_between_merge_and_ack(
    aof_redis, aof_env, expected, celery_worker_process, fault_dir
):
    """The worst moment: chunk 2's Lua merge has been applied (and fsynced), then Redis is
    SIGKILLed before the task returns, so its message is never acked. After the restart the
    message comes back; the done bit, restored from the AOF, makes the second run a no-op."""
    store, app = open_store(aof_env)
    workers = start_workers(
        celery_worker_process, aof_env, n=1, concurrency=2, delay=0.3, AZULSIM_FAULT_HOLD=2
    )
    job, _ = submit(store, app, SPEC, None)
    held = fault_dir / "held-2"
    wait_until(held.exists, 60, "chunk 2 merged and held", details=lambda: logs_of(workers))
    assert held.read_text().startswith("(1,")  # merged: code 1
    outage = _crash_redis(aof_redis)
    done_key = store.job_keys(job.job_id)["done"]
    assert store.redis.getbit(done_key, 2) == 1  # the merge survived the crash
    (fault_dir / "release").touch()
    done = wait_job(store, job.job_id, workers, timeout=120)
    assert done.state == "SUCCEEDED", f"{done}\n{logs_of(workers)[-6000:]}"
    assert_exact(store, job.job_id, expected, workers)
    seen = outcomes(logs_of(workers), job.job_id)
    assert seen.get(2, []).count("merged") <= 1, seen.get(2)
    report("redis-crash-between-merge-and-ack", outage_s=outage, chunk2=seen.get(2, []))
    store.redis.close()


# --- 5. the gRPC server restarted while jobs run ------------------------------------------------


@pytest.fixture
def api(env, tmp_path):
    from service.stack import free_port

    workdir = tmp_path / "api"
    workdir.mkdir()
    server = ApiProcess(env, free_port(), workdir)
    yield server
    server.stop(signal.SIGKILL)


def _rpc_ok(fn):
    """fn() once the server answers again (None while it is UNAVAILABLE)."""
    import grpc

    try:
        return fn()
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return None
        raise


def test_api_server_restarted_while_jobs_run(stack, env, api, celery_worker_process, fault_dir):
    """The API server is SIGKILLed while two jobs run (a watch open on one), and started again on
    the same port: the jobs go on meanwhile, the same client reconnects, a resubmit of the same
    request id returns the same job, the statistics equal a clean run, and GetJob/GetStatistics
    read the same after another (graceful) restart."""
    import grpc

    from service.api import azulsim_pb2 as pb
    from service.client import Client

    store, _ = stack
    workers = start_workers(celery_worker_process, env, n=2, concurrency=1, delay=1.0)
    local = run_local(SPEC, workers=1).statistics()
    local.pop("timing")
    api.start()
    with Client(api.address, token="", timeout=5) as client:
        job_a, created = client.submit(SPEC, request_id="restart-a")
        job_b, _ = client.submit(SPEC)
        assert created
        watch = client.watch(job_a.job_id, interval_ms=100)
        first = next(watch)
        assert first.state in (pb.QUEUED, pb.RUNNING)

        api.stop(signal.SIGKILL)
        down_at = time.monotonic()
        with pytest.raises(grpc.RpcError) as info:
            for _ in watch:
                pass
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.RpcError) as info:
            client.get(job_a.job_id, timeout=2)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        # The jobs go on without the API server.
        before = store.get_job(job_a.job_id).chunks_done + store.get_job(job_b.job_id).chunks_done
        wait_until(
            lambda: (
                store.get_job(job_a.job_id).chunks_done + store.get_job(job_b.job_id).chunks_done
                > before
            ),
            60,
            "progress while the API server is down",
            details=lambda: logs_of(workers),
        )
        progressed_down = True

        api.start()
        again = wait_until(
            lambda: _rpc_ok(lambda: client.get(job_a.job_id, timeout=2)),
            30,
            "the same client to reach the restarted server",
            interval=0.2,
        )
        reconnect_s = round(time.monotonic() - down_at, 2)
        assert again.job_id == job_a.job_id and again.games_done >= first.games_done
        resubmitted, created = client.submit(SPEC, request_id="restart-a")
        assert not created and resubmitted.job_id == job_a.job_id

        for job in (job_a, job_b):
            updates = list(client.watch(job.job_id, interval_ms=100, timeout=120))
            assert updates[-1].state == pb.SUCCEEDED, (updates[-1], logs_of(workers)[-4000:])
            assert client.statistics_document(job.job_id) == local
        snapshot = {
            j.job_id: (
                client.get(j.job_id).SerializeToString(deterministic=True),
                client.statistics(j.job_id).SerializeToString(deterministic=True),
            )
            for j in (job_a, job_b)
        }

        api.stop(signal.SIGTERM)
        api.start()
        for job_id, (job_bytes, stats_bytes) in snapshot.items():
            got = wait_until(
                lambda job_id=job_id: _rpc_ok(lambda: client.get(job_id, timeout=2)),
                30,
                "the server after a graceful restart",
                interval=0.2,
            )
            assert got.SerializeToString(deterministic=True) == job_bytes
            stats = client.statistics(job_id).SerializeToString(deterministic=True)
            assert stats == stats_bytes
    report(
        "api-server-restart",
        jobs=2,
        progressed_while_down=progressed_down,
        client_back_after_s=reconnect_s,
    )


# --- 6. cancel while chunks run -----------------------------------------------------------------


def assert_frozen(store: JobStore, job_id: str, frozen: dict, info):
    """Nothing moved since the cancel (`frozen` counters, `info` record); the job now."""
    assert store.counters(job_id) == frozen
    now = store.get_job(job_id)
    assert (now.state, now.games_done, now.chunks_done) == (
        "CANCELLED",
        info.games_done,
        info.chunks_done,
    )
    return now


def _cancel_mid_chunks(store, cancel, celery_worker_process, env, fault_dir, **extra):
    """Cancel once a chunk is merged and two are in play; returns (job, snapshot, workers)."""
    workers = start_workers(celery_worker_process, env, concurrency=2, delay=1.0, **extra)
    job, _ = submit(store, make_app(store.settings), SPEC, None)
    wait_until(
        lambda: store.get_job(job.job_id).chunks_done >= 1 and len(busy_children(fault_dir)) == 2,
        60,
        "one chunk merged and two in play",
        details=lambda: logs_of(workers),
    )
    in_play = sorted(busy_children(fault_dir).values())
    cancelled = cancel(job.job_id)
    snapshot = (store.counters(job.job_id), store.get_job(job.job_id))
    assert cancelled.state in ("CANCELLED", 5)  # the store's JobInfo or the API's enum
    # Drain: the chunks in play end, every message left runs (and is skipped), all acked. Each
    # of the 12 messages logs one outcome (merged, refused, or skipped before or after play).
    wait_outcomes(workers, job.job_id, CHUNKS)
    wait_until(
        lambda: not busy_children(fault_dir) and broker_idle(store),
        60,
        "the workers to drain",
        details=lambda: logs_of(workers),
    )
    return job, in_play, snapshot, workers


def test_cancel_while_chunks_run_freezes_counters(stack, env, celery_worker_process, fault_dir):
    """CancelJob over gRPC while two chunks play: after the workers drained, not one counter,
    nor games_done/chunks_done, moved from the moment of the cancel."""
    from service.api import azulsim_pb2 as pb
    from service.client import Client
    from service.config import ServerConfig
    from service.server import make_backend
    from service.testing import ServerThread

    store, _ = stack
    config = ServerConfig()
    with ServerThread(make_backend(config, store.settings), config) as server:
        with Client(server.address, token="", timeout=10) as client:
            job, in_play, (frozen, info), workers = _cancel_mid_chunks(
                store, client.cancel, celery_worker_process, env, fault_dir
            )
            after = client.get(job.job_id)
            assert after.state == pb.CANCELLED
            stats = client.statistics(job.job_id)
    now = assert_frozen(store, job.job_id, frozen, info)
    assert now.finished_at == info.finished_at and now.games_done < now.games_total
    assert stats.partial and stats.games_done == info.games_done
    seen = outcomes(logs_of(workers), job.job_id)
    assert not any("merged" in seen.get(c, []) for c in in_play), seen
    report("cancel-mid-chunk", in_play=in_play, chunks_done=info.chunks_done, moved=0)


def test_cancel_between_check_and_merge_is_refused(stack, env, celery_worker_process, fault_dir):
    """The same, with the task's own state check blinded (as if the cancel landed just after
    it): the chunks in play reach the Lua merge, which refuses them atomically."""
    store, _ = stack
    job, in_play, (frozen, info), workers = _cancel_mid_chunks(
        store, store.cancel_job, celery_worker_process, env, fault_dir, AZULSIM_FAULT_RACE=1
    )
    assert_frozen(store, job.job_id, frozen, info)
    seen = outcomes(logs_of(workers), job.job_id)
    assert all(seen[c] == ["refused"] for c in in_play), seen
    report("cancel-race-merge-refused", in_play=in_play, refused=len(in_play), moved=0)


# --- 4b. a reply lost on the wire (the command ran in Redis, the client saw a dropped link) -----


def script_sha(name: str) -> bytes:
    """SHA1 that redis-py's EVALSHA sends for ``workers/lua/<name>.lua`` (with common.lua)."""
    import hashlib

    from workers.store import LUA_DIR

    text = (LUA_DIR / "common.lua").read_text() + "\n" + (LUA_DIR / f"{name}.lua").read_text()
    return hashlib.sha1(text.encode()).hexdigest().encode()


@pytest.fixture
def proxy(aof_redis):
    from tests.faults_util import ReplyCuttingProxy

    p = ReplyCuttingProxy(aof_redis.port)
    yield p
    p.close()


@pytest.mark.parametrize("script", ["merge_chunk", "begin_chunk"])
def test_lost_script_reply(script, proxy, aof_env, expected, celery_worker_process, fault_dir):
    """Workers reach Redis through a proxy that drops the connection instead of passing on the
    reply of three ``merge_chunk`` (resp. ``begin_chunk``) scripts: the script ran, the worker
    saw only a connection error. No chunk counts twice and none is lost.

    The job store's client retries a command on a dropped connection (`redis_client_options`),
    so a cut reply is mostly answered by the script run again: a merge retried finds its own
    done bit (``duplicate``), a begin retried counts one attempt more. When the retries are spent
    too, the task's own handling takes over: ``fail_chunk`` finds the done bit (``done``), or
    the message is requeued (``reject``). Either way each cut costs exactly one counted
    attempt (begin) or one refused merge (merge), never a count."""
    # Reconciler off: a chunk must come back by itself, not after AZULSIM_STALL_S.
    env = {**aof_env, "AZULSIM_REDIS_URL": proxy.url, "AZULSIM_RECONCILE_INTERVAL_S": "0"}
    store, app = open_store({**aof_env})
    (worker,) = start_workers(celery_worker_process, env, concurrency=2, delay=0.1)
    for name in ("create_job", "begin_chunk", "merge_chunk", "fail_chunk", "republish"):
        assert store.redis.script_load(store._scripts[name].script).encode() == script_sha(name)
    proxy.arm(script_sha(script), 3)  # scripts loaded: a cut EVALSHA has surely run
    began = time.monotonic()
    job, _ = submit(store, app, SPEC, None)
    wait_job(store, job.job_id, [worker], timeout=30)
    job_s = round(time.monotonic() - began, 1)
    assert proxy.cut == 3
    assert_exact(store, job.job_id, expected, [worker])
    # Every chunk's task logs its end (merged, duplicate, or fail_chunk's 'done') a moment after
    # the last merge made the job SUCCEEDED: wait for all 12 before reading them.
    wait_until(
        lambda: (
            sum(map(len, outcomes(worker.log(), job.job_id).values()))
            + worker.log().count("'outcome': 'done'")
            >= CHUNKS
        ),
        30,
        "every chunk's outcome in the log",
        details=worker.log,
    )
    log = worker.log()
    seen = outcomes(log, job.job_id)
    assert all(seen[c].count("merged") + seen[c].count("finished") <= 1 for c in seen)
    if script == "merge_chunk":  # merged, reply lost: the retry or fail_chunk sees the done bit
        retried, recorded = log.count("duplicate (job"), log.count("'outcome': 'done'")
        assert 1 <= retried + recorded <= 3, log  # a retry may be cut again: fewer chunks
        assert "'outcome': 'retry'" not in log  # never played again
    else:  # attempt counted, reply lost: counted once more by the retry or the redelivery
        first = {}
        for m in MERGED_RE.finditer(log):
            if m.group(1) == job.job_id:
                first.setdefault(int(m.group(2)), int(m.group(3)))
        assert sum(a - 1 for a in first.values()) == 3, first
    report(
        f"lost-reply/{script}",
        cuts=proxy.cut,
        job_s=job_s,
        republished=worker.log().count("published"),
    )
    store.redis.close()


# --- 9. a retried chunk of a job with a stopping rule ----------------------------------------

# Stops at game 420 (chunk 20 of 100 chunks of 20 games) in-process (`sim.jobs.local.run_local`).
SPRT_SPEC = JobSpec.from_dict(
    {
        "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
        "games": 2000,
        "seed": 5,
        "stop": {"rule": "sprt", "elo0": 0, "elo1": 5, "check_every": 20},
    }
)
ENDED_WHILE_PLAYING = re.compile(r"chunk ([0-9a-f]+)/\d+ skipped: state \(ended while it played")


def chunks_played(text: str, job_id: str) -> int:
    """Attempts of the job that played a whole chunk: those that logged a merge outcome (merged,
    finished, duplicate, refused) and those whose job ended while they played."""
    played = sum(map(len, outcomes(text, job_id).values()))
    played -= sum(o.startswith("skip-") for v in outcomes(text, job_id).values() for o in v)
    return played + sum(m.group(1) == job_id for m in ENDED_WHILE_PLAYING.finditer(text))


def test_sprt_job_with_a_killed_pool_child_stops_as_early(env, celery_worker_process, fault_dir):
    """A pool child SIGKILLs itself half-way through chunk 2 of an SPRT job. Its message is
    requeued; were it at the back of the queue, the contiguous prefix would wait at chunk 2
    while every other chunk played (all 100 instead of ~22). It must play again next: the job
    plays at most 1.2x the chunks of a clean run of the same spec on the same worker, and stops
    at the same game with the same statistics as in-process."""
    env = {**env, "AZULSIM_CHUNK_GAMES": "20"}
    store, app = open_store(env)
    local = run_local(SPRT_SPEC, workers=1, chunk_size=20)
    assert local.stopping["games"] == 420
    (worker,) = start_workers(
        celery_worker_process, env, concurrency=2, delay=0.2, AZULSIM_FAULT_KILL="play:2"
    )
    played = {}
    for run in ("faulted", "clean"):  # the kill fires once: on the first job's chunk 2
        job, _ = submit(store, app, SPRT_SPEC, None)
        done = wait_job(store, job.job_id, [worker], timeout=300)
        # The chunks in play at the stop finish (and log) before the count.
        wait_until(
            lambda: not busy_children(fault_dir) and broker_idle(store),
            60,
            "the pool to go idle",
            details=worker.log,
        )
        from service.convert import stopping_summary

        assert done.state == "SUCCEEDED", done.error
        assert store.counters(job.job_id) == local.counters
        assert stopping_summary(done, done.spec) == local.stopping
        assert done.games_done == 420
        played[run] = chunks_played(worker.log(), job.job_id)
    assert (fault_dir / "killed-play-2").exists()
    report("sprt-pool-child-sigkill", chunks_played=played, chunks_total=100, stop_chunk=20)
    assert played["faulted"] <= 1.2 * played["clean"], played
    store.redis.close()
