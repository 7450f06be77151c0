"""How the ``azulsim`` commands write: the statistics as a table, JSON or CSV; jobs as lines, as
table cells and as plain JSON. (Progress displays: `service.cli.progress`.)
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _mean_ci(stat: dict[str, Any], digits: int = 2) -> str:
    if stat["mean"] is None:
        return "-"
    if stat["ci95"] is None:
        return _num(stat["mean"], digits)
    half = (stat["ci95"][1] - stat["ci95"][0]) / 2
    return f"{stat['mean']:.{digits}f} ± {half:.{digits}f}"


def _rate(group: dict[str, Any]) -> str:
    if group["win_rate"] is None:
        return "-"
    lo, hi = group["win_rate_ci95"]
    return f"{100 * group['win_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def table(header: Sequence[str], rows: list[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join("  " + line.rstrip() for line in lines) + "\n"


_GROUP_HEADER = (
    "",
    "player-games",
    "score (mean ± 95%)",
    "std",
    "min",
    "max",
    "wins",
    "win rate [95% CI]",
)


def _group_row(name: str, g: dict[str, Any]) -> list[str]:
    s = g["score"]
    extremes = ["-" if s[k] is None else str(s[k]) for k in ("min", "max")]
    return [
        name,
        f"{g['player_games']:,}",
        _mean_ci(s),
        _num(s["std"]),
        *extremes,
        f"{g['wins']:,}",
        _rate(g),
    ]


def _interval(x: float | None, ci: Sequence[float | None] | None, digits: int) -> str:
    if x is None:
        return "-"
    if not ci or ci[0] is None or ci[1] is None:
        return f"{x:.{digits}f}"
    return f"{x:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _experiment_lines(cfg: dict[str, Any]) -> str:
    """Mirrored groups and paired differences of a configuration (docs/statistics.md)."""
    out = ""
    g = cfg.get("groups")
    if g:
        out += (
            f"  mirrored groups {g['groups']:,} (focal {g['focal']}): score per game "
            f"{_interval(g['score'], g['score_ci95'], 4)}, "
            f"Elo {_interval(g['elo'], g['elo_ci95'], 1)}, LOS {_num(g['los'], 4)}, "
            f"variance gain {_num(g['variance_gain'], 3)}"
            + (f", pentanomial {g['pentanomial']}" if "pentanomial" in g else "")
            + "\n"
        )
    p = cfg.get("paired")
    if p:
        out += (
            f"  paired with configuration {p['baseline']} over {p['games']:,} games (focal "
            f"{p['focal']}): score difference {_interval(p['score_diff'], p['score_diff_ci95'], 2)}"
            f", win rate difference {_interval(p['win_rate_diff'], p['win_rate_diff_ci95'], 4)}\n"
        )
    return out


def _turn_order_lines(cfg: dict[str, Any]) -> str:
    """The first-player advantage and the tables by turn-order position and by start seat."""
    turn = cfg.get("turn_order")
    if not turn:
        return ""
    first = turn["first_player"]
    header = ("", "player-games", "score [95% CI]", "wins", "win rate [95% CI]")

    def row(name: str, g: dict[str, Any], n: int) -> list[str]:
        return [
            name,
            f"{n:,}",
            _interval(g["score"], g["score_ci95"], 2),
            f"{g['wins']:,}",
            _rate(g),
        ]

    names = ["starts", "2nd to play", "3rd to play", "4th to play"]
    return (
        f"\n  Turn order: the start player of round 1 wins {_rate(first)} of "
        f"{turn['games']:,} games (no advantage: {100 * first['fair_win_rate']:.1f}%); "
        "score minus the others' mean "
        f"{_interval(first['score_diff'], first['score_diff_ci95'], 2)}"
        "\n\n  By turn order in round 1\n"
        + table(
            header, [row(names[g["position"]], g, g["player_games"]) for g in turn["positions"]]
        )
        + "\n  The start player, by the seat that started\n"
        + table(
            ("", "games started", *header[2:]),
            [row(f"seat {g['seat']}", g, g["games"]) for g in turn["start_seats"]],
        )
    )


def head_to_head_rows(cfg: dict[str, Any]) -> list[list[str]]:
    """The head-to-head table's rows of a configuration (also the web view's, service/web)."""
    return [
        [
            f"{a} vs {b}",
            f"{r['games']:,}",
            f"{r['above']:,}",
            f"{r['level']:,}",
            f"{r['below']:,}",
            _rate({"win_rate": r["above_rate"], "win_rate_ci95": r["above_rate_ci95"]}),
        ]
        for a, row in cfg["head_to_head"].items()
        for b, r in row.items()
    ]


def format_table(doc: dict[str, Any]) -> str:
    """The statistics document as readable text (per configuration: summary, bots, seats, h2h)."""
    out = []
    for cfg in doc["configurations"]:
        reasons = ", ".join(f"{k} {v:,}" for k, v in cfg["truncated_by_reason"].items() if v)
        out.append(
            f"Configuration {cfg['index']}: {cfg['players']} players, {cfg['wall']} wall, "
            f"{cfg['seating']} seating, bots {', '.join(cfg['seat_bots'])}"
            + (f", rules {cfg['rules']}" if "rules" in cfg else "")
            + "\n"
            f"  games finished {cfg['games_finished']:,}, truncated {cfg['games_truncated']:,}"
            + (f" ({reasons})" if reasons else "")
            + "\n"
            f"  rounds {_mean_ci(cfg['rounds'])}   turns {_mean_ci(cfg['turns'])}   "
            f"score {_mean_ci(cfg['score'])}   margin of victory {_mean_ci(cfg['margin'])}   "
            f"shared wins {cfg['shared_win_games']:,} games\n"
        )
        out.append(_experiment_lines(cfg))
        out.append("\n  By bot\n")
        out.append(table(_GROUP_HEADER, [_group_row(b, g) for b, g in cfg["bots"].items()]))
        out.append("\n  By seat\n")
        out.append(
            table(_GROUP_HEADER, [_group_row(f"seat {p}", g) for p, g in enumerate(cfg["seats"])])
        )
        out.append(_turn_order_lines(cfg))
        bonus_rows = [
            [
                b,
                _mean_ci(g["bonus"]),
                _mean_ci(g["rows"]),
                _mean_ci(g["columns"]),
                _mean_ci(g["colours"]),
                _mean_ci(g["floor"]),
                _mean_ci(g["marker"]),
            ]
            for b, g in cfg["bots"].items()
        ]
        out.append("\n  Bonuses and penalties by bot (means per game)\n")
        out.append(
            table(
                ("", "bonus pts", "rows", "columns", "colours", "floor pen.", "marker takes"),
                bonus_rows,
            )
        )
        h2h = head_to_head_rows(cfg)
        if h2h:
            out.append("\n  Head to head (finished higher, per meeting of two seats)\n")
            out.append(
                table(("", "games", "higher", "level", "lower", "higher rate [95% CI]"), h2h)
            )
        out.append("\n")
    timing = doc.get("timing") or {}
    for row in timing.get("cpu", ()):  # bots that account their CPU per move (sim.stats.cpu)
        per = row["us_per_move"]
        out.append(
            f"CPU per move: {row['bot']}: "
            + (f"{per:,.1f} µs" if per is not None else "-")
            + f" over {row['moves']:,} moves (configuration {row['configuration']})\n"
        )
    if "seconds" in timing:
        rate = timing["games_per_second"]
        out.append(
            f"{doc['games_done']:,} games in {timing['seconds']:.2f} s"
            + (f" ({rate:,.0f} games/s" if rate else " (")
            + f", {timing['workers']} worker{'s' if timing['workers'] != 1 else ''})\n"
        )
    return "".join(out)


def when(ts) -> str:
    if not ts.seconds and not ts.nanos:
        return "-"
    return datetime.fromtimestamp(ts.seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def state_name(job) -> str:
    from ..api import azulsim_pb2 as pb

    return pb.JobState.Name(job.state)


def _iso(ts) -> str | None:
    if not ts.seconds and not ts.nanos:
        return None
    return ts.ToDatetime(UTC).isoformat().replace("+00:00", "Z")


def job_json(job) -> dict[str, Any]:
    """A `Job` as plain JSON: every field present, numbers as numbers, the spec in the spec file
    format (``"seating": "rotate"``), times as ISO 8601 UTC (``null`` when unset)."""
    from ..convert import SEATING, WALL, rules_from_proto

    spec = job.spec
    configurations = []
    for k, c in enumerate(spec.configurations):
        entry: dict[str, Any] = {
            "players": c.players,
            "bots": list(c.bots),
            "seating": SEATING.get(c.seating, "rotate"),
            "wall": WALL.get(c.wall, "coloured"),
        }
        if c.max_rounds:
            entry["max_rounds"] = c.max_rounds
        if c.HasField("rules"):  # the rules that differ from the printed game's
            entry["rules"] = rules_from_proto(c.rules, f"spec.configurations[{k}].rules")
        configurations.append(entry)
    return {
        "job_id": job.job_id,
        "state": state_name(job),
        "request_id": job.request_id,
        "spec": {
            "configurations": configurations,
            "games": spec.games,
            "seed": spec.seed,
            "max_rounds": spec.max_rounds,
        },
        "games_total": job.games_total,
        "games_done": job.games_done,
        "chunks_total": job.chunks_total,
        "chunks_done": job.chunks_done,
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "error": job.error,
        "rules_version": job.rules_version,
    }


def job_games(job) -> str:
    """A job's games done of its total, or, stopped early by its rule, what it played and why."""
    from ..report import games_played

    reason = job.stopping.reason if job.HasField("stopping") else ""
    return games_played(job.games_done, job.games_total, reason)


def job_line(job) -> str:
    return (
        f"job {job.job_id} {state_name(job)}: {job_games(job)}"
        + _stopping_text(job)
        + (f" — {job.error}" if job.error else "")
    )


def _stopping_text(job) -> str:
    """Where a job's stopping rule stands: LLR against its bounds (or the estimate), the verdict."""
    import math

    if not job.HasField("stopping") or not job.stopping.check_points:
        return ""
    s = job.stopping
    parts = []
    if not math.isnan(s.llr):
        parts.append(f"LLR {s.llr:+.3f} [{s.llr_lower:.3f}, {s.llr_upper:.3f}]")
    if not math.isnan(s.estimate):
        parts.append(f"estimate {s.estimate:.4g}")
    if s.reason:
        parts.append(s.reason.replace("_", " ") + f" at {s.games:,} games per configuration")
    return ", " + ", ".join(parts)


def write_statistics(doc: dict[str, Any], fmt: str, out: TextIO) -> None:
    """The statistics document as "table", "json" (the document) or "csv" (a row per group)."""
    from sim.stats import group_rows

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


def print_statistics(stats, fmt: str, out: TextIO) -> None:
    """A `Statistics` reply as `write_statistics` does, saying on stderr when it is partial."""
    if stats.partial:
        print(
            f"partial statistics: job {stats.job.job_id} is {state_name(stats.job)}, "
            f"{stats.job.games_done:,} of {stats.job.games_total:,} games counted",
            file=sys.stderr,
        )
    write_statistics(json.loads(stats.statistics_json), fmt, out)
