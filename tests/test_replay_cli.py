"""`azulsim replay` as a person reads it: what lies on each floor line, and each wall tiling
scored seat by seat so a round can be checked by hand; `--json` that parses plainly."""

from __future__ import annotations

import json
import re

import pytest

from service.cli.replay import MARKER, annotate, format_replay, replay_json
from service.replay import PICK, WALL_TILING, replay_game
from sim.jobs.spec import JobSpec
from sim.rules.actions import FLOOR, decode
from sim.rules.constants import COLOURS
from tests.cli_util import azulsim, in_process_server  # noqa: F401 - fixture

CONFIGS = [
    {"bots": ["random", "random"]},
    {"bots": ["random", "greedy", "random"], "wall": "gray", "seating": "shuffle"},
    {"bots": ["random", "heuristic", "random", "greedy"], "seating": "fixed"},
]


@pytest.mark.parametrize("config", CONFIGS, ids=["2p", "3p-gray", "4p"])
def test_every_wall_tiling_adds_up_to_the_engines_scores(config):
    """For every seat of every wall tiling of 30 games: the score the engine reached equals
    max(0, before + placement points - floor penalty) + end bonus as the replay shows them, and
    the floor shown holds as many objects as the engine counted."""
    spec = JobSpec.from_dict({"configurations": [config], "games": 30, "seed": 11})
    tilings = dead_ends = clamped = bonuses = floors_seen = 0
    for g in range(30):
        replay = replay_game(spec, 0, g)
        steps = annotate(replay)
        for a in steps:
            if a.step.kind == PICK:
                for seat, floor in enumerate(a.floors):
                    assert len(floor) == a.step.state["floor"][seat]
                    floors_seen += bool(floor)
            if a.step.kind != WALL_TILING:
                continue
            for t in a.tiling:
                tilings += 1
                assert t.after == max(0, t.before + t.placement - t.penalty) + t.bonus
                assert t.floor.count(MARKER) <= 1
                dead_ends += sum(p.column < 0 for p in t.placed)
                clamped += t.clamped
                bonuses += t.bonus > 0
        assert steps[-1].step.state["scores"] == replay.scores
    assert tilings > 100 and floors_seen > 0 and clamped > 0 and bonuses > 0  # real cases met
    if config.get("wall") == "gray":
        assert dead_ends > 0  # docs/rules.md §9.4: the fallen tiles are penalised that round


def test_the_floor_shows_the_marker_and_the_tiles_that_fell():
    spec = JobSpec.from_dict({"configurations": [CONFIGS[0]], "games": 3, "seed": 2})
    replay = replay_game(spec, 0, 1)
    steps = annotate(replay)
    holder_seen = False
    for prev, a in zip(steps, steps[1:], strict=False):
        if a.step.kind != PICK:
            continue
        seat, (_, colour, dest) = a.step.seat, decode(a.step.action)
        before, after = prev.floors[seat] if prev.step.kind == PICK else [], a.floors[seat]
        if dest == FLOOR and len(before) < 7:
            assert after[len(before) :].count(COLOURS[colour]) >= 1
        if prev.step.state["marker_in_centre"] and not a.step.state["marker_in_centre"]:
            assert MARKER in after and MARKER not in before
            holder_seen = True
    assert holder_seen
    text = format_replay(replay)
    floors = re.findall(r"floor \[([^\]]*)\]", text)
    assert any(f.strip() for f in floors)  # something on a floor line, in letters
    assert re.search(r"floor \[1( [BYRKW])*\]", text)  # the marker, written 1
    assert re.search(r"placement \+\d+, floor \[[^\]]*\] -\d+: \d+ \+ \d+ - \d+ = -?\d+", text)


def test_json_is_plain():
    spec = JobSpec.from_dict({"configurations": [CONFIGS[0]], "games": 3, "seed": 2})
    doc = json.loads(json.dumps(replay_json(replay_game(spec, 0, 0), "j", "v")))
    assert doc["wall"] == "coloured" and doc["game"] == 0 and doc["configuration"] == 0
    picks = [s for s in doc["steps"] if s["kind"] == "pick"]
    assert {s["seat"] for s in picks} == {0, 1}  # seat 0 is there, as a number
    keys = {k for s in doc["steps"] for k in s}
    assert all(set(s) == keys for s in doc["steps"])  # every field on every step
    line = doc["steps"][-2]["state"]["boards"][0]["lines"][0]
    assert set(line) == {"colour", "count"} and isinstance(line["count"], int)
    tiling = [s for s in doc["steps"] if s["kind"] == "wall_tiling"][0]["scoring"][0]
    assert set(tiling) >= {"placed", "placement_points", "floor", "floor_penalty", "end_bonus"}


def test_the_installed_azulsim_replays_a_job(in_process_server):  # noqa: F811 - fixture
    server = ["--server", in_process_server]
    job = azulsim("submit", "--bots", "random,random", "--games", "5", "--seed", "2", *server)
    job_id = job.stdout.strip()
    text = azulsim("replay", job_id[:8], "--game", "1", *server)  # a unique prefix will do
    assert "wall tiling" in text.stdout and "placement +" in text.stdout
    assert re.search(r"floor \[[1BYRKW]", text.stdout)
    piped = azulsim("replay", job_id, "--json", *server)
    doc = json.loads(piped.stdout)
    assert doc["job_id"] == job_id and doc["wall"] == "coloured" and doc["players"] == 2
    assert isinstance(doc["steps"][0]["state"]["round"], int)
