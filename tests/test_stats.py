"""Statistics: exact counters (chunking/merge invariance), derived figures, Wilson intervals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.bots.registry import register_bot
from sim.jobs.spec import Configuration, JobSpec
from sim.rules.constants import END_NO_TILES, END_ROUND_CAP, END_ROW_COMPLETED
from sim.rules.records import GameRecords
from sim.rules.scoring import winners as winners_of
from sim.stats import count, derive, merge, merge_all, moments, wilson
from tests.fake_play import fake_play_games

Z = 1.959963984540054


# Test bots, registered at import: the configurations below are built at import too.
for _name in ("st_a", "st_b", "st_c"):
    register_bot(_name, f"test bot {_name}", lambda p: p, replace=True)


def hand_records() -> tuple[GameRecords, Configuration]:
    """Six 2-player games, rotate seating, bots st_a and st_b; game 4 is truncated."""
    cfg = Configuration(2, ["st_a", "st_b"])
    scores = np.array([[30, 20], [15, 15], [40, 41], [22, 22], [10, 5], [50, 0]], np.int32)
    rows = np.array([[1, 0], [0, 0], [1, 1], [2, 1], [0, 0], [1, 0]], np.int8)
    cols = np.array([[1, 0], [0, 1], [2, 0], [0, 0], [0, 0], [3, 0]], np.int8)
    colours = np.array([[0, 0], [1, 0], [0, 1], [0, 0], [0, 0], [1, 0]], np.int8)
    end = np.array([0, 0, 0, 0, END_ROUND_CAP, 0], np.int8)
    winners = winners_of(scores, rows) & (end == 0)[:, None]
    games = np.arange(6)
    rec = GameRecords(
        game=games,
        first_player=np.array([0, 1, 1, 0, 0, 1], np.int8),
        seat_bot=np.array([[0, 1], [1, 0]] * 3, np.int8),
        scores=scores,
        end_reason=end,
        rounds=np.array([5, 6, 5, 7, 100, 6], np.int16),
        turns=np.array([90, 101, 88, 130, 1800, 99], np.int32),
        complete_rows=rows,
        complete_cols=cols,
        complete_colours=colours,
        bonus=(2 * rows + 7 * cols + 10 * colours).astype(np.int16),
        floor_penalty=np.array([[3, 0], [1, 4], [0, 0], [2, 2], [14, 14], [0, 6]], np.int32),
        marker_takes=np.array([[2, 3], [3, 3], [1, 4], [4, 3], [50, 50], [3, 3]], np.int16),
        winners=winners,
        provisional_winners=winners_of(scores, rows),
        lead_changes=np.array([1, 0, 2, 3, 40, 0], np.int16),
        trailing_rounds=np.array([[5, 0], [0, 63], [1, 6], [0, 0], [0, 0], [32, 0]], np.int64),
        last_trailing_round=np.array([[3, 0], [0, 6], [1, 3], [0, 0], [0, 0], [6, 0]], np.int16),
        decision_turns=np.array([80, 95, 80, 120, 1500, 90], np.int32),
        legal_actions=np.array([1500, 2100, 1450, 2600, 9000, 1800], np.int32),
    )
    return rec, cfg


def test_hand_made_winners():
    rec, _ = hand_records()
    # Game 3: 22-22, rows 2 vs 1: seat 0 wins alone; game 1: full tie, shared; game 4 truncated.
    assert rec.winners.tolist() == [
        [True, False],
        [True, True],
        [False, True],
        [True, False],
        [False, False],
        [True, False],
    ]


def test_derived_figures_match_numpy():
    rec, cfg = hand_records()
    spec = JobSpec([cfg], games=6, seed=1)
    doc = derive(count(rec, 0, cfg), spec)
    fin = ~rec.truncated
    assert doc["games_finished"] == 5 and doc["games_truncated"] == 1
    assert doc["truncated_by_reason"] == {"round_cap": 1, "no_tiles": 0}
    assert doc["shared_win_games"] == 1

    def check(stat, values):
        values = np.asarray(values, dtype=float)
        assert stat["n"] == values.size
        assert stat["mean"] == pytest.approx(values.mean(), rel=1e-12)
        sd = values.std(ddof=1)
        assert stat["std"] == pytest.approx(sd, rel=1e-12, abs=1e-12)
        half = Z * sd / math.sqrt(values.size)
        assert stat["ci95"] == pytest.approx([values.mean() - half, values.mean() + half])
        assert stat["min"] == values.min() and stat["max"] == values.max()

    check(doc["rounds"], rec.rounds[fin])
    check(doc["turns"], rec.turns[fin])
    check(doc["score"], rec.scores[fin].ravel())
    check(doc["floor"], rec.floor_penalty[fin].ravel())
    check(doc["marker"], rec.marker_takes[fin].ravel())
    check(doc["bonus"], rec.bonus[fin].ravel())
    # Margin: winners' score minus the best non-winner: 10, 0 (all share), 1, 0 (rows), 50.
    check(doc["margin"], [10, 0, 1, 0, 50])
    assert doc["margin"]["histogram"]["counts"][:6] == [3, 0, 0, 0, 0, 1]

    label_of_seat = np.array(cfg.bots)[rec.seat_bot]
    for label in cfg.bots:
        mask = (label_of_seat == label) & fin[:, None]
        g = doc["bots"][label]
        check(g["score"], rec.scores[mask])
        check(g["rows"], rec.complete_rows[mask])
        check(g["columns"], rec.complete_cols[mask])
        check(g["colours"], rec.complete_colours[mask])
        wins = int(rec.winners[mask].sum())
        assert g["wins"] == wins and g["player_games"] == 5 and g["truncated"] == 1
        assert g["win_rate"] == wins / 5
        assert g["win_rate_ci95"] == pytest.approx(wilson(wins, 5))
        for p in range(2):
            m = mask & (np.arange(2) == p)[None, :]
            assert g["seats"][p]["player_games"] == int(m.sum())
            assert g["seats"][p]["wins"] == int(rec.winners[m].sum())
    # st_a sits in seat 0 of even games, seat 1 of odd ones: it wins game 0 and shares game 1;
    # st_b shares game 1 and wins games 2, 3 (on rows) and 5 (game 4 is truncated).
    assert (doc["bots"]["st_a"]["wins"], doc["bots"]["st_a"]["shared_wins"]) == (2, 1)
    assert (doc["bots"]["st_b"]["wins"], doc["bots"]["st_b"]["shared_wins"]) == (4, 1)
    for p in range(2):
        check(doc["seats"][p]["score"], rec.scores[fin, p])
        assert doc["seats"][p]["win_rate"] == rec.winners[fin, p].mean()
    # Position 0 is the start player's seat.
    pos0 = rec.first_player[fin]
    assert doc["positions"][0]["wins"] == int(rec.winners[fin][np.arange(5), pos0].sum())
    # Win margin over the wins of st_b: games 1, 2, 3, 5 with margins 0, 1, 0, 50.
    assert doc["bots"]["st_b"]["win_margin"]["mean"] == 12.75
    assert doc["bots"]["st_a"]["win_margin"]["mean"] == 5  # games 0 (10) and 1 (0)

    # Head to head, st_a against st_b: g0 30 > 20, g1 level, g2 40 < 41, g3 22 = 22 but rows
    # 1 < 2, g5 0 < 50.
    h = doc["head_to_head"]["st_a"]["st_b"]
    assert (h["games"], h["meetings"], h["above"], h["level"], h["below"]) == (5, 5, 1, 1, 3)
    assert h["score_rate"] == 0.3
    assert h["above_rate_ci95"] == pytest.approx(wilson(1, 5))
    assert doc["head_to_head"]["st_b"]["st_a"]["above"] == 3
    assert doc["configurations"][0]["bots"] == doc["bots"]


def test_head_to_head_counts_seat_pairs():
    cfg = Configuration(3, ["st_a", "st_a", "st_b"], "fixed")
    rec = fake_play_games(cfg, 3, 0, 400)
    doc = derive(count(rec, 0, cfg), JobSpec([cfg], games=400, seed=3))
    fin = ~rec.truncated
    s, r = rec.scores[fin].astype(int), rec.complete_rows[fin].astype(int)
    above = sum(
        int(((s[:, p] > s[:, 2]) | ((s[:, p] == s[:, 2]) & (r[:, p] > r[:, 2]))).sum())
        for p in (0, 1)
    )
    level = sum(int(((s[:, p] == s[:, 2]) & (r[:, p] == r[:, 2])).sum()) for p in (0, 1))
    h = doc["head_to_head"]["st_a"]
    assert h["st_b"]["games"] == fin.sum() and h["st_b"]["meetings"] == 2 * fin.sum()
    assert h["st_b"]["above"] == above and h["st_b"]["level"] == level
    assert doc["head_to_head"]["st_b"]["st_a"]["below"] == above
    assert doc["bots"]["st_a"]["player_games"] == 2 * fin.sum()


@pytest.mark.parametrize(
    "k, n, lo, hi",
    [
        (0, 10, 0.0, 0.27753),
        (10, 10, 0.72247, 1.0),
        (5, 10, 0.23659, 0.76341),
        (81, 263, 0.25524, 0.36617),
        (1, 20, 0.00889, 0.23613),
    ],
)
def test_wilson_known_values(k, n, lo, hi):
    assert wilson(k, n) == pytest.approx([lo, hi], abs=5e-5)


def test_wilson_and_moments_edges():
    assert wilson(0, 0) is None
    assert moments(0, 0, 0) == {"n": 0, "mean": None, "ci95": None, "std": None}
    one = moments(1, 7, 49)
    assert one["mean"] == 7 and one["std"] is None and one["ci95"] is None
    assert moments(3, 6, 12)["std"] == 0.0


def test_merge_is_exact_and_generic():
    a = {"c0|x": 2, "min|c0|s": 5, "max|c0|s": 9}
    b = {"c0|x": 3, "c0|y": 1, "min|c0|s": 3, "max|c0|s": 7}
    c = {"min|c0|s": 4, "max|c0|s": 20}
    assert merge(a, b) == {"c0|x": 5, "c0|y": 1, "min|c0|s": 3, "max|c0|s": 9}
    assert merge(a, b) == merge(b, a)
    assert merge(merge(a, b), c) == merge(a, merge(b, c))
    assert merge(a, {}) == a and a == {"c0|x": 2, "min|c0|s": 5, "max|c0|s": 9}


def test_counters_are_integer_and_key_shaped():
    cfg = Configuration(4, ["st_a", "st_b", "st_c", "st_a"], "shuffle")
    counters = count(fake_play_games(cfg, 5, 0, 300), 2, cfg)
    assert all(type(v) is int for v in counters.values())
    for key in counters:
        parts = key.split("|")
        if parts[0] in ("min", "max"):
            parts = parts[1:]
        assert parts[0] == "c2"
    assert "c2|bot=st_a|score.sum" in counters
    assert "c2|h2h=st_a|vs=st_c|meetings" in counters
    assert count(fake_play_games(cfg, 5, 0, 0), 2, cfg) == {}


def test_records_must_match_configuration():
    cfg = Configuration(2, ["st_a", "st_b"])
    rec = fake_play_games(Configuration(3, ["st_a"] * 3), 1, 0, 5)
    with pytest.raises(ValueError, match="3 seats but configuration 0 has 2"):
        count(rec, 0, cfg)


CONFIGS = [
    Configuration(2, ["st_a", "st_b"]),
    Configuration(3, ["st_a", "st_b", "st_a"], "shuffle", "gray"),
    Configuration(4, ["st_a", "st_b", "st_c", "st_b"], "fixed"),
]


@settings(max_examples=25, deadline=None)
@given(
    which=st.integers(0, len(CONFIGS) - 1),
    n=st.integers(1, 250),
    cuts=st.lists(st.floats(0, 1), max_size=8),
    order=st.randoms(use_true_random=False),
)
def test_counters_independent_of_chunking_and_merge_order(which, n, cuts, order):
    cfg = CONFIGS[which]
    whole = count(fake_play_games(cfg, 11, 0, n), 0, cfg)
    bounds = sorted({0, n, *(int(c * n) for c in cuts)})
    parts = [
        count(fake_play_games(cfg, 11, a, b), 0, cfg)
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    order.shuffle(parts)
    assert merge_all(parts) == whole
    # A different tree shape: neighbours pairwise, each pair in swapped order, until one is left.
    while len(parts) > 1:
        head = [parts.pop(0)] if len(parts) % 2 else []
        parts = head + [merge(parts[i + 1], parts[i]) for i in range(0, len(parts), 2)]
    assert parts[0] == whole


def test_multi_configuration_document():
    spec = JobSpec(CONFIGS, games=60, seed=4)
    counters = merge_all(count(fake_play_games(c, 4, 0, 60), k, c) for k, c in enumerate(CONFIGS))
    doc = derive(counters, spec)
    assert doc["games_total"] == 180 and doc["games_done"] == 180
    assert doc["games_finished"] + doc["games_truncated"] == 180
    assert "score" not in doc and "bots" not in doc
    for k, cfg in enumerate(doc["configurations"]):
        assert cfg["index"] == k and cfg["players"] == CONFIGS[k].players
        assert cfg["games_finished"] + cfg["games_truncated"] == 60
        for key in ("rounds", "turns", "score"):
            assert cfg[key]["mean"] is not None and len(cfg[key]["ci95"]) == 2
        for label, g in cfg["bots"].items():
            assert label in CONFIGS[k].bots
            assert g["score"]["ci95"] is not None and g["win_rate"] is not None
        assert len(cfg["seats"]) == CONFIGS[k].players
    text = json.dumps(doc)
    assert json.dumps(derive(dict(reversed(list(counters.items()))), spec)) == text


def test_one_configuration_document_has_top_level_keys():
    cfg = CONFIGS[0]
    spec = JobSpec([cfg], games=50, seed=2)
    doc = derive(count(fake_play_games(cfg, 2, 0, 50), 0, cfg), spec)
    for key in ("games_finished", "games_truncated", "rounds", "turns", "score", "bots", "seats"):
        assert doc[key] == doc["configurations"][0][key]
    assert doc["score"]["ci95"] is not None
    assert doc["bots"]["st_a"]["win_rate_ci95"] is not None
    assert doc["seats"][1]["score"]["mean"] is not None
    # Partial (empty) counters still give a full document, with nulls.
    empty = derive({}, spec)
    assert empty["games_done"] == 0 and empty["score"]["mean"] is None
    assert empty["bots"]["st_a"]["win_rate"] is None


def test_truncated_games_left_out_of_everything_but_their_counts():
    cfg = CONFIGS[0]
    rec = fake_play_games(cfg, 8, 0, 400)
    assert rec.truncated.any()
    full = count(rec, 0, cfg)
    only_finished = count(rec.take(~rec.truncated), 0, cfg)
    trunc_keys = {
        k for k in full if k.endswith(("|truncated", "truncated.round_cap", "truncated.no_tiles"))
    }
    assert {k: v for k, v in full.items() if k not in trunc_keys} == only_finished
    assert full["c0|truncated.round_cap"] == int((rec.end_reason == END_ROUND_CAP).sum())
    assert full["c0|truncated.no_tiles"] == int((rec.end_reason == END_NO_TILES).sum())
    assert full["c0|games"] == int((rec.end_reason == END_ROW_COMPLETED).sum())


def test_collection_is_paused_while_a_document_is_built_and_resumes_after_the_last_block():
    """`sim.stats.collection`: blocks in several threads at once; collection comes back on when
    the last one ends, and stays off if it was off before the first."""
    import gc
    import threading

    from sim.stats.collection import collection_paused

    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other():
        with collection_paused():
            inside.set()
            release.wait(30)

    t = threading.Thread(target=other)
    with collection_paused():
        assert not gc.isenabled()
        t.start()
        assert inside.wait(30)
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    t.join(30)
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()
