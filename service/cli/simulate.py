"""``azulsim simulate``: play a batch in this process (`sim.local`; no Redis, no Celery) and
print its statistics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .common import CommandError, UsageError, add_spec_options, spec_from_args, whole_number
from .output import write_statistics
from .progress import TerminalProgress

# Stand-in for sim.play.play_games (tests set it); None means the real batch engine.
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
        help="JSON job spec (see sim/spec.py); --games, "
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
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json", action="store_true", help="print the statistics as one JSON document"
    )
    out.add_argument("--csv", action="store_true", help="print one CSV row per group")
    p.set_defaults(func=cmd_simulate)


def games_out(args: argparse.Namespace, spec):
    """The --games-out path, checked (None when not asked for)."""
    from pathlib import Path

    path = getattr(args, "games_out", None)
    if path is None:
        return None
    if Path(path).suffix.lower() != ".parquet":  # what it writes, whatever the name says
        raise UsageError(
            f"--games-out writes Parquet: the file must end in .parquet; got {path!r} (for CSV: "
            "pandas.read_parquet(FILE).to_csv(...))"
        )
    if spec.stop is not None:
        raise UsageError("--games-out cannot be combined with a stopping rule")
    if not Path(path).resolve().parent.is_dir():
        raise UsageError(f"--games-out {path}: no such directory {Path(path).parent}")
    return path


def cmd_simulate(args: argparse.Namespace) -> int:
    from sim.bots.external import ExternalBotError
    from sim.local import run_local

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
    fmt = "json" if args.json else "csv" if args.csv else "table"
    write_statistics(result.statistics(), fmt, sys.stdout)
    return 0
