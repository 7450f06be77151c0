"""What a bot is to the play loop (DESIGN.md §3).

A bot is a pure function of the batch's public state, the legal actions, its parameters and its
own random stream. Bots are vectorised: one call decides for every game in `slots`.

- ``act(st, slots, keys) -> actions``: one legal action id per game of `slots` (games where the
  seat to move is this bot). ``keys`` are the games' BOT-stream keys (`sim.rng`); decision ``k`` of
  a game (``k = st.turn``) may use counters ``k * 8 .. k * 8 + 7``.
- ``choose_columns(st, slots, seat, row, colours, legal, keys) -> columns``: gray wall only; a
  column for the full pattern line ``row`` of ``seat`` in each game, among the 5-bit mask
  ``legal``. Counters: ``COLUMN_COUNTER + (round * 4 + seat) * 5 + row``.
"""

from __future__ import annotations

import numpy as np

from .. import rng
from ..sampling import random_columns
from ..state import BatchState


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
