"""Pentanomial, Elo and GSPRT maths against fishtest's reference values (docs/statistics.md)
and against computations written out independently here."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from sim.stats import sprt

# fishtest's example: elo0 = -3, elo1 = 1 (logistic) -> LLR 2.131; Elo -0.77 [-2.05, 0.50].
FISHTEST = [10789, 19328, 33806, 19402, 10543]


def test_reference_llr_exact_and_normal():
    assert sprt.llr_pentanomial(FISHTEST, -3, 1) == pytest.approx(2.131, abs=5e-4)
    n, mu, var = sprt.pentanomial_moments(FISHTEST)
    approx = sprt.llr_normal(n, mu, var, sprt.elo_to_score(-3), sprt.elo_to_score(1))
    assert approx == pytest.approx(2.131, abs=5e-4)


def test_reference_elo_interval():
    n, mu, var = sprt.pentanomial_moments(FISHTEST)
    assert n == sum(FISHTEST)
    e = sprt.elo_summary(mu, var, n)
    assert e["elo"] == pytest.approx(-0.77, abs=0.005)
    assert e["elo_ci95"][0] == pytest.approx(-2.05, abs=0.005)
    assert e["elo_ci95"][1] == pytest.approx(0.50, abs=0.005)
    assert 0.0 < e["los"] < 0.5  # mu < 1/2


def _brute_force_constrained_mle(p, values, s):
    """max sum p log q  s.t.  sum q = 1, sum values q = s, q > 0 - by a generic optimiser."""
    res = minimize(
        lambda q: -(p * np.log(q)).sum(),
        np.full(len(p), 1.0 / len(p)),
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * len(p),
        constraints=[
            {"type": "eq", "fun": lambda q: q.sum() - 1.0},
            {"type": "eq", "fun": lambda q: (values * q).sum() - s},
        ],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x


@pytest.mark.parametrize(
    "counts,elo0,elo1",
    [
        (FISHTEST, -3, 1),
        ([30, 80, 200, 120, 70], 0, 20),
        ([5, 0, 40, 0, 3], -10, 10),  # empty cells (counted as 1e-3)
        ([1, 2, 3, 4, 50], 0, 50),
    ],
)
def test_llr_matches_brute_force_maximisation(counts, elo0, elo1):
    n = np.array(counts, float)
    n = np.where(n == 0, 1e-3, n)
    p = n / n.sum()
    values = np.arange(5) / 4
    loglik = []
    for elo in (elo0, elo1):
        q = _brute_force_constrained_mle(p, values, 1 / (1 + 10 ** (-elo / 400)))
        loglik.append(n.sum() * (p * np.log(q)).sum())
    expected = loglik[1] - loglik[0]
    assert sprt.llr_pentanomial(counts, elo0, elo1) == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_llr_sign_follows_the_data():
    strong = [10, 20, 100, 200, 300]  # A scores far above 1/2
    assert sprt.llr_pentanomial(strong, 0, 20) > 0
    weak = list(reversed(strong))
    assert sprt.llr_pentanomial(weak, 0, 20) < 0
    assert sprt.llr_pentanomial([0, 0, 0, 0, 0], 0, 20) == 0.0


def test_llr_grows_linearly_with_repeated_data():
    one = sprt.llr_pentanomial([30, 80, 200, 120, 70], 0, 20)
    ten = sprt.llr_pentanomial([300, 800, 2000, 1200, 700], 0, 20)
    assert ten == pytest.approx(10 * one, rel=1e-9)


def test_bounds():
    lo, hi = sprt.sprt_bounds(0.05, 0.05)
    assert lo == pytest.approx(-2.944, abs=1e-3)
    assert hi == pytest.approx(2.944, abs=1e-3)
    lo, hi = sprt.sprt_bounds(0.05, 0.1)
    assert lo == pytest.approx(math.log(0.1 / 0.95))
    assert hi == pytest.approx(math.log(0.9 / 0.05))


def test_elo_score_round_trip():
    for elo in (-400, -20, 0, 1, 35.5, 400):
        assert sprt.score_to_elo(sprt.elo_to_score(elo)) == pytest.approx(elo)
    assert sprt.elo_to_score(0) == 0.5
    assert sprt.score_to_elo(1.0) == math.inf


def test_pentanomial_moments_by_hand():
    # 1 pair at 0 points, 1 at 2 points: per-game scores 0 and 1.
    n, mu, var = sprt.pentanomial_moments([1, 0, 0, 0, 1])
    assert (n, mu, var) == (2, 0.5, 0.25)
    assert sprt.pentanomial_moments([0] * 5) == (0, None, None)


def test_sample_moments_and_interval():
    xs = np.array([3, -1, 4, 1, -5, 9, 2, 6])
    mean, var = sprt.sample_moments(len(xs), int(xs.sum()), int((xs * xs).sum()), unit=2.0)
    assert mean == pytest.approx((xs / 2).mean())
    assert var == pytest.approx((xs / 2).var())
    lo, hi = sprt.interval(mean, var, len(xs))
    assert hi - mean == pytest.approx(1.959964 * math.sqrt(var / len(xs)), rel=1e-6)
    assert mean - lo == pytest.approx(hi - mean)


def test_normal_llr_no_spread_is_zero():
    assert sprt.llr_normal(10, 0.5, 0.0, 0.5, 0.6) == 0.0
    assert sprt.llr_normal(0, None, None, 0.5, 0.6) == 0.0


def test_fixed_sample_size_formula():
    # sigma 1, shift 0.1, alpha = beta = 0.05: (2 * 1.6449 / 0.1)^2 = 1082.2
    assert sprt.fixed_sample_size(1.0, 0.0, 0.1, 0.05, 0.05) == pytest.approx(1082.2, abs=0.1)
