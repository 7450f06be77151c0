"""Rule sets: every scoring and set-up rule of a game as one value, with a canonical label.

A rule set is the printed game (`RuleSet()`) or the printed game with some rules changed. Its keys,
in `KEYS` order (docs/rules.md, "Rule variants", says what each one means and allows):

==================  =======================  =======================================================
key                 printed                  what it is
==================  =======================  =======================================================
wall                coloured                 ``coloured`` or ``gray`` (§9)
max_rounds          100                      the round cap, 1..1000 (§10.6)
row_bonus           2                        end bonus per complete row, 0..50 (§8.2)
column_bonus        7                        end bonus per complete column, 0..50
colour_bonus        10                       end bonus per colour with all 5 tiles, 0..50
floor               1/1/2/2/2/3/3            points lost per floor slot, left to right: 1..7 slots,
                                             0..20 each; its length is the floor's
factories           5/7/9                    factory displays at 2, 3 and 4 players, 1..9 each
tiles_per_factory   4                        tiles dealt to a factory, 1..10
tiles_per_colour    20                       tiles of each colour in the game, 1..50
marker              floor                    the first-player marker: ``floor`` (it takes the next
                                             floor slot), ``off`` (no marker: the start passes to
                                             the left each round) or a whole number of points
                                             0..20 its taker loses at the round end (no slot)
end_rows            1                        complete rows one player needs to end the game, 1..5
==================  =======================  =======================================================

A round deals at most 64 tiles (``factories × tiles_per_factory``): the deal stream numbers a
round's draws 0..63 (`sim.rules.rng`), which is what keeps the printed game's deals as they are.

Text form: ``printed``, or ``key=value`` pairs joined by ``,`` (``wall=gray,column_bonus=5``); a
list value joins its items with ``/`` (``floor=1/2/3``). The canonical label lists only the keys
that differ from the printed game, in `KEYS` order (``max_rounds=100,wall=grey`` is ``wall=gray``),
so one rule set has one label in statistics, game rows and reports; the printed game's is
``printed``: statistics documents leave it out, so they are as they were, and game rows hold it
(`sim.jobs.gamerows`).

JSON form (a configuration's ``rules``): an object of the same keys, lists as JSON lists
(``{"column_bonus": 5, "floor": [1, 2, 3]}``), `to_dict` / `from_dict`.

The engine reads a rule set as one integer table per player count (`RuleSet.table`, indexed by
the ``RULE_*`` constants), so every rule set plays on the same compiled code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ..quote import shown
from .constants import DEFAULT_MAX_ROUNDS, WALLS

PRINTED = "printed"
KEYS = (
    "wall",
    "max_rounds",
    "row_bonus",
    "column_bonus",
    "colour_bonus",
    "floor",
    "factories",
    "tiles_per_factory",
    "tiles_per_colour",
    "marker",
    "end_rows",
)
_WALL_ALIASES = {"colored": "coloured", "grey": "gray"}
_KEY_ALIASES = {"color_bonus": "colour_bonus"}
_MARKER_WORDS = ("floor", "off")

# Limits of each whole-number rule (docs/rules.md, "Rule variants").
MAX_ROUNDS_LIMIT = 1000
MAX_BONUS = 50
MAX_FLOOR_SLOTS = 7  # a player board has seven floor slots
MAX_SLOT_PENALTY = 20
MAX_FACTORIES = 9  # a state's presence bits hold the centre and nine factories (`sim.rules.state`)
MAX_TILES_PER_FACTORY = 10
MAX_TILES_PER_COLOUR = 50  # a source holds a colour's tiles in a 6-bit field (`sim.rules.state`)
MAX_TILES_DEALT = 64  # a round's draws are numbered 0..63 in the deal stream (`sim.rules.rng`)
MAX_MARKER_POINTS = 20
END_ROWS_LIMIT = 5

# The engine's table of a rule set at one player count (`RuleSet.table`): entries by index.
RULE_ROW_BONUS = 0
RULE_COLUMN_BONUS = 1
RULE_COLOUR_BONUS = 2
RULE_FLOOR_SLOTS = 3  # the floor's length
RULE_FACTORIES = 4  # at this player count
RULE_TILES_PER_FACTORY = 5
RULE_TILES_PER_COLOUR = 6
RULE_MARKER = 7  # MARKER_* below
RULE_MARKER_POINTS = 8  # what taking the marker costs when RULE_MARKER is MARKER_POINTS
RULE_END_ROWS = 9
RULE_FLOOR_CUM = 10  # 10 + n: points lost for n objects on the floor, n = 0..MAX_FLOOR_SLOTS
RULE_TABLE_SIZE = RULE_FLOOR_CUM + MAX_FLOOR_SLOTS + 1

MARKER_OFF = 0
MARKER_FLOOR = 1
MARKER_POINTS = 2


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class RuleSet:
    """The rules of a game (module docstring); the defaults are the printed game. Every value is
    checked on construction, with a ValueError naming the key (``rules.floor ...``)."""

    wall: str = "coloured"
    max_rounds: int = DEFAULT_MAX_ROUNDS
    row_bonus: int = 2
    column_bonus: int = 7
    colour_bonus: int = 10
    floor: tuple[int, ...] = (1, 1, 2, 2, 2, 3, 3)
    factories: tuple[int, int, int] = (5, 7, 9)
    tiles_per_factory: int = 4
    tiles_per_colour: int = 20
    marker: str = "floor"
    end_rows: int = 1

    def __post_init__(self) -> None:
        self._check("rules")

    def _check(self, path: str) -> None:
        wall = _WALL_ALIASES.get(self.wall, self.wall) if isinstance(self.wall, str) else self.wall
        if wall not in WALLS:
            raise ValueError(f"{path}.wall must be one of {', '.join(WALLS)}; got {shown(wall)}")
        object.__setattr__(self, "wall", wall)
        _whole(self.max_rounds, f"{path}.max_rounds", 1, MAX_ROUNDS_LIMIT)
        for key in ("row_bonus", "column_bonus", "colour_bonus"):
            _whole(getattr(self, key), f"{path}.{key}", 0, MAX_BONUS)
        floor = _whole_list(self.floor, f"{path}.floor", 0, MAX_SLOT_PENALTY)
        if not 1 <= len(floor) <= MAX_FLOOR_SLOTS:
            raise ValueError(
                f"{path}.floor must list 1 to {MAX_FLOOR_SLOTS} slot penalties (a player board "
                f"has {MAX_FLOOR_SLOTS} floor slots); got {len(floor)}"
            )
        factories = _whole_list(self.factories, f"{path}.factories", 1, MAX_FACTORIES)
        if len(factories) != 3:
            raise ValueError(
                f"{path}.factories must give the factories at 2, 3 and 4 players (three numbers); "
                f"got {len(factories)}"
            )
        _whole(self.tiles_per_factory, f"{path}.tiles_per_factory", 1, MAX_TILES_PER_FACTORY)
        _whole(self.tiles_per_colour, f"{path}.tiles_per_colour", 1, MAX_TILES_PER_COLOUR)
        most = max(factories) * int(self.tiles_per_factory)
        if most > MAX_TILES_DEALT:
            raise ValueError(
                f"{path}.tiles_per_factory: {max(factories)} factories of "
                f"{self.tiles_per_factory} tiles deal {most} tiles a round; at most "
                f"{MAX_TILES_DEALT} can be dealt"
            )
        object.__setattr__(self, "marker", _marker(self.marker, f"{path}.marker"))
        _whole(self.end_rows, f"{path}.end_rows", 1, END_ROWS_LIMIT)
        for key in ("max_rounds", "row_bonus", "column_bonus", "colour_bonus",
                    "tiles_per_factory", "tiles_per_colour", "end_rows"):  # fmt: skip
            object.__setattr__(self, key, int(getattr(self, key)))
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "factories", factories)

    # --- what the rules say ----------------------------------------------------------------

    @property
    def printed(self) -> bool:
        """True for the printed game's rules."""
        return self == RuleSet()

    def factories_at(self, players: int) -> int:
        """Factory displays at `players` players (printed: 2n + 1)."""
        return self.factories[players - 2]

    def deals_like(self, other: RuleSet, players: int) -> bool:
        """True when games under the two rule sets get the same first deal at `players` players
        (the same factories, tiles per factory and tiles per colour), so they can be paired."""
        return (
            self.factories_at(players) == other.factories_at(players)
            and self.tiles_per_factory == other.tiles_per_factory
            and self.tiles_per_colour == other.tiles_per_colour
        )

    def floor_cumulative(self) -> tuple[int, ...]:
        """Points lost for n = 0..len(floor) objects on the floor."""
        out = [0]
        for penalty in self.floor:
            out.append(out[-1] + penalty)
        return tuple(out)

    @property
    def marker_points(self) -> int | None:
        """What taking the marker costs in points when it takes no floor slot, else None."""
        return None if self.marker in _MARKER_WORDS else int(self.marker)

    @functools.lru_cache(maxsize=64)  # noqa: B019 - a few frozen rule sets, looked up per call
    def table(self, players: int) -> np.ndarray:
        """The rules as the compiled engine reads them at `players` players: int64, indexed by the
        ``RULE_*`` constants (floor totals past the floor's length repeat its full total)."""
        t = np.zeros(RULE_TABLE_SIZE, np.int64)
        t[RULE_ROW_BONUS] = self.row_bonus
        t[RULE_COLUMN_BONUS] = self.column_bonus
        t[RULE_COLOUR_BONUS] = self.colour_bonus
        t[RULE_FLOOR_SLOTS] = len(self.floor)
        t[RULE_FACTORIES] = self.factories_at(players)
        t[RULE_TILES_PER_FACTORY] = self.tiles_per_factory
        t[RULE_TILES_PER_COLOUR] = self.tiles_per_colour
        points = self.marker_points
        if self.marker == "off":
            t[RULE_MARKER] = MARKER_OFF
        else:
            t[RULE_MARKER] = MARKER_FLOOR if points is None else MARKER_POINTS
        t[RULE_MARKER_POINTS] = points or 0
        t[RULE_END_ROWS] = self.end_rows
        cum = self.floor_cumulative()
        for n in range(MAX_FLOOR_SLOTS + 1):
            t[RULE_FLOOR_CUM + n] = cum[min(n, len(self.floor))]
        t.setflags(write=False)
        return t

    # --- text and JSON ---------------------------------------------------------------------

    @property
    def label(self) -> str:
        """``printed``, or the keys that differ from it, in `KEYS` order."""
        printed = RuleSet()
        parts = [
            f"{k}={_text(getattr(self, k))}"
            for k in KEYS
            if getattr(self, k) != getattr(printed, k)
        ]
        return ",".join(parts) or PRINTED

    def __str__(self) -> str:
        return self.label

    def changed(self) -> dict[str, Any]:
        """The keys that differ from the printed game, JSON-ready (lists for list values)."""
        printed = RuleSet()
        return {
            k: _json(k, getattr(self, k)) for k in KEYS if getattr(self, k) != getattr(printed, k)
        }

    def to_dict(self) -> dict[str, Any]:
        """Every key, JSON-ready."""
        return {k: _json(k, getattr(self, k)) for k in KEYS}

    @classmethod
    def from_dict(cls, data: Any, path: str = "rules", base: RuleSet | None = None) -> RuleSet:
        """A rule set from a JSON object of some of its keys (the rest from `base`, default the
        printed game); errors name ``path.key``."""
        if isinstance(data, RuleSet):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"{path} must be an object of rules; got {shown(data)}")
        given: dict[str, Any] = {}
        for key, value in data.items():
            name = _KEY_ALIASES.get(key, key)
            if name not in KEYS:
                raise ValueError(f"{path}: unknown rule {shown(key)} (rules: {', '.join(KEYS)})")
            given[name] = value
        out = object.__new__(cls)
        for f in fields(cls):
            object.__setattr__(out, f.name, given.get(f.name, getattr(base or RuleSet(), f.name)))
        out._check(path)
        return out

    @classmethod
    def parse(cls, text: str, path: str = "rules") -> RuleSet:
        """A rule set from its text (``printed`` or ``key=value,...``); ValueError names the
        key that is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{path} must be {PRINTED!r} or key=value pairs; got {shown(text)}")
        text = text.strip()
        if text == PRINTED:
            return cls()
        given: dict[str, Any] = {}
        for item in text.split(","):
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            name = _KEY_ALIASES.get(key, key)
            if not eq or name not in KEYS:
                raise ValueError(
                    f"{path} {shown(text)}: expected key=value with a key among "
                    f"{', '.join(KEYS)}; got {shown(item)}"
                )
            if name in given:
                raise ValueError(f"{path} {shown(text)}: {name} is given twice")
            given[name] = parse_value(name, value, f"{path}.{name}")
        return cls.from_dict(given, path)

    def with_value(self, key: str, text: str, path: str = "rules") -> RuleSet:
        """This rule set with `key` set from its text form (a sweep's value)."""
        name = _KEY_ALIASES.get(key, key)
        if name not in KEYS:
            raise ValueError(f"{path}: unknown rule {shown(key)} (rules: {', '.join(KEYS)})")
        value = parse_value(name, text, f"{path}.{name}")
        return RuleSet.from_dict({name: value}, path, base=self)

    @classmethod
    def of(cls, config, spec=None) -> RuleSet:
        """The rule set configuration `config` of job `spec` plays under (the job's round cap
        where the configuration has none)."""
        cap = spec.max_rounds_of(config) if spec is not None else config.max_rounds
        return replace(
            config.rules, wall=config.wall, max_rounds=DEFAULT_MAX_ROUNDS if cap is None else cap
        )


def parse_value(key: str, text: str, path: str) -> Any:
    """The value of rule `key` from its text form (``5``, ``1/1/2``, ``gray``, ``off``)."""
    if key == "wall":
        return text
    if key == "marker":
        return text if text in _MARKER_WORDS else _integer(text, path, "floor, off or a number")
    if key in ("floor", "factories"):
        return tuple(_integer(part, path, "whole numbers joined by /") for part in text.split("/"))
    return _integer(text, path, "a whole number")


def _integer(text: str, path: str, what: str) -> int:
    t = text.strip()
    body = t[1:] if t.startswith("-") else t
    if not body.isascii() or not body.isdigit():
        raise ValueError(f"{path} must be {what}; got {shown(text)}")
    return int(t)


def _whole(value: Any, path: str, low: int, high: int) -> None:
    if not _is_int(value) or not low <= value <= high:
        raise ValueError(f"{path} must be a whole number from {low} to {high}; got {shown(value)}")


def _whole_list(value: Any, path: str, low: int, high: int) -> tuple[int, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"{path} must be a list of whole numbers; got {shown(value)}")
    for k, item in enumerate(value):
        _whole(item, f"{path}[{k}]", low, high)
    return tuple(int(v) for v in value)


def _marker(value: Any, path: str) -> str:
    if isinstance(value, str) and value in _MARKER_WORDS:
        return value
    if isinstance(value, str):
        body = value.strip()
        if body.isascii() and body.isdigit():
            value = int(body)
    if _is_int(value) and 0 <= value <= MAX_MARKER_POINTS:
        return str(int(value))
    raise ValueError(
        f"{path} must be floor, off or a whole number of points from 0 to {MAX_MARKER_POINTS}; "
        f"got {shown(value)}"
    )


def _text(value: Any) -> str:
    return "/".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def _json(key: str, value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if key == "marker" and value not in _MARKER_WORDS:
        return int(value)  # points
    return value


PRINTED_RULES = RuleSet()
