"""The reference engine against docs/rules.md, rule by rule (§3-§10, the §15 decisions, §11.2
vectors).

Positions are built with `ReferenceGame.from_position`; a round is ended by giving the seat to move
the last tile(s) on the table.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.rules import rng
from sim.rules.actions import CENTRE, FLOOR, encode, n_actions
from sim.rules.constants import FLOOR_CUM, wall_colour
from sim.rules.reference import MARKER, ReferenceGame, placement_points
from tests.test_properties import tiles_per_colour
from tests.twin import mirror_steps  # noqa: F401  (fixture)

B, Y, R, K, W = range(5)
E = -1  # empty wall cell

# Every step of these tests is also played on the batch engine and compared (tests/twin.py).
pytestmark = pytest.mark.usefixtures("mirror_steps")


def pos(players=2, wall="coloured", **kw) -> ReferenceGame:
    return ReferenceGame.from_position(players, wall, **kw)


def tiles(**counts) -> list[int]:
    """tiles(B=2, R=1) -> [2, 0, 1, 0, 0]."""
    return [counts.get(letter, 0) for letter in "BYRKW"]


def empty_lines() -> list[list[int]]:
    return [[-1, 0] for _ in range(5)]


def coloured_wall(cells) -> list[list[int]]:
    """Coloured wall with tiles at `cells` (their colour follows §2.3)."""
    w = [[E] * 5 for _ in range(5)]
    for r, c in cells:
        w[r][c] = wall_colour(r, c)
    return w


def conserved(g: ReferenceGame) -> bool:
    return tiles_per_colour(g.snapshot()) == [20] * 5


# ------------------------------------------------------------------------------- §3 setup


@pytest.mark.parametrize("players, factories", [(2, 5), (3, 7), (4, 9)])
@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_setup(players, factories, wall):
    g = ReferenceGame(players, wall, seed=11, game=3, first_player=players - 1)
    s = g.snapshot()
    assert len(s["factories"]) == factories  # §3.2
    assert all(sum(f) == 4 for f in s["factories"])  # §3.6
    assert sum(s["bag"]) == 100 - 4 * factories and s["lid"] == [0] * 5  # §3.3
    assert s["scores"] == [0] * players
    assert s["marker_in_centre"] and s["marker_holder"] == -1  # §3.7
    assert s["current"] == players - 1 and s["round"] == 1 and s["turn"] == 0  # §3.5
    assert s["centre"] == [0] * 5 and s["floor"] == [0] * players
    assert g.n_actions == n_actions(players)
    assert conserved(g)


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(players=5), "players must be 2, 3 or 4"),
        (dict(players=1), "players must be 2, 3 or 4"),
        (dict(wall="grey"), "wall must be"),
        (dict(first_player=2), "first_player"),
        (dict(max_rounds=0), "max_rounds"),
    ],
)
def test_setup_rejects_bad_parameters(kw, msg):
    args = dict(players=2, wall="coloured", seed=0, game=0, first_player=0) | kw
    with pytest.raises(ValueError, match=msg):
        ReferenceGame(**args)


def _expected_deal(seed, game, r, bag, lid, n_factories):
    """Independent transcription of the fixed dealing procedure, with scalar_uniform32."""
    bag, lid = list(bag), list(lid)
    factories = [[0] * 5 for _ in range(n_factories)]
    for i in range(n_factories):
        for j in range(4):
            if sum(bag) == 0:
                bag, lid = [a + b for a, b in zip(bag, lid, strict=True)], [0] * 5
            if sum(bag) == 0:
                return factories, bag, lid
            u = rng.scalar_uniform32(seed, game, rng.DEAL, r * 64 + i * 4 + j)
            idx = (u * sum(bag)) >> 32
            c = next(c for c in range(5) if sum(bag[: c + 1]) > idx)
            bag[c] -= 1
            factories[i][c] += 1
    return factories, bag, lid


@pytest.mark.parametrize("players", [2, 3, 4])
def test_round_one_deal_is_the_fixed_procedure(players):
    for game in range(5):
        g = ReferenceGame(players, "coloured", seed=99, game=game, first_player=0)
        f, bag, _ = _expected_deal(99, game, 1, [20] * 5, [0] * 5, 2 * players + 1)
        assert g.factories == f and g.bag == bag


# ------------------------------------------------------------------------ §4 turn order


def test_turns_go_clockwise_and_count():
    g = ReferenceGame(4, "coloured", seed=1, game=0, first_player=2)
    seats = []
    for _ in range(6):
        seats.append(g.current)
        g.step(g.legal_actions()[-1])  # the floor action of the last source: never ends round 1
    assert seats == [2, 3, 0, 1, 2, 3]  # §4.2
    assert g.turn == 6 and g.round == 1


# ------------------------------------------------------------------------- §5 factory offer


def test_factory_pick_moves_leftovers_to_centre():
    g = pos(factories=[tiles(B=2, R=1, W=1), tiles(Y=4)], centre=tiles(K=1))
    g.step(encode(1, B, 1))  # factory 0: blue -> line 1 (capacity 2)
    assert g.factories[0] == [0] * 5  # §5.1: the factory is empty
    assert g.centre == tiles(R=1, W=1, K=1)
    assert g.lines[0][1] == [B, 2]
    assert g.marker_in_centre and g.current == 1 and conserved(g)


def test_centre_pick_leaves_other_colours_and_takes_marker():
    g = pos(factories=[tiles(Y=4)], centre=tiles(B=2, R=3))
    g.step(encode(CENTRE, R, 2))
    assert g.centre == tiles(B=2)  # §5.1: other colours stay
    assert g.lines[0][2] == [R, 3]
    assert not g.marker_in_centre and g.marker_holder == 0  # §5.4
    assert g.floor[0] == [MARKER] and g.snapshot()["floor"] == [1, 0]
    assert g.marker_takes == [1, 0]
    # Only the first centre pick takes it.
    g.step(encode(CENTRE, B, FLOOR))
    assert g.marker_holder == 0 and g.floor[1] == [B, B] and g.marker_takes == [1, 0]


def test_marker_alone_is_not_a_source():
    g = pos(factories=[tiles(Y=4)], centre=[0] * 5, marker_in_centre=True)
    assert all(a // 30 == 1 for a in g.legal_actions())  # §5.1: only factory 0
    with pytest.raises(ValueError, match="centre holds no tile"):
        g.step(encode(CENTRE, Y, FLOOR))


def test_andrea_legality_vector():
    # §11.2 RB-andrea-legality.
    lines = [empty_lines(), empty_lines()]
    lines[0][3] = [B, 1]
    g = pos(
        factories=[tiles(Y=2, K=2)],
        walls=[coloured_wall([(1, 2), (2, 3)]), coloured_wall([])],
        lines=lines,
    )
    legal = {a % 6 for a in g.legal_actions() if a // 6 == 1 * 5 + Y}
    assert legal == {0, 4, FLOOR}
    for dest in (1, 2, 3):
        with pytest.raises(ValueError, match="illegal"):
            g.step(encode(1, Y, dest))
    g0 = pos(factories=[tiles(Y=2, K=2)], walls=g.wall, lines=lines)
    g0.step(encode(1, Y, 0))  # line 0 takes 1, the excess falls
    assert g0.lines[0][0] == [Y, 1] and g0.floor[0] == [Y]
    g4 = pos(factories=[tiles(Y=2, K=2)], walls=g.wall, lines=lines)
    g4.step(encode(1, Y, 4))
    assert g4.lines[0][4] == [Y, 2] and g4.floor[0] == []
    gf = pos(factories=[tiles(Y=2, K=2)], walls=g.wall, lines=lines)
    gf.step(encode(1, Y, FLOOR))
    assert gf.floor[0] == [Y, Y] and gf.lines[0] == lines[0]


def test_full_line_is_not_a_target():
    # §5.2.1
    lines = [empty_lines(), empty_lines()]
    lines[0][1] = [R, 2]
    g = pos(factories=[tiles(R=1, B=3)], lines=lines)
    assert encode(1, R, 1) not in g.legal_actions()
    with pytest.raises(ValueError, match="pattern line is full"):
        g.step(encode(1, R, 1))


def test_line_of_other_colour_and_wall_row_block():
    # §5.2 (a) and (c)
    lines = [empty_lines(), empty_lines()]
    lines[0][2] = [B, 1]
    g = pos(factories=[tiles(R=2, B=2)], lines=lines, walls=[coloured_wall([(3, 0)]), None])
    assert encode(1, R, 2) not in g.legal_actions()  # line 2 holds blue
    assert encode(1, R, 3) not in g.legal_actions()  # (3,0) is red on the coloured wall
    with pytest.raises(ValueError, match="holds another colour"):
        g.step(encode(1, R, 2))
    with pytest.raises(ValueError, match="wall row already holds"):
        g.step(encode(1, R, 3))
    assert encode(1, B, 2) in g.legal_actions()  # same colour: adds to the line


def test_excess_goes_to_floor_no_partial_flooring():
    # §5.2.2: as many as fit go to the line, only the excess falls
    g = pos(factories=[tiles(K=4), tiles(B=4)])
    g.step(encode(1, K, 1))
    assert g.lines[0][1] == [K, 2] and g.floor[0] == [K, K]


def test_floor_always_legal_and_same_colour_in_several_lines():
    lines = [empty_lines(), empty_lines()]
    lines[0][4] = [W, 1]
    g = pos(factories=[tiles(W=3, B=1)], lines=lines)
    legal = g.legal_actions()
    assert encode(1, W, FLOOR) in legal  # §5.2.4 even though lines are legal
    assert {encode(1, W, r) for r in range(5)} <= set(legal)  # §5.2.5
    g.step(encode(1, W, 2))
    assert g.lines[0][2] == [W, 3] and g.lines[0][4] == [W, 1]


def test_no_legal_line_leaves_only_the_floor():
    # §10.1: blue is in every wall row
    g = pos(factories=[tiles(B=3, Y=1)], walls=[coloured_wall([(r, r) for r in range(5)]), None])
    assert [a % 6 for a in g.legal_actions() if a // 6 == 1 * 5 + B] == [FLOOR]


def test_floor_overflow_goes_to_lid_at_once():
    # §5.3.1 / §5.3.2
    g = pos(factories=[tiles(R=4), tiles(K=4)], floor=[[B] * 5, []])
    g.step(encode(1, R, FLOOR))
    assert g.floor[0] == [B] * 5 + [R, R]
    assert g.lid == tiles(R=2)  # internally in the lid already
    s = g.snapshot()
    assert s["floor"] == [7, 0] and s["lid"] == tiles(R=4, B=5)  # canonical lid counts floors
    assert conserved(g)


def test_marker_goes_before_the_tiles():
    # §5.4.1: 6 objects on the floor, the marker takes slot 7, both tiles overflow
    g = pos(factories=[tiles(Y=4)], centre=tiles(K=2), floor=[[B] * 6, []])
    g.step(encode(CENTRE, K, FLOOR))
    assert g.floor[0] == [B] * 6 + [MARKER]
    assert g.lid == tiles(K=2)


def test_marker_with_full_floor():
    # §5.6 / F14: still taken, no slot, no extra penalty, not in the lid, starts next round
    g = pos(
        factories=[tiles(Y=1)],
        centre=tiles(R=2),
        floor=[[], [B] * 7],
        current=1,
        start_player=0,
        scores=[0, 30],
    )
    g.step(encode(CENTRE, R, FLOOR))
    assert g.marker_holder == 1 and g.marker_takes == [0, 1] and not g.marker_in_centre
    assert g.floor[1] == [B] * 7 and g.lid == tiles(R=2)  # the marker took no slot
    g.step(encode(1, Y, 0))  # seat 0 takes the last tile: the round ends
    assert g.snapshot()["floor"] == [0, 0]
    assert g.scores == [1, 30 - 14]  # seat 0 tiled its yellow
    assert g.floor_penalty == [0, 14]
    assert g.round == 2 and g.current == 1 and g.start_player == 1  # holder starts
    assert g.marker_in_centre and g.marker_holder == -1
    assert conserved(g)


def test_first_turns_marker_vector():
    # §11.2 RB-first-turns-marker: Peter 0, Martin 1, Andrea 2.
    g = pos(
        3,
        factories=[tiles(K=2, B=1, W=1), tiles(Y=1, R=3), tiles(B=4)],
        current=0,
    )
    g.step(encode(1, K, 1))  # Peter: 2 black; leftovers blue + white to the centre
    g.step(encode(2, Y, 0))  # Martin: 1 yellow; 3 red to the centre
    assert g.centre == tiles(B=1, W=1, R=3)
    g.step(encode(CENTRE, R, 2))  # Andrea: 3 red from the centre, first from it this round
    assert g.marker_holder == 2
    assert g.snapshot()["floor"] == [0, 0, 1] and g.floor[2] == [MARKER]
    assert g.centre == tiles(B=1, W=1)


def test_illegal_actions_raise():
    g = pos(factories=[tiles(B=4)])
    for bad, msg in [
        (-1, "out of range"),
        (n_actions(2), "out of range"),
        (encode(2, B, FLOOR), "factory 1 holds no tile"),
        (1.0, "must be an int"),
        (True, "must be an int"),
    ]:
        with pytest.raises(ValueError, match=msg):
            g.step(bad)
    assert g.turn == 0 and g.factories[0] == tiles(B=4)  # nothing changed
    g.step(np.int64(encode(1, B, FLOOR)))  # numpy ints are accepted


# ------------------------------------------------------------------------ §6 wall tiling


def test_peter_discards_vector():
    # §11.2 RB-peter-discards: lines 2 and 4 full, 3 and 5 incomplete.
    lines = [[[-1, 0], [R, 2], [K, 2], [B, 4], [Y, 3]], empty_lines()]
    g = pos(lines=lines, centre=tiles(W=1), marker_in_centre=False, marker_holder=1, current=1)
    g.floor = [[], [MARKER]]
    g.step(encode(CENTRE, W, FLOOR))  # seat 1 takes the last tile: the round ends
    assert g.wall[0] == coloured_wall([(1, 3), (3, 3)])
    assert g.scores[0] == 1 + 1
    assert g.lines[0] == [[-1, 0], [-1, 0], [K, 2], [-1, 0], [Y, 3]]
    # 1 red + 3 blue to the lid (before the next deal poured nothing: the bag was not empty)
    assert g.snapshot()["lid"] == tiles(R=1, B=3, W=1)


def test_tiling_is_top_to_bottom():
    # §6.1.1 (P16): (1,2) then (2,2) next to (3,2) gives 1 + 3 = 4; bottom-up would give 2 + 3.
    lines = [empty_lines(), empty_lines()]
    lines[0][1] = [wall_colour(1, 2), 2]
    lines[0][2] = [wall_colour(2, 2), 3]
    g = pos(lines=lines, walls=[coloured_wall([(3, 2)]), None], centre=tiles(K=1))
    g.step(encode(CENTRE, K, FLOOR))  # marker + 1 tile: penalty 2
    assert g.scores[0] == max(0, 4 - 2)
    g2 = pos(lines=lines, walls=[coloured_wall([(3, 2)]), None], centre=tiles(K=1), scores=[10, 0])
    g2.step(encode(CENTRE, K, FLOOR))
    assert g2.scores[0] == 10 + 4 - 2


def test_penalty_after_placements_then_clamp():
    # §6.3.1 (F12): 0 + 5 - 4 = 1, not max(0, 0 - 4) + 5 = 5
    lines = [empty_lines(), empty_lines()]
    lines[0][2] = [wall_colour(2, 2), 3]
    g = pos(
        lines=lines,
        walls=[coloured_wall([(2, 0), (2, 1), (2, 3)]), None],
        centre=tiles(W=1),
        floor=[[K, K], []],
    )
    g.step(encode(CENTRE, W, FLOOR))  # marker + white: 4 objects, penalty 6
    occupied = [[c >= 0 for c in row] for row in coloured_wall([(2, 0), (2, 1), (2, 3)])]
    assert placement_points(occupied, 2, 2) == 4
    assert g.scores[0] == max(0, 0 + 4 - 6) == 0
    g = pos(
        lines=lines,
        walls=[coloured_wall([(2, 0), (2, 1), (2, 3)]), None],
        centre=tiles(W=1),
        floor=[[K], []],
    )
    g.step(encode(CENTRE, W, FLOOR))  # 3 objects, penalty 4: 0 + 4 - 4 = 0 ... and with 5 pts:
    assert g.scores[0] == 0
    g = pos(
        lines=lines,
        walls=[coloured_wall([(2, 0), (2, 1), (2, 3), (1, 2)]), None],
        centre=tiles(W=1),
        floor=[[K], []],
    )
    g.step(encode(CENTRE, W, FLOOR))  # placement 4 + 2 = 6, penalty 4
    assert g.scores[0] == 2


def test_cleanup_sends_floor_tiles_to_lid_and_keeps_marker_out():
    g = pos(centre=tiles(Y=3), floor=[[], [R, R]])
    g.step(encode(CENTRE, Y, FLOOR))
    assert g.floor == [[], []]
    assert g.lid == tiles(Y=3, R=2)  # the marker is not a tile
    assert g.floor_penalty == [FLOOR_CUM[4], FLOOR_CUM[2]]
    assert conserved(g)


# ------------------------------------------------------------------------ §7 next round


def test_refill_from_lid_at_the_exact_draw():
    # §7.2.1: the bag's 3 blues are drawn first, then the lid (only red) is poured in.
    g = pos(centre=tiles(K=1), bag=tiles(B=3), lid=tiles(R=40))
    g.step(encode(CENTRE, K, 0))  # into line 0: tiled, nothing else reaches the lid
    assert g.factories[0] == tiles(B=3, R=1)
    assert all(f == tiles(R=4) for f in g.factories[1:])
    assert g.bag == tiles(R=40 - 17) and g.lid == [0] * 5


def test_refill_matches_fixed_procedure_with_mixed_lid():
    bag, lid = tiles(B=2, W=1), tiles(Y=5, R=6, K=7, B=3)
    g = pos(3, centre=tiles(W=1), bag=bag, lid=lid, seed=5, game=8)
    g.step(encode(CENTRE, W, FLOOR))
    lid_at_deal = [a + b for a, b in zip(lid, tiles(W=1), strict=True)]
    f, bag_after, lid_after = _expected_deal(5, 8, 2, bag, lid_at_deal, 7)
    assert g.factories == f and g.bag == bag_after and g.lid == lid_after
    assert g.round == 2


def test_partial_fill_plays_the_round():
    # §7.3: 4 players, only 10 tiles left in bag + lid
    g = pos(4, centre=tiles(B=1), bag=tiles(Y=3, R=2), lid=tiles(K=4))  # + the blue at cleanup
    g.step(encode(CENTRE, B, FLOOR))
    assert [sum(f) for f in g.factories] == [4, 4, 2, 0, 0, 0, 0, 0, 0]
    assert not g.done and g.round == 2 and g.bag == [0] * 5 and g.lid == [0] * 5
    assert all(a // 30 in (1, 2, 3) for a in g.legal_actions())


def _locked_up_position(**kw) -> ReferenceGame:
    """4 players, all 100 tiles on walls and pattern lines after one last pick (§10.5)."""
    walls, lines = [], []
    for p in range(4):  # row r lacks column (p + r) % 5, i.e. colour p: 20 tiles, no full row
        walls.append(
            [[E if c == (p + r) % 5 else wall_colour(r, c) for c in range(5)] for r in range(5)]
        )
        ls = empty_lines()
        if p < 4:
            ls[4] = [p, 4]  # colour p: 15 on walls of the others... plus 5 here
            ls[1] = [p, 1]
        lines.append(ls)
    # Colours 0..3 now have 15 + 5 = 20; white has 20 on walls.  Seat 0's line 1 is given by the
    # last pick instead, so take that tile back to the centre.
    lines[0][1] = [-1, 0]
    return pos(4, walls=walls, lines=lines, centre=tiles(B=1), bag=[0] * 5, lid=[0] * 5, **kw)


def test_no_tiles_ends_the_game():
    g = _locked_up_position(round=7, current=0, start_player=3)
    assert conserved(g)
    g.step(encode(CENTRE, B, 1))
    assert g.done and g.end_reason == "no_tiles"  # §10.5
    s = g.snapshot()
    assert s["round"] == 7 and s["factories"] == [[0] * 5] * 9 and s["done"]
    assert s["current"] == 0  # seat 0 took the marker, it would start next
    rec = g.record()
    assert rec["truncated"] and not rec["terminated"] and rec["winners"] == []  # §10.7
    assert rec["rounds"] == 7 and rec["turns"] == 1
    assert rec["complete_colours"] == [4, 4, 4, 4] and rec["bonus"] == [40] * 4
    assert rec["scores"] == [0, 0, 0, 0]  # no bonuses on a truncated game (0 - 1 clamps to 0)
    assert rec["provisional_winners"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="game is over"):
        g.step(0)
    assert g.legal_actions() == []


def test_round_cap():
    # §10.6: floor-only play never completes a row; stop after round max_rounds, no deal after.
    g = ReferenceGame(2, "coloured", seed=3, game=1, first_player=1, max_rounds=2)
    rounds_seen = set()
    while not g.done:
        rounds_seen.add(g.round)
        bag_before_end = list(g.bag)
        g.step([a for a in g.legal_actions() if a % 6 == FLOOR][0])
    assert rounds_seen == {1, 2}
    assert g.end_reason == "round_cap" and g.round == 2
    assert g.bag == bag_before_end  # nothing was drawn for round 3 (§7.1)
    assert g.factories == [[0] * 5] * 5
    rec = g.record()
    assert rec["truncated"] and rec["winners"] == [] and rec["rounds"] == 2
    assert rec["scores"] == [0, 0] and sum(rec["floor_penalty"]) > 0


def test_marker_untaken_previous_start_player_starts_again():
    # §10.4: no tile ever reached the centre
    g = pos(3, factories=[tiles(B=4)], current=2, start_player=1, marker_in_centre=True)
    g.step(encode(1, B, 3))
    assert g.round == 2 and g.current == 1 and g.start_player == 1
    assert g.marker_in_centre and g.marker_takes == [0, 0, 0]
    assert g.floor_penalty == [0, 0, 0]


def test_marker_holder_starts_and_marker_returns_to_centre():
    g = pos(3, centre=tiles(B=1), current=2, start_player=0)
    g.step(encode(CENTRE, B, 0))
    assert g.round == 2 and g.current == 2 and g.start_player == 2  # §5.4
    assert g.marker_in_centre and g.marker_holder == -1  # §7.4
    assert sum(map(sum, g.factories)) == 28 and g.centre == [0] * 5


# ------------------------------------------------------------------------ §8 end of game


def _row_wall(row, missing_col, extra=()):
    return coloured_wall([(row, c) for c in range(5) if c != missing_col] + list(extra))


def test_game_ends_after_tiling_with_bonus_after_clamp():
    # §8.1, §8.2.1 (F19): 4-tile row completed (5 points), floor 7 (-14): clamp to 0, then +2.
    lines = [empty_lines(), empty_lines()]
    lines[0][0] = [wall_colour(0, 4), 1]
    g = pos(
        lines=lines,
        walls=[_row_wall(0, 4), None],
        centre=tiles(R=1),
        floor=[[K] * 6, []],
        scores=[3, 7],
    )
    bag = list(g.bag)
    g.step(encode(CENTRE, R, FLOOR))
    assert g.done and g.end_reason == "row_completed"
    assert g.scores == [0 + 2, 7]
    assert g.bag == bag  # no refill after the end (§7.1)
    s = g.snapshot()
    assert s["floor"] == [0, 0] and s["lines"][0][0] == [-1, 0] and s["round"] == 1
    assert s["current"] == 0 and s["marker_holder"] == 0 and not s["marker_in_centre"]
    rec = g.record()
    assert rec["terminated"] and rec["winners"] == [1] and rec["bonus"] == [2, 0]
    assert rec["complete_rows"] == [1, 0] and rec["floor_penalty"] == [14, 0]


def test_complete_column_does_not_end_the_game():
    lines = [empty_lines(), empty_lines()]
    lines[0][4] = [wall_colour(4, 0), 5]
    g = pos(
        lines=lines,
        walls=[coloured_wall([(r, 0) for r in range(4)]), None],
        centre=tiles(R=1),
        current=1,
    )
    g.step(encode(CENTRE, R, FLOOR))
    assert not g.done and g.round == 2 and g.scores[0] == 5
    assert g.complete_cols() == [1, 0] and g.bonus == [7, 0]


def test_several_players_complete_rows_and_tie_break():
    # §8.4 + §8.3: both complete a row in the same round; tied on score, seat 1 has two rows.
    lines = [empty_lines(), empty_lines()]
    lines[0][2] = [wall_colour(2, 4), 3]
    lines[1][2] = [wall_colour(2, 4), 3]
    w1 = _row_wall(2, 4, extra=[(0, c) for c in range(5)])
    g = pos(lines=lines, walls=[_row_wall(2, 4), w1], centre=tiles(K=1), current=1, scores=[10, 10])
    g.step(encode(CENTRE, K, FLOOR))  # seat 1 pays 2 for marker + black
    assert g.done and g.end_reason == "row_completed"
    assert g.scores == [10 + 5 + 2, 10 + 5 - 2 + 2 * 2]  # (2,4): H = 5, V = 1 for both
    rec = g.record()
    assert rec["complete_rows"] == [1, 2] and rec["bonus"] == [2, 4]
    assert rec["winners"] == [1] == rec["provisional_winners"]


def test_tie_is_shared_when_rows_equal():
    lines = [empty_lines(), empty_lines()]
    for p in range(2):
        lines[p][2] = [wall_colour(2, 4), 3]
    g = pos(
        lines=lines,
        walls=[_row_wall(2, 4), _row_wall(2, 4)],
        centre=tiles(K=1),
        floor=[[], [MARKER]],
        marker_in_centre=False,
        marker_holder=1,
        scores=[6, 7],
    )
    g.step(encode(CENTRE, K, FLOOR))  # seat 0 pays 1 for the black, seat 1 pays 1 for the marker
    assert g.scores == [6 + 5 - 1 + 2, 7 + 5 - 1 + 2]
    g = pos(
        lines=lines,
        walls=[_row_wall(2, 4), _row_wall(2, 4)],
        centre=tiles(K=1),
        floor=[[], [MARKER]],
        marker_in_centre=False,
        marker_holder=1,
        scores=[6, 6],
    )
    g.step(encode(CENTRE, K, FLOOR))
    assert g.scores[0] == g.scores[1] and g.record()["winners"] == [0, 1]


# ------------------------------------------------------------------------ §9 gray wall


def gray_wall(rows: list[str]) -> list[list[int]]:
    return [[E if ch == "." else "BYRKW".index(ch) for ch in row] for row in rows]


def test_gray_line_legality_uses_any_column():
    # §9.2: red anywhere in row 1 blocks line 1
    g = pos(
        wall="gray",
        factories=[tiles(R=2)],
        walls=[gray_wall([".....", "R....", ".....", ".....", "....."]), None],
    )
    assert encode(1, R, 1) not in g.legal_actions()
    assert encode(1, R, 0) in g.legal_actions()


def test_gray_line_legality_ignores_dead_ends():
    # §9.2.1: row 1 can never take red (columns 3, 4 hold red), yet line 1 accepts red.
    w = gray_wall(["...R.", "BYK..", "....R", ".....", "....."])
    g = pos(wall="gray", factories=[tiles(R=2)], walls=[w, None])
    assert g.legal_columns(0, 1, R) == []
    assert encode(1, R, 1) in g.legal_actions()


def test_gray_column_legality_and_default():
    w = gray_wall(["B....", ".....", "..Y..", ".....", "....."])
    g = pos(wall="gray", walls=[w, None])
    assert g.legal_columns(0, 1, B) == [1, 2, 3, 4]  # column 0 holds blue
    assert g.legal_columns(0, 2, R) == [0, 1, 3, 4]  # (2,2) is occupied
    lines = [empty_lines(), empty_lines()]
    lines[0][1] = [B, 2]
    g = pos(wall="gray", walls=[w, None], lines=lines, centre=tiles(K=1), current=1)
    g.step(encode(CENTRE, K, FLOOR))
    assert g.wall[0][1] == [E, B, E, E, E]  # §9.3.1 leftmost legal column


def test_gray_choose_column_order_and_validation():
    lines = [empty_lines() for _ in range(3)]
    lines[0][0] = [R, 1]
    lines[0][3] = [R, 4]
    lines[2][1] = [W, 2]
    calls = []

    def choose(seat, row, colour, legal):
        calls.append((seat, row, colour, list(legal)))
        return legal[-1]

    g = pos(3, "gray", lines=lines, centre=tiles(Y=1))
    g.step(encode(CENTRE, Y, FLOOR), choose_column=choose)
    assert calls == [
        (0, 0, R, [0, 1, 2, 3, 4]),
        (0, 3, R, [0, 1, 2, 3]),  # column 4 got red from row 0 just before
        (2, 1, W, [0, 1, 2, 3, 4]),
    ]
    assert g.wall[0][0][4] == R and g.wall[0][3][3] == R and g.wall[2][1][4] == W

    g = pos(3, "gray", lines=lines, centre=tiles(Y=1))
    with pytest.raises(ValueError, match="choose_column returned 4"):
        g.step(encode(CENTRE, Y, FLOOR), choose_column=lambda s, r, c, legal: 4)


def test_gray_dead_end_sends_whole_line_to_floor():
    # §9.4 (F17): 2 red tiles to the floor, penalised this round; (F18) overflow to the lid.
    w = gray_wall(["...R.", "BYK..", "....R", ".....", "....."])
    lines = [empty_lines(), empty_lines()]
    lines[0][1] = [R, 2]
    g = pos(wall="gray", walls=[w, None], lines=lines, centre=tiles(K=1), current=1, scores=[10, 0])
    g.step(encode(CENTRE, K, FLOOR))
    assert g.lines[0][1] == [-1, 0] and g.wall[0] == w
    assert g.scores[0] == 10 - FLOOR_CUM[2] and g.floor_penalty[0] == 2
    assert g.lid == tiles(R=2, K=1)

    g = pos(
        wall="gray",
        walls=[w, None],
        lines=lines,
        centre=tiles(K=1),
        current=1,
        scores=[20, 0],
        floor=[[Y] * 6, []],
    )
    g.step(encode(CENTRE, K, FLOOR))
    assert g.scores[0] == 20 - 14 and g.floor_penalty[0] == 14
    assert g.lid == tiles(R=2, K=1, Y=6)  # 1 red found the last slot, 1 overflowed at once


def test_gray_dead_end_then_lower_row_still_tiles():
    w = gray_wall(["...R.", "BYK..", "....R", ".....", "....."])
    lines = [empty_lines(), empty_lines()]
    lines[0][1] = [R, 2]
    lines[0][2] = [B, 3]
    g = pos(wall="gray", walls=[w, None], lines=lines, centre=tiles(K=1), current=1)
    g.step(encode(CENTRE, K, FLOOR))
    assert g.wall[0][2] == [E, B, E, E, R]  # column 0 holds blue: leftmost legal is 1
    assert g.scores[0] == max(0, 2 - 2)  # (2,1) touches (1,1): V = 2, minus 2 for the floor


# ------------------------------------------------------------------------ snapshot format


def test_snapshot_is_plain_and_canonical():
    g = ReferenceGame(3, "gray", seed=2, game=2, first_player=1)
    s = g.snapshot()
    assert list(s) == [
        "round",
        "turn",
        "current",
        "done",
        "end_reason",
        "factories",
        "centre",
        "marker_in_centre",
        "marker_holder",
        "bag",
        "lid",
        "lines",
        "wall",
        "floor",
        "scores",
    ]
    assert len(s["lines"]) == 3 and all(len(x) == 5 and len(x[0]) == 2 for x in s["lines"])
    assert np.array(s["wall"]).shape == (3, 5, 5)

    def plain(x):
        if isinstance(x, list):
            return all(plain(y) for y in x)
        return x is None or type(x) in (int, bool, str)

    assert all(plain(v) for v in s.values())
    s["centre"][0] = 99
    assert g.centre[0] != 99  # a copy
