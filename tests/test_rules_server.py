"""A configuration's rule set over gRPC, against the real server on a real Redis (no worker: jobs
stay queued): every rule's bad value is INVALID_ARGUMENT naming its field, a good rule set is
echoed as given, the Python client sends it, and ReplayGame and ``azulsim replay`` show it."""

from __future__ import annotations

import json
import re

import grpc
import pytest

import service.cli as cli
from service.api import azulsim_pb2 as pb
from service.client import Client
from sim.rules.rulesets import RuleSet

pytest.importorskip("workers.store")

C = grpc.StatusCode
M = pb.Rules
WHERE = "spec.configurations[0].rules"


@pytest.fixture
def client(api_server):
    with Client(api_server().address, timeout=30) as c:
        yield c


def _spec(rules: pb.Rules | None = None, games: int = 4, **config) -> pb.JobSpec:
    return pb.JobSpec(
        configurations=[
            pb.Configuration(players=2, bots=["greedy", "random"], rules=rules, **config)
        ],
        games=games,
        seed=1,
    )


def _refused(client: Client, spec: pb.JobSpec) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        client.stub.SubmitJob(pb.SubmitJobRequest(spec=spec), timeout=30)
    return info.value.code(), info.value.details()


BAD = [
    (M(row_bonus=51), "row_bonus must be a whole number from 0 to 50; got 51"),
    (M(row_bonus=-1), "row_bonus must be a whole number from 0 to 50; got -1"),
    (M(column_bonus=99), "column_bonus must be a whole number from 0 to 50; got 99"),
    (M(colour_bonus=51), "colour_bonus must be a whole number from 0 to 50; got 51"),
    (M(floor=[1] * 8), "floor must list 1 to 7 slot penalties (a player board has 7"),
    (M(floor=[1, -2]), "floor[1] must be a whole number from 0 to 20; got -2"),
    (M(factories=[5, 7]), "factories must give the factories at 2, 3 and 4 players"),
    (M(factories=[0, 7, 9]), "factories[0] must be a whole number from 1 to 9; got 0"),
    (M(tiles_per_factory=0), "tiles_per_factory must be a whole number from 1 to 10; got 0"),
    (M(tiles_per_factory=8), "tiles_per_factory: 9 factories of 8 tiles deal 72 tiles a round"),
    (M(tiles_per_colour=51), "tiles_per_colour must be a whole number from 1 to 50; got 51"),
    (M(marker=M.MARKER_POINTS), "marker_points is required with marker MARKER_POINTS"),
    (M(marker=M.MARKER_POINTS, marker_points=21), "marker_points must be a whole number from 0"),
    (M(marker_points=2), "marker_points is only for marker MARKER_POINTS; got marker MARKER_UNSP"),
    (
        M(marker=M.MARKER_OFF, marker_points=2),
        "marker_points is only for marker MARKER_POINTS; got marker MARKER_OFF",
    ),
    (M(marker=9), "marker must be MARKER_FLOOR, MARKER_OFF or MARKER_POINTS; got 9"),
    (M(end_rows=0), "end_rows must be a whole number from 1 to 5; got 0"),
    (M(end_rows=6), "end_rows must be a whole number from 1 to 5; got 6"),
]


@pytest.mark.parametrize("rules, message", BAD, ids=[m[:36] for _, m in BAD])
def test_a_bad_rule_is_invalid_argument_naming_its_field(client, rules, message):
    code, details = _refused(client, _spec(rules))
    assert code == C.INVALID_ARGUMENT
    assert details.startswith(f"{WHERE}.") and f"{WHERE}.{message}" in details


def test_every_rule_field_has_a_bad_value_above():
    named = {f.name for rules, _ in BAD for f, _ in rules.ListFields()}
    assert named == {f.name for f in pb.Rules.DESCRIPTOR.fields}


def test_the_second_configuration_is_named(client):
    spec = _spec()
    spec.configurations.add(players=2, bots=["random", "random"], rules=M(end_rows=9))
    code, details = _refused(client, spec)
    assert code == C.INVALID_ARGUMENT
    assert "spec.configurations[1].rules.end_rows must be a whole number from 1 to 5" in details


def test_rules_are_echoed_as_given_and_printed_ones_stay_unset(client):
    rules = M(row_bonus=0, floor=[1, 2, 3], marker=M.MARKER_POINTS, marker_points=0)
    reply = client.stub.SubmitJob(pb.SubmitJobRequest(spec=_spec(rules)), timeout=30)
    echo = client.get(reply.job.job_id).spec.configurations[0]
    assert echo.rules == rules  # 0 is a value: row_bonus 0 and marker points 0 survive
    # Fields set to the printed values are not echoed: the rule set is the printed game's.
    same = M(row_bonus=2, column_bonus=7, floor=[1, 1, 2, 2, 2, 3, 3], marker=M.MARKER_FLOOR)
    job = client.stub.SubmitJob(pb.SubmitJobRequest(spec=_spec(same)), timeout=30).job
    assert not client.get(job.job_id).spec.configurations[0].HasField("rules")


def test_the_python_client_sends_a_configurations_rules(client):
    spec = {
        "configurations": [{"bots": ["greedy", "random"], "rules": {"column_bonus": 5}}],
        "games": 4,
    }
    job, created = client.submit(spec)
    assert created and client.get(job.job_id).spec.configurations[0].rules == M(column_bonus=5)
    with pytest.raises(ValueError, match=r"configurations\[0\]\.rules\.column_bonus must be"):
        client.submit({"configurations": [{"bots": ["greedy", "random"],
                                           "rules": {"column_bonus": 51}}]})  # fmt: skip


def test_replay_game_and_azulsim_replay_show_the_rules(client, capsys):
    rules = M(column_bonus=5, marker=M.MARKER_OFF)
    job = client.stub.SubmitJob(
        pb.SubmitJobRequest(spec=_spec(rules, wall=pb.WALL_GRAY, max_rounds=30)), timeout=30
    ).job
    reply = client.replay(job.job_id, 1)
    assert reply.wall == pb.WALL_GRAY and reply.max_rounds == 30
    assert reply.rules.column_bonus == 5 and reply.rules.marker == M.MARKER_OFF
    assert reply.rules.row_bonus == 2 and list(reply.rules.factories) == [5, 7, 9]  # every rule
    label = "wall=gray,max_rounds=30,column_bonus=5,marker=off"
    server = ["--server", client.address]
    assert cli.main(["replay", job.job_id, "--game", "1", *server]) == 0
    assert f"Rules: {label} (docs/rules.md" in capsys.readouterr().out
    assert cli.main(["replay", job.job_id, "--game", "1", "--json", *server]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rules"] == label
    assert RuleSet.from_dict(doc["rule_values"]) == RuleSet.parse(label)


def test_submit_rules_option_reaches_the_server(client, capsys):
    argv = ["submit", "--bots", "greedy,random", "--games", "4", "--server", client.address]
    assert cli.main([*argv, "--rules", "tiles_per_colour=30,end_rows=2"]) == 0
    job_id = capsys.readouterr().out.strip()
    assert client.get(job_id).spec.configurations[0].rules == M(tiles_per_colour=30, end_rows=2)


def test_the_web_view_shows_a_games_rules(api_server):
    from tests.web_util import fetch

    server = api_server(web_listen="127.0.0.1:0")  # no worker: the job stays queued
    rules = {"wall": "gray", "column_bonus": 5, "floor": [1, 2, 3]}
    with Client(server.address, timeout=60) as c:
        variant = c.submit({"configurations": [{"bots": ["greedy", "random"], "rules": rules}],
                            "games": 4})[0].job_id  # fmt: skip
        printed = c.submit({"configurations": [{"bots": ["greedy", "random"]}], "games": 4})[0]
    status, html, _ = fetch(f"{server.web_url}/jobs/{variant}/game?game=0")
    label = "wall=gray,column_bonus=5,floor=1/2/3"
    assert status == 200 and f"gray wall; rules {label}; seats:" in html
    first = html.split('<svg class="table"')[1].split("</svg>")[0]
    penalties = re.findall(r'class="penalty"[^>]*>(-?\d+)<', first)
    assert penalties == ["-1", "-2", "-3"] * 2  # the rules' three floor slots on each board
    status, html, _ = fetch(f"{server.web_url}/jobs/{printed.job_id}/game?game=0")
    assert status == 200 and "coloured wall; seats:" in html
    first = html.split('<svg class="table"')[1].split("</svg>")[0]
    penalties = re.findall(r'class="penalty"[^>]*>(-?\d+)<', first)
    assert penalties == ["-1", "-1", "-2", "-2", "-2", "-3", "-3"] * 2
    status, html, _ = fetch(f"{server.web_url}/jobs/{variant}")
    assert status == 200 and f'rules <span class="rules" id="rules-0">{label}</span>, bots' in html
    status, html, _ = fetch(f"{server.web_url}/jobs")
    assert status == 200 and f"greedy, random (2p, rules {label})" in html  # the canonical label
    assert "greedy, random (2p)" in html  # the printed job
