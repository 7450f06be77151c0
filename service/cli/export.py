"""``azulsim export JOB -o FILE.parquet``: a service job's per-game records in one Parquet file.

A job submitted with ``"game_records": true`` (a spec file for ``azulsim submit --spec``) has its
workers write each chunk's records to the cluster's games directory (``AZULSIM_GAMES_DIR``; on the
local stack of ``azulsim up`` the ``games`` folder of its data directory). The API server gathers
them, ordered by configuration and game, into one file and sends it (ExportGames): the same rows as
``azulsim simulate --games-out`` of the same spec, written whole or not at all. JOB is a job id or a
unique prefix of one; the server is ``--server`` (``$AZULSIM_SERVER``, else 127.0.0.1:50051), so
this works from any shell. ``--long-out FILE`` also writes the long form (one row per game and
seat: docs/research.md). ``--games-dir DIR`` gathers from a directory mounted here instead, without
the server (JOB is then a whole id).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (
    CommandError,
    UsageError,
    add_client_options,
    make_client,
    plain,
    resolve_job_id,
    rpc_errors,
)


def add_export(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="a service job's per-game records (game_records) as one Parquet file",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("job", metavar="JOB", help="the job id, or a unique prefix of one")
    p.add_argument("-o", "--output", required=True, metavar="FILE.parquet", help="file to write")
    p.add_argument(
        "--games-dir",
        metavar="DIR",
        help="gather from this games directory, mounted here, instead of asking the server",
    )
    p.add_argument(
        "--long-out",
        metavar="FILE.parquet",
        help="also the long form: one row per game and seat (seat, position, bot, score, ...)",
    )
    add_client_options(p)
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from .simulate import parquet_path

    out = Path(parquet_path(args.output, "-o"))
    if args.long_out is not None:
        parquet_path(args.long_out, "--long-out")
    if args.games_dir:
        rows = _gather_here(args.games_dir, args.job, out)
    else:
        with make_client(args) as client, rpc_errors(args):
            rows = client.export_games(resolve_job_id(client, args.job), out)
    print(f"wrote {rows:,} games to {args.output}", file=sys.stderr)
    if args.long_out is not None:
        from sim.jobs.gamerows import write_long

        rows = write_long(out, args.long_out)
        print(f"wrote {rows:,} rows (games x seats) to {args.long_out}", file=sys.stderr)
    return 0


def _gather_here(games_dir: str, job: str, out: Path) -> int:
    from sim.jobs.gamerows import gather, job_directory

    try:
        directory = job_directory(games_dir, job)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not directory.is_dir():
        raise CommandError(
            f"no records of job {job} in {games_dir} (was it submitted with game_records?)"
        )
    try:
        return gather(directory, out)
    except (ValueError, OSError) as exc:
        raise CommandError(str(exc)) from None
