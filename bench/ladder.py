"""The strength ladder of the built-in bots: head-to-head win rates, mean scores, throughput.

Run from the repository root::

    python bench/ladder.py                 # the published figures (a few minutes on one core)
    python bench/ladder.py --quick         # a smoke run with small game counts
    taskset -c 0 python bench/ladder.py    # pin to one core, as the published figures are

Sections:

- 2p round-robin: every pair of built-in bots, seats rotated (each bot plays each seat equally
  often), on the coloured wall; the adjacent pairs also on the gray wall;
- 4p: one bot against three copies of the bot below it in the ladder, and all four bots at one
  table (seats rotated);
- throughput: self-play games per second of CPU time (``time.process_time``) through
  `sim.jobs.play.play_games`, 2p and 4p.

A game counts as a win for a bot when it is among the winners (RULES §8.3; a shared win counts,
and shared wins are reported apart); truncated games (RULES §10.7) are left out of win rates.
Intervals are 95 % Wilson intervals (`sim.stats.derive.wilson`). Writes
``bench/results/ladder.json`` and the tables into ``docs/bots.md`` between the ladder markers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

from sim.jobs.play import play_games  # noqa: E402
from sim.jobs.spec import Configuration  # noqa: E402
from sim.stats.derive import wilson  # noqa: E402

LADDER = ["random", "greedy", "heuristic", "rollout"]
SEED = 20240601
RESULTS = ROOT / "bench" / "results" / "ladder.json"
DOCS = ROOT / "docs" / "bots.md"
START, END = "<!-- ladder:start -->", "<!-- ladder:end -->"


def head_to_head(bots: list[str], games: int, wall: str = "coloured") -> dict:
    """Play one configuration (seats rotated) and summarise it per distinct bot."""
    players = len(bots)
    config = Configuration(players, bots, seating="rotate", wall=wall)
    t0 = time.process_time()
    rec = play_games(config, SEED, 0, games)
    cpu = time.process_time() - t0
    natural = ~rec.truncated
    n = int(natural.sum())
    out = {
        "players": players,
        "wall": wall,
        "bots": list(config.bots),
        "games": games,
        "truncated": int((~natural).sum()),
        "cpu_s": round(cpu, 3),
        "per_bot": {},
    }
    shared = rec.winners.sum(axis=1) > 1
    for label in dict.fromkeys(config.bots):
        idx = [i for i, b in enumerate(config.bots) if b == label]
        mine = np.isin(rec.seat_bot, idx)
        won = (rec.winners & mine).any(axis=1) & natural
        wins = int(won.sum())
        out["per_bot"][label] = {
            "wins": wins,
            "shared_wins": int((won & shared).sum()),
            "win_rate": wins / n if n else None,
            "ci95": wilson(wins, n),
            "mean_score": float(rec.scores[mine].mean()),
        }
    return out


def throughput(bot: str, players: int, games: int) -> dict:
    from sim.jobs import self_play

    config = Configuration(players, [bot] * players)
    play_games(config, SEED, 0, min(games, 200))  # warm up imports and tables
    if games >= self_play.MIN_GAMES:
        # A large random or heuristic self-play call is compiled (sim.jobs.self_play): load the
        # kernels once here, as a worker does at its first chunk.
        play_games(config, SEED, 0, self_play.MIN_GAMES)
    t0, w0 = time.process_time(), time.perf_counter()
    rec = play_games(config, SEED + 1, 0, games)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    return {
        "bot": bot,
        "players": players,
        "games": games,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "games_per_s": round(games / cpu, 1),  # per CPU-second (the tables' figure)
        "games_per_wall_s": round(games / wall, 1),
        "mean_score": float(rec.scores.mean()),
        "mean_turns": float(rec.turns.mean()),
    }


def _options() -> list[str]:
    """The command-line options that change the figures (not where they are written)."""
    out, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg == "--no-docs" or arg.startswith("--out="):
            continue
        elif arg == "--out":
            skip = True
        else:
            out.append(arg)
    return out


def _pinning() -> list[str]:
    """``taskset -c N`` when this process may run on one core only."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    return ["taskset", "-c", str(next(iter(cores)))] if len(cores) == 1 else []


def run(args) -> dict:
    g2, g4, gs = args.games, args.games4, args.search_games
    result: dict = {
        "seed": SEED,
        "command": " ".join([*_pinning(), "python", "bench/ladder.py", *_options()]),
        "machine": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "two_player": [],
        "two_player_gray": [],
        "four_player": [],
        "throughput": [],
    }

    def games_for(bots):
        return gs if "rollout" in bots else g2

    for a, b in itertools.combinations(LADDER, 2):
        row = head_to_head([b, a], games_for((a, b)))
        result["two_player"].append(row)
        report(row)
    for a, b in zip(LADDER, LADDER[1:], strict=False):
        row = head_to_head([b, a], games_for((a, b)), wall="gray")
        result["two_player_gray"].append(row)
        report(row)
    for a, b in zip(LADDER, LADDER[1:], strict=False):
        row = head_to_head([b, a, a, a], g4 if "rollout" not in (a, b) else min(g4, gs))
        result["four_player"].append(row)
        report(row)
    row = head_to_head(list(LADDER), min(g4, gs))
    result["four_player"].append(row)
    report(row)
    for bot in LADDER:
        for players in (2, 4):
            n = args.search_throughput if bot == "rollout" else args.throughput
            n = n if players == 2 else max(n // 2, 100)
            row = throughput(bot, players, n)
            result["throughput"].append(row)
            print(f"throughput {bot} {players}p: {row['games_per_s']:.0f} games/s", flush=True)
    return result


def report(row: dict) -> None:
    parts = [
        f"{label} {s['win_rate']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] "
        f"({s['mean_score']:.1f})"
        for label, s in row["per_bot"].items()
    ]
    print(f"{row['players']}p {row['wall']} {row['games']} games: " + "; ".join(parts), flush=True)


def _pct(s: dict) -> str:
    lo, hi = s["ci95"]
    return f"{100 * s['win_rate']:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def tables(result: dict) -> str:
    lines = [
        f"Measured with `{result['command']}` (seed {result['seed']}, {result['machine']}, "
        f"Python {result['python']}, numpy {result['numpy']}); win rates over games that ended "
        "naturally, with 95 % Wilson "
        "intervals; shared wins count as wins.",
        "",
        "**2 players, coloured wall** (seats rotated): win rate of the row bot against the column "
        "bot.",
        "",
    ]
    grid = {}
    for row in result["two_player"]:
        first, second = row["bots"]
        grid[(first, second)] = row["per_bot"][first]
        grid[(second, first)] = row["per_bot"][second]
    lines.append("| bot | " + " | ".join(f"vs {b}" for b in LADDER) + " |")
    lines.append("| --- |" + " --- |" * len(LADDER))
    for a in LADDER:
        cells = [("—" if a == b else _pct(grid[(a, b)])) for b in LADDER]
        lines.append(f"| **{a}** | " + " | ".join(cells) + " |")
    lines += ["", "**Head to head, details** (games, mean score of each side, truncated games):"]
    lines += ["", "| players | wall | upper bot | lower bot | games | upper wins | mean scores "]
    lines[-1] += "| truncated |"
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key in ("two_player", "two_player_gray", "four_player"):
        for row in result[key]:
            labels = list(row["per_bot"])
            upper = labels[0]
            scores = " / ".join(f"{row['per_bot'][lb]['mean_score']:.1f}" for lb in labels)
            lower = ", ".join(labels[1:])
            if len(labels) > 2:
                upper, lower = (
                    "all four",
                    ", ".join(f"{lb} {_pct(row['per_bot'][lb])}" for lb in labels),
                )
                cell = "—"
            else:
                cell = _pct(row["per_bot"][labels[0]])
                if row["players"] == 4:
                    lower = f"3 × {lower}"
            lines.append(
                f"| {row['players']} | {row['wall']} | {upper} | {lower} | {row['games']} | {cell} "
                f"| {scores} | {row['truncated']} |"
            )
    lines += [
        "",
        "**Throughput** (self-play, one process; games per CPU-second via `time.process_time`, "
        "and per wall second, which other load on the machine lowers):",
        "",
    ]
    lines.append("| bot | players | games | games/CPU-s | games/wall-s | mean score | mean turns |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for row in result["throughput"]:
        wall = row.get("games_per_wall_s")
        lines.append(
            f"| {row['bot']} | {row['players']} | {row['games']} | {row['games_per_s']:,.0f} | "
            f"{'—' if wall is None else f'{wall:,.0f}'} | "
            f"{row['mean_score']:.1f} | {row['mean_turns']:.1f} |"
        )
    return "\n".join(lines)


def write_docs(text: str) -> None:
    doc = DOCS.read_text() if DOCS.exists() else f"# Bots\n\n{START}\n{END}\n"
    if START not in doc or END not in doc:
        doc += f"\n{START}\n{END}\n"
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main(argv=None) -> None:
    from sim.jobs.alloc import tune_allocator

    tune_allocator()  # every process that plays sets the allocator (sim.jobs.alloc)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="2p games per pair")
    parser.add_argument("--games4", type=int, default=1000, help="4p games per table")
    parser.add_argument("--search-games", type=int, default=2000, help="games with the search bot")
    parser.add_argument("--throughput", type=int, default=50000, help="self-play games, fast bots")
    parser.add_argument("--search-throughput", type=int, default=1000, help="self-play, search bot")
    parser.add_argument("--quick", action="store_true", help="small counts for a smoke run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/bots.md")
    parser.add_argument(
        "--from-json", type=Path, help="play nothing: rewrite docs/bots.md from this results file"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        write_docs(tables(json.loads(args.from_json.read_text())))
        print(f"wrote {DOCS}")
        return
    if args.quick:
        args.games, args.games4, args.search_games = 200, 100, 60
        args.throughput, args.search_throughput = 2000, 60
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if not args.no_docs:
        write_docs(tables(result))
    print(f"wrote {args.out}" + ("" if args.no_docs else f" and {DOCS}"))


if __name__ == "__main__":
    main()
