"""External bots (sim/bots/external.py): the protocol, the process cache, failures, the CLI path.

The example bot docs/examples/random_bot.py plays through `azulsim simulate`; small misbehaving
bots written here (wrong answers, crashes, silence) must each fail with a message naming the bot and
the position, within the request timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from sim.bots import external, make_bot, parse_bot_spec
from sim.bots.external import ExternalBot, ExternalBotError
from sim.bots.random_bot import RandomBot
from sim.jobs.local import run_local
from sim.jobs.spec import JobSpec
from sim.rules import engine
from tests.waits import generous

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "docs" / "examples" / "random_bot.py"


@pytest.fixture(autouse=True)
def _close_bots():
    yield
    external.close_all()


def _script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text("import json, sys, time, os\n" + textwrap.dedent(body))
    return [sys.executable, str(path)]


def _midround(players: int, wall: str, n: int = 40, picks: int = 3):
    games = np.arange(n)
    st = engine.new_games(players, wall, 11, games, games % players)
    for _ in range(picks):
        engine.step(st, RandomBot().act(st, np.arange(n), np.arange(n, dtype=np.uint64)))
    return st


@pytest.mark.parametrize("players,wall", [(2, "coloured"), (3, "gray"), (4, "coloured")])
def test_positions_are_the_public_snapshot_and_the_legal_actions(players, wall):
    st = _midround(players, wall)
    slots = np.arange(st.batch)
    mask = engine.legal_mask(st)
    assert np.array_equal(external.legal_actions(st, slots), mask)
    for b, pos in enumerate(external.positions(st, slots)):
        pos = json.loads(external._dumps(pos))  # what the bot reads
        snap = engine.snapshot(st, b)
        for key in ("factories", "centre", "marker_in_centre", "marker_holder", "bag", "lid"):
            assert pos[key] == snap[key], key
        for key in ("lines", "wall", "floor", "scores", "round", "turn"):
            assert pos[key] == snap[key], key
        assert pos["seat"] == snap["current"] and pos["game"] == b
    # Public information only: no deal keys, no bag order, nothing from the BOT stream.
    assert set(external.positions(st, slots[:1])[0]) == {
        "game", "round", "turn", "seat", "factories", "centre", "marker_in_centre",
        "marker_holder", "bag", "lid", "lines", "wall", "floor", "scores",
    }  # fmt: skip


def _cli(args, env_extra=None, timeout=120):
    env = {**os.environ, "AZULSIM_EXTERNAL_CMD": "1", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "simulate", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_example_bot_through_simulate_same_result_with_any_workers():
    spec = f"external:cmd={EXAMPLE}"
    base = ["--bots", f"{spec},greedy", "--games", "120", "--seed", "5", "--json"]
    one = _cli([*base, "--workers", "1", "--chunk-size", "50"])
    assert one.returncode == 0, one.stderr
    two = _cli([*base, "--workers", "2", "--chunk-size", "30"])
    assert two.returncode == 0, two.stderr
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    assert a["games_done"] == 120
    a.pop("timing"), b.pop("timing")
    assert a == b
    # The example bot plays legal but aimless moves: greedy wins nearly every game.
    text = json.dumps(a)
    assert spec in text


def test_example_bot_on_the_gray_wall_answers_column_requests(tmp_path):
    log = tmp_path / "requests.log"
    # A wrapper that logs each request type, then hands it to the example bot's logic.
    argv = _script(
        tmp_path,
        "logged.py",
        f"""
        sys.path.insert(0, {str(EXAMPLE.parent)!r})
        import random_bot
        with open({str(log)!r}, "a") as f:
            for line in sys.stdin:
                req = json.loads(line)
                f.write(req["type"] + "\\n"); f.flush()
                print(json.dumps(random_bot.answer(req)), flush=True)
        """,
    )
    os.environ["AZULSIM_EXTERNAL_CMD"] = "1"
    try:
        spec = JobSpec.from_dict(
            {
                "configurations": [
                    {"players": 3, "wall": "gray", "bots": [
                        f"external:cmd={argv[0]},args={argv[1]}", "greedy", "random"]}
                ],
                "games": 30,
                "seed": 3,
            }
        )  # fmt: skip
        result = run_local(spec, workers=1, chunk_size=10)
    finally:
        del os.environ["AZULSIM_EXTERNAL_CMD"]
    assert result.statistics()["games_done"] == 30
    kinds = log.read_text().split()
    assert "act" in kinds and "columns" in kinds


def test_one_process_per_command_kept_across_chunks(tmp_path):
    pids = tmp_path / "pids"
    argv = _script(
        tmp_path,
        "first.py",
        f"""
        open({str(pids)!r}, "a").write(f"{{os.getpid()}}\\n")
        for line in sys.stdin:
            req = json.loads(line)
            key = "actions" if req["type"] == "act" else "columns"
            field = "legal" if key == "actions" else "columns"
            print(json.dumps({{"id": req["id"], key: [p[field][0] for p in req["positions"]]}}),
                  flush=True)
        """,
    )
    external.register_external_bot("t_first", argv, replace=True)
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["t_first", "greedy"]}], "games": 60, "seed": 1}
    )
    run_local(spec, workers=1, chunk_size=15)  # 4 chunks, 4 bot objects, one process
    assert len(pids.read_text().split()) == 1
    external.close_all()
    pid = int(pids.read_text().split()[0])
    time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # closed at close_all (atexit)


def test_registered_names_from_the_environment(monkeypatch):
    monkeypatch.setenv(external.ENV_NAMED, f"t_env_bot={sys.executable} {EXAMPLE}")
    external.register_from_environment()
    bot = make_bot(parse_bot_spec("t_env_bot:timeout=20"))
    assert bot.argv == [sys.executable, str(EXAMPLE)] and bot.timeout == 20
    st = _midround(2, "coloured", n=8)
    actions = bot.act(st, np.arange(8))
    assert engine.legal_mask(st)[np.arange(8), actions].all()


def test_commands_in_a_job_are_off_unless_allowed(monkeypatch):
    monkeypatch.delenv(external.ENV_ALLOW_CMD, raising=False)
    spec = {
        "configurations": [{"players": 2, "bots": [f"external:cmd={EXAMPLE}", "greedy"]}],
        "games": 10,
        "seed": 1,
    }
    with pytest.raises(ValueError, match="AZULSIM_EXTERNAL_CMD=1"):
        JobSpec.from_dict(spec)
    with pytest.raises(ValueError, match="AZULSIM_EXTERNAL_CMD=1"):
        make_bot(f"external:cmd={EXAMPLE}")
    monkeypatch.setenv(external.ENV_ALLOW_CMD, "1")
    with pytest.raises(ValueError, match="'cmd' is required"):
        make_bot("external")
    with pytest.raises(ValueError, match="without whitespace"):
        parse_bot_spec("external:cmd=a|b")


BAD_BOTS = {
    "illegal": (
        """
        for line in sys.stdin:
            req = json.loads(line)
            print(json.dumps({"id": req["id"], "actions": [9999] * len(req["positions"])}),
                  flush=True)
        """,
        "illegal action 9999 at game",
    ),
    "short": (
        """
        for line in sys.stdin:
            req = json.loads(line)
            print(json.dumps({"id": req["id"], "actions": []}), flush=True)
        """,
        "bad answer",
    ),
    "garbage": (
        """
        for line in sys.stdin:
            print("hello", flush=True)
        """,
        "bad answer",
    ),
    "crash": (
        """
        sys.stdin.readline()
        sys.stderr.write("segfault simulated\\n")
        sys.exit(3)
        """,
        "exited with status 3; its stderr ends: segfault simulated",
    ),
    "silent": (
        """
        for line in sys.stdin:
            time.sleep(60)
        """,
        "no answer within 0.5 s",
    ),
    "chatty": (  # two lines per request: the first request passes, the second fails (batch=4)
        """
        for line in sys.stdin:
            req = json.loads(line)
            first = [p["legal"][0] for p in req["positions"]]
            out = json.dumps({"id": req["id"], "actions": first})
            print(out + "\\n" + out, flush=True)
        """,
        "wrote more than one line for a request",
    ),
    "reports": (
        """
        for line in sys.stdin:
            print(json.dumps({"id": json.loads(line)["id"], "error": "out of memory"}),
                  flush=True)
        """,
        "reported an error: out of memory",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_BOTS))
def test_a_bad_bot_fails_naming_the_bot_and_the_position(tmp_path, kind):
    body, message = BAD_BOTS[kind]
    argv = _script(tmp_path, f"{kind}.py", body)
    st = _midround(2, "coloured", n=6)
    # Only the silent bot should see its deadline (a slow interpreter start must not).
    timeout = 0.5 if kind == "silent" else 30
    bot = ExternalBot(argv, f"t_{kind}", timeout=timeout, batch=4)
    began = time.monotonic()
    with pytest.raises(ExternalBotError) as err:
        bot.act(st, np.arange(1, 6))
    if kind == "silent":
        assert time.monotonic() - began < 5  # never a hang
    text = str(err.value)
    assert f"external bot 't_{kind}'" in text and message in text
    assert ("game 5, round 1, seat" if kind == "chatty" else "game 1, round 1, seat") in text
    # The broken process is gone; the next request starts a fresh one (and fails the same way).
    assert tuple(argv) not in external._PROCESSES


def test_a_bad_bot_fails_the_simulate_command(tmp_path):
    argv = _script(tmp_path, "illegal.py", BAD_BOTS["illegal"][0])
    out = _cli(
        ["--bots", f"external:cmd={argv[0]},args={argv[1]},random", "--games", "20", "--workers",
         "1"],
        timeout=generous(60),
    )  # fmt: skip
    assert out.returncode == 1  # one line, as for every failure the user should read
    assert out.stderr.startswith("azulsim simulate: error: ") and "Traceback" not in out.stderr
    assert f"external bot 'external:cmd={argv[0]},args={argv[1]}'" in out.stderr
    assert re.search(r"illegal action 9999 at game \d+, round 1, seat \d", out.stderr)


# --- engines that think: declarations, time per position, CPU per move ---------------------


def test_a_bot_declaring_its_tables_is_refused_at_validation(monkeypatch):
    monkeypatch.setenv("AZULSIM_EXTERNAL_CMD", "1")
    monkeypatch.setenv(
        external.ENV_NAMED, f"t_two[walls=coloured,players=24]={sys.executable} {EXAMPLE}"
    )
    external.register_from_environment()
    ok = {"configurations": [{"players": 2, "bots": ["t_two", "greedy"]}], "games": 2}
    JobSpec.from_dict(ok)
    gray = {"configurations": [{"players": 2, "wall": "gray", "bots": ["greedy", "t_two"]}]}
    with pytest.raises(ValueError, match=r"configurations\[0\]\.bots\[1\].*coloured wall only"):
        JobSpec.from_dict({**gray, "games": 2})
    three = {"configurations": [{"players": 3, "bots": ["t_two", "greedy", "random"]}]}
    with pytest.raises(ValueError, match=r"bots\[0\].*plays 2, 4 players only.*not 3"):
        JobSpec.from_dict({**three, "games": 2})
    cmd = f"external:cmd={EXAMPLE},players=3"
    with pytest.raises(ValueError, match="plays 3 players only"):
        JobSpec.from_dict({"configurations": [{"players": 2, "bots": [cmd, "greedy"]}]})
    with pytest.raises(ValueError, match="'players' must list player counts"):
        parse_bot_spec(f"external:cmd={EXAMPLE},players=25")
    with pytest.raises(ValueError, match="declare walls="):
        external._declarations("t_bad[colour=red]", "t_bad[colour=red]=x")


def test_the_deadline_is_per_position_and_the_bot_is_told_its_time(tmp_path):
    seen = tmp_path / "move_ms"
    # Thinks 0.3 s per request: over the 0.05 s request timeout, well within 0.05 + 8 x 2 s.
    argv = _script(
        tmp_path,
        "thinker.py",
        f"""
        for line in sys.stdin:
            req = json.loads(line)
            open({str(seen)!r}, "a").write(f"{{req['move_ms']}}\\n")
            time.sleep(0.3)
            picks = [p["legal"][0] for p in req["positions"]]
            print(json.dumps({{"id": req["id"], "actions": picks}}), flush=True)
        """,
    )  # fmt: skip
    bot = ExternalBot(argv, "thinker", timeout=0.05, batch=8, move_ms=2000)
    assert bot.deadline(8) == pytest.approx(16.05)
    st = _midround(2, "coloured", n=8)
    actions = bot.act(st, np.arange(8))
    assert engine.legal_mask(st)[np.arange(8), actions].all()
    assert seen.read_text().split() == ["2000.0"]
    hasty = ExternalBot(argv, "thinker", timeout=0.05, batch=8)
    with pytest.raises(ExternalBotError, match="no answer within 0.05 s"):
        hasty.act(st, np.arange(8))


def test_cpu_per_move_is_counted_per_bot_from_what_the_bot_reports(tmp_path):
    argv = _script(
        tmp_path,
        "reporter.py",
        """
        for line in sys.stdin:
            req = json.loads(line)
            key = "actions" if req["type"] == "act" else "columns"
            field = "legal" if key == "actions" else "columns"
            n = len(req["positions"])
            print(json.dumps({"id": req["id"], key: [p[field][-1] for p in req["positions"]],
                              "cpu_us": 1000 * n}), flush=True)
        """,
    )  # fmt: skip
    external.register_external_bot("t_reporter", argv, replace=True)
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["t_reporter", "t_reporter"]}],
         "games": 40, "seed": 2}
    )  # fmt: skip
    one = run_local(spec, workers=1, chunk_size=40)
    two = run_local(spec, workers=1, chunk_size=10)
    from sim.jobs.play import play_games
    from sim.stats.cpu import strip

    records = play_games(spec.configurations[0], 2, 0, 40)
    moves = int(records.turns.sum())
    for result in (one, two):
        assert result.counters["cpu|c0|bot=t_reporter|moves"] == moves
        # 1 ms per position reported, plus this process's own time on each call
        assert result.counters["cpu|c0|bot=t_reporter|ns"] >= moves * 10**6
        (row,) = result.statistics()["timing"]["cpu"]
        assert row["bot"] == "t_reporter" and row["moves"] == moves
        assert row["us_per_move"] >= 1000
    assert strip(one.counters) == strip(two.counters)  # the statistics stay exact
    a, b = one.statistics(), two.statistics()
    a.pop("timing"), b.pop("timing")
    assert a == b
    with pytest.raises(ExternalBotError, match="'cpu_us' must be a non-negative integer"):
        bad = _script(
            tmp_path, "bad.py",
            """
            for line in sys.stdin:
                req = json.loads(line)
                picks = [p["legal"][0] for p in req["positions"]]
                print(json.dumps({"id": req["id"], "actions": picks, "cpu_us": -1}), flush=True)
            """,
        )  # fmt: skip
        ExternalBot(bad, "bad", 30, 8).act(_midround(2, "coloured", n=4), np.arange(4))


def test_cpu_is_measured_from_the_process_when_the_bot_does_not_report_it():
    bot = ExternalBot([sys.executable, str(EXAMPLE)], "example", 30, 64)
    st = _midround(4, "coloured", n=64)
    for _ in range(30):
        bot.act(st, np.arange(64))
    assert bot.outside_cpu_ns() > 0  # the example bot's JSON work, from /proc


def test_each_request_tells_the_bot_the_rules(tmp_path):
    # The rule set of the positions' game travels with every request: all its keys (the state's
    # wall and round cap) and its label; a bot that plays the printed game only can refuse others.
    import dataclasses

    from sim.rules.rulesets import RuleSet

    seen = tmp_path / "rules.jsonl"
    argv = _script(
        tmp_path,
        "ruled.py",
        f"""
        for line in sys.stdin:
            req = json.loads(line)
            with open({str(seen)!r}, "a") as f:
                f.write(json.dumps([req["rules"], req["rules_label"], req["floor_slots"]]) + "\\n")
            if req["rules_label"] not in ("printed", "wall=gray"):
                print(json.dumps({{"id": req["id"], "error": "printed rules only"}}), flush=True)
                continue
            picks = [p["legal"][0] for p in req["positions"]]
            print(json.dumps({{"id": req["id"], "actions": picks}}), flush=True)
        """,
    )  # fmt: skip
    bot = ExternalBot(argv, "ruled", timeout=generous(20), batch=8)
    st = _midround(2, "gray", n=4)
    bot.act(st, np.arange(4))
    rules = RuleSet(column_bonus=5, floor=(1, 2, 3), marker="2", end_rows=2)
    with pytest.raises(ExternalBotError, match="printed rules only"):
        bot.act(dataclasses.replace(st, rule_set=rules), np.arange(4))
    told = [json.loads(line) for line in seen.read_text().splitlines()]
    assert told[0] == [dataclasses.replace(RuleSet(), wall="gray").to_dict(), "wall=gray", 7]
    assert told[1][0] == dataclasses.replace(rules, wall="gray").to_dict()
    assert told[1][0]["floor"] == [1, 2, 3] and told[1][0]["marker"] == 2
    assert told[1][1:] == ["wall=gray,column_bonus=5,floor=1/2/3,marker=2,end_rows=2", 3]
