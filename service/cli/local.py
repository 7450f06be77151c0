"""``azulsim up`` and ``azulsim demo``: a whole local stack (`service.stack.Stack`) in the
foreground.

``up`` prints where the API listens and where it keeps its data (`default_data_dir`, or
``--data-dir``; ``--ephemeral`` keeps nothing), and stops everything on Ctrl-C or SIGTERM.
``demo`` starts the same stack, throw-away, submits a demo batch through the API, watches it,
prints its statistics and stops everything.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from ..config import DEFAULT_WEB_ADDRESS
from ..stack import Stack, StackError
from .common import CommandError, UsageError, whole_number
from .output import print_statistics
from .progress import follow


class _Stop(Exception):
    pass


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Inside the block, SIGTERM interrupts like Ctrl-C does."""

    def handler(signum, frame):
        raise _Stop()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stack_args(p: argparse.ArgumentParser, listen: str) -> None:
    p.add_argument(
        "--workers",
        type=whole_number,
        default=os.cpu_count() or 1,
        help=f"worker pool processes (default: one per core, {os.cpu_count() or 1})",
    )
    p.add_argument("--listen", default=listen, help=f"API address (default {listen})")


def default_data_dir() -> Path:
    """Where `azulsim up` keeps its data: ``$XDG_DATA_HOME/azulsim``, else
    ``~/.local/share/azulsim``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "azulsim"


def add_up(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "up",
        help="run a local stack: Redis (private unless AZULSIM_REDIS_URL is set), workers, API",
        description="Start a private redis-server (unless AZULSIM_REDIS_URL is set), a Celery "
        "worker with one process per core and the gRPC API server; print where it listens; stop "
        "them all on Ctrl-C or SIGTERM. Jobs, results, logs and the per-game records of "
        "game_records jobs (`azulsim export`) are kept in a data directory (the private Redis "
        "writes an append-only file there), so they are still there after a restart; "
        "--ephemeral keeps nothing. With --demo, run the demo batch on a throw-away "
        "stack and stop.",
    )
    _stack_args(p, "127.0.0.1:50051")
    keep = p.add_mutually_exclusive_group()
    keep.add_argument(
        "--data-dir",
        metavar="DIR",
        type=Path,
        help=f"where to keep Redis's data and the logs (default {default_data_dir()})",
    )
    keep.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep nothing: a temporary folder, deleted when the stack stops",
    )
    p.add_argument(
        "--sentinel",
        action="store_true",
        help="a Redis primary, a replica and three Sentinels instead of one Redis: the stack "
        "survives the loss of the primary (docs/reliability.md \"Failover\"); they keep no data",
    )
    web = p.add_mutually_exclusive_group()
    web.add_argument(
        "--web",
        metavar="HOST:PORT",
        default=DEFAULT_WEB_ADDRESS,
        help=f"where the API serves the read-only web view of the jobs (default "
        f"{DEFAULT_WEB_ADDRESS})",
    )
    web.add_argument("--no-web", action="store_true", help="serve no web view")
    p.add_argument("--demo", action="store_true", help="run the demo batch, print statistics, stop")
    _demo_args(p)
    p.set_defaults(func=cmd_up)


def cmd_up(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.demo:
        return cmd_demo(args)
    data_dir = None if args.ephemeral else (args.data_dir or default_data_dir()).expanduser()
    if args.sentinel and os.environ.get("AZULSIM_REDIS_URL", "").strip():
        raise UsageError("--sentinel starts its own Redis servers: unset AZULSIM_REDIS_URL")
    web = "" if args.no_web else args.web
    stack = Stack(
        workers=args.workers,
        listen=args.listen,
        data_dir=data_dir,
        sentinel=args.sentinel,
        web=web,
    )
    try:
        with _sigterm_as_interrupt():
            stack.start()
            private = "redis" in stack.procs or stack.group is not None
            redis_note = (
                f"{stack.redis_url} (private; stops with this command)"
                if private
                else f"{stack.redis_url} (AZULSIM_REDIS_URL)"
            )
            if stack.group is not None:
                ports = ", ".join(str(s.port) for s in stack.group.servers)
                redis_note += f"\n           primary and replica on 127.0.0.1 ports {ports}"
            if data_dir is None:
                data_note = f"{stack.workdir}/  (--ephemeral: logs and records, deleted at stop)"
            elif stack.group is not None:
                data_note = f"{data_dir}/  (logs and game records; --sentinel keeps no Redis data)"
            elif private:
                data_note = f"{data_dir}/  (Redis append-only file and logs; kept)"
            else:
                data_note = f"{data_dir}/  (logs; the data is in AZULSIM_REDIS_URL's Redis)"
            print(
                f"AzulSim is up.\n"
                f"  API      {stack.address}  (gRPC; health and reflection on)\n"
                + (f"  web      {stack.web_url}  (jobs and studies, live)\n" if web else "")
                + f"  Redis    {redis_note}\n"
                f"  workers  {args.workers} pool processes\n"
                f"  data     {data_note}\n"
                f"  games    {stack.games_dir}/  (per-game records of game_records jobs; "
                f"`azulsim export JOB`)\n"
                f"  logs     {stack.logdir}/\n"
                f"Try:  azulsim submit --server {stack.address} --bots greedy,random "
                f"--games 100000 --watch\n"
                f"Ctrl-C stops everything.",
                flush=True,
            )
            while True:
                stack.check()
                time.sleep(0.5)
    except (KeyboardInterrupt, _Stop):
        print("stopping…", file=sys.stderr, flush=True)
    except StackError as exc:
        raise CommandError(str(exc)) from None
    finally:
        stack.stop()
        stack.cleanup()
    return 0


# --------------------------------------------------------------------------------------------
# demo

DEMO_SPEC = {
    "configurations": [
        {"players": 2, "bots": ["greedy", "random"]},
        {"players": 3, "bots": ["heuristic", "greedy", "random"]},
    ],
    "games": 10000,
    "seed": 2026,
}


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--games",
        type=whole_number,
        help=f"demo games per configuration (default {DEMO_SPEC['games']})",
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")


def add_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="start a local stack, run a demo batch through it, print statistics, stop",
        description="Start the local stack (as `azulsim up`, the API on a free port), submit a "
        "demo job through gRPC (greedy vs random with 2 players; heuristic, greedy and random "
        "with 3), watch it, print its statistics and stop everything.",
    )
    _stack_args(p, "127.0.0.1:0")
    _demo_args(p)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from sim.jobs.spec import JobSpec

    from ..client import Client

    spec_dict = dict(DEMO_SPEC)
    if args.games is not None:
        spec_dict["games"] = args.games
    try:
        spec = JobSpec.from_dict(spec_dict)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    began = time.monotonic()
    stack = Stack(workers=args.workers, listen=args.listen)
    try:
        with _sigterm_as_interrupt():
            print(
                f"starting Redis, {args.workers} worker processes and the API…",
                file=sys.stderr,
                flush=True,
            )
            stack.start()
            print(
                f"API on {stack.address}, Redis at {stack.redis_url}; "
                f"started in {time.monotonic() - began:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            with Client(stack.address, token="") as client:
                client.wait_ready(30)
                job, _ = client.submit(spec)
                bots = "; ".join(", ".join(c.bots) for c in spec.configurations)
                print(
                    f"submitted job {job.job_id}: {job.games_total:,} games ({bots})",
                    file=sys.stderr,
                    flush=True,
                )
                status = follow(client, job.job_id, sys.stderr)
                print_statistics(
                    client.statistics(job.job_id), "json" if args.json else "table", sys.stdout
                )
            print(f"demo done in {time.monotonic() - began:.1f} s", file=sys.stderr)
            return status
    except (KeyboardInterrupt, _Stop):
        print("interrupted; stopping…", file=sys.stderr)
        return 130
    except StackError as exc:
        raise CommandError(str(exc)) from None
    finally:
        stack.stop()
        stack.cleanup()
