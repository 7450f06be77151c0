"""docs/rules.md §12 invariants on random games, for 2/3/4 players and both walls.

`check_invariants(snapshot, players, wall, legal=None)` only reads the canonical snapshot dict (and
optionally the legal action ids), so it runs unchanged on the reference engine and on the batch
engine (`sim.rules.engine.snapshot`); tests/test_lockstep.py reuses it. The batch variant below is
skipped until `sim.rules.engine` can be imported.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.rules.actions import FLOOR, encode
from sim.rules.constants import factories_for, wall_colour
from sim.rules.reference import ReferenceGame

COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]


def legal_from_snapshot(s: dict, wall: str) -> list[int]:
    """Legal action ids derived from a snapshot alone (docs/rules.md §5.1, §5.2, §9.2)."""
    if s["done"]:
        return []
    seat = s["current"]
    out = []
    for source, tiles in enumerate([s["centre"]] + s["factories"]):
        for colour in range(5):
            if tiles[colour] == 0:
                continue
            for r in range(5):
                line_colour, count = s["lines"][seat][r]
                if (
                    line_colour in (-1, colour)
                    and count < r + 1
                    and colour not in s["wall"][seat][r]
                ):
                    out.append(encode(source, colour, r))
            out.append(encode(source, colour, FLOOR))
    return sorted(out)


def tiles_per_colour(s: dict) -> list[int]:
    """Tiles of each colour in a canonical snapshot: bag, lid (floors included), factories,
    centre, pattern lines and walls (docs/rules.md §12.1: 20 each)."""
    total = [a + b + c for a, b, c in zip(s["bag"], s["lid"], s["centre"], strict=True)]
    for fac in s["factories"]:
        total = [a + b for a, b in zip(total, fac, strict=True)]
    for lines, wall in zip(s["lines"], s["wall"], strict=True):
        for colour, count in lines:
            if colour >= 0:
                total[colour] += count
        for row in wall:
            for colour in row:
                if colour >= 0:
                    total[colour] += 1
    return total


def check_invariants(s: dict, players: int, wall: str, legal=None) -> None:
    """Assert the docs/rules.md §12 invariants on one canonical snapshot.

    Parameters
    ----------
    s : dict
        Canonical snapshot (see sim.rules.reference).
    players : int
    wall : str
        ``'coloured'`` or ``'gray'``.
    legal : sequence of int, optional
        The engine's legal action ids for this state; checked against the snapshot (§5.2) and
        non-empty while tiles remain (§5.5, §10.2).
    """
    n, f = players, factories_for(players)
    assert len(s["factories"]) == f and all(len(x) == 5 for x in s["factories"])
    assert all(min(x) >= 0 and sum(x) <= 4 for x in s["factories"]), s["factories"]
    assert min(s["centre"]) >= 0 and min(s["bag"]) >= 0 and min(s["lid"]) >= 0
    assert 0 <= s["current"] < n and s["round"] >= 1 and s["turn"] >= 0

    # §12.1: 20 tiles of each colour; the lid includes tiles lying on floors.
    total = tiles_per_colour(s)
    assert total == [20] * 5, f"tiles per colour: {total}"

    for p in range(n):
        w = s["wall"][p]
        # §12.2: a pattern line is (-1, 0) or (c, 1..r+1) and wall row r lacks c.
        for r, (colour, count) in enumerate(s["lines"][p]):
            if colour == -1:
                assert count == 0, (p, r, colour, count)
            else:
                assert 0 <= colour < 5 and 1 <= count <= r + 1, (p, r, colour, count)
                assert colour not in w[r], f"seat {p} row {r} holds colour {colour} and its line"
        # No colour twice in a row (both walls) or a column (gray; the coloured layout forces it).
        for r in range(5):
            tiles = [c for c in w[r] if c >= 0]
            assert len(tiles) == len(set(tiles)), f"seat {p} row {r}: {w[r]}"
            for c in range(5):
                assert -1 <= w[r][c] < 5
                if wall == "coloured":
                    assert w[r][c] in (-1, wall_colour(r, c)), f"seat {p} cell {(r, c)}"
        for c in range(5):
            tiles = [w[r][c] for r in range(5) if w[r][c] >= 0]
            assert len(tiles) == len(set(tiles)), f"seat {p} column {c}"
        assert 0 <= s["floor"][p] <= 7
        assert s["scores"][p] >= 0

    # §12.2: the marker is in exactly one place: the centre, or with the seat that took it.
    assert s["marker_in_centre"] != (s["marker_holder"] >= 0), s
    assert -1 <= s["marker_holder"] < n
    if s["done"]:
        assert s["end_reason"] in ("row_completed", "round_cap", "no_tiles")
        assert s["floor"] == [0] * n
    else:
        assert s["end_reason"] is None
        # While the game runs there are tiles on the table (a new round is dealt at once).
        assert sum(s["centre"]) + sum(map(sum, s["factories"])) > 0
    if legal is not None:
        legal = sorted(int(a) for a in legal)
        assert legal == legal_from_snapshot(s, wall)
        assert bool(legal) == (not s["done"])  # §5.5: never stuck while tiles remain


def play_checked(game: ReferenceGame, rnd: random.Random, line_bias: float) -> None:
    """Play `game` to the end with random choices, checking invariants at every step."""
    n, w = game.players, game.wall_kind
    s = game.snapshot()
    check_invariants(s, n, w, game.legal_actions())
    while not game.done:
        legal = game.legal_actions()
        lines = [a for a in legal if a % 6 != FLOOR]
        action = rnd.choice(lines if lines and rnd.random() < line_bias else legal)
        before = s
        game.step(action, choose_column=lambda seat, row, colour, cols: rnd.choice(cols))
        s = game.snapshot()
        check_invariants(s, n, w, game.legal_actions())
        assert s["turn"] == before["turn"] + 1
        if s["round"] == before["round"] and not s["done"]:
            assert s["scores"] == before["scores"]  # scores change only at round end (§6.3)
        assert s["round"] in (before["round"], before["round"] + 1)
    rec = game.record()
    assert rec["turns"] == game.turn and rec["rounds"] == game.round
    assert (rec["winners"] != []) == (rec["end_reason"] == "row_completed")
    assert rec["provisional_winners"]
    # §4.5: a round has at most 4F turns.
    assert rec["turns"] <= rec["rounds"] * 4 * factories_for(n)


@pytest.mark.parametrize("players, wall", COMBOS)
@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**63 - 1),
    game=st.integers(0, 10**6),
    first=st.integers(0, 3),
    max_rounds=st.sampled_from([1, 3, 100]),
    line_bias=st.sampled_from([0.0, 0.5, 0.9, 1.0]),
    rnd=st.randoms(use_true_random=False),
)
def test_reference_invariants(players, wall, seed, game, first, max_rounds, line_bias, rnd):
    g = ReferenceGame(players, wall, seed, game, first % players, max_rounds=max_rounds)
    play_checked(g, rnd, line_bias)


@pytest.mark.parametrize("players, wall", COMBOS)
def test_step_given_the_legal_actions_counts_the_same_choices(players, wall):
    """`ReferenceGame.step(..., legal=...)` (as lockstep and the goldens call it) plays and counts
    exactly as the step that lists the legal actions itself."""
    rnd = random.Random(players * 10 + len(wall))
    listed, given_ = (ReferenceGame(players, wall, 5, 7, 0) for _ in range(2))
    while not listed.done:
        legal = listed.legal_actions()
        action = rnd.choice(legal)
        listed.step(action)
        given_.step(action, legal=given_.legal_actions())
        assert given_.snapshot() == listed.snapshot()
    assert given_.decisions() == listed.decisions()
    assert 0 < listed.decisions()["decision_turns"] < listed.decisions()["legal_actions"]


@pytest.mark.parametrize("players, wall", COMBOS)
def test_batch_engine_invariants(players, wall):
    from sim.rules import engine, rng

    batch, seed = 12, 4242
    games = np.arange(batch)
    first = games % players
    st_ = engine.new_games(players, wall, seed, games=games, first_player=first, max_rounds=100)
    keys = rng.game_keys(seed, games, rng.BOT)
    for step in range(2000):
        mask = engine.legal_mask(st_)
        for b in range(batch):
            check_invariants(engine.snapshot(st_, b), players, wall, np.flatnonzero(mask[b]))
        if st_.done.all():
            break
        counts = mask.sum(axis=1)
        k = rng.pick(rng.uniform32(keys, step * 8), np.maximum(counts, 1))
        actions = np.array(
            [np.flatnonzero(mask[b])[k[b]] if counts[b] else -1 for b in range(batch)]
        )
        actions[st_.done] = -1
        engine.step(st_, actions)
    assert st_.done.all()
