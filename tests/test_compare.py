"""Mirrored groups, group and paired counters, and sequential stopping, in-process (sim/)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from service.replay import DEAL, replay_game
from sim.jobs.local import run_local
from sim.jobs.play import play_games
from sim.jobs.sequential import Prefix, play_joint
from sim.jobs.spec import JobSpec
from sim.stats import count, merge_all
from sim.stats.groups import UNIT, count_groups, count_paired
from sim.stats.sprt import llr_pentanomial


def mirrored(players=2, bots=None, games=40, seed=3, stop=None, wall="coloured"):
    bots = bots or ["heuristic"] + ["greedy"] * (players - 1)
    data = {
        "configurations": [{"players": players, "bots": bots, "seating": "mirrored", "wall": wall}],
        "games": games,
        "seed": seed,
    }
    if stop:
        data["stop"] = stop
    return JobSpec.from_dict(data)


@pytest.mark.parametrize("players,wall", [(2, "coloured"), (3, "gray"), (4, "coloured")])
def test_group_games_share_the_deal_and_rotate_the_seats(players, wall):
    spec = mirrored(players, wall=wall, games=2 * players, seed=11)
    bots = spec.configurations[0].bots
    for group in range(2):
        games = [replay_game(spec, 0, group * players + j) for j in range(players)]
        # The bots rotate through the seats, so each starts once (the start seat is shared).
        assert len({g.first_player for g in games}) == 1
        for p in range(players):
            assert sorted(g.seat_bots[p] for g in games) == sorted(bots)
        # Same tiles and refills: the factories of every round dealt from the bag alone (before
        # the first pour of the lid, which depends on play) are identical across the group.
        deals = [[s.state for s in g.steps if s.kind == DEAL] for g in games]
        full = (100 - 4 * (2 * players + 1)) // (4 * (2 * players + 1)) + 1
        reached = min(len(d) for d in deals)
        assert reached >= 2
        for r in range(min(reached, full)):
            fills = {repr(d[r]["factories"]) for d in deals}
            assert len(fills) == 1, f"group {group} round {r + 1} differs"
        # Replay and the batch driver agree game for game.
        rec = play_games(spec.configurations[0], spec.seed, group * players, (group + 1) * players)
        assert [list(map(int, s)) for s in rec.scores] == [g.scores for g in games]
    # Another group gets another deal.
    a = replay_game(spec, 0, 0).steps[0].state["factories"]
    b = replay_game(spec, 0, players).steps[0].state["factories"]
    assert a != b


def _points(rec, i):
    """Focal (bot index 0) share of the win in game i, in 1/12, written out plainly."""
    seat = list(rec.seat_bot[i]).index(0)
    winners = [p for p in range(rec.players) if rec.winners[i, p]]
    return UNIT // len(winners) if seat in winners else 0


@pytest.mark.parametrize("players", [2, 3, 4])
def test_group_counters_match_a_plain_loop(players):
    spec = mirrored(players, bots=["greedy"] + ["random"] * (players - 1), games=60 * players)
    rec = play_games(spec.configurations[0], spec.seed, 0, spec.games)
    got = count_groups(rec, 0)
    n = s = q = gq = 0
    penta = [0] * 5
    for k in range(spec.games // players):
        idx = range(k * players, (k + 1) * players)
        if any(rec.truncated[i] for i in idx):
            continue
        pts = [_points(rec, i) for i in idx]
        total = sum(pts)
        n, s, q, gq = n + 1, s + total, q + total * total, gq + sum(x * x for x in pts)
        if players == 2:
            penta[total // 6] += 1
    assert got.get("c0|group|n", 0) == n and got.get("c0|group|sum", 0) == s
    assert got.get("c0|group|sumsq", 0) == q and got.get("c0|group|game_sumsq", 0) == gq
    if players == 2:
        assert [got.get(f"c0|penta|n{i}", 0) for i in range(5)] == penta
        assert sum(penta) == n
    # The counters of the whole job are those of its chunks merged.
    halves = [
        count(rec.take(slice(0, spec.games // 2)), 0, spec.configurations[0]),
        count(rec.take(slice(spec.games // 2, None)), 0, spec.configurations[0]),
    ]
    assert merge_all(halves) == count(rec, 0, spec.configurations[0])


def test_group_counting_refuses_split_groups():
    spec = mirrored(2, games=8)
    rec = play_games(spec.configurations[0], spec.seed, 0, 8)
    with pytest.raises(ValueError, match="whole groups"):
        count_groups(rec.take(slice(1, 7)), 0)


def test_group_statistics_are_derived():
    spec = mirrored(2, games=400)
    doc = run_local(spec, workers=1).statistics()
    g = doc["groups"]
    assert g["focal"] == "heuristic" and g["groups"] == 200 - g["truncated_groups"]
    assert sum(g["pentanomial"]) == g["groups"]
    assert 0.5 < g["score"] < 1 and g["score_ci95"][0] < g["score"] < g["score_ci95"][1]
    assert g["elo_ci95"][0] < g["elo"] < g["elo_ci95"][1]
    assert g["los"] > 0.99 and g["variance_gain"] > 0
    # The group score agrees with the per-bot win rate counted the ordinary way (shared wins
    # aside, which are rare).
    assert abs(g["score"] - doc["bots"]["heuristic"]["win_rate"]) < 0.02


def paired_spec(games=120, stop=None, seating="rotate"):
    data = {
        "configurations": [
            {"players": 3, "bots": ["greedy", "random", "random"], "seating": seating},
            {"players": 3, "bots": ["heuristic", "random", "random"], "seating": seating},
            {"players": 2, "bots": ["greedy", "random"]},  # not paired: other player count
        ],
        "games": games,
        "seed": 5,
        "baseline": 0,
    }
    if stop:
        data["stop"] = stop
    return JobSpec.from_dict(data)


def test_paired_counters_match_a_plain_loop():
    spec = paired_spec()
    base = play_games(spec.configurations[0], spec.seed, 0, spec.games)
    other = play_games(spec.configurations[1], spec.seed, 0, spec.games)
    got = count_paired(base, other, 1)
    n = ds = dq = ws = wq = 0
    for i in range(spec.games):
        if base.truncated[i] or other.truncated[i]:
            continue
        seat = list(base.seat_bot[i]).index(0)
        assert list(other.seat_bot[i]).index(0) == seat  # same seats game for game
        d = int(other.scores[i, seat]) - int(base.scores[i, seat])
        w = int(other.winners[i, seat]) - int(base.winners[i, seat])
        n, ds, dq, ws, wq = n + 1, ds + d, dq + d * d, ws + w, wq + w * w
    assert (got.get("c1|paired|n", 0), got.get("c1|paired|score.sum", 0)) == (n, ds)
    assert got.get("c1|paired|score.sumsq", 0) == dq
    assert (got.get("c1|paired|win.sum", 0), got.get("c1|paired|win.sumsq", 0)) == (ws, wq)
    doc = run_local(spec, workers=1).statistics()
    p = doc["configurations"][1]["paired"]
    assert p["baseline"] == 0 and p["games"] == n
    assert p["score_diff"] == pytest.approx(ds / n)
    assert p["score_diff_ci95"][0] < p["score_diff"] < p["score_diff_ci95"][1]
    assert p["win_rate_diff"] == pytest.approx(ws / n)
    assert "paired" not in doc["configurations"][0] and "paired" not in doc["configurations"][2]
    # The joint run counts every configuration as a plain run does.
    plain = run_local(dataclasses.replace(spec, baseline=None), workers=1).statistics()
    for k in range(3):
        c = dict(doc["configurations"][k])
        c.pop("paired", None)
        assert c == plain["configurations"][k]


SPRT = {"rule": "sprt", "elo0": 0, "elo1": 20, "check_every": 20}


def test_sprt_stops_at_the_same_game_whatever_the_chunking_and_workers():
    spec = mirrored(2, games=4000, stop=SPRT)
    runs = [
        run_local(spec, workers=1, chunk_size=20),
        run_local(spec, workers=1, chunk_size=60),
        run_local(spec, workers=2, chunk_size=20),
        run_local(spec, workers=2, chunk_size=100),
    ]
    first = runs[0]
    assert first.stopping["reason"] == "h1_accepted"
    assert first.stopping["games"] < spec.games
    assert first.stopping["llr"] >= first.stopping["llr_bounds"][1]
    for r in runs[1:]:
        assert r.counters == first.counters
        assert r.stopping == first.stopping
    # The statistics are exactly those of the prefix: the same job without a rule, cut there.
    prefix = dataclasses.replace(spec, games=first.stopping["games"], stop=None)
    assert run_local(prefix, workers=1).counters == first.counters
    # And the LLR is fishtest's on the prefix's pentanomial.
    penta = first.statistics()["groups"]["pentanomial"]
    assert first.stopping["llr"] == pytest.approx(llr_pentanomial(penta, 0, 20))
    # Check points every 20 games up to the stop, the path kept.
    points = first.stopping["check_points"]
    assert [p["games"] for p in points] == list(range(20, first.stopping["games"] + 1, 20))
    assert all(p["llr_bounds"][0] < p["llr"] < p["llr_bounds"][1] for p in points[:-1])
    # The bounds are the nominal ones moved in for the interval between check points.
    nominal = first.stopping["llr_bounds_nominal"]
    assert nominal == pytest.approx([-2.944, 2.944], abs=1e-3)
    assert all(nominal[0] < p["llr_bounds"][0] < 0 < p["llr_bounds"][1] < nominal[1]
               for p in points)  # fmt: skip


def test_prefix_ignores_order_repeats_and_what_lies_past_the_stop():
    spec = mirrored(2, games=400, stop=SPRT)
    chunks = [play_joint(spec, a, a + 80) for a in range(0, 400, 80)]

    def run(order, repeat):
        prefix = Prefix(spec)
        for i in order:
            for _ in range(repeat):
                prefix.add(chunks[i])
        trimmed.append(prefix.trim)
        if prefix.trim is not None:
            prefix.finish(play_joint(spec, *prefix.trim))
        assert prefix.done
        return prefix

    trimmed = []
    forward = run(range(len(chunks)), 1)
    assert forward.reason == "h1_accepted" and forward.games % 20 == 0
    # This seed stops inside a chunk: the games up to the check point are counted again alone.
    assert trimmed == [(80, 120)] and forward.games == 120
    shuffled = run(np.random.default_rng(0).permutation(len(chunks)), 2)  # redelivered chunks
    assert shuffled.counters == forward.counters
    assert shuffled.summary() == forward.summary()
    # The rule's counters per segment add up to the full counters of the prefix.
    rule_keys = {k: v for k, v in forward.counters.items() if "|group|" in k or "|penta|" in k}
    assert rule_keys == forward.rule


def test_paired_sprt_and_precision_rules():
    spec = paired_spec(
        games=3000,
        stop={"rule": "sprt", "configuration": 1, "delta0": 0, "delta1": 2, "check_every": 30},
    )
    a = run_local(spec, workers=1, chunk_size=30)
    b = run_local(spec, workers=2, chunk_size=90)
    assert a.stopping["reason"] == "h1_accepted"  # heuristic scores more than greedy
    assert a.counters == b.counters and a.stopping == b.stopping
    prec = mirrored(
        2,
        games=4000,
        stop={"rule": "precision", "statistic": "score", "eps": 0.05, "check_every": 40},
    )
    r = run_local(prec, workers=1)
    assert r.stopping["reason"] == "precision_reached"
    lo, hi = r.stopping["ci95"]
    assert (hi - lo) / 2 <= 0.05
    # One check point earlier the interval was still wider than asked.
    before = r.stopping["check_points"][-2]
    assert (before["ci95"][1] - before["ci95"][0]) / 2 > 0.05


def test_maximum_reached_when_nothing_decides():
    spec = mirrored(
        2,
        bots=["random", "random"],
        games=80,
        stop={"rule": "sprt", "elo0": -5, "elo1": 5, "check_every": 20},
    )
    r = run_local(spec, workers=1)
    assert r.stopping["reason"] == "max_games" and r.stopping["games"] == 80
    assert r.statistics()["games_done"] == 80
