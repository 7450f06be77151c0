"""Sweeps: a bot parameter given as a range or a list expands to one configuration per value.

In a bot spec of ``--bots``, a parameter's value may be

- a range ``START..STOP/STEP`` (``heuristic:floor=0..3/0.5`` is 0, 0.5, ..., 3; STOP is included
  when the steps land on it), or
- a list ``v1|v2|v3`` (``heuristic:floor=0|1.5|4``).

At most two parameters may be swept (two make a grid, every combination, the first parameter
varying slowest); everything else in the spec is fixed. The swept bot must be the first bot
(``bots[0]``, the focal player). All configurations have the same players, seating and wall, so
they play the same deals and seats game for game (`sim.jobs.spec.JobSpec.baseline`), each paired
with the baseline: the first value (combination), or the one named. The job's ``sweep`` field lists
the swept parameters; its statistics then carry a ``sweep`` section (`sim.stats.focal`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

from sim.quote import shown

from ..bots.registry import get_bot_info, parse_bot_spec
from ..jobs.spec import Configuration, JobSpec

MAX_CONFIGURATIONS = 100  # a 10 x 10 grid; the service takes no more per job
MAX_SWEPT = 2
_RANGE = re.compile(r"^\s*(-?[0-9.eE+-]+)\s*\.\.\s*(-?[0-9.eE+-]+)\s*/\s*([0-9.eE+-]+)\s*$")


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number; got {shown(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite; got {shown(text)}")
    return value


def expand_range(text: str, where: str) -> list[str]:
    """The values of ``START..STOP/STEP`` as spec strings (``where`` names it in errors)."""
    m = _RANGE.match(text)
    if not m:
        raise ValueError(f"{where}: a range is START..STOP/STEP, e.g. 0..3/0.5; got {shown(text)}")
    start = _number(m.group(1), f"{where} START")
    stop = _number(m.group(2), f"{where} STOP")
    step = _number(m.group(3), f"{where} STEP")
    if step <= 0:
        raise ValueError(f"{where}: STEP must be positive; got {shown(m.group(3))}")
    if stop < start:
        raise ValueError(f"{where}: STOP must be at least START; got {shown(text)}")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_CONFIGURATIONS:
        raise ValueError(
            f"{where}: {shown(text)} has {count} values; a sweep holds at most {MAX_CONFIGURATIONS}"
        )
    # Rounded to 12 significant digits so that 0.1 steps print as 0.3, not 0.30000000000000004.
    return [_text(float(f"{start + i * step:.12g}")) for i in range(count)]


def _text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def swept_values(value: str, where: str) -> list[str] | None:
    """The values (as text) of a swept value: a range ``START..STOP/STEP`` or a list ``a|b|c``;
    None for a single value. `where` names it in errors."""
    if ".." in value:
        return expand_range(value, where)
    if "|" in value:
        values = [v.strip() for v in value.split("|")]
        if any(not v for v in values):
            raise ValueError(f"{where}: a list is v1|v2|...; got {shown(value)}")
        return values
    return None


def parse_swept_bot(text: str) -> tuple[str, list[tuple[str, list[str]]], list[str]]:
    """``(name, swept, fixed)``: the bot name, ``[(param, [value text, ...]), ...]`` for swept
    parameters, and the fixed ``key=value`` items."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    info = get_bot_info(name)  # an unknown bot: ValueError naming the known ones
    swept: list[tuple[str, list[str]]] = []
    fixed: list[str] = []
    if sep:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key:
                got = shown(item.strip())
                raise ValueError(f"bot {shown(name)}: expected key=value; got {got}")
            info.param(key)  # unknown parameter: ValueError naming the bot's parameters
            where = f"bot {shown(name)} parameter {shown(key)}"
            values = swept_values(value, where)
            if values is None:
                fixed.append(f"{key}={value.strip()}")
            else:
                swept.append((key, values))
    return name, swept, fixed


def parse_swept_rules(text: str | None) -> tuple[list[tuple[str, list[str]]], dict[str, str]]:
    """``(swept, fixed)`` of a rules text whose values may be ranges or lists
    (``column_bonus=3..10/1,wall=gray``): ``[("rules.KEY", [value text, ...]), ...]`` and the
    fixed ``{KEY: value text}``. Errors name ``rules.KEY``."""
    from ..rules.rulesets import _KEY_ALIASES, KEYS, PRINTED

    swept: list[tuple[str, list[str]]] = []
    fixed: dict[str, str] = {}
    if text is None or text.strip() in ("", PRINTED):
        return swept, fixed
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key = _KEY_ALIASES.get(key.strip(), key.strip())
        if not eq or key not in KEYS:
            raise ValueError(
                f"rules {shown(text)}: expected key=value with a key among {', '.join(KEYS)}; "
                f"got {shown(item.strip())}"
            )
        where = f"rules.{key}"
        if any(where == name for name, _ in swept) or key in fixed:
            raise ValueError(f"rules {shown(text)}: {key} is given twice")
        value = value.strip()
        values = swept_values(value, where)
        if values is None:
            fixed[key] = value
        else:
            swept.append((where, values))
    return swept, fixed


def _lineup(bots: Sequence[str], players: int, where: str) -> list[str]:
    bots = list(bots)
    if len(bots) < players:
        bots = bots + [bots[-1]] * (players - len(bots))
    if len(bots) != players:
        raise ValueError(
            f"{where} must name at most {players} bots (one per seat); got {len(bots)}"
        )
    return bots


def sweep_spec(
    bots: Sequence[str] | Sequence[Sequence[str]],
    games: int,
    seed: int = 0,
    players: int | Sequence[int] | None = None,
    wall: str | None = None,
    seating: str = "rotate",
    baseline: str | None = None,
    max_rounds: int | None = None,
    rules: str | None = None,
) -> JobSpec:
    """The job of a sweep: `bots` one spec per seat (one bot fills the seats left when
    ``players`` is larger), the first with swept parameters; and `rules` (``printed`` or
    ``key=value,...``, `sim.rules.rulesets`) the rules every game plays under, of which some may be
    swept too (``column_bonus=3..10/1``). One or two parameters are swept in all, bot's and
    rules' together (a grid; the bot's first, each varying slower than the next).

    Several line-ups (`bots` a list of lists) and player counts (`players` a list) make one job:
    every line-up at every player count sweeps the same values, in groups of configurations one
    after another (line-up by line-up, its player counts within), each value paired with its own
    group's baseline on the same deals and seats where their rules deal alike
    (`sim.jobs.spec.JobSpec.sweep_groups`).

    `baseline` names the baseline value as a spec (``heuristic:floor=1``) or the swept values
    (``floor=1``, ``rules.column_bonus=7`` or ``column_bonus=7``); default the first value.
    """
    from ..rules.rulesets import RuleSet

    lineups = [list(bots)] if not bots or isinstance(bots[0], str) else [list(b) for b in bots]
    counts = [players] if players is None or isinstance(players, int) else list(players)
    if not counts:
        raise ValueError("players must name at least one player count")
    for n, lineup in enumerate(lineups):
        where = "bots" if len(lineups) == 1 else f"bots[{n}]"
        if not lineup:
            raise ValueError(f"{where} must name at least the swept bot")
    rule_swept, rule_fixed = parse_swept_rules(rules)
    base_rules = RuleSet()
    for key, text in rule_fixed.items():
        base_rules = base_rules.with_value(key, text)
    if wall is not None:
        if "wall" in rule_fixed or any(n == "rules.wall" for n, _ in rule_swept):
            raise ValueError("give the wall once: with wall or among the rules")
        base_rules = base_rules.with_value("wall", wall)
    parsed = []
    for n, lineup in enumerate(lineups):
        where = "bots" if len(lineups) == 1 else f"bots[{n}]"
        if len(lineup) == 1:
            raise ValueError(
                f"{where} must name the swept bot and its opponents, e.g. "
                "heuristic:floor=0..3/1,greedy"
            )
        name, swept, fixed = parse_swept_bot(lineup[0])
        for i, other in enumerate(lineup[1:], start=1):
            if ".." in other or "|" in other:
                raise ValueError(
                    f"{where}[{i}]: only the first bot (the focal player) may be swept"
                )
        parsed.append((name, swept, fixed))
    if any(p[1] != parsed[0][1] for p in parsed):
        raise ValueError("every line-up's first bot must sweep the same parameters and values")
    swept = parsed[0][1] + rule_swept
    if not swept:
        raise ValueError(
            f"bots[0] ({shown(lineups[0][0])}) sweeps no parameter and neither do the rules: give "
            "one as START..STOP/STEP or v1|v2 (heuristic:floor=0..3/1, rules column_bonus=3..10/1)"
        )
    if len(swept) > MAX_SWEPT:
        raise ValueError(
            f"the sweep has {len(swept)} swept parameters; at most {MAX_SWEPT} (a grid)"
        )
    names = [key for key, _ in swept]
    combos = list(itertools.product(*(values for _, values in swept)))
    total = len(combos) * len(lineups) * len(counts)
    if total > MAX_CONFIGURATIONS:
        raise ValueError(
            f"the sweep has {total} configurations; at most {MAX_CONFIGURATIONS} per job"
        )
    bot_names = [n for n in names if not n.startswith("rules.")]
    configs: list[Configuration] = []
    for lineup, (name, _, fixed) in zip(lineups, parsed, strict=True):
        for count in counts:
            table = _lineup(lineup, count or max(2, len(lineup)), "bots")
            opponents = {parse_bot_spec(b).label for b in table[1:]}
            labels: dict[tuple, str] = {}
            for combo in combos:
                values = dict(zip(names, combo, strict=True))
                focal = table[0]
                if bot_names:
                    items = [f"{k}={values[k]}" for k in bot_names] + fixed
                    focal = parse_bot_spec(f"{name}:{','.join(items)}").label
                    if focal in opponents:
                        raise ValueError(
                            f"sweep value {shown(focal)} is the same bot as an opponent; its "
                            "statistics would merge with the opponent's: give the opponent other "
                            "parameters"
                        )
                    labels[tuple(values[k] for k in bot_names)] = focal
                ruleset = base_rules
                for key in names:
                    if key.startswith("rules."):
                        ruleset = ruleset.with_value(key[len("rules.") :], values[key])
                configs.append(
                    Configuration.under(ruleset, len(table), (focal, *table[1:]), seating)
                )
            if len(set(labels.values())) != len(labels):
                raise ValueError(f"sweep values give the same bot twice: {list(labels.values())}")
    base = 0
    if baseline is not None:
        base = _baseline_index(baseline, parsed[0][0], parsed[0][2], names, combos)
    extra: dict[str, Any] = {} if max_rounds is None else {"max_rounds": max_rounds}
    return JobSpec(
        tuple(configs), games=games, seed=seed, baseline=base, sweep=tuple(names), **extra
    )


def _baseline_index(
    text: str, name: str, fixed: list[str], names: list[str], combos: list[tuple]
) -> int:
    """The configuration of the baseline value: a full spec, or ``key=value,...`` of the swept
    parameters (the fixed ones are added; a rule as ``rules.KEY`` or ``KEY``)."""
    from ..rules.rulesets import _KEY_ALIASES, RuleSet

    bot_names = [n for n in names if not n.startswith("rules.")]
    items = dict(item.split("=", 1) for item in fixed)
    wanted: dict[str, str] = {}
    body = text.partition(":")[2] if ":" in text and "=" not in text.partition(":")[0] else text
    for item in filter(None, (x.strip() for x in body.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise ValueError(f"baseline: expected key=value; got {shown(item)}")
        if key in bot_names or not (key.startswith("rules.") or f"rules.{key}" in names):
            items[key] = value
        else:
            bare = key.removeprefix("rules.")
            wanted["rules." + _KEY_ALIASES.get(bare, bare)] = value

    def rule(key: str, value: str) -> RuleSet:
        return RuleSet().with_value(key.removeprefix("rules."), value, "baseline")

    try:
        label = None
        if bot_names:
            body = ",".join(f"{k}={v}" for k, v in items.items())
            label = parse_bot_spec(f"{name}:{body}" if body else name).label
        want = {k: rule(k, v) for k, v in wanted.items()}
    except ValueError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith("baseline") else f"baseline: {text}") from None
    missing = [n for n in names if n.startswith("rules.") and n not in want]
    if missing:
        raise ValueError(f"baseline must give {', '.join(missing)} (a swept rule)")
    for k, combo in enumerate(combos):
        values = dict(zip(names, combo, strict=True))
        same_bot = (
            label is None
            or parse_bot_spec(
                f"{name}:{','.join([f'{b}={values[b]}' for b in bot_names] + fixed)}"
            ).label
            == label
        )
        same_rules = all(
            rule(key, values[key]) == want[key] for key in names if key.startswith("rules.")
        )
        if same_bot and same_rules:
            return k
    shown_values = "; ".join(",".join(f"{n}={v}" for n, v in zip(names, c, strict=True))
                             for c in combos)  # fmt: skip
    raise ValueError(
        f"baseline must be one of the sweep's values ({shown_values}); got {shown(text)}"
    )
