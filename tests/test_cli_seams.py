"""Where one ``azulsim`` command's output meets the next, and what a newcomer reads there: a job its
stopping rule ended early, negative SPRT bounds, degenerate comparisons, help texts."""

from __future__ import annotations

import pytest

from service.api import azulsim_pb2 as pb
from service.cli import main


def _stopped_job() -> pb.Job:
    return pb.Job(
        job_id="ab" * 16,
        state=pb.SUCCEEDED,
        games_done=1200,
        games_total=24000,
        stopping=pb.Stopping(reason="h1_accepted", games=1200, llr=3.1, llr_lower=-2.9,
                             llr_upper=2.9, estimate=40.0, check_points=5),
    )  # fmt: skip


def test_a_job_its_rule_stopped_reads_as_complete_with_why():
    from service.cli.output import job_games, job_line
    from service.report import document_title

    job = _stopped_job()
    assert job_games(job) == "1,200 games (stopped early: H1 accepted; at most 24,000)"
    assert "1,200/24,000" not in job_line(job) and "stopped early: H1 accepted" in job_line(job)
    doc = {"spec": {"seed": 1}, "games_done": 1200, "games_total": 24000,
           "stopping": {"reason": "h1_accepted"}}  # fmt: skip
    title = document_title(doc)
    assert "stopped early: H1 accepted; at most 24,000" in title and "partial" not in title
    running = pb.Job(job_id="cd" * 16, state=pb.RUNNING, games_done=500, games_total=1000)
    assert job_games(running) == "500/1,000 games"
    assert "500/1,000 games (partial)" in document_title(
        {"spec": {}, "games_done": 500, "games_total": 1000}
    )


def test_negative_sprt_bounds_are_values_not_options():
    from service.cli.app import build_parser

    parser = build_parser()
    assert parser.parse_args(["compare", "a", "b", "--sprt", "-10,10"]).sprt == "-10,10"
    assert parser.parse_args(["compare", "a", "b", "--sprt", "-10.5,-2"]).sprt == "-10.5,-2"
    assert parser.parse_args(["compare", "a", "b", "--sprt=-10,10"]).sprt == "-10,10"


@pytest.mark.parametrize("b", ["heuristic", "heuristic:floor=1", "random"])
def test_a_bot_compared_with_itself_is_refused_before_a_game(b, capsys):
    assert main(["compare", "heuristic" if b != "random" else "random", b, "--sprt", "-10,10"]) == 2
    err = capsys.readouterr().err
    assert "A and B are the same bot" in err and "no stopping rule can decide" in err


def test_a_sample_without_variation_is_flagged_not_called_precise(capsys):
    """Deterministic bots that play the same games (here the same bot, past the CLI's refusal):
    the precision rule 'reaches' a zero-width interval; the comparison says why that is no
    answer."""
    from service.cli.compare import compare_document, format_compare
    from sim.jobs.local import run_local
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict({
        "configurations": [{"players": 2, "bots": ["heuristic", "heuristic"],
                            "seating": "mirrored"}],
        "games": 480, "seed": 1, "stop": {"rule": "precision", "statistic": "elo", "eps": 10},
    })  # fmt: skip
    out = compare_document(run_local(spec, workers=1).statistics())
    assert out["verdict"] == "precision_reached"
    assert out["pentanomial"][2] == out["pairs"] and sum(out["pentanomial"]) == out["pairs"]
    assert "the two bots played the same games" in out["degenerate"]
    assert "degenerate: every one of the" in format_compare(out, "heuristic", "heuristic")
    different = main(["compare", "heuristic", "greedy", "--max-games", "80", "--json"])
    assert different == 0
    assert '"degenerate": null' in capsys.readouterr().out


def test_games_out_must_name_a_parquet_file(tmp_path, capsys):
    argv = ["simulate", "--bots", "greedy,random", "--games", "10", "--workers", "1"]
    assert main([*argv, "--games-out", str(tmp_path / "x.csv")]) == 2
    assert "--games-out writes Parquet: the file must end in .parquet" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_replay_numbers_wall_columns_from_1_as_pattern_lines():
    """Placed tiles read ``line L C -> column K``, both 1..5; in --json too."""
    import re

    from service.cli.replay import format_replay, replay_json
    from service.replay import replay_game
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict({"configurations": [{"bots": ["greedy", "greedy"]}], "games": 2})
    replay = replay_game(spec, 0, 0)
    columns = [int(c) for c in re.findall(r"-> column (\d)", format_replay(replay))]
    assert columns and min(columns) >= 1 and max(columns) == 5
    doc = replay_json(replay, "j", "v")
    placed = [p for s in doc["steps"] if s["kind"] == "wall_tiling" for t in s["scoring"]
              for p in t["placed"]]  # fmt: skip
    assert {p["column"] for p in placed} <= {1, 2, 3, 4, 5} and {p["line"] for p in placed} <= {
        1, 2, 3, 4, 5}  # fmt: skip


@pytest.mark.parametrize("command", ["compare", "sweep", "tournament", "export"])
def test_help_is_plain_text_and_states_its_defaults(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "**" not in text
    if command != "export":
        assert "default: in-process" not in text and "127.0.0.1:50051" not in text
        assert "without it the job plays in this process" in text
    if command == "compare":
        assert "(0, 0.5) (default 0.05)" in " ".join(text.split())


def test_a_job_seen_only_at_its_end_is_said_once():
    """`azulsim watch` of a cancelled job: the stream's one update is the end; the closing line
    does not repeat it."""
    import io

    from service.cli.progress import LineProgress

    out = io.StringIO()
    shown = LineProgress(out, 1000)
    shown.show(500, "cancelled")
    shown.show(500, "cancelled", force=True)
    assert out.getvalue().count("cancelled: 500/1,000 games") == 1
