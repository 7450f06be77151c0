"""``azulsim tune``: SPSA over a bot's numeric parameters, each iteration a batch of mirrored pairs
between θ+δ and θ−δ, in-process or as service jobs (``--server``); then an SPRT of the tuned
values against the start (`sim.experiments.tune`).

The same seed gives the same path: each match is a job whose statistics depend only on its spec,
and the perturbation signs only on (seed, iteration). ``--json`` prints the run's document (schema
``azulsim.tune/1``: every iteration's θ, signs, gains, the two specs and the score, then the
check), which ``azulsim report --from FILE -o tune.png`` draws.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import UsageError, add_client_options


def add_tune(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tune",
        help="SPSA-tune a bot's numeric parameters by mirrored pairs, checked by an SPRT",
        description=__doc__.split("\n\n", 1)[0],
    )
    p.add_argument("bot", metavar="BOT", help="the bot and its fixed parameters: deep:nodes=24")
    p.add_argument(
        "--params", required=True, metavar="A,B,...", help="the numeric parameters to tune"
    )
    p.add_argument(
        "--c",
        metavar="NAME=C,...",
        help="perturbation per parameter (default: a twentieth of its range; ints at least 1)",
    )
    p.add_argument("--iterations", type=int, default=20, help="SPSA iterations (default 20)")
    p.add_argument(
        "--pairs", type=int, default=100, help="mirrored groups per iteration (default 100)"
    )
    p.add_argument("--a", type=float, default=4.0, help="step gain (default 4)")
    p.add_argument("--players", type=int, default=2, help="2, 3 or 4 (default 2)")
    p.add_argument("--wall", default="coloured", help="coloured (default) or gray")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument(
        "--sprt",
        metavar="LO,HI",
        default="0,10",
        help="check: SPRT of the tuned values against the start, Elo H0 LO against H1 HI "
        "(default 0,10; 'none' to skip)",
    )
    p.add_argument(
        "--check-games", type=int, default=4000, help="games of the check at most (default 4000)"
    )
    p.add_argument("--workers", type=int, default=1, help="processes, in-process (default 1)")
    p.add_argument("--json", action="store_true", help="print the run's document")
    add_client_options(p, "through the service (with --server; default: in-process)")
    p.set_defaults(func=cmd_tune)


def _c_values(text: str | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in filter(None, (text or "").split(",")):
        name, eq, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            raise UsageError(f"--c expects NAME=NUMBER,...; got {item!r}") from None
        if not eq:
            raise UsageError(f"--c expects NAME=NUMBER,...; got {item!r}")
    return out


def _bounds(text: str) -> tuple[float, float]:
    """``--sprt LO,HI`` as two numbers, LO below HI."""
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--sprt expects LO,HI (two numbers) or none; got {text!r}") from None
    if not lo < hi:
        raise UsageError(f"--sprt expects LO below HI; got {text!r}")
    return lo, hi


def _player(args: argparse.Namespace):
    """``play(spec) -> statistics document``: through the service with ``--server`` (a job an
    iteration), else in this process (`study.run_to_end`)."""
    from .study import run_to_end

    return lambda spec: run_to_end(spec, args)[1]  # (job id, document): the document


def _progress(point: dict[str, Any]) -> None:
    theta = ", ".join(f"{k}={v:g}" for k, v in point["next"].items())
    sys.stderr.write(
        f"tune: iteration {point['iteration'] + 1}: plus scored {point['score']:.3f} "
        f"over {point['games']} games -> {theta}\n"
    )


def _run(args: argparse.Namespace, tuning, play) -> dict[str, Any]:
    from service.cli.compare import compare_document
    from sim.experiments import tune

    doc = tune.run(tuning, play, on_iteration=_progress)
    if args.sprt.lower() != "none":
        lo, hi = _bounds(args.sprt)
        if doc["final_spec"] == doc["start_spec"]:
            doc["check"] = {"verdict": None, "note": "the tuned values are the start values"}
        else:
            spec = tune.check_spec(doc, lo, hi, args.check_games, args.seed + tuning.iterations)
            out = compare_document(play(spec))
            doc["check"] = {k: out.get(k) for k in (
                "verdict", "games", "pairs", "score", "score_ci95", "elo", "elo_ci95", "llr",
                "llr_bounds")}  # fmt: skip
            doc["check"].update(elo0=lo, elo1=hi, seed=spec.seed)
    return doc


def format_tune(doc: dict[str, Any]) -> str:
    lines = [f"tuned {doc['tuning']['bot']} over {len(doc['path'])} iterations"]
    for p in doc["tuning"]["params"]:
        lines.append(f"  {p['name']}: {p['start']:g} -> {doc['final'][p['name']]:g}")
    lines.append(f"  start: {doc['start_spec']}")
    lines.append(f"  tuned: {doc['final_spec']}")
    check = doc.get("check")
    if check and check.get("verdict") is not None:
        ci = check.get("elo_ci95") or [None, None]
        fmt = lambda x: "-" if x is None else f"{x:+.1f}"  # noqa: E731
        lines.append(
            f"  check (SPRT Elo {check['elo0']:g} vs {check['elo1']:g}): {check['verdict']} "
            f"after {check['games']:,} games, Elo {fmt(check['elo'])} [{fmt(ci[0])}, {fmt(ci[1])}]"
        )
    elif check:
        lines.append(f"  check: {check.get('note')}")
    return "\n".join(lines) + "\n"


def cmd_tune(args: argparse.Namespace) -> int:
    from sim.bots.registry import split_bot_list
    from sim.experiments.tune import Tuning

    if args.sprt.lower() != "none":
        _bounds(args.sprt)  # before the run, not after it
    names = tuple(n for n in (args.params or "").split(",") if n)
    bot = split_bot_list(args.bot)
    if len(bot) != 1:
        raise UsageError(f"BOT must be one bot spec; got {args.bot!r}")
    try:
        tuning = Tuning(
            bot[0], names, iterations=args.iterations, pairs=args.pairs, players=args.players,
            wall=args.wall, seed=args.seed, a=args.a, c=_c_values(args.c),
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    doc = _run(args, tuning, _player(args))
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_tune(doc))
    return 0
