"""``azulsim compare A B``: is bot A stronger than B, and by how much (docs/statistics.md).

Two ways to ask, both in one job of `sim.jobs.spec.JobSpec`:

- **head to head** (default): one configuration, A against B (``--players N``: A against N-1
  copies of B), ``mirrored`` seating: every deal is played P times with the bots rotated through
  the seats. The sample is A's share of the win over a group (two players: the pentanomial), Elo
  is logistic (three or four players: through Luce's choice model), and ``--sprt ELO0,ELO1`` is
  the GSPRT of H0 ``elo = ELO0`` against H1 ``elo = ELO1``;
- **against a field** (``--against C,...``): two paired configurations, B then A with the same
  opponents, on the same deals and seats game for game (B is the baseline). The sample is A's final
  score minus B's in the same game and seat; ``--sprt D0,D1`` is then in points per game.

``--rules TEXT`` plays every game under a rule set (docs/rules.md, "Rule variants"; default the
printed game). ``--vs-rules TEXT`` asks how a second rule set changes the match: A against B head
to head under ``--rules`` and under ``--vs-rules``, two mirrored configurations in one job, each
with its Elo, and, where the two rule sets deal alike (the same factories and tiles), paired on
the same deals and seats game for game: A's points and win rate under the second minus under the
first, with 95 % intervals. Rule sets that deal unlike play other deals: the two are then
unpaired (the output says so) and only their Elo compare. ``--sprt D0,D1`` and
``--precision EPS`` then read A's paired points per game under the second minus under the first
(rule sets that deal alike on the same wall); no ``--against``.

``--precision EPS`` stops instead when the 95 % interval of the estimate (Elo, or the points
difference with ``--against``) is at most ``±EPS``; ``--max-games`` caps either (games per
configuration). Without a rule the job plays ``--max-games`` games. The decision is read every
``--check-every`` games on the contiguous prefix, so the verdict, games and statistics are the
same for any ``--workers``, and through the service (``--server HOST:PORT``: the job is submitted,
watched and read back over gRPC; ``--workers`` is then the cluster's business; the job id is
said on stderr and in ``--json``).

A bot compared with itself is refused: it is 0 Elo by symmetry, and a deterministic bot plays the
same game in every seat order of a mirrored group, so no rule could decide. A sample in which every
value is the same (bots that differ in name only) is flagged as degenerate (``degenerate`` in
``--json``, a warning on stderr): its interval has zero width because nothing varied.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sim.quote import shown
from sim.rules.constants import DEFAULT_MAX_ROUNDS

from ..report import STOP_REASONS
from .common import (
    PROG,
    STUDY_SERVER,
    STUDY_SERVICE,
    UsageError,
    add_client_options,
    add_rules_option,
    plain,
    rules_of,
)
from .study import run_on_server, study_json, write_json


def add_compare(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare two bots: mirrored pairs, Elo with interval, SPRT that stops when sure",
        description=plain(__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", metavar="A", help="the bot under test, e.g. heuristic:floor=2")
    p.add_argument("b", metavar="B", help="the bot it is compared with, e.g. greedy")
    p.add_argument(
        "--against",
        metavar="C,...",
        help="opponents for both A and B (paired configurations); one bot fills every seat left",
    )
    p.add_argument("--players", type=int, help="2, 3 or 4 (default 2, or 1 + the --against bots)")
    p.add_argument("--wall", help="coloured (default) or gray")
    add_rules_option(p)
    p.add_argument(
        "--vs-rules",
        metavar="TEXT",
        help="a second rule set: A against B under --rules and under this one, paired on the "
        "same deals where the two deal alike",
    )
    p.add_argument(
        "--sprt",
        metavar="LO,HI",
        help="SPRT of H0 LO against H1 HI: logistic Elo (head to head) or points per game "
        "(--against, --vs-rules); negative bounds as they are: --sprt -10,10",
    )
    p.add_argument(
        "--alpha", type=float, default=0.05, help="false H1 rate, in (0, 0.5) (default 0.05)"
    )
    p.add_argument(
        "--beta", type=float, default=0.05, help="false H0 rate, in (0, 0.5) (default 0.05)"
    )
    p.add_argument(
        "--precision", type=float, metavar="EPS", help="stop at a 95%% interval of ±EPS instead"
    )
    p.add_argument(
        "--max-games",
        type=int,
        default=24000,
        help="games per configuration at most (default 24000, a multiple of 2, 3 and 4)",
    )
    p.add_argument(
        "--check-every",
        type=int,
        help="games between check points (default 240: whole groups for 2, 3 and 4 players)",
    )
    p.add_argument("--seed", type=int, default=0, help="job seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument("--chunk-size", type=int, help="games per chunk (default: automatic)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document: the verdict and estimates, the job id (--server) and the "
        "statistics document that `azulsim report --from FILE` draws",
    )
    add_client_options(p, STUDY_SERVICE, STUDY_SERVER)
    p.set_defaults(func=cmd_compare)


def _pair(text: str, option: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise UsageError(f"{option} must be two numbers LO,HI; got {shown(text)}") from None
    return lo, hi


SAME_BOT = (
    "A and B are the same bot ({label}): a bot compared with itself is 0 Elo by symmetry, and "
    "a deterministic one (such as heuristic) plays the same game in every seat order of a "
    "mirrored group (with --against, the same games on the same deals), so every sample is the "
    "same and no stopping rule can decide. Compare two different bots or parameter values"
)


def _refuse_the_same_bot(a: str, b: str) -> None:
    """A comparison of a bot with itself is refused before it plays a game (`SAME_BOT`)."""
    from sim.bots.registry import parse_bot_spec

    try:
        label_a, label_b = parse_bot_spec(a).label, parse_bot_spec(b).label
    except ValueError:
        return  # the spec's own validation names the bad bot
    if label_a == label_b:
        raise UsageError(SAME_BOT.format(label=label_a))


def degenerate(out: dict[str, Any]) -> str | None:
    """Why a comparison's sample says nothing, or None: every sample the same value (a
    zero-width interval that reflects no variation, not precision)."""
    ci = out.get("score_ci95")
    if not out.get("pairs") or not ci or ci[0] is None or ci[0] != ci[1]:
        return None
    paired = out.get("pentanomial") is None and out.get("elo") is None
    even = out["score"] == (0.0 if paired else 0.5)
    value = f"{out['score']:g} {'points' if paired else 'share of the win'}"
    if even:
        return (
            f"every one of the {out['pairs']:,} samples was the same ({value}): the two bots "
            "played the same games (deterministic bots on the same deals and seats do), so "
            "there is nothing to estimate and the interval's zero width is not precision"
        )
    return (
        f"every one of the {out['pairs']:,} samples was the same ({value}): the interval has "
        "zero width because nothing varied, not because the estimate is precise"
    )


def compare_spec(args: argparse.Namespace):
    """The job spec of a comparison (raises UsageError naming the option)."""
    from sim.bots.registry import split_bot_list
    from sim.jobs.spec import JobSpec

    _refuse_the_same_bot(args.a, args.b)
    against = split_bot_list(args.against) if args.against else []
    players = args.players or (1 + len(against) if against else 2)
    if players not in (2, 3, 4):
        raise UsageError(f"--players must be 2, 3 or 4; got {players}")
    if args.sprt and args.precision is not None:
        raise UsageError("--sprt and --precision cannot be combined: choose one stopping rule")
    rules = _rules(args)
    if args.vs_rules is not None:
        return _vs_rules_spec(args, players, rules)
    rule: dict[str, Any] | None = None
    if against:
        if len(against) == 1:
            against = against * (players - 1)
        if len(against) != players - 1:
            raise UsageError(
                f"--against must name one bot or {players - 1} (one per other seat); got "
                f"{len(against)}"
            )
        configs = [_config(rules, players, [b, *against], "rotate") for b in (args.b, args.a)]
        rule = _paired_score_rule(args)
        data: dict[str, Any] = {"configurations": configs, "baseline": 0}
    else:
        configs = [_config(rules, players, [args.a] + [args.b] * (players - 1), "mirrored")]
        if args.sprt:
            lo, hi = _pair(args.sprt, "--sprt")
            rule = {"rule": "sprt", "elo0": lo, "elo1": hi, "alpha": args.alpha,
                    "beta": args.beta}  # fmt: skip
        elif args.precision is not None:
            rule = {"rule": "precision", "statistic": "elo", "eps": args.precision}
        data = {"configurations": configs}
    data.update(games=args.max_games, seed=args.seed)
    if rule is not None:
        if args.check_every is not None:
            rule["check_every"] = args.check_every
        data["stop"] = rule
    try:
        return JobSpec.from_dict(data)
    except ValueError as exc:
        raise UsageError(_option_names(str(exc))) from None


def _rules(args: argparse.Namespace):
    """The rule set of ``--rules`` with ``--wall`` in it (given once)."""
    rules = rules_of(args)
    if args.wall is not None:
        if rules.wall != "coloured":
            raise UsageError("give the wall once: --wall or wall= in --rules")
        try:
            rules = rules.with_value("wall", args.wall)
        except ValueError as exc:
            raise UsageError(f"--wall: {exc}") from None
    return rules


def _config(rules, players: int, bots: list[str], seating: str) -> dict[str, Any]:
    """A configuration's spec dict under `rules`; a bad bot is a spec error as before."""
    out: dict[str, Any] = {"players": players, "bots": bots, "seating": seating,
                           "wall": rules.wall}  # fmt: skip
    if rules.max_rounds != DEFAULT_MAX_ROUNDS:
        out["max_rounds"] = rules.max_rounds
    changed = {k: v for k, v in rules.changed().items() if k not in ("wall", "max_rounds")}
    if changed:
        out["rules"] = changed
    return out


def _vs_rules_spec(args: argparse.Namespace, players: int, rules):
    """A against B head to head under two rule sets: configurations 0 (``--rules``) and 1
    (``--vs-rules``), mirrored, paired when the rule sets deal alike: as baseline and paired
    configuration when they also share the wall (a stopping rule reads A's paired points), else
    through `JobSpec.pairs`."""
    from sim.jobs.spec import JobSpec

    second = rules_of(args, "vs_rules")
    if args.wall is not None and second.wall == "coloured":
        second = second.with_value("wall", args.wall)
    if args.against:
        raise UsageError("--vs-rules compares A and B head to head: it takes no --against")
    if second == rules:
        raise UsageError(
            f"--vs-rules names the rules of --rules ({rules.label}): give another rule set"
        )
    alike = rules.deals_like(second, players)
    bots = [args.a] + [args.b] * (players - 1)
    data: dict[str, Any] = {
        "configurations": [_config(r, players, bots, "mirrored") for r in (rules, second)],
        "games": args.max_games,
        "seed": args.seed,
    }
    rule = _paired_score_rule(args)
    if rule is not None:
        if not alike or rules.wall != second.wall:
            raise UsageError(
                f"a stopping rule with --vs-rules reads A's points paired on the same deals: "
                f"{rules.label} and {second.label} must deal alike (the same factories and "
                "tiles) and play the same wall"
            )
        if args.check_every is not None:
            rule["check_every"] = args.check_every
        data["stop"] = rule
    if alike and rules.wall == second.wall:
        data["baseline"] = 0
    elif alike:
        data["pairs"] = [[1, 0]]
    try:
        return JobSpec.from_dict(data)
    except ValueError as exc:
        raise UsageError(_option_names(str(exc))) from None


def vs_rules(spec) -> bool:
    """Whether `spec` is a comparison under two rule sets (``--vs-rules``): two mirrored
    configurations of the same bots."""
    c = spec.configurations
    return len(c) == 2 and all(x.seating == "mirrored" for x in c) and c[0].bots == c[1].bots


def _option_names(message: str) -> str:
    """A spec error in the words of the command line."""
    for field, option in (
        ("stop.elo1", "--sprt HI"), ("stop.elo0", "--sprt LO"), ("stop.delta1", "--sprt HI"),
        ("stop.delta0", "--sprt LO"), ("stop.alpha", "--alpha"), ("stop.beta", "--beta"),
        ("stop.eps", "--precision"), ("stop.check_every", "--check-every"),
    ):  # fmt: skip
        message = message.replace(field, option)
    if message.startswith("games "):
        message = "--max-games" + message[len("games") :]
    return message


def compare_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` document of a comparison from a job's statistics document."""
    from sim.jobs.spec import JobSpec

    spec = JobSpec.from_dict(doc["spec"])
    stopping = doc.get("stopping") or {}
    out: dict[str, Any] = {
        "verdict": stopping.get("reason"),
        "games": doc["games_done"],
        "pairs": None,
        "pentanomial": None,
        "score": None,
        "score_ci95": None,
        "elo": None,
        "elo_ci95": None,
        "los": None,
        "llr": stopping.get("llr"),
        "llr_bounds": stopping.get("llr_bounds"),
        "llr_bounds_nominal": stopping.get("llr_bounds_nominal"),
    }
    if vs_rules(spec):
        out.update(_vs_rules_figures(doc, spec))
    elif spec.baseline is None:
        out.update(_head_to_head(doc["configurations"][0]["groups"]))
    else:
        p = doc["configurations"][1]["paired"]
        out.update(
            pairs=p["games"],
            score=p["score_diff"],
            score_ci95=p["score_diff_ci95"],
            win_rate_diff=p["win_rate_diff"],
            win_rate_diff_ci95=p["win_rate_diff_ci95"],
        )
    out["degenerate"] = degenerate(out)
    cpu = (doc.get("timing") or {}).get("cpu")
    if cpu:  # the bots that account their CPU per move (sim.stats.cpu): A's and B's cost
        out["cpu"] = cpu
    out["check_points"] = stopping.get("check_points", [])
    out["spec"] = doc["spec"]
    return out


def _head_to_head(g: dict[str, Any]) -> dict[str, Any]:
    return {
        "pairs": g["groups"],
        "pentanomial": g.get("pentanomial"),
        "score": g["score"],
        "score_ci95": g["score_ci95"],
        "elo": g["elo"],
        "elo_ci95": g["elo_ci95"],
        "los": g["los"],
        "variance_gain": g["variance_gain"],
    }


def _vs_rules_figures(doc: dict[str, Any], spec) -> dict[str, Any]:
    """A against B under each rule set (``under``, by label in ``rules``), and the second's
    paired differences to the first (``difference``: A's points and win rate), None unpaired."""
    from sim.rules.rulesets import RuleSet

    labels = [RuleSet.of(c, spec).label for c in spec.configurations]
    under = [
        {"rules": label, **_head_to_head(doc["configurations"][k]["groups"])}
        for k, label in enumerate(labels)
    ]
    p = doc["configurations"][1].get("paired")
    difference = None
    if p is not None:
        difference = {
            "games": p["games"],
            "score_diff": p["score_diff"],
            "score_diff_ci95": p["score_diff_ci95"],
            "win_rate_diff": p["win_rate_diff"],
            "win_rate_diff_ci95": p["win_rate_diff_ci95"],
        }
    return {
        "rules": labels,
        "paired": p is not None,
        "under": under,
        "difference": difference,
        "pairs": under[0]["pairs"],
    }


def _fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _format_vs_rules(out: dict[str, Any], a: str, b: str) -> str:
    first, second = out["rules"]
    each = out["games"] // len(out["under"])
    lines = [f"{a} vs {b} under {first} and under {second}: {each:,} games under each"]
    if out["verdict"] is not None:
        lines[0] += f" ({STOP_REASONS.get(out['verdict'], out['verdict'])})"
    for u in out["under"]:
        ci = u["elo_ci95"] or [None, None]
        lines.append(
            f"  {u['rules']}: Elo {_fmt(u['elo'])} [{_fmt(ci[0])}, {_fmt(ci[1])}]   score "
            f"{_fmt(u['score'], 4)}   ({u['pairs']:,} mirrored groups)"
        )
    d = out["difference"]
    if d is not None:
        sc = d["score_diff_ci95"] or [None, None]
        wr = d["win_rate_diff_ci95"] or [None, None]
        lines.append(
            f"  {second} minus {first}, paired on the same deals and seats ({d['games']:,} "
            f"games): {a}'s points per game {_fmt(d['score_diff'], 2)} [{_fmt(sc[0], 2)}, "
            f"{_fmt(sc[1], 2)}], win rate {_fmt(d['win_rate_diff'], 4)} [{_fmt(wr[0], 4)}, "
            f"{_fmt(wr[1], 4)}]"
        )
    else:
        lines.append(
            f"  unpaired: {first} and {second} deal other games (factories or tiles differ), so "
            "the two were played on different deals; compare their Elo intervals"
        )
    if out["llr"] is not None:
        lo, hi = out["llr_bounds"]
        lines.append(f"  LLR {out['llr']:.3f} (bounds {lo:.3f}, {hi:.3f} at these check points)")
    return "\n".join(lines) + "\n"


def format_compare(out: dict[str, Any], a: str, b: str) -> str:
    if out.get("rules"):
        return _format_vs_rules(out, a, b)
    lines = []
    verdict = STOP_REASONS.get(out["verdict"] or "", "no stopping rule")
    lines.append(f"{a} vs {b}: {verdict} after {out['games']:,} games ({out['pairs']:,} samples)")
    if out["pentanomial"] is not None:
        lines.append(f"  pentanomial (A's half-points per pair 0..4): {out['pentanomial']}")
    if out["elo"] is not None or out["elo_ci95"] is not None:
        ci = out["elo_ci95"] or [None, None]
        lines.append(
            f"  Elo {_fmt(out['elo'])} [{_fmt(ci[0])}, {_fmt(ci[1])}]   score "
            f"{_fmt(out['score'], 4)}   LOS {_fmt(out['los'], 4)}"
        )
    else:
        ci = out["score_ci95"] or [None, None]
        lines.append(
            f"  A minus B, points per game {_fmt(out['score'], 2)} [{_fmt(ci[0], 2)}, "
            f"{_fmt(ci[1], 2)}]   win rate difference {_fmt(out.get('win_rate_diff'), 4)}"
        )
    for row in out.get("cpu") or ():
        per = row["us_per_move"]
        lines.append(f"  CPU per move: {row['bot']} {_fmt(per)} µs ({row['moves']:,} moves)")
    if out["llr"] is not None:
        lo, hi = out["llr_bounds"]
        n_lo, n_hi = out["llr_bounds_nominal"]
        lines.append(
            f"  LLR {out['llr']:.3f} (bounds {lo:.3f}, {hi:.3f} at these check points; "
            f"{n_lo:.3f}, {n_hi:.3f} read after every sample)"
        )
    if out.get("degenerate"):
        lines.append(f"  degenerate: {out['degenerate']}")
    return "\n".join(lines) + "\n"


def _progress_line(games: int, llr: float | None, estimate: float | None) -> None:
    llr_text = "" if llr is None else f"LLR {llr:+.3f}  "
    sys.stderr.write(f"\r{PROG} compare: {games:,} games  {llr_text}estimate {_fmt(estimate)}   ")
    sys.stderr.flush()


def _write(out: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        write_json(out)
    else:
        sys.stdout.write(format_compare(out, args.a, args.b))


def _compare_on_server(args: argparse.Namespace, spec) -> tuple[str, dict[str, Any]]:
    import math

    tty = sys.stderr.isatty()

    def progress(job) -> None:
        s = job.stopping
        if tty and s.check_points:
            llr = None if math.isnan(s.llr) else s.llr
            _progress_line(s.games, llr, None if math.isnan(s.estimate) else s.estimate)

    try:
        return run_on_server(spec, args, progress)
    finally:
        if tty:
            sys.stderr.write("\n")


def cmd_compare(args: argparse.Namespace) -> int:
    spec = compare_spec(args)
    if args.server:
        job_id, doc = _compare_on_server(args, spec)
    else:
        job_id, doc = None, _compare_here(args, spec)
    out = compare_document(doc)
    if out["degenerate"]:
        print(f"{PROG} compare: warning: {out['degenerate']}", file=sys.stderr)
    if args.json:
        out = study_json(out, doc, job_id)
    _write(out, args)
    return 0


def _compare_here(args: argparse.Namespace, spec) -> dict[str, Any]:
    from sim.jobs.local import run_local

    from . import simulate

    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1; got {args.chunk_size}")
    tty = sys.stderr.isatty()

    def progress_line(point: dict[str, Any]) -> None:
        _progress_line(point["games"], point["llr"], point["estimate"])

    result = run_local(
        spec,
        workers=args.workers,
        chunk_size=args.chunk_size,
        play=simulate.PLAY,
        on_check=progress_line if tty else None,
    )
    if tty:
        sys.stderr.write("\n")
    return result.statistics()


def _paired_score_rule(args: argparse.Namespace) -> dict[str, Any] | None:
    """The stopping rule of ``--sprt`` or ``--precision`` on configuration 1's paired points
    (A's, against its baseline 0); None without either."""
    if args.sprt:
        lo, hi = _pair(args.sprt, "--sprt")
        return {"rule": "sprt", "configuration": 1, "statistic": "paired_score",
                "delta0": lo, "delta1": hi, "alpha": args.alpha, "beta": args.beta}  # fmt: skip
    if args.precision is not None:
        return {"rule": "precision", "configuration": 1, "statistic": "paired_score",
                "eps": args.precision}  # fmt: skip
    return None
