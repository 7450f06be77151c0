"""``azulsim export JOB -o FILE.parquet``: gather a service job's per-game records into one file.

A job submitted with ``"game_records": true`` (a spec file for ``azulsim submit --spec``) has its
workers write each chunk's records to ``AZULSIM_GAMES_DIR/<job id>/`` (a directory shared by the
cluster: a volume in Compose or Kubernetes). This gathers them, ordered by configuration and game,
into one Parquet file, one row group at a time (constant memory): the same rows as
``azulsim simulate --games-out`` of the same spec. Run it where that directory is mounted.
"""

from __future__ import annotations

import argparse
import os
import sys

from .common import CommandError, UsageError, plain


def add_export(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="gather a service job's per-game records (game_records) into one Parquet file",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("job", metavar="JOB", help="the job id")
    p.add_argument("-o", "--output", required=True, metavar="FILE.parquet", help="file to write")
    p.add_argument(
        "--games-dir",
        default=os.environ.get("AZULSIM_GAMES_DIR", ""),
        help="the cluster's games directory (default: $AZULSIM_GAMES_DIR)",
    )
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from sim.gamerows import gather, job_directory

    if not args.games_dir:
        raise UsageError("--games-dir is required (or set AZULSIM_GAMES_DIR)")
    try:
        directory = job_directory(args.games_dir, args.job)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not directory.is_dir():
        raise CommandError(
            f"no records of job {args.job} in {args.games_dir} (was it submitted with "
            "game_records?)"
        )
    try:
        rows = gather(directory, args.output)
    except (ValueError, OSError) as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {rows:,} games to {args.output}", file=sys.stderr)
    return 0
