"""The one place where the action encoding is defined (docs/design.md, docs/rules.md §12.4).

An action is one flat id for ``(source, colour, destination)``::

    action = (source * 5 + colour) * 6 + destination

- ``source``: 0 is the centre, ``1 + i`` is factory ``i`` (``i`` in ``0..F-1``);
- ``colour``: 0 blue, 1 yellow, 2 red, 3 black, 4 white;
- ``destination``: 0..4 is pattern line 0..4 (capacity 1..5), 5 is the floor.

With ``F`` factories there are ``(F + 1) * 30`` ids: the printed game's ``F = 2n + 1`` gives 180,
240 and 300 for 2, 3 and 4 players; a rule set's factories (1..9, `sim.rules.rulesets`) give
60..300. An id is legal when its source holds at least one tile of its colour and its destination
accepts that colour (RULES §5.2; a full line is never a legal target).

On the gray wall the column of a tile placed at wall tiling is a second, separate decision: a
column index 0..4 chosen per full pattern line (RULES §9.3).
"""

from __future__ import annotations

import numpy as np

from .constants import factories_for

CENTRE = 0
FLOOR = 5
N_DESTINATIONS = 6


def n_actions(players: int, factories: int | None = None) -> int:
    """Number of action ids for a game of `players` players with `factories` factory displays
    (default the printed game's, 2n + 1)."""
    if factories is None:
        factories = factories_for(players)
    return (factories + 1) * 5 * N_DESTINATIONS


def encode(source, colour, destination):
    """Action id of ``(source, colour, destination)``; works on ints and arrays."""
    return (source * 5 + colour) * N_DESTINATIONS + destination


def decode(action):
    """``(source, colour, destination)`` of an action id; works on ints and arrays."""
    destination = action % N_DESTINATIONS
    rest = action // N_DESTINATIONS
    return rest // 5, rest % 5, destination


def describe(action: int) -> str:
    """Readable form of an action, e.g. ``'factory 2: red -> line 3'``."""
    from .constants import COLOURS

    source, colour, destination = decode(int(action))
    where = "centre" if source == CENTRE else f"factory {source - 1}"
    to = "floor" if destination == FLOOR else f"line {destination + 1}"
    return f"{where}: {COLOURS[colour]} -> {to}"


# Decode tables for the largest game (nine factories); smaller games use a prefix (ids are
# source-major).
_MAX_ACTIONS = n_actions(4, 9)
# (intp: the engine indexes with them directly)
ACTION_SOURCE = (np.arange(_MAX_ACTIONS) // 30).astype(np.intp)
ACTION_COLOUR = (np.arange(_MAX_ACTIONS) // 6 % 5).astype(np.intp)
ACTION_DESTINATION = (np.arange(_MAX_ACTIONS) % 6).astype(np.intp)
