"""``azulsim`` subcommands that talk to the API server: submit, watch, stats, cancel, jobs, bots,
replay (DESIGN.md §7). Each is an ``add_<name>``/``cmd_<name>`` pair, as in `service.cli`.

Every one takes ``--server HOST:PORT`` (default ``$AZULSIM_SERVER`` or ``127.0.0.1:50051``),
``--token`` (``$AZULSIM_TOKEN``), ``--tls-ca FILE`` (``$AZULSIM_TLS_CA``) and ``--timeout S``. A
failed call prints ``azulsim <command>: error: <STATUS>: <message>`` and exits 1 (2 for
INVALID_ARGUMENT, a usage error).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from .cli import (
    CommandError,
    ProgressBar,
    UsageError,
    _clock,
    _simulate_spec,
    _table,
    add_spec_options,
    format_table,
)


def _client_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("server")
    g.add_argument(
        "--server", help="API address host:port (default $AZULSIM_SERVER or 127.0.0.1:50051)"
    )
    g.add_argument("--token", help="bearer token (default $AZULSIM_TOKEN)")
    g.add_argument(
        "--tls-ca", metavar="FILE", help="CA certificate (PEM): use TLS (default $AZULSIM_TLS_CA)"
    )
    g.add_argument(
        "--timeout", type=float, default=30.0, help="deadline of each call, s (default 30)"
    )


def _client(args: argparse.Namespace):
    from .client import Client

    return Client(args.server, token=args.token, tls_ca=args.tls_ca, timeout=args.timeout)


class _RpcErrors:
    """Turn `grpc.RpcError` into a one-line `CommandError` (``STATUS: message``)."""

    def __init__(self, args: argparse.Namespace):
        self.args = args

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        import grpc

        if exc is None or not isinstance(exc, grpc.RpcError):
            return False
        code = exc.code()
        details = exc.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE and "job store" not in details:
            server = self.args.server or "the server"
            details = f"cannot reach {server} ({details}); is `azulsim up` running?"
        cls = UsageError if code == grpc.StatusCode.INVALID_ARGUMENT else CommandError
        raise cls(f"{code.name}: {details}") from None


def _when(ts) -> str:
    if not ts.seconds and not ts.nanos:
        return "-"
    return datetime.fromtimestamp(ts.seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _state(job) -> str:
    from .api import azulsim_pb2 as pb

    return pb.JobState.Name(job.state)


def _job_dict(job) -> dict[str, Any]:
    from google.protobuf import json_format

    return json_format.MessageToDict(job, preserving_proto_field_name=True)


def _job_line(job) -> str:
    return f"job {job.job_id} {_state(job)}: {job.games_done:,}/{job.games_total:,} games" + (
        f" — {job.error}" if job.error else ""
    )


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
    _client_args(p)
    p.set_defaults(func=cmd_submit)


def cmd_submit(args: argparse.Namespace) -> int:
    try:
        spec = _simulate_spec(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with _client(args) as client, _RpcErrors(args):
        job, created = client.submit(spec, request_id=args.request_id)
        if args.json:
            print(json.dumps({"job": _job_dict(job), "created": created}, indent=2))
        else:
            print(job.job_id)
        print(
            f"{'submitted' if created else 'already submitted as'} job {job.job_id}: "
            f"{job.games_total:,} games",
            file=sys.stderr,
        )
        if not args.watch:
            return 0
        status = _follow(client, job.job_id, sys.stderr)
        _print_statistics(client.statistics(job.job_id), "table", sys.stdout)
        return status


# --------------------------------------------------------------------------------------------
# watch


class _WatchBar(ProgressBar):
    """simulate's progress bar, with the rate counted from the games done when the watch began."""

    def __init__(self, total: int, stream: TextIO, base: int):
        super().__init__(total, stream)
        self.base = base

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < self.total:
            return
        self.last = now
        rate = (done - self.base) / max(now - self.began, 1e-9)
        eta = _clock((self.total - done) / rate) if rate > 0 else "--:--"
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(
            f"\r[{bar}] {done:,}/{self.total:,} games  {rate:,.0f} games/s  ETA {eta} "
        )
        self.stream.flush()


class _LineProgress(_WatchBar):
    """Progress for a log or a pipe: one line at most every `every` seconds."""

    every = 2.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        rate = (done - self.base) / max(now - self.began, 1e-9)
        self.stream.write(f"{done:,}/{self.total:,} games  {rate:,.0f} games/s\n")
        self.stream.flush()

    def close(self) -> None:
        pass


def _follow(client, job_id: str, stream: TextIO) -> int:
    """Watch a job to its end with a progress display; 0 if it SUCCEEDED, else 1."""
    bar = None
    began = time.monotonic()
    job = None
    try:
        for job in client.watch(job_id):
            if bar is None:
                make = _WatchBar if stream.isatty() else _LineProgress
                bar = make(job.games_total, stream, job.games_done)
            bar.update(job.games_done)
    finally:
        if bar:
            bar.close()
    if job is None:
        raise CommandError(f"no update for job {job_id}")
    elapsed = time.monotonic() - began
    print(f"{_job_line(job)} (watched {_clock(elapsed)})", file=stream)
    return 0 if _state(job) == "SUCCEEDED" else 1


def add_watch(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "watch",
        help="follow a job to its end (progress bar on a terminal)",
        description="Follow a job until it ends: a progress bar with games/s and ETA on a "
        "terminal, a line every 2 s otherwise. Exit status 0 if it SUCCEEDED, 1 otherwise.",
    )
    p.add_argument("job_id")
    p.add_argument("--stats", action="store_true", help="print its statistics at the end")
    _client_args(p)
    p.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    with _client(args) as client, _RpcErrors(args):
        status = _follow(client, args.job_id, sys.stderr)
        if args.stats:
            _print_statistics(client.statistics(args.job_id), "table", sys.stdout)
        return status


# --------------------------------------------------------------------------------------------
# stats


def _print_statistics(stats, fmt: str, out: TextIO) -> None:
    from sim.stats import group_rows

    doc = json.loads(stats.statistics_json)
    if stats.partial:
        print(
            f"partial statistics: job {stats.job.job_id} is {_state(stats.job)}, "
            f"{stats.job.games_done:,} of {stats.job.games_total:,} games counted",
            file=sys.stderr,
        )
    if fmt == "json":
        json.dump(doc, out, indent=2)
        out.write("\n")
    elif fmt == "csv":
        rows = group_rows(doc)
        if rows:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    else:
        out.write(format_table(doc))


def add_stats(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stats",
        help="print a job's statistics (partial while it runs)",
        description="Print a job's statistics as simulate does: a table, --json (the same "
        "document as simulate --json, without timing) or --csv.",
    )
    p.add_argument("job_id")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the statistics document as JSON")
    out.add_argument("--csv", action="store_true", help="one CSV row per group")
    _client_args(p)
    p.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else "csv" if args.csv else "table"
    with _client(args) as client, _RpcErrors(args):
        _print_statistics(client.statistics(args.job_id), fmt, sys.stdout)
    return 0


# --------------------------------------------------------------------------------------------
# cancel, jobs, bots


def add_cancel(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("cancel", help="cancel a queued or running job")
    p.add_argument("job_id")
    _client_args(p)
    p.set_defaults(func=cmd_cancel)


def cmd_cancel(args: argparse.Namespace) -> int:
    with _client(args) as client, _RpcErrors(args):
        print(_job_line(client.cancel(args.job_id)))
    return 0


def add_jobs(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("jobs", help="list jobs, newest first")
    p.add_argument("--page-size", type=int, default=20, help="jobs per page (default 20)")
    p.add_argument("--page-token", default="", help="next-page token printed by the previous page")
    p.add_argument("--all", action="store_true", help="every page")
    p.add_argument("--json", action="store_true", help="one JSON document")
    _client_args(p)
    p.set_defaults(func=cmd_jobs)


def cmd_jobs(args: argparse.Namespace) -> int:
    with _client(args) as client, _RpcErrors(args):
        jobs, token = client.list(args.page_size, args.page_token)
        while args.all and token:
            more, token = client.list(args.page_size, token)
            jobs += more
    if args.json:
        print(
            json.dumps({"jobs": [_job_dict(j) for j in jobs], "next_page_token": token}, indent=2)
        )
        return 0
    rows = [
        [
            j.job_id,
            _state(j),
            f"{j.games_done:,}/{j.games_total:,}",
            _when(j.created_at),
            "; ".join(",".join(c.bots) for c in j.spec.configurations),
        ]
        for j in jobs
    ]
    if rows:
        sys.stdout.write(_table(("job", "state", "games", "created (UTC)", "bots"), rows))
    else:
        print("no jobs")
    if token:
        print(f"next page: --page-token {token}")
    return 0


def add_bots(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bots", help="list the server's bots and their parameters")
    p.add_argument("--json", action="store_true", help="one JSON document")
    _client_args(p)
    p.set_defaults(func=cmd_bots)


def cmd_bots(args: argparse.Namespace) -> int:
    from google.protobuf import json_format

    with _client(args) as client, _RpcErrors(args):
        bots = client.bots()
    if args.json:
        docs = [json_format.MessageToDict(b, preserving_proto_field_name=True) for b in bots]
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


# --------------------------------------------------------------------------------------------
# replay


def add_replay(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "replay",
        help="replay one game of a job move by move",
        description="Replay game G of a job move by move as text: the factories and boards at "
        "each deal and wall tiling, every pick, the scores.",
    )
    p.add_argument("job_id")
    p.add_argument(
        "--game", type=int, default=0, help="game index in the configuration (default 0)"
    )
    p.add_argument("--configuration", type=int, default=0, help="configuration index (default 0)")
    p.add_argument("--json", action="store_true", help="the Replay message as JSON")
    _client_args(p)
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from google.protobuf import json_format

    from .convert import replay_from_proto
    from .replay import format_replay

    with _client(args) as client, _RpcErrors(args):
        replay = client.replay(args.job_id, args.game, args.configuration)
    if args.json:
        print(json_format.MessageToJson(replay, preserving_proto_field_name=True))
    else:
        sys.stdout.write(format_replay(replay_from_proto(replay)))
    return 0


SUBCOMMANDS = [add_submit, add_watch, add_stats, add_cancel, add_jobs, add_bots, add_replay]
