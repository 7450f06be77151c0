"""The CLI as a newcomer meets it, driven through the installed `azulsim` with its
output on pipes: pipes that close early, counts written as people write them, one-line errors,
help for every command, the jobs table, job id prefixes, and the small things in between."""

from __future__ import annotations

import json
import subprocess

import pytest

from service.cli.common import whole_number
from service.client import Client
from tests.cli_util import (  # noqa: F401 - fixture
    AZULSIM,
    azulsim,
    azulsim_into_closed_pipe,
    in_process_server,
    user_env,
)
from tests.waits import generous

SIM = ("simulate", "--bots", "greedy,random", "--games", "300", "--workers", "1")


def submit(server: str, *extra: str) -> str:
    return azulsim("submit", "--bots", "greedy,random", "--server", server, *extra).stdout.strip()


def test_a_reader_that_goes_away_ends_the_command_quietly(in_process_server):  # noqa: F811
    server = ["--server", in_process_server]
    job = submit(in_process_server, "--games", "100")
    for args in [
        (*SIM, "--json"),
        (*SIM, "--csv"),
        ("stats", job, "--json", *server),
        ("stats", job, "--csv", *server),
        ("jobs", "--json", *server),
        ("replay", job, "--json", *server),
    ]:
        done = azulsim_into_closed_pipe(*args)
        assert done.returncode == 141, (args, done.stderr)  # 128 + SIGPIPE, as `yes | head`
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, args

    shell = subprocess.run(
        ["bash", "-c", f"set -o pipefail; '{AZULSIM}' {' '.join(SIM)} --json | head -n 2"],
        capture_output=True,
        text=True,
        env=user_env(),
        timeout=generous(120),
    )
    assert shell.stdout.splitlines() == ["{", '  "schema": "azulsim.stats/1",']
    assert shell.stderr == "" and shell.returncode in (0, 141)  # 0 if it all fit the pipe


@pytest.mark.parametrize(
    "text, value",
    [("1000", 1000), ("1,000", 1000), ("1_000_000", 10**6), ("1e6", 10**6), ("2.5e5", 250000)],
)
def test_counts_as_people_write_them(text, value):
    assert whole_number(text) == value


@pytest.mark.parametrize("text", ["10**12", "1.5", "1e-3", "1.25e1", "1,00", "many", "1e400"])
def test_other_counts_are_one_line_errors(text):
    done = azulsim("simulate", "--bots", "greedy,random", "--games", text, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "usage:" not in done.stderr
    assert done.stderr.startswith("azulsim simulate: error: argument --games: must be a whole")


def test_every_command_has_help_and_report_help_reads_right():
    for command in ("jobs", "bots", "cancel", "replay", "up", "watch", "stats", "submit"):
        text = azulsim(command, "--help").stdout
        description = text.split("\n\n")[1]  # after the usage block
        assert not description.startswith(("positional", "options")), command
    assert "95% Wilson" in azulsim("report", "--help").stdout.replace("\n", " ")
    assert "%%" not in azulsim("report", "--help").stdout


def test_grey_wall_and_thousands(tmp_path):
    doc = json.loads(
        azulsim(
            "simulate", "--bots", "greedy,random", "--wall", "grey", "--games", "1,000", "--json"
        ).stdout
    )
    assert doc["configurations"][0]["wall"] == "gray" and doc["games_total"] == 1000


def test_report_from_a_spec_file_says_what_to_do(tmp_path):
    spec = tmp_path / "study.json"
    spec.write_text('{"configurations": [{"bots": ["greedy", "random"]}], "games": 10}')
    done = azulsim("report", "--from", str(spec), "-o", str(tmp_path / "r.png"), check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is a job spec, not a statistics document" in done.stderr
    assert done.stderr.count("\n") == 1


def test_jobs_table_and_job_id_prefixes(in_process_server):  # noqa: F811
    server = ["--server", in_process_server]
    first = submit(in_process_server, "--games", "10", "--seed", "12345", "--request-id", "tab-1")
    table = azulsim("jobs", *server).stdout.splitlines()
    header = table[0].split()
    assert header[:5] == ["job", "state", "games", "seed", "request"]
    row = next(line for line in table if line.strip().startswith(first))
    assert "12345" in row.split() and "tab-1" in row.split()

    # a unique prefix names the job, as in git and docker
    stats = azulsim("stats", first[:7], "--json", *server)
    assert json.loads(stats.stdout)["spec"]["seed"] == 12345
    # with 17 jobs two share a first hex digit: that prefix is ambiguous
    with Client(in_process_server) as client:
        for seed in range(16):
            client.submit({"configurations": [{"bots": ["random", "random"]}], "seed": seed})
        ids = [j.job_id for j in client.list(100)[0]]
    shared = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    done = azulsim("cancel", shared, *server, check=False)
    assert done.returncode == 2 and "is ambiguous" in done.stderr
    assert done.stderr.count("\n") == 1
    missing = azulsim("stats", "ffffffffffff", *server, check=False)
    if not any(i.startswith("ffffffffffff") for i in ids):
        assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr


def test_bots_json_is_plain(in_process_server):  # noqa: F811
    bots = json.loads(azulsim("bots", "--json", "--server", in_process_server).stdout)["bots"]
    keys = {"name", "type", "default", "min", "max", "choices", "doc"}
    params = [p for b in bots for p in b["parameters"]]
    assert params and all(set(p) == keys for p in params)  # unbounded is null, not missing
    floor = next(p for b in bots if b["name"] == "heuristic" for p in b["parameters"])
    assert isinstance(floor["min"], float | None) and isinstance(floor["choices"], list)
