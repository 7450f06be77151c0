"""Every vector of rules_vectors.json (docs/rules.md) against both implementations of the rules:
the reference (`sim.rules.reference`) and the compiled engine (`sim.rules.compiled`, called
directly or through a one-game `BatchState`), plus the reference's checks of its input.

tests/data/rules_vectors.json is a verbatim copy of the project's rules vectors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.rules import engine, reference
from sim.rules.actions import FLOOR, encode
from sim.rules.constants import END_ROW_COMPLETED, FLOOR_CUM, wall_colour

VECTORS = json.loads((Path(__file__).parent / "data" / "rules_vectors.json").read_text())


def _of_kind(kind):
    return [pytest.param(v, id=v["id"]) for v in VECTORS if v["kind"] == kind]


# ---- the engine's side: its functions, or games set up from snapshots -------------------------


def engine_points(occupied, row: int, col: int) -> int:
    """The compiled engine's points for a tile at (row, col) of a wall `occupied` before it."""
    bits = sum(1 << (5 * r + c) for r in range(5) for c in range(5) if occupied[r][c])
    return int(engine.kernels().tile_points(bits | 1 << (5 * row + col), row, col))


def _snapshot(players: int = 2, wall: str = "coloured") -> dict:
    """An empty table of round 1: nothing in the factories or the centre, no marker."""
    s = engine.snapshot(engine.new_games(players, wall, 0, [0], [0]), 0)
    s["factories"] = [[0] * 5 for _ in s["factories"]]
    s["centre"] = [0] * 5
    s["marker_in_centre"] = False
    s["bag"] = [20] * 5
    return s


def _games(snapshots, wall: str = "coloured", max_rounds: int = 100):
    players = len(snapshots[0]["scores"])
    games = np.arange(len(snapshots))
    return engine.from_snapshots(players, wall, 0, games, snapshots, max_rounds=max_rounds)


def coloured_wall(occupied) -> list[list[int]]:
    return [[wall_colour(r, c) if occupied[r][c] else -1 for c in range(5)] for r in range(5)]


def engine_tilings(walls, cells) -> list[int]:
    """The points each game's wall tiling scores (seat 0, coloured wall): game k's wall is
    ``walls[k]`` and its only full pattern line the one of the tile at ``cells[k]``."""
    snapshots = []
    for occupied, (r, c) in zip(walls, cells, strict=True):
        s = _snapshot()
        s["wall"][0] = coloured_wall(occupied)
        s["lines"][0][r] = [wall_colour(r, c), r + 1]
        snapshots.append(s)
    st = _games(snapshots)
    slots = np.arange(len(snapshots))
    engine.end_rounds(st, slots, deal=False)
    natural = st.end_reason == END_ROW_COMPLETED  # a completed row ends the game: its bonus too
    return (st.scores[0] - np.where(natural, st.bonus[0], 0)).tolist()


def engine_floor(objects: int, marker: bool = False, before: int = 0) -> tuple[int, int]:
    """(floor penalty, score from 20) of seat 0 after it takes ``objects - before - marker``
    tiles from the centre to its floor, which held `before` objects (the marker first if
    `marker`), ending the round."""
    s = _snapshot()
    taken = objects - before - marker
    s["centre"][0] = taken
    s["marker_in_centre"] = marker
    s["floor"][0] = before
    s["scores"] = [20, 0]
    st = _games([s])
    if taken:
        engine.step(st, [encode(0, 0, FLOOR)])
    else:
        engine.end_rounds(st, np.arange(1))
    assert st.round[0] == 2  # the round ended
    return int(st.floor_penalty[0, 0]), int(st.scores[0, 0])


def engine_end(wall, gray: bool, score: int = 0):
    """The records of one finished game (1 round, capped) whose seat 0 has the colour `wall`."""
    s = _snapshot(wall="gray" if gray else "coloured")
    s["wall"][0] = [list(row) for row in wall]
    s["scores"] = [score, 0]
    st = _games([s], "gray" if gray else "coloured", max_rounds=1)
    engine.end_rounds(st, np.arange(1), deal=False)
    return engine.records(st)


def engine_winners(games) -> list[list[int]]:
    """The engine's provisional winners of finished games given as (scores, complete rows) per
    seat: seat p's wall has that many complete rows (coloured wall)."""
    snapshots = []
    for scores, rows in games:
        s = _snapshot(len(scores))
        for p, k in enumerate(rows):
            s["wall"][p] = coloured_wall([[r < k] * 5 for r in range(5)])
        s["scores"] = list(scores)
        s["done"], s["end_reason"] = True, "row_completed"
        snapshots.append(s)
    rec = engine.records(_games(snapshots))
    assert (rec.complete_rows == np.array([rows for _, rows in games])).all()
    return [np.flatnonzero(m).tolist() for m in rec.provisional_winners]


# ---- the vectors ------------------------------------------------------------------------------


def test_vector_file_is_complete():
    kinds = {v["kind"] for v in VECTORS}
    assert kinds == {"placement", "floor", "end_bonus", "tiebreak"}
    assert len({v["id"] for v in VECTORS}) == len(VECTORS)


@pytest.mark.parametrize("v", _of_kind("placement"))
def test_placement_vector(v):
    wall = np.array(v["wall"], dtype=bool)
    points, compiled = [], []
    for r, c in v["cells"]:  # RULES §0.3 recipe: each placed tile stays for the following ones
        points.append(reference.placement_points(wall.tolist(), r, c))
        compiled.append(engine_points(wall, r, c))
        wall[r, c] = True
    assert points == compiled == v["expected_each"]
    assert sum(points) == v["expected"]


@pytest.mark.parametrize("v", _of_kind("placement"))
def test_placement_vector_batched(v):
    # The same vector as one batch of games through the engine's wall tiling: each cell scored
    # on its own copy of the wall before it.
    walls, cells = [], []
    wall = np.array(v["wall"], dtype=bool)
    for r, c in v["cells"]:
        walls.append(wall.copy())
        cells.append((r, c))
        wall[r, c] = True
    assert engine_tilings(walls, cells) == v["expected_each"]


@pytest.mark.parametrize("v", _of_kind("floor"))
def test_floor_vector(v):
    n = v["floor_items"]
    penalty = reference.floor_penalty(n)
    assert penalty == v["expected_penalty"] == FLOOR_CUM[min(n, 7)]
    before = v.get("floor_before_marker", 0)
    compiled, score = engine_floor(n, v["marker"], before)
    assert compiled == penalty
    assert score == max(0, 20 - penalty)
    # Objects beyond the 7th slot go to the lid; the marker never does (RULES §5.3.1, §5.6).
    marker_overflows = v["marker"] and before >= 7
    assert max(0, n - 7) - marker_overflows == v["expected_to_lid"]
    # Clamp formula (RULES §6.3, §8.2.1): clamp after placements, bonus after the clamp.
    final = max(0, v["score_before"] + v["round_points"] - penalty) + v["then_bonus"]
    assert final == v["expected"]


@pytest.mark.parametrize("v", _of_kind("end_bonus"))
def test_end_bonus_vector(v):
    occupied = np.array(v["wall"], dtype=bool)
    if v["variant"] == "colored":
        r, c = np.indices((5, 5))
        wall = np.where(occupied, wall_colour(r, c), -1)
    else:
        wall = np.array([["BYRKW.".index(ch) for ch in line] for line in v["wall_colors"]])
        wall[wall == 5] = -1
        assert ((wall >= 0) == occupied).all()
    wall = wall.tolist()
    assert reference.complete_rows_of(wall) == v["expected_rows"]
    assert reference.complete_cols_of(wall) == v["expected_cols"]
    assert reference.complete_colours_of(wall) == v["expected_colors"]
    assert reference.end_bonus(wall) == v["expected"]
    rec = engine_end(wall, v["variant"] != "colored", v.get("score_before_bonus", 0))
    counted = (rec.complete_rows[0, 0], rec.complete_cols[0, 0], rec.complete_colours[0, 0])
    assert counted == (v["expected_rows"], v["expected_cols"], v["expected_colors"])
    assert rec.bonus[0, 0] == v["expected"]
    if "expected_final" in v:
        assert v["score_before_bonus"] + reference.end_bonus(wall) == v["expected_final"]
        assert rec.end_reason[0] == END_ROW_COMPLETED  # a natural end: the bonus is added
        assert rec.scores[0, 0] == v["expected_final"]


@pytest.mark.parametrize("v", _of_kind("tiebreak"))
def test_tiebreak_vector(v):
    scores = [p["final_score"] for p in v["players"]]
    rows = [p["complete_rows"] for p in v["players"]]  # complete_cols must be ignored
    assert reference.winner_seats(scores, rows) == v["expected"]
    assert engine_winners([(scores, rows)]) == [v["expected"]]


def test_tiebreak_vectors_batched_by_player_count():
    for n in (2, 3, 4):
        vs = [v for v in _of_kind("tiebreak") if len(v.values[0]["players"]) == n]
        if not vs:
            continue
        games = [
            ([p["final_score"] for p in v.values[0]["players"]],
             [p["complete_rows"] for p in v.values[0]["players"]])
            for v in vs
        ]  # fmt: skip
        assert engine_winners(games) == [v.values[0]["expected"] for v in vs]


# ---- vectors cited in docs/rules.md but not shipped (the rule text is what counts)
# ----------------


def test_gray_colour_bonus_counts_tiles_anywhere():
    # RULES §9.5 (B12/B13): on the gray wall a colour is complete wherever its 5 tiles lie.
    wall = np.full((5, 5), -1)
    wall[:, 0] = [2, 2, 2, 2, 2]  # impossible as a real gray wall, but the count must not care
    assert reference.complete_colours_of(wall.tolist()) == 1
    assert engine_end(wall.tolist(), gray=True).complete_colours[0, 0] == 1
    wall = np.full((5, 5), -1)
    for r in range(5):
        wall[r, (r + 3) % 5] = 4  # white on a "wrong" diagonal
    assert reference.complete_colours_of(wall.tolist()) == 1
    assert reference.end_bonus(wall.tolist()) == 10
    rec = engine_end(wall.tolist(), gray=True)
    assert rec.complete_colours[0, 0] == 1
    assert rec.bonus[0, 0] == 10


def test_tiebreak_ignores_columns_colours_and_seat():
    # RULES §8.3: rows among the tied only; nothing else breaks a tie.
    cases = [(([30, 30, 30], [0, 1, 1]), [1, 2]), (([10, 31, 30], [5, 0, 5]), [1])]
    cases.append((([0, 0], [0, 0]), [0, 1]))
    for (scores, rows), expected in cases:
        assert reference.winner_seats(scores, rows) == expected
        assert engine_winners([(scores, rows)]) == [expected]


# ---- several walls, and the reference's checks of its input ----------------------------------


def test_placement_of_cells_over_walls():
    walls = np.zeros((2, 3, 5, 5), dtype=bool)
    walls[1, :, 2, 1] = True
    cells = [0, 2, 4]
    for points, fn in ((engine_points, "engine"), (reference.placement_points, "reference")):
        got = [[points(walls[a, b].tolist(), 2, cells[b]) for b in range(3)] for a in range(2)]
        assert got == [[1, 1, 1], [2, 2, 1]], fn


def test_placement_rejects_bad_input():
    with pytest.raises(ValueError, match="occupied"):
        reference.placement_points(np.ones((5, 5), bool).tolist(), 0, 0)
    with pytest.raises(ValueError, match=r"\(5, 5\)"):
        reference.placement_points(np.zeros((5, 4), bool).tolist(), 0, 0)
    with pytest.raises(ValueError, match="row must be in 0..4"):
        reference.placement_points(np.zeros((5, 5), bool).tolist(), 5, 0)
    with pytest.raises(ValueError, match="col must be"):
        reference.placement_points(np.zeros((5, 5), bool).tolist(), 0, 1.5)


def test_floor_penalty_table_and_errors():
    expected = [0, 1, 2, 4, 6, 8, 11, 14, 14, 14, 14, 14]
    assert [reference.floor_penalty(n) for n in range(12)] == expected
    assert [engine_floor(n)[0] for n in range(12)] == expected
    with pytest.raises(ValueError, match=">= 0"):
        reference.floor_penalty(-1)
    with pytest.raises(ValueError, match="integer"):
        reference.floor_penalty(1.0)


def test_bonus_and_winner_errors():
    with pytest.raises(ValueError, match="colour 0..4"):
        reference.end_bonus(np.full((5, 5), 5).tolist())
    with pytest.raises(ValueError, match="5, 5"):
        reference.end_bonus(np.zeros(5).tolist())
    with pytest.raises(ValueError, match="same length"):
        reference.winner_seats([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="at least 1"):
        reference.winner_seats([], [])


def test_the_bots_placement_table_is_the_engines():
    # The bots value a tile by the engine's own count (sim.bots.features.cell_points), which must
    # agree with the reference on every free cell of every row and column.
    from sim.bots.features import cell_points

    table = cell_points()
    for row_mask in range(32):
        for col_mask in range(32):
            for r in range(5):
                for col in range(5):
                    if (row_mask >> col) & 1 or (col_mask >> r) & 1:
                        continue  # the cell itself is taken: never read
                    wall = [[False] * 5 for _ in range(5)]
                    for c in range(5):
                        wall[r][c] = bool((row_mask >> c) & 1)
                    for k in range(5):
                        wall[k][col] = wall[k][col] or bool((col_mask >> k) & 1)
                    at = (row_mask * 32 + col_mask) * 25 + 5 * r + col
                    assert table[at] == reference.placement_points(wall, r, col), (at, wall)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=25, max_size=25), st.integers(0, 4), st.integers(0, 4))
def test_placement_matches_cell_walk(cells, r, c):
    # Two independent implementations: the reference walks runs cell by cell (RULES §6.2), the
    # engine reads a table of runs.
    wall = np.array(cells, dtype=bool).reshape(5, 5)
    wall[r, c] = False
    assert engine_points(wall, r, c) == reference.placement_points(wall.tolist(), r, c)
