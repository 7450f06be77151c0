"""The `search` bot: CPU time per decision and per game at three budgets, and its strength.

Run from the repository root::

    python bench/search.py            # the published figures (several minutes on one core)
    python bench/search.py --quick    # small counts (a smoke run)
    python bench/search.py --curve    # also strength against cost over a range of budgets

Cost, CPU time of this process (`time.process_time`, the least of 3 runs), 2 players, coloured
wall, 2,000 games in one batch (as `play_games` plays a chunk):

- **self-play**: every seat the bot, through `sim.jobs.play.play_games`; per game and, "batched",
  per decision (all games of the batch searched together);
- **against rollout**: the bot in one seat, `rollout` in the other (mirrored pairs); only the time
  inside the bot's own ``act`` is counted, per game, and `heuristic` against `rollout` is timed the
  same way for the ratio;
- **batch of one**: ``act`` called on one mid-game position at a time.

`greedy`, `heuristic` and `rollout` are timed the same way, for the ratios.

Strength: ``azulsim compare`` run in this process (mirrored pairs: every deal played twice with the
seats swapped; the score is the bot's share of the points of a pair, Elo with its 95 % interval),
against `rollout` and `heuristic`, the large budget against the default with the SPRT of elo0 = 0
against elo1 = 20, the default on the gray wall. The 3- and 4-player ratings are the ladder's
(`bench/research.py`, docs/bots.md).

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

from inprocess import azulsim  # noqa: E402  (bench/, the script's own directory)
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

from sim.bots import make_bot  # noqa: E402
from sim.jobs.alloc import tune_allocator  # noqa: E402
from sim.jobs.play import play_games, play_table, set_table  # noqa: E402
from sim.jobs.spec import Configuration, first_player  # noqa: E402
from sim.rules import engine  # noqa: E402
from sim.rules.rng import BOT, game_keys  # noqa: E402

SEED = 20261201
BUDGETS = {
    "small": "search:width=4,replies=2",
    "default": "search",
    "large": "search:width=8,replies=6,depth=3",
}
# --curve: strength against cost over these budgets (the three above included).
CURVE = [
    "search:width=4,replies=2,depth=1",
    "search:width=6,replies=1",
    "search:width=4,replies=2",
    "search:width=4,replies=3",
    "search:width=6,replies=2",
    "search:width=6,replies=3",
    "search:width=8,replies=3",
    "search",
    "search:width=8",
    "search:depth=3",
    "search:width=8,replies=6,depth=3",
]
# --cost-grid: time per game over greedy's at 2, 3 and 4 players, for the declared cost
# (`sim.bots.search.search_cost`, an upper bound of these: tests/test_search_bot.py checks).
GRID = [
    "search:width=2,replies=1,depth=0",
    "search:width=4,replies=3,depth=1",
    "search",
    "search:width=12,replies=2",
    "search:depth=4",
    "search:width=8,replies=6,depth=3",
]
GRID_GAMES = {2: 1000, 3: 300, 4: 200}
RESULTS = ROOT / "bench" / "results" / "search.json"
REPEATS = 3
COST_GAMES = 2000
DOCS = ROOT / "docs" / "bots.md"
START, END = "<!-- search:start -->", "<!-- search:end -->"


def self_play_cost(bot: str, games: int, players: int = 2) -> dict:
    config = Configuration(players, [bot] * players)
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


class _Timed:
    """A bot whose ``act`` calls add their CPU time to ``cpu``."""

    def __init__(self, bot):
        self.bot = bot
        self.cpu = 0.0
        self.choose_columns = bot.choose_columns

    def act(self, st, slots, keys):
        t0 = time.process_time()
        out = self.bot.act(st, slots, keys)
        self.cpu += time.process_time() - t0
        return out


def against_rollout_cost(bot: str, games: int) -> float:
    """CPU ms per game spent in `bot`'s own decisions, in mirrored games against `rollout`."""
    config = Configuration(2, [bot, "rollout"], seating="mirrored")
    best = float("inf")
    for _ in range(REPEATS):
        table = set_table(config, SEED + 1, np.arange(games))
        timed = table.bots[0] = _Timed(table.bots[0])
        play_table(table)
        best = min(best, timed.cpu)
    return 1e3 * best / games


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


def compare(a: str, b: str, games: int, *extra: str) -> dict:
    argv = ["compare", a, b, "--max-games", str(games), "--seed", "1", *extra]
    doc = azulsim(argv)
    keys = ("verdict", "games", "pentanomial", "score", "score_ci95", "elo", "elo_ci95", "llr")
    return {"command": "azulsim " + " ".join(argv), **{k: doc[k] for k in keys}}


def costs(specs: list[str], games: int, single: int) -> list[dict]:
    rows = [self_play_cost(b, games) for b in specs]
    by = {r["bot"]: r for r in rows}
    greedy, heuristic = by["greedy"]["ms_per_game"], by["heuristic"]["ms_per_game"]
    vs_heuristic = against_rollout_cost("heuristic", games)
    for row in rows:
        row["x_greedy"] = round(row["ms_per_game"] / greedy, 1)
        row["x_heuristic"] = round(row["ms_per_game"] / heuristic, 1)
        if row["bot"].startswith("search"):
            ms = against_rollout_cost(row["bot"], games)
            row["vs_rollout_ms_per_game"] = round(ms, 4)
            row["vs_rollout_x_heuristic"] = round(ms / vs_heuristic, 1)
        row["us_per_decision_one"] = round(single_decision_cost(row["bot"], single), 1)
        print(json.dumps(row), flush=True)
    return rows


def run(args) -> dict:
    g = args.games
    result: dict = {
        "seed": SEED,
        "command": "python bench/search.py"
        + (" --quick" if args.quick else "")
        + (" --curve" if args.curve else "")
        + (" --cost-grid" if args.cost_grid else ""),
        "machine": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "budgets": BUDGETS,
    }
    specs = ["greedy", "heuristic", "rollout", *BUDGETS.values()]
    result["cost"] = costs(specs, args.cost_games, args.single)
    d, small, large = BUDGETS["default"], BUDGETS["small"], BUDGETS["large"]
    plan = [
        (d, "rollout", g),
        (small, "rollout", g),
        (large, "rollout", g),
        (d, "heuristic", g),
        (large, d, 2 * g, "--sprt", "0,20"),
        (d, "rollout", g, "--wall", "gray"),
    ]
    result["compare"] = []
    for a, b, games, *extra in plan:
        row = compare(a, b, games, *extra)
        result["compare"].append(row)
        print(json.dumps(row), flush=True)
    if args.cost_grid:
        result["cost_grid"] = cost_grid()
    if args.curve:
        heuristic = next(r for r in result["cost"] if r["bot"] == "heuristic")["ms_per_game"]
        result["curve"] = []
        for spec in CURVE:
            cost = self_play_cost(spec, args.cost_games)
            row = {"bot": spec, "x_heuristic": round(cost["ms_per_game"] / heuristic, 1)}
            row.update(compare(spec, "rollout", g))
            result["curve"].append(row)
            print(json.dumps(row), flush=True)
    return result


def cost_grid() -> list[dict]:
    """Self-play time per game over greedy's (4x the games, for its batch) at 2, 3 and 4 players,
    with the declared cost."""
    from sim.bots import parse_bot_spec
    from sim.bots.registry import get_bot_info

    info = get_bot_info("search")
    rows = []
    for players, games in GRID_GAMES.items():
        greedy = self_play_cost("greedy", 4 * games, players)["ms_per_game"]
        for spec in GRID:
            ms = self_play_cost(spec, games, players)["ms_per_game"]
            row = {"players": players, "bot": spec, "games": games}
            row["x_greedy"] = round(ms / greedy, 1)
            row["declared"] = round(info.cost_of(parse_bot_spec(spec).params), 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _ci(pair, scale=100.0, fmt=".1f") -> str:
    return f"[{scale * pair[0]:{fmt}}, {scale * pair[1]:{fmt}}]"


def tables(result: dict) -> str:
    lines = [
        f"Measured with `{result['command']}` (seed {result['seed']}, {result['machine']}, "
        f"Python {result['python']}, numpy {result['numpy']}); CPU time of one process "
        "(`time.process_time`, the least of 3 runs), 2 players, coloured wall, 2,000 games in one "
        "batch. Budgets: "
        + ", ".join(f"{k} `{v}`" for k, v in result["budgets"].items())
        + ". *Against rollout*: the CPU time inside the bot's own decisions per game against "
        "`rollout`, over `heuristic`'s measured the same way.",
        "",
        "| bot | ms per game | × greedy | × heuristic | against rollout: × heuristic | "
        "µs per decision, batched | µs per decision, batch of one |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in result["cost"]:
        vs = row.get("vs_rollout_x_heuristic", "—")
        lines.append(
            f"| `{row['bot']}` | {row['ms_per_game']:.3f} | {row['x_greedy']} | "
            f"{row['x_heuristic']} | {vs} | {row['us_per_decision_batched']:,.0f} | "
            f"{row['us_per_decision_one']:,.0f} |"
        )
    lines += [
        "",
        "| command | games | score [95 %] | Elo [95 %] | SPRT |",
        "| --- | --- | --- | --- | --- |",
    ]
    for m in result["compare"]:
        sprt = "—" if m["verdict"] is None else f"{m['verdict']} (LLR {m['llr']:.2f})"
        lines.append(
            f"| `{m['command']}` | {m['games']:,} | {100 * m['score']:.1f} % "
            f"{_ci(m['score_ci95'])} | {m['elo']:+.0f} {_ci(m['elo_ci95'], 1, '+.0f')} | {sprt} |"
        )
    if result.get("cost_grid"):
        lines += [
            "",
            "Time per self-play game over `greedy`'s (`--cost-grid`) against the declared cost "
            "(`search_cost`, an upper bound over 2–4 players that sizes the service's chunks):",
            "",
            "| budget | 2 players | 3 players | 4 players | declared |",
            "| --- | --- | --- | --- | --- |",
        ]
        grid: dict = {}
        for r in result["cost_grid"]:
            grid.setdefault(r["bot"], {})[r["players"]] = r
        for bot, by in grid.items():
            cells = " | ".join(str(by[p]["x_greedy"]) if p in by else "—" for p in (2, 3, 4))
            declared = next(iter(by.values()))["declared"]
            lines.append(f"| `{bot}` | {cells} | {declared} |")
    if result.get("curve"):
        lines += [
            "",
            "Strength against cost (`--curve`): each budget's self-play cost per game over "
            "`heuristic`'s, and its score against `rollout` (`azulsim compare`, mirrored pairs).",
            "",
            "| budget | × heuristic | score against rollout [95 %] | Elo [95 %] |",
            "| --- | --- | --- | --- |",
        ]
        for m in sorted(result["curve"], key=lambda r: r["x_heuristic"]):
            lines.append(
                f"| `{m['bot']}` | {m['x_heuristic']} | {100 * m['score']:.1f} % "
                f"{_ci(m['score_ci95'])} | {m['elo']:+.0f} {_ci(m['elo_ci95'], 1, '+.0f')} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=2000, help="games per comparison (the SPRT: 2x)")
    ap.add_argument("--cost-games", type=int, default=COST_GAMES, help="games per cost row")
    ap.add_argument("--single", type=int, default=200, help="positions for the batch of one")
    ap.add_argument("--curve", action="store_true", help="strength against cost over CURVE")
    ap.add_argument(
        "--cost-grid", action="store_true", help="cost at 2-4 players over GRID (declared cost)"
    )
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/bots.md")
    args = ap.parse_args()
    tune_allocator()  # as every process that plays a job does (sim.jobs.local, workers)
    if args.quick:
        args.games, args.cost_games, args.single = 240, 200, 20
    result = run(args)
    result["tables"] = tables(result)
    if not args.quick:
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
