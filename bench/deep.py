"""Strength of the budgeted search `deep` against its budget (docs/bots.md, "deep").

For each budget (``deep:nodes=N``) and table (players, wall) it plays a mirrored-pairs match
against an opponent (`azulsim compare`'s job: every deal P times with the bots rotated), in this
process (`sim.jobs.local.run_local`, one worker), and records the score with its 95 % interval
(pairs as the unit, `sim.stats.groups`), the Elo, and the CPU per move of both sides
(`sim.jobs.play.BotClock`: `deep` accounts its own; the opponent's class is marked to account its
CPU here too).

Writes ``bench/results/deep.json`` (rows appended per run configuration, keyed by the command).

Usage: ``python bench/deep.py [--budgets 8 24 96 384] [--against search] [--players 2 3 4]
[--wall coloured] [--games 200] [--seed 1]``
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.cli.compare import compare_document  # noqa: E402
from sim.bots import make_bot  # noqa: E402
from sim.bots.playout import ready  # noqa: E402
from sim.jobs.local import run_local  # noqa: E402
from sim.jobs.spec import JobSpec  # noqa: E402

OUT = ROOT / "bench" / "results" / "deep.json"


def account(spec: str) -> None:
    """Mark the class of bot `spec` as accounting its CPU per move (in this process only)."""
    type(make_bot(spec)).cpu_accounted = True


def match(a: str, b: str, players: int, wall: str, games: int, seed: int) -> dict:
    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"players": players, "bots": [a] + [b] * (players - 1), "seating": "mirrored",
                 "wall": wall}
            ],
            "games": games,
            "seed": seed,
        }
    )  # fmt: skip
    t0 = time.perf_counter()
    doc = compare_document(run_local(spec, workers=1).statistics())
    cpu = {row["bot"]: round(row["us_per_move"], 1) for row in doc.get("cpu") or ()}
    return {
        "a": a,
        "b": b,
        "players": players,
        "wall": wall,
        "games": doc["games"],
        "pairs": doc["pairs"],
        "score": doc["score"],
        "score_ci95": doc["score_ci95"],
        "elo": doc["elo"],
        "elo_ci95": doc["elo_ci95"],
        "us_per_move_a": cpu.get(spec.configurations[0].bots[0]),
        "us_per_move_b": cpu.get(spec.configurations[0].bots[1]),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def table() -> str:
    """The rows of every run in bench/results/deep.json as a markdown table (docs/bots.md)."""
    out = [
        "| players | wall | bot | µs per move | opponent's µs per move | games | score [95 %] | "
        "Elo [95 %] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in json.loads(OUT.read_text())["runs"]:
        for r in run["rows"]:
            cells = [
                str(r["players"]),
                r["wall"],
                f"`{r['a']}` vs `{r['b']}`",
                f"{r['us_per_move_a']:,.0f}",
                f"{r['us_per_move_b']:,.0f}",
                *result_cells(r),
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def result_cells(r: dict) -> list[str]:
    """A match row's games, score and Elo cells, each with its 95 % interval."""
    lo, hi = r["score_ci95"]

    def elo(x) -> str:  # None where a side won everything: the Elo is unbounded
        return "—" if x is None else f"{x:+.0f}"

    return [
        str(r["games"]),
        f"{100 * r['score']:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]",
        f"{elo(r['elo'])} [{', '.join(map(elo, r['elo_ci95']))}]",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", nargs="+", default=["8", "24", "96", "384"])
    ap.add_argument("--against", default="search")
    ap.add_argument("--players", type=int, nargs="+", default=[2])
    ap.add_argument("--wall", nargs="+", default=["coloured"])
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--table", action="store_true", help="print the results as markdown")
    args = ap.parse_args()
    if args.table:
        print(table())
        return
    account(args.against)
    ready()  # load the compiled kernels now, or the first match's first bot pays for it
    rows = []
    for players in args.players:
        for wall in args.wall:
            for budget in args.budgets:
                a = budget if ":" in budget or not budget.isdigit() else f"deep:nodes={budget}"
                account(a)
                rows.append(match(a, args.against, players, wall, args.games, args.seed))
                print(json.dumps(rows[-1]), flush=True)
    old = json.loads(OUT.read_text()) if OUT.exists() else {"runs": []}
    old["runs"].append(
        {
            "command": "python bench/deep.py " + " ".join(sys.argv[1:]),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "note": "shared, loaded machine: CPU per move is process time, noisy",
            "rows": rows,
        }
    )
    OUT.write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
