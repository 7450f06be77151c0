"""The Redis job store and its Lua scripts, against a real redis-server (an in-memory imitation
would not run Redis's own Lua, docs/reliability.md)."""

from __future__ import annotations

import random

import pytest
import redis

from sim.jobs.chunk import chunk_games_range, chunks_total, play_chunk
from sim.jobs.local import run_local
from sim.jobs.spec import Configuration, JobSpec
from sim.stats import derive
from tests.stack_util import open_store
from workers.settings import Settings, load_settings
from workers.store import (
    JobFinished,
    JobNotFound,
    JobStore,
    RequestConflict,
    StoreUnavailable,
)

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["greedy", "random"]},
            {
                "players": 3,
                "bots": ["random", "greedy", "random"],
                "wall": "gray",
                "seating": "shuffle",
            },
        ],
        "games": 120,
        "seed": 11,
    }
)


@pytest.fixture
def store(azulsim_env):
    store = open_store(azulsim_env)
    yield store
    store.redis.close()


@pytest.fixture(scope="module")
def chunk_counters():
    """Counters of every chunk of SPEC at 50 games a chunk, and run_local's counters."""
    total = chunks_total(SPEC, 50)
    parts = {c: play_chunk(SPEC, 50, c)[:2] for c in range(total)}
    return parts, run_local(SPEC, workers=1, chunk_size=37).counters


def test_chunk_ranges_cover_every_game_once():
    assert chunks_total(SPEC, 50) == 6
    got = [chunk_games_range(SPEC, 50, c) for c in range(6)]
    assert got == [(0, 0, 50), (0, 50, 100), (0, 100, 120), (1, 0, 50), (1, 50, 100), (1, 100, 120)]
    with pytest.raises(ValueError):
        chunk_games_range(SPEC, 50, 6)


def test_settings_from_environment_and_order():
    s = load_settings({"AZULSIM_CHUNK_GAMES": "7", "AZULSIM_PREFIX": "x"})
    assert s.chunk_games == 7 and s.prefix == "x" and s.redis_url.startswith("redis://")
    assert load_settings({}) == Settings()
    with pytest.raises(
        ValueError, match="AZULSIM_TASK_HARD_LIMIT_S .* less than AZULSIM_VISIBILITY_TIMEOUT_S"
    ):
        load_settings({"AZULSIM_TASK_HARD_LIMIT_S": "700"})
    with pytest.raises(ValueError, match="AZULSIM_CHUNK_GAMES must be an integer"):
        load_settings({"AZULSIM_CHUNK_GAMES": "many"})


def test_create_get_and_idempotency(store):
    job, created = store.create_job(SPEC, "req-1")
    assert created and job.state == "QUEUED" and job.spec == SPEC
    assert (job.games_total, job.chunks_total, job.games_done, job.chunks_done) == (240, 6, 0, 0)
    assert job.request_id == "req-1" and job.started_at is None and job.finished_at is None
    assert job.rules_version and job.error == "" and job.chunk_games == 50
    again, created = store.create_job(JobSpec.from_json(SPEC.to_json()), "req-1")
    assert not created and again.job_id == job.job_id
    other = JobSpec.from_dict({**SPEC.to_dict(), "seed": 12})
    with pytest.raises(RequestConflict, match="req-1"):
        store.create_job(other, "req-1")
    fresh, created = store.create_job(SPEC, None)
    assert created and fresh.job_id != job.job_id
    assert store.get_job(job.job_id) == job
    with pytest.raises(JobNotFound):
        store.get_job("nope")
    assert store.count_queued() == 2
    # Near a limit the count is exact: a job whose keys expired is pruned, not counted.
    store.redis.delete(store.meta_key(fresh.job_id))
    assert store.count_queued(at_least=5) == 2  # far below: SCARD alone
    assert store.count_queued(at_least=2) == 1
    assert store.count_queued() == 1
    # An unknown request id is unknown (it read back as the string "None").
    assert store.job_for_request("never-sent") is None
    assert store.job_for_request("req-1") == job.job_id


def test_list_jobs_newest_first_with_stable_pages(store):
    ids = [store.create_job(SPEC, None)[0].job_id for _ in range(7)]
    page, token = store.list_jobs(3)
    assert [j.job_id for j in page] == ids[::-1][:3] and token
    store.create_job(SPEC, None)  # a new job does not shift later pages
    page2, token2 = store.list_jobs(3, token)
    assert [j.job_id for j in page2] == ids[::-1][3:6]
    page3, token3 = store.list_jobs(3, token2)
    assert [j.job_id for j in page3] == ids[:1] and token3 == ""
    everything, end = store.list_jobs(100)
    assert len(everything) == 8 and end == ""
    store.redis.delete(store.meta_key(ids[3]))  # an expired job drops out of the listing
    assert ids[3] not in [j.job_id for j in store.list_jobs(100)[0]]
    with pytest.raises(ValueError):
        store.list_jobs(0)
    with pytest.raises(ValueError):
        store.list_jobs(5, "garbage")


@pytest.mark.parametrize(
    "token",
    # The plain integers the token used to be, and what int() took besides;
    # base64 of other payloads, non-canonical encodings, and long values.
    [
        "3",
        "+3",
        " 3",
        "3_0",
        "\u0663",
        "-1",
        "99999999999999999999999",
        "0",
        "",
        "djEuMw==",
        "djEuMw=",
        "djEuMw\n",
        " djEuMw",
        "djEuMx",
        "djEuMD",
        "djEuLTE",
        "djIuMw",
        "djEuMDE",
        "djEuOTk5OTk5OTk5OTk5OTk5OTk5OTk",
        "x" * 10_000,
        "djEuMw" * 2_000,
    ],
)
def test_page_tokens_are_opaque_and_strict(store, token):
    from workers.store.paging import decode_page_token, encode_page_token

    assert encode_page_token(3) == "djEuMw"  # base64url("v1.3"), no padding
    assert decode_page_token(encode_page_token(2**63 - 1)) == 2**63 - 1
    if not token:
        return
    with pytest.raises(ValueError) as err:
        store.list_jobs(5, token)
    message = str(err.value)
    assert message.startswith("page_token is not a next_page_token from ListJobs: ")
    assert len(message) <= 120 and f"({len(token)} characters)" in message, message


def test_cancel_semantics(store, chunk_counters):
    parts, _ = chunk_counters
    job, _ = store.create_job(SPEC, "r")
    games, counters = parts[0]
    assert store.merge_chunk(job.job_id, 0, games, counters) == (1, "RUNNING")
    running = store.get_job(job.job_id)
    assert running.state == "RUNNING" and running.started_at and running.games_done == 50
    frozen = store.counters(job.job_id)
    cancelled = store.cancel_job(job.job_id)
    assert cancelled.state == "CANCELLED" and cancelled.finished_at >= running.started_at
    assert store.count_queued() == 0
    # A chunk that finishes after the cancel changes nothing.
    assert store.merge_chunk(job.job_id, 1, *parts[1]) == (-1, "CANCELLED")
    assert store.begin_chunk(job.job_id, 2) == ("state", "CANCELLED")
    assert store.counters(job.job_id) == frozen
    assert store.get_job(job.job_id).chunks_done == 1
    with pytest.raises(JobFinished) as info:
        store.cancel_job(job.job_id)
    assert info.value.job.state == "CANCELLED"
    with pytest.raises(JobNotFound):
        store.cancel_job("missing")
    ttl = store.settings.job_ttl_s
    for key in store.job_keys(job.job_id).values():
        if store.redis.exists(key):
            assert 0 < store.redis.ttl(key) <= ttl


def test_merge_is_exact_idempotent_and_order_free(store, chunk_counters):
    parts, expected = chunk_counters
    job, _ = store.create_job(SPEC, "exact")
    order = list(parts) * 2  # every chunk delivered twice, in a random order
    random.Random(3).shuffle(order)
    codes = []
    for c in order:
        games, counters = parts[c]
        codes.append(store.merge_chunk(job.job_id, c, games, counters)[0])
    # Each chunk merges once (1, the last one 2); a duplicate is refused: 0 while the job runs,
    # -1 once it has SUCCEEDED.
    merged = [c for c in codes if c > 0]
    assert merged == [1] * 5 + [2]
    assert codes.count(0) + codes.count(-1) == 6 and -1 not in codes[: codes.index(2)]
    final = store.get_job(job.job_id)
    assert final.state == "SUCCEEDED" and final.finished_at is not None
    assert (final.games_done, final.chunks_done) == (240, 6)
    assert store.counters(job.job_id) == expected
    doc = derive(store.counters(job.job_id), final.spec)
    assert doc["games_done"] == doc["games_total"] == 240
    with pytest.raises(JobFinished):
        store.cancel_job(job.job_id)
    # Every key of a finished job expires; the request id goes with it.
    keys = [*store.job_keys(job.job_id).values(), store.request_key("exact")]
    live = [k for k in keys if store.redis.exists(k)]
    assert store.job_keys(job.job_id)["counters"] in live
    for key in live:
        assert 0 < store.redis.ttl(key) <= store.settings.job_ttl_s
    assert store.count_queued() == 0


def test_memory_per_job_is_bounded(store, chunk_counters):
    """A job's keys take kilobytes, and the same whatever the number of games."""
    parts, _ = chunk_counters
    sizes = []
    for games in (120, 120_000_000):
        spec = JobSpec.from_dict({**SPEC.to_dict(), "games": games})
        job, _ = store.create_job(spec, None)
        for c in (0, 3):  # same counters in both jobs: the sizes differ only by games/chunks
            store.merge_chunk(job.job_id, c, *parts[c])
        keys = store.job_keys(job.job_id)
        sizes.append(
            {name: store.redis.memory_usage(key, samples=0) or 0 for name, key in keys.items()}
        )
    small, big = sizes
    # (equal up to the hash table's incremental rehashing state)
    assert abs(small["counters"] - big["counters"]) < 0.2 * small["counters"]
    assert big["counters"] < 200_000
    assert big["meta"] < 2_000 and big["chunks"] == 0
    # 120M games at 50 per chunk is 4.8M chunks: still one bit each at most.
    assert big["done"] <= 4_800_000 // 8 + 1_000


def test_begin_and_fail_chunk_attempt_cap(store, chunk_counters):
    parts, _ = chunk_counters
    job, _ = store.create_job(SPEC, None)
    cap = store.settings.max_attempts
    for attempt in range(1, cap + 1):
        assert store.begin_chunk(job.job_id, 4) == ("run", str(attempt))
        status, _ = store.fail_chunk(job.job_id, 4, "ValueError: boom")
        assert status == ("retry" if attempt < cap else "failed")
    failed = store.get_job(job.job_id)
    assert failed.state == "FAILED" and failed.finished_at is not None
    assert f"chunk 4 (configuration 1, games 50..99) failed {cap} attempts" in failed.error
    assert "ValueError: boom" in failed.error
    assert store.merge_chunk(job.job_id, 0, *parts[0])[0] == -1


def test_worker_lost_past_the_cap_fails_the_job(store, chunk_counters):
    parts, _ = chunk_counters
    job, _ = store.create_job(SPEC, None)
    store.merge_chunk(job.job_id, 1, *parts[1])
    for _ in range(store.settings.max_attempts):  # attempts that never came back
        assert store.begin_chunk(job.job_id, 0)[0] == "run"
    status, error = store.begin_chunk(job.job_id, 0)
    assert status == "failed" and "worker running it was lost" in error
    assert store.get_job(job.job_id).state == "FAILED"
    assert store.begin_chunk(job.job_id, 1) == ("state", "FAILED")


def test_done_chunk_is_skipped_and_bookkeeping_cleared(store, chunk_counters):
    parts, _ = chunk_counters
    job, _ = store.create_job(SPEC, None)
    assert store.begin_chunk(job.job_id, 2) == ("run", "1")
    store.merge_chunk(job.job_id, 2, *parts[2])
    assert store.begin_chunk(job.job_id, 2) == ("done", "RUNNING")
    assert store.chunk_state(job.job_id)["chunks"] == {}


def test_unavailable_redis_raises_store_unavailable(azulsim_env):
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0)
    )
    store = JobStore(client, load_settings(azulsim_env))
    with pytest.raises(StoreUnavailable):
        store.ping()
    with pytest.raises(StoreUnavailable):
        store.get_job("x")
    with pytest.raises(StoreUnavailable):
        store.create_job(SPEC, None)


def test_chunks_of_slow_bots_are_smaller():
    from sim.jobs.chunk import MIN_CHUNK_GAMES, chunk_games_for

    def spec(*bots, games=10**6):
        return JobSpec(
            configurations=[Configuration(players=len(bots), bots=list(bots))], games=games, seed=1
        )

    assert chunk_games_for(spec("greedy", "greedy"), 50_000) == 50_000
    assert chunk_games_for(spec("random", "random"), 50_000) == 50_000  # never above the setting
    assert chunk_games_for(spec("rollout", "rollout"), 50_000) == 1_851  # 27x greedy's cost
    assert chunk_games_for(spec("rollout", "rollout"), 5_000) == MIN_CHUNK_GAMES
    assert chunk_games_for(spec("greedy", "greedy", games=300), 50_000) == 300
    assert chunk_games_for(spec("rollout", "rollout"), 50) == 50  # a tiny setting is kept


def test_an_exception_between_replies_drops_the_connections(azulsim_env):
    """An exception raised while a pipeline's replies are read (as a soft time limit's signal
    does, anywhere) leaves the connection with unread replies; the store drops its pooled
    connections, so the next command does not read a stale reply as its own."""
    settings = load_settings(
        {**azulsim_env, "AZULSIM_REDIS_WAIT_REPLICAS": "1", "AZULSIM_REDIS_WAIT_TIMEOUT_S": "0.2"}
    )
    client = redis.Redis.from_url(azulsim_env["AZULSIM_REDIS_URL"])
    store = JobStore(client, settings)
    # Made by a store that does not wait: with no replica, a waiting one refuses the job.
    job = JobStore(client, load_settings(azulsim_env)).create_job(SPEC, None)[0]

    def boom(response, **_):
        raise RuntimeError("a signal between two replies")

    client.set_response_callback("ROLE", boom)  # ROLE's reply read, INFO's still unread
    with pytest.raises(RuntimeError):
        store.merge_chunk(job.job_id, 0, 50, {"games": 50})
    client.set_response_callback("ROLE", lambda r, **_: r)
    assert client.get(store.replicated_key) == b"merge_chunk"  # not the INFO text
    client.close()
