"""The focal player's record per configuration, and the ``sweep`` section of a sweep.

Per-bot groups merge every seat of a label; a sweep reads the *focal player* (``bots[0]``, the swept
bot) on its own, so every configuration counts it apart (``c{k}|focal|...``, finished games):
``n``, ``wins`` (a shared win counts), ``score.sum``, ``score.sumsq``.

The ``sweep`` section (jobs with ``spec.sweep``): one row per configuration with the swept
parameters' values, the focal player's win rate (Wilson) and score (normal interval), and the
paired differences to the baseline (`sim.stats.groups.derive_paired`); ``best`` is the value with
the highest win rate (the first of equals), with its intervals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..records import GameRecords
from .intervals import moments, wilson

Counters = dict[str, int]


def count_focal(records: GameRecords, config_index: int) -> Counters:
    fin = ~records.truncated
    if not fin.any():
        return {}
    rows = np.flatnonzero(fin)
    seat = np.argmax(records.seat_bot[rows] == 0, axis=1)
    score = records.scores[rows, seat].astype(np.int64)
    wins = int(records.winners[rows, seat].sum())
    c = f"c{config_index}|focal"
    out = {
        f"{c}|n": len(rows),
        f"{c}|wins": wins,
        f"{c}|score.sum": int(score.sum()),
        f"{c}|score.sumsq": int((score * score).sum()),
    }
    return {k: v for k, v in out.items() if v}


def focal_figures(counters: Counters, k: int) -> dict[str, Any]:
    c = f"c{k}|focal"
    n, wins = int(counters.get(f"{c}|n", 0)), int(counters.get(f"{c}|wins", 0))
    score = moments(
        n, int(counters.get(f"{c}|score.sum", 0)), int(counters.get(f"{c}|score.sumsq", 0))
    )
    return {
        "games": n,
        "wins": wins,
        "win_rate": wins / n if n else None,
        "win_rate_ci95": wilson(wins, n),
        "score": score["mean"],
        "score_ci95": score["ci95"],
    }


def derive_sweep(configs: list[dict[str, Any]], counters: Counters, spec) -> dict[str, Any]:
    """The ``sweep`` section, from the derived configurations (their ``paired``) and counters."""
    rows = []
    for k, config in enumerate(spec.configurations):
        focal = config.bot_specs[0]
        paired = configs[k].get("paired")
        rows.append(
            {
                "configuration": k,
                "bot": config.bots[0],
                "values": {name: focal.params[name] for name in spec.sweep},
                **focal_figures(counters, k),
                "score_diff": paired["score_diff"] if paired else None,
                "score_diff_ci95": paired["score_diff_ci95"] if paired else None,
                "win_rate_diff": paired["win_rate_diff"] if paired else None,
                "win_rate_diff_ci95": paired["win_rate_diff_ci95"] if paired else None,
            }
        )
    rated = [r for r in rows if r["win_rate"] is not None]
    best = max(rated, key=lambda r: (r["win_rate"], -r["configuration"])) if rated else None
    return {
        "parameters": list(spec.sweep),
        "bot": spec.configurations[0].bot_specs[0].name,
        "opponents": list(spec.configurations[0].bots[1:]),
        "baseline": spec.baseline,
        "metric": "win_rate",
        "rows": rows,
        "best": best,
    }
