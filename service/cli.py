"""The ``azulsim`` console script: a small dispatcher over subcommands (DESIGN.md §7).

Each subcommand is one ``add_<name>(subparsers)`` function that declares its arguments and sets
``func`` to one ``cmd_<name>(args) -> int`` function; `SUBCOMMANDS` lists the ``add_`` functions.
To add a subcommand, write the pair and append the ``add_`` function to `SUBCOMMANDS`.

Errors: a subcommand raises `UsageError` (or ``ValueError`` from validation) for bad input; `main`
prints it as one line, ``azulsim <command>: error: <message>``, and exits with status 2 (the status
argparse uses for its own usage errors).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

PROG = "azulsim"

# Stand-in for sim.play.play_games (tests set it); None means the real batch engine.
PLAY: Callable[..., Any] | None = None


class CommandError(Exception):
    """A subcommand failed in a way the user should read: printed as one line, exit `status`."""

    status = 1


class UsageError(CommandError):
    """Bad input from the user: exit status 2, as for argparse's own usage errors."""

    status = 2


# --------------------------------------------------------------------------------------------
# simulate


def add_spec_options(p: argparse.ArgumentParser) -> None:
    """The options that describe a one-configuration job (`simulate` and `submit` share them)."""
    p.add_argument("--players", type=int, help="2, 3 or 4 (default: the number of bots)")
    p.add_argument("--bots", help="one bot spec per seat, comma-separated, e.g. greedy,random")
    p.add_argument("--games", type=int, help="games per configuration (default 1000)")
    p.add_argument("--seed", type=int, help="job seed, 0..2**63-1 (default 0)")
    p.add_argument("--wall", help="coloured (default) or gray")
    p.add_argument("--seating", help="rotate (default), fixed or shuffle")
    p.add_argument("--max-rounds", type=int, help="round cap (default 100)")


def add_simulate(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="play a batch in this process (no Redis, no Celery) and print its statistics",
        description=(
            "Play games in-process with the batch engine and print exact statistics. "
            "Bots are one spec per seat, comma-separated: "
            "--bots 'heuristic:floor=2.5,centre=1,random' is two bots (a key=value piece "
            "continues the previous spec)."
        ),
    )
    add_spec_options(p)
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="JSON job spec (see sim/spec.py); --games, "
        "--seed and --max-rounds override its values",
    )
    p.add_argument("--workers", type=int, help="processes (default: CPU count; 1: no pool)")
    p.add_argument("--chunk-size", type=int, help="games per chunk (default: automatic)")
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json", action="store_true", help="print the statistics as one JSON document"
    )
    out.add_argument("--csv", action="store_true", help="print one CSV row per group")
    p.set_defaults(func=cmd_simulate)


def _simulate_spec(args: argparse.Namespace):
    from sim.bots.registry import split_bot_list
    from sim.spec import JobSpec

    if args.spec:
        clash = [
            f"--{n.replace('_', '-')}"
            for n in ("players", "bots", "wall", "seating")
            if getattr(args, n) is not None
        ]
        if clash:
            raise UsageError(f"{', '.join(clash)} cannot be combined with --spec")
        try:
            data = json.loads(Path(args.spec).read_text())
        except OSError as exc:
            raise UsageError(f"cannot read --spec {args.spec}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--spec {args.spec} is not valid JSON: {exc}") from None
        if isinstance(data, dict):
            for name in ("games", "seed", "max_rounds"):
                if getattr(args, name) is not None:
                    data[name] = getattr(args, name)
        return JobSpec.from_dict(data)
    if not args.bots:
        raise UsageError("--bots is required (or --spec FILE)")
    bots = split_bot_list(args.bots)
    config = {"players": args.players if args.players is not None else len(bots), "bots": bots}
    if args.wall is not None:
        config["wall"] = args.wall
    if args.seating is not None:
        config["seating"] = args.seating
    spec = {
        "configurations": [config],
        "games": 1000 if args.games is None else args.games,
        "seed": 0 if args.seed is None else args.seed,
    }
    if args.max_rounds is not None:
        spec["max_rounds"] = args.max_rounds
    return JobSpec.from_dict(spec)


def cmd_simulate(args: argparse.Namespace) -> int:
    from sim.local import run_local
    from sim.stats import group_rows

    try:
        spec = _simulate_spec(args)
    except ValueError as exc:  # validation of the spec, its bots and their parameters
        raise UsageError(str(exc)) from None
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1; got {args.chunk_size}")
    if PLAY is None:
        try:
            from sim.play import play_games  # noqa: F401
        except ImportError as exc:
            if getattr(exc, "name", None) not in ("sim.play", "play_games"):
                raise
            raise CommandError("the batch engine (sim.play.play_games) is not available") from None
    bar = ProgressBar(spec.total_games, sys.stderr) if sys.stderr.isatty() else None
    try:
        result = run_local(
            spec,
            workers=args.workers,
            chunk_size=args.chunk_size,
            progress=bar.update if bar else None,
            play=PLAY,
        )
    finally:
        if bar:
            bar.close()
    doc = result.statistics()
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.csv:
        rows = group_rows(doc)
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        sys.stdout.write(format_table(doc))
    return 0


class ProgressBar:
    """One self-rewriting line on a terminal: games done, games/s, ETA (at most 10 redraws/s)."""

    def __init__(self, total: int, stream: TextIO, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.began = time.monotonic()
        self.last = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < self.total:
            return
        self.last = now
        elapsed = max(now - self.began, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else float("nan")
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        eta_text = _clock(eta) if eta == eta else "--:--"
        self.stream.write(
            f"\r[{bar}] {done:,}/{self.total:,} games  {rate:,.0f} games/s  ETA {eta_text} "
        )
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _mean_ci(stat: dict[str, Any], digits: int = 2) -> str:
    if stat["mean"] is None:
        return "-"
    if stat["ci95"] is None:
        return _num(stat["mean"], digits)
    half = (stat["ci95"][1] - stat["ci95"][0]) / 2
    return f"{stat['mean']:.{digits}f} ± {half:.{digits}f}"


def _rate(group: dict[str, Any]) -> str:
    if group["win_rate"] is None:
        return "-"
    lo, hi = group["win_rate_ci95"]
    return f"{100 * group['win_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _table(header: Sequence[str], rows: list[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join("  " + line.rstrip() for line in lines) + "\n"


_GROUP_HEADER = (
    "",
    "player-games",
    "score (mean ± 95%)",
    "std",
    "min",
    "max",
    "wins",
    "win rate [95% CI]",
)


def _group_row(name: str, g: dict[str, Any]) -> list[str]:
    s = g["score"]
    extremes = ["-" if s[k] is None else str(s[k]) for k in ("min", "max")]
    return [
        name,
        f"{g['player_games']:,}",
        _mean_ci(s),
        _num(s["std"]),
        *extremes,
        f"{g['wins']:,}",
        _rate(g),
    ]


def format_table(doc: dict[str, Any]) -> str:
    """The statistics document as readable text (per configuration: summary, bots, seats, h2h)."""
    out = []
    for cfg in doc["configurations"]:
        reasons = ", ".join(f"{k} {v:,}" for k, v in cfg["truncated_by_reason"].items() if v)
        out.append(
            f"Configuration {cfg['index']}: {cfg['players']} players, {cfg['wall']} wall, "
            f"{cfg['seating']} seating, bots {', '.join(cfg['seat_bots'])}\n"
            f"  games finished {cfg['games_finished']:,}, truncated {cfg['games_truncated']:,}"
            + (f" ({reasons})" if reasons else "")
            + "\n"
            f"  rounds {_mean_ci(cfg['rounds'])}   turns {_mean_ci(cfg['turns'])}   "
            f"score {_mean_ci(cfg['score'])}   margin of victory {_mean_ci(cfg['margin'])}   "
            f"shared wins {cfg['shared_win_games']:,} games\n"
        )
        out.append("\n  By bot\n")
        out.append(_table(_GROUP_HEADER, [_group_row(b, g) for b, g in cfg["bots"].items()]))
        out.append("\n  By seat\n")
        out.append(
            _table(_GROUP_HEADER, [_group_row(f"seat {p}", g) for p, g in enumerate(cfg["seats"])])
        )
        out.append("\n  By turn order in round 1 (0 = start player)\n")
        out.append(
            _table(
                _GROUP_HEADER,
                [_group_row(f"position {p}", g) for p, g in enumerate(cfg["positions"])],
            )
        )
        bonus_rows = [
            [
                b,
                _mean_ci(g["bonus"]),
                _mean_ci(g["rows"]),
                _mean_ci(g["columns"]),
                _mean_ci(g["colours"]),
                _mean_ci(g["floor"]),
                _mean_ci(g["marker"]),
            ]
            for b, g in cfg["bots"].items()
        ]
        out.append("\n  Bonuses and penalties by bot (means per game)\n")
        out.append(
            _table(
                ("", "bonus pts", "rows", "columns", "colours", "floor pen.", "marker takes"),
                bonus_rows,
            )
        )
        h2h = [
            [
                f"{a} vs {b}",
                f"{r['games']:,}",
                f"{r['above']:,}",
                f"{r['level']:,}",
                f"{r['below']:,}",
                _rate({"win_rate": r["above_rate"], "win_rate_ci95": r["above_rate_ci95"]}),
            ]
            for a, row in cfg["head_to_head"].items()
            for b, r in row.items()
        ]
        if h2h:
            out.append("\n  Head to head (finished higher, per meeting of two seats)\n")
            out.append(
                _table(("", "games", "higher", "level", "lower", "higher rate [95% CI]"), h2h)
            )
        out.append("\n")
    timing = doc.get("timing")
    if timing:
        rate = timing["games_per_second"]
        out.append(
            f"{doc['games_done']:,} games in {timing['seconds']:.2f} s"
            + (f" ({rate:,.0f} games/s" if rate else " (")
            + f", {timing['workers']} workers)\n"
        )
    return "".join(out)


# --------------------------------------------------------------------------------------------
# dispatcher

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [add_simulate]


def build_parser() -> argparse.ArgumentParser:
    # The service's subcommands live in their own modules (they import this one).
    from .compare import add_compare
    from .jobcli import SUBCOMMANDS as JOB_SUBCOMMANDS
    from .report import add_report
    from .stack import SUBCOMMANDS as STACK_SUBCOMMANDS

    parser = argparse.ArgumentParser(prog=PROG, description="AzulSim: batch simulation of Azul.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in [*SUBCOMMANDS, add_compare, *STACK_SUBCOMMANDS, *JOB_SUBCOMMANDS, add_report]:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``azulsim`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except CommandError as exc:
        message = " ".join(str(exc).split())
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
