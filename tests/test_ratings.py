"""Ratings (sim/stats/ratings.py) against an independent computation: a direct scipy.optimize
maximisation of the Bradley-Terry likelihood, a numerical Hessian, closed forms for two bots, and
the fitted model's predictions against the observed head-to-head rates of a real tournament."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from sim.experiments.tournament import head_to_head_matrix, tournament_spec
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from sim.stats import derive
from sim.stats.intervals import Z95
from sim.stats.ratings import ELO_PER_NAT, PRIOR_DRAWS, fit, information


def _neg_loglik(free, points, meetings, anchor):
    """-log L of Bradley-Terry (prior draws included) with theta[anchor] = 0."""
    theta = np.insert(free, anchor, 0.0)
    met = meetings > 0
    w = points + PRIOR_DRAWS / 2 * met
    diff = theta[:, None] - theta[None, :]
    # w[i, j] * log P(i above j), P = 1 / (1 + exp(-diff))
    return float((w * np.logaddexp(0.0, -diff)).sum())


def _scipy_fit(points, meetings, anchor):
    n = len(points)
    res = minimize(
        _neg_loglik,
        np.zeros(n - 1),
        args=(points, meetings, anchor),
        method="Nelder-Mead",  # no derivatives: nothing shared with the MM fit
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 200_000, "maxfev": 200_000},
    )
    assert res.success, res.message
    return np.insert(res.x, anchor, 0.0)


def _numeric_hessian(f, x, h=1e-4):
    n = len(x)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (
                f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)
            ) / (4 * h * h)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mm_fit_and_information_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = 5
    strength = rng.normal(0, 1.2, n)
    meetings = np.zeros((n, n))
    points = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            m = int(rng.integers(20, 400))
            p = 1 / (1 + math.exp(strength[j] - strength[i]))
            won = rng.binomial(m, p)
            meetings[i, j] = meetings[j, i] = m
            points[i, j], points[j, i] = won, m - won
    theta, _, converged = fit(points, meetings)
    assert converged
    anchor = 2
    ours = theta - theta[anchor]
    theirs = _scipy_fit(points, meetings, anchor)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    # The covariance of theta relative to the anchor: inverse of the information without the
    # anchor, against a finite-difference Hessian of the same likelihood.
    free = [i for i in range(n) if i != anchor]
    info = information(ours, meetings)[np.ix_(free, free)]
    numeric = _numeric_hessian(lambda x: _neg_loglik(x, points, meetings, anchor), ours[free])
    np.testing.assert_allclose(info, numeric, rtol=1e-4)


def test_two_bots_closed_form():
    # theta_a - theta_b = ln((W + 1/2) / (L + 1/2)); var = 1 / (N' p (1 - p)), N' = N + 1.
    wins, losses = 70.0, 30.0
    points = np.array([[0, wins], [losses, 0]])
    meetings = np.array([[0, 100.0], [100.0, 0]])
    theta, _, _ = fit(points, meetings)
    diff = theta[0] - theta[1]
    assert diff == pytest.approx(math.log(70.5 / 30.5), abs=1e-8)
    p = 70.5 / 101
    info = information(theta - theta[1], meetings)
    assert info[0, 0] == pytest.approx(101 * p * (1 - p))
    # On the Elo scale, 70 % is about 147 Elo (400 log10(70.5/30.5)).
    assert diff * ELO_PER_NAT == pytest.approx(400 * math.log10(70.5 / 30.5))


@pytest.fixture(scope="module")
def ladder():
    spec = tournament_spec(
        ["random", "greedy", "heuristic"], games_per_pair=400, seed=5, anchor="greedy"
    )
    result = run_local(spec, workers=1)
    return spec, result.counters, result.statistics()


def test_tournament_spec_is_mirrored_pairs_with_ratings(ladder):
    spec, _, doc = ladder
    assert [c.bots for c in spec.configurations] == [
        ("random", "greedy"),
        ("random", "heuristic"),
        ("greedy", "heuristic"),
    ]
    assert all(c.seating == "mirrored" for c in spec.configurations)
    assert spec.ratings.anchor == "greedy"
    assert JobSpec.from_json(spec.to_json()) == spec
    assert doc["ratings"]["comparisons"] == sum(c["games_finished"] for c in doc["configurations"])


def test_tournament_ratings_order_anchor_and_intervals(ladder):
    spec, counters, doc = ladder
    ratings = doc["ratings"]
    assert ratings["converged"]
    assert [r["bot"] for r in ratings["bots"]] == ["heuristic", "greedy", "random"]
    by_bot = {r["bot"]: r for r in ratings["bots"]}
    assert by_bot["greedy"]["elo"] == 0.0 and by_bot["greedy"]["elo_ci95"] == [0.0, 0.0]
    # Independent: scipy on the head-to-head counts read straight from the document.
    labels = ["random", "greedy", "heuristic"]
    points = np.zeros((3, 3))
    meetings = np.zeros((3, 3))
    for cfg in doc["configurations"]:
        for a, row in cfg["head_to_head"].items():
            for b, h in row.items():
                i, j = labels.index(a), labels.index(b)
                points[i, j] += h["above"] + h["level"] / 2
                meetings[i, j] += h["meetings"]
    theirs = _scipy_fit(points, meetings, anchor=1) * ELO_PER_NAT
    for i, label in enumerate(labels):
        assert by_bot[label]["elo"] == pytest.approx(theirs[i], abs=1e-3)
    free = [0, 2]
    hess = _numeric_hessian(
        lambda x: _neg_loglik(x, points, meetings, 1), theirs[free] / ELO_PER_NAT
    )
    se = np.sqrt(np.diag(np.linalg.inv(hess))) * ELO_PER_NAT
    for k, i in enumerate(free):
        lo, hi = by_bot[labels[i]]["elo_ci95"]
        assert (hi - lo) / 2 == pytest.approx(Z95 * se[k], rel=1e-3)


def test_predicted_head_to_head_agrees_with_observed(ladder):
    _, _, doc = ladder
    pairs = doc["ratings"]["head_to_head"]
    assert len(pairs) == 3
    for pair in pairs:
        lo, hi = pair["observed_ci95"]
        assert lo <= pair["observed"] <= hi
        assert pair["agrees"] == (lo <= pair["predicted"] <= hi)
    # Three pairs, two free ratings: the model can fit all three only if it describes the games.
    assert all(pair["agrees"] for pair in pairs)
    labels, rates = head_to_head_matrix(doc)
    assert labels == ["heuristic", "greedy", "random"]
    assert rates[0][1] == pytest.approx(1 - rates[1][0]) and rates[0][0] is None


def test_ratings_are_chunking_independent(ladder):
    spec, counters, doc = ladder
    other = run_local(spec, workers=1, chunk_size=120)
    assert derive(other.counters, spec)["ratings"] == doc["ratings"]


def test_three_player_tables_decompose_into_pairs():
    spec = tournament_spec(
        ["random", "greedy", "heuristic", "heuristic:floor=3"], players=3, games_per_pair=60, seed=2
    )
    # 4 tables, each in both orders of its seats around the table.
    assert len(spec.configurations) == 8 and all(c.players == 3 for c in spec.configurations)
    assert spec.configurations[0].bots == ("random", "greedy", "heuristic")
    assert spec.configurations[1].bots == ("random", "heuristic", "greedy")
    assert spec.games == 30  # 60 games of each table: 30 (10 mirrored groups) in each order
    doc = derive(run_local(spec, workers=1).counters, spec)
    ratings = doc["ratings"]
    assert "pairwise decomposition" in ratings["model"]
    # Every table of 3 is 3 comparisons per finished game.
    assert ratings["comparisons"] == 3 * doc["games_finished"]
    assert ratings["anchor"] == "random"
    assert [r["bot"] for r in ratings["bots"]][-1] == "random"


def test_four_player_tables_are_played_in_every_order_around_the_table():
    """A rotation keeps who plays right after whom; the six orders of a table of 4 up to rotation
    give every bot every neighbour on either side equally often."""
    bots = ["random", "greedy", "heuristic", "rollout"]
    spec = tournament_spec(bots, players=4, games_per_pair=50)
    assert spec.games == 12  # 50 games of the table, rounded up to 6 orders x 3 groups of 4
    orders = [c.bots for c in spec.configurations]
    assert len(orders) == 6 and len(set(orders)) == 6
    after = {}  # (bot, the bot right after it) -> configurations
    for bots in orders:
        assert bots[0] == "random"
        for i, b in enumerate(bots):
            after[b, bots[(i + 1) % 4]] = after.get((b, bots[(i + 1) % 4]), 0) + 1
    assert len(after) == 12 and set(after.values()) == {2}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ratings": {"anchor": "rollout"}}, "ratings.anchor must be a bot of the configurations"),
        ({"ratings": {"anchor": "nosuchbot"}}, "ratings.anchor"),
        ({"ratings": {"best": "greedy"}}, "ratings: unknown field 'best'"),
        ({"ratings": "greedy"}, "ratings must be an object"),
    ],
)
def test_bad_ratings_name_the_field(change, message):
    data = {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 2, "seed": 1}
    with pytest.raises(ValueError, match=message):
        JobSpec.from_dict({**data, **change})


def test_bad_tournaments_are_refused():
    with pytest.raises(ValueError, match="at least 3 bots"):
        tournament_spec(["greedy", "random"], players=3)
    with pytest.raises(ValueError, match="different bots"):
        tournament_spec(["heuristic:floor=1", "heuristic"])
    with pytest.raises(ValueError, match=r"bots\[1\]"):
        tournament_spec(["greedy", "nosuchbot"])
