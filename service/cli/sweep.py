"""``azulsim sweep --bots SPECS``: one configuration per value of a bot parameter, paired.

The first bot of ``--bots`` gives one or two parameters as a range ``START..STOP/STEP`` or a list
``v1|v2|v3``, e.g. ``--bots 'heuristic:floor=0..3/0.5,greedy'`` or, a grid,
``--bots 'heuristic:floor=0..3/1,marker=0|1|2,greedy'`` (quote the ``|``). The other bots are its
opponents (the last fills the seats left). Every value plays the same deals and seats game for
game, paired with the baseline (the first value, or ``--baseline floor=1``): a table per value of
the swept bot's win rate and score with 95 % intervals and the paired difference to the baseline
(win rates in per cent, their differences in percentage points), and the best value (highest win
rate) with its interval. Each other value is tested against the best on the same games (a paired
test of the win rate, Holm's rule over the values so that the chance of calling any equal value
worse is at most 5 %; docs/statistics.md): "same" values cannot be told apart from the best.
``azulsim report`` draws the win rate against the parameter with interval bands (a heat map for a
grid). ``--server HOST:PORT`` plays
the sweep as one service job. At most 100 values (a 10 x 10 grid).
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import STUDY_SERVER, STUDY_SERVICE, UsageError, add_client_options, plain
from .study import run_study


def add_sweep(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="one configuration per value of a bot parameter (range or list), paired on deals",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--bots",
        required=True,
        metavar="SPECS",
        help="the swept bot first, e.g. 'heuristic:floor=0..3/0.5,greedy'",
    )
    p.add_argument("--players", type=int, help="2, 3 or 4 (default: the number of --bots)")
    p.add_argument("--games", type=int, default=1000, help="games per value (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="job seed (default 0)")
    p.add_argument("--baseline", help="the baseline value, e.g. floor=1 (default: the first)")
    p.add_argument("--wall", default="coloured", help="coloured (default) or gray")
    p.add_argument(
        "--seating", default="rotate", help="rotate (default), fixed, shuffle or mirrored"
    )
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the sweep section as JSON, with the spec, the job id (--server) and the "
        "statistics document that `azulsim report --from FILE` draws",
    )
    add_client_options(p, STUDY_SERVICE, STUDY_SERVER)
    p.set_defaults(func=cmd_sweep)


def sweep_job(args: argparse.Namespace):
    from sim.bots.registry import split_bot_list
    from sim.sweep import sweep_spec

    try:
        return sweep_spec(
            split_bot_list(args.bots),
            games=args.games,
            seed=args.seed,
            players=args.players,
            wall=args.wall,
            seating=args.seating,
            baseline=args.baseline,
        )
    except ValueError as exc:
        text = str(exc)
        for field, option in (
            ("baseline", "--baseline"),
            ("games ", "--games "),
            ("seed ", "--seed "),
        ):
            if text.startswith(field):
                text = option + text[len(field) :]
        raise UsageError(f"--bots: {text}" if text.startswith(("bot", "sweep")) else text) from None


def _interval(x: float | None, ci, digits: int, percent: bool = False) -> str:
    if x is None:
        return "-"
    f = 100.0 if percent else 1.0
    text = f"{f * x:+.{digits}f}" if not percent else f"{f * x:.{digits}f}%"
    if ci:
        text += f" [{f * ci[0]:.{digits}f}, {f * ci[1]:.{digits}f}]"
    return text


def _points(x: float | None, ci) -> str:
    """A difference of two rates in percentage points, beside rates printed in per cent."""
    if x is None:
        return "-"
    text = f"{100 * x:+.1f} pp"
    if ci:
        text += f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    return text


def _versus_best(row: dict[str, Any]) -> str:
    t = row.get("vs_best")
    if t is None:
        return "best"
    if t["p_holm"] is None:
        return "-"
    verdict = "worse" if t["distinguishable"] else "same"
    return f"{_points(t['win_rate_diff'], None)} {verdict} (p {t['p_holm']:.2g})"


def _values(row: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["values"].items()
    )


def format_sweep(doc: dict[str, Any]) -> str:
    from .output import table

    sw = doc["sweep"]
    lines = [
        f"Sweep of {sw['bot']} ({', '.join(sw['parameters'])}) against "
        f"{', '.join(sw['opponents'])}: {len(sw['rows'])} values, paired with value "
        f"{sw['baseline']} on the same deals and seats\n"
    ]
    rows = []
    for r in sw["rows"]:
        mark = " (baseline)" if r["configuration"] == sw["baseline"] else ""
        if sw["best"] and r["configuration"] == sw["best"]["configuration"]:
            mark += " (best)"
        rows.append(
            [
                _values(r) + mark,
                f"{r['games']:,}",
                _interval(r["win_rate"], r["win_rate_ci95"], 1, percent=True),
                "-"
                if r["score"] is None
                else _interval(r["score"], r["score_ci95"], 2).lstrip("+"),
                _points(r["win_rate_diff"], r["win_rate_diff_ci95"]),
                _interval(r["score_diff"], r["score_diff_ci95"], 2),
                _versus_best(r),
            ]
        )
    header = ("value", "games", "win rate [95% CI]", "score [95% CI]",
              "win rate - baseline", "score - baseline", "win rate - best (Holm p)")  # fmt: skip
    lines.append(table(header, rows))
    best = sw["best"]
    if best:
        diff = ""
        if best["win_rate_diff"] is not None:
            gain = _points(best["win_rate_diff"], best["win_rate_diff_ci95"])
            diff = f"; {gain} over the baseline"
        lines.append(
            f"\nBest value: {_values(best)} ({best['bot']}), win rate "
            f"{_interval(best['win_rate'], best['win_rate_ci95'], 1, percent=True)}{diff}\n"
        )
        told = (sw.get("versus_best") or {}).get("indistinguishable", [])
        same = [r for r in sw["rows"] if r["configuration"] in told
                and r["configuration"] != best["configuration"]]  # fmt: skip
        if same:
            lines.append(
                f"Not told apart from the best (paired tests, Holm at 5 %): "
                f"{'; '.join(_values(r) for r in same)}\n"
            )
        elif len(sw["rows"]) > 1:
            lines.append("Every other value is worse than the best (paired tests, Holm at 5 %)\n")
    return "".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    return run_study(sweep_job(args), args, "sweep", format_sweep)
