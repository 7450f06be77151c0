"""The tables of a configuration as ``azulsim stats`` prints them (`service.cli.output`), as
header and rows for the page: the same cells, written by the same functions, so a figure on the
page reads exactly as on the terminal."""

from __future__ import annotations

from typing import Any

from ..cli.output import (
    _GROUP_HEADER,
    _group_row,
    _interval,
    _mean_ci,
    _rate,
    head_to_head_rows,
)
from ..report import position_name

Table = tuple[tuple[str, ...], list[list[str]]]

_TURN_HEADER = ("", "player-games", "score [95% CI]", "wins", "win rate [95% CI]")


def summary_line(cfg: dict[str, Any]) -> str:
    reasons = ", ".join(f"{k} {v:,}" for k, v in cfg["truncated_by_reason"].items() if v)
    return (
        f"games finished {cfg['games_finished']:,}, truncated {cfg['games_truncated']:,}"
        + (f" ({reasons})" if reasons else "")
        + f" · rounds {_mean_ci(cfg['rounds'])} · turns {_mean_ci(cfg['turns'])}"
        f" · score {_mean_ci(cfg['score'])} · margin of victory {_mean_ci(cfg['margin'])}"
        f" · shared wins {cfg['shared_win_games']:,} games"
    )


def by_bot(cfg: dict[str, Any]) -> Table:
    return _GROUP_HEADER, [_group_row(b, g) for b, g in cfg["bots"].items()]


def by_seat(cfg: dict[str, Any]) -> Table:
    return _GROUP_HEADER, [_group_row(f"seat {p}", g) for p, g in enumerate(cfg["seats"])]


def _turn_row(name: str, g: dict[str, Any], n: int) -> list[str]:
    return [name, f"{n:,}", _interval(g["score"], g["score_ci95"], 2), f"{g['wins']:,}", _rate(g)]


def first_player_line(cfg: dict[str, Any]) -> str:
    turn = cfg.get("turn_order")
    if not turn:
        return ""
    first = turn["first_player"]
    return (
        f"The start player of round 1 wins {_rate(first)} of {turn['games']:,} games (no "
        f"advantage: {100 * first['fair_win_rate']:.1f}%); score minus the others' mean "
        f"{_interval(first['score_diff'], first['score_diff_ci95'], 2)}"
    )


def by_turn_order(cfg: dict[str, Any]) -> Table | None:
    turn = cfg.get("turn_order")
    if not turn:
        return None
    return _TURN_HEADER, [
        _turn_row(position_name(g["position"]), g, g["player_games"]) for g in turn["positions"]
    ]


def by_start_seat(cfg: dict[str, Any]) -> Table | None:
    turn = cfg.get("turn_order")
    if not turn:
        return None
    return ("", "games started", *_TURN_HEADER[2:]), [
        _turn_row(f"seat {g['seat']}", g, g["games"]) for g in turn["start_seats"]
    ]


def bonuses(cfg: dict[str, Any]) -> Table:
    keys = ("bonus", "rows", "columns", "colours", "floor", "marker")
    return ("", "bonus pts", "rows", "columns", "colours", "floor pen.", "marker takes"), [
        [b, *(_mean_ci(g[k]) for k in keys)] for b, g in cfg["bots"].items()
    ]


def head_to_head(cfg: dict[str, Any]) -> Table | None:
    rows = head_to_head_rows(cfg)
    if not rows:
        return None
    return ("", "games", "higher", "level", "lower", "higher rate [95% CI]"), rows


def pairs(cfg: dict[str, Any]) -> Table | None:
    """Mirrored groups (score, Elo, LOS, pentanomial) and the paired difference to a baseline."""
    rows = []
    g = cfg.get("groups")
    if g:
        rows.append(
            [
                f"mirrored groups (focal {g['focal']})",
                f"{g['groups']:,}",
                _interval(g["score"], g["score_ci95"], 4),
                _interval(g["elo"], g["elo_ci95"], 1),
                "-" if g["los"] is None else f"{g['los']:.4f}",
                " ".join(f"{n:,}" for n in g["pentanomial"]) if "pentanomial" in g else "-",
            ]
        )
    p = cfg.get("paired")
    if p:
        rows.append(
            [
                f"paired with configuration {p['baseline']} (focal {p['focal']})",
                f"{p['games']:,}",
                "score diff " + _interval(p["score_diff"], p["score_diff_ci95"], 2),
                "win rate diff " + _interval(p["win_rate_diff"], p["win_rate_diff_ci95"], 4),
                "-",
                "-",
            ]
        )
    if not rows:
        return None
    header = ("", "groups / games", "score per game [95% CI]", "Elo [95% CI]", "LOS",
              "pentanomial (0, ½, 1, 1½, 2)")  # fmt: skip
    return header, rows


def balance_sheet(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The balance sheet of a balance job (`sim.experiments.balance_lab.balance_document`), one
    entry per player count: its measures by rule set, each value and, for every rule set after the
    first, the paired difference to the first, with their 95 % intervals (the cells ``azulsim
    balance`` prints); and its restricted-play table. With the measures' descriptions."""
    from sim.experiments.balance_lab import balance_document

    from ..cli.balance import DIGITS, _cell, _num

    sheet = balance_document(doc)
    out = []
    for table in sheet["tables"]:
        rows = table["rule_sets"]
        entry: dict[str, Any] = {"players": table["players"], "measures": None, "restricted": None}
        if rows:
            first = rows[0]["rule_set"]
            header = ["measure", *(f"{r['rule_set']} [95% CI]" for r in rows)]
            header += [f"{r['rule_set']} − {first}, paired [95% CI]" for r in rows[1:]]
            body = []
            for name in sheet["measures"]:
                digits = DIGITS.get(name, 3)
                cells = [name]
                cells += [_cell(r["measures"][name]["value"], r["measures"][name]["ci95"], digits)
                          for r in rows]  # fmt: skip
                for r in rows[1:]:
                    m = r["measures"][name]
                    cells.append(_cell(m["diff"], m["diff_ci95"], digits) if "diff" in m else "-")
                body.append(cells)
            entry["measures"] = (tuple(header), body)
            entry["bots"] = ", ".join(rows[0]["bots"])
            entry["games"] = [(r["rule_set"], r["games"], r.get("paired_games")) for r in rows]
        if table["restricted"]:
            entry["restricted_rule_set"] = table["restricted"][0]["rule_set"]
            entry["restricted"] = (
                (
                    "never",
                    "bot",
                    "games",
                    "win rate [95% CI]",
                    "fair share",
                    "score",
                    "opponents' score",
                ),  # fmt: skip
                [
                    [
                        r["element"],
                        r["bot"],
                        f"{r['games']:,}",
                        _percent(r["win_rate"], r["win_rate_ci95"]),
                        f"{100 * r['fair_share']:.1f} %",
                        _num(r["score"], 1),
                        _num(r["opponents_score"], 1),
                    ]
                    for r in table["restricted"]
                ],
            )
        out.append(entry)
    return out, sheet["measures"]


def _percent(rate: float | None, ci: list[float] | None) -> str:
    """A win rate as ``azulsim balance`` prints it: ``48.3 % [45.1, 51.5]``."""
    if rate is None:
        return "-"
    lo, hi = ci
    return f"{100 * rate:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"
