"""The balance lab: rule sets compared with the measures of game-design research, in one job.

`balance_spec` builds one `sim.jobs.spec.JobSpec`: for each player count, one configuration per rule
set (`sim.rules.rulesets`) with the same line-up in every seat, seats rotated, each rule set after
the first *paired* with the first (``JobSpec.pairs``: the same deals and seats game for game), and
one configuration per restricted element at the first rule set: the restricted bot
(`sim.bots.restricted`) against ``P - 1`` copies of the line-up's bot.

`balance_document` reads the job's statistics document (`sim.stats.derive`: the ``balance`` and
``balance_paired`` sections, docs/statistics.md) into the balance sheet: per player count, a row
per rule set with each measure and its 95 % interval and, for every rule set after the first, the
paired difference to the first with its interval; and the restricted-play table, element by
element, the restricted bot's win rate beside its fair share ``1 / P``. It is a function of the
statistics document alone, so a job run in-process and through the service give the same sheet.
"""

from __future__ import annotations

from typing import Any

from ..bots.registry import parse_bot_spec
from ..bots.restricted import ELEMENTS
from ..jobs.spec import Configuration, JobSpec
from ..rules.rulesets import RuleSet

SCHEMA = "azulsim.balance/1"
DEFAULT_BOT = "heuristic"  # the strongest bot that plays millions of games (docs/bots.md, ladder)

# (key in the document, key in the balance section, what it is) of the balance sheet's measures.
MEASURES = (
    (
        "balance",
        "balance",
        "1 - the largest gap between the win rates of two turn-order positions (round 1)",
    ),
    ("first_player", "first_player_win_rate", "win rate of the seat that starts round 1"),
    ("shared", "shared_win_rate", "games won by more than one player"),
    ("round_cap", "round_cap_rate", "games ended by the round cap"),
    ("rounds", "rounds", "rounds per game"),
    ("turns", "turns", "turns (picks, all seats) per game"),
    ("lead_changes", "lead_changes", "lead changes per game (leader after each wall tiling)"),
    ("decisive", "decisive", "round from which the winner leads for good (R + 1: the bonuses)"),
    (
        "bonus_decided",
        "decided_by_bonuses_rate",
        "games won by a seat trailing after the last round",
    ),
    ("margin", "margin", "final margin: winner minus the best other score"),
    ("decision_turns", "decision_turns", "turns with more than one legal pick, per game"),
    ("decision_share", "decision_turn_share", "share of the turns with more than one legal pick"),
    ("legal_actions", "legal_actions_mean", "legal picks per turn (all turns of all games)"),
)
# Measure -> the paired difference it reads (`sim.stats.balance.PAIRED_MEASURES`, or balance).
_PAIRED = {
    "balance": "balance",
    "shared": "shared",
    "round_cap": "round_cap_rate",
    "rounds": "rounds",
    "turns": "turns",
    "lead_changes": "lead_changes",
    "decisive": "decisive",
    "bonus_decided": "final",
    "margin": "margin",
    "decision_turns": "decision_turns",
    "decision_share": "decision_turn_share",
    "legal_actions": "legal_actions_mean",
}


def restricted_label(bot: str, element: str) -> str:
    """The canonical spec of `bot` forbidden `element`."""
    inner = parse_bot_spec(bot).label.replace(",", ";")
    return parse_bot_spec(f"restricted:bot={inner},never={element}").label


def balance_spec(
    rule_sets: list[str],
    players: list[int] = (2, 3, 4),
    bot: str = DEFAULT_BOT,
    elements: list[str] = ELEMENTS,
    games: int = 1000,
    seed: int = 0,
) -> JobSpec:
    """The job of a balance study (module docstring); ValueError names the bad argument."""
    if not rule_sets:
        raise ValueError("rule_sets must name at least one rule set")
    rules = [RuleSet.parse(r) for r in rule_sets]
    labels = [r.label for r in rules]
    if len(set(labels)) != len(labels):
        raise ValueError(f"rule_sets must be different rule sets; got {', '.join(labels)}")
    for e in elements:
        if e not in ELEMENTS:
            raise ValueError(f"elements must be among {', '.join(ELEMENTS)}; got {e!r}")
    bot = parse_bot_spec(bot).label
    configs, pairs = [], []
    for p in players:
        if p not in (2, 3, 4):
            raise ValueError(f"players must be 2, 3 or 4; got {p}")
        first = len(configs)
        for i, rule in enumerate(rules):
            if i:
                pairs.append([len(configs), first])
            configs.append(Configuration.under(rule, p, [bot] * p))
        for e in elements:
            configs.append(
                Configuration.under(rules[0], p, [restricted_label(bot, e)] + [bot] * (p - 1))
            )
    return JobSpec(configurations=configs, games=games, seed=seed, pairs=pairs)


def is_balance_job(spec: JobSpec) -> bool:
    """Whether `spec` has the shape `balance_spec` gives a job (nothing else marks it): seats
    rotated, every configuration one bot in every seat or that bot restricted in seat 0 against
    copies of it, rule sets paired (``pairs``) or restricted play, and no baseline, stopping rule,
    ratings or sweep. Such a job's statistics make a balance sheet (`balance_document`)."""
    if spec.baseline is not None or spec.stop or spec.ratings or spec.sweep:
        return False
    restricted = False
    for config in spec.configurations:
        if config.seating != "rotate":
            return False
        bot, *others = config.bots
        if any(b != others[0] for b in others):
            return False
        if bot != others[0]:
            first = parse_bot_spec(bot)
            never = first.params.get("never") if first.name == "restricted" else None
            if never not in ELEMENTS or bot != restricted_label(others[0], never):
                return False
            restricted = True
    return restricted or bool(spec.pairs)


def _interval(section: dict, key: str) -> tuple[Any, Any]:
    """(value, 95 % interval) of `key` in a balance section: a rate or a moment."""
    value = section[key]
    if isinstance(value, dict):
        return value["mean"], value["ci95"]
    if key == "balance":
        return value, section["balance_ci95"]
    return value, section[f"{key}_ci95"]


def balance_document(stats: dict[str, Any]) -> dict[str, Any]:
    """The balance sheet of a balance job from its statistics document (module docstring)."""
    spec = JobSpec.from_dict(stats["spec"])
    configs = stats["configurations"]
    paired = {k: base for k, base in spec.pairings()}
    tables: list[dict[str, Any]] = []
    by_players: dict[int, dict[str, Any]] = {}
    for k, config in enumerate(spec.configurations):
        cfg = configs[k]
        table = by_players.setdefault(
            config.players, {"players": config.players, "rule_sets": [], "restricted": []}
        )
        first = parse_bot_spec(config.bots[0])
        if first.name == "restricted":
            bot = cfg["bots"][config.bots[0]]
            table["restricted"].append(
                {
                    "element": first.params["never"],
                    "bot": first.params["bot"].replace(";", ","),
                    "rule_set": RuleSet.of(config, spec).label,
                    "configuration": k,
                    "games": cfg["games_finished"],
                    "win_rate": bot["win_rate"],
                    "win_rate_ci95": bot["win_rate_ci95"],
                    "fair_share": 1.0 / config.players,
                    "score": bot["score"]["mean"],
                    "opponents_score": _others_score(cfg, config.bots[0]),
                }
            )
            continue
        section = cfg["balance"]
        row: dict[str, Any] = {
            "rule_set": RuleSet.of(config, spec).label,
            "configuration": k,
            "bots": list(config.bots),
            "games": section["games"],
            "games_played": section["games_played"],
            "measures": {},
            "lead_change_histogram": section["lead_changes"]["histogram"],
            "decisive_histogram": section["decisive"]["histogram"],
            "comebacks": section["comebacks"],
            "position_win_rates": section["position_win_rates"],
        }
        diff = cfg.get("balance_paired") if k in paired else None
        for name, key, _what in MEASURES:
            value, ci = _interval(section, key)
            entry: dict[str, Any] = {"value": value, "ci95": ci}
            if diff is not None and (name in _PAIRED or name == "first_player"):
                d = diff["position_win_rates"][0] if name == "first_player" else diff[_PAIRED[name]]
                entry["diff"], entry["diff_ci95"] = d["mean"], d["ci95"]
            row["measures"][name] = entry
        if diff is not None:
            row["paired_with"] = paired[k]
            row["paired_games"] = diff["games"]
        table["rule_sets"].append(row)
    for players in sorted(by_players):
        table = by_players[players]
        table["restricted"].sort(key=lambda r: (r["win_rate"] is None, r["win_rate"]))
        tables.append(table)
    return {
        "schema": SCHEMA,
        "rules_version": stats.get("rules_version"),
        "measures": {name: what for name, _key, what in MEASURES},
        "tables": tables,
        "spec": stats["spec"],
    }


def _others_score(cfg: dict[str, Any], label: str) -> float | None:
    """Mean score of the bots other than `label` in a configuration."""
    total = n = 0.0
    for other, group in cfg["bots"].items():
        if other != label and group["score"]["mean"] is not None:
            total += group["score"]["mean"] * group["player_games"]
            n += group["player_games"]
    return total / n if n else None
