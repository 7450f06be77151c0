"""What every ``azulsim`` command shares: its errors, the job-spec options, the client options,
the client they build and the one place a `grpc.RpcError` becomes a one-line message.

The command modules import this one; it imports none of them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

PROG = "azulsim"


class CommandError(Exception):
    """A command failed in a way the user should read: printed as one line, exit `status`."""

    status = 1


class UsageError(CommandError):
    """Bad input from the user: exit status 2, as for argparse's own usage errors."""

    status = 2


# --- the job spec ---------------------------------------------------------------------------


def add_spec_options(p: argparse.ArgumentParser) -> None:
    """The options that describe a one-configuration job (`simulate` and `submit` share them)."""
    p.add_argument("--players", type=int, help="2, 3 or 4 (default: the number of bots)")
    p.add_argument("--bots", help="one bot spec per seat, comma-separated, e.g. greedy,random")
    p.add_argument("--games", type=int, help="games per configuration (default 1000)")
    p.add_argument("--seed", type=int, help="job seed, 0..2**63-1 (default 0)")
    p.add_argument("--wall", help="coloured (default) or gray")
    p.add_argument("--seating", help="rotate (default), fixed, shuffle or mirrored")
    p.add_argument("--max-rounds", type=int, help="round cap (default 100)")


def spec_from_args(args: argparse.Namespace):
    """The `sim.spec.JobSpec` that `add_spec_options` (and ``--spec FILE``) describe."""
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


# --- the API client -------------------------------------------------------------------------


def add_client_options(p: argparse.ArgumentParser, title: str = "server") -> None:
    """--server, --token, --tls-ca and --timeout: how a command reaches the API server."""
    g = p.add_argument_group(title)
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


def make_client(args: argparse.Namespace):
    """A `service.client.Client` from the options of `add_client_options`."""
    from ..client import Client

    return Client(args.server, token=args.token, tls_ca=args.tls_ca, timeout=args.timeout)


class rpc_errors:  # noqa: N801 - used as a context manager, like contextlib's
    """Turn a `grpc.RpcError` raised inside the block into a one-line `CommandError`
    (``STATUS: message``; INVALID_ARGUMENT is a `UsageError`, exit status 2)."""

    def __init__(self, args: argparse.Namespace):
        self.server = getattr(args, "server", None)

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        import grpc

        if exc is None or not isinstance(exc, grpc.RpcError):
            return False
        code = exc.code()
        details = exc.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE and "job store" not in details:
            details = (
                f"cannot reach {self.server or 'the server'} ({details}); is `azulsim up` running?"
            )
        cls = UsageError if code == grpc.StatusCode.INVALID_ARGUMENT else CommandError
        raise cls(f"{code.name}: {details}") from None
