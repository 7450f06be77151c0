"""The statistics document as tables: plain lists of dicts, and pandas DataFrames when pandas is
installed (the ``..._frame`` functions; pandas is not a dependency of AzulSim).

Every function takes a statistics document (`sim.stats.derive`, ``azulsim simulate --json``,
GetStatistics) and reads only it. `sim.jobs.local.LocalResult` and `service.client.Client` offer
the same names as methods::

    from sim.jobs.local import run_local
    from sim.experiments.tournament import tournament_spec

    result = run_local(tournament_spec(["random", "greedy", "heuristic"], games_per_pair=400))
    result.ratings_frame()           # bot, elo, elo_ci95_lo, elo_ci95_hi, se, comparisons, ...
    result.turn_order_frame()        # configuration, position, win_rate, ..., score, ...
"""

from __future__ import annotations

from typing import Any

from . import group_rows


def _split(row: dict[str, Any], key: str) -> dict[str, Any]:
    """``key_ci95`` [lo, hi] as two columns ``key_ci95_lo``, ``key_ci95_hi``."""
    ci = row.pop(f"{key}_ci95", None) or [None, None]
    row[f"{key}_ci95_lo"], row[f"{key}_ci95_hi"] = ci
    return row


def statistics_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per player group of every configuration (`sim.stats.group_rows`)."""
    return group_rows(doc)


def turn_order_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per configuration and turn-order position in round 1 (0 starts)."""
    rows = []
    for cfg in doc["configurations"]:
        for g in cfg["turn_order"]["positions"]:
            row = {"configuration": cfg["index"], "players": cfg["players"], "wall": cfg["wall"]}
            row.update(g)
            rows.append(_split(_split(row, "win_rate"), "score"))
    return rows


def ratings_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per bot of a tournament, strongest first."""
    return [_split(dict(b), "elo") for b in doc["ratings"]["bots"]]


def head_to_head_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per pair of a tournament: observed and predicted rates."""
    return [_split(dict(h), "observed") for h in doc["ratings"]["head_to_head"]]


def sweep_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per value of a sweep, the swept parameters as columns (a rule's as
    ``rules.KEY``), with its group's player count and opponents (a line-up at a player count)."""
    rows = []
    groups = doc["sweep"].get("groups") or []
    for r in doc["sweep"]["rows"]:
        row = {k: v for k, v in r.items() if k not in ("values", "vs_best")}
        if groups:
            group = groups[r["group"]]
            row.update(players=group["players"], opponents=",".join(group["opponents"]))
        row.update(r["values"])
        for key in ("win_rate", "score", "score_diff", "win_rate_diff"):
            _split(row, key)
        best = r.get("vs_best") or {}  # the test against the best, flat (None: the best itself)
        row["best_diff"] = best.get("win_rate_diff")
        row["best_diff_ci95"] = best.get("win_rate_diff_ci95")
        _split(row, "best_diff")
        row["best_p_holm"] = best.get("p_holm")
        row["best_distinguishable"] = best.get("distinguishable", False)
        rows.append(row)
    return rows


def comparison_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per configuration with a mirrored-group or paired comparison."""
    rows = []
    for cfg in doc["configurations"]:
        row: dict[str, Any] = {"configuration": cfg["index"], "bots": ",".join(cfg["seat_bots"])}
        if "groups" in cfg:
            g = cfg["groups"]
            row.update(focal=g["focal"], groups=g["groups"], score=g["score"],
                       score_ci95=g["score_ci95"], elo=g["elo"], elo_ci95=g["elo_ci95"],
                       los=g["los"])  # fmt: skip
            _split(_split(row, "score"), "elo")
        if "paired" in cfg:
            p = cfg["paired"]
            row.update(baseline=p["baseline"], paired_games=p["games"],
                       score_diff=p["score_diff"], score_diff_ci95=p["score_diff_ci95"],
                       win_rate_diff=p["win_rate_diff"],
                       win_rate_diff_ci95=p["win_rate_diff_ci95"])  # fmt: skip
            _split(_split(row, "score_diff"), "win_rate_diff")
        if len(row) > 2:
            rows.append(row)
    return rows


def _frame(rows: list[dict[str, Any]]):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("the ..._frame() helpers need pandas (pip install pandas)") from None
    return pd.DataFrame(rows)


def statistics_frame(doc):
    return _frame(statistics_rows(doc))


def turn_order_frame(doc):
    return _frame(turn_order_rows(doc))


def ratings_frame(doc):
    return _frame(ratings_rows(doc))


def head_to_head_frame(doc):
    return _frame(head_to_head_rows(doc))


def sweep_frame(doc):
    return _frame(sweep_rows(doc))


def comparison_frame(doc):
    return _frame(comparison_rows(doc))


FRAMES = ("statistics", "turn_order", "ratings", "head_to_head", "sweep", "comparison")
