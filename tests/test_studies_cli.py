"""`azulsim tournament` and `azulsim sweep` in process, and `azulsim report` of their documents."""

from __future__ import annotations

import json

import pytest

from service.cli import main


def test_tournament_table_matrix_and_model_check(capsys):
    argv = ["tournament", "random", "greedy", "heuristic", "--games-per-pair", "40", "--seed", "3"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "anchor random = 0" in text
    lines = text.splitlines()
    ranks = [ln.split()[1] for ln in lines if ln.strip()[:1].isdigit() and "%" in ln]
    assert ranks == ["heuristic", "greedy", "random"]
    assert "Head to head: score rate of the row bot" in text and "Model check" in text
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [b["bot"] for b in doc["bots"]] == ranks
    assert doc["spec"]["ratings"] == {"anchor": "random"}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--anchor", "rollout"], "--anchor must be a bot"),
        (["--players", "4"], "needs at least 4 bots"),
        (["--games-per-pair", "0"], "--games-per-pair must be"),
    ],
)
def test_tournament_usage_errors(extra, message, capsys):
    assert main(["tournament", "random", "greedy", "heuristic", *extra]) == 2
    assert message in capsys.readouterr().err


def test_report_of_a_tournament(tmp_path, capsys):
    from sim.experiments.tournament import tournament_spec
    from sim.jobs.local import simulate

    doc = simulate(tournament_spec(["random", "greedy", "heuristic"], games_per_pair=20), workers=1)
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "t.png"
    assert main(["report", "--from", str(path), "-o", str(out)]) == 0
    from PIL import Image

    with Image.open(out) as image:
        width, height = image.size
    assert width > 1000 and height > 1500  # the ratings row above the three configurations


def test_sweep_table_and_best_value(capsys):
    argv = ["sweep", "--bots", "heuristic:floor=0..2/1,greedy", "--games", "60", "--seed", "2",
            "--baseline", "floor=1"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Sweep of heuristic (floor) against greedy: 3 values" in text
    assert "floor=1 (baseline)" in text and "Best value: floor=" in text
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    best = max(doc["rows"], key=lambda r: r["win_rate"])
    assert doc["best"]["win_rate"] == best["win_rate"]
    assert (
        "(best)"
        in [
            ln
            for ln in text.splitlines()
            if ln.strip().startswith(f"floor={doc['best']['values']['floor']:g}")
        ][0]
    )


@pytest.mark.parametrize(
    "bots, message",
    [
        ("heuristic:floor=0..3/0,greedy", "--bots: bot 'heuristic' parameter 'floor': STEP"),
        ("heuristic,greedy", "sweeps no parameter"),
    ],
)
def test_sweep_usage_errors(bots, message, capsys):
    assert main(["sweep", "--bots", bots]) == 2
    assert message in capsys.readouterr().err


def test_report_of_a_grid_sweep(tmp_path):
    from sim.experiments.sweep import sweep_spec
    from sim.jobs.local import simulate

    doc = simulate(sweep_spec(["heuristic:floor=0|2,marker=0|1", "greedy"], games=20), workers=1)
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "s.png"
    assert main(["report", "--from", str(path), "-o", str(out)]) == 0
    from PIL import Image

    with Image.open(out) as image:
        width, height = image.size
    # The sweep's row and the two configurations it details (baseline and best), not all four.
    rows = 3 if doc["sweep"]["best"]["configuration"] != 0 else 2
    assert height == pytest.approx(rows * 3.4 * 110 + 0.6 * 110, abs=40)


def test_html_report_of_a_sweep_draws_the_study_once(tmp_path):
    from service.report import html_page
    from sim.experiments.sweep import sweep_spec
    from sim.jobs.local import simulate

    doc = simulate(sweep_spec(["heuristic:floor=0|1|2", "greedy"], games=20), workers=1)
    page = html_page(doc)
    assert page.count('alt="sweep"') == 1
    shown = {doc["sweep"]["baseline"], doc["sweep"]["best"]["configuration"]}
    assert page.count("<h2>") == len(shown)  # the baseline and the best value, not all three
