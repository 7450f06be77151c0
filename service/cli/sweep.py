"""``azulsim sweep --bots SPECS [--rules TEXT]``: one configuration per value of a bot parameter
or a rule, paired.

The first bot of ``--bots`` gives one or two parameters as a range ``START..STOP/STEP`` or a list
``v1|v2|v3``, e.g. ``--bots 'heuristic:floor=0..3/0.5,greedy'`` or, a grid,
``--bots 'heuristic:floor=0..3/1,marker=0|1|2,greedy'`` (quote the ``|``). The other bots are its
opponents (the last fills the seats left). A rule is swept the same way in ``--rules``
(``--rules 'column_bonus=3..10/1'``, ``--rules 'marker=floor|off|2,wall=gray'``: the fixed rules
hold for every value; keys and limits in docs/rules.md, "Rule variants"); one rule and one bot
parameter make a grid. Every value plays the same deals and seats game for game, paired with the
baseline (the first value, or ``--baseline floor=1`` / ``--baseline column_bonus=7``), where
their rules deal alike and the wall is the same (a rule that changes the factories or the tiles
deals other games: its values are unpaired, and the table says so): a table per value of the
swept bot's win rate and score with 95 % intervals and the paired difference to the baseline
(win rates in per cent, their differences in percentage points), and the best value (highest
win rate) with its interval. Each other value is tested against the best on the same games (a
paired test of the win rate, Holm's rule over the values so that the chance of calling any equal
value worse is at most 5 %; docs/statistics.md): "same" values cannot be told apart from the
best.

Several line-ups (``--bots`` again) and player counts (``--players 2,4``) sweep in one job: every
line-up at every player count plays every value, each such group paired with its own baseline
and read on its own (a table, a best value). ``azulsim report`` draws the win rate against the
parameter with interval bands, one line per group (a heat map for a grid). ``--server
HOST:PORT`` plays the sweep as one service job. At most 100 configurations (values x line-ups x
player counts; a 10 x 10 grid).
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    STUDY_SERVER,
    STUDY_SERVICE,
    UsageError,
    add_client_options,
    add_rules_option,
    plain,
)
from .study import run_study


def add_sweep(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="one configuration per value of a bot parameter or a rule (range or list), paired "
        "on deals",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--bots",
        required=True,
        action="append",
        metavar="SPECS",
        help="a line-up, the swept bot first, e.g. 'heuristic:floor=0..3/0.5,greedy'; again for "
        "another line-up in the same job",
    )
    p.add_argument(
        "--players",
        metavar="N[,N...]",
        help="2, 3 or 4, or several: 2,4 (default: the number of --bots)",
    )
    p.add_argument("--games", type=int, default=1000, help="games per value (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="job seed (default 0)")
    add_rules_option(
        p,
        "the rules every game plays under, of which one or two may be swept: "
        "'column_bonus=3..10/1', 'marker=floor|off,wall=gray' (default printed)",
        parse=False,
    )
    p.add_argument(
        "--baseline",
        help="the baseline value, e.g. floor=1 or column_bonus=7 (default: the first)",
    )
    p.add_argument("--wall", help="coloured (default) or gray")
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


def _player_counts(text: str | None) -> list[int] | None:
    if text is None:
        return None
    counts = []
    for part in text.split(","):
        try:
            counts.append(int(part))
        except ValueError:
            raise UsageError(
                f"--players must be 2, 3 or 4, or several: 2,4; got {text!r}"
            ) from None
    if any(n not in (2, 3, 4) for n in counts):
        raise UsageError(f"--players must be 2, 3 or 4, or several: 2,4; got {text!r}")
    if len(set(counts)) != len(counts):
        raise UsageError(f"--players names a player count twice: {text!r}")
    return counts


def sweep_job(args: argparse.Namespace):
    from sim.bots.registry import split_bot_list
    from sim.experiments.sweep import sweep_spec

    lineups = [split_bot_list(text) for text in args.bots]
    counts = _player_counts(args.players)
    try:
        return sweep_spec(
            lineups[0] if len(lineups) == 1 else lineups,
            games=args.games,
            seed=args.seed,
            players=counts[0] if counts and len(counts) == 1 else counts,
            wall=args.wall,
            seating=args.seating,
            baseline=args.baseline,
            rules=args.rules,
        )
    except ValueError as exc:
        text = str(exc)
        for field, option in (
            ("baseline", "--baseline"),
            ("games ", "--games "),
            ("seed ", "--seed "),
            ("players ", "--players "),
            ("configurations[", "--players/--bots: configurations["),
        ):
            if text.startswith(field):
                text = option + text[len(field) :]
        if text.startswith("rules"):
            text = f"--rules: {text}"
        elif text.startswith(("bot", "sweep", "every line-up")):
            text = f"--bots: {text}"
        raise UsageError(text) from None


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


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "/".join(str(x) for x in v)
    return str(v)


def _values(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in row["values"].items())


def _group_table(sw: dict[str, Any], group: dict[str, Any]) -> list[str]:
    from .output import table

    lines = []
    rows = []
    mine = [sw["rows"][k] for k in group["configurations"]]
    for r in mine:
        mark = " (baseline)" if r["configuration"] == group["baseline"] else ""
        if group["best"] and r["configuration"] == group["best"]["configuration"]:
            mark += " (best)"
        unpaired = not r.get("paired", True)
        rows.append(
            [
                _values(r) + mark,
                f"{r['games']:,}",
                _interval(r["win_rate"], r["win_rate_ci95"], 1, percent=True),
                "-"
                if r["score"] is None
                else _interval(r["score"], r["score_ci95"], 2).lstrip("+"),
                "unpaired" if unpaired else _points(r["win_rate_diff"], r["win_rate_diff_ci95"]),
                "unpaired" if unpaired else _interval(r["score_diff"], r["score_diff_ci95"], 2),
                _versus_best(r),
            ]
        )
    header = ("value", "games", "win rate [95% CI]", "score [95% CI]",
              "win rate - baseline", "score - baseline", "win rate - best (Holm p)")  # fmt: skip
    lines.append(table(header, rows))
    if any(not r.get("paired", True) for r in mine):
        lines.append(
            "\nunpaired: these values' rules deal other games than the baseline's (other "
            "factories or tiles) or play another wall, so they are not paired with it; the test "
            "against the best is then on independent games\n"
        )
    best = group["best"]
    if best:
        diff = ""
        if best["win_rate_diff"] is not None:
            gain = _points(best["win_rate_diff"], best["win_rate_diff_ci95"])
            diff = f"; {gain} over the baseline"
        lines.append(
            f"\nBest value: {_values(best)} ({best['bot']}), win rate "
            f"{_interval(best['win_rate'], best['win_rate_ci95'], 1, percent=True)}{diff}\n"
        )
        told = (group.get("versus_best") or {}).get("indistinguishable", [])
        same = [r for r in mine if r["configuration"] in told
                and r["configuration"] != best["configuration"]]  # fmt: skip
        if same:
            lines.append(
                f"Not told apart from the best (paired tests, Holm at 5 %): "
                f"{'; '.join(_values(r) for r in same)}\n"
            )
        elif len(mine) > 1:
            lines.append("Every other value is worse than the best (paired tests, Holm at 5 %)\n")
    return lines


def _rules_line(doc: dict[str, Any]) -> str:
    """The rules of the sweep's baseline, by label (``printed`` for the printed game)."""
    from sim.jobs.spec import JobSpec
    from sim.rules.rulesets import RuleSet

    spec = JobSpec.from_dict(doc["spec"])
    return RuleSet.of(spec.configurations[spec.baseline], spec).label


def format_sweep(doc: dict[str, Any]) -> str:
    sw = doc["sweep"]
    groups = sw.get("groups") or [
        {
            "group": 0,
            "configurations": [r["configuration"] for r in sw["rows"]],
            "baseline": sw["baseline"],
            "best": sw["best"],
            "versus_best": sw.get("versus_best"),
            "bot": sw["bot"],
            "opponents": sw["opponents"],
            "players": None,
        }  # fmt: skip
    ]
    lines = []
    for n, group in enumerate(groups):
        players = f" at {group['players']} players" if len(groups) > 1 else ""
        lines.append(
            ("\n" if n else "")
            + f"Sweep of {group['bot']} ({', '.join(sw['parameters'])}) against "
            f"{', '.join(group['opponents'])}{players}: {len(group['configurations'])} values, "
            f"paired with configuration {group['baseline']} on the same deals and seats "
            f"(baseline rules: {_rules_line(doc)})\n"
        )
        lines.extend(_group_table(sw, group))
    return "".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    return run_study(sweep_job(args), args, "sweep", format_sweep)
