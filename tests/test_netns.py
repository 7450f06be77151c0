"""Network faults between real test hosts: partitions, resets, flapping links and latency.

Five hosts in network namespaces (tests/netns_stack.py): Redis (with the fault proxy), the API,
two workers and the client. Each test runs a job through the whole stack (submitted by the
client host through the API, played by both workers) while a fault hits the network, then
checks what must hold:

* the job SUCCEEDED with counters equal to a clean in-process run (`sim.jobs.local.run_local`) and
  the API's statistics document equal to `sim.jobs.local.simulate`'s: nothing lost, nothing counted
  twice;
* every worker that can reach Redis again takes a chunk again within 60 s of the heal (a probe
  job is submitted when the main job left it nothing to take).

Each test prints a ``NETFAULT <name>: {figures}`` line (``-s``); docs/reliability.md "Network
faults" has the table. Limits are short, in the order the settings demand: soft 6 s < hard 8 s
< visibility 10 s < stall 12 s, lease 3 s, reconciler sweep every 2 s; the network settings
(timeouts, keepalives, health checks) are the production defaults of workers/settings.py.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from sim.jobs.local import run_local, simulate
from sim.jobs.spec import JobSpec
from tests.conftest import require_netns
from tests.waits import wait_until

pytestmark = pytest.mark.netns

SPEC_DICT = {
    "configurations": [
        {"players": 2, "bots": ["greedy", "random"]},
        {"players": 3, "bots": ["random", "greedy", "random"]},
    ],
    "games": 80,  # 4 chunks of 20 per configuration: 8 chunks
    "seed": 1616,
}
PROBE_DICT = {
    "configurations": [{"players": 2, "bots": ["random", "greedy"]}],
    "games": 120,
    "seed": 77,
}  # 6 chunks
SMALL_DICT = {**SPEC_DICT, "games": 40}  # 2 chunks per configuration: 4 chunks
CHUNK_DELAY = 1.5  # seconds added to every chunk, so that a fault lands mid-chunk

ENV = {
    "AZULSIM_PREFIX": "netns",
    "AZULSIM_QUEUE": "netns.chunks",
    "AZULSIM_CHUNK_GAMES": "20",
    "AZULSIM_MAX_ATTEMPTS": "8",
    "AZULSIM_TASK_SOFT_LIMIT_S": "6",
    "AZULSIM_TASK_HARD_LIMIT_S": "8",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
    "AZULSIM_STALL_S": "12",
    "AZULSIM_LEASE_S": "3",  # a chunk's lease, renewed every second while it plays
    "AZULSIM_RECONCILE_INTERVAL_S": "2",
    "AZULSIM_WATCHDOG_S": "20",  # > hard limit; a stuck worker exits and is restarted
}
# Worker limits for the latency test (same order: soft < hard < visibility < stall).
LATENCY_LIMITS = {
    "AZULSIM_TASK_SOFT_LIMIT_S": "30",
    "AZULSIM_TASK_HARD_LIMIT_S": "40",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "60",
    "AZULSIM_STALL_S": "90",
    "AZULSIM_LEASE_S": "15",  # renewals are round trips too
    "AZULSIM_RECONCILE_INTERVAL_S": "30",
    "AZULSIM_WATCHDOG_S": "120",
}
HEAL_BOUND_S = 60.0  # every worker that reaches Redis again consumes within this of the heal


@pytest.fixture(scope="module")
def expected():
    spec, probe = JobSpec.from_dict(SPEC_DICT), JobSpec.from_dict(PROBE_DICT)
    small = JobSpec.from_dict(SMALL_DICT)
    return {
        "small": run_local(small, workers=1).counters,
        "small_document": _comparable(simulate(small, workers=1)),
        "spec": run_local(spec, workers=1).counters,
        "probe": run_local(probe, workers=1).counters,
        "document": _comparable(simulate(spec, workers=1)),
        "probe_document": _comparable(simulate(probe, workers=1)),
    }


def _comparable(doc: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in doc.items() if k != "timing"}))


@pytest.fixture(scope="module")
def netstack(tmp_path_factory):
    from tests.netns_stack import NetStack

    require_netns()
    stack = NetStack(tmp_path_factory.mktemp("netns"), dict(ENV))
    try:
        stack.start()
        yield stack
    finally:
        stack.close()


@pytest.fixture
def stack(netstack):
    """The module's stack with two fresh workers; every fault undone and the workers stopped
    afterwards, whatever the test did."""
    netstack.heal_all()
    netstack.start_worker(
        "w1", CHUNK_DELAY, {"AZULSIM_LIVENESS_FILE": str(netstack.workdir / "alive-w1")}
    )
    netstack.start_worker(
        "w2", CHUNK_DELAY, {"AZULSIM_LIVENESS_FILE": str(netstack.workdir / "alive-w2")}
    )
    try:
        yield netstack
    finally:
        netstack.heal_all()
        netstack._supervising = False
        for w in netstack.workers:
            w.kill()  # a partitioned worker cannot shut down warmly; its chunks are redone
        netstack.stop_workers()
        _drain(netstack)


def _drain(stack) -> None:
    """Empty the chunk queue and kombu's unacked set so the next test starts clean."""
    r = stack.store.redis
    prefix = stack.settings.broker_key_prefix
    for key in r.scan_iter(match=f"{prefix}*"):
        if b"_kombu.binding" not in key:
            r.delete(key)


def submit(stack, spec_dict=SPEC_DICT, timeout: float = 10, replies: list | None = None) -> str:
    reply = stack.client.call(
        "submit", spec=spec_dict, request_id=uuid.uuid4().hex, timeout=timeout
    )
    assert reply["code"] == "OK", reply
    if replies is not None:
        replies.append(reply)
    return reply["job_id"]


def wait_finished(stack, job_id: str, timeout: float) -> float:
    """Seconds until the job is SUCCEEDED/FAILED/CANCELLED (read through the management path)."""
    t0 = time.monotonic()
    wait_until(
        lambda: stack.store.get_job(job_id).finished,
        timeout,
        f"job {job_id}",
        interval=0.1,
        details=stack.logs,
    )
    return time.monotonic() - t0


def assert_exact(stack, job_id: str, counters: dict, document: dict) -> None:
    job = stack.store.get_job(job_id)
    assert job.state == "SUCCEEDED", f"{job}\n{stack.logs()}"
    got = stack.store.counters(job_id)
    diff = {k: (got.get(k), counters.get(k)) for k in set(got) | set(counters)}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    assert not diff, f"counters differ from the clean run (got, expected): {diff}"
    reply = stack.client.call("statistics", job_id=job_id, timeout=20)
    assert reply["code"] == "OK", reply
    assert _comparable(reply["document"]) == document  # what a user reads, through the API


def wait_busy(stack, worker, timeout: float = 30.0) -> int:
    """The chunk `worker` is playing once it plays one."""
    return wait_until(
        lambda: worker.busy_chunk(stack.fault_dir),
        timeout,
        f"{worker.host.name} to play a chunk",
        interval=0.02,
    )


def consumes_again(stack, workers, healed_at: float, expected) -> dict[str, float]:
    """Seconds from `healed_at` (wall clock) to each worker's first task received after it;
    a probe job gives them work when the main job left none. Fails past `HEAL_BOUND_S`."""

    def gaps():
        got = {w.host.name: w.first_received_after(healed_at) for w in workers}
        return {n: round(t - healed_at, 2) for n, t in got.items() if t is not None}

    probe = None
    if len(gaps()) < len(workers):
        probe = submit(stack, PROBE_DICT)
    left = HEAL_BOUND_S - (time.time() - healed_at)
    wait_until(
        lambda: len(gaps()) == len(workers),
        max(left, 0.1),
        "every reachable worker to consume again within 60 s of the heal",
        interval=0.1,
        details=lambda: f"{gaps()}\n{stack.logs()}",
    )
    out = gaps()
    if probe is not None:
        wait_finished(stack, probe, 60)
        assert_exact(stack, probe, expected["probe"], expected["probe_document"])
    return out


def report(name: str, **figures) -> None:
    print(f"\nNETFAULT {name}: {json.dumps(figures, sort_keys=True)}")


# --- the harness itself -----------------------------------------------------------------------


def test_harness_cuts_links_and_pairs_silently(netns_network):
    """A cut link and a partitioned pair drop packets without a word (a connect times out; no
    reset, no ICMP error); other pairs keep talking; everything comes back on heal."""
    import sys

    net = netns_network
    a, b, c = net.add_host("a"), net.add_host("b"), net.add_host("c")
    echo = b.popen(
        [
            sys.executable,
            "-c",
            (
                "import socket\ns=socket.create_server(('0.0.0.0',7777))\n"
                "while True:\n c,_=s.accept(); c.sendall(b'ok'); c.close()"
            ),
        ]
    )
    probe = (
        "import socket,sys,time\nt=time.monotonic()\ntry:\n"
        f" s=socket.create_connection(('{b.addr}',7777),timeout=1.5); print(s.recv(2).decode())\n"
        "except OSError as e: print(type(e).__name__)"
    )

    def reach(host):
        return host.run([sys.executable, "-c", probe]).stdout.strip()

    try:
        wait_until(lambda: reach(a) == "ok", 10, "the echo server")
        net.link_down("b")
        assert reach(a) == "TimeoutError"  # silent: not ConnectionRefused/NoRoute/Unreachable
        net.link_up("b")
        assert reach(a) == "ok"
        net.partition("a", "b")
        assert (reach(a), reach(c)) == ("TimeoutError", "ok")
        net.heal("a", "b")
        assert reach(a) == "ok"
        times = net.flap("b", 3, 0.3, 0.3)
        assert len(times) == 3 and reach(a) == "ok"
    finally:
        echo.kill()


def test_stale_namespaces_of_a_dead_run_are_removed():
    from tests.netns import PREFIX, _ip, clean_stale

    require_netns()
    dead = 2**22 + 12345  # above pid_max's default: no such process
    name = f"{PREFIX}{dead}x1-router"
    _ip("netns", "add", name)
    try:
        assert name in clean_stale()
        assert name not in _ip("netns", "list").stdout
    finally:
        _ip("netns", "del", name, check=False)


# --- the network-fault scenarios (docs/reliability.md) --------------------------------------------


@pytest.mark.parametrize("down_s", [5, 60])
def test_worker_partitioned_mid_chunk_then_healed(stack, expected, down_s):
    """w1's link is cut while it plays a chunk, for `down_s` seconds, then restored."""
    w1, w2 = stack.workers
    job = submit(stack)
    chunk = wait_busy(stack, w1)
    t_fault = time.time()
    stack.net.link_down("w1")
    time.sleep(down_s)
    stack.net.link_up("w1")
    healed = time.time()
    wait_finished(stack, job, 90)
    finished_after_fault = round(stack.store.get_job(job).finished_at - t_fault, 2)
    assert_exact(stack, job, expected["spec"], expected["document"])
    gaps = consumes_again(stack, [w1, w2], healed, expected)
    early = [t for t, _ in w1.restarts if t < healed]
    assert not early, "the watchdog must not judge a worker cut off from Redis"
    report(
        f"worker partitioned {down_s} s",
        chunk=chunk,
        job_done_after_fault_s=finished_after_fault,
        consumed_again_after_heal_s=gaps,
        watchdog_restarts_after_heal_s=[
            round(t - healed, 1) for w in (w1, w2) for t, _ in w.restarts
        ],
    )


def test_worker_partitioned_for_good(stack, expected):
    """w1's link is cut mid-chunk and never restored: w2 finishes the job, w1's chunk included,
    within the reconciler's documented bound for a node lost with its chunk in play
    (workers/reconciler.py: ``lease_s + grace_s + interval``), plus the rest of the job."""
    w1, w2 = stack.workers
    job = submit(stack)
    chunk = wait_busy(stack, w1)
    t_fault = time.time()
    stack.net.link_down("w1")
    wait_finished(stack, job, 90)
    info = stack.store.get_job(job)
    took = info.finished_at - t_fault
    assert_exact(stack, job, expected["spec"], expected["document"])
    # Bound: the take-over of the lost chunk (lease 3 s + grace 2 sweeps of 2 s + a sweep),
    # one more sweep for the service-wide sweep lock, then the rest of the job, which w2 plays
    # alone (at most 8 chunks of ~1.6 s, counted at 2.5 s).
    lease, interval = float(ENV["AZULSIM_LEASE_S"]), float(ENV["AZULSIM_RECONCILE_INTERVAL_S"])
    bound = lease + 2 * interval + interval + interval + 8 * (CHUNK_DELAY + 1.0)
    assert took < bound, f"job finished {took:.1f} s after the fault (bound {bound} s)"
    redone = [r for r in w2.received() if r[1] == job and r[2] == chunk]
    assert redone, f"w2 never received the lost chunk {chunk}: {w2.received()}"
    report(
        "worker partitioned for good",
        chunk=chunk,
        job_done_after_fault_s=round(took, 2),
        lost_chunk_redelivered_after_s=round(redone[-1][0] - t_fault, 2),
        bound_s=bound,
    )


# Worker options for the resets test: AzulSim's (remote control off), and the configuration
# where celery#8030 shows here: remote control on, gossip and mingle off (flags often advised to
# cut broker chatter). With it the workers hang; the watchdog is what brings them back.
RESET_CONFIGS = {
    "azulsim": ({}, ()),
    "remote-control-no-gossip": (
        {"AZULSIM_REMOTE_CONTROL": "1"},
        ("--without-gossip", "--without-mingle"),
    ),
}


@pytest.mark.parametrize("config", list(RESET_CONFIGS))
def test_resets_three_times_in_three_seconds_on_both_workers(stack, expected, config):
    """The celery#8030 pattern: every Redis connection of both workers is reset (TCP RST) three
    times within three seconds, mid-chunk; both must consume again within 60 s."""
    env, argv = RESET_CONFIGS[config]
    if env or argv:  # replace the fixture's workers by ones with this configuration
        for w in stack.workers:
            w.kill()
        stack.workers.clear()
        for host in ("w1", "w2"):
            stack.start_worker(host, CHUNK_DELAY, env, argv)
    w1, w2 = stack.workers
    job = submit(stack)
    wait_busy(stack, w1)
    resets = []
    for k in range(3):
        cut = stack.proxy("reset", route="w1")["reset"] + stack.proxy("reset", route="w2")["reset"]
        resets.append(cut)
        if k < 2:
            time.sleep(1.0)
    last = time.time()
    wait_finished(stack, job, 90)
    assert_exact(stack, job, expected["spec"], expected["document"])
    gaps = consumes_again(stack, [w1, w2], last, expected)
    assert all(n > 0 for n in resets), f"a reset found no connection to cut: {resets}"
    restarts = {w.host.name: [round(t - last, 1) for t, _ in w.restarts] for w in (w1, w2)}
    report(
        f"resets 3x in 3 s ({config})",
        connections_reset=resets,
        consumed_again_after_last_s=gaps,
        watchdog_restarts_after_last_s=restarts,
    )


def test_api_partitioned_from_redis(stack, expected):
    """The API host loses Redis (the router drops api<->redis) while a job runs: calls answer
    UNAVAILABLE inside their 5 s deadline, health goes NOT_SERVING; on heal both recover; the
    workers never noticed, and the job is exact."""
    job = submit(stack)
    assert stack.client.call("health", timeout=5)["status"] == "SERVING"
    t0 = time.monotonic()
    stack.net.partition("api", "redis")
    calls = []
    not_serving_at = None
    while time.monotonic() - t0 < 25:
        reply = stack.client.call("get", job_id=job, timeout=5)
        calls.append((reply["code"], reply["elapsed"]))
        health = stack.client.call("health", timeout=5)
        if health.get("status") == "NOT_SERVING" and not_serving_at is None:
            not_serving_at = time.monotonic() - t0
        if not_serving_at is not None and len(calls) >= 3:
            break
    submit_reply = stack.client.call("submit", spec=SPEC_DICT, request_id="during", timeout=5)
    stack.net.heal("api", "redis")
    t_heal = time.monotonic()
    first_ok = wait_until(
        lambda: (
            stack.client.call("get", job_id=job, timeout=5)["code"] == "OK"
            and time.monotonic() - t_heal
        ),
        30,
        "GetJob to answer after the heal",
    )
    serving = wait_until(
        lambda: (
            stack.client.call("health", timeout=5).get("status") == "SERVING"
            and time.monotonic() - t_heal
        ),
        30,
        "health SERVING after the heal",
    )
    wait_finished(stack, job, 60)
    assert_exact(stack, job, expected["spec"], expected["document"])
    assert {c for c, _ in calls} == {"UNAVAILABLE"}, calls  # never DEADLINE_EXCEEDED
    assert all(e < 5.0 for c, e in calls if c == "UNAVAILABLE"), calls
    assert not_serving_at is not None and not_serving_at < 15, not_serving_at
    assert submit_reply["code"] == "UNAVAILABLE" and submit_reply["elapsed"] < 5, submit_reply
    report(
        "API partitioned from Redis",
        calls=calls,
        not_serving_after_s=round(not_serving_at, 2),
        answers_after_heal_s=round(first_ok, 2),
        serving_after_heal_s=round(serving, 2),
    )


def test_latency_on_every_redis_connection(stack, expected):
    """200 ms added each way (400 ms round trip) on every Redis connection of the API and both
    workers, for the whole job. The workers get limits that fit the latency: a chunk's Redis
    work is many round trips, so the test's 8 s hard limit killed chunks and their messages came
    back after the 10 s visibility timeout (the job took 1.5 min, 12 deliveries for 8 chunks);
    and they sweep every 30 s, as in production: a sweep is a few round trips on the event loop."""
    for w in stack.workers:
        w.kill()
    stack.workers.clear()
    for host in ("w1", "w2"):
        stack.start_worker(host, CHUNK_DELAY, LATENCY_LIMITS)
    w1, w2 = stack.workers
    stack.proxy("set", route="*", latency=0.2)
    t0 = time.time()
    replies: list = []
    try:
        # The client's default deadline (30 s): SubmitJob publishes one message per chunk, each
        # a couple of round trips, so the submit itself takes seconds here.
        job = submit(stack, SMALL_DICT, timeout=30, replies=replies)  # 4 chunks: ~20 s here
        took = wait_finished(stack, job, 120)
        assert_exact(stack, job, expected["small"], expected["small_document"])
        per_worker = {w.host.name: sum(1 for r in w.received() if r[1] == job) for w in (w1, w2)}
        assert all(per_worker.values()), f"a worker took no chunk under latency: {per_worker}"
    finally:
        stack.proxy("set", route="*", latency=0.0)
    report(
        "200 ms latency on every Redis connection",
        job_s=round(took, 2),
        submit_s=replies[0]["elapsed"],
        submitted_to_done_s=round(stack.store.get_job(job).finished_at - t0, 2),
        chunks_per_worker=per_worker,
        chunk_seconds=_chunk_seconds(w1, w2, job),
    )


def _chunk_seconds(w1, w2, job: str) -> list[float]:
    """Wall time of each chunk task of `job`, from the workers' logs ('succeeded in X s')."""
    import re

    out = []
    for w in (w1, w2):
        for line in w.log().splitlines():
            if f"job={job}" in line and "succeeded in" in line:
                out.append(round(float(re.search(r"succeeded in ([0-9.]+)s", line).group(1)), 2))
    return out


def test_link_flapping(stack, expected):
    """w2's link flaps four times (0.5 s down, 0.5 s up) mid-chunk: nothing lost or doubled,
    w2 consumes again."""
    w1, w2 = stack.workers
    job = submit(stack)
    wait_busy(stack, w2)
    stack.net.flap("w2", 4, 0.5, 0.5)
    healed = time.time()
    wait_finished(stack, job, 90)
    assert_exact(stack, job, expected["spec"], expected["document"])
    gaps = consumes_again(stack, [w1, w2], healed, expected)
    report("link flapping 4x", consumed_again_after_heal_s=gaps)
