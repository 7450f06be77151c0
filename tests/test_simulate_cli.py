"""The local runner (sim.jobs.local) and ``azulsim simulate``, on the fake play function.

The fake (`tests.fake_play.fake_play_games`) has play_games' signature and determinism contract, so
these tests pin the runner and the CLI without the batch engine; one test at the end runs the real
engine when it and the built-in bots are there.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

import service.cli as cli
from service.cli.progress import Estimate, TerminalProgress
from sim.bots.registry import Param, register_bot
from sim.jobs.chunk import MAX_CHUNK, MIN_CHUNK, chunk_ranges, default_chunk_size
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from tests.fake_play import fake_play_games
from tests.waits import generous, wait_until

for _name in ("cli_a", "cli_b"):
    register_bot(
        _name, f"test bot {_name}", lambda p: p, [Param("w", "float", 1.0, 0, 10)], replace=True
    )

SPEC = JobSpec.from_dict(
    {
        "configurations": [
            {"players": 2, "bots": ["cli_a", "cli_b"]},
            {"players": 3, "bots": ["cli_a:w=2", "cli_b", "cli_b"], "seating": "shuffle"},
        ],
        "games": 90,
        "seed": 5,
    }
)


def test_chunks_cover_every_game_once():
    got = chunk_ranges(SPEC, 40)
    assert got == [(0, 0, 40), (0, 40, 80), (0, 80, 90), (1, 0, 40), (1, 40, 80), (1, 80, 90)]
    assert default_chunk_size(100_000, 4) == MIN_CHUNK  # never small enough to slow the engine
    assert default_chunk_size(10**7, 2) == MAX_CHUNK and default_chunk_size(10, 4) == 10
    # Slow bots: chunks as many times smaller as the bots are slower (search: ~93 x greedy), so
    # 4,000 games still make chunks for two workers.
    assert default_chunk_size(4_000, 2, cost=93.0) == 500
    assert default_chunk_size(10**7, 2, cost=93.0) == MAX_CHUNK // 93
    assert default_chunk_size(100_000, 4, cost=0.6) == MIN_CHUNK  # faster than greedy: as greedy


def test_result_independent_of_workers_and_chunk_size():
    base = run_local(SPEC, workers=1, chunk_size=90, play=fake_play_games)
    for workers, chunk in ((1, 7), (2, 13)):
        seen = []
        other = run_local(
            SPEC, workers=workers, chunk_size=chunk, play=fake_play_games, progress=seen.append
        )
        assert other.counters == base.counters
        assert seen == sorted(seen) and seen[-1] == SPEC.total_games
    assert (
        base.counters["c1|games"]
        + base.counters.get("c1|truncated.round_cap", 0)
        + base.counters.get("c1|truncated.no_tiles", 0)
        == 90
    )
    doc = base.statistics()
    assert doc["games_done"] == 180 and doc["timing"]["workers"] == 1


def test_run_local_rejects_bad_arguments():
    with pytest.raises(ValueError, match="workers must be at least 1"):
        run_local(SPEC, workers=0, play=fake_play_games)
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        run_local(SPEC, workers=1, chunk_size=0, play=fake_play_games)


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


ARGS = (
    "simulate",
    "--players",
    "2",
    "--bots",
    "cli_a:w=3,cli_b",
    "--games",
    "200",
    "--seed",
    "7",
    "--workers",
    "1",
)


def test_json_is_byte_identical_apart_from_timing(fake_engine, capsys):
    status, out, err = run(capsys, *ARGS, "--json")
    assert status == 0 and err == ""  # no progress bar when stderr is not a terminal
    doc = json.loads(out)
    again = json.loads(run(capsys, *ARGS[:-2], "--workers", "2", "--chunk-size", "17", "--json")[1])
    assert doc.pop("timing")["games_per_second"] > 0
    again.pop("timing")
    assert json.dumps(doc) == json.dumps(again)
    assert doc["spec"]["configurations"][0]["bots"] == ["cli_a:w=3.0", "cli_b"]
    assert doc["games_finished"] + doc["games_truncated"] == 200
    for key in ("rounds", "turns", "score"):
        assert "mean" in doc[key] and "ci95" in doc[key]
    assert set(doc["bots"]) == {"cli_a:w=3.0", "cli_b"}
    assert doc["seats"][0]["win_rate"] is not None
    assert doc["configurations"][0]["score"] == doc["score"]


def test_table_and_csv(fake_engine, capsys):
    status, out, _ = run(capsys, *ARGS)
    assert status == 0
    assert "Configuration 0: 2 players, coloured wall, rotate seating" in out
    assert "By bot" in out and "cli_a:w=3.0 vs cli_b" in out and "games/s" in out
    status, out, _ = run(capsys, *ARGS, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0
    assert {r["group"] for r in rows} == {"all", "bot", "seat", "bot_seat", "position"}
    assert len(rows) == 1 + 2 + 2 + 4 + 2
    bot = next(r for r in rows if r["group"] == "bot" and r["bot"] == "cli_b")
    assert 0 <= float(bot["win_rate"]) <= 1


def test_spec_file(fake_engine, capsys, tmp_path):
    path = tmp_path / "job.json"
    path.write_text(SPEC.to_json())
    status, out, _ = run(
        capsys, "simulate", "--spec", str(path), "--games", "30", "--json", "--workers", "1"
    )
    doc = json.loads(out)
    assert status == 0 and doc["games_total"] == 60 and len(doc["configurations"]) == 2
    assert "bots" not in doc


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--bots", "cli_a,cli_b", "--players", "5"],
            "configurations[0].players must be 2, 3 or 4; got 5",
        ),
        (["--bots", "cli_a,nope"], "unknown bot 'nope'"),
        (["--bots", "cli_a:w=11,cli_b"], "parameter 'w' must be between 0 and 10; got 11.0"),
        (["--bots", "cli_a,cli_b", "--players", "3"], "one bot per seat (3); got 2"),
        (["--bots", "cli_a,cli_b", "--games", "0"], "games must be an integer of at least 1"),
        (["--bots", "cli_a,cli_b", "--wall", "pink"], "wall must be one of coloured, gray"),
        (["--bots", "cli_a,cli_b", "--workers", "0"], "--workers must be at least 1"),
        (["--games", "10"], "--bots is required"),
        (["--spec", "/nonexistent/job.json"], "cannot read --spec"),
        (["--spec", "x.json", "--bots", "cli_a,cli_b"], "--bots cannot be combined with --spec"),
    ],
)
def test_bad_input_is_one_line_and_status_2(fake_engine, capsys, argv, message):
    status, out, err = run(capsys, "simulate", *argv)
    assert status == 2 and out == ""
    assert err.startswith("azulsim simulate: error: ") and message in err
    assert err.count("\n") == 1


def test_argparse_errors_are_status_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["simulate", "--games", "many"])
    assert exc.value.code == 2
    assert cli.main([]) == 2
    capsys.readouterr()


def test_progress_bar_draws_games_rate_and_eta():
    stream = io.StringIO()
    bar = TerminalProgress(stream, 1000)
    bar.show(500)
    bar.show(1000)
    bar.close()
    text = stream.getvalue()
    assert "1,000/1,000 games" in text and "games/s" in text and "ETA" in text


def test_rate_and_eta_count_down_between_chunks():
    """Progress comes a chunk at a time: the ETA keeps counting down between chunks instead of
    standing still and jumping, and the rate is that of the games counted so far."""
    e = Estimate(total=1000)
    e.observe(0, 100.0)
    assert e.rate() is None and e.eta_text(100.0) == "ETA --:--"
    e.observe(500, 110.0)
    assert e.rate() == 50.0 and e.eta(110.0) == 10.0
    assert e.eta(114.0) == 6.0 and e.eta(125.0) == 0.0  # between chunks, down to 0
    e.observe(500, 115.0)  # an update without progress moves nothing
    assert e.rate() == 50.0 and e.eta(115.0) == 5.0
    e.observe(900, 116.0)
    assert e.rate() == 900 / 16 and e.rate_text() == "56 games/s"


def test_console_script_piped_has_no_progress(tmp_path):
    """A real process, stdout and stderr piped: exit status and error line as a user sees them."""
    code = (
        "import sys, service.cli as c, service.cli.simulate as s;"
        "from sim.bots.registry import register_bot;"
        "register_bot('cli_a', 'a', lambda p: p); register_bot('cli_b', 'b', lambda p: p);"
        "from tests.fake_play import fake_play_games; s.PLAY = fake_play_games;"
        "sys.exit(c.main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    ok = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "simulate",
            "--bots",
            "cli_a,cli_b",
            "--games",
            "50",
            "--workers",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=generous(60),
    )
    assert ok.returncode == 0 and ok.stderr == ""
    assert json.loads(ok.stdout)["games_total"] == 50
    bad = subprocess.run(
        [sys.executable, "-c", code, "simulate", "--bots", "cli_a,cli_b", "--seating", "round"],
        capture_output=True,
        text=True,
        env=env,
        timeout=generous(60),
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "azulsim simulate: error: configurations[0].seating must be one of rotate, fixed, "
        "shuffle, mirrored; got 'round'"
    ]


def test_real_engine_small_run(capsys):
    """End to end with the batch engine and built-in bots."""
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 20, "seed": 1}
    )
    a = run_local(spec, workers=1, chunk_size=20)
    b = run_local(spec, workers=1, chunk_size=3)
    assert a.counters == b.counters
    assert a.statistics()["games_done"] == 20


def _play_and_die_in_chunk_3(config, seed: int, start: int, stop: int, max_rounds: int = 100):
    if start >= 3 * 13:  # the chunk of games 39..51 (chunk size 13): the pool process dies
        os.kill(os.getpid(), signal.SIGKILL)
    return fake_play_games(config, seed, start, stop, max_rounds)


def test_a_pool_process_that_dies_fails_the_run_instead_of_hanging():
    """A pool process that dies loses the chunks it held: run_local must notice and fail, not wait
    for ever for their results."""
    with pytest.raises(RuntimeError, match="died while playing a chunk"):
        run_local(SPEC, workers=2, chunk_size=13, play=_play_and_die_in_chunk_3)


# Pool processes that are slow to start: each waits, after the fork and before the pool's
# initializer, until a SIGTERM is pending (at most 30 s), as a process forked on a busy machine
# may not run before the run stops. The stop's SIGTERM must still end them, at once.
SLOW_STARTS = r"""
import os, signal, sys, time

from sim.jobs.local import Interrupted, run_local
from tests.fake_play import fake_play_games
from tests.test_simulate_cli import SPEC


def slow_start():
    until = time.monotonic() + 30
    while signal.SIGTERM not in signal.sigpending() and time.monotonic() < until:
        time.sleep(0.01)


os.register_at_fork(after_in_child=slow_start)
print("running", flush=True)
began = time.monotonic()
try:
    run_local(SPEC, workers=2, chunk_size=13, play=fake_play_games)
except Interrupted as exc:
    print(f"{time.monotonic() - began:.1f} s: stopped by {exc}", flush=True)
"""


def test_pool_processes_that_get_the_stops_sigterm_while_they_start_still_end(tmp_path):
    """The SIGTERM of the pool's stop can reach a pool process before its initializer has run (a
    process forked on a busy machine may not have run at all): it must end it there, not be taken
    by the parent's handler, which the fork copied, or be lost (the process then lived on)."""
    run = subprocess.Popen(
        [sys.executable, "-c", SLOW_STARTS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
        start_new_session=True,  # its own process group: a hung run's pool goes with it
    )
    try:
        assert run.stdout.readline() == "running\n"
        parent = psutil.Process(run.pid)
        wait_until(lambda: len(parent.children()) == 2, 60, "two pool processes")
        children = parent.children()
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=generous(60))
    except (subprocess.TimeoutExpired, AssertionError):
        os.killpg(run.pid, signal.SIGKILL)  # the run and the pool processes it waits on
        out, err = run.communicate()
        pytest.fail(f"the run did not stop while its pool processes started:\n{err[-3000:]}")
    assert run.returncode == 0, err
    assert "stopped by SIGTERM" in out, (out, err)
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
