"""Studies that vary the rules (sim/experiments/sweep.py, sim/experiments/tournament.py, service/cli
compare, sweep, tournament, report): rule values as configurations with their rule sets, pairing
only where the rules deal alike, sweep groups of line-ups and player counts each read on its own,
and the outputs naming the rule sets by label."""

from __future__ import annotations

import json
import re

import pytest

from service.cli import main
from service.convert import spec_from_proto, spec_to_proto
from sim.experiments.sweep import sweep_spec
from sim.experiments.tournament import tournament_spec
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from sim.rules.rulesets import RuleSet


def test_a_rule_range_is_one_configuration_per_value_all_paired():
    spec = sweep_spec(["heuristic", "greedy"], games=10, rules="column_bonus=3..10/1,wall=gray")
    assert spec.sweep == ("rules.column_bonus",)
    assert [c.rules.column_bonus for c in spec.configurations] == list(range(3, 11))
    assert {c.wall for c in spec.configurations} == {"gray"}
    assert [k for k, _ in spec.pairings()] == list(range(1, 8))
    assert JobSpec.from_json(spec.to_json()) == spec
    assert spec_from_proto(spec_to_proto(spec)) == spec
    with_base = sweep_spec(["heuristic", "greedy"], games=10, rules="column_bonus=3|7|9",
                           baseline="rules.column_bonus=7")  # fmt: skip
    assert with_base.baseline == 1 and sorted(k for k, _ in with_base.pairings()) == [0, 2]


def test_a_grid_of_a_bot_parameter_and_a_rule():
    spec = sweep_spec(["heuristic:floor=0|2", "greedy"], games=10, rules="marker=floor|off|2",
                      baseline="floor=2,marker=off")  # fmt: skip
    assert spec.sweep == ("floor", "rules.marker")
    got = [(c.bot_specs[0].params["floor"], c.rules.marker) for c in spec.configurations]
    assert got == [(0, "floor"), (0, "off"), (0, "2"), (2, "floor"), (2, "off"), (2, "2")]
    assert spec.baseline == 4 and len(spec.pairings()) == 5


def test_values_that_deal_unlike_the_baseline_are_unpaired():
    spec = sweep_spec(["heuristic", "greedy"], games=4, rules="factories=5/7/9|6/7/9|5/7/8")
    # 5/7/8 changes the 4-player count only: at 2 players it deals as the printed game does.
    assert spec.pairings() == [(2, 0)]
    doc = run_local(spec, workers=1).statistics()
    rows = doc["sweep"]["rows"]
    assert [r["paired"] for r in rows] == [True, False, True]
    assert rows[1]["score_diff"] is None and rows[2]["games"] == 4
    assert rows[1]["values"]["rules.factories"] == [6, 7, 9]
    assert "paired" not in doc["configurations"][1] and "paired" in doc["configurations"][2]


@pytest.mark.parametrize(
    "rules, kwargs, message",
    [
        ("column_bonus=0..60/10", {}, "rules.column_bonus must be a whole number from 0 to 50"),
        ("column_bonus=0..3/0.5", {}, r"rules.column_bonus must be a whole number; got '0.5'"),
        ("colum_bonus=1|2", {}, "expected key=value with a key among"),
        ("floor=1/2|x", {}, "rules.floor must be whole numbers joined by /"),
        ("column_bonus=1|2,row_bonus=1|2,colour_bonus=1|2", {}, "at most 2"),
        ("column_bonus=1|2", {"baseline": "column_bonus=3"}, "baseline must be one of"),
        ("column_bonus=1|2", {"baseline": "column_bonus=x"}, "baseline.column_bonus must be"),
        ("column_bonus=7|07", {}, "sweep values repeat"),
        ("wall=gray,column_bonus=1|2", {"wall": "gray"}, "give the wall once"),
    ],
)
def test_bad_rule_sweeps_name_the_field(rules, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep_spec(["heuristic", "greedy"], games=10, rules=rules, **kwargs)


def test_a_spec_sweep_field_names_a_rule_key():
    data = {"configurations": [{"players": 2, "bots": ["heuristic", "greedy"]},
                               {"players": 2, "bots": ["heuristic", "greedy"],
                                "rules": {"column_bonus": 3}}],
            "games": 2, "baseline": 0}  # fmt: skip
    assert JobSpec.from_dict({**data, "sweep": ["rules.color_bonus"]}).sweep == (
        "rules.colour_bonus",
    )
    with pytest.raises(ValueError, match=r"sweep\[0\] must be rules.KEY with KEY among"):
        JobSpec.from_dict({**data, "sweep": ["rules.colum_bonus"]})
    # Swept on column_bonus, the two configurations are one group; on row_bonus they differ in
    # an unswept rule: two groups, the second with a value the first lacks.
    assert JobSpec.from_dict({**data, "sweep": ["rules.column_bonus"]}).sweep_groups() == [[0, 1]]
    third = {"players": 2, "bots": ["heuristic", "greedy"],
             "rules": {"column_bonus": 3, "row_bonus": 4}}  # fmt: skip
    data["configurations"].append(third)
    with pytest.raises(ValueError, match="must sweep the same values in the same order"):
        JobSpec.from_dict({**data, "sweep": ["rules.row_bonus"]})
    data["configurations"][2] = data["configurations"][1]
    with pytest.raises(ValueError, match=r"configurations\[2\]: sweep values repeat"):
        JobSpec.from_dict({**data, "sweep": ["rules.column_bonus"]})


LINEUPS = [["heuristic", "greedy"], ["greedy", "random"]]


@pytest.fixture(scope="module")
def grouped():
    spec = sweep_spec(LINEUPS, games=16, seed=3, players=[2, 3], rules="column_bonus=5|7|9",
                      baseline="column_bonus=7")  # fmt: skip
    return spec, run_local(spec, workers=1, chunk_size=5)


def test_line_ups_and_player_counts_are_groups_each_paired_with_its_own_baseline(grouped):
    spec, result = grouped
    assert spec.sweep_groups() == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert spec.sweep_baselines() == [1, 4, 7, 10]
    assert sorted(spec.pairings()) == [(0, 1), (2, 1), (3, 4), (5, 4), (6, 7), (8, 7),
                                       (9, 10), (11, 10)]  # fmt: skip
    assert [c.players for c in spec.configurations] == [2] * 3 + [3] * 3 + [2] * 3 + [3] * 3
    assert spec.configurations[6].bots == ("greedy", "random")
    assert spec.configurations[9].bots == ("greedy", "random", "random")
    vs = {re.match(r"c\d+\|vs\d+", k)[0] for k in result.counters if re.match(r"c\d+\|vs\d+\|", k)}
    assert len(vs) == 4 * 3
    assert vs <= {f"c{i}|vs{j}" for g in spec.sweep_groups() for i in g for j in g if i < j}


def test_each_group_reads_as_the_same_sweep_played_alone(grouped):
    """A group's rows, best value and tests equal those of its line-up and player count swept in
    a job of its own (same seed: the same games)."""
    spec, result = grouped
    doc = result.statistics()
    for g, (lineup, players) in enumerate((x, p) for x in LINEUPS for p in (2, 3)):
        alone = sweep_spec(lineup, games=16, seed=3, players=players, rules="column_bonus=5|7|9",
                           baseline="column_bonus=7")  # fmt: skip
        one = run_local(alone, workers=1).statistics()["sweep"]
        group = doc["sweep"]["groups"][g]
        offset = group["configurations"][0]
        mine = [doc["sweep"]["rows"][k] for k in group["configurations"]]
        for row, solo in zip(mine, one["rows"], strict=True):
            for key in ("values", "games", "wins", "win_rate", "score", "score_diff",
                        "win_rate_diff", "win_rate_diff_ci95", "paired"):  # fmt: skip
                assert row[key] == solo[key], (g, key)
            if row["vs_best"] is not None:
                assert row["vs_best"]["p_holm"] == solo["vs_best"]["p_holm"]
        assert group["best"]["configuration"] - offset == one["best"]["configuration"]
        assert group["players"] == players and group["opponents"] == lineup[1:] * (players - 1)
    assert doc["sweep"]["best"] == doc["sweep"]["groups"][0]["best"]


def test_sweep_cli_rules_table_json_and_report(tmp_path, capsys):
    argv = ["sweep", "--bots", "heuristic,greedy", "--bots", "greedy,random", "--players", "2,3",
            "--rules", "column_bonus=5|7|9", "--baseline", "column_bonus=7", "--games", "16",
            "--seed", "3"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Sweep of heuristic (rules.column_bonus) against greedy at 2 players: 3 values" in text
    assert "Sweep of greedy (rules.column_bonus) against random, random at 3 players" in text
    assert text.count("rules.column_bonus=7 (baseline)") == 4
    assert "(baseline rules: printed)" in text
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"] == ["rules.column_bonus"] and len(out["groups"]) == 4
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(out))
    for ext in ("png", "html"):
        assert main(["report", "--from", str(path), "-o", str(tmp_path / f"s.{ext}")]) == 0
    capsys.readouterr()
    assert main(["sweep", "--bots", "heuristic,greedy", "--rules", "factories=5/7/9|6/7/9",
                 "--games", "4"]) == 0  # fmt: skip
    assert "unpaired: these values' rules deal other games" in capsys.readouterr().out
    # A swept wall deals alike but plays another wall: unpaired too.
    assert main(["sweep", "--bots", "heuristic,greedy", "--rules", "wall=coloured|gray",
                 "--games", "4", "--json"]) == 0  # fmt: skip
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["values"]["rules.wall"], r["paired"]) for r in rows] == [
        ("coloured", True),
        ("gray", False),
    ]


def test_report_draws_a_rule_grid_and_a_categorical_rule(tmp_path):
    from service.report import write_report

    for spec in (
        sweep_spec(["heuristic:floor=0|2", "greedy"], games=4, rules="column_bonus=3|7"),
        sweep_spec(["heuristic", "greedy"], games=4, rules="marker=floor|off|2"),
        sweep_spec(["heuristic", "greedy"], games=4, rules="floor=1/1/2|2/2/2"),
    ):
        doc = run_local(spec, workers=1).statistics()
        assert write_report(doc, tmp_path / "r.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--rules", "column_bonus=45..60/5"],
            "--rules: rules.column_bonus must be a whole number",
        ),
        (["--rules", "colum=3"], "--rules: rules 'colum=3': expected key=value"),
        (["--players", "2,x"], "--players must be 2, 3 or 4, or several"),
        (["--players", "2,5", "--rules", "column_bonus=1|2"], "--players must be 2, 3 or 4"),
    ],
)
def test_sweep_cli_errors_name_the_option_and_field(argv, message, capsys):
    assert main(["sweep", "--bots", "heuristic,greedy", *argv]) == 2
    assert message in capsys.readouterr().err


def test_compare_under_two_rule_sets_paired_where_they_deal_alike(capsys):
    argv = ["compare", "heuristic", "greedy", "--rules", "printed", "--vs-rules",
            "column_bonus=3", "--max-games", "20", "--seed", "2"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "heuristic vs greedy under printed and under column_bonus=3: 20 games under each" in text
    assert "column_bonus=3 minus printed, paired on the same deals and seats (20 games)" in text
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rules"] == ["printed", "column_bonus=3"] and out["paired"] is True
    assert out["statistics"]["spec"]["baseline"] == 0  # the same wall: the baseline pairs them
    assert [u["rules"] for u in out["under"]] == out["rules"]
    assert out["difference"]["games"] == 20
    spec = JobSpec.from_dict(out["spec"])
    assert [RuleSet.of(c, spec).label for c in spec.configurations] == out["rules"]
    assert all(c.seating == "mirrored" for c in spec.configurations)
    # Other tiles per factory deal other games: unpaired, and said so.
    assert main([*argv[:6], "tiles_per_factory=3", *argv[7:], "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paired"] is False and out["difference"] is None
    assert "pairs" not in out["statistics"]["spec"] and "baseline" not in out["statistics"]["spec"]
    assert main([*argv[:6], "tiles_per_factory=3", *argv[7:]]) == 0
    assert "unpaired: printed and tiles_per_factory=3 deal other games" in capsys.readouterr().out


def status(argv) -> int:
    """The exit status of ``azulsim ARGV``: argparse's own usage errors exit (``--rules`` is
    parsed by argparse), the others are returned; both are 2."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--vs-rules", "printed"], "--vs-rules names the rules of --rules (printed)"),
        (["--vs-rules", "row_bonus=3", "--against", "random"], "takes no --against"),
        (["--vs-rules", "tiles_per_factory=3", "--sprt", "-10,10"], "must deal alike"),
        (["--vs-rules", "wall=gray", "--precision", "5"], "and play the same wall"),
        (["--vs-rules", "row_bonus=x"], "--vs-rules: rules.row_bonus must be a whole number"),
        (["--rules", "floor=1/2/x"], "--rules: rules.floor must be whole numbers"),
        (["--rules", "wall=gray", "--wall", "gray"], "give the wall once"),
    ],
)
def test_compare_rule_errors_name_the_option(extra, message, capsys):
    assert status(["compare", "heuristic", "greedy", "--max-games", "20", *extra]) == 2
    assert message in capsys.readouterr().err


def test_compare_against_a_field_under_a_rule_set():
    from service.cli.app import build_parser
    from service.cli.compare import compare_spec

    args = build_parser().parse_args(
        [
            "compare",
            "heuristic",
            "greedy",
            "--against",
            "random",
            "--rules",
            "end_rows=2",
            "--wall",
            "gray",
        ]  # fmt: skip
    )
    spec = compare_spec(args)
    assert [RuleSet.of(c, spec).label for c in spec.configurations] == ["wall=gray,end_rows=2"] * 2
    assert spec.paired_configurations() == [1]


def test_tournament_under_a_rule_set(capsys):
    spec = tournament_spec(
        ["random", "greedy"], games_per_pair=4, rules=RuleSet.parse("row_bonus=4")
    )
    assert {c.rules.label for c in spec.configurations} == {"row_bonus=4"}
    assert spec_from_proto(spec_to_proto(spec)) == spec
    argv = ["tournament", "random", "greedy", "--games-per-pair", "4", "--rules",
            "row_bonus=4,wall=gray"]  # fmt: skip
    assert main(argv) == 0
    assert "comparisons of two seats; rules: wall=gray,row_bonus=4" in capsys.readouterr().out
    assert status(["tournament", "random", "greedy", "--rules", "row_bonus=99"]) == 2
    assert "--rules: rules.row_bonus must be a whole number from 0 to 50" in capsys.readouterr().err


def test_bad_rules_over_the_proto_name_the_field():
    spec = sweep_spec(["heuristic", "greedy"], games=4, rules="column_bonus=3|4")
    msg = spec_to_proto(spec)
    assert msg.configurations[1].rules.column_bonus == 4
    assert msg.configurations[0].rules.column_bonus == 3
    msg.configurations[1].rules.column_bonus = 51
    with pytest.raises(ValueError, match=r"spec.configurations\[1\].rules.column_bonus must be"):
        spec_from_proto(msg)


def test_sweep_frame_has_the_rule_and_each_rows_group(grouped):
    from sim.stats.frames import sweep_rows

    spec, result = grouped
    rows = sweep_rows(result.statistics())
    assert [r["rules.column_bonus"] for r in rows] == [5, 7, 9] * 4
    assert [r["players"] for r in rows] == [2] * 3 + [3] * 3 + [2] * 3 + [3] * 3
    assert rows[9]["opponents"] == "random,random" and rows[0]["group"] == 0


def test_web_sweep_charts_draw_rule_values_and_the_baseline_group():
    from service.web.sections import sweep_charts

    doc = run_local(
        sweep_spec(LINEUPS, games=4, players=[2, 3], rules="marker=floor|off|3"), workers=1
    ).statistics()
    charts = sweep_charts(doc["sweep"])
    assert [c for c, _ in charts][0].startswith("win rate (%) of heuristic by rules.marker")
    svg = str(charts[0][1])
    assert "rules.marker (rule): 0=floor, 1=off, 2=3" in svg


def test_a_configurations_heading_names_its_rule_set():
    from service.report import _configuration_title

    cfg = {"index": 3, "players": 2, "wall": "gray", "seating": "rotate", "games_finished": 8,
           "seat_bots": ["heuristic", "greedy"]}  # fmt: skip
    assert "rules" not in _configuration_title(cfg)  # the printed game's statistics carry none
    titled = _configuration_title({**cfg, "rules": "wall=gray,column_bonus=3"})
    assert "gray wall, rotate seating, rules wall=gray,column_bonus=3 — heuristic" in titled


def test_compare_under_two_rule_sets_stops_on_the_paired_points(capsys):
    argv = ["compare", "heuristic", "greedy", "--vs-rules", "column_bonus=3", "--precision",
            "100", "--check-every", "20", "--max-games", "60", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "precision_reached" and out["games"] == 2 * 20
    spec = out["statistics"]["spec"]
    assert spec["baseline"] == 0 and "pairs" not in spec and spec["stop"]["configuration"] == 1
    assert out["difference"]["games"] == 20
    assert main(argv[:-1]) == 0
    assert "20 games under each (precision reached)" in capsys.readouterr().out
    # Another wall deals alike: paired through pairs, with no stopping rule.
    assert main(["compare", "heuristic", "greedy", "--vs-rules", "wall=gray", "--max-games", "20",
                 "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["paired"] and out["statistics"]["spec"]["pairs"] == [[1, 0]]
    assert out["rules"] == ["printed", "wall=gray"]
