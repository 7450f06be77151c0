"""``azulsim tournament BOT BOT ...``: every pair of bots in mirrored groups, then ratings.

One job (`sim.experiments.tournament.tournament_spec`): for two players one mirrored configuration
per pair of bots; for ``--players 3`` or ``4`` one per table of that many different bots and order
of its seats around the table (`sim.experiments.tournament.orders`). The ratings are
Bradley–Terry on the Elo scale with 95 % intervals, anchored on ``--anchor`` (default: the first
bot), fitted on every comparison of two seats (a table of 3 or 4 is decomposed into its pairs);
docs/statistics.md states the model. Prints the rating table strongest first, the head-to-head
matrix (observed score rate of the row bot against the column bot) and, per pair, whether the
model's prediction lies in the observed rate's interval. ``--rules TEXT`` plays every game under
a rule set (docs/rules.md, "Rule variants"; default the printed game): the table's heading names
it, and the ratings hold under those rules only. ``--server HOST:PORT`` plays it as one
service job; its ratings are part of GetStatistics. ``azulsim report`` draws the ratings.
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
    rules_of,
)
from .study import run_study


def add_tournament(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tournament",
        help="every pair of bots in mirrored groups; Bradley-Terry ratings on the Elo scale",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "bots", nargs="+", metavar="BOT", help="bot specs, e.g. greedy heuristic:floor=2"
    )
    p.add_argument("--players", type=int, default=2, help="2 (pairs, default), 3 or 4 (tables)")
    p.add_argument(
        "--games-per-pair",
        type=int,
        default=1000,
        help="games of each pair or table (default 1000; rounded up to whole mirrored groups "
        "in each order of the seats)",
    )
    p.add_argument("--anchor", help="the bot rated 0 (default: the first bot)")
    p.add_argument("--wall", default="coloured", help="coloured (default) or gray")
    add_rules_option(p)
    p.add_argument("--seed", type=int, default=0, help="job seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the ratings section as JSON, with the spec, the job id (--server) and the "
        "statistics document that `azulsim report --from FILE` draws",
    )
    add_client_options(p, STUDY_SERVICE, STUDY_SERVER)
    p.set_defaults(func=cmd_tournament)


def tournament_job(args: argparse.Namespace):
    from sim.experiments.tournament import tournament_spec

    try:
        return tournament_spec(
            args.bots,
            players=args.players,
            games_per_pair=args.games_per_pair,
            seed=args.seed,
            wall=args.wall,
            anchor=args.anchor,
            rules=rules_of(args),
        )
    except ValueError as exc:
        message = (
            str(exc)
            .replace("ratings.anchor", "--anchor")
            .replace("games_per_pair", "--games-per-pair")
        )
        raise UsageError(message.replace("players must", "--players must")) from None


def _fmt(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _rules_label(doc: dict[str, Any]) -> str:
    """The label of the rule set every game of the tournament played under."""
    from sim.jobs.spec import JobSpec
    from sim.rules.rulesets import RuleSet

    spec = JobSpec.from_dict(doc["spec"])
    return RuleSet.of(spec.configurations[0], spec).label


def format_ratings(doc: dict[str, Any]) -> str:
    """The rating table, the head-to-head matrix and the model check, as text."""
    from sim.experiments.tournament import head_to_head_matrix

    from .output import table

    r = doc["ratings"]
    lines = [
        f"Ratings ({r['model']}, Elo scale, anchor {r['anchor']} = 0) over "
        f"{r['comparisons']:,} comparisons of two seats; rules: {_rules_label(doc)}\n"
    ]
    rows = [
        [
            str(i + 1),
            b["bot"],
            _fmt(b["elo"]),
            "-" if not b["elo_ci95"] else f"[{b['elo_ci95'][0]:.0f}, {b['elo_ci95'][1]:.0f}]",
            f"{b['comparisons']:,}",
            "-" if b["score_rate"] is None else f"{100 * b['score_rate']:.1f}%",
        ]
        for i, b in enumerate(r["bots"])
    ]
    lines.append(table(("rank", "bot", "Elo", "95% CI", "comparisons", "score rate"), rows))
    labels, rates = head_to_head_matrix(doc)
    lines.append("\nHead to head: score rate of the row bot against the column bot\n")
    lines.append(
        table(
            ("", *labels),
            [
                [a, *("-" if x is None else f"{100 * x:.1f}%" for x in row)]
                for a, row in zip(labels, rates, strict=True)
            ],
        )
    )
    lines.append("\nModel check: predicted score rate against the observed one\n")
    lines.append(
        table(
            ("pair", "comparisons", "observed [95% CI]", "predicted", "within CI"),
            [
                [
                    f"{h['bot']} vs {h['opponent']}",
                    f"{h['comparisons']:,}",
                    f"{100 * h['observed']:.1f}% [{100 * h['observed_ci95'][0]:.1f}, "
                    f"{100 * h['observed_ci95'][1]:.1f}]",
                    "-" if h["predicted"] is None else f"{100 * h['predicted']:.1f}%",
                    "yes" if h["agrees"] else "NO",
                ]
                for h in r["head_to_head"]
            ],
        )
    )
    return "".join(lines)


def cmd_tournament(args: argparse.Namespace) -> int:
    return run_study(tournament_job(args), args, "ratings", format_ratings)
