"""Restricted play: any bot, forbidden one strategic element (Jaffe et al., AIIDE 2012).

``restricted:bot=<spec>,never=<element>`` plays the bot ``<spec>`` (its own parameters separated
by ``;`` instead of ``,``, e.g. ``bot=heuristic:floor=2.5;centre=1``; written canonically, as its
label) with one element of Azul's strategy taken away. The inner bot decides on a copy of the
position in which the forbidden options are absent, so it plays its best among what is left:

- ``marker``: never take the first-player marker while another source holds tiles: while the
  marker lies in the centre and a factory holds tiles, the centre looks empty;
- ``floor``: never put tiles straight on the floor line while a pattern line can take some: the
  colours no pattern line of the seat accepts look absent, and a floor pick of a colour that a
  line accepts goes to the accepting line with the least overflow (then the fewest free places
  left, then the topmost) instead. Overflow of a too-short line is still allowed;
- ``five``: never use the five-tile line (pattern line 5): it accepts nothing (tiles that fit no
  other line go to the floor);
- ``bonus``: never complete a column or a colour (the 7- and 10-point end bonuses): a pattern line
  whose tile would be the fifth of its column (coloured wall) or of its colour accepts nothing,
  and on the gray wall a column that the tile would complete is not chosen while another legal
  one is left (this round's full lines count as tiled). Complete rows (which end the game) stay
  allowed. On the coloured wall no column or colour is ever completed; on the gray wall no colour
  is, and a column only when every legal column of a tile completes one.

Each restriction bends only when it must: when every option is forbidden (only the centre is
left, only the floor, ...) the bot plays as it would unrestricted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..rules.constants import wall_column
from .base import Bot
from .registry import Param, make_bot, parse_bot_spec

ELEMENTS = ("marker", "floor", "five", "bonus")
_ALL_LINES = 0x108421  # bit 5 c of every colour c: line 0 of each colour in `accept`
_CENTRE = np.int64(sum(1 << (11 * c) for c in range(5)))  # source 0's bit of every colour
# _WALL_COLUMN[5 colour + row]: the coloured wall's column of the colour on that row.
_WALL_COLUMN = np.array([wall_column(r, c) for c in range(5) for r in range(5)], np.int64)


def inner_spec(text: str) -> str:
    """The inner bot's spec string from the ``bot`` value (``;`` separates its parameters)."""
    return text.replace(";", ",")


def check(params: dict[str, Any]) -> None:
    """Refuse an inner spec that is invalid, restricted itself or not written canonically."""
    text = inner_spec(params["bot"])
    try:
        spec = parse_bot_spec(text)
    except ValueError as exc:
        raise ValueError(f"bot 'restricted': parameter 'bot': {exc}") from None
    if spec.name == "restricted":
        raise ValueError("bot 'restricted': parameter 'bot' must not be restricted itself")
    if spec.label != text:
        canonical = spec.label.replace(",", ";")
        raise ValueError(
            f"bot 'restricted': parameter 'bot' must be written canonically, as {canonical!r}; "
            f"got {params['bot']!r}"
        )


PARAMS = (
    Param("bot", "text", "heuristic", doc="the bot restricted (its spec, ';' between parameters)"),
    Param("never", "choice", "marker", choices=ELEMENTS, doc="the element it may not use"),
)


def cost(params: dict[str, Any]) -> float:
    from .registry import get_bot_info

    spec = parse_bot_spec(inner_spec(params["bot"]))
    return 1.0 + get_bot_info(spec.name).cost_of(spec.params)


def make_restricted(params: dict[str, Any]) -> RestrictedBot:
    return RestrictedBot(make_bot(inner_spec(params["bot"])), params["never"])


class RestrictedBot(Bot):
    """`inner` forbidden the element `never` (module docstring)."""

    def __init__(self, inner, never: str):
        if never not in ELEMENTS:
            raise ValueError(f"never must be one of {', '.join(ELEMENTS)}; got {never!r}")
        self.inner = inner
        self.never = never

    @property
    def all_seats(self) -> bool:
        return bool(getattr(self.inner, "all_seats", False))

    def act(self, st, slots, keys) -> np.ndarray:
        slots = np.asarray(slots)
        sub = st.take(slots)  # the games alone, slot i of sub is slots[i]
        at = np.arange(slots.shape[0])
        seat = sub.current.astype(np.int64)
        if self.never == "marker":
            factories = (sub.presence & ~_CENTRE) != 0
            hide = sub.marker_in_centre & factories
            sub.presence[hide] &= ~_CENTRE
            sub.sources[0, hide] = 0
        elif self.never == "five":
            sub.accept[seat, at] &= ~(_ALL_LINES << 4)
        elif self.never == "bonus":
            sub.accept[seat, at] &= ~_completing_lines(sub, seat, at)
        elif self.never == "floor":
            _hide_unplaceable(sub, seat, at)
        actions = np.asarray(self.inner.act(sub, at, keys), np.int64)
        if self.never == "floor":
            actions = _off_the_floor(st, slots, actions)
        return actions

    def choose_columns(self, st, slots, seat, row, colours, legal, keys) -> np.ndarray:
        legal = np.asarray(legal)
        if self.never == "bonus":
            walls = st.wall[seat, slots]
            safe = legal.copy()
            for c in range(5):  # column c would be complete with this tile
                column = walls >> c & 0x108421  # bits 5 r + c
                full = np.bitwise_count(column) == 4
                safe &= ~(full.astype(legal.dtype) << c)
            legal = np.where(safe != 0, safe, legal)
        return self.inner.choose_columns(st, slots, seat, row, colours, legal, keys)


def _completing_lines(st, seat: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(n,) accept bits (5 colour + line) whose tile would complete a column or a colour, the
    full pattern lines counted as tiled (they are, at this round's end)."""
    wall = st.wall[seat, at].astype(np.int64)
    rows = st.row_colours[seat, at].astype(np.int64)
    for r in range(5):  # the tiles of this round's full lines
        hue = st.line_colour[seat, r, at].astype(np.int64)
        full = st.line_count[seat, r, at] == r + 1
        rows |= np.where(full, 1 << (5 * r + np.maximum(hue, 0)), 0)
        if not st.gray:
            col = _WALL_COLUMN.take(5 * np.maximum(hue, 0) + r)
            wall |= np.where(full, 1 << (5 * r + col), 0)
    out = np.zeros(at.shape[0], np.int64)
    for c in range(5):
        colour_full = np.bitwise_count(rows >> c & 0x108421) == 4  # on 4 rows: the 5th completes
        for r in range(5):
            bad = colour_full.copy()
            if not st.gray:
                col = wall_column(r, c)
                bad |= np.bitwise_count(wall >> col & 0x108421) == 4  # its 5th tile
            out |= bad.astype(np.int64) << (5 * c + r)
    return out


def _hide_unplaceable(st, seat: np.ndarray, at: np.ndarray) -> None:
    """Hide (in place) the colours no pattern line of the seat accepts, when some line can take
    a colour that is on offer."""
    acc = st.accept[seat, at].astype(np.int64)
    offer = np.stack([(st.presence >> (11 * c)) & 2047 for c in range(5)])  # (5, n)
    lines = np.stack([(acc >> (5 * c)) & 31 for c in range(5)])
    placeable = (offer != 0) & (lines != 0)
    some = placeable.any(axis=0)
    for c in range(5):
        hide = some & (offer[c] != 0) & (lines[c] == 0)
        st.presence[hide] &= ~np.int64(2047 << (11 * c))
        for s in range(st.sources.shape[0]):
            st.sources[s, hide] &= ~np.int32(63 << (6 * c))


def _off_the_floor(st, slots: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Floor picks of a colour some pattern line accepts, moved to the best-fitting line."""
    source, colour, dest = actions // 30, actions // 6 % 5, actions % 6
    seat = st.current[slots].astype(np.int64)
    acc = st.accept[seat, slots].astype(np.int64)
    lines = (acc >> (5 * colour)) & 31
    move = (dest == 5) & (lines != 0)
    if not move.any():
        return actions
    taken = (st.sources[source, slots].astype(np.int64) >> (6 * colour)) & 63
    best = np.full(actions.shape, -1)
    best_key = np.full(actions.shape, np.iinfo(np.int64).max)
    for r in range(5):
        room = r + 1 - st.line_count[seat, r, slots].astype(np.int64)
        ok = (lines >> r & 1) == 1
        key = np.maximum(taken - room, 0) * 100 + np.maximum(room - taken, 0) * 10 + r
        better = ok & (key < best_key)
        best = np.where(better, r, best)
        best_key = np.where(better, key, best_key)
    return np.where(move, (source * 5 + colour) * 6 + best, actions)
