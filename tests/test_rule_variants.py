"""Rule variants (docs/rules.md, "Rule variants"): the reference engine and the compiled engine
under rule sets other than the printed game.

- tests/data/rule_variant_vectors.json: positions worked by hand from docs/rules.md, one or more
  rules changed in each; every vector is played on BOTH engines (the reference from the position,
  the batch engine from the reference's snapshot) and each expected figure is checked on each,
  then the two snapshots against each other.
- Lockstep (tests/test_lockstep.py's `run_lockstep`): random games move by move on both engines
  under rule sets that together change every rule, on both walls and at 2, 3 and 4 players.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim.rules import engine
from sim.rules.constants import END_REASONS
from sim.rules.reference import ReferenceGame
from sim.rules.rulesets import KEYS, RuleSet
from sim.rules.tables import unpack_sources
from tests.test_lockstep import run_lockstep

VECTORS = json.loads(
    (Path(__file__).parent / "data" / "rule_variant_vectors.json").read_text(encoding="utf-8")
)
BY_ID = {v["id"]: v for v in VECTORS}


def _reference(v: dict) -> ReferenceGame:
    rules = RuleSet.parse(v["rules"])
    if "position" not in v:
        return ReferenceGame(
            v["players"], v["wall"], v["seed"], v["game"], v["first_player"], rules=rules
        )
    return ReferenceGame.from_position(v["players"], v["wall"], rules=rules, **v["position"])


def _batch(v: dict, ref: ReferenceGame):
    rules = RuleSet.parse(v["rules"])
    if "position" not in v:
        return engine.new_games(
            v["players"], v["wall"], v["seed"], [v["game"]], [v["first_player"]], rule_set=rules
        )
    snap = dict(ref.snapshot(), start_player=ref.start_player)
    return engine.from_snapshots(
        v["players"], v["wall"], ref.seed, [ref.game], [snap], rule_set=rules
    )


def _seen_reference(g: ReferenceGame) -> dict:
    s = g.snapshot()
    return {
        "scores": s["scores"],
        "floor": s["floor"],
        "floor_penalty": list(g.floor_penalty),
        "bonus": list(g.bonus),
        "current": s["current"],
        "done": s["done"],
        "end_reason": s["end_reason"],
        "round": s["round"],
        "marker_in_centre": s["marker_in_centre"],
        "marker_holder": s["marker_holder"],
        "marker_takes": list(g.marker_takes),
        "factory_tiles": [sum(f) for f in s["factories"]],
        "bag_total": sum(s["bag"]),
        "lid_total": sum(s["lid"]),
        "actions": g.n_actions,
    }


def _seen_batch(st) -> dict:
    s = engine.snapshot(st, 0)
    return {
        "scores": s["scores"],
        "floor": s["floor"],
        "floor_penalty": st.floor_penalty[:, 0].tolist(),
        "bonus": st.bonus[:, 0].tolist(),
        "current": s["current"],
        "done": s["done"],
        "end_reason": END_REASONS[st.end_reason[0]] if st.done[0] else None,
        "round": s["round"],
        "marker_in_centre": s["marker_in_centre"],
        "marker_holder": s["marker_holder"],
        "marker_takes": st.marker_takes[:, 0].tolist(),
        "factory_tiles": [
            int(unpack_sources(st.sources[1 + f, 0]).sum()) for f in range(st.factories)
        ],
        "bag_total": sum(s["bag"]),
        "lid_total": sum(s["lid"]),
        "actions": engine.action_count(st),
    }


def test_vectors_change_every_rule():
    changed = set()
    for v in VECTORS:
        changed |= set(RuleSet.parse(v["rules"]).changed())
    assert changed == set(KEYS) - {"wall", "max_rounds"}


@pytest.mark.parametrize("vid", list(BY_ID))
def test_rule_variant_vector(vid):
    v = BY_ID[vid]
    ref = _reference(v)
    st = _batch(v, ref)
    for action in v["actions"] if "actions" in v else []:
        ref.step(action)
        engine.step(st, np.array([action]))
    for engine_name, seen in (("reference", _seen_reference(ref)), ("compiled", _seen_batch(st))):
        for key, want in v["expected"].items():
            assert seen[key] == want, f"{vid}: {engine_name} {key} is {seen[key]}, not {want}"
    assert engine.snapshot(st, 0) == ref.snapshot()


# Rule sets whose changes together cover every rule, each with a player count and a wall (both
# walls, 2-4 players); `test_lockstep_rule_sets_cover_every_rule` checks the cover.
LOCKSTEP = [
    (2, "coloured", "row_bonus=5,column_bonus=3,colour_bonus=20,floor=2/3/4,marker=off,end_rows=2"),
    (3, "gray", "factories=5/6/9,tiles_per_factory=3,tiles_per_colour=16,marker=3,floor=1/1/1/1/1"),
    (4, "coloured", "factories=5/7/8,tiles_per_factory=5,tiles_per_colour=30,marker=2,end_rows=3"),
    (
        3,
        "coloured",
        "factories=6/6/6,tiles_per_factory=10,tiles_per_colour=50,"
        "floor=0/0/0/0/0/0/20,row_bonus=0,column_bonus=50",
    ),
    (4, "gray", "tiles_per_factory=1,marker=0,end_rows=5,max_rounds=12"),
    (2, "gray", "floor=5,marker=off,tiles_per_factory=2,factories=9/7/9,tiles_per_colour=9"),
]
LOCKSTEP_GAMES = 80


def test_lockstep_rule_sets_cover_every_rule():
    changed = set()
    for players, _wall, text in LOCKSTEP:
        rules = RuleSet.parse(text)
        changed |= set(rules.changed())
        if rules.factories != RuleSet().factories:
            assert rules.factories_at(players) != RuleSet().factories_at(players), text
    assert changed == set(KEYS) - {"wall"}
    assert {wall for _, wall, _ in LOCKSTEP} == {"coloured", "gray"}
    assert {players for players, _, _ in LOCKSTEP} == {2, 3, 4}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("players, wall, text", LOCKSTEP)
def test_lockstep_rule_set(players, wall, text):
    rules = RuleSet.parse(text)
    counts = run_lockstep(
        players, wall, 4242 + players, LOCKSTEP_GAMES, min(rules.max_rounds, 30), rules
    )
    assert sum(counts.values()) == LOCKSTEP_GAMES


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_configuration_plays_its_rules(wall, monkeypatch):
    """A configuration's games play its rule set through the play layer
    (`sim.jobs.play.play_games`), compiled whole or stepped, the same games either way."""
    from sim.jobs import self_play
    from sim.jobs.play import play_games
    from sim.jobs.spec import Configuration

    rules = RuleSet.parse("column_bonus=5,colour_bonus=1,marker=off,tiles_per_factory=3")
    config = Configuration(2, ["random", "greedy"], wall=wall, rules=rules)
    whole = play_games(config, 31, 0, 120)
    monkeypatch.setattr(self_play, "MIN_GAMES", float("inf"))
    stepped = play_games(config, 31, 0, 120)
    for name in ("scores", "turns", "rounds", "bonus", "floor_penalty", "end_reason"):
        assert np.array_equal(getattr(whole, name), getattr(stepped, name)), name
    assert not whole.marker_takes.any()  # no marker
    expected = 2 * whole.complete_rows + 5 * whole.complete_cols + whole.complete_colours
    assert np.array_equal(whole.bonus, expected)
    printed = play_games(Configuration(2, ["random", "greedy"], wall=wall), 31, 0, 120)
    assert printed.marker_takes.any() and not np.array_equal(printed.turns, whole.turns)
