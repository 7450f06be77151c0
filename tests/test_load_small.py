"""A small run of ``bench/load.py`` against real processes: 20 concurrent clients (GetJob,
GetStatistics, WatchJob, plus an open WatchJob stream each) while a job runs, then 50 jobs
submitted at once. Asserts no error and no lost job; latency is reported by the benchmark, not
asserted here."""

from __future__ import annotations

import asyncio

import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from tests.bench_util import bench_script
from tests.stack_util import api_thread


@pytest.fixture(scope="module")
def load():
    return bench_script("load")


def test_clients_during_a_job_then_50_jobs_at_once(load, azulsim_env, celery_worker_process):
    env = {**azulsim_env, "AZULSIM_CHUNK_GAMES": "500"}
    workers = [celery_worker_process(env, concurrency=2)]
    with api_thread(env) as server:
        with Client(server.address, token="", timeout=20) as client:
            spec = pb.JobSpec(
                configurations=[pb.Configuration(players=2, bots=["greedy", "greedy"])],
                # Long enough to be running still when the clients are done, however fast the
                # engine (20,000 greedy games once ended first); cancelled then.
                games=1_000_000,
                seed=1,
            )
            job, _ = client.submit(spec)
            for update in client.watch(job.job_id, interval_ms=100, timeout=60):
                if update.state != pb.QUEUED:
                    break
            assert update.state == pb.RUNNING, update

            clients = asyncio.run(load.drive_clients(server.address, job.job_id, 20, 2.0))
            logs = "\n".join(w.log()[-2000:] for w in workers)
            assert clients["errors"] == 0, (clients, logs)
            for method in ("GetJob", "GetStatistics", "WatchJob"):
                assert clients[method]["calls"] >= 20, clients
            assert clients["watch_stream"]["messages"] >= 20, clients
            client.cancel(job.job_id)

            small = pb.JobSpec(
                configurations=[pb.Configuration(players=2, bots=["greedy", "random"])],
                games=10,
                seed=0,
            )
            submitted = asyncio.run(load.submit_many(server.address, small, 50, channels=4))
            assert submitted["errors"] == 0 and len(submitted["job_ids"]) == 50, submitted
            assert len(set(submitted["job_ids"])) == 50
            waited = asyncio.run(load.wait_jobs(server.address, submitted["job_ids"], 120))
            assert not waited["timed_out"], (waited, logs)
            assert waited["lost"] == 0 and waited["states"] == {"SUCCEEDED": 50}, waited
            assert waited["games_done"] == waited["games_total"] == 500
