"""Statistics documents of any size through the API: StreamStatistics sends a document in parts,
GetStatistics refuses one past the server's message limit with a message that says so, and the
client and CLI read the streamed one. Real Redis, a real Celery worker, a real gRPC server (with
a small message limit, so that a small 4-player sweep stands for a large one: a 4-player sweep of
100 configurations is ~3.5 MB, near the default limit of 4 MB)."""

from __future__ import annotations

import json

import grpc
import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.convert import spec_to_proto, statistics_joined, statistics_parts
from service.server import make_backend
from service.testing import ServerThread
from sim.experiments.sweep import sweep_spec
from sim.jobs.local import run_local
from tests.waits import wait_until
from workers.settings import load_settings

LIMIT = 64 * 1024  # the server's message limit here (AZULSIM_MAX_MESSAGE_BYTES)
SPEC = sweep_spec(["heuristic:floor=0..2/0.5", "greedy", "random", "greedy"], games=8, seed=4)


@pytest.fixture(scope="module")
def local_doc():
    doc = run_local(SPEC, workers=1).statistics()
    doc.pop("timing", None)
    assert len(json.dumps(doc, separators=(",", ":"))) > 2 * LIMIT  # three parts at least
    return doc


def test_parts_join_to_the_reply():
    reply = pb.Statistics(statistics_json="x" * 2500, games_done=7, partial=True)
    parts = statistics_parts(reply, 1000)
    assert [len(p.statistics_json) for p in parts] == [1000, 1000, 500]
    assert parts[0].games_done == 7 and not parts[1].games_done
    assert statistics_joined(iter(parts)) == reply


def test_a_document_past_the_message_limit(azulsim_env, celery_worker_process, local_doc, capsys):
    from service.cli import main

    config = ServerConfig(max_message_bytes=LIMIT)
    celery_worker_process(azulsim_env, concurrency=2)
    with ServerThread(make_backend(config, load_settings(azulsim_env)), config) as server:
        with Client(server.address, token="", timeout=60) as client:
            job, _ = client.submit(spec_to_proto(SPEC))
            wait_until(
                lambda: client.get(job.job_id).state == pb.SUCCEEDED, 180, "the sweep to finish"
            )
            with pytest.raises(grpc.RpcError) as err:
                client.stub.GetStatistics(pb.GetStatisticsRequest(job_id=job.job_id), timeout=60)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "StreamStatistics" in err.value.details()
            parts = list(client.stub.StreamStatistics(pb.GetStatisticsRequest(job_id=job.job_id)))
            assert len(parts) >= 3 and all(p.ByteSize() <= LIMIT for p in parts)
            reply = client.statistics(job.job_id)
            assert json.loads(reply.statistics_json) == local_doc
            assert reply.games_done == SPEC.total_games and not reply.partial
            assert len(reply.bots) == 3 * len(SPEC.configurations)  # greedy plays twice
        assert main(["stats", job.job_id, "--json", "--server", server.address]) == 0
        assert json.loads(capsys.readouterr().out) == local_doc
