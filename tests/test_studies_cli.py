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
    from sim.local import simulate
    from sim.tournament import tournament_spec

    doc = simulate(tournament_spec(["random", "greedy", "heuristic"], games_per_pair=20), workers=1)
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "t.png"
    assert main(["report", "--from", str(path), "-o", str(out)]) == 0
    from PIL import Image

    with Image.open(out) as image:
        width, height = image.size
    assert width > 1000 and height > 1500  # the ratings row above the three configurations
