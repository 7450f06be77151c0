"""What a bot is to the play loop (docs/design.md, "Bots").

A bot is a pure function of the batch's public state, the legal actions, its parameters and its
own random stream. Bots are vectorised: one call decides for every game in `slots`.

- ``act(st, slots, keys) -> actions``: one legal action id per game of `slots` (games where the
  seat to move is this bot). ``keys`` are the games' BOT-stream keys (`sim.rules.rng`); decision
  ``k`` of a game (``k = st.turn``) may use counters ``k * 8 .. k * 8 + 7``.
- ``choose_columns(st, slots, seat, row, colours, legal, keys) -> columns``: gray wall only; a
  column for the full pattern line ``row`` of ``seat`` in each game, among the 5-bit mask
  ``legal``. Counters: ``COLUMN_COUNTER + (round * 4 + seat) * 5 + row``.
"""

from __future__ import annotations

import numpy as np

from ..rules import rng
from ..rules.rulesets import PRINTED_RULES, RuleSet
from ..rules.state import BatchState
from .sampling import random_columns


def turn_uniforms(st: BatchState, slots: np.ndarray, keys: np.ndarray, k: int = 0) -> np.ndarray:
    """The bot stream's uniform32 at counter ``turn * 8 + k`` of each game of `slots`."""
    counter = st.turn[slots].astype(np.uint64) * np.uint64(8) + np.uint64(k)
    return rng.uniform32(keys, counter)


class Bot:
    """Base class: the gray-wall column is uniformly random among the legal ones."""

    # True when `choose_columns` also takes ``seat`` as an array (one seat per slot, element by
    # element), so wall tiling asks it once per row for every seat. Only a class that defines
    # `choose_columns` itself can know: a subclass that overrides it is asked seat by seat.
    @property
    def all_seats(self) -> bool:
        return type(self).choose_columns in _ELEMENTWISE_COLUMNS

    def act(self, st: BatchState, slots: np.ndarray, keys: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def choose_columns(self, st, slots, seat, row, colours, legal, keys) -> np.ndarray:
        return random_columns(keys, st.round[slots], seat, row, legal)


# The built-in column choices, all element by element in (slot, seat); bots add theirs.
_ELEMENTWISE_COLUMNS = {Bot.choose_columns}


def elementwise_columns(cls):
    """Class decorator: `cls.choose_columns` accepts an array ``seat`` (see `Bot.all_seats`)."""
    _ELEMENTWISE_COLUMNS.add(cls.choose_columns)
    return cls


# The column choices the compiled round end makes itself (`sim.rules.compiled`'s column rules), by
# the class's `choose_columns`: a function of the bot and the game's rule set giving its table of
# column keys (`features.column_keys`), or UNIFORM_COLUMNS for the base class's uniformly random
# column.
UNIFORM_COLUMNS = "uniform"
_COMPILED_COLUMNS = {Bot.choose_columns: lambda bot, rule_set: UNIFORM_COLUMNS}


def compiled_columns(table_of):
    """Class decorator: ``table_of(bot, rule_set)`` is the table of column keys whose highest
    legal key is the column that ``cls.choose_columns`` picks (`features.best_columns`) in a game
    of `rule_set`, so the compiled round end can choose it itself. A subclass that overrides
    `choose_columns` is asked."""

    def mark(cls):
        _COMPILED_COLUMNS[cls.choose_columns] = table_of
        return cls

    return mark


def column_table(bot, rule_set: RuleSet = PRINTED_RULES):
    """The bot's compiled column choice (`compiled_columns`) in a game of `rule_set` (its end
    bonuses weigh the columns): its table of column keys, UNIFORM_COLUMNS, or None when its
    `choose_columns` runs in Python (a subclass's, or one set on the instance, which has no
    ``__func__``)."""
    method = getattr(bot, "choose_columns", None)
    table_of = _COMPILED_COLUMNS.get(getattr(method, "__func__", None))
    return None if table_of is None else table_of(bot, rule_set)
