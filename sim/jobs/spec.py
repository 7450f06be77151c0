"""The job spec: one model for the CLI, the service and the workers (docs/design.md, "Jobs").

A job is a list of *configurations* (player count, one bot spec per seat, seating rule, wall), a
number of games per configuration, a seed and a round cap. Everything here is validated once, on
construction, with errors that name the field path, the bad value and what is allowed::

    configurations[0].players must be 2, 3 or 4; got 5

JSON form (`JobSpec.to_json` / `JobSpec.from_json`; the dict form is the same). It is the one
job-spec format: spec files (``azulsim simulate/submit --spec``), the Python client and the docs
use it::

    {"configurations": [{"players": 2, "bots": ["greedy", "random"],
                         "seating": "rotate", "wall": "coloured"}],
     "games": 1000, "seed": 7, "max_rounds": 100}

Only ``configurations`` and each one's ``bots`` are required; the rest default as on the command
line: ``players`` to the number of bots, ``games`` to 1000 (`DEFAULT_GAMES`), ``seed`` to 0,
``seating`` to rotate, ``wall`` to coloured, ``max_rounds`` to 100 (a configuration's own
``max_rounds``, when given, overrides the job's for its games). A configuration's ``rules``
(`sim.rules.rulesets`: ``{"column_bonus": 5, "floor": [1, 2, 3], "marker": "off"}``, the printed
game's when left out, and left out of the JSON then) holds its other rules. ``pairs``
(``[[k, b], ...]``) pairs configuration k with baseline b game for game.

Bot specs are checked through the registry (`sim.bots.registry`) and stored in their canonical
form (`BotSpec.label`), so two spellings of the same bot give the same spec, the same JSON and the
same statistics keys. ``"colored"`` is accepted for ``"coloured"`` and ``"grey"`` for ``"gray"``.

This module also holds the two per-game draws the play layer needs before the first turn:
`seat_assignment` (which bot sits where) and `first_player` (who starts round 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..bots.registry import BotSpec, get_bot_info, parse_bot_spec
from ..bots.supports import refusal
from ..quote import shown
from ..rules import rng
from ..rules.constants import DEFAULT_MAX_ROUNDS, WALLS
from ..rules.rulesets import _KEY_ALIASES, KEYS, PRINTED_RULES, RuleSet
from .stopping import StopRule

PLAYERS = (2, 3, 4)
SEATINGS = ("rotate", "fixed", "shuffle", "mirrored")
WALL_ALIASES = {"colored": "coloured", "grey": "gray"}
DEFAULT_GAMES = 1000  # games per configuration when a spec gives none (as the CLI)
DEFAULT_SEED = 0
MAX_SEED = 2**63 - 1
MAX_ROUNDS_LIMIT = 1000


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _fail(path: str, what: str, value: Any) -> ValueError:
    return ValueError(f"{path} must be {what}; got {shown(value)}")


@dataclass(frozen=True)
class Configuration:
    """One table set-up: player count, a bot spec per seat, seating rule and wall.

    Parameters
    ----------
    players : 2, 3 or 4
    bots : one bot spec string per seat (``len(bots) == players``); stored canonically
    seating : ``"rotate"`` (default), ``"fixed"``, ``"shuffle"`` or ``"mirrored"``; see
        `seat_assignment` and `deal_keys`
    wall : ``"coloured"`` (default) or ``"gray"``; ``"colored"`` and ``"grey"`` are aliases
    max_rounds : this configuration's round cap (RULES §10.6), 1 .. 1000, or None (default) for
        the job's
    rules : the configuration's other rules (`sim.rules.rulesets.RuleSet`: bonuses, floor,
    factories,
        tiles, marker, end of game), default the printed game's; with `wall` and the round cap
        they are the configuration's rule set (`RuleSet.of`). Its own wall and round cap are
        unused (always the defaults): those two are the configuration's fields.
    """

    players: int
    bots: tuple[str, ...]
    seating: str = "rotate"
    wall: str = "coloured"
    max_rounds: int | None = None
    rules: RuleSet = PRINTED_RULES
    _specs: tuple[BotSpec, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        self._validate("configuration")

    def _validate(self, path: str) -> None:
        if not _is_int(self.players) or self.players not in PLAYERS:
            raise _fail(f"{path}.players", "2, 3 or 4", self.players)
        bots = self.bots
        if isinstance(bots, str) or not isinstance(bots, list | tuple):
            raise _fail(f"{path}.bots", "a list of bot specs, one per seat", bots)
        if len(bots) != self.players:
            raise ValueError(
                f"{path}.bots must name one bot per seat ({self.players}); got {len(bots)}: "
                f"{shown(list(bots), 80)}"
            )
        specs = []
        for i, text in enumerate(bots):
            try:
                specs.append(parse_bot_spec(text))
            except ValueError as exc:
                raise ValueError(f"{path}.bots[{i}]: {exc}") from None
        if not isinstance(self.seating, str) or self.seating not in SEATINGS:
            raise _fail(f"{path}.seating", "one of " + ", ".join(SEATINGS), self.seating)
        wall = WALL_ALIASES.get(self.wall, self.wall) if isinstance(self.wall, str) else self.wall
        if wall not in WALLS:
            raise _fail(f"{path}.wall", "one of " + ", ".join(WALLS), self.wall)
        cap = self.max_rounds
        if cap is not None and (not _is_int(cap) or not 1 <= cap <= MAX_ROUNDS_LIMIT):
            raise _fail(f"{path}.max_rounds", f"an integer between 1 and {MAX_ROUNDS_LIMIT}", cap)
        object.__setattr__(self, "max_rounds", None if cap is None else int(cap))
        rules = self.rules
        if not isinstance(rules, RuleSet):
            rules = RuleSet.from_dict(rules, f"{path}.rules")
        if rules.wall != "coloured" or rules.max_rounds != DEFAULT_MAX_ROUNDS:
            raise ValueError(
                f"{path}.rules: give the wall and the round cap as the configuration's own wall "
                "and max_rounds"
            )
        object.__setattr__(self, "rules", rules)
        for i, spec in enumerate(specs):  # a bot that declares it cannot play this table
            reason = refusal(spec, int(self.players), wall)
            if reason is not None:
                raise ValueError(f"{path}.bots[{i}]: bot {shown(spec.label)} refused: {reason}")
        object.__setattr__(self, "players", int(self.players))
        object.__setattr__(self, "bots", tuple(s.label for s in specs))
        object.__setattr__(self, "wall", wall)
        object.__setattr__(self, "_specs", tuple(specs))

    @classmethod
    def under(cls, rule_set: RuleSet, players: int, bots, seating: str = "rotate") -> Configuration:
        """The configuration of `bots` playing under a full rule set (its wall and round cap
        become the configuration's own; the round cap set only when it is not the default, so a
        printed configuration is the plain one)."""
        cap = None if rule_set.max_rounds == DEFAULT_MAX_ROUNDS else rule_set.max_rounds
        rest = replace(rule_set, wall="coloured", max_rounds=DEFAULT_MAX_ROUNDS)
        return cls(players, tuple(bots), seating, rule_set.wall, cap, rest)

    @property
    def bot_specs(self) -> tuple[BotSpec, ...]:
        """The parsed spec of each seat's bot (index = position in `bots`)."""
        return self._specs

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "players": self.players,
            "bots": list(self.bots),
            "seating": self.seating,
            "wall": self.wall,
        }
        if self.max_rounds is not None:  # only when set: older specs keep their JSON
            out["max_rounds"] = self.max_rounds
        if not self.rules.printed:  # likewise
            out["rules"] = self.rules.changed()
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "configuration") -> Configuration:
        """Build from a dict, naming `path` in errors (e.g. ``configurations[1]``)."""
        if not isinstance(data, Mapping):
            raise _fail(path, "an object", data)
        _check_keys(data, {"players", "bots", "seating", "wall", "max_rounds", "rules"}, path)
        if "bots" not in data:
            raise ValueError(f"{path}.bots is required")
        bots = data["bots"]
        if isinstance(bots, list):
            bots = tuple(bots)
        players = data.get("players", len(bots) if isinstance(bots, tuple) else None)
        obj = object.__new__(cls)
        object.__setattr__(obj, "players", players)
        object.__setattr__(obj, "bots", bots)
        object.__setattr__(obj, "seating", data.get("seating", "rotate"))
        own = {"wall": data.get("wall"), "max_rounds": data.get("max_rounds")}
        rules = data.get("rules", {})
        if isinstance(rules, Mapping):  # the wall and round cap may be given among the rules
            rules = dict(rules)
            for key in own:
                if key not in rules:
                    continue
                if own[key] is not None and own[key] != rules[key]:
                    raise ValueError(f"{path}.rules.{key} differs from {path}.{key}; give it once")
                own[key] = rules.pop(key)
        wall, cap = own["wall"], own["max_rounds"]
        object.__setattr__(obj, "wall", "coloured" if wall is None else wall)
        object.__setattr__(obj, "max_rounds", cap)
        object.__setattr__(obj, "rules", RuleSet.from_dict(rules, f"{path}.rules"))
        obj._validate(path)
        return obj


def _check_keys(data: Mapping, allowed: set[str], path: str) -> None:
    for key in data:
        if key not in allowed:
            raise ValueError(
                f"{path}: unknown field {shown(key)} (allowed: {', '.join(sorted(allowed))})"
            )


@dataclass(frozen=True)
class Ratings:
    """Fit ratings of the job's bots from all its configurations (`sim.stats.ratings`): a
    tournament. `anchor` is the canonical label of the bot rated 0 on the Elo scale."""

    anchor: str

    def to_dict(self) -> dict[str, Any]:
        return {"anchor": self.anchor}

    @classmethod
    def from_dict(cls, data: Any, labels: list[str], path: str = "ratings") -> Ratings:
        if isinstance(data, Ratings):
            data = data.to_dict()
        if not isinstance(data, Mapping):
            raise _fail(path, "an object", data)
        _check_keys(data, {"anchor"}, path)
        if "anchor" not in data:
            raise ValueError(f"{path}.anchor is required")
        try:
            label = parse_bot_spec(data["anchor"]).label
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}.anchor: {exc}") from None
        if label not in labels:
            raise _fail(
                f"{path}.anchor",
                "a bot of the configurations (" + ", ".join(labels) + ")",
                data["anchor"],
            )
        return cls(label)


@dataclass(frozen=True)
class JobSpec:
    """A batch: configurations, games per configuration, seed and round cap.

    Parameters
    ----------
    configurations : at least one `Configuration` (dicts are accepted and converted)
    games : games per configuration, at least 1; game indices are ``0..games-1`` in each
    seed : 0 .. 2**63-1
    max_rounds : round cap of RULES §10.6, 1 .. 1000 (default 100)
    baseline : index of the baseline configuration, or None. Every other configuration with the
        baseline's players and wall (`paired_configurations`) plays the same deals and seats game
        for game (same seating rule required) and gets paired differences to it.
    stop : a `sim.jobs.stopping.StopRule` (a dict is accepted), or None; `games` is then the maximum
    ratings : a `Ratings` (a dict ``{"anchor": bot}`` is accepted), or None: the statistics then
        hold Bradley–Terry ratings of every bot over all configurations (a tournament)
    sweep : names of the one or two parameters that the configurations vary
    (`sim.experiments.sweep`): a
        parameter of the focal bot (``bots[0]``) or a rule, ``rules.KEY`` (``rules.column_bonus``),
        or None; needs a baseline. Configurations that differ in nothing else are a group (a
        line-up at a player count, `sweep_groups`), every group holding the same values; each
        value is paired with its group's baseline value where their rules deal alike. The
        statistics then hold a ``sweep`` section, one row per configuration
    game_records : write every game's record (`sim.jobs.gamerows`) to the cluster's games directory
        (service jobs; ``azulsim export`` gathers them); not with a stopping rule
    pairs : ``(configuration, baseline)`` index pairs, each configuration paired game for game
        with a baseline of its own (same players, seating and bots; any rule set): rule sets
        compared at several player counts in one job (`sim.experiments.balance_lab`). A
        configuration is paired at most once, and not also through `baseline`
    """

    configurations: tuple[Configuration, ...]
    games: int
    seed: int
    max_rounds: int = DEFAULT_MAX_ROUNDS
    baseline: int | None = None
    stop: StopRule | None = None
    ratings: Ratings | None = None
    sweep: tuple[str, ...] | None = None
    game_records: bool = False
    pairs: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        configs = self.configurations
        if isinstance(configs, Mapping | str) or not isinstance(configs, list | tuple):
            raise _fail("configurations", "a list of configurations", configs)
        if not configs:
            raise ValueError("configurations must hold at least one configuration; got []")
        checked = []
        for k, c in enumerate(configs):
            path = f"configurations[{k}]"
            if isinstance(c, Configuration):
                checked.append(c)
            else:
                checked.append(Configuration.from_dict(c, path))
        if not _is_int(self.games) or self.games < 1:
            raise _fail("games", "an integer of at least 1", self.games)
        if not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED:
            raise _fail("seed", "an integer between 0 and 2**63-1", self.seed)
        if not _is_int(self.max_rounds) or not 1 <= self.max_rounds <= MAX_ROUNDS_LIMIT:
            raise _fail(
                "max_rounds", f"an integer between 1 and {MAX_ROUNDS_LIMIT}", self.max_rounds
            )
        object.__setattr__(self, "configurations", tuple(checked))
        for name in ("games", "seed", "max_rounds"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for k, c in enumerate(checked):
            if c.seating == "mirrored" and self.games % c.players:
                raise ValueError(
                    f"games must be a multiple of configurations[{k}].players ({c.players}) for "
                    f"mirrored seating (whole groups of {c.players} games on one deal); got "
                    f"{self.games}"
                )
        if self.baseline is not None:
            b = self.baseline
            if not _is_int(b) or not 0 <= b < len(checked):
                raise _fail("baseline", f"a configuration index in 0..{len(checked) - 1}", b)
            object.__setattr__(self, "baseline", int(b))
        if self.sweep is not None:
            object.__setattr__(self, "sweep", _check_sweep(self.sweep, checked, self.baseline))
            self.sweep_groups()  # its errors now
        if self.baseline is not None:
            b = self.baseline
            for k in self.paired_configurations():
                if checked[k].seating != checked[b].seating:
                    raise ValueError(
                        f"configurations[{k}].seating must be the baseline's "
                        f"({shown(checked[b].seating)}) to pair game for game; got "
                        f"{shown(checked[k].seating)}"
                    )
        if self.stop is not None:
            stop = self.stop if isinstance(self.stop, StopRule) else StopRule.from_dict(self.stop)
            object.__setattr__(self, "stop", stop)
            stop.check_against(self)
        if self.ratings is not None:
            labels = list(dict.fromkeys(b for c in checked for b in c.bots))
            object.__setattr__(self, "ratings", Ratings.from_dict(self.ratings, labels))
        object.__setattr__(self, "pairs", _check_pairs(self.pairs, checked, self))
        if not isinstance(self.game_records, bool):
            raise _fail("game_records", "true or false", self.game_records)
        if self.game_records and self.stop is not None:
            raise ValueError(
                "game_records cannot be combined with a stopping rule (the games past the stop "
                "are played but not counted)"
            )

    def paired_configurations(self) -> list[int]:
        """Indices of the configurations paired with the baseline (same players and wall, and rules
        that deal alike, `RuleSet.deals_like`; the baseline itself excluded); empty without a
        baseline."""
        if self.baseline is None:
            return []
        members = range(len(self.configurations))
        if self.sweep is not None:  # a sweep's baseline pairs its own group (`sweep_groups`)
            members = next(g for g in self.sweep_groups() if self.baseline in g)
        return self._paired_with(self.baseline, members)

    def _paired_with(self, b: int, members) -> list[int]:
        base = self.configurations[b]
        return [
            k
            for k in members
            if k != b
            and self.configurations[k].players == base.players
            and self.configurations[k].wall == base.wall
            and self.configurations[k].rules.deals_like(base.rules, base.players)
        ]

    def sweep_groups(self) -> list[list[int]]:
        """A sweep's configurations by line-up and player count: groups of indices that differ
        only in the swept values, each holding the same values in the same order (one group
        for a sweep of one line-up at one player count); ``[]`` without a sweep."""
        if self.sweep is None:
            return []
        cached = self.__dict__.get("_groups")  # the spec is frozen: worked out once
        if cached is None:
            cached = _sweep_groups(self)
            object.__setattr__(self, "_groups", cached)
        return [list(g) for g in cached]

    def sweep_baselines(self) -> list[int]:
        """The baseline of each sweep group (`sweep_groups`): its configuration of the baseline's
        swept values."""
        groups = self.sweep_groups()
        at = next(g.index(self.baseline) for g in groups if self.baseline in g)
        return [g[at] for g in groups]

    def pairings(self) -> list[tuple[int, int]]:
        """Every ``(configuration, baseline)`` pair played game for game: those of `baseline`
        (`paired_configurations`), those of every other sweep group with its own baseline
        (`sweep_baselines`), then `pairs`."""
        return self._own_pairings() + list(self.pairs)

    def _own_pairings(self) -> list[tuple[int, int]]:
        base = [(k, self.baseline) for k in self.paired_configurations()]
        groups = self.sweep_groups()
        for g, b in zip(groups, self.sweep_baselines() if groups else [], strict=True):
            if b != self.baseline:
                base += [(k, b) for k in self._paired_with(b, g)]
        return base

    def max_rounds_of(self, config: Configuration) -> int:
        """The round cap `config` plays under: its own, else the job's."""
        return self.max_rounds if config.max_rounds is None else config.max_rounds

    @property
    def group_size(self) -> int:
        """Games a chunk boundary must keep together: the least common multiple of the player
        counts of the mirrored configurations (1 when there are none)."""
        return math.lcm(*(c.players for c in self.configurations if c.seating == "mirrored"))

    @property
    def joint_chunks(self) -> bool:
        """Whether a chunk plays its game range in every configuration at once (paired
        configurations and stopping rules need the outcomes of game g of all of them together)."""
        return self.baseline is not None or self.stop is not None or bool(self.pairs)

    @property
    def total_games(self) -> int:
        """Games in the whole job: ``games * len(configurations)``."""
        return self.games * len(self.configurations)

    @property
    def cost(self) -> float:
        """Time per game of the slowest configuration relative to `greedy` self-play (the
        registry's bot costs, summed over the seats, over the seat count)."""
        return max(
            sum(get_bot_info(b.name).cost_of(b.params) for b in c.bot_specs) / c.players
            for c in self.configurations
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "configurations": [c.to_dict() for c in self.configurations],
            "games": self.games,
            "seed": self.seed,
            "max_rounds": self.max_rounds,
        }
        # Optional keys only when set, so that specs without them keep their JSON (and digests).
        if self.baseline is not None:
            out["baseline"] = self.baseline
        if self.stop is not None:
            out["stop"] = self.stop.to_dict()
        if self.ratings is not None:
            out["ratings"] = self.ratings.to_dict()
        if self.sweep is not None:
            out["sweep"] = list(self.sweep)
        if self.game_records:
            out["game_records"] = True
        if self.pairs:
            out["pairs"] = [list(p) for p in self.pairs]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> JobSpec:
        if not isinstance(data, Mapping):
            raise _fail("job spec", "an object", data)
        _check_keys(
            data,
            {
                "configurations",
                "games",
                "seed",
                "max_rounds",
                "baseline",
                "stop",
                "ratings",
                "sweep",
                "game_records",
                "pairs",
            },
            "job spec",
        )
        if "configurations" not in data:
            raise ValueError("configurations is required")
        return cls(
            configurations=data["configurations"],
            games=data.get("games", DEFAULT_GAMES),
            seed=data.get("seed", DEFAULT_SEED),
            max_rounds=data.get("max_rounds", DEFAULT_MAX_ROUNDS),
            baseline=data.get("baseline"),
            stop=data.get("stop"),
            ratings=data.get("ratings"),
            sweep=data.get("sweep"),
            game_records=data.get("game_records", False),
            pairs=data.get("pairs", ()),
        )

    def to_json(self) -> str:
        """Compact, key-ordered JSON; equal specs give byte-identical text."""
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> JobSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"job spec is not valid JSON: {exc}") from None
        return cls.from_dict(data)


def _check_pairs(pairs: Any, configs: list[Configuration], spec: JobSpec) -> tuple:
    """`JobSpec.pairs` as a tuple of ``(configuration, baseline)`` int pairs, checked."""
    if isinstance(pairs, str | Mapping) or not isinstance(pairs, list | tuple):
        raise _fail("pairs", "a list of [configuration, baseline] index pairs", pairs)
    out = []
    taken = {k for k, _ in spec._own_pairings()}
    for i, pair in enumerate(pairs):
        ok = isinstance(pair, list | tuple) and len(pair) == 2 and all(map(_is_int, pair))
        if not ok or not all(0 <= x < len(configs) for x in pair) or pair[0] == pair[1]:
            raise _fail(
                f"pairs[{i}]",
                f"two different configuration indices in 0..{len(configs) - 1}",
                list(pair) if isinstance(pair, tuple) else pair,
            )
        k, b = int(pair[0]), int(pair[1])
        if k in taken:
            raise ValueError(f"pairs[{i}]: configuration {k} is already paired")
        a, base = configs[k], configs[b]
        for name in ("players", "seating", "bots"):
            if getattr(a, name) != getattr(base, name):
                raise ValueError(
                    f"pairs[{i}]: configurations[{k}].{name} must be the baseline's "
                    f"(configurations[{b}]) to pair game for game; got {shown(getattr(a, name))}"
                )
        taken.add(k)
        out.append((k, b))
    return tuple(out)


RULE_PREFIX = "rules."  # a swept rule: ``rules.column_bonus`` (`sim.experiments.sweep`)


def _rule_key(name: str) -> str | None:
    """The rule key of a swept name ``rules.KEY`` (aliases taken), or None for a bot parameter."""
    if not name.startswith(RULE_PREFIX):
        return None
    key = name[len(RULE_PREFIX) :]
    key = _KEY_ALIASES.get(key, key)
    return key if key in KEYS else ""


def _check_sweep(sweep: Any, configs: list[Configuration], baseline: int | None) -> tuple:
    if isinstance(sweep, str) or not isinstance(sweep, list | tuple):
        raise _fail("sweep", "a list of one or two parameter names", sweep)
    if not 1 <= len(sweep) <= 2 or len(set(sweep)) != len(sweep):
        raise _fail("sweep", "one or two different parameter names", list(sweep))
    if baseline is None:
        raise ValueError("sweep needs a baseline (the configuration the others pair with)")
    focal = configs[0].bot_specs[0]
    names = []
    for i, name in enumerate(sweep):
        key = _rule_key(name) if isinstance(name, str) else None
        if key == "":
            raise _fail(f"sweep[{i}]", "rules.KEY with KEY among " + ", ".join(KEYS), name)
        if key is not None:
            names.append(RULE_PREFIX + key)
            continue
        if not isinstance(name, str) or name not in focal.params:
            raise _fail(
                f"sweep[{i}]",
                f"a parameter of the focal bot {shown(focal.name)} ("
                + ", ".join(focal.params)
                + ") or rules.KEY",
                name,
            )
        names.append(name)
    if len(set(names)) != len(names):
        raise _fail("sweep", "one or two different parameter names", list(sweep))
    if any(_rule_key(n) is None for n in names):  # a bot parameter: one swept bot throughout
        for k, c in enumerate(configs):
            if c.bot_specs[0].name != focal.name:
                where = f"configurations[{k}].bots[0]"
                raise _fail(where, f"the swept bot {shown(focal.name)}", c.bots[0])
    return tuple(names)


def sweep_value(spec: JobSpec, k: int, name: str) -> Any:
    """Configuration `k`'s value of swept parameter `name` (JSON-ready): a parameter of its focal
    bot, or a rule of its rule set (``rules.KEY``)."""
    config = spec.configurations[k]
    key = _rule_key(name)
    if key is None:
        return config.bot_specs[0].params[name]
    return RuleSet.of(config, spec).to_dict()[key]


def _sweep_groups(spec: JobSpec) -> list[list[int]]:
    """A sweep's configurations in groups: those that differ only in the swept values (the same
    players, seating, line-up and other rules), each group holding the same values in the same
    order, so that every line-up and player count of one job sweeps alike
    (`sim.experiments.sweep`)."""
    from dataclasses import replace

    names = spec.sweep
    rule_keys = {_rule_key(n) for n in names} - {None}
    bot_params = [n for n in names if _rule_key(n) is None]
    groups: dict[Any, list[int]] = {}
    for k, c in enumerate(spec.configurations):
        focal = c.bot_specs[0]
        fixed = tuple(sorted((p, v) for p, v in focal.params.items() if p not in bot_params))
        rules = RuleSet.of(c, spec)
        rest = replace(rules, **{key: getattr(RuleSet(), key) for key in rule_keys})
        key = (c.players, c.seating, c.bots[1:], focal.name, fixed, rest)
        groups.setdefault(key, []).append(k)
    out = list(groups.values())
    values = [[tuple(_hashable(sweep_value(spec, k, n)) for n in names) for k in g] for g in out]
    for g, vals in enumerate(values):
        if len(set(vals)) != len(vals):
            k = out[g][next(i for i, v in enumerate(vals) if vals.index(v) != i)]
            raise ValueError(
                f"configurations[{k}]: sweep values repeat another configuration's "
                f"({', '.join(names)}): every value once per line-up and player count"
            )
        if vals != values[0]:
            raise ValueError(
                f"configurations[{out[g][0]}]: every line-up and player count of a sweep must "
                f"sweep the same values in the same order as configurations[{out[0][0]}]'s "
                f"({', '.join(names)})"
            )
    return out


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def seat_assignment(config: Configuration, seed: int, games) -> np.ndarray:
    """Which bot sits in each seat of each game.

    Parameters
    ----------
    config : the configuration (its `players` and `seating` are used)
    seed : the job seed
    games : (N,) int array of game indices

    Returns
    -------
    seat_bot : (N, P) int8; ``seat_bot[i, p]`` is the index into ``config.bots`` of the bot in seat
        ``p`` of game ``games[i]``. Each row is a permutation of ``0..P-1``.

    Notes
    -----
    - ``fixed``: seat ``p`` gets bot ``p`` in every game.
    - ``rotate``: game ``g`` uses rotation ``g mod P``: seat ``p`` gets bot ``(p + g) % P``. Over
      any ``P`` consecutive games every bot plays every seat exactly once, so a job whose game
      count is a multiple of ``P`` is exactly balanced.
    - ``mirrored``: the same seats as ``rotate``; game ``g`` is game ``g mod P`` of mirrored group
      ``g // P``, and the ``P`` games of a group share one deal and start seat (`deal_keys`), so
      over a group every bot sits in every seat, and starts, exactly once on the same tiles.
    - ``shuffle``: an independent uniform permutation per game, by Fisher–Yates run on all games
      at once: starting from the identity, for ``k = 0 .. P-2`` with ``i = P-1-k``, swap positions
      ``i`` and ``j = pick(u_k, i + 1)``, where ``u_k`` is the game's DEAL-stream draw at counter
      ``SEATING_COUNTER + k`` (`sim.rules.rng`). It depends only on ``(seed, g, P)``.
    """
    games = np.asarray(games, dtype=np.int64).reshape(-1)
    players = config.players
    seats = np.arange(players, dtype=np.int64)
    if config.seating == "fixed":
        out = np.broadcast_to(seats, (games.size, players))
    elif config.seating in ("rotate", "mirrored"):
        out = (seats[None, :] + games[:, None]) % players
    else:
        out = np.broadcast_to(seats, (games.size, players)).copy()
        keys = rng.game_keys(seed, games, rng.DEAL)
        rows = np.arange(games.size)
        for k in range(players - 1):
            i = players - 1 - k
            j = rng.pick(rng.uniform32(keys, rng.SEATING_COUNTER + k), i + 1)
            at_i = out[:, i].copy()
            out[:, i] = out[rows, j]
            out[rows, j] = at_i
    return np.ascontiguousarray(out, dtype=np.int8)


def deal_keys(seed: int, games, players: int, seating: str = "rotate") -> np.ndarray:
    """The deal-stream key of each game: tile draws and the start seat come from it.

    Parameters
    ----------
    seed : the job seed
    games : (N,) int array of game indices
    players, seating : of the configuration

    Returns
    -------
    keys : (N,) uint64. ``rng.game_keys(seed, g, DEAL)``, except for ``mirrored`` seating, where
        all ``P`` games of group ``g // P`` share ``rng.game_keys(seed, g // P, MIRRORED_DEAL)``:
        the same tiles, refills and start seat. Either way a function of (seed, g, configuration).
    """
    games = np.asarray(games, dtype=np.int64).reshape(-1)
    if seating == "mirrored":
        return rng.game_keys(seed, games // players, rng.MIRRORED_DEAL)
    return rng.game_keys(seed, games, rng.DEAL)


def first_player(seed: int, games, players: int, seating: str = "rotate") -> np.ndarray:
    """The seat that starts round 1 of each game (RULES §3).

    Parameters
    ----------
    seed : the job seed
    games : (N,) int array of game indices
    players : 2, 3 or 4
    seating : the configuration's seating rule (``mirrored`` groups share their start seat)

    Returns
    -------
    first : (N,) int8, ``pick(u, players)`` of the deal-stream draw (`deal_keys`) at
        ``START_COUNTER``; depends only on ``(seed, g, players, seating)``, not on the bots, so jobs
        with the same seed start alike.
    """
    keys = deal_keys(seed, games, players, seating)
    return rng.pick(rng.uniform32(keys, rng.START_COUNTER), players).astype(np.int8)
