"""End to end through real processes: redis-server, Celery worker subprocesses, the gRPC server.

Statistics read over gRPC must equal an in-process run (`sim.jobs.local.run_local`) of the same spec
and seed, document for document; a replayed game must equal the same game of an in-process run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from sim.jobs.local import run_local
from sim.jobs.play import play_games
from sim.jobs.spec import JobSpec
from tests.waits import generous
from workers.settings import load_settings  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

SPEC = {
    "configurations": [
        {"players": 2, "bots": ["greedy", "random"]},
        {
            "players": 3,
            "bots": ["heuristic:floor=2.5", "random", "greedy"],
            "seating": "shuffle",
            "wall": "gray",
        },
    ],
    "games": 230,  # 5 chunks of 50 per configuration (the last one short)
    "seed": 99,
}


# Every test of this module shares one stack (its jobs are independent: each its own job id), so
# `make test`'s parallel runs keep the module on one process.
pytestmark = pytest.mark.xdist_group("integration-stack")


@pytest.fixture(scope="module")
def stack(module_env, module_worker_process):
    """(client, workers): an in-process API server and two real worker processes, for the
    module."""
    workers = [module_worker_process(module_env, concurrency=1) for _ in range(2)]
    config = ServerConfig()
    with ServerThread(make_backend(config, load_settings(module_env)), config) as server:
        with Client(server.address, token="", timeout=20) as client:
            yield client, workers


def _wait(stack, job_id, timeout=120):
    client, workers = stack
    updates = []
    try:
        for job in client.watch(job_id, interval_ms=100, timeout=timeout):
            updates.append(job)
    except grpc.RpcError as exc:
        logs = "\n".join(w.log()[-3000:] for w in workers)
        raise AssertionError(
            f"{exc.code()} watching {job_id}; last {updates[-1:]}\n{logs}"
        ) from exc
    return updates


def test_submit_watch_statistics_equal_a_local_run(stack):
    client, _ = stack
    spec = JobSpec.from_dict(SPEC)
    job, created = client.submit(spec, request_id="it-1")
    assert created
    updates = _wait(stack, job.job_id)
    done = [u.games_done for u in updates]
    assert done == sorted(done) and updates[-1].state == pb.SUCCEEDED
    assert updates[-1].games_done == updates[-1].games_total == 460
    assert updates[-1].chunks_done == updates[-1].chunks_total == 10
    assert updates[-1].started_at.seconds and updates[-1].finished_at.seconds

    stats = client.statistics(job.job_id)
    assert not stats.partial and stats.games_done == 460
    local = run_local(spec, workers=1, chunk_size=77).statistics()
    local.pop("timing")
    assert json.loads(stats.statistics_json) == local
    greedy = next(b for b in stats.bots if b.bot == "greedy" and b.configuration == 0)
    bots0 = local["configurations"][0]["bots"]
    assert greedy.wins == bots0["greedy"]["wins"]
    assert greedy.win_rate == pytest.approx(bots0["greedy"]["win_rate"])
    assert len(stats.bots) == 5

    # Resubmitting the same request returns the same job and plays nothing again.
    again, created = client.submit(spec, request_id="it-1")
    assert not created and again.job_id == job.job_id and again.state == pb.SUCCEEDED
    # A finished job cannot be cancelled.
    with pytest.raises(grpc.RpcError) as info:
        client.cancel(job.job_id)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "SUCCEEDED" in info.value.details()


def test_replay_equals_the_game_in_process(stack):
    client, _ = stack
    spec = JobSpec.from_dict(SPEC)
    job, _ = client.submit(spec)
    for k, g in ((0, 0), (0, 57), (1, 229)):
        replay = client.replay(job.job_id, g, configuration=k)
        config = spec.configurations[k]
        record = play_games(config, spec.seed, g, g + 1, spec.max_rounds)
        assert list(replay.scores) == record.scores[0].tolist()
        picks = [s for s in replay.steps if s.kind == pb.ReplayStep.PICK]
        assert len(picks) == int(record.turns[0])
        assert list(replay.seat_bots) == [config.bots[i] for i in record.seat_bot[0]]
        assert replay.first_player == int(record.first_player[0])
        assert replay.steps[-1].state.boards[0].score == replay.scores[0]
        if replay.end_reason == "row_completed":
            assert list(replay.winners) == [int(p) for p in record.winners[0].nonzero()[0]]


def test_cancel_a_running_job_freezes_its_statistics(stack):
    client, _ = stack
    spec = JobSpec.from_dict({**SPEC, "games": 5000})
    job, _ = client.submit(spec)
    for update in client.watch(job.job_id, interval_ms=100, timeout=60):
        if update.games_done > 0:
            break
    cancelled = client.cancel(job.job_id)
    assert cancelled.state == pb.CANCELLED
    time.sleep(1.0)  # chunks in flight finish and are refused
    after = client.get(job.job_id)
    assert after.state == pb.CANCELLED and after.games_done < after.games_total
    stats = client.statistics(job.job_id)
    assert stats.partial and stats.games_done == after.games_done
    assert json.loads(stats.statistics_json)["games_done"] == after.games_done


def test_cli_against_the_stack(stack, capsys):
    import service.cli as cli

    client, _ = stack
    server = ["--server", client.address]
    assert (
        cli.main(["submit", "--bots", "greedy,random", "--games", "120", "--seed", "4", *server])
        == 0
    )
    job_id = capsys.readouterr().out.strip()
    assert cli.main(["watch", job_id, *server]) == 0
    assert "SUCCEEDED" in capsys.readouterr().err
    assert cli.main(["stats", job_id, "--json", *server]) == 0
    doc = json.loads(capsys.readouterr().out)
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 120, "seed": 4}
    )
    local = run_local(spec, workers=1).statistics()
    local.pop("timing")
    assert doc == local
    assert cli.main(["stats", job_id, *server]) == 0
    assert "By bot" in capsys.readouterr().out
    assert cli.main(["stats", job_id, "--csv", *server]) == 0
    assert capsys.readouterr().out.startswith("configuration,")
    assert cli.main(["replay", job_id, "--game", "3", *server]) == 0
    text = capsys.readouterr().out
    assert "Round 1: deal" in text and "final scores" in text
    assert cli.main(["jobs", *server]) == 0
    assert job_id in capsys.readouterr().out
    assert cli.main(["cancel", job_id, *server]) == 1
    assert "FAILED_PRECONDITION" in capsys.readouterr().err
    assert cli.main(["submit", "--bots", "greedy,nope", *server]) == 2
    err = capsys.readouterr().err
    assert "unknown bot 'nope'" in err


def test_demo_runs_the_whole_stack(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZULSIM_")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-m", "service", "demo", "--games", "300", "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=generous(120),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "SUCCEEDED" in out.stderr
    assert "By bot" in out.stdout and "heuristic" in out.stdout
    # It says which job it made, as every job-making command does.
    job_id = re.search(r"submitted job ([0-9a-f]{32}): ", out.stderr).group(1)
    assert f"job {job_id} SUCCEEDED" in out.stderr
