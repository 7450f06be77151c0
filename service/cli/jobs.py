"""``azulsim`` subcommands that talk to the API server: submit, watch, stats, cancel, jobs and
bots (README.md); ``replay`` has its own module. Each is an ``add_<name>``/``cmd_<name>``
pair (see `service.cli.app`). A job id may be given by a unique prefix.

Every one takes ``--server HOST:PORT`` (default ``$AZULSIM_SERVER`` or ``127.0.0.1:50051``),
``--token`` (``$AZULSIM_TOKEN``), ``--tls-ca FILE`` (``$AZULSIM_TLS_CA``) and ``--timeout S``. A
failed call prints ``azulsim <command>: error: <STATUS>: <message>`` and exits 1 (2 for
INVALID_ARGUMENT, a usage error).
"""

from __future__ import annotations

import argparse
import json
import sys

from .common import (
    UsageError,
    add_client_options,
    add_spec_options,
    make_client,
    resolve_job_id,
    rpc_errors,
    spec_from_args,
    whole_number,
)
from .output import job_games, job_json, job_line, print_statistics, state_name, table, when
from .progress import follow

# --------------------------------------------------------------------------------------------
# submit


def add_submit(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "submit",
        help="submit a job to the server; prints its id",
        description="Submit a batch to the API server (the same options as simulate); prints the "
        "job id on stdout. With --watch, follows it to the end and prints its statistics.",
    )
    add_spec_options(p)
    p.add_argument("--spec", metavar="FILE", help="JSON job spec (as for simulate)")
    p.add_argument(
        "--request-id", default="", help="idempotency key: resubmitting returns the same job"
    )
    p.add_argument("--watch", action="store_true", help="follow the job, then print its statistics")
    p.add_argument("--json", action="store_true", help="print the job as JSON instead of its id")
    add_client_options(p)
    p.set_defaults(func=cmd_submit)


def cmd_submit(args: argparse.Namespace) -> int:
    try:
        spec = spec_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with make_client(args) as client, rpc_errors(args):
        job, created = client.submit(spec, request_id=args.request_id)
        if args.json:
            print(json.dumps({"job": job_json(job), "created": created}, indent=2))
        else:
            print(job.job_id)
        print(
            f"{'submitted' if created else 'already submitted as'} job {job.job_id}: "
            f"{job.games_total:,} games",
            file=sys.stderr,
        )
        if not args.watch:
            return 0
        status = follow(client, job.job_id, sys.stderr)
        print_statistics(client.statistics(job.job_id), "table", sys.stdout)
        return status


# --------------------------------------------------------------------------------------------
# watch


def add_watch(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "watch",
        help="follow a job to its end (progress bar on a terminal)",
        description="Follow a job until it ends: a progress bar with games/s and ETA on a "
        "terminal, a line every 2 s otherwise. Exit status 0 if it SUCCEEDED, 1 otherwise.",
    )
    p.add_argument("job_id", help="job id, or a unique prefix of one")
    p.add_argument("--stats", action="store_true", help="print its statistics at the end")
    add_client_options(p)
    p.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    with make_client(args) as client, rpc_errors(args):
        job_id = resolve_job_id(client, args.job_id)
        status = follow(client, job_id, sys.stderr)
        if args.stats:
            print_statistics(client.statistics(job_id), "table", sys.stdout)
        return status


# --------------------------------------------------------------------------------------------
# stats


def add_stats(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stats",
        help="print a job's statistics (partial while it runs)",
        description="Print a job's statistics as simulate does: a table, --json (the same "
        "document as simulate --json, without timing) or --csv.",
    )
    p.add_argument("job_id", help="job id, or a unique prefix of one")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the statistics document as JSON")
    out.add_argument("--csv", action="store_true", help="one CSV row per group")
    add_client_options(p)
    p.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else "csv" if args.csv else "table"
    with make_client(args) as client, rpc_errors(args):
        job_id = resolve_job_id(client, args.job_id)
        print_statistics(client.statistics(job_id), fmt, sys.stdout)
    return 0


# --------------------------------------------------------------------------------------------
# cancel, jobs, bots


def add_cancel(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "cancel",
        help="cancel a queued or running job",
        description="Cancel a queued or running job and print its state. Games already counted "
        "stay counted (`azulsim stats` shows them); cancelling a cancelled job is fine, a "
        "finished one is an error.",
    )
    p.add_argument("job_id", help="job id, or a unique prefix of one")
    add_client_options(p)
    p.set_defaults(func=cmd_cancel)


def cmd_cancel(args: argparse.Namespace) -> int:
    with make_client(args) as client, rpc_errors(args):
        print(job_line(client.cancel(resolve_job_id(client, args.job_id))))
    return 0


def add_jobs(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "jobs",
        help="list jobs, newest first",
        description="List the server's jobs, newest first, a page at a time: id, state, games "
        "done, seed, request id, when created and the bots of each configuration. --json "
        "prints the same as plain JSON.",
    )
    p.add_argument("--page-size", type=whole_number, default=20, help="jobs per page (default 20)")
    p.add_argument("--page-token", default="", help="next-page token printed by the previous page")
    p.add_argument("--all", action="store_true", help="every page")
    p.add_argument("--json", action="store_true", help="one JSON document")
    add_client_options(p)
    p.set_defaults(func=cmd_jobs)


def cmd_jobs(args: argparse.Namespace) -> int:
    with make_client(args) as client, rpc_errors(args):
        jobs, token = client.list(args.page_size, args.page_token)
        while args.all and token:
            more, token = client.list(args.page_size, token)
            jobs += more
    if args.json:
        print(json.dumps({"jobs": [job_json(j) for j in jobs], "next_page_token": token}, indent=2))
        return 0
    rows = [
        [
            j.job_id,
            state_name(j),
            job_games(j).removesuffix(" games").replace(" games (", " ("),
            str(j.spec.seed),
            j.request_id or "-",
            when(j.created_at),
            "; ".join(",".join(c.bots) for c in j.spec.configurations),
        ]
        for j in jobs
    ]
    if rows:
        sys.stdout.write(
            table(("job", "state", "games", "seed", "request id", "created (UTC)", "bots"), rows)
        )
    else:
        print("no jobs")
    if token:
        print(f"next page: --page-token {token}")
    return 0


def add_bots(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bots",
        help="list the server's bots and their parameters",
        description="List the bots the server's workers can play, each with its parameters "
        "(type, default, bounds, choices), as used in bot specs: --bots 'heuristic:floor=2.5'.",
    )
    p.add_argument("--json", action="store_true", help="one JSON document")
    add_client_options(p)
    p.set_defaults(func=cmd_bots)


def _param_json(p) -> dict:
    return {
        "name": p.name,
        "type": p.type,
        "default": p.default,
        "min": p.min if p.HasField("min") else None,
        "max": p.max if p.HasField("max") else None,
        "choices": list(p.choices),
        "doc": p.doc,
    }


def cmd_bots(args: argparse.Namespace) -> int:
    with make_client(args) as client, rpc_errors(args):
        bots = client.bots()
    if args.json:
        docs = [
            {
                "name": b.name,
                "description": b.description,
                "parameters": [_param_json(p) for p in b.parameters],
            }
            for b in bots
        ]
        print(json.dumps({"bots": docs}, indent=2))
        return 0
    for b in bots:
        print(f"{b.name}: {b.description}")
        for p in b.parameters:
            bounds = ""
            if p.HasField("min") or p.HasField("max"):
                lo = f"{p.min:g}" if p.HasField("min") else ""
                hi = f"{p.max:g}" if p.HasField("max") else ""
                bounds = f" [{lo}..{hi}]"
            choices = f" {{{', '.join(p.choices)}}}" if p.choices else ""
            print(f"    {p.name} ({p.type}, default {p.default}{bounds}{choices}): {p.doc}")
    return 0
