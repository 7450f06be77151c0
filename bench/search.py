"""The `search` bot: CPU time per decision and per game at three budgets, and its strength.

Run from the repository root::

    python bench/search.py            # the published figures (several minutes on one core)
    python bench/search.py --quick    # small counts

Cost: self-play (2 players, coloured wall) through `sim.play.play_games`, CPU time of this process
(`time.process_time`, the least of 3 runs); per decision "batched" is that time over the decisions
made (all games of a chunk searched together), "batch of one" is `act` called on one position at a
time (mid-game positions, 2 players). `greedy`, `heuristic` and `rollout` are timed the same way,
for the ratios.

Strength: head to head with seats rotated (each bot in each seat equally often) and 3- and
4-player tables with one bot per seat (seats shuffled per game); win rates over games that ended
naturally, shared wins counted as wins, 95 % Wilson intervals (`sim.stats.derive.wilson`).

Writes ``bench/results/search.json`` and the tables into ``docs/bots.md`` between the search
markers.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

from sim import engine  # noqa: E402
from sim.alloc import tune_allocator  # noqa: E402
from sim.bots import make_bot  # noqa: E402
from sim.play import play_games  # noqa: E402
from sim.rng import BOT, game_keys  # noqa: E402
from sim.spec import Configuration, first_player  # noqa: E402
from sim.stats.derive import wilson  # noqa: E402

SEED = 20261201
BUDGETS = {
    "small": "search:width=4,replies=3,depth=1",
    "default": "search",
    "large": "search:width=8,replies=6,depth=4",
}
RESULTS = ROOT / "bench" / "results" / "search.json"
REPEATS = 3
DOCS = ROOT / "docs" / "bots.md"
START, END = "<!-- search:start -->", "<!-- search:end -->"


def self_play_cost(bot: str, games: int) -> dict:
    config = Configuration(2, [bot, bot])
    play_games(config, SEED, 0, 50)  # warm up
    cpu = float("inf")
    for _ in range(REPEATS):  # the least of a few runs: other load only ever adds time
        t0 = time.process_time()
        rec = play_games(config, SEED + 1, 0, games)
        cpu = min(cpu, time.process_time() - t0)
    decisions = int(rec.turns.sum())
    return {
        "bot": bot,
        "games": games,
        "cpu_s": round(cpu, 3),
        "ms_per_game": round(1e3 * cpu / games, 4),
        "us_per_decision_batched": round(1e6 * cpu / decisions, 2),
    }


def single_decision_cost(bot_spec: str, positions: int) -> float:
    """Mean CPU µs of `act` on one mid-game 2-player position at a time."""
    ids = np.arange(positions)
    st = engine.new_games(2, "coloured", SEED, ids, first_player(SEED, ids, 2))
    keys = game_keys(SEED, ids, BOT)
    heuristic = make_bot("heuristic")
    stop = 5 + ids % 30  # picks played before the position is taken
    for _ in range(40):
        slots = np.flatnonzero(~st.done & (st.turn < stop))
        if slots.size == 0:
            break
        engine.play(st, slots, heuristic.act(st, slots, keys[slots]), defer_round_end=True)
        waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
        if waiting.size:
            engine.end_rounds(st, waiting)
    live = np.flatnonzero(~st.done)
    bot = make_bot(bot_spec)
    t0 = time.process_time()
    for b in live:
        bot.act(st, np.array([b]), keys[b : b + 1])
    return 1e6 * (time.process_time() - t0) / live.size


def match(bots: list[str], games: int, wall: str = "coloured", seating: str = "rotate") -> dict:
    config = Configuration(len(bots), bots, seating=seating, wall=wall)
    t0 = time.process_time()
    rec = play_games(config, SEED, 0, games)
    cpu = time.process_time() - t0
    natural = ~rec.truncated
    n = int(natural.sum())
    out = {"players": len(bots), "wall": wall, "seating": seating, "bots": bots, "games": games}
    out["truncated"] = games - n
    out["cpu_s"] = round(cpu, 2)
    out["per_bot"] = {}
    if len(bots) == 2 and bots[0] != bots[1]:
        out["first_vs_second"] = versus(rec, natural)
    for label in dict.fromkeys(bots):
        idx = [i for i, b in enumerate(bots) if b == label]
        mine = np.isin(rec.seat_bot, idx)
        wins = int(((rec.winners & mine).any(axis=1) & natural).sum())
        out["per_bot"][label] = {
            "wins": wins,
            "win_rate": wins / n if n else None,
            "ci95": wilson(wins, n),
            "mean_score": round(float(rec.scores[mine].mean()), 2),
        }
    return out


def versus(rec, natural) -> dict:
    """Head to head of configuration bot 0 against bot 1: mean score (a shared win is a half),
    logistic Elo with a 95 % interval, and the SPRT log-likelihood ratio of elo0 = 0 against
    elo1 = 20 at this sample (normal approximation, notes/experiments.md), with its bounds at
    alpha = beta = 0.05. Seats are rotated, not mirrored, so it is a fixed-sample check."""
    a = (rec.winners & (rec.seat_bot == 0)).any(axis=1)[natural]
    b = (rec.winners & (rec.seat_bot == 1)).any(axis=1)[natural]
    x = np.where(a & b, 0.5, a.astype(float))
    n, mu, var = x.size, float(x.mean()), float(x.var())
    half = 1.96 * (var / n) ** 0.5

    def elo(s: float) -> float:
        s = min(max(s, 1e-6), 1 - 1e-6)
        return -400 * np.log10(1 / s - 1)

    s0, s1 = 0.5, 1 / (1 + 10 ** (-20 / 400))
    llr = n * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var) if var > 0 else float("inf")
    bound = float(np.log(0.95 / 0.05))
    return {
        "games": n,
        "score": round(mu, 4),
        "elo": round(elo(mu), 1),
        "elo_ci95": [round(elo(mu - half), 1), round(elo(mu + half), 1)],
        "llr_0_20": round(llr, 2),
        "llr_bounds": [round(-bound, 3), round(bound, 3)],
        "verdict": "H1" if llr >= bound else ("H0" if llr <= -bound else "undecided"),
    }


def run(args) -> dict:
    g, g34 = args.games, args.games34
    result: dict = {
        "seed": SEED,
        "command": "python bench/search.py"
        + (" --quick" if args.quick else "")
        + (" --cost-only" if args.cost_only else ""),
        "machine": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "budgets": BUDGETS,
    }
    cost = [self_play_cost(b, args.cost_games) for b in ("greedy", "heuristic", "rollout")]
    cost += [self_play_cost(spec, args.cost_games) for spec in BUDGETS.values()]
    greedy, heuristic = cost[0]["ms_per_game"], cost[1]["ms_per_game"]
    for row in cost:
        row["x_greedy"] = round(row["ms_per_game"] / greedy, 1)
        row["x_heuristic"] = round(row["ms_per_game"] / heuristic, 1)
        row["us_per_decision_one"] = round(single_decision_cost(row["bot"], args.single), 1)
        print(json.dumps(row), flush=True)
    result["cost"] = cost
    if args.cost_only:  # keep the matches of the last full run (decisions are unchanged)
        previous = json.loads(RESULTS.read_text())
        result["matches"] = previous["matches"]
        result["matches_command"] = previous.get("matches_command", previous["command"])
        return result
    result["matches_command"] = result["command"]
    d, small, large = BUDGETS["default"], BUDGETS["small"], BUDGETS["large"]
    plan = [
        ([small, "rollout"], g, "coloured", "rotate"),
        ([d, "rollout"], g, "coloured", "rotate"),
        ([large, "rollout"], g, "coloured", "rotate"),
        ([d, "heuristic"], g, "coloured", "rotate"),
        ([large, d], g, "coloured", "rotate"),
        ([d, small], g, "coloured", "rotate"),
        ([d, "rollout"], g, "gray", "rotate"),
        ([d, "rollout", "heuristic"], g34, "coloured", "shuffle"),
        ([d, "rollout", "heuristic", "greedy"], g34, "coloured", "shuffle"),
        ([d, "rollout", "heuristic"], g34, "gray", "shuffle"),
    ]
    result["matches"] = []
    for bots, games, wall, seating in plan:
        row = match(bots, games, wall, seating)
        result["matches"].append(row)
        print(json.dumps(row), flush=True)
    return result


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def tables(result: dict) -> str:
    lines = [
        f"Measured with `{result['command']}` (seed {result['seed']}, {result['machine']}, "
        f"Python {result['python']}, numpy {result['numpy']}); CPU time of one process "
        "(`time.process_time`, the least of 3 runs), 2 players, coloured wall. Budgets: "
        + ", ".join(f"{k} `{v}`" for k, v in result["budgets"].items())
        + ".",
        "",
        "| bot | ms per game | × greedy | × heuristic | µs per decision, batched | "
        "µs per decision, batch of one |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in result["cost"]:
        lines.append(
            f"| `{row['bot']}` | {row['ms_per_game']:.3f} | {row['x_greedy']} | "
            f"{row['x_heuristic']} | {row['us_per_decision_batched']:,.0f} | "
            f"{row['us_per_decision_one']:,.0f} |"
        )
    lines += [
        "",
        f"Matches measured with `{result.get('matches_command', result['command'])}`.",
        "",
        (
            "| players | wall | seating | games | bots: win rate [95 % interval], mean score; "
            "first against second: Elo [95 %], SPRT log-likelihood ratio elo0 = 0, elo1 = 20 "
            "(bounds ±2.94) |"
        ),
        "| --- | --- | --- | --- | --- |",
    ]
    for m in result["matches"]:
        cells = "; ".join(
            f"`{label}` {_pct(v['win_rate'])} [{100 * v['ci95'][0]:.1f}, {100 * v['ci95'][1]:.1f}]"
            f", {v['mean_score']:.1f}"
            for label, v in m["per_bot"].items()
        )
        if "first_vs_second" in m:
            v = m["first_vs_second"]
            lo, hi = v["elo_ci95"]
            cells += f"; Elo {v['elo']:+.0f} [{lo:+.0f}, {hi:+.0f}], LLR(0, 20) {v['llr_0_20']:.1f}"
        lines.append(f"| {m['players']} | {m['wall']} | {m['seating']} | {m['games']} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=2000, help="games per 2-player match")
    ap.add_argument("--games34", type=int, default=1000, help="games per 3-/4-player table")
    ap.add_argument("--cost-games", type=int, default=2000, help="self-play games per cost row")
    ap.add_argument("--single", type=int, default=200, help="positions for the batch of one")
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/bots.md")
    ap.add_argument(
        "--cost-only",
        action="store_true",
        help="time the bots again, keep the matches of bench/results/search.json",
    )
    args = ap.parse_args()
    tune_allocator()  # as every process that plays a job does (sim.local, workers)
    if args.quick:
        args.games, args.games34, args.cost_games, args.single = 100, 60, 100, 20
    result = run(args)
    result["tables"] = tables(result)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    if not args.no_docs and not args.quick:
        text = DOCS.read_text()
        if START in text and END in text:
            head, rest = text.split(START, 1)
            _, tail = rest.split(END, 1)
            DOCS.write_text(f"{head}{START}\n{result['tables']}\n{END}{tail}")
    print(result["tables"])


if __name__ == "__main__":
    main()
