"""The ``azulsim`` dispatcher: the parser over every command, and `main`.

Each command is an ``add_<name>(subparsers)`` function that declares its arguments and sets
``func`` to a ``cmd_<name>(args) -> int`` function. To add one, write the pair in a module of
this package (importing what it shares from `service.cli.common`) and list the ``add_`` function
in `COMMANDS`.

A reader that goes away (``| head``) ends the command quietly with status 141, as for other
Unix tools.

Errors: a command raises `UsageError` for bad input, `CommandError` for a failure the user should
read; `main` prints either as one line, ``azulsim <command>: error: <message>``, and exits with
its status (2 for usage errors, the status argparse uses for its own).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from .balance import add_balance
from .common import PROG, CommandError, Parser
from .compare import add_compare
from .export import add_export
from .jobs import add_bots, add_cancel, add_jobs, add_stats, add_submit, add_watch
from .local import add_demo, add_up
from .processes import add_serve, add_worker
from .replay import add_replay
from .report import add_report
from .simulate import add_simulate
from .sweep import add_sweep
from .tournament import add_tournament
from .tune import add_tune

COMMANDS = [
    add_simulate,
    add_compare,
    add_tournament,
    add_tune,
    add_sweep,
    add_balance,
    add_serve,
    add_worker,
    add_up,
    add_demo,
    add_submit,
    add_watch,
    add_stats,
    add_cancel,
    add_jobs,
    add_bots,
    add_replay,
    add_report,
    add_export,
]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="AzulSim: batch simulation of Azul.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
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
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """The reader of our output has gone (`azulsim stats … --json | head`): stop quietly, as
    Unix tools killed by SIGPIPE do, with their status (128 + SIGPIPE)."""
    # Point stdout at /dev/null so the interpreter's last flush does not raise again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE
