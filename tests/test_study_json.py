"""Every study command's ``--json`` feeds ``azulsim report --from``: the output of one command is
the input of the next (sweep, compare, tournament and simulate; in process)."""

from __future__ import annotations

import json

import pytest

from service.cli import main
from service.report import load_statistics

STUDIES = {
    "sweep": (["sweep", "--bots", "heuristic:floor=0..2/1,greedy", "--games", "40", "--seed",
               "2"], "sweep"),
    "compare": (["compare", "heuristic", "greedy", "--max-games", "80", "--seed", "3"], None),
    "tournament": (["tournament", "random", "greedy", "heuristic", "--games-per-pair", "20"],
                   "ratings"),
    "simulate": (["simulate", "--bots", "greedy,random", "--games", "30", "--workers", "1"],
                 None),
}  # fmt: skip


@pytest.mark.parametrize("command", list(STUDIES))
def test_the_json_of_every_study_draws_with_report(command, tmp_path, capsys):
    argv, kind = STUDIES[command]
    assert main([*argv, "--json"]) == 0
    saved = tmp_path / f"{command}.json"
    saved.write_text(capsys.readouterr().out)
    doc = load_statistics(saved)  # the statistics document inside the study's answer
    assert doc["schema"] == "azulsim.stats/1" and doc["games_done"] > 0
    if kind is not None:
        assert doc[kind] == {k: v for k, v in json.loads(saved.read_text()).items()
                             if k not in ("spec", "statistics")}  # fmt: skip
    page = tmp_path / f"{command}.html"
    assert main(["report", "--from", str(saved), "-o", str(page)]) == 0, capsys.readouterr().err
    text = page.read_text()
    assert "<h2>" in text and "data:image/png;base64," in text
    if kind is not None:  # the study's own row is drawn, not only its configurations
        assert f'alt="{kind}"' in text
    assert main(["report", "--from", str(saved), "-o", str(tmp_path / "r.png")]) == 0


def test_the_same_study_prints_the_same_json_twice(capsys):
    """The embedded document leaves out timing: the JSON of one spec and seed is reproducible."""
    argv = [*STUDIES["sweep"][0], "--json"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out == first
