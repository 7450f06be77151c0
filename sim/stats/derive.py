"""Figures derived from integer counters on read: means, std, 95 % CIs, Wilson win rates.

`derive` turns the counters of a job (`sim.stats.counters`) into one JSON-ready document; the schema
is in docs/statistics.md. Everything in it is a deterministic function of the counters and the spec,
so the same job gives byte-identical JSON (timings belong to a separate ``timing`` section that the
caller adds).

Definitions (``n`` observations, sum ``s``, sum of squares ``q``):

- mean ``s / n``; sample standard deviation ``sqrt((n q - s^2) / (n (n - 1)))`` (computed from the
  exact integer numerator); 95 % CI of the mean ``mean ± 1.959964 · std / sqrt(n)`` (normal
  approximation). ``mean`` is null when ``n == 0``, ``std`` and ``ci95`` when ``n < 2``;
- win rate ``wins / n`` over player-games of finished games (a shared win counts as a win) with a
  95 % Wilson score interval; truncated games are not in ``n``.
"""

from __future__ import annotations

from typing import Any

from .. import RULES_VERSION
from ..rules.constants import END_REASONS
from ..rules.rulesets import RuleSet
from .balance import derive_balance, derive_balance_paired
from .counters import GAME_MOMENTS, HISTOGRAMS, PLAYER_MOMENTS, Counters
from .focal import derive_sweep
from .groups import derive_groups, derive_paired
from .intervals import Z95, moments, wilson
from .ratings import derive_ratings
from .turn_order import derive_turn_order

__all__ = ["SCHEMA", "Z95", "derive", "group_rows", "moments", "wilson"]

SCHEMA = "azulsim.stats/1"


# Each histogram's bins by the text of their lower bound: a 100-configuration job has some
# 1,800 histograms of up to 51 bins, most of them empty, so the bins are read from one pass over
# the counters (`_Reader.bins`) rather than looked up one by one.
_BIN_INDEX = {
    name: {str(lo): i for i, lo in enumerate(range(0, top + 1, width))}
    for name, (width, top) in HISTOGRAMS.items()
}


class _Reader:
    def __init__(self, counters: Counters):
        self.c = counters
        self._get = counters.get
        self._bins: dict[str, dict[str, int]] | None = None

    def get(self, key: str) -> int:
        return int(self._get(key, 0))

    def bins(self, head: str) -> dict[str, int]:
        """The counters ``{head}.hist.<lo>`` of one histogram, by ``lo``."""
        if self._bins is None:
            self._bins = {}
            c = self.c
            for key in [k for k in c if ".hist." in k]:
                name, _, lo = key.rpartition(".hist.")
                self._bins.setdefault(name, {})[lo] = c[key]
        return self._bins.get(head, {})

    def moment(self, prefix: str, name: str, n: int, hist: bool = False) -> dict[str, Any]:
        get, head = self._get, f"{prefix}|{name}"
        out = moments(n, int(get(head + ".sum", 0)), int(get(head + ".sumsq", 0)))
        out["min"] = get("min|" + head) if n else None
        out["max"] = get("max|" + head) if n else None
        if hist:
            index = _BIN_INDEX[name]
            counts = [0] * len(index)
            for lo, value in self.bins(head).items():
                i = index.get(lo)
                if i is not None:
                    counts[i] = int(value)
            out["histogram"] = {"bin_width": HISTOGRAMS[name][0], "counts": counts}
        return out

    def player_group(self, prefix: str) -> dict[str, Any]:
        n = self.get(f"{prefix}|n")
        wins = self.get(f"{prefix}|wins")
        doc: dict[str, Any] = {
            "player_games": n,
            "truncated": self.get(f"{prefix}|truncated"),
            "wins": wins,
            "shared_wins": self.get(f"{prefix}|shared_wins"),
            "win_rate": wins / n if n else None,
            "win_rate_ci95": wilson(wins, n),
        }
        for name in PLAYER_MOMENTS:
            doc[name] = self.moment(prefix, name, n, hist=name in HISTOGRAMS)
        doc["win_margin"] = self.moment(prefix, "win_margin", wins)
        return doc


def _configuration(r: _Reader, k: int, config, spec) -> dict[str, Any]:
    c = f"c{k}"
    finished = r.get(f"{c}|games")
    truncated = {reason: r.get(f"{c}|truncated.{reason}") for reason in END_REASONS[1:]}
    doc: dict[str, Any] = {
        "index": k,
        "players": config.players,
        "wall": config.wall,
        "max_rounds": spec.max_rounds_of(config),
        "seating": config.seating,
        "seat_bots": list(config.bots),
    }
    rules = RuleSet.of(config, spec)
    if not rules.printed:  # only then: documents of the printed game stay as they were
        doc["rules"] = rules.label
    doc |= {
        "games_finished": finished,
        "games_truncated": sum(truncated.values()),
        "truncated_by_reason": truncated,
        "shared_win_games": r.get(f"{c}|shared_games"),
    }
    for name in GAME_MOMENTS:
        doc[name] = r.moment(c, name, finished, hist=True)
    everyone = r.player_group(f"{c}|all")
    for key in ("player_games", *PLAYER_MOMENTS):
        doc[key] = everyone[key]
    labels = list(dict.fromkeys(config.bots))
    players = config.players
    doc["bots"] = {}
    for label in labels:
        group = r.player_group(f"{c}|bot={label}")
        group["seats"] = [r.player_group(f"{c}|bot={label}|seat={p}") for p in range(players)]
        doc["bots"][label] = group
    doc["seats"] = [r.player_group(f"{c}|seat={p}") for p in range(players)]
    doc["positions"] = [r.player_group(f"{c}|pos={p}") for p in range(players)]
    h2h: dict[str, dict[str, Any]] = {}
    for a in labels:
        for b in labels:
            if a == b:
                continue
            key = f"{c}|h2h={a}|vs={b}"
            meetings = r.get(f"{key}|meetings")
            above, level = r.get(f"{key}|above"), r.get(f"{key}|level")
            h2h.setdefault(a, {})[b] = {
                "games": r.get(f"{key}|games"),
                "meetings": meetings,
                "above": above,
                "level": level,
                "below": meetings - above - level,
                "above_rate": above / meetings if meetings else None,
                "above_rate_ci95": wilson(above, meetings),
                "score_rate": (above + level / 2) / meetings if meetings else None,
            }
    doc["head_to_head"] = h2h
    doc["turn_order"] = derive_turn_order(r.c, k, config)
    return doc


# Keys copied to the top level of a one-configuration job's document.
_TOP_KEYS = (
    "games_finished",
    "games_truncated",
    "truncated_by_reason",
    "shared_win_games",
    *GAME_MOMENTS,
    "player_games",
    *PLAYER_MOMENTS,
    "bots",
    "seats",
    "positions",
    "head_to_head",
    "turn_order",
    "balance",
)


def derive(counters: Counters, spec) -> dict[str, Any]:
    """The statistics document of a job (schema: docs/statistics.md).

    Parameters
    ----------
    counters : merged counters of any subset of the job's games (partial while running)
    spec : the `sim.jobs.spec.JobSpec`

    Returns
    -------
    doc : JSON-ready dict. Per configuration under ``configurations[k]``; for a one-configuration
        job the same keys also at the top level; ``games_total``/``games_done``/``games_finished``/
        ``games_truncated`` always at the top level, over the whole job.
    """
    r = _Reader(counters)
    configs = [_configuration(r, k, cfg, spec) for k, cfg in enumerate(spec.configurations)]
    for k, cfg in enumerate(spec.configurations):
        if cfg.seating == "mirrored":
            configs[k]["groups"] = derive_groups(counters, k, cfg)
    for k, cfg in enumerate(spec.configurations):
        configs[k]["balance"] = derive_balance(counters, k, cfg)
    for k, base in spec.pairings():
        configs[k]["paired"] = derive_paired(counters, k, spec.configurations[k], base)
    for k, base in spec.pairs:
        players = spec.configurations[k].players
        configs[k]["balance_paired"] = derive_balance_paired(counters, k, base, players)
    finished = sum(c["games_finished"] for c in configs)
    truncated = sum(c["games_truncated"] for c in configs)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "rules_version": RULES_VERSION,
        "spec": spec.to_dict(),
        "games_total": spec.total_games,
        "games_done": finished + truncated,
        "games_finished": finished,
        "games_truncated": truncated,
    }
    if spec.ratings is not None:
        doc["ratings"] = derive_ratings(counters, spec)
    if spec.sweep is not None:
        doc["sweep"] = derive_sweep(configs, counters, spec)
    if len(configs) == 1:
        for key in _TOP_KEYS:
            doc[key] = configs[0][key]
        if "groups" in configs[0]:
            doc["groups"] = configs[0]["groups"]
    doc["configurations"] = configs
    return doc


def group_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per player group of every configuration (for tables and CSV).

    Columns: configuration, group (``all``, ``bot``, ``seat``, ``bot_seat``, ``position``), bot,
    seat, player_games, truncated, score mean/ci/std/min/max, wins, shared_wins, win rate and its
    Wilson interval, bonus/floor/marker means.
    """
    rows = []
    for cfg in doc["configurations"]:
        k = cfg["index"]
        groups: list[tuple[str, str, Any, dict]] = [("all", "", "", cfg)]
        for label, g in cfg["bots"].items():
            groups.append(("bot", label, "", g))
        for p, g in enumerate(cfg["seats"]):
            groups.append(("seat", "", p, g))
        for label, g in cfg["bots"].items():
            for p, gs in enumerate(g["seats"]):
                groups.append(("bot_seat", label, p, gs))
        for p, g in enumerate(cfg["positions"]):
            groups.append(("position", "", p, g))
        for kind, label, seat, g in groups:
            score = g["score"]
            ci = score["ci95"] or [None, None]
            win_ci = g.get("win_rate_ci95") or [None, None]
            rows.append(
                {
                    "configuration": k,
                    "group": kind,
                    "bot": label,
                    "seat": seat,
                    "player_games": g["player_games"],
                    "truncated": g.get("truncated", cfg["games_truncated"] * cfg["players"]),
                    "score_mean": score["mean"],
                    "score_ci95_lo": ci[0],
                    "score_ci95_hi": ci[1],
                    "score_std": score["std"],
                    "score_min": score["min"],
                    "score_max": score["max"],
                    "wins": g.get("wins", ""),
                    "shared_wins": g.get("shared_wins", ""),
                    "win_rate": g.get("win_rate", ""),
                    "win_rate_ci95_lo": win_ci[0] if kind != "all" else "",
                    "win_rate_ci95_hi": win_ci[1] if kind != "all" else "",
                    "bonus_mean": g["bonus"]["mean"],
                    "floor_mean": g["floor"]["mean"],
                    "marker_mean": g["marker"]["mean"],
                }
            )
    return rows
