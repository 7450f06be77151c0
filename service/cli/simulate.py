"""``azulsim simulate``: play a batch in this process (`sim.jobs.local`; no Redis, no Celery) and
print its statistics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .common import CommandError, UsageError, add_spec_options, spec_from_args, whole_number
from .output import write_statistics
from .progress import TerminalProgress

# Stand-in for sim.jobs.play.play_games (tests set it); None means the real batch engine.
PLAY: Callable[..., Any] | None = None


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
        help="JSON job spec (see sim/jobs/spec.py); --games, "
        "--seed and --max-rounds override its values",
    )
    p.add_argument(
        "--workers", type=whole_number, help="processes (default: CPU count; 1: no pool)"
    )
    p.add_argument("--chunk-size", type=whole_number, help="games per chunk (default: automatic)")
    p.add_argument(
        "--games-out",
        metavar="FILE.parquet",
        help="also write every game as a row to this Parquet file (docs/research.md; streamed "
        "per chunk, readable by pandas and polars)",
    )
    p.add_argument(
        "--long-out",
        metavar="FILE.parquet",
        help="with --games-out, also the long form: one row per game and seat (seat, position, "
        "bot, score, ...), for per-bot analysis without a melt",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json", action="store_true", help="print the statistics as one JSON document"
    )
    out.add_argument("--csv", action="store_true", help="print one CSV row per group")
    p.set_defaults(func=cmd_simulate)


def parquet_path(path: str, option: str) -> str:
    """`path` checked for `option`: a .parquet name (what is written, whatever the name says) in
    a directory that exists."""
    from pathlib import Path

    if Path(path).suffix.lower() != ".parquet":
        raise UsageError(
            f"{option} writes Parquet: the file must end in .parquet; got {path!r} (for CSV: "
            "pandas.read_parquet(FILE).to_csv(...))"
        )
    if not Path(path).resolve().parent.is_dir():
        raise UsageError(f"{option} {path}: no such directory {Path(path).parent}")
    return path


def games_out(args: argparse.Namespace, spec):
    """The --games-out path, checked (None when not asked for)."""
    path = getattr(args, "games_out", None)
    if getattr(args, "long_out", None) is not None:
        if path is None:
            raise UsageError("--long-out needs --games-out (the long form is made from it)")
        parquet_path(args.long_out, "--long-out")
    if path is None:
        return None
    parquet_path(path, "--games-out")
    if spec.stop is not None:
        raise UsageError("--games-out cannot be combined with a stopping rule")
    return path


def cmd_simulate(args: argparse.Namespace) -> int:
    from sim.bots.external import ExternalBotError
    from sim.jobs.local import run_local

    try:
        spec = spec_from_args(args)
    except ValueError as exc:  # validation of the spec, its bots and their parameters
        raise UsageError(str(exc)) from None
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1; got {args.chunk_size}")
    bar = TerminalProgress(sys.stderr, spec.total_games) if sys.stderr.isatty() else None
    if bar:
        bar.show(0)
    try:
        result = run_local(
            spec,
            workers=args.workers,
            chunk_size=args.chunk_size,
            progress=bar.show if bar else None,
            play=PLAY,
            games_out=games_out(args, spec),
        )
    except ExternalBotError as exc:  # a bot that failed mid-run: its message names bot and position
        raise CommandError(str(exc)) from None
    finally:
        if bar:
            bar.close()
    if args.long_out is not None:
        from sim.jobs.gamerows import write_long

        rows = write_long(args.games_out, args.long_out)
        print(f"wrote {rows:,} rows (games x seats) to {args.long_out}", file=sys.stderr)
    fmt = "json" if args.json else "csv" if args.csv else "table"
    write_statistics(result.statistics(), fmt, sys.stdout)
    return 0
