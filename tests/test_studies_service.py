"""Studies through the service (real Redis, a real Celery worker process, a real gRPC server):
a tournament is one job and its ratings (and every configuration's turn order) are part of
GetStatistics, equal to the in-process run of the same spec."""

from __future__ import annotations

import json
import time

import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.convert import spec_from_proto, spec_to_proto
from service.server import make_backend
from service.testing import ServerThread
from sim.experiments.tournament import tournament_spec
from sim.jobs.local import run_local
from workers.settings import load_settings

TOURNAMENT = tournament_spec(["random", "greedy", "heuristic"], games_per_pair=60, seed=9)


def test_ratings_spec_round_trips_through_the_proto():
    assert spec_from_proto(spec_to_proto(TOURNAMENT)) == TOURNAMENT
    msg = spec_to_proto(TOURNAMENT)
    msg.ratings.anchor = "rollout"
    with pytest.raises(ValueError, match="spec.ratings.anchor must be a bot of the configurations"):
        spec_from_proto(msg)


def _finish(client, job, timeout=120.0):
    deadline = time.monotonic() + timeout
    while job.state in (pb.QUEUED, pb.RUNNING) and time.monotonic() < deadline:
        time.sleep(0.1)
        job = client.get(job.job_id)
    assert job.state == pb.SUCCEEDED, job
    return job


def _said_its_job(capsys, address: str, command: str) -> dict:
    """The ``--json`` of a study run with ``--server``, less its job id, checked: the command
    said the id on stderr, the server has that job, and its report draws from the JSON."""
    out, err = capsys.readouterr()
    doc = json.loads(out)
    job_id = doc.pop("job_id")
    assert f"azulsim {command}: submitted job {job_id}: " in err
    with Client(address) as client:
        assert client.get(job_id).state == pb.SUCCEEDED
        assert doc["statistics"] == {
            k: v for k, v in client.statistics_document(job_id).items() if k != "timing"
        }
    return doc


def test_tournament_is_one_job_with_ratings(azulsim_env, celery_worker_process, capsys):
    from service.cli import main

    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="30")
    config = ServerConfig()
    celery_worker_process(env, concurrency=1)
    local = run_local(TOURNAMENT, workers=1).statistics()
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        with Client(server.address) as client:
            job, _ = client.submit(TOURNAMENT)
            job = _finish(client, job)
            doc = json.loads(client.statistics(job.job_id).statistics_json)
            # The notebook path: the ratings as a dict and as a DataFrame.
            assert client.ratings(job.job_id) == local["ratings"]
            frame = client.ratings_frame(job.job_id)
            assert list(frame["bot"]) == [b["bot"] for b in local["ratings"]["bots"]]
        assert doc["ratings"] == local["ratings"]
        assert [c["turn_order"] for c in doc["configurations"]] == [
            c["turn_order"] for c in local["configurations"]
        ]
        argv = ["tournament", "random", "greedy", "heuristic", "--games-per-pair", "60",
                "--seed", "9", "--json"]  # fmt: skip
        assert main(argv) == 0
        here = json.loads(capsys.readouterr().out)
        assert main([*argv, "--server", server.address]) == 0
        there = _said_its_job(capsys, server.address, "tournament")
    assert there == here
    assert here["bots"] == local["ratings"]["bots"]


def test_sweep_is_one_job_equal_to_in_process(azulsim_env, celery_worker_process, capsys):
    from service.cli import main

    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="25")
    config = ServerConfig()
    celery_worker_process(env, concurrency=1)
    argv = ["sweep", "--bots", "heuristic:floor=0|2,marker=0..1/1,greedy", "--games", "50",
            "--seed", "4", "--json"]  # fmt: skip
    assert main(argv) == 0
    here = json.loads(capsys.readouterr().out)
    assert len(here["rows"]) == 4
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        assert main([*argv, "--server", server.address]) == 0
        there = _said_its_job(capsys, server.address, "sweep")
    assert there == here


def test_game_records_of_a_service_job_export_equal_to_in_process(
    azulsim_env, celery_worker_process, tmp_path, capsys
):
    """Workers write each chunk's records to the shared games directory; `azulsim export`
    gathers them into the same rows as `simulate --games-out` of the same spec."""
    import pyarrow.parquet as pq

    from service.cli import main
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": 2, "bots": ["greedy", "random"]},
                {"players": 3, "bots": ["greedy", "random", "random"], "seating": "mirrored"},
            ],
            "games": 120,
            "seed": 6,
            "game_records": True,
        }  # fmt: skip
    )
    games_dir = tmp_path / "games"
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="33", AZULSIM_GAMES_DIR=str(games_dir))
    config = ServerConfig()
    celery_worker_process(env, concurrency=2)
    local = tmp_path / "local.parquet"
    run_local(spec, workers=1, games_out=local)
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        with Client(server.address) as client:
            job, _ = client.submit(spec)
            job = _finish(client, job)
        # Through the API (ExportGames), the job named by a prefix: no games directory here.
        through = tmp_path / "through.parquet"
        assert main(["export", job.job_id[:8], "-o", str(through), "--server", server.address]) == 0
        assert "wrote 240 games" in capsys.readouterr().err
    assert len(list((games_dir / job.job_id).glob("chunk-*.parquet"))) > 2
    out = tmp_path / "export.parquet"
    assert main(["export", job.job_id, "-o", str(out), "--games-dir", str(games_dir)]) == 0
    assert "wrote 240 games" in capsys.readouterr().err
    assert pq.read_table(out).equals(pq.read_table(local))
    assert pq.read_table(through).equals(pq.read_table(local))
    # A server whose cluster has no games directory refuses such a job, naming what is missing.
    bare = {k: v for k, v in env.items() if k != "AZULSIM_GAMES_DIR"}
    with ServerThread(make_backend(config, load_settings(bare)), config) as server:
        with Client(server.address) as client:
            import grpc

            with pytest.raises(grpc.RpcError) as err:
                client.submit(spec)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "AZULSIM_GAMES_DIR" in err.value.details()


RULE_SWEEP = ["sweep", "--bots", "heuristic,greedy", "--bots", "greedy,random",
              "--players", "2,4", "--rules", "column_bonus=3..10/1,row_bonus=3",
              "--baseline", "column_bonus=7", "--games", "12", "--seed", "5",
              "--json"]  # fmt: skip


def test_rule_sweep_of_two_line_ups_at_two_player_counts_is_one_job(
    azulsim_env, celery_worker_process, capsys
):
    """8 rule values x 2 line-ups x 2 player counts: one service job (32 configurations, each
    carrying its rules over the proto), whose statistics equal the in-process run's."""
    from service.cli import main
    from service.cli.app import build_parser
    from service.cli.sweep import sweep_job

    spec = sweep_job(build_parser().parse_args(RULE_SWEEP))
    assert len(spec.configurations) == 32 and spec.sweep == ("rules.column_bonus",)
    assert [len(g) for g in spec.sweep_groups()] == [8, 8, 8, 8]
    assert spec_from_proto(spec_to_proto(spec)) == spec
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="5")
    config = ServerConfig()
    celery_worker_process(env, concurrency=1)
    assert main(RULE_SWEEP) == 0
    here = json.loads(capsys.readouterr().out)
    assert len(here["groups"]) == 4 and len(here["rows"]) == 32
    assert {r["values"]["rules.column_bonus"] for r in here["rows"]} == set(range(3, 11))
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        assert main([*RULE_SWEEP, "--server", server.address]) == 0
        there = _said_its_job(capsys, server.address, "sweep")
        with Client(server.address) as client:  # the server kept every configuration's rules
            job = client.get(client.list(10, "")[0][0].job_id)
    assert there == here
    assert [c["rules"] for c in here["statistics"]["spec"]["configurations"][:2]] == [
        {"row_bonus": 3, "column_bonus": 3},
        {"row_bonus": 3, "column_bonus": 4},
    ]
    kept = job.spec.configurations[0].rules
    assert (kept.row_bonus, kept.column_bonus) == (3, 3) and not kept.HasField("colour_bonus")
