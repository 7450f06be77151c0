"""Stopping rules through the service: real Redis, real Celery workers, a real gRPC server.

The job must stop at the same game with the same statistics as `sim.jobs.local.run_local`, whatever
the chunk size, the worker count, the order chunks finish in, duplicates, or a worker SIGKILLed
between parking a chunk and advancing the prefix.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import redis

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.convert import spec_from_proto, spec_to_proto
from service.server import make_backend
from service.testing import ServerThread
from sim.jobs.chunk import chunk_games_for, chunks_total, play_chunk
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.waits import wait_job
from workers.app import make_app
from workers.dispatch import submit
from workers.settings import load_settings
from workers.store import JobStore
from workers.tasks import advance

SPEC = JobSpec.from_dict(
    {
        "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
        "games": 2000,
        "seed": 5,
        "stop": {"rule": "sprt", "elo0": 0, "elo1": 20, "check_every": 20},
    }
)


@pytest.fixture(scope="module")
def expected():
    r = run_local(SPEC, workers=1, chunk_size=20)
    assert r.stopping["reason"] == "h1_accepted" and r.stopping["games"] < SPEC.games
    return r


def stack_for(env):
    settings = load_settings(env)
    return JobStore(redis.Redis.from_url(settings.redis_url), settings), make_app(settings)


def summary_of(store, job):
    from service.convert import stopping_summary

    return stopping_summary(job, job.spec)


def check_like_local(store, job, expected):
    assert job.state == "SUCCEEDED", job.error
    assert store.counters(job.job_id) == expected.counters
    assert summary_of(store, job) == expected.stopping
    assert job.games_done == expected.stopping["games"] < job.games_total


@pytest.mark.parametrize("chunk_games", ["20", "60"])
def test_parked_chunks_in_any_order_with_duplicates(azulsim_env, expected, chunk_games):
    """The store protocol alone: every chunk played here, parked in a shuffled order, some twice,
    the prefix advanced after each; the job stops as run_local does."""
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES=chunk_games)
    store, _ = stack_for(env)
    job, _ = store.create_job(SPEC, None)
    total = chunks_total(SPEC, job.chunk_games)
    # Only the first chunks matter (the stop is early): enough to pass it, shuffled.
    wanted = [c for c in range(total) if c * job.chunk_games < expected.stopping["games"] + 60]
    order = list(np.random.default_rng(1).permutation(wanted))
    for c in order + order[:3]:
        result = play_chunk(SPEC, job.chunk_games, int(c)).joint
        store.park_chunk(job.job_id, int(c), result)
        advance(store, store.get_job(job.job_id))
    check_like_local(store, store.get_job(job.job_id), expected)
    assert not store.redis.exists(store.pending_key(job.job_id))  # parked past the stop: gone


def test_chunk_sizes_are_aligned_to_check_points():
    assert chunk_games_for(SPEC, 50) == 60 and chunk_games_for(SPEC, 20) == 20
    big = JobSpec.from_dict({**SPEC.to_dict(), "games": 100_000})
    assert chunk_games_for(big, 50_000) == 4100  # at most STOP_CHUNK_GAMES, then aligned


def test_spec_round_trips_through_the_api():
    assert spec_from_proto(spec_to_proto(SPEC)) == SPEC
    paired = JobSpec.from_dict(
        {
            "configurations": [{"players": 3, "bots": ["greedy", "random", "random"]},
                               {"players": 3, "bots": ["heuristic", "random", "random"]}],
            "games": 30, "seed": 1, "baseline": 0,
            "stop": {"rule": "precision", "configuration": 1, "statistic": "paired_win",
                     "eps": 0.1},
        }
    )  # fmt: skip
    assert spec_from_proto(spec_to_proto(paired)) == paired


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda s: setattr(s.stop, "elo1", -1), "spec.stop.elo1 must be greater than"),
        (lambda s: setattr(s.stop, "alpha", 0.7), "spec.stop.alpha must lie in (0, 0.5)"),
        (lambda s: setattr(s.stop, "rule", 0), "spec.stop.rule must be SPRT or PRECISION"),
        (
            lambda s: (setattr(s.stop, "rule", pb.StopRule.PRECISION), setattr(s.stop, "eps", -1)),
            "spec.stop.eps must be greater than 0",
        ),
        (lambda s: setattr(s, "baseline", 4), "spec.baseline must be a configuration index"),
        (lambda s: setattr(s, "games", 2001), "spec.games must be a multiple of configurations"),
        (lambda s: setattr(s.stop, "configuration", 2), "spec.stop.configuration must be in"),
    ],
)
def test_bad_rules_are_invalid_argument_naming_the_field(azulsim_env, edit, message):
    import grpc

    msg = spec_to_proto(SPEC)
    edit(msg)
    config = ServerConfig()
    with ServerThread(make_backend(config, load_settings(azulsim_env)), config) as server:
        with Client(server.address) as client:
            with pytest.raises(grpc.RpcError) as err:
                client.submit(msg)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in err.value.details()


@pytest.mark.parametrize("concurrency,chunk_games", [(1, "20"), (2, "60")])
def test_workers_stop_where_local_does(
    azulsim_env, expected, celery_worker_process, concurrency, chunk_games
):
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES=chunk_games)
    store, app = stack_for(env)
    job, _ = submit(store, app, SPEC, None)
    celery_worker_process(env, concurrency=concurrency)
    check_like_local(store, wait_job(store, job.job_id, celery_worker_process), expected)


DIE_AFTER_PARKING = """
import os, signal
import workers.tasks as _t
_advance = _t.advance
def _die_once(store, job):
    marker = os.environ["AZULSIM_TEST_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # parked, not advanced
    return _advance(store, job)
_t.advance = _die_once
"""


def test_worker_killed_between_parking_and_advancing(
    azulsim_env, expected, celery_worker_process, tmp_path
):
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="20")
    store, app = stack_for(env)
    marker = tmp_path / "died"
    job, _ = submit(store, app, SPEC, None)
    worker = celery_worker_process(
        env, preamble=DIE_AFTER_PARKING, extra_env={"AZULSIM_TEST_MARKER": str(marker)}
    )
    done = wait_job(store, job.job_id, celery_worker_process)
    assert marker.exists()
    assert "WorkerLostError" in worker.log()
    check_like_local(store, done, expected)


def test_through_the_api_and_compare_server(azulsim_env, expected, celery_worker_process, capsys):
    from service.cli import main

    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="60")
    config = ServerConfig()
    celery_worker_process(env, concurrency=2)
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        with Client(server.address) as client:
            job, _ = client.submit(SPEC)
            deadline = time.monotonic() + 90
            while job.state in (pb.QUEUED, pb.RUNNING) and time.monotonic() < deadline:
                time.sleep(0.1)
                job = client.get(job.job_id)
            assert job.state == pb.SUCCEEDED
            s = job.stopping
            assert s.reason == "h1_accepted" and s.games == expected.stopping["games"]
            assert s.llr == pytest.approx(expected.stopping["llr"])
            assert (s.llr_lower, s.llr_upper) == pytest.approx(expected.stopping["llr_bounds"])
            assert s.estimate == pytest.approx(expected.stopping["estimate"])
            assert s.check_points == len(expected.stopping["check_points"])
            from service.cli.output import job_line

            assert "LLR +" in job_line(job) and "h1 accepted at" in job_line(job)
            doc = json.loads(client.statistics(job.job_id).statistics_json)
            local = expected.statistics()
            assert doc["stopping"] == local["stopping"]
            assert doc["groups"] == local["groups"]
        # `azulsim compare --server`: the same verdict, games and statistics as in-process.
        argv = ["compare", "heuristic", "greedy", "--sprt", "0,20", "--seed", "5", "--max-games",
                "2000", "--check-every", "20", "--json"]  # fmt: skip
        assert main(argv) == 0
        here = json.loads(capsys.readouterr().out)
        assert main([*argv, "--server", server.address]) == 0
        out, err = capsys.readouterr()
        there = json.loads(out)
        job_id = there.pop("job_id")  # said on stderr, as every job-making command does
        assert f"azulsim compare: submitted job {job_id}: " in err
        with Client(server.address) as client:
            assert client.get(job_id).state == pb.SUCCEEDED
    assert there == here
    assert here["verdict"] == "h1_accepted" and here["games"] == expected.stopping["games"]
