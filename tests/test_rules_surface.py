"""A configuration's rule set through every surface: the spec JSON, the proto and its JSON, the
CLI's ``--rules``, statistics documents, game rows and replays (in process; the gRPC server's
answers are in tests/test_rules_server.py).

The games here are drawn by the fake play function or played by the engine as it is: these tests
pin what carries the rule set, not what the rules do to a game (tests of the engine do that)."""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
import pytest

import service.cli as cli
from service import convert
from service.api import azulsim_pb2 as pb
from service.cli.common import rule_set, rules_of
from service.cli.output import format_table, job_json
from service.cli.replay import floor_penalty, format_replay, replay_json, tiling
from service.replay import GameReplay
from sim.jobs.gamerows import long_table, records_table
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from sim.rules.rulesets import KEYS, PRINTED_RULES, RuleSet
from tests.fake_play import fake_play_games
from tests.test_simulate_cli import run

RULES = {"column_bonus": 5, "floor": [1, 2, 3], "marker": "off", "end_rows": 2}
LABEL = "column_bonus=5,floor=1/2/3,marker=off,end_rows=2"


def spec_of(*configs, **job) -> JobSpec:
    return JobSpec.from_dict({"configurations": list(configs), "games": 12, "seed": 3, **job})


VARIANT = {"players": 2, "bots": ["greedy", "random"], "rules": RULES}
PRINTED = {"players": 2, "bots": ["greedy", "random"]}


# --- the spec --------------------------------------------------------------------------------


def test_the_spec_json_round_trips_the_rules_and_leaves_printed_ones_out():
    spec = spec_of(VARIANT, PRINTED, {**PRINTED, "wall": "gray"})
    assert spec.configurations[0].rules == RuleSet.from_dict(RULES)
    data = json.loads(spec.to_json())
    assert data["configurations"][0]["rules"] == RULES  # the changed keys, in the JSON form
    assert "rules" not in data["configurations"][1] and "rules" not in data["configurations"][2]
    assert JobSpec.from_json(spec.to_json()) == spec
    assert JobSpec.from_json(spec.to_json()).to_json() == spec.to_json()


def test_the_rules_object_may_give_the_wall_and_round_cap():
    spec = spec_of({**PRINTED, "rules": {"wall": "grey", "max_rounds": 30, "row_bonus": 0}})
    c = spec.configurations[0]
    assert (c.wall, c.max_rounds, c.rules) == ("gray", 30, RuleSet(row_bonus=0))
    assert RuleSet.of(c, spec).label == "wall=gray,max_rounds=30,row_bonus=0"
    with pytest.raises(ValueError, match=r"configurations\[0\]\.rules\.wall differs"):
        spec_of({**PRINTED, "wall": "coloured", "rules": {"wall": "gray"}})


# --- the proto -------------------------------------------------------------------------------


def test_the_proto_round_trips_every_rule():
    every = {
        "row_bonus": 0,  # 0 is a value, not "unset"
        "column_bonus": 50,
        "colour_bonus": 3,
        "floor": [0, 20, 1, 1, 1, 1, 1],
        "factories": [1, 2, 9],
        "tiles_per_factory": 7,
        "tiles_per_colour": 1,
        "marker": 0,  # points: 0 is a value too
        "end_rows": 5,
    }
    spec = spec_of({**PRINTED, "rules": every}, PRINTED)
    msg = convert.spec_to_proto(spec)
    assert msg.configurations[0].rules.HasField("row_bonus")
    assert msg.configurations[0].rules.marker == pb.Rules.MARKER_POINTS
    assert msg.configurations[0].rules.marker_points == 0
    assert not msg.configurations[1].HasField("rules")  # printed: unset, as before
    back = convert.spec_from_proto(pb.JobSpec.FromString(msg.SerializeToString()))
    assert back == spec and back.to_json() == spec.to_json()


def test_the_echo_holds_only_the_rules_that_differ():
    msg = convert.spec_to_proto(spec_of(VARIANT)).configurations[0].rules
    assert {f.name for f, _ in msg.ListFields()} == {"column_bonus", "floor", "marker", "end_rows"}
    assert msg.marker == pb.Rules.MARKER_OFF


def test_the_protos_json_mapping_is_read_as_grpcurl_sends_it():
    doc = {
        "configurations": [
            {
                "bots": ["greedy", "random"],
                "players": 2,
                "rules": {
                    "columnBonus": 5,
                    "floor": [1, 2, 3],
                    "marker": "MARKER_OFF",
                    "endRows": 2,
                },  # fmt: skip
            }
        ],
        "games": "12",
        "seed": "3",
    }
    assert convert.spec_from_document(doc) == spec_of(VARIANT)
    assert convert.spec_from_document({"spec": spec_of(VARIANT).to_dict()}) == spec_of(VARIANT)


def test_job_json_gives_the_rules_in_the_spec_file_format():
    job = pb.Job(job_id="j", spec=convert.spec_to_proto(spec_of(VARIANT, PRINTED)))
    configs = job_json(job)["spec"]["configurations"]
    assert configs[0]["rules"] == RULES and "rules" not in configs[1]


# --- the CLI ---------------------------------------------------------------------------------


# `run` is tests/test_simulate_cli.py's; `fake_engine` a fixture of tests/conftest.py.


SIMULATE = ("simulate", "--bots", "greedy,random", "--games", "8", "--workers", "1")


def test_simulate_rules_reach_the_spec_and_the_statistics(fake_engine, capsys):
    status, out, _ = run(capsys, *SIMULATE, "--rules", LABEL, "--json")
    doc = json.loads(out)
    assert status == 0
    assert doc["spec"]["configurations"][0]["rules"] == RULES
    assert doc["configurations"][0]["rules"] == LABEL
    status, out, _ = run(capsys, *SIMULATE, "--rules", "marker=3,wall=grey", "--max-rounds", "40")
    assert status == 0 and "coloured" not in out.splitlines()[0]
    assert "gray wall" in out and ", rules wall=gray,max_rounds=40,marker=3\n" in out


def test_printed_rules_add_nothing(fake_engine, capsys):
    plain = run(capsys, *SIMULATE, "--json")[1]
    named = run(capsys, *SIMULATE, "--rules", "printed", "--json")[1]
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "timing"}  # noqa: E731
    assert strip(plain) == strip(named)
    cfg = json.loads(plain)["configurations"][0]
    assert "rules" not in cfg and "rules" not in json.loads(plain)["spec"]["configurations"][0]


def test_a_spec_file_with_rules(fake_engine, capsys, tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"configurations": [VARIANT, PRINTED], "games": 6}))
    status, out, _ = run(capsys, "simulate", "--spec", str(path), "--json", "--workers", "1")
    doc = json.loads(out)
    assert status == 0
    assert [c.get("rules") for c in doc["configurations"]] == [LABEL, None]


BAD_RULES = [
    ("wall=pink", "rules.wall must be one of coloured, gray"),
    ("max_rounds=0", "rules.max_rounds must be a whole number from 1 to 1000; got 0"),
    ("row_bonus=51", "rules.row_bonus must be a whole number from 0 to 50; got 51"),
    ("column_bonus=-1", "rules.column_bonus must be a whole number from 0 to 50; got -1"),
    ("colour_bonus=ten", "rules.colour_bonus must be a whole number; got 'ten'"),
    ("color_bonus=99", "rules.colour_bonus must be a whole number from 0 to 50; got 99"),
    ("floor=1/1/1/1/1/1/1/1", "rules.floor must list 1 to 7 slot penalties"),
    ("floor=1/21", "rules.floor[1] must be a whole number from 0 to 20; got 21"),
    ("factories=5/7", "rules.factories must give the factories at 2, 3 and 4 players"),
    ("factories=5/7/10", "rules.factories[2] must be a whole number from 1 to 9; got 10"),
    ("tiles_per_factory=0", "rules.tiles_per_factory must be a whole number from 1 to 10"),
    ("tiles_per_factory=8", "rules.tiles_per_factory: 9 factories of 8 tiles deal 72 tiles"),
    ("tiles_per_colour=51", "rules.tiles_per_colour must be a whole number from 1 to 50"),
    ("marker=21", "rules.marker must be floor, off or a whole number of points from 0 to 20"),
    ("marker=centre", "rules.marker must be floor, off or a number; got 'centre'"),
    ("end_rows=6", "rules.end_rows must be a whole number from 1 to 5; got 6"),
    ("bonus=5", "expected key=value with a key among wall, max_rounds"),
    ("row_bonus=1,row_bonus=2", "row_bonus is given twice"),
    ("", "rules must be 'printed' or key=value pairs"),
]


@pytest.mark.parametrize("text, message", BAD_RULES, ids=[t or "empty" for t, _ in BAD_RULES])
@pytest.mark.parametrize("command", ["simulate", "submit"])
def test_a_bad_rule_is_a_usage_error_naming_it(capsys, command, text, message):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--bots", "greedy,random", "--rules", text])
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    assert err.startswith(f"azulsim {command}: error: argument --rules: ") and message in err
    assert err.count("\n") == 1


def test_every_rule_key_has_a_bad_value_above():
    named = {t.split("=")[0].replace("color_", "colour_") for t, _ in BAD_RULES}
    assert set(KEYS) <= named


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rules", "wall=gray", "--wall", "coloured"], "--wall coloured and --rules wall=gray"),
        (["--rules", "max_rounds=30", "--max-rounds", "40"], "--max-rounds 40 and --rules max"),
        (["--spec", "x.json", "--rules", "row_bonus=1"], "--rules cannot be combined with --spec"),
    ],
)
def test_rules_that_clash_with_other_options(fake_engine, capsys, argv, message):
    status, out, err = run(capsys, "simulate", "--bots", "greedy,random", *argv)
    assert status == 2 and out == "" and message in err


def test_the_same_wall_or_cap_twice_is_fine(fake_engine, capsys):
    argv = ("--rules", "wall=gray,max_rounds=30", "--wall", "grey", "--max-rounds", "30", "--json")
    doc = json.loads(run(capsys, *SIMULATE, *argv)[1])
    assert doc["spec"]["configurations"][0] == {
        "players": 2, "bots": ["greedy", "random"], "seating": "rotate", "wall": "gray",
    }  # fmt: skip
    assert doc["spec"]["max_rounds"] == 30
    assert doc["configurations"][0]["rules"] == "wall=gray,max_rounds=30"


def test_the_rules_option_for_other_commands():
    parser = argparse.ArgumentParser()
    from service.cli.common import add_rules_option

    add_rules_option(parser)
    assert rules_of(parser.parse_args([])) is PRINTED_RULES
    assert rules_of(parser.parse_args(["--rules", "wall=grey"])) == RuleSet(wall="gray")
    assert rule_set("row_bonus=3") == RuleSet(row_bonus=3)


@pytest.mark.parametrize("command", ["simulate", "submit"])
def test_help_tells_of_rules(capsys, command):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert "--rules RULES" in out and "Rule variants" in out


# --- statistics ------------------------------------------------------------------------------


def test_statistics_name_a_configurations_rules_only_when_not_printed():
    spec = spec_of(VARIANT, PRINTED, {**PRINTED, "wall": "gray"}, {**PRINTED, "max_rounds": 9})
    doc = run_local(spec, workers=1, play=fake_play_games).statistics()
    labels = [c.get("rules") for c in doc["configurations"]]
    assert labels == [LABEL, None, "wall=gray", "max_rounds=9"]
    printed = run_local(spec_of(PRINTED), workers=1, play=fake_play_games).statistics()
    text = json.dumps({k: v for k, v in printed.items() if k != "timing"})
    assert '"rules"' not in text  # the printed game's document is as it was
    assert "rules" not in printed  # a one-configuration job's top level has no rule set either
    assert f"rules {LABEL}" in format_table(doc)


# --- game rows -------------------------------------------------------------------------------


def test_game_rows_carry_the_rule_sets_label():
    spec = spec_of(VARIANT, PRINTED, {**PRINTED, "wall": "gray", "rules": {"marker": 2}})
    tables = [
        records_table(fake_play_games(c, spec.seed, 0, 5), spec, k)
        for k, c in enumerate(spec.configurations)
    ]
    assert [t.column("rules").to_pylist() for t in tables] == [
        [LABEL] * 5,
        ["printed"] * 5,
        ["wall=gray,marker=2"] * 5,
    ]
    assert tables[0].schema.field("rules").type == pa.dictionary(pa.int8(), pa.string())
    assert tables[0].schema.names.index("rules") == tables[0].schema.names.index("wall") + 1
    long = long_table(tables[0])
    assert long.column("rules").to_pylist() == [LABEL] * 10  # one row per game and seat


# --- replays ---------------------------------------------------------------------------------


def _replay(rules: RuleSet) -> GameReplay:
    return GameReplay(0, 4, 2, rules.wall, ["greedy", "random"], 1, [], [3, 5], "round_cap", [],
                      rules)  # fmt: skip


def test_a_replays_rules_in_text_json_and_the_message():
    rules = RuleSet.parse("wall=gray,max_rounds=30," + LABEL)
    text = format_replay(_replay(rules))
    assert f"Rules: wall=gray,max_rounds=30,{LABEL} (docs/rules.md" in text.splitlines()[1]
    assert "Rules: printed" in format_replay(_replay(PRINTED_RULES)).splitlines()[1]
    doc = replay_json(_replay(rules), "j", "v")
    assert doc["rules"] == rules.label
    assert doc["rule_values"] == rules.to_dict() and set(doc["rule_values"]) == set(KEYS)
    msg = convert.replay_to_proto("j", _replay(rules), "v")
    assert msg.max_rounds == 30 and msg.wall == pb.WALL_GRAY
    assert list(msg.rules.floor) == [1, 2, 3] and msg.rules.row_bonus == 2  # every rule set
    back = convert.replay_from_proto(pb.Replay.FromString(msg.SerializeToString()))
    assert back.rules == rules
    old = convert.replay_from_proto(pb.Replay(players=2))  # a server without rules: printed
    assert old.rules == PRINTED_RULES


def test_the_replays_scoring_follows_its_rules():
    rules = RuleSet(row_bonus=1, column_bonus=3, colour_bonus=0, floor=(2, 2, 5), marker="4")
    assert [floor_penalty(n, rules) for n in (0, 1, 3, 7)] == [0, 2, 9, 9]
    assert [floor_penalty(n) for n in (2, 7, 9)] == [2, 14, 14]
    empty_wall = [[-1] * 5 for _ in range(5)]
    full_row = [[0, 1, 2, 3, 4]] + [[-1] * 5 for _ in range(4)]
    state = {"scores": [10, 10], "wall": [empty_wall, empty_wall], "marker_holder": 1,
             "lines": [[[-1, 0]] * 5] * 2}  # fmt: skip
    after = {**state, "wall": [full_row, empty_wall]}
    seats = tiling(state, after, [["red"], []], True, rules)
    assert seats[0].penalty == 2 and seats[0].marker_points == 0
    assert seats[0].bonus_rows == 1 and seats[0].bonus == 1  # a row is worth 1 here
    assert seats[1].penalty == 4 and seats[1].marker_points == 4  # the marker costs 4 points


def _plays_rule_sets() -> bool:
    import inspect

    from sim.jobs.play import play_batch

    return "rule_set" in inspect.signature(play_batch).parameters


VARIANTS = [
    {"column_bonus": 5, "row_bonus": 0, "floor": [1, 2, 3], "marker": "off"},
    {"floor": [2, 2, 4, 4, 6], "marker": 3, "end_rows": 2, "colour_bonus": 1},
    {"factories": [3, 5, 7], "tiles_per_factory": 5, "tiles_per_colour": 12, "floor": [1, 1, 1, 5]},
]


@pytest.mark.skipif(not _plays_rule_sets(), reason="the play layer plays only the printed rules")
@pytest.mark.parametrize("rules", VARIANTS, ids=["marker-off", "marker-points", "deal"])
@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_a_variant_replay_adds_up_to_the_engines_scores(rules, wall):
    """Under a rule set, every wall tiling `azulsim replay` shows adds up to the engine's score
    (floor penalties, the marker's points and the end bonuses read from the rules), and the floor
    it shows holds what the engine counted."""
    from service.cli.replay import annotate
    from service.replay import PICK, WALL_TILING, replay_game

    bots = ["random"] * (2 if wall == "coloured" else 3)  # the replay's arithmetic, not the bots
    spec = spec_of({"bots": bots, "wall": wall, "rules": rules})
    tilings = 0
    for g in range(spec.games):
        replay = replay_game(spec, 0, g)
        assert replay.rules == RuleSet.of(spec.configurations[0], spec)
        for a in annotate(replay):
            if a.step.kind == PICK:
                assert [len(f) for f in a.floors] == a.step.state["floor"]
            elif a.step.kind == WALL_TILING:
                for t in a.tiling:
                    tilings += 1
                    assert t.after == max(0, t.before + t.placement - t.penalty) + t.bonus
        assert replay.steps[-1].state["scores"] == replay.scores
    assert tilings > 20
