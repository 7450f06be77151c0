"""Rule sets: what a configuration's rules are, in one place, with a canonical label.

Today a configuration's rules are its wall variant and its round cap (`sim.spec.Configuration`'s
``wall`` and ``max_rounds``); the printed game is the coloured wall with the default cap. A rule
set is written ``printed`` or as ``key=value`` pairs joined by ``,`` (``wall=gray``,
``wall=gray,max_rounds=30``), and labelled canonically: the keys that differ from the printed game,
in `KEYS` order (so ``max_rounds=100,wall=grey`` is ``wall=gray``). A new rule (a rules value of
a configuration) is one more key here: its default, how to read and write it, and how it is set
on and read from a configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .constants import DEFAULT_MAX_ROUNDS, WALLS
from .quote import shown

PRINTED = "printed"
KEYS = ("wall", "max_rounds")
_WALL_ALIASES = {"colored": "coloured", "grey": "gray"}


@dataclass(frozen=True)
class RuleSet:
    """The rules of a configuration: wall variant and round cap (RULES §9, §10.6)."""

    wall: str = "coloured"
    max_rounds: int = DEFAULT_MAX_ROUNDS

    def __post_init__(self) -> None:
        wall = _WALL_ALIASES.get(self.wall, self.wall)
        if wall not in WALLS:
            raise ValueError(f"rule set: wall must be one of {', '.join(WALLS)}; got {shown(wall)}")
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int):
            raise ValueError(f"rule set: max_rounds must be an integer; got {self.max_rounds!r}")
        if not 1 <= self.max_rounds <= 1000:
            raise ValueError(
                f"rule set: max_rounds must be between 1 and 1000; got {self.max_rounds}"
            )
        object.__setattr__(self, "wall", wall)

    @property
    def label(self) -> str:
        """``printed``, or the keys that differ from it, in `KEYS` order."""
        printed = RuleSet()
        parts = [f"{k}={getattr(self, k)}" for k in KEYS if getattr(self, k) != getattr(printed, k)]
        return ",".join(parts) or PRINTED

    def __str__(self) -> str:
        return self.label

    @classmethod
    def parse(cls, text: str) -> RuleSet:
        """A rule set from its text (``printed`` or ``key=value,...``); ValueError names the
        part that is wrong."""
        if not isinstance(text, str) or not text:
            raise ValueError(
                f"a rule set must be {PRINTED!r} or key=value pairs; got {shown(text)}"
            )
        if text == PRINTED:
            return cls()
        given: dict[str, Any] = {}
        for item in text.split(","):
            key, eq, value = item.partition("=")
            if not eq or key not in KEYS:
                raise ValueError(
                    f"rule set {shown(text)}: expected key=value with a key among "
                    f"{', '.join(KEYS)}; got {shown(item)}"
                )
            if key in given:
                raise ValueError(f"rule set {shown(text)}: {key} is given twice")
            if key == "max_rounds":
                if not value.isascii() or not value.isdigit():
                    raise ValueError(f"rule set {shown(text)}: max_rounds must be an integer")
                given[key] = int(value)
            else:
                given[key] = value
        return cls(**given)

    def configuration(self, players: int, bots, seating: str = "rotate"):
        """The `sim.spec.Configuration` of these rules (the round cap set only when it is not the
        default, so a printed configuration is the plain one)."""
        from .spec import Configuration

        cap = None if self.max_rounds == DEFAULT_MAX_ROUNDS else self.max_rounds
        return Configuration(players, tuple(bots), seating, self.wall, cap)

    @classmethod
    def of(cls, config, spec) -> RuleSet:
        """The rule set configuration `config` of job `spec` plays under."""
        return cls(config.wall, spec.max_rounds_of(config))
