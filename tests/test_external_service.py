"""External bots through the service: real redis-server, real Celery worker processes, gRPC.

The workers know the bots by name from ``AZULSIM_EXTERNAL_BOTS`` (commands named in a job stay
off there); statistics must equal an in-process run, and a bot that answers illegally must fail the
job with a message naming the bot and the position.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import grpc
import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from sim.bots import external
from sim.bots.registry import unregister_bot
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from workers.settings import load_settings

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "random_bot.py"
ILLEGAL = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    n = len(req['positions'])\n"
    "    print(json.dumps({'id': req['id'], 'actions': [-5] * n}), flush=True)\n"
)


@pytest.fixture
def stack(azulsim_env, celery_worker_process, tmp_path):
    illegal = tmp_path / "illegal_bot.py"
    illegal.write_text(ILLEGAL)
    named = f"t_example={sys.executable} {EXAMPLE};t_illegal={sys.executable} {illegal}"
    # The API server validates names at submit, in this process; the workers read the variable.
    external.register_external_bot("t_example", [sys.executable, str(EXAMPLE)], replace=True)
    external.register_external_bot("t_illegal", [sys.executable, str(illegal)], replace=True)
    worker = celery_worker_process(
        azulsim_env, concurrency=1, extra_env={external.ENV_NAMED: named}
    )
    config = ServerConfig()
    try:
        with ServerThread(make_backend(config, load_settings(azulsim_env)), config) as server:
            with Client(server.address, token="", timeout=20) as client:
                yield client, worker
    finally:
        unregister_bot("t_example")
        unregister_bot("t_illegal")
        external.close_all()


def _finish(client, worker, job_id):
    updates = list(client.watch(job_id, interval_ms=100, timeout=120))
    last = updates[-1] if updates else None
    assert last is not None and last.state in (pb.SUCCEEDED, pb.FAILED), worker.log()[-3000:]
    return last


def test_an_external_bot_plays_a_job_as_in_process(stack):
    client, worker = stack
    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["t_example", "greedy"]},
                {"players": 3, "wall": "gray", "bots": ["t_example", "heuristic", "random"]},
            ],
            "games": 120,
            "seed": 8,
        }
    )
    job, _ = client.submit(spec)
    last = _finish(client, worker, job.job_id)
    assert last.state == pb.SUCCEEDED, last.error
    stats = json.loads(client.statistics(job.job_id).statistics_json)
    local = run_local(spec, workers=1, chunk_size=1000).statistics()
    local_cpu = local.pop("timing")["cpu"]
    cpu = stats.pop("timing")["cpu"]  # measured CPU per move: the one part that is not exact
    assert stats == local and stats["games_done"] == 240
    assert [(r["configuration"], r["bot"], r["moves"]) for r in cpu] == [
        (r["configuration"], r["bot"], r["moves"]) for r in local_cpu
    ] and all(r["us_per_move"] > 0 for r in cpu)


def test_an_illegal_answer_fails_the_job_naming_bot_and_position(stack):
    client, worker = stack
    spec = JobSpec.from_dict(
        {
            "configurations": [{"players": 2, "bots": ["t_illegal", "greedy"]}],
            "games": 60,
            "seed": 1,
        }
    )
    job, _ = client.submit(spec)
    last = _finish(client, worker, job.job_id)
    assert last.state == pb.FAILED
    assert "external bot 't_illegal'" in last.error
    assert re.search(r"illegal action -5 at game \d+, round 1, seat \d", last.error), last.error


def test_a_command_in_a_job_is_refused_at_submit(stack, monkeypatch):
    client, _ = stack
    monkeypatch.setenv(external.ENV_ALLOW_CMD, "1")  # this client may build it...
    spec = JobSpec.from_dict(
        {
            "configurations": [{"players": 2, "bots": [f"external:cmd={EXAMPLE}", "greedy"]}],
            "games": 10,
            "seed": 1,
        }
    )
    monkeypatch.delenv(external.ENV_ALLOW_CMD)  # ...the server, which has it off, refuses it
    with pytest.raises(grpc.RpcError) as err:
        client.submit(spec)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "AZULSIM_EXTERNAL_CMD=1" in err.value.details()
