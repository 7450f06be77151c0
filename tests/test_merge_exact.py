"""merge_chunk.lua merges counters exactly at any size (against a real redis-server).

Counters beyond 2**53 (sums of squares over huge jobs) must add exactly, as Python's integers do,
and the extrema (batched HMGET/HSET) must keep the smallest/largest value.
"""

from __future__ import annotations

import redis

from sim.jobs.spec import Configuration, JobSpec
from sim.stats import merge
from workers.settings import load_settings
from workers.store import JobStore

SPEC = JobSpec([Configuration(2, ["greedy", "random"])], games=10_000, seed=1)
BIG = 2**61


def test_counter_sums_are_exact_on_both_paths(azulsim_env):
    azulsim_env["AZULSIM_CHUNK_GAMES"] = "1000"
    client = redis.Redis.from_url(azulsim_env["AZULSIM_REDIS_URL"])
    store = JobStore(client, load_settings(azulsim_env))
    job, _ = store.create_job(SPEC, "exact-sums")
    parts = [
        {"small": 7, "edge": 10**15 - 1, "big": BIG, "neg": -5, "min|x": 9, "max|x": 9},
        {"small": 11, "edge": 10**15 - 1, "big": BIG - 1, "neg": -(10**14), "new": 3},
        {"small": -18, "edge": 10**14, "big": 12345, "neg": 10**14 + 5, "min|x": 2, "max|x": 30},
        {"edge": -(10**15), "big": -(2**60), "neg": 999_999_999_999_999, "min|x": 4},
    ]
    for chunk, part in enumerate(parts):
        assert store.begin_chunk(job.job_id, chunk)[0] == "run"
        assert store.merge_chunk(job.job_id, chunk, 1000, part, "exact-sums")[0] == 1
    raw = client.hgetall(store.job_keys(job.job_id)["counters"])
    got = {k.decode(): int(v) for k, v in raw.items()}
    expected = parts[0]
    for part in parts[1:]:
        expected = {**merge(expected, part)}
    # `merge` drops additive zeros; the store keeps a field it has seen (small = 7 + 11 - 18 = 0).
    assert got.pop("small") == 0
    expected.pop("small", None)
    assert got == expected
    assert got["big"] == 2 * BIG - 1 + 12345 - 2**60
    client.close()
