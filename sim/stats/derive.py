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
from .collection import collection_paused
from .counters import GAME_MOMENTS, HISTOGRAMS, PLAYER_MOMENTS, Counters
from .focal import derive_sweep
from .groups import derive_groups, derive_paired
from .intervals import Z95, moments, wilson
from .ratings import derive_ratings
from .turn_order import derive_turn_order

__all__ = ["SCHEMA", "Z95", "derive", "group_rows", "moments", "wilson"]

SCHEMA = "azulsim.stats/1"


# Each histogram's bins by the text of their lower bound: a 100-configuration job has some
# 1,800 histograms of up to 51 bins, most of them empty, so every histogram is filled from one
# pass over the counters (`_Reader.histogram`) rather than its bins looked up one by one.
_BIN_INDEX = {
    name: {str(lo): i for i, lo in enumerate(range(0, top + 1, width))}
    for name, (width, top) in HISTOGRAMS.items()
}


class _Reader:
    """The counters read as the document's figures. A 100-configuration job's document holds
    some 12,000 moments: the readers below are the derivation's inner loop, kept lean."""

    def __init__(self, counters: Counters):
        self.c = counters
        self._get = counters.get
        self._histograms: dict[str, list[int]] | None = None
        self._labels: dict[tuple, str | None] = {}

    def rule_set_label(self, config, spec) -> str | None:
        """The label of `config`'s rule set, None for the printed game's (built once for the
        configurations that share it: most of a big job's)."""
        key = (config.rules, config.wall, spec.max_rounds_of(config))
        if key not in self._labels:
            rules = RuleSet.of(config, spec)
            self._labels[key] = None if rules.printed else rules.label
        return self._labels[key]

    def get(self, key: str) -> int:
        return int(self._get(key, 0))

    def histogram(self, head: str, name: str) -> list[int]:
        """The bin counts of histogram ``{head}.hist.<lo>`` (statistic `name`)."""
        if self._histograms is None:
            self._histograms = found = {}
            c = self.c
            indexes: dict[str, dict[str, int] | None] = {}  # each histogram's bins
            for key in [k for k in c if ".hist." in k]:
                at, _, lo = key.rpartition(".hist.")
                index = indexes.get(at, False)
                if index is False:
                    indexes[at] = index = _BIN_INDEX.get(at.rpartition("|")[2])
                if index is None or (i := index.get(lo)) is None:
                    continue  # no histogram the document reads, or not one of its bins
                counts = found.get(at)
                if counts is None:
                    found[at] = counts = [0] * len(index)
                counts[i] = int(c[key])
        counts = self._histograms.get(head)
        return [0] * len(_BIN_INDEX[name]) if counts is None else counts[:]

    def moment(self, prefix: str, name: str, n: int, hist: bool = False) -> dict[str, Any]:
        get, head = self._get, f"{prefix}|{name}"
        out = _moment(
            n,
            int(get(head + ".sum", 0)),
            int(get(head + ".sumsq", 0)),
            get("min|" + head),
            get("max|" + head),
        )
        if hist:
            out["histogram"] = {
                "bin_width": HISTOGRAMS[name][0],
                "counts": self.histogram(head, name),
            }
        return out

    def player_group(self, prefix: str) -> dict[str, Any]:
        # Every key of the group looked up in one pass (a 100-configuration job has some 1,500
        # groups of eight moments): its counts, then each moment's sums and extremes.
        get = self._get
        n, wins, truncated, shared = [int(get(prefix + key, 0)) for key in _GROUP_COUNTS]
        sums = [int(get(prefix + key, 0)) for key in _GROUP_SUMS]
        low, high = "min|" + prefix, "max|" + prefix
        lows = [get(low + key) for key in _GROUP_HEADS]
        highs = [get(high + key) for key in _GROUP_HEADS]
        doc: dict[str, Any] = {
            "player_games": n,
            "truncated": truncated,
            "wins": wins,
            "shared_wins": shared,
            "win_rate": wins / n if n else None,
            "win_rate_ci95": wilson(wins, n),
        }
        for i, name in enumerate(_GROUP_MOMENTS):
            over = wins if name == "win_margin" else n  # the margin is over the games won
            out = _moment(over, sums[2 * i], sums[2 * i + 1], lows[i], highs[i])
            if name in HISTOGRAMS:
                counts = self.histogram(f"{prefix}|{name}", name)
                out["histogram"] = {"bin_width": HISTOGRAMS[name][0], "counts": counts}
            doc[name] = out
        return doc


# A player group's counters (`sim.stats.counters`), as suffixes of its prefix, in the order
# `_Reader.player_group` reads them.
_GROUP_COUNTS = ("|n", "|wins", "|truncated", "|shared_wins")
_GROUP_MOMENTS = (*PLAYER_MOMENTS, "win_margin")
_GROUP_HEADS = tuple(f"|{name}" for name in _GROUP_MOMENTS)
_GROUP_SUMS = tuple(f"|{name}.{part}" for name in _GROUP_MOMENTS for part in ("sum", "sumsq"))


def _moment(n: int, s: int, q: int, low: Any, high: Any) -> dict[str, Any]:
    """`moments` of ``n`` observations of sum ``s`` and sum of squares ``q``, with their extremes
    ``low`` and ``high`` (None when ``n == 0``)."""
    out = moments(n, s, q)
    out["min"] = low if n else None
    out["max"] = high if n else None
    return out


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
    label = r.rule_set_label(config, spec)
    if label is not None:  # only then: documents of the printed game stay as they were
        doc["rules"] = label
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
    with collection_paused():  # a big document: sim.stats.collection
        return _derive(counters, spec)


def _derive(counters: Counters, spec) -> dict[str, Any]:
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
