"""sim.rules.scoring against every vector of rules_vectors.json (docs/rules.md), plus shape/value
checks.

tests/data/rules_vectors.json is a verbatim copy of ../shared/vectors/rules_vectors.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.rules import reference, scoring
from sim.rules.constants import FLOOR_CUM, wall_colour

VECTORS = json.loads((Path(__file__).parent / "data" / "rules_vectors.json").read_text())


def _of_kind(kind):
    return [pytest.param(v, id=v["id"]) for v in VECTORS if v["kind"] == kind]


def test_vector_file_is_complete():
    kinds = {v["kind"] for v in VECTORS}
    assert kinds == {"placement", "floor", "end_bonus", "tiebreak"}
    assert len({v["id"] for v in VECTORS}) == len(VECTORS)


@pytest.mark.parametrize("v", _of_kind("placement"))
def test_placement_vector(v):
    wall = np.array(v["wall"], dtype=bool)
    points = []
    for r, c in v["cells"]:  # RULES §0.3 recipe: each placed tile stays for the following ones
        points.append(int(scoring.placement_points(wall, r, c)))
        wall[r, c] = True
    assert points == v["expected_each"]
    assert sum(points) == v["expected"]


@pytest.mark.parametrize("v", _of_kind("placement"))
def test_placement_vector_batched(v):
    # The same vector as one batch: each cell scored on its own copy of the wall before it.
    walls, rows, cols = [], [], []
    wall = np.array(v["wall"], dtype=bool)
    for r, c in v["cells"]:
        walls.append(wall.copy())
        rows.append(r)
        cols.append(c)
        wall[r, c] = True
    pts = scoring.placement_points(np.array(walls), np.array(rows), np.array(cols))
    assert pts.tolist() == v["expected_each"]


@pytest.mark.parametrize("v", _of_kind("floor"))
def test_floor_vector(v):
    n = v["floor_items"]
    penalty = int(scoring.floor_penalty(n))
    assert penalty == v["expected_penalty"] == FLOOR_CUM[min(n, 7)]
    # Objects beyond the 7th slot go to the lid; the marker never does (RULES §5.3.1, §5.6).
    marker_overflows = v["marker"] and v.get("floor_before_marker", 0) >= 7
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
    assert int(scoring.complete_rows(wall)) == v["expected_rows"]
    assert int(scoring.complete_cols(wall)) == v["expected_cols"]
    assert int(scoring.complete_colours(wall)) == v["expected_colors"]
    assert int(scoring.end_bonus(wall)) == v["expected"]
    if "expected_final" in v:
        assert v["score_before_bonus"] + int(scoring.end_bonus(wall)) == v["expected_final"]


@pytest.mark.parametrize("v", _of_kind("tiebreak"))
def test_tiebreak_vector(v):
    scores = [p["final_score"] for p in v["players"]]
    rows = [p["complete_rows"] for p in v["players"]]  # complete_cols must be ignored
    mask = scoring.winners(scores, rows)
    assert np.flatnonzero(mask).tolist() == v["expected"]


def test_tiebreak_vectors_batched_by_player_count():
    for n in (2, 3, 4):
        vs = [v for v in _of_kind("tiebreak") if len(v.values[0]["players"]) == n]
        if not vs:
            continue
        scores = np.array([[p["final_score"] for p in v.values[0]["players"]] for v in vs])
        rows = np.array([[p["complete_rows"] for p in v.values[0]["players"]] for v in vs])
        masks = scoring.winners(scores, rows)
        for v, m in zip(vs, masks, strict=True):
            assert np.flatnonzero(m).tolist() == v.values[0]["expected"]


# ---- vectors cited in docs/rules.md but not shipped (the rule text is what counts)
# ----------------


def test_gray_colour_bonus_counts_tiles_anywhere():
    # RULES §9.5 (B12/B13): on the gray wall a colour is complete wherever its 5 tiles lie.
    wall = np.full((5, 5), -1)
    wall[:, 0] = [2, 2, 2, 2, 2]  # impossible as a real gray wall, but the helper must not care
    assert int(scoring.complete_colours(wall)) == 1
    wall = np.full((5, 5), -1)
    for r in range(5):
        wall[r, (r + 3) % 5] = 4  # white on a "wrong" diagonal
    assert int(scoring.complete_colours(wall)) == 1
    assert int(scoring.end_bonus(wall)) == 10


def test_tiebreak_ignores_columns_colours_and_seat():
    # RULES §8.3: rows among the tied only; nothing else breaks a tie.
    assert scoring.winners([30, 30, 30], [0, 1, 1]).tolist() == [False, True, True]
    assert scoring.winners([10, 31, 30], [5, 0, 5]).tolist() == [False, True, False]
    assert scoring.winners([0, 0], [0, 0]).tolist() == [True, True]


# ---- shapes, broadcasting and errors ---------------------------------------------------------


def test_placement_broadcasts_cells_over_walls():
    walls = np.zeros((2, 3, 5, 5), dtype=bool)
    walls[1, :, 2, 1] = True
    pts = scoring.placement_points(walls, 2, np.array([0, 2, 4]))
    assert pts.shape == (2, 3)
    assert pts.tolist() == [[1, 1, 1], [2, 2, 1]]


def test_placement_rejects_bad_input():
    with pytest.raises(ValueError, match="occupied"):
        scoring.placement_points(np.ones((5, 5), bool), 0, 0)
    with pytest.raises(ValueError, match=r"\(\.\.\., 5, 5\)"):
        scoring.placement_points(np.zeros((5, 4), bool), 0, 0)
    with pytest.raises(ValueError, match="row must be in 0..4"):
        scoring.placement_points(np.zeros((5, 5), bool), 5, 0)
    with pytest.raises(ValueError, match="col must be"):
        scoring.placement_points(np.zeros((5, 5), bool), 0, 1.5)
    with pytest.raises(ValueError, match="broadcast"):
        scoring.placement_points(np.zeros((3, 5, 5), bool), np.zeros(2, int), 0)


def test_floor_penalty_table_and_errors():
    expected = [0, 1, 2, 4, 6, 8, 11, 14, 14, 14, 14, 14]
    assert scoring.floor_penalty(np.arange(12)).tolist() == expected
    with pytest.raises(ValueError, match=">= 0"):
        scoring.floor_penalty(-1)
    with pytest.raises(ValueError, match="integer"):
        scoring.floor_penalty(1.0)


def test_bonus_and_winner_errors():
    with pytest.raises(ValueError, match="colour 0..4"):
        scoring.end_bonus(np.full((5, 5), 5))
    with pytest.raises(ValueError, match="5, 5"):
        scoring.end_bonus(np.zeros(5))
    with pytest.raises(ValueError, match="same shape"):
        scoring.winners([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="n >= 1"):
        scoring.winners(np.zeros((3, 0)), np.zeros((3, 0)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=25, max_size=25), st.integers(0, 4), st.integers(0, 4))
def test_placement_matches_cell_walk(cells, r, c):
    # Independent oracle: the reference engine walks runs cell by cell (RULES §6.2).
    wall = np.array(cells, dtype=bool).reshape(5, 5)
    wall[r, c] = False
    assert int(scoring.placement_points(wall, r, c)) == reference.placement_points(
        wall.tolist(), r, c
    )
