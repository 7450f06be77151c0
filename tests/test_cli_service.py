"""The service subcommands of ``azulsim`` against an in-process server (no worker needed)."""

from __future__ import annotations

import json
import socket

import pytest

import service.cli as cli
from tests.stack_util import api_thread


@pytest.fixture
def server(azulsim_env):
    with api_thread(azulsim_env) as s:
        yield ["--server", s.address]


def test_every_subcommand_is_listed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name in (
        "simulate",
        "submit",
        "watch",
        "stats",
        "cancel",
        "jobs",
        "bots",
        "replay",
        "serve",
        "worker",
        "up",
        "demo",
    ):
        assert name in out


def test_bots(server, capsys):
    assert cli.main(["bots", *server]) == 0
    out = capsys.readouterr().out
    assert "greedy:" in out and "floor (float, default" in out
    assert cli.main(["bots", "--json", *server]) == 0
    names = [b["name"] for b in json.loads(capsys.readouterr().out)["bots"]]
    assert "heuristic" in names


def test_submit_jobs_cancel(server, capsys):
    assert cli.main(["jobs", *server]) == 0
    assert "no jobs" in capsys.readouterr().out
    args = ["submit", "--bots", "greedy,random", "--games", "50", "--request-id", "r1", *server]
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    job_id = captured.out.strip()
    assert f"submitted job {job_id}: 50 games" in captured.err
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == job_id and "already submitted" in captured.err
    assert cli.main([*args[:-2], "--seed", "3", *server]) == 1
    assert "ALREADY_EXISTS" in capsys.readouterr().err
    assert cli.main(["jobs", "--json", *server]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert [j["job_id"] for j in jobs] == [job_id] and jobs[0]["state"] == "QUEUED"
    assert cli.main(["cancel", job_id, *server]) == 0
    assert "CANCELLED" in capsys.readouterr().out
    assert cli.main(["watch", job_id, *server]) == 1  # it did not succeed
    assert "CANCELLED" in capsys.readouterr().err
    assert cli.main(["stats", job_id, "--json", *server]) == 0
    captured = capsys.readouterr()
    assert "partial statistics" in captured.err
    assert json.loads(captured.out)["games_done"] == 0


def test_errors_name_the_status_and_the_field(server, capsys):
    assert cli.main(["submit", "--bots", "greedy,random", "--players", "5", *server]) == 2
    err = capsys.readouterr().err
    assert err.startswith("azulsim submit: error: ")
    assert "players must be 2, 3 or 4; got 5" in err
    assert cli.main(["stats", "0123456789", *server]) == 1
    assert "NOT_FOUND" in capsys.readouterr().err


def test_unreachable_server(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert cli.main(["jobs", "--server", f"127.0.0.1:{port}", "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert "UNAVAILABLE" in err and "azulsim up" in err
