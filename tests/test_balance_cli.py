"""``azulsim balance``: in-process for any workers and chunks, through the service (real Redis,
Celery worker and gRPC server) with the same document, drawn by ``azulsim report --from``."""

from __future__ import annotations

import json

import pytest

from service.cli import main
from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from sim.rules.rulesets import RuleSet
from workers.settings import load_settings

ARGS = ["balance", "--rules", "printed", "--rules", "wall=gray,max_rounds=7", "--games", "12",
        "--seed", "3", "--bot", "greedy"]  # fmt: skip


def run(capsys, *argv) -> dict:
    assert main([*ARGS, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_document_is_the_same_for_any_workers_and_chunk_size(capsys):
    one = run(capsys, "--players", "2,3", "--elements", "marker,five")
    two = run(capsys, "--players", "2,3", "--elements", "marker,five", "--workers", "2",
              "--chunk-size", "5")  # fmt: skip
    assert one == two
    sheet = one["balance_sheet"]
    assert [t["players"] for t in sheet["tables"]] == [2, 3]
    for table in sheet["tables"]:
        printed, gray = table["rule_sets"]
        assert (printed["rule_set"], gray["rule_set"]) == ("printed", "wall=gray,max_rounds=7")
        assert gray["paired_with"] == printed["configuration"]
        assert "diff" in gray["measures"]["lead_changes"]
        assert set(gray["measures"]) == {
            m for m in gray["measures"] if "diff" in gray["measures"][m]
        }
        assert "diff" not in printed["measures"]["lead_changes"]
        assert {r["element"] for r in table["restricted"]} == {"marker", "five"}
        k = gray["configuration"]
        cfg = one["configurations"][k]
        assert (cfg["wall"], cfg["max_rounds"]) == ("gray", 7)
        assert gray["measures"]["decisive"]["value"] == cfg["balance"]["decisive"]["mean"]


def test_text_tables_and_report(capsys, tmp_path):
    assert main([*ARGS, "--players", "2", "--elements", "five"]) == 0
    out = capsys.readouterr().out
    assert "2 players (greedy, greedy" in out
    assert "lead_changes" in out and "diff" in out
    assert "restricted play at printed" in out and "never five" in out
    doc = run(capsys, "--players", "2", "--elements", "five")
    path = tmp_path / "balance.json"
    path.write_text(json.dumps(doc))
    for name in ("balance.png", "balance.html"):
        assert main(["report", "--from", str(path), "-o", str(tmp_path / name)]) == 0
        assert (tmp_path / name).stat().st_size > 1000
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rules", "walls=gray"], "--rules"),
        (["--rules", "printed", "--rules", "wall=coloured"], "--rules must be different"),
        (["--players", "5"], "--players must be 2, 3 or 4"),
        (["--elements", "walls"], "--elements must be among"),
        (["--bot", "nosuchbot"], "unknown bot"),
    ],
)
def test_bad_options_are_usage_errors(capsys, argv, message):
    assert main(["balance", *argv]) == 2
    assert message in capsys.readouterr().err


def test_rule_set_labels():
    assert RuleSet.parse("printed").label == "printed"
    assert RuleSet.parse("max_rounds=100,wall=grey").label == "wall=gray"
    assert RuleSet.parse("max_rounds=30,wall=gray").label == "wall=gray,max_rounds=30"
    assert RuleSet.parse(RuleSet.parse("max_rounds=9").label) == RuleSet(max_rounds=9)
    with pytest.raises(ValueError, match="max_rounds must be a whole number from 1 to 1000"):
        RuleSet.parse("max_rounds=0")


def test_two_rule_sets_at_2_3_4_players_as_one_service_job(
    azulsim_env, celery_worker_process, capsys
):
    env = dict(azulsim_env, AZULSIM_CHUNK_GAMES="40")
    celery_worker_process(env, concurrency=2)
    config = ServerConfig()
    here = run(capsys)
    with ServerThread(make_backend(config, load_settings(env)), config) as server:
        there = run(capsys, "--server", server.address)
    assert len(there.pop("job_id")) == 32  # the job `report`, `replay` and `export` take
    assert there == here
    assert [t["players"] for t in here["balance_sheet"]["tables"]] == [2, 3, 4]
    assert len(here["configurations"]) == 3 * (2 + 4)


def test_a_balance_job_is_known_by_its_shape():
    from sim.experiments.balance_lab import balance_spec, is_balance_job
    from sim.jobs.spec import JobSpec

    spec = balance_spec(["printed", "wall=gray"], [2, 4], "greedy", ["floor"], games=10)
    assert is_balance_job(spec) and is_balance_job(JobSpec.from_dict(spec.to_dict()))
    assert is_balance_job(balance_spec(["printed"], [3], "greedy", ["marker"], games=10))
    # One rule set and no restricted play: a plain self-play job, nothing to set apart.
    assert not is_balance_job(balance_spec(["printed"], [2], "greedy", [], games=10))
    plain = {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 10}
    assert not is_balance_job(JobSpec.from_dict({**plain, "seed": 1}))
    restricted = {"players": 2, "bots": ["restricted:bot=greedy,never=five", "random"]}
    assert not is_balance_job(JobSpec.from_dict({"configurations": [restricted], "games": 10,
                                                 "seed": 1}))  # fmt: skip
    odd = spec.to_dict()
    for config in odd["configurations"]:
        config["seating"] = "fixed"
    assert not is_balance_job(JobSpec.from_dict(odd))
