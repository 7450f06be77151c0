"""Restricted bots (`sim.bots.restricted`): the forbidden element is never used, the spec grammar
is the registry's, and a restricted bot plays in a job like any bot."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sim.bots.registry import parse_bot_spec
from sim.jobs.play import Recorder, play_table, set_table
from sim.jobs.spec import Configuration, JobSpec
from sim.rules import engine


class Checker(Recorder):
    """Counts the picks of the restricted bot (bots[0]) and of the others that use an element."""

    def __init__(self, table):
        self.table = table
        self.row = {int(g): i for i, g in enumerate(table.games)}
        self.seen = Counter()

    def picking(self, st, slots, actions):
        mask = engine.legal_mask(st)
        for b, a in zip(slots, actions, strict=True):
            i = self.row[int(st.game[b])]
            seat = int(st.current[b])
            who = "restricted" if self.table.seat_bot[i, seat] == 0 else "free"
            source, dest = a // 30, a % 6
            self.seen[who, "picks"] += 1
            factories = bool(st.sources[1:, b].any())
            if st.marker_in_centre[b] and factories and source == 0:
                self.seen[who, "marker"] += 1
            if dest == 4:
                self.seen[who, "five"] += 1
            lines = mask[b].reshape(-1, 5, 6)[:, :, :5].any()
            if dest == 5 and lines:
                self.seen[who, "floor"] += 1


def play_checked(never: str, wall: str, players: int = 2, games: int = 40, inner="heuristic"):
    bots = (f"restricted:bot={inner},never={never}",) + (inner,) * (players - 1)
    config = Configuration(players, bots, wall=wall)
    table = set_table(config, 77, np.arange(games))
    checker = Checker(table)
    rec = play_table(table, 100, recorder=checker)
    return rec, table, checker.seen


@pytest.mark.parametrize("wall", ["coloured", "gray"])
@pytest.mark.parametrize("never", ["marker", "floor", "five"])
@pytest.mark.parametrize("inner", ["heuristic", "random"])
def test_the_forbidden_pick_is_never_played(never, wall, inner):
    rec, _table, seen = play_checked(never, wall, inner=inner)
    assert seen["restricted", "picks"] > 500
    assert seen["restricted", never] == 0
    # The check can fail: the unrestricted bot uses the element (the heuristic never floors a
    # pick that a line could take, so only random is asked that).
    if never != "floor" or inner == "random":
        assert seen["free", never] > 0


@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_never_bonus_completes_no_colour_and_on_the_coloured_wall_no_column(wall):
    rec, table, _seen = play_checked("bonus", wall, players=3, games=60)
    restricted = table.seat_bot == 0
    assert rec.complete_colours[restricted].sum() == 0
    if wall == "coloured":
        assert rec.complete_cols[restricted].sum() == 0
    free = ~restricted
    assert rec.complete_cols[free].sum() + rec.complete_colours[free].sum() > 0


def test_the_restriction_costs_the_five_tile_line_games():
    rec, table, _seen = play_checked("five", "coloured", games=80)
    restricted = table.seat_bot == 0
    wins = rec.winners[restricted].sum()
    assert wins < 0.4 * len(rec)  # a large loss: the five-tile line matters


def test_spec_grammar_labels_and_errors():
    assert parse_bot_spec("restricted").label == "restricted"
    spec = parse_bot_spec("restricted:never=five,bot=heuristic:centre=0.5;floor=2.5")
    assert spec.label == "restricted:bot=heuristic:centre=0.5;floor=2.5,never=five"
    assert parse_bot_spec(spec.label).label == spec.label  # a label is a spec of the same bot
    with pytest.raises(ValueError, match="as 'heuristic:centre=0.5;floor=2.5'"):
        parse_bot_spec("restricted:bot=heuristic:floor=2.5;centre=0.5")
    with pytest.raises(ValueError, match="parameter 'never' must be one of"):
        parse_bot_spec("restricted:never=walls")
    with pytest.raises(ValueError, match="unknown bot"):
        parse_bot_spec("restricted:bot=nosuchbot")
    with pytest.raises(ValueError, match="must not be restricted itself"):
        parse_bot_spec("restricted:bot=restricted")
    with pytest.raises(ValueError, match="canonically, as 'heuristic:floor=2.5'"):
        parse_bot_spec("restricted:bot=heuristic:floor=2.50")


def test_a_restricted_bot_plays_in_any_configuration():
    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"bots": ["restricted:bot=greedy,never=floor", "random", "greedy"]},
                {"bots": ["restricted:bot=random,never=marker", "greedy"], "wall": "gray"},
            ],
            "games": 12,
            "ratings": {"anchor": "greedy"},
        }
    )
    from sim.jobs.local import run_local

    doc = run_local(spec, workers=1).statistics()
    assert doc["configurations"][0]["bots"]["restricted:bot=greedy,never=floor"]["player_games"]
    assert "restricted:bot=random" in {r["bot"] for r in doc["ratings"]["bots"]}
