"""``azulsim balance``: rule sets side by side, with the measures of game-design research.

One job (`sim.experiments.balance_lab.balance_spec`) plays, at each player count, every rule set
with the same line-up in every seat (seats rotated), each rule set paired with the first
(``--rules``' first, the printed game by default) on the same deals and seats game for game, and the
restricted-play configurations: one bot forbidden one strategic element against ``P - 1``
unrestricted copies. It prints, per player count, each measure with its 95 % interval and, for every
other rule set, the paired difference to the first with its interval; then the restricted-play table
(the restricted bot's win rate beside its fair share 1/P; a large loss means the element matters).

A rule set is ``printed`` or ``key=value`` pairs: ``wall=gray``, ``max_rounds=30``,
``wall=gray,max_rounds=30`` (`sim.rules.rulesets`). ``--json`` prints the statistics document with
the balance sheet under ``balance_sheet``; ``azulsim report --from FILE`` draws it. ``--server``
runs the same job through the service: the same document.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import UsageError, add_client_options, whole_number


def add_balance(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "balance",
        help="compare rule sets: seat balance, lead changes, decisiveness, restricted play",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--rules",
        action="append",
        metavar="RULES",
        help="a rule set, repeatable; the first is the reference (default: printed, then "
        "wall=gray)",
    )
    p.add_argument(
        "--players", default="2,3,4", help="player counts, comma-separated (default 2,3,4)"
    )
    p.add_argument("--bot", default="heuristic", help="the line-up's bot (default heuristic)")
    p.add_argument(
        "--elements",
        default="marker,floor,five,bonus",
        help="restricted elements, comma-separated, or none (default marker,floor,five,bonus)",
    )
    p.add_argument(
        "--games", type=whole_number, default=2400, help="games per configuration (default 2400)"
    )
    p.add_argument("--seed", type=int, default=0, help="job seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument("--chunk-size", type=int, help="games per chunk (default: automatic)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    add_client_options(p, "through the service (with --server; default: in-process)")
    p.set_defaults(func=cmd_balance)


def balance_job(args: argparse.Namespace):
    """The job spec of the command line (UsageError names the option)."""
    from sim.experiments.balance_lab import balance_spec

    try:
        players = [int(x) for x in args.players.split(",")]
    except ValueError:
        raise UsageError(
            f"--players must be player counts such as 2,3,4; got {args.players!r}"
        ) from None
    elements = [] if args.elements == "none" else args.elements.split(",")
    try:
        return balance_spec(
            args.rules or ["printed", "wall=gray"],
            players,
            args.bot,
            elements,
            games=args.games,
            seed=args.seed,
        )
    except ValueError as exc:
        message = str(exc)
        for word, option in (("rule_sets", "--rules"), ("players", "--players"),
                             ("elements", "--elements"), ("games", "--games"),
                             ("seed", "--seed"), ("rules", "--rules")):  # fmt: skip
            if message.startswith(word):
                message = option + message[len(word) :]
                break
        raise UsageError(message) from None


def balance_output(stats: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: the statistics document (no timing) and its balance sheet."""
    from sim.experiments.balance_lab import balance_document

    out = {k: v for k, v in stats.items() if k != "timing"}
    out["balance_sheet"] = balance_document(out)
    return out


def _num(x: float | None, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _cell(value, ci, digits: int) -> str:
    lo, hi = ci or (None, None)
    return f"{_num(value, digits)} [{_num(lo, digits)}, {_num(hi, digits)}]"


DIGITS = {
    "rounds": 2, "turns": 1, "lead_changes": 2, "decisive": 2, "margin": 2,
    "decision_turns": 1, "legal_actions": 2,
}  # fmt: skip


def format_balance(sheet: dict[str, Any]) -> str:
    """The balance sheet as text tables."""
    lines: list[str] = []
    for table in sheet["tables"]:
        rows = table["rule_sets"]
        if rows:
            first = rows[0]
            lines.append(
                f"{table['players']} players ({', '.join(first['bots'])}; "
                f"{first['games']:,} finished games per rule set)"
            )
            head = ["measure"] + [r["rule_set"] for r in rows]
            body = []
            for name in sheet["measures"]:
                digits = DIGITS.get(name, 3)
                cells = [name]
                for r in rows:
                    m = r["measures"][name]
                    text = _cell(m["value"], m["ci95"], digits)
                    if "diff" in m:
                        text += f"  diff {_cell(m['diff'], m['diff_ci95'], digits)}"
                    cells.append(text)
                body.append(cells)
            widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
            for row in [head, *body]:
                lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
            for r in rows[1:]:
                lines.append(
                    f"  diff: {r['rule_set']} minus {rows[0]['rule_set']}, paired over "
                    f"{r['paired_games']:,} games finished under both"
                )
        if table["restricted"]:
            lines.append(
                f"  restricted play at {table['restricted'][0]['rule_set']} (restricted bot vs "
                f"{table['players'] - 1} unrestricted; fair share "
                f"{100 / table['players']:.1f} %):"
            )
            for r in table["restricted"]:
                rate = r["win_rate"]
                lo, hi = r["win_rate_ci95"] or (None, None)
                pct = (
                    "-" if rate is None else f"{100 * rate:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"
                )
                lines.append(
                    f"    never {r['element']:<7} win rate {pct}   score "
                    f"{_num(r['score'], 1)} vs {_num(r['opponents_score'], 1)}"
                )
        lines.append("")
    return "\n".join(lines)


def _write(out: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_balance(out["balance_sheet"]))


def cmd_balance(args: argparse.Namespace) -> int:
    from .study import run_to_end

    job_id, stats = run_to_end(balance_job(args), args)
    out = balance_output(stats)
    if job_id is not None:  # with --server: the job that `report`, `replay` and `export` take
        out["job_id"] = job_id
    _write(out, args)
    return 0
