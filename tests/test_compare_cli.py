"""``azulsim compare``: the verdict, the JSON keys, the same answer for any worker count."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from service.cli import main
from sim.stats.sprt import llr_pentanomial
from tests.waits import generous

KEYS = {"verdict", "games", "pairs", "pentanomial", "score", "score_ci95", "elo", "elo_ci95",
        "llr", "llr_bounds", "spec"}  # fmt: skip


def run_json(capsys, *argv):
    assert main(["compare", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_heuristic_beats_greedy_the_same_with_one_or_two_workers(capsys):
    one = run_json(capsys, "heuristic", "greedy", "--sprt", "0,20", "--workers", "1")
    two = run_json(capsys, "heuristic", "greedy", "--sprt", "0,20", "--workers", "2",
                   "--chunk-size", "40")  # fmt: skip
    assert KEYS <= set(one)
    assert one["verdict"] == "h1_accepted"
    assert one["llr"] >= one["llr_bounds"][1]
    assert one["llr_bounds"][1] < one["llr_bounds_nominal"][1] == pytest.approx(2.944, abs=1e-3)
    assert one["games"] == 2 * one["pairs"] == 2 * sum(one["pentanomial"])
    assert one["llr"] == pytest.approx(llr_pentanomial(one["pentanomial"], 0, 20))
    assert one["elo_ci95"][0] < one["elo"] < one["elo_ci95"][1] and one["elo"] > 20
    assert one["spec"]["configurations"][0]["seating"] == "mirrored"
    assert one["games"] < one["spec"]["games"]  # it stopped early
    assert two == one


def test_text_output_and_against_a_field(capsys):
    assert main(["compare", "heuristic", "greedy", "--sprt", "0,20"]) == 0
    text = capsys.readouterr().out
    assert "H1 accepted" in text and "LLR" in text and "Elo" in text
    out = run_json(capsys, "heuristic", "random", "--against", "greedy", "--players", "3",
                   "--sprt", "0,2", "--max-games", "3000")  # fmt: skip
    assert out["spec"]["baseline"] == 0
    assert [c["bots"] for c in out["spec"]["configurations"]] == [
        ["random", "greedy", "greedy"],
        ["heuristic", "greedy", "greedy"],
    ]
    assert out["verdict"] == "h1_accepted" and out["score"] > 2
    assert out["pentanomial"] is None and out["pairs"] * 2 >= out["games"] - 2 * 30


def test_precision_and_fixed_size(capsys):
    out = run_json(capsys, "heuristic", "greedy", "--precision", "40", "--players", "3",
                   "--max-games", "6000")  # fmt: skip
    assert out["verdict"] == "precision_reached" and out["games"] < 6000
    lo, hi = out["elo_ci95"]
    assert max(out["elo"] - lo, hi - out["elo"]) <= 40
    fixed = run_json(capsys, "greedy", "random", "--max-games", "200")
    assert fixed["verdict"] is None and fixed["games"] == 200 and fixed["llr"] is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--sprt", "20,0"], "--sprt HI must be greater than --sprt LO"),
        (["--sprt", "x"], "--sprt must be two numbers LO,HI"),
        (["--sprt", "0,5", "--alpha", "0.6"], "--alpha must lie in (0, 0.5)"),
        (["--precision", "0"], "--precision must be greater than 0"),
        (["--sprt", "0,5", "--precision", "3"], "cannot be combined"),
        (["--max-games", "101"], "--max-games must be a multiple of configurations[0].players"),
        (["--players", "5"], "--players must be 2, 3 or 4"),
        (["--against", "random,random", "--players", "4"], "--against must name one bot or 3"),
    ],
)
def test_bad_options_name_the_option(capsys, argv, message):
    assert main(["compare", "heuristic", "greedy", *argv]) == 2
    assert message in capsys.readouterr().err


def test_console_script_help_lists_compare():
    out = subprocess.run(
        [sys.executable, "-m", "service", "compare", "--help"],
        capture_output=True, text=True, timeout=generous(60), check=True,
    ).stdout  # fmt: skip
    for option in ("--against", "--sprt", "--alpha", "--beta", "--precision", "--max-games",
                   "--seed", "--workers", "--json"):  # fmt: skip
        assert option in out


def test_report_draws_the_llr_path(tmp_path, capsys):
    """``azulsim report`` of a stopped job adds a row: the LLR against its bounds and the estimate
    at every check point."""
    import numpy as np
    from PIL import Image

    from service import report
    from sim.jobs.local import run_local
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict({
        "configurations": [{"players": 2, "bots": ["heuristic", "greedy"], "seating": "mirrored"}],
        "games": 4000, "seed": 1,
        "stop": {"rule": "sprt", "elo0": 250, "elo1": 300, "check_every": 40},
    })  # fmt: skip
    doc = run_local(spec, workers=1).statistics()
    assert len(doc["stopping"]["check_points"]) >= 3
    plain = dict(doc)
    plain.pop("stopping")
    with_path = Image.open(io.BytesIO(report._png_bytes(report.figure(doc))))
    without = Image.open(io.BytesIO(report._png_bytes(report.figure(plain))))
    assert with_path.height > without.height * 1.5  # one more row of panels
    assert "(partial)" not in report.document_title(doc)
    saved = tmp_path / "stats.json"
    saved.write_text(json.dumps(doc))
    assert main(["report", "--from", str(saved), "-o", str(tmp_path / "r.png")]) == 0
    pixels = np.asarray(Image.open(tmp_path / "r.png").convert("L"), dtype=float)
    assert pixels.std() > 10


def test_simulate_table_shows_groups_and_paired_differences(capsys, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "configurations": [{"players": 2, "bots": ["greedy", "random"], "seating": "mirrored"},
                           {"players": 2, "bots": ["heuristic", "random"], "seating": "mirrored"}],
        "games": 40, "seed": 2, "baseline": 0,
    }))  # fmt: skip
    assert main(["simulate", "--spec", str(spec), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("mirrored groups 20 (focal") == 2 and "pentanomial [" in out
    assert "paired with configuration 0 over 40 games (focal heuristic)" in out


def test_progress_line_shows_the_llr_on_a_terminal(capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["compare", "heuristic", "greedy", "--sprt", "0,20", "--check-every", "40"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.split("\r") if x.strip()]
    assert len(lines) >= 2 and all("LLR +" in x for x in lines)
    assert "40 games" in lines[0]
