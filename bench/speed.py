"""The speed table (README.md): self-play games per CPU-second of each built-in bot on one core.

Each row plays one configuration of self-play through `sim.jobs.play.play_games` (the path a chunk
takes) in this process, pinned to one core, after the allocator is set (`sim.jobs.alloc`) and a
warm-up, and reports games per CPU-second (``time.process_time``: whole-process CPU time, so the
other load on a shared machine matters little) and per wall second. Rows:

- random, greedy, heuristic, 2 and 4 players, and rollout (width 4) and search (default budget),
  2 players, self-play on the coloured wall; random, greedy and heuristic self-play plays whole
  games compiled (``path``), and their rows also give the figure of the engine stepped with the
  bots' numpy choices (``stepped_games_per_cpu_second``: what a line-up mixing them with a Python
  bot gets), and ``compiled_load_cpu_seconds`` the one-time cost of loading the compiled engine
  in a process;
- the same on the gray wall, with ``gray_vs_coloured`` = gray / coloured games per CPU-second;
- ``simulate_memory``: peak RSS of ``azulsim simulate --games 10**12 --workers 2`` (main process and
  each pool process) over ``--memory-seconds``, then the run is stopped with SIGTERM: greedy, and
  random on the gray wall (``simulate_memory_random_gray``, the compiled path).

- ``rule_variants``: random and greedy self-play, 2 players, coloured wall, under the printed rules
  and under `VARIANT` (other bonuses, floor and no marker; the same deal), by turns in fresh
  measurements (`RULE_REPEATS` each, the median taken), with ``variant_vs_printed`` = variant /
  printed games per CPU-second: every rule set plays on the same compiled code, target within
  5 % (`VARIANT_TARGET`). ``--rules-only`` measures only these and writes
  ``bench/results/speed_rules.json``.

The issue's targets (measured on a slower machine of the same class; compare ratios on another) are
in ``TARGETS``. Writes ``bench/results/speed.json``.

Usage: ``python bench/speed.py [--quick] [--memory-seconds 8] [--rules-only]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import machine  # noqa: E402  (bench/, the script's own directory)

RESULTS = ROOT / "bench" / "results" / "speed.json"
RULES_RESULTS = ROOT / "bench" / "results" / "speed_rules.json"
# A rule set that deals as the printed game does, for the rule variants' rows.
VARIANT = "column_bonus=5,floor=1/2/2/3/3/4/4,marker=off"
VARIANT_TARGET = 0.95  # variant / printed games per CPU-second, at least
RULE_REPEATS = 5
# (bot, players) -> games per CPU-second the issue asks for (its machine).
TARGETS = {
    ("random", 2): 75_000,
    ("random", 4): 45_000,
    ("greedy", 2): 40_000,
    ("greedy", 4): 20_000,
    ("heuristic", 2): 25_000,
    ("rollout", 2): 2_500,
}
GAMES = {
    "random": 131_072,
    "greedy": 65_536,
    "heuristic": 32_768,
    "rollout": 2_000,
    "search": 800,
}


def _timed(config, games: int):
    from sim.jobs.play import play_games

    cpu0, wall0 = time.process_time(), time.perf_counter()
    records = play_games(config, 2, 0, games)
    return records, time.process_time() - cpu0, time.perf_counter() - wall0


def measure(bot: str, players: int, wall: str, games: int) -> dict:
    from sim.jobs import self_play
    from sim.jobs.play import play_games
    from sim.jobs.spec import Configuration

    config = Configuration(players, [bot] * players, wall=wall)
    play_games(config, 1, 0, min(games, 500))  # imports, tables, first heap growth
    records, cpu, elapsed = _timed(config, games)
    row = {
        "bot": bot,
        "players": players,
        "wall": wall,
        "games": games,
        "cpu_seconds": round(cpu, 3),
        "games_per_cpu_second": round(games / cpu),
        "games_per_wall_second": round(games / elapsed),
        "mean_score": round(float(records.scores.mean()), 3),
        "target": TARGETS.get((bot, players)) if wall == "coloured" else None,
    }
    if bot in ("random", "greedy", "heuristic"):
        # Their self-play plays whole games compiled (sim.jobs.self_play); the figure of the engine
        # stepped with the bots' numpy choices beside it (what mixing them with a Python bot gets).
        row["path"] = "compiled" if games >= self_play.MIN_GAMES else "stepped"
        saved, self_play.MIN_GAMES = self_play.MIN_GAMES, float("inf")
        try:
            again, cpu, _ = _timed(config, games)
        finally:
            self_play.MIN_GAMES = saved
        assert (again.scores == records.scores).all() and (again.turns == records.turns).all()
        row["stepped_games_per_cpu_second"] = round(games / cpu)
    return row


def rule_variants(quick: bool) -> dict:
    """The rule variants' rows (module docstring): printed and `VARIANT` measured by turns."""
    import statistics

    from sim.jobs.play import play_games
    from sim.jobs.spec import Configuration
    from sim.rules.rulesets import RuleSet

    out = {"variant": VARIANT, "target_ratio": VARIANT_TARGET, "repeats": RULE_REPEATS, "rows": []}
    for bot in ("random", "greedy"):
        games = GAMES[bot] // (8 if quick else 2)
        configs = {
            label: Configuration.under(RuleSet.parse(label), 2, [bot, bot])
            for label in ("printed", VARIANT)
        }
        for config in configs.values():
            play_games(config, 1, 0, 500)  # warm-up
        rates: dict[str, list[float]] = {label: [] for label in configs}
        scores = {}
        for _ in range(RULE_REPEATS):
            for label, config in configs.items():
                records, cpu, _ = _timed(config, games)
                rates[label].append(games / cpu)
                scores[label] = round(float(records.scores.mean()), 3)
        printed = statistics.median(rates["printed"])
        variant = statistics.median(rates[VARIANT])
        row = {
            "bot": bot,
            "players": 2,
            "wall": "coloured",
            "games": games,
            "printed_games_per_cpu_second": round(printed),
            "variant_games_per_cpu_second": round(variant),
            "variant_vs_printed": round(variant / printed, 3),
            "printed_mean_score": scores["printed"],
            "variant_mean_score": scores[VARIANT],
        }
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    return out


def _rss_mb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


def simulate_memory(seconds: float, bots: str = "greedy,greedy", wall: str = "coloured") -> dict:
    """Peak RSS (MB) of a 10**12-game, 2-worker `azulsim simulate`, then its SIGTERM stop."""
    cmd = [sys.executable, "-m", "service.cli", "simulate", "--bots", bots, "--wall", wall]
    cmd += ["--games", str(10**12), "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak: dict[int, int] = {}
    kids: set[int] = set()
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        try:
            listed = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text()
            kids |= {int(x) for x in listed.split()}
        except OSError:
            pass
        for pid in (proc.pid, *kids):
            rss = _rss_mb(pid)
            if rss is not None:
                peak[pid] = max(peak.get(pid, 0), rss)
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    _, err = proc.communicate(timeout=30)
    left = [k for k in kids if Path(f"/proc/{k}").exists()]
    return {
        "command": " ".join(cmd[1:]),
        "seconds_sampled": seconds,
        "peak_rss_mb_main": peak.get(proc.pid),
        "peak_rss_mb_pool": sorted(v for k, v in peak.items() if k != proc.pid),
        "target_mb_per_process": 300,
        "sigterm_exit_status": proc.returncode,
        "sigterm_seconds_to_exit": round(time.monotonic() - stopped, 3),
        "processes_left": left,
        "traceback": "Traceback" in err.decode(errors="replace"),
    }


def main(argv: list[str] | None = None) -> int:
    from sim.jobs.alloc import tune_allocator

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="an eighth of the games")
    parser.add_argument("--memory-seconds", type=float, default=8.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--rules-only",
        action="store_true",
        help="only the rule variants' rows, written to bench/results/speed_rules.json",
    )
    args = parser.parse_args(argv)
    out = args.out or (RULES_RESULTS if args.rules_only else RESULTS)
    tune_allocator()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from sim.bots import playout
    from sim.rules import engine

    cpu0 = time.process_time()
    engine.kernels()  # numba's import and the engine's load (or compile): once per process
    playout.ready()
    load = round(time.process_time() - cpu0, 3)
    if args.rules_only:
        doc = {
            "benchmark": "speed_rules",
            "machine": machine(),
            "pinned_to_one_core": hasattr(os, "sched_setaffinity"),
            "rule_variants": rule_variants(args.quick),
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n")
        return 0
    rows = []
    for bot in ("random", "greedy", "heuristic", "rollout", "search"):
        for players in (2, 4):
            if bot in ("rollout", "search") and players == 4:
                continue  # slow; the ladder measures them
            for wall in ("coloured", "gray"):
                games = GAMES[bot] // (8 if args.quick else 1) // (2 if players == 4 else 1)
                row = measure(bot, players, wall, games)
                rows.append(row)
                print(json.dumps(row), flush=True)
    ratios = {}
    for row in rows:
        if row["wall"] == "gray":
            coloured = next(
                r
                for r in rows
                if (r["bot"], r["players"], r["wall"]) == (row["bot"], row["players"], "coloured")
            )
            ratios[f"{row['bot']} {row['players']}p"] = round(
                row["games_per_cpu_second"] / coloured["games_per_cpu_second"], 3
            )
    variants = rule_variants(args.quick)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))  # the pool gets both cores
    memory = simulate_memory(args.memory_seconds)
    print(json.dumps(memory), flush=True)
    # Random self-play takes the compiled path: numba and its code generator in every pool process.
    memory_random = simulate_memory(args.memory_seconds, "random,random", "gray")
    print(json.dumps(memory_random), flush=True)
    doc = {
        "benchmark": "speed",
        "machine": machine(),
        "pinned_to_one_core": hasattr(os, "sched_setaffinity"),
        "compiled_load_cpu_seconds": load,
        "results": rows,
        "gray_vs_coloured": ratios,
        "gray_target": 0.85,
        "rule_variants": variants,
        "simulate_memory": memory,
        "simulate_memory_random_gray": memory_random,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps({"gray_vs_coloured": ratios}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
