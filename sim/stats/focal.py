"""The focal player's record per configuration, and the ``sweep`` section of a sweep.

Per-bot groups merge every seat of a label; a sweep reads the *focal player* (``bots[0]``, the swept
bot) on its own, so every configuration counts it apart (``c{k}|focal|...``, finished games):
``n``, ``wins`` (a shared win counts), ``score.sum``, ``score.sumsq``.

The ``sweep`` section (jobs with ``spec.sweep``): one row per configuration with the swept
parameters' values, the focal player's win rate (Wilson) and score (normal interval), and the
paired differences to the baseline (`sim.stats.groups.derive_paired`); ``best`` is the value with
the highest win rate (the first of equals), with its intervals.

A sweep of several line-ups or player counts (`sim.jobs.spec.JobSpec.sweep_groups`) has one group
per line-up and player count: rows name their ``group``, ``groups`` gives each one's baseline, best
value and tests against it, and a row whose rules deal unlike its group's baseline's is
``"paired": false`` (no differences to the baseline: other deals).

Against the best: a sweep counts, for every pair of configurations ``i < j`` of a group, the paired
difference of the focal player's win indicator in the games both finished (``c{i}|vs{j}|...``:
``n``, ``sum``, ``sumsq`` of ``w_j - w_i``; every configuration plays the same deals and seats).
Each row's ``vs_best`` is its difference to the best (row minus best, a share like the win rate)
with its 95 % interval and the two-sided p-value of a paired z-test; Holm's step-down rule at
``ALPHA`` over the other values (family-wise error at most 5 %) says which are worse than the best
(``distinguishable``); the others, and the best, are in ``versus_best.indistinguishable``
(docs/statistics.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..rules.records import GameRecords
from .intervals import moments, wilson

Counters = dict[str, int]
ALPHA = 0.05  # family-wise error of the tests against the best (Holm)


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


def count_pairs(records: list[GameRecords], groups: list[list[int]] | None = None) -> Counters:
    """The paired win-indicator differences of every pair of a sweep's configurations within a
    group (`sim.jobs.spec.JobSpec.sweep_groups`; default one group of all): records of the same
    games, sorted by game. Each record's focal seat is its own; values whose rules deal alike
    play the same deals, the others the same game indices (independent games, so the
    difference's variance is the sum of the two and the test stays valid, only less sharp)."""
    if not records or len(records[0]) == 0:
        return {}
    groups = groups if groups is not None else [list(range(len(records)))]
    out: Counters = {}
    for group in groups:
        rows = np.arange(len(records[group[0]]))
        wins, done = {}, {}
        for k in group:
            seat = np.argmax(records[k].seat_bot == 0, axis=1)
            wins[k] = records[k].winners[rows, seat].astype(np.int64)
            done[k] = ~records[k].truncated
        for a, i in enumerate(group):
            for j in group[a + 1 :]:
                both = done[i] & done[j]
                d = (wins[j] - wins[i])[both]
                c = f"c{i}|vs{j}"
                out[f"{c}|n"] = int(both.sum())
                out[f"{c}|sum"] = int(d.sum())
                out[f"{c}|sumsq"] = int((d * d).sum())
    return {k: v for k, v in out.items() if v}


def _against(counters: Counters, k: int, best: int) -> dict[str, Any]:
    """Row `k` minus the best in win indicator: mean, 95 % interval, two-sided p (paired z)."""
    i, j = min(k, best), max(k, best)
    c = f"c{i}|vs{j}"
    n = int(counters.get(f"{c}|n", 0))
    sign = 1 if k == j else -1  # the counters hold w_j - w_i
    m = moments(n, sign * int(counters.get(f"{c}|sum", 0)), int(counters.get(f"{c}|sumsq", 0)))
    if m["mean"] is None or m["std"] is None:
        p = None
    elif m["std"] == 0.0:
        p = 1.0 if m["mean"] == 0.0 else 0.0
    else:
        z = m["mean"] / (m["std"] / math.sqrt(n))
        p = math.erfc(abs(z) / math.sqrt(2.0))
    return {"games": n, "win_rate_diff": m["mean"], "win_rate_diff_ci95": m["ci95"], "p": p}


def holm(pvalues: dict[int, float | None], alpha: float = ALPHA) -> dict[int, float | None]:
    """Holm's step-down adjusted p-values (``min(1, max over the first i of (m - i) p_(i))``);
    a hypothesis is rejected at family-wise level `alpha` when its adjusted p is at most
    `alpha`. A missing p stays missing and counts in m."""
    known = sorted((p, k) for k, p in pvalues.items() if p is not None)
    m = len(pvalues)
    out: dict[int, float | None] = {k: None for k in pvalues}
    running = 0.0
    for rank, (p, k) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        out[k] = running
    return out


def _versus_best(rows: list[dict[str, Any]], counters: Counters, best: int) -> list[int]:
    """Fill each row's ``vs_best``; the configurations not told apart from the best (it too)."""
    tests = {r["configuration"]: _against(counters, r["configuration"], best) for r in rows
             if r["configuration"] != best}  # fmt: skip
    adjusted = holm({k: t["p"] for k, t in tests.items()})
    same = [best]
    for r in rows:
        k = r["configuration"]
        if k == best:
            r["vs_best"] = None
            continue
        t = tests[k]
        t["p_holm"] = adjusted[k]
        t["distinguishable"] = adjusted[k] is not None and adjusted[k] <= ALPHA
        r["vs_best"] = t
        if not t["distinguishable"]:
            same.append(k)
    return sorted(same)


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
    """The ``sweep`` section, from the derived configurations (their ``paired``) and counters:
    every configuration's row, and per group (a line-up at a player count) its best value and
    the tests against it; the top-level ``best`` and ``versus_best`` are the baseline's group's."""
    from ..jobs.spec import sweep_value

    groups = spec.sweep_groups()
    baselines = spec.sweep_baselines()
    group_of = {k: g for g, members in enumerate(groups) for k in members}
    rows = []
    for k, config in enumerate(spec.configurations):
        paired = configs[k].get("paired")
        rows.append(
            {
                "configuration": k,
                "group": group_of[k],
                "bot": config.bots[0],
                "values": {name: sweep_value(spec, k, name) for name in spec.sweep},
                **focal_figures(counters, k),
                "paired": paired is not None or k == baselines[group_of[k]],
                "score_diff": paired["score_diff"] if paired else None,
                "score_diff_ci95": paired["score_diff_ci95"] if paired else None,
                "win_rate_diff": paired["win_rate_diff"] if paired else None,
                "win_rate_diff_ci95": paired["win_rate_diff_ci95"] if paired else None,
            }
        )
    out_groups = []
    for g, members in enumerate(groups):
        mine = [rows[k] for k in members]
        rated = [r for r in mine if r["win_rate"] is not None]
        best = max(rated, key=lambda r: (r["win_rate"], -r["configuration"])) if rated else None
        same = _versus_best(mine, counters, best["configuration"]) if best is not None else []
        first = spec.configurations[members[0]]
        out_groups.append(
            {
                "group": g,
                "players": first.players,
                "bot": first.bot_specs[0].name,
                "opponents": list(first.bots[1:]),
                "configurations": list(members),
                "baseline": baselines[g],
                "best": best,
                "versus_best": {
                    "test": "paired z on the win indicator",
                    "multiple_comparisons": "holm",
                    "alpha": ALPHA,
                    "indistinguishable": same,
                },
            }
        )
    home = out_groups[group_of[spec.baseline]]
    return {
        "parameters": list(spec.sweep),
        "bot": home["bot"],
        "opponents": home["opponents"],
        "baseline": spec.baseline,
        "metric": "win_rate",
        "rows": rows,
        "best": home["best"],
        "versus_best": home["versus_best"],
        "groups": out_groups,
    }
