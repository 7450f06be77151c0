"""What every ``azulsim`` command shares: its errors, the job-spec options, the client options,
the client they build and the one place a `grpc.RpcError` becomes a one-line message.

The command modules import this one; it imports none of them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import NoReturn

from sim.quote import shown

PROG = "azulsim"


class CommandError(Exception):
    """A command failed in a way the user should read: printed as one line, exit `status`."""

    status = 1


class UsageError(CommandError):
    """Bad input from the user: exit status 2, as for argparse's own usage errors."""

    status = 2


NEGATIVE_VALUES = re.compile(r"^-\d*\.?\d+(,-?\d*\.?\d+)*$")  # -10, -0.5, -10,10


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error printed as one line (``azulsim simulate: error: …``, status
    2) instead of the whole usage text; ``--help`` still prints it all."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Values such as ``--sprt -10,10`` (negative bounds are normal) are values, not
        # options: argparse's own pattern knows only single numbers (-10, -0.5).
        self._negative_number_matcher = NEGATIVE_VALUES

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def plain(text: str) -> str:
    """A docstring as --help text: the reST markup (````--sprt LO,HI````, ``**head to head**``,
    ```sim.jobs.spec```) taken off, since a terminal shows it raw."""
    text = re.sub(r"``(.+?)``", r"\1", text, flags=re.S)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text, flags=re.S)
    return re.sub(r"(?<![\w`])`([^`\n]+)`(?!`)", r"\1", text)


_GROUPED = re.compile(r"\d{1,3}(,\d{3})+|\d+(_\d+)+")  # 1,000,000 and 1_000_000
_SCIENTIFIC = re.compile(r"(\d+)(?:\.(\d+))?[eE]\+?(\d+)")  # 1e6, 2.5e5


def whole_number(text: str) -> int:
    """An argparse type for counts: ``1000000``, ``1,000,000``, ``1_000_000`` or ``1e6`` (when it
    is a whole number); anything else is a one-line usage error."""
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if _GROUPED.fullmatch(t):
        return int(t.replace(",", "").replace("_", ""))
    m = _SCIENTIFIC.fullmatch(t)
    if m and len(m.group(3)) <= 2:
        whole, frac, exp = m.group(1), m.group(2) or "", int(m.group(3))
        if len(frac) <= exp or not frac[exp:].strip("0"):
            return int((whole + frac + "0" * exp)[: len(whole) + exp])
    raise argparse.ArgumentTypeError(
        f"must be a whole number such as 1000000 or 1e6; got {shown(text)}"
    )


# --- the job spec ---------------------------------------------------------------------------


def rule_set(text: str):
    """An argparse type for ``--rules``: a `sim.rules.rulesets.RuleSet` from its text (``printed``,
    ``column_bonus=5,floor=1/2/3``); a bad one is a one-line usage error naming the rule."""
    from sim.rules.rulesets import RuleSet

    try:
        return RuleSet.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RULES_HELP = (
    "the rules of every configuration: printed (default) or key=value pairs joined by commas, "
    "lists by /, e.g. column_bonus=5,floor=1/2/3,marker=off (keys: wall, max_rounds, row_bonus, "
    "column_bonus, colour_bonus, floor, factories, tiles_per_factory, tiles_per_colour, marker, "
    'end_rows; docs/rules.md, "Rule variants")'
)


def add_rules_option(
    p: argparse.ArgumentParser,
    help: str = RULES_HELP,  # noqa: A002
    parse: bool = True,
) -> None:
    """``--rules TEXT``: ``args.rules`` is a `sim.rules.rulesets.RuleSet` (the text itself with
    ``parse=False``, for a sweep's ranges), or None when not given (printed: `rules_of`)."""
    p.add_argument("--rules", type=rule_set if parse else str, metavar="RULES", help=help)


def rules_of(args: argparse.Namespace, option: str = "rules"):
    """The rule set of option `option` (``--rules``; the printed game's when it was not given);
    a text value is parsed here, a bad one a `UsageError` naming the option and the rule."""
    from sim.rules.rulesets import PRINTED_RULES, RuleSet

    value = getattr(args, option, None)
    if value is None:
        return PRINTED_RULES
    if isinstance(value, str):
        try:
            return RuleSet.parse(value)
        except ValueError as exc:
            raise UsageError(f"--{option.replace('_', '-')}: {exc}") from None
    return value


def add_spec_options(p: argparse.ArgumentParser) -> None:
    """The options that describe a one-configuration job (`simulate` and `submit` share them)."""
    p.add_argument("--players", type=whole_number, help="2, 3 or 4 (default: the number of bots)")
    p.add_argument("--bots", help="one bot spec per seat, comma-separated, e.g. greedy,random")
    p.add_argument("--games", type=whole_number, help="games per configuration (default 1000)")
    p.add_argument("--seed", type=whole_number, help="job seed, 0..2**63-1 (default 0)")
    p.add_argument("--wall", help="coloured (default) or gray")
    p.add_argument("--seating", help="rotate (default), fixed, shuffle or mirrored")
    p.add_argument("--max-rounds", type=whole_number, help="round cap (default 100)")
    add_rules_option(p)


def spec_from_args(args: argparse.Namespace):
    """The `sim.jobs.spec.JobSpec` that `add_spec_options` (or ``--spec FILE``) describe;
    `ValueError` names the field of a bad value. Left-out options take the spec file format's
    defaults."""
    import dataclasses

    from sim.bots.registry import split_bot_list
    from sim.jobs.spec import JobSpec

    from ..convert import spec_from_document

    overrides = {n: getattr(args, n) for n in ("games", "seed", "max_rounds")}
    overrides = {n: v for n, v in overrides.items() if v is not None}
    if args.spec:
        clash = [
            f"--{n.replace('_', '-')}"
            for n in ("players", "bots", "wall", "seating", "rules")
            if getattr(args, n, None) is not None
        ]
        if clash:
            raise UsageError(
                f"{', '.join(clash)} cannot be combined with --spec (give "
                f"{'them' if len(clash) > 1 else 'it'} in the spec's configurations)"
            )
        try:
            data = json.loads(Path(args.spec).read_text())
        except OSError as exc:
            raise UsageError(f"cannot read --spec {args.spec}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--spec {args.spec} is not valid JSON: {exc}") from None
        return dataclasses.replace(spec_from_document(data), **overrides)
    if not args.bots:
        raise UsageError("--bots is required (or --spec FILE)")
    config = {"bots": split_bot_list(args.bots)}
    for name in ("players", "wall", "seating"):
        if getattr(args, name) is not None:
            config[name] = getattr(args, name)
    rules = getattr(args, "rules", None)
    if rules is not None:
        config["rules"] = rules_for(rules, args)
    return JobSpec.from_dict({"configurations": [config], **overrides})


def rules_for(rules, args: argparse.Namespace) -> dict:
    """A configuration's ``rules`` object from ``--rules`` (its wall and round cap go to the
    configuration's own fields, `sim.jobs.spec.Configuration.from_dict`); a wall or round cap that
    ``--wall`` or ``--max-rounds`` gives otherwise is a usage error."""
    from sim.rules.rulesets import RuleSet

    out = rules.changed()
    wall = getattr(args, "wall", None)
    if wall is not None and "wall" in out:
        if RuleSet(wall=wall).wall != rules.wall:
            raise UsageError(f"--wall {wall} and --rules wall={rules.wall} differ; give it once")
        del out["wall"]
    cap = getattr(args, "max_rounds", None)
    if cap is not None and "max_rounds" in out:
        if cap != rules.max_rounds:
            raise UsageError(
                f"--max-rounds {cap} and --rules max_rounds={rules.max_rounds} differ; give it once"
            )
        del out["max_rounds"]
    return out


# --- the API client -------------------------------------------------------------------------


STUDY_SERVICE = "through the service (with --server; without it the job plays in this process)"
STUDY_SERVER = "API address host:port: submit the job there, watch it and read it back"


def add_client_options(
    p: argparse.ArgumentParser, title: str = "server", server_help: str | None = None
) -> None:
    """--server, --token, --tls-ca and --timeout: how a command reaches the API server. A study
    (compare, sweep, tournament) plays in this process unless --server is given: its
    `server_help` (`STUDY_SERVER`) says so instead of a default address."""
    g = p.add_argument_group(title)
    g.add_argument(
        "--server",
        help=server_help or "API address host:port (default $AZULSIM_SERVER or 127.0.0.1:50051)",
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


_FULL_JOB_ID = re.compile(r"[0-9a-f]{32}")  # the server's ids: uuid4 hex
_PREFIX = re.compile(r"[0-9a-f]{1,31}")
PREFIX_PAGES = 20  # ListJobs pages of 1000 searched for a prefix


def resolve_job_id(client, text: str) -> str:
    """The job id that `text` names: a whole id as it is, or the one job whose id starts with
    `text` (as git and docker take a unique prefix). Several matches are a `UsageError` listing
    them; none leaves `text` for the server to answer NOT_FOUND."""
    if _FULL_JOB_ID.fullmatch(text) or not _PREFIX.fullmatch(text):
        return text
    matches, token = [], ""
    for _ in range(PREFIX_PAGES):
        jobs, token = client.list(1000, token)
        matches += [j.job_id for j in jobs if j.job_id.startswith(text)]
        if not token:
            break
    if len(matches) > 1:
        listed = ", ".join(m[: len(text) + 4] + "…" for m in matches[:5])
        raise UsageError(
            f"job id {shown(text)} is ambiguous: {len(matches)} jobs start with it ({listed})"
        )
    return matches[0] if matches else text
