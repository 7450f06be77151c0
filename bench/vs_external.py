"""Our bots against an outside engine at several of its budgets (docs/bots.md, "deep").

The engine is any program speaking the external-bot protocol (docs/bots.md, "External bots"),
given by its command line with ``{budget}`` where its budget goes (``--cmd '/opt/engine --nodes
{budget}'``); it is registered in this process for each budget (`register_external_bot`, with the
walls and player counts it declares) and plays mirrored-pair matches (`azulsim compare`'s job,
`bench/deep.py`'s `match`) against each of our bots in ``--ours``. An ``--ours`` spec may hold
``{ms}``: it is then given the engine's CPU per move at that budget (times ``--ms-scale``),
measured first in a calibration match against ``--calibrate-against`` at each player count
(``deep:ms={ms},nodes=200000`` plays at about the engine's CPU per move). Every row records the
CPU per move of both sides (`timing.cpu`), the score of our bot with its 95 % interval (pairs as
the unit) and the Elo.

Writes ``bench/results/vs_external.json`` (a run appended per invocation, keyed by its command);
``--table`` prints every run as markdown.

Usage: ``python bench/vs_external.py --cmd 'ENGINE --nodes {budget}' --budgets 48 215 664
[--name astra] [--ours 'deep:ms={ms},nodes=200000' search] [--players 2] [--games 100]
[--walls coloured] [--supports-players 234] [--seed 1] [--calibrate-games 20]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))  # bench/deep.py, imported as `deep` wherever this runs from

from sim.bots.external import close_all, register_external_bot  # noqa: E402
from sim.bots.playout import ready  # noqa: E402

OUT = ROOT / "bench" / "results" / "vs_external.json"


def _deep_bench():
    """bench/deep.py as a module (its `match`, `account` and `result_cells`)."""
    import deep

    return deep


def engine_name(name: str, budget: str) -> str:
    """A bot name for the engine at `budget` (names are letters, digits and '_')."""
    return f"{name}_" + "".join(ch if ch.isalnum() else "_" for ch in budget)


def fill(spec: str, ms: float | None) -> str:
    """`spec` with ``{ms}`` replaced by `ms` (milliseconds, shortest decimal to 0.001)."""
    if "{ms}" not in spec:
        return spec
    return spec.replace("{ms}", f"{max(ms, 0.001):.3f}".rstrip("0").rstrip("."))


def run(args, done=lambda row: None) -> list[dict]:
    """Every match of `args`; `done` is called with each row as it is measured."""
    bench = _deep_bench()
    ready()
    rows = []
    for budget in args.budgets:
        name = engine_name(args.name, budget)
        register_external_bot(
            name,
            args.cmd.replace("{budget}", budget),
            replace=True,
            walls=args.walls,
            players=args.supports_players,
            move_ms=args.move_ms,
        )
        for players in args.players:
            ms = None
            if any("{ms}" in spec for spec in args.ours):
                bench.account(args.calibrate_against)
                cal = bench.match(
                    args.calibrate_against,
                    name,
                    players,
                    args.wall,
                    args.calibrate_games,
                    args.seed + 999,
                )
                ms = args.ms_scale * cal["us_per_move_b"] / 1000.0
                print(json.dumps({"calibration": budget, **cal}), flush=True)
            for template in args.ours:
                ours = fill(template, ms)
                bench.account(ours)
                row = bench.match(ours, name, players, args.wall, args.games, args.seed)
                row.update(engine=args.name, budget=budget, template=template)
                rows.append(row)
                done(row)
                print(json.dumps(row), flush=True)
        close_all()
    return rows


def table(last: int = 0) -> str:
    """The runs of bench/results/vs_external.json (the `last` ones; 0: all) as markdown."""
    out = [
        "| players | engine budget | engine µs per move | our bot | our µs per move | games | "
        "our score [95 %] | Elo [95 %] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    result_cells = _deep_bench().result_cells
    for run_ in json.loads(OUT.read_text())["runs"][-last:]:
        for r in run_["rows"]:
            cells = [
                str(r["players"]),
                f"{r['engine']} `{r['budget']}`",
                f"{r['us_per_move_b']:,.0f}",
                f"`{r['a']}`",
                f"{r['us_per_move_a']:,.0f}",
                *result_cells(r),
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cmd", help="the engine's command line, {budget} where its budget goes")
    ap.add_argument("--budgets", nargs="+", default=[], help="values put in place of {budget}")
    ap.add_argument("--name", default="engine", help="the engine's name in the results")
    ap.add_argument("--ours", nargs="+", default=["deep:ms={ms},nodes=200000"])
    ap.add_argument("--players", type=int, nargs="+", default=[2])
    ap.add_argument("--wall", default="coloured")
    ap.add_argument("--walls", default="coloured", help="the walls the engine declares")
    ap.add_argument("--supports-players", default="234", help="player counts it declares")
    ap.add_argument(
        "--move-ms",
        type=float,
        default=0.0,
        help="the engine's most thinking time per position (a request's deadline grows by it)",
    )
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calibrate-games", type=int, default=20)
    ap.add_argument("--calibrate-against", default="search")
    ap.add_argument(
        "--ms-scale",
        type=float,
        default=1.0,
        help="{ms} is this times the engine's CPU per move (an anytime search uses less than its"
        " clock where the round is nearly over: its tree runs out)",
    )
    ap.add_argument("--note", default="", help="how the engine was obtained and built")
    ap.add_argument("--table", action="store_true", help="print the results as markdown")
    ap.add_argument("--last", type=int, default=0, help="with --table: only the last N runs")
    args = ap.parse_args()
    if args.table:
        print(table(args.last))
        return
    if not args.cmd or not args.budgets:
        ap.error("--cmd and --budgets are required (or --table)")
    record = {
        "command": "python bench/vs_external.py " + " ".join(sys.argv[1:]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + f" pid {os.getpid()}",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "note": args.note or "CPU per move is process time; shared machines are noisy",
        "rows": [],
    }
    run(args, lambda row: save(record, row))


def save(record: dict, row: dict) -> None:
    """Add `row` to this invocation's run in the results file, written after every match so that
    a run stopped part way keeps what it measured (other runs in the file are left as they are)."""
    record["rows"].append(row)
    old = json.loads(OUT.read_text()) if OUT.exists() else {"runs": []}
    old["runs"] = [r for r in old["runs"] if r.get("started") != record["started"]] + [record]
    OUT.write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
