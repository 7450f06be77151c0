"""``azulsim report``: plot a job's statistics, or a saved statistics document, to an image or
an HTML page (the drawing is `service.report`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sim.quote import shown

from ..report import FORMATS, ReportError, unwrap, write_report
from ..tune_report import is_tuning, write_tune_report
from .common import (
    CommandError,
    UsageError,
    add_client_options,
    make_client,
    resolve_job_id,
    rpc_errors,
)


def add_report(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="plot a job's statistics to an image or an HTML page",
        description=(
            "Plot score distributions per bot, win rates with 95% Wilson intervals per bot and "
            "per seat, and the game-length histogram, for each configuration. JOB is fetched "
            "from the API server; --from reads a saved statistics document instead "
            "(`azulsim simulate --json > stats.json`, or the --json of compare, sweep, "
            "tournament or balance, which holds one), or a tuning run (`azulsim tune --json`: "
            "the path of every parameter). The extension of -o picks the format: "
            ".png, .svg, .pdf or .html (self-contained, images embedded)."
        ),
    )
    p.add_argument(
        "job_id", nargs="?", metavar="JOB", help="job id on the API server (or a unique prefix)"
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="a saved statistics document (JSON) instead of JOB; - for stdin",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write: report.png, report.svg, report.pdf or report.html",
    )
    p.add_argument("--title", help="heading (default: seed, games and rules version)")
    add_client_options(p, "server (with JOB)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    if (args.job_id is None) == (args.source is None):
        raise UsageError("give either JOB or --from FILE")
    if Path(args.output).suffix.lower() not in FORMATS:
        raise UsageError(f"-o must end in {', '.join(FORMATS)}; got {shown(args.output)}")
    try:
        if args.source is not None:  # a tuning run (`azulsim tune --json`) has its own plot
            data = json.load(sys.stdin) if args.source == "-" else _read_json(args.source)
            if is_tuning(data):
                path = write_tune_report(data, args.output, title=args.title)
                print(f"wrote {path}", file=sys.stderr)
                return 0
            doc = unwrap(data)
        else:
            with make_client(args) as client, rpc_errors(args):
                doc = client.statistics_document(resolve_job_id(client, args.job_id))
        path = write_report(doc, args.output, title=args.title)
    except (ReportError, json.JSONDecodeError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _read_json(source: str):
    """The JSON of file `source`, read as `load_statistics` reads it (its errors)."""
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source} is not valid JSON: {exc}") from None
