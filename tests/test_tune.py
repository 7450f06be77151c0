"""SPSA tuning (sim/experiments/tune.py, ``azulsim tune``): the arithmetic, validation, the same
path for the same seed in-process and through the service, the check, and the report of the path."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from service.cli.tune import _player, _run
from sim.experiments import tune
from sim.experiments.tune import Tuning
from tests.cli_util import azulsim


def _small(**kw) -> Tuning:
    args = {"iterations": 3, "pairs": 6, "seed": 4, **kw}
    return Tuning("heuristic", ("floor", "bonus", "partial", "marker"), **args)


def test_gains_signs_and_steps():
    t = _small(iterations=10, a=4.0)
    a0, c0 = t.gains(0)
    a5, c5 = t.gains(5)
    assert a0 == pytest.approx(4.0 / 2.0**0.602) and a5 < a0
    assert c0.tolist() == [0.25, 0.25, 0.1, 0.25]  # a twentieth of each range
    assert (c5 < c0).all()
    assert np.array_equal(t.signs(3), _small(iterations=10).signs(3))
    assert set(t.signs(3).tolist()) <= {-1.0, 1.0}
    theta = {"floor": 1.0, "bonus": 1.0, "partial": 0.6, "marker": 1.0}
    assert t.step(theta, 0, 0.5) == theta  # no edge: no move
    up = t.step(theta, 0, 0.9)
    for i, p in enumerate(t.params):  # the plus side won: move towards it, by a_k*0.4*c^2/c_k
        expected = theta[p.name] + a0 * 0.4 * t.signs(0)[i] * p.c**2 / c0[i]
        assert up[p.name] == pytest.approx(expected)
    plus, minus = t.sides(theta, 0)
    assert all(plus[n] - theta[n] == pytest.approx(theta[n] - minus[n]) for n in theta)
    far = t.step({**theta, "partial": 1.99}, 0, 1.0 if t.signs(0)[2] > 0 else 0.0)
    assert far["partial"] == 2.0  # clipped to the schema's range


def test_int_parameters_play_whole_values_and_specs_keep_the_fixed_ones():
    t = Tuning("deep:nodes=24,tail=2", ("width", "floor"), iterations=2, pairs=2)
    assert t.params[0].integer and t.params[0].c == 1.0
    spec = t.spec_of({"width": 4.4, "floor": 1.23456})
    assert spec == "deep:floor=1.2346,nodes=24,tail=2,width=4"


@pytest.mark.parametrize(
    "bot,names,kw,message",
    [
        ("heuristic", (), {}, "name at least one"),
        ("heuristic", ("floor", "floor"), {}, "named twice"),
        ("heuristic", ("nope",), {}, "unknown parameter"),
        ("external:cmd=x", ("args",), {}, "not a bounded number"),
        ("heuristic", ("floor",), {"c": {"floor": 4.0}}, "half its range"),
        ("heuristic", ("floor",), {"c": {"bonus": 1.0}}, "not tuned parameters"),
        ("heuristic", ("floor",), {"pairs": 0}, "pairs must be a positive integer"),
        ("heuristic", ("floor",), {"players": 5}, "players"),
    ],
)
def test_bad_arguments_name_the_field(bot, names, kw, message, monkeypatch):
    monkeypatch.setenv("AZULSIM_EXTERNAL_CMD", "1")
    with pytest.raises(ValueError, match=message):
        Tuning(bot, names, **kw)


def _local(spec):
    from sim.jobs.local import run_local

    return run_local(spec, workers=1).statistics()


def test_the_same_seed_gives_the_same_path_and_another_seed_another():
    one = tune.run(_small(), _local)
    two = tune.run(_small(), _local)
    assert one == two
    assert [p["iteration"] for p in one["path"]] == [0, 1, 2]
    assert all(p["games"] == 12 and 0 <= p["score"] <= 1 for p in one["path"])
    assert one["path"][1]["theta"] == one["path"][0]["next"]
    other = tune.run(_small(seed=5), _local)
    assert [p["signs"] for p in other["path"]] != [p["signs"] for p in one["path"]]


def test_the_check_is_an_sprt_of_the_tuned_values_against_the_start():
    doc = tune.run(_small(), _local)
    doc["final_spec"] = "heuristic:floor=2.5"  # a clearly different bot, so the SPRT decides
    spec = tune.check_spec(doc, 0.0, 10.0, 2000, 9)
    assert spec.stop.rule == "sprt" and spec.configurations[0].seating == "mirrored"
    assert spec.configurations[0].bots == ("heuristic:floor=2.5", "heuristic")
    args = types.SimpleNamespace(sprt="0,10", check_games=600, seed=4, workers=1, server=None)
    checked = _run(args, _small(), _player(args))
    assert set(checked["check"]) >= {"verdict", "games", "elo", "elo0", "elo1"}


def test_cli_json_then_report_draws_the_path(tmp_path):
    out = azulsim(
        "tune", "heuristic", "--params", "floor,bonus,partial,marker", "--iterations", "2",
        "--pairs", "4", "--seed", "3", "--sprt", "none", "--json",
    )  # fmt: skip
    doc = json.loads(out.stdout)
    assert doc["schema"] == "azulsim.tune/1" and len(doc["path"]) == 2
    assert "iteration 2" in out.stderr
    saved = tmp_path / "tune.json"
    saved.write_text(out.stdout)
    for ext in ("png", "html"):
        azulsim("report", "--from", str(saved), "-o", str(tmp_path / f"tune.{ext}"))
        assert (tmp_path / f"tune.{ext}").stat().st_size > 1000
    bad = azulsim("tune", "heuristic", "--params", "nope", check=False)
    assert bad.returncode == 2 and "unknown parameter" in bad.stderr


def test_through_the_service_the_same_path(azulsim_env, celery_worker_process):
    from service.config import ServerConfig
    from service.server import make_backend
    from service.testing import ServerThread
    from workers.settings import load_settings

    celery_worker_process(azulsim_env, concurrency=1)
    config = ServerConfig()
    with ServerThread(make_backend(config, load_settings(azulsim_env)), config) as server:
        args = types.SimpleNamespace(server=server.address, token="", tls_ca=None, timeout=20)
        remote = tune.run(_small(), _player(args))
    assert remote == tune.run(_small(), _local)
