"""The `heuristic` bot: a weighted one-move evaluation with named, tunable weights.

Definition. The bot plays the legal action with the highest value below; ties go to the first in
the order (source, colour) source-major (the centre, then factories in index order), then
destination (lines 0..4, then the floor). It uses no random numbers. Every rule it counts is the
game's rule set's (`sim.rules.rulesets`: the state's ``rule_set``); the printed game's are in
brackets.

For the seat to move, a *line value* ``V[c, r]`` is what tiling colour ``c`` from pattern line
``r`` at this round's end is worth:

- ``points`` x the adjacency points of its wall cell (RULES §6.2). On the coloured wall the cell is
  ``(r, (c + r) % 5)``, scored on the wall as it will be once the already full lines are tiled; on
  the gray wall it is the best legal column of the row, on the wall as it stands (a dead end is
  worth ``-d * floor * (r + 1)``, ``d`` the mean penalty of a floor slot [2]);
- ``bonus`` x the cell's share of the end bonuses: a row [2], column [7] or colour [10] holding m
  of its 5 tiles is credited ``value * m**2 / 25``, so the tile adds ``value * (2m + 1) / 25``
  for each of its three groups.

An incomplete line holding ``x`` of its ``r + 1`` tiles is credited ``p * x / (r + 1) * V[c, r]``
with ``p = partial``, or ``partial * (1 - endgame)`` when the game is likely to end this round
(some player's wall has ``end_rows`` [1] rows of 4 tiles or more), when incomplete lines would be
lost.

The value of an action taking ``k`` tiles of colour ``c`` to line ``r`` (room ``R``) is the change
of that line's credit -- ``k * p * V / (r + 1)`` if ``k < R``, else the full ``V`` less the credit
the line already had -- minus ``floor`` x the extra floor penalty of the objects that fall
(``CUM[min(f + x, 7)] - CUM[f]`` of the rule set's floor, nothing past its last slot; the excess
tiles and, from the centre, the marker when it takes a floor slot [it does]; a marker that costs
points instead adds them, also times ``floor``). To the floor it is just minus that penalty.
Then:

- a pick that takes the first-player marker adds ``marker`` (the game may have no marker);
- a pick from a factory pushes its other tiles to the centre, where the opponents can use them:
  minus ``centre`` per such tile.
"""

from __future__ import annotations

import numpy as np

from ..rules import compile_once
from ..rules.rulesets import (
    MARKER_FLOOR,
    MARKER_POINTS,
    MAX_TILES_PER_COLOUR,
    PRINTED_RULES,
    RULE_END_ROWS,
    RULE_MARKER,
    RULE_MARKER_POINTS,
    RuleSet,
)
from .base import Bot, compiled_columns, elementwise_columns
from .features import (
    CAP,
    FLOOR_MAX_X,
    best_columns,
    coloured_tables,
    column_keys,
    end_bonuses,
    first_max,
    flat,
    floor_cost_table,
    gray_tables,
    line_values,
    per_line,
    per_seat,
    seat_to_move,
    slot_penalty,
    unpack,
)
from .registry import Param

PARAMS = (
    Param("points", "float", 1.0, 0, 5, doc="weight of the adjacency points of a tiled line"),
    Param(
        "partial",
        "float",
        0.6,
        0,
        2,
        doc="share of a line's value credited to an incomplete line, per fraction of it filled",
    ),
    Param("floor", "float", 1.0, 0, 5, doc="weight of floor penalties (points)"),
    Param(
        "bonus", "float", 1.0, 0, 5, doc="weight of progress to the end bonuses (row/column/colour)"
    ),
    Param("centre", "float", 0.1, 0, 2, doc="cost per tile a factory pick pushes to the centre"),
    Param("marker", "float", 1.0, 0, 5, doc="value of taking the first-player marker (points)"),
    Param(
        "endgame",
        "float",
        1.0,
        0,
        1,
        doc="share of the incomplete-line credit dropped once some wall has end_rows rows of 4",
    ),
)

_BIG = np.float32(1e4)
_ACCEPT_BIT = np.int32(1) << (5 * np.arange(5)[:, None] + np.arange(5)[None, :])[:, :, None].astype(
    np.int32
)
_CAPF = CAP.astype(np.float32)  # (5, 1)


_ROW_SHIFT = (5 * np.arange(5, dtype=np.int32))[:, None, None]


def game_ending(st, slots: np.ndarray) -> np.ndarray:
    """(n,) bool: some seat's wall has at least ``end_rows`` rows with 4 tiles or more (printed:
    a row of 4), so the game may end at this round's tiling."""
    walls = np.take(st.wall, slots, axis=1)  # C order: a [:, slots] gather is F-ordered
    rows = (walls[None] >> _ROW_SHIFT) & 31  # (5 rows, P, n)
    end_rows = int(st.rules[RULE_END_ROWS])
    if end_rows == 1:
        return np.bitwise_count(rows).max(axis=(0, 1)) >= 4
    near = (np.bitwise_count(rows) >= 4).sum(axis=0)  # (P, n)
    return near.max(axis=0) >= end_rows


def seat_line_values(bot, st, seat: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """(5 c, 5 r, n) float32: the heuristic's line values ``V`` of `seat` (one per slot)."""
    return line_values(
        st.gray,
        per_seat(st.wall, seat, slots),
        per_seat(st.row_colours, seat, slots),
        per_seat(st.col_colours, seat, slots),
        per_line(st.line_count, seat, slots),
        per_line(st.line_colour, seat, slots),
        bot.points,
        bot.bonus,
        bot.rule_weights(st.rule_set).dead_end,
        end_bonuses(st.rule_set),
    )


def partial_share(bot, st, slots: np.ndarray) -> np.ndarray:
    """(n,) float32: ``p``, the share of a line's value an incomplete line is credited per
    fraction filled (``partial``, less ``endgame`` of it once `game_ending`)."""
    return np.float32(bot.partial) * (1 - np.float32(bot.endgame) * game_ending(st, slots))


def _max_over_lines(v: np.ndarray, out=None) -> np.ndarray:
    """Max over the line axis of a (..., 5 r, n) array, as four maximums (a middle-axis reduce is
    slow)."""
    out = np.maximum(v[..., 0, :], v[..., 1, :], out=out)
    for r in range(2, 5):
        np.maximum(out, v[..., r, :], out=out)
    return out


class _Evaluation:
    """Values of every (source, colour) pick with its best destination, for one seat per game.

    The definition as the module docstring reads. The bots play the compiled evaluation
    (`sim.bots.kernels`: `HeuristicBot.act` and the search bots' candidates, `candidates`; their
    play-outs), which
    computes the same float32 numbers with less work (tests/test_playout.py checks them).
    """

    def __init__(self, bot: HeuristicBot, st, slots: np.ndarray):
        n = slots.shape[0]
        self.n = n
        self.cols = np.arange(n)
        seat = seat_to_move(st, slots)
        acc = per_seat(st.accept, seat, slots)
        counts = per_line(st.line_count, seat, slots)
        colours = per_line(st.line_colour, seat, slots)
        self.floor = per_seat(st.floor, seat, slots)
        self._floor_at = self.floor.astype(np.intp) * FLOOR_MAX_X  # floor_cost's row per game
        weights = bot.rule_weights(st.rule_set)
        value = line_values(
            st.gray,
            per_seat(st.wall, seat, slots),
            per_seat(st.row_colours, seat, slots),
            per_seat(st.col_colours, seat, slots),
            counts,
            colours,
            bot.points,
            bot.bonus,
            weights.dead_end,
            weights.bonuses,
        )
        partial = np.float32(bot.partial) * (1 - np.float32(bot.endgame) * game_ending(st, slots))
        legal = ((acc[None, None] & _ACCEPT_BIT) != 0).astype(np.float32)
        penalty = (legal - 1) * _BIG
        frac = counts.astype(np.float32) / _CAPF  # (5 r, n)
        # a: credit per tile of an incomplete line; b: the rest of its value once it completes.
        self.a = value * (partial / _CAPF) + penalty
        self.b = value * (1 - partial * frac) + penalty
        self.room = (CAP - counts).astype(np.int16)  # (5 r, n)
        self.floor_w = np.float32(bot.floor_w)
        self._floor_table = weights.floor_table
        # The marker: 1 object on the floor (printed), or none and its points (`_objects_cost`).
        self._marker_slot = weights.marker_slot
        self._marker_cost = weights.marker_cost
        src = np.take(st.sources, slots, axis=1)
        self.tiles = unpack(src)  # (S, 5, n)
        self.marker = st.marker_in_centre[slots].astype(np.int16)

        most = max(4, int(self.tiles[1:].max(initial=0)))  # tiles of a colour on a factory
        best_by_k = np.empty((most + 1, 5, n), np.float32)  # [k, c]: factory pick of k tiles
        best_by_k[0] = -_BIG * 4
        for k in range(1, most + 1):
            _max_over_lines(self._best_line(k, self.a, self.b, 0), out=best_by_k[k])
            np.maximum(best_by_k[k], -self._objects_cost(k, 0), out=best_by_k[k])
        fk = self.tiles[1:]
        leftover = fk.sum(axis=1, dtype=np.int16)[:, None, :] - fk
        colour_at = np.arange(5)[:, None] * n + self.cols  # (5, n)
        factory = flat(best_by_k).take(fk.astype(np.intp) * (5 * n) + colour_at)
        factory -= np.float32(bot.centre) * leftover
        kc = self.tiles[0]
        m = self.marker
        centre = _max_over_lines(self._best_line(kc[:, None, :], self.a, self.b, m))
        np.maximum(centre, -self._objects_cost(kc, m), out=centre)
        centre += np.float32(bot.marker) * m - _BIG * 4 * (kc == 0)
        self.values = np.concatenate([centre[None], factory]).reshape(-1, n)  # (S * 5, n)
        self._centre_w = np.float32(bot.centre)
        self._marker_w = np.float32(bot.marker)
        self._leftover = leftover
        self._factories = src[1:]

    def action_values(self, dedupe: bool = True) -> np.ndarray:
        """(n_actions, n) float32: the value of every action id (illegal ones below -1e3).

        With `dedupe`, a factory holding exactly the same tiles as an earlier one is marked
        illegal too (its actions lead to the same positions).
        """
        n = self.n
        k = self.tiles[:, :, None, :]  # (S, 5, 1, n)
        m = np.zeros((self.tiles.shape[0], 1, 1, n), np.int16)
        m[0] = self.marker
        lines = self._best_line(k, self.a[None], self.b[None], m)  # (S, 5, 5, n)
        to_floor = -self._objects_cost(k, m)  # (S, 5, 1, n)
        out = np.concatenate([lines, to_floor], axis=2)
        out[1:] -= (self._centre_w * self._leftover)[:, :, None, :]
        out[0] += (self._marker_w * self.marker)[None, None]
        invalid = self.tiles == 0  # (S, 5, n)
        if dedupe:
            fac = self._factories
            for i in range(1, fac.shape[0]):
                same = (fac[:i] == fac[i][None]).any(axis=0)
                invalid[1 + i] |= same[None]
        out -= (_BIG * 4 * invalid)[:, :, None, :]
        return out.reshape(-1, n)

    def _floor_cost(self, extra) -> np.ndarray:
        """``floor`` weight x `floor_cost` of this seat's floor: a look-up in the bot's weighted
        table of the rule set's floor (the same float32 products), with the row offsets computed
        once."""
        return self._floor_table.take(self._floor_at + np.minimum(extra, FLOOR_MAX_X - 1))

    def _objects_cost(self, tiles, m) -> np.ndarray:
        """``floor`` x the cost of `tiles` tiles falling with the marker (m = 1) or without: the
        marker takes a floor slot, or costs its points (times ``floor``) and takes none."""
        if self._marker_cost is None:
            return self._floor_cost(tiles + self._marker_slot * m)
        return self._floor_cost(tiles) + self._marker_cost * m

    def _best_line(self, k, a, b, m):
        """Value of putting k tiles (m: the marker comes too) on each line: (..., 5 r, n)."""
        low = (self.room > k).astype(np.float32)  # k < room: the line stays incomplete
        fc = self._objects_cost(np.maximum(k - self.room, 0), m)
        # int16 x float32 converts k in the loop: converting the small k first gives the same
        # products in a float32-only loop.
        ka = (k.astype(np.float32) if isinstance(k, np.ndarray) else k) * a
        if isinstance(m, int) and m == 0:  # floor_cost(f, 0) is +0.0, and x - +0.0 == x exactly
            return b - fc + low * (ka - b + fc)
        fcm = self._objects_cost(0, m)
        return b - fc + low * (ka - fcm - b + fc)

    def action(self, q: np.ndarray) -> np.ndarray:
        """Action ids for pick indices q (into `values`) with their best destination."""
        n, cols = self.n, self.cols
        source = q // 5
        colour = q % 5
        k = flat(self.tiles).take(q * n + cols)
        m = (source == 0) * self.marker
        at = (colour * 5)[None] + np.arange(5)[:, None]  # (5 r, n) index of [c, r]
        a = flat(self.a).take(at * n + cols)
        b = flat(self.b).take(at * n + cols)
        lines = self._best_line(k, a, b, m)
        to_floor = -self._objects_cost(k, m)
        dest = first_max(np.concatenate([lines, to_floor[None]]))
        return (source * 5 + colour) * 6 + dest


_ROOMS = 6  # a pattern line has room 0..5
# Objects falling from a centre pick: max(k - room, 0) + marker with k <= 50 tiles of a colour
# (`rulesets.MAX_TILES_PER_COLOUR`), looked up by 2 * k + marker; `kernels` keeps it literal.
_KM = 2 * (MAX_TILES_PER_COLOUR + 1)


def floor_costs(
    floor_table: np.ndarray, marker_slot: int = 1, marker_cost: np.float32 | None = None
) -> np.ndarray:
    """A bot's weighted floor costs re-indexed by what a pick puts on a line: entry
    ``((floor * 6 + room) * _KM + 2 * k + m)`` is the cost of k tiles onto a line with that room
    (m = 1 when the marker comes too): ``floor_table[floor * 32 + max(k - room, 0) + m]`` when the
    marker takes a floor slot (printed), else ``floor_table[floor * 32 + max(k - room, 0)]`` plus
    ``m * marker_cost`` (the marker's weighted points). The same float32 numbers as
    `_Evaluation._objects_cost`, found with one index per (line, game) instead of three."""
    f = np.arange(8)[:, None, None, None]
    room = np.arange(_ROOMS)[None, :, None, None]
    k = np.arange(MAX_TILES_PER_COLOUR + 1)[None, None, :, None]
    m = np.arange(2)[None, None, None, :]
    if marker_cost is None:
        over = np.minimum(np.maximum(k - room, 0) + marker_slot * m, FLOOR_MAX_X - 1)
        return floor_table.take(f * FLOOR_MAX_X + over).ravel()
    over = np.minimum(np.maximum(k - room, 0) + 0 * m, FLOOR_MAX_X - 1)
    costs = floor_table.take(f * FLOOR_MAX_X + over) + marker_cost * m.astype(np.int16)
    return costs.astype(np.float32).ravel()


class RuleWeights:
    """What the heuristic `bot` counts of a rule set, its weights applied once per rule set
    (`HeuristicBot.rule_weights`): the end `bonuses` (row, column, colour); `floor_table`, floor x
    the floor's costs (`features.floor_cost_table`) and `floor_costs`, the same re-indexed; the
    marker's `marker_slot` (1 when it takes a floor slot) and `marker_cost` (floor x its points,
    or None when it costs no points); `dead_end`, floor x the mean slot penalty (a gray-wall
    line that cannot be tiled, per tile)."""

    def __init__(self, bot: HeuristicBot, rule_set: RuleSet):
        table = rule_set.table(2)  # what is read here does not depend on the players
        self.bonuses = end_bonuses(rule_set)
        self.floor_table = np.float32(bot.floor_w) * floor_cost_table(table)
        mode = int(table[RULE_MARKER])
        self.marker_slot = 1 if mode == MARKER_FLOOR else 0
        self.marker_cost = (
            np.float32(bot.floor_w) * np.float32(table[RULE_MARKER_POINTS])
            if mode == MARKER_POINTS
            else None
        )
        self.floor_costs = floor_costs(self.floor_table, self.marker_slot, self.marker_cost)
        self.dead_end = slot_penalty(table) * bot.floor_w


def line_tables(policy: HeuristicBot, gray: bool, rule_set: RuleSet = PRINTED_RULES):
    """The wall variant's line-value tables (`features.coloured_tables` / `gray_tables`) for the
    rule set's end bonuses, and the weight of a gray dead end: what the compiled evaluation
    reads."""
    table = gray_tables if gray else coloured_tables
    weights = policy.rule_weights(rule_set)
    cells, colour_bonus = table(float(policy.points), float(policy.bonus), weights.bonuses)
    return cells, colour_bonus, np.float32(weights.dead_end)


_kernels = None  # sim.bots.kernels once `compiled_kernels` has loaded it


def compiled_kernels():
    """`sim.bots.kernels` (the compiled evaluation and play-outs), compiled or loaded from
    numba's cache once per process, one process at a time; later calls return it at once."""
    global _kernels
    if _kernels is None:
        from . import kernels

        _kernels = kernels  # set first: the warm-up below calls back into this module

        def warm():
            from ..rules import engine

            ids = np.arange(2)
            for wall in ("coloured", "gray"):
                st = engine.new_games(2, wall, 0, ids, np.zeros(2, np.int8))
                candidates(HeuristicBot(), st, ids, 2)

        compile_once.under_lock(warm)
    return _kernels


def candidates(policy: HeuristicBot, st, slots: np.ndarray, count: int) -> np.ndarray:
    """(count, n): the heuristic's action in each game of `slots`, then the next ``count - 1``
    actions by `heuristic._Evaluation.action_values` (ties in action order; a factory holding the
    same tiles as an earlier one skipped), the first repeated where fewer are legal: the search
    bots' candidate lists (`kernels.ranked_picks`)."""
    kernels = compiled_kernels()
    n = slots.shape[0]
    out = np.empty((count, n), np.int64)
    if n == 0:
        return out
    cells, colour_bonus, dead = line_tables(policy, st.gray, st.rule_set)
    kernels.ranked_picks(
        st.rules,
        bool(st.gray),
        st.wall,
        st.row_colours,
        st.col_colours,
        st.line_colour,
        cells,
        colour_bonus,
        dead,
        np.float32(policy.partial),
        np.float32(policy.endgame),
        st.sources,
        st.marker_in_centre,
        st.line_count,
        st.accept,
        st.floor,
        st.current,
        np.ascontiguousarray(slots, np.int64),
        policy.rule_weights(st.rule_set).floor_costs,
        np.float32(policy.centre),
        np.float32(policy.marker),
        out,
    )
    return out


def factories_empty(st, slots: np.ndarray) -> np.ndarray:
    """(n,) bool: every factory of the game is empty (only the centre is left to pick from)."""
    return ~np.take(st.sources[1:], slots, axis=1).any(axis=0)


@elementwise_columns
@compiled_columns(lambda bot, rule_set: column_keys(float(bot.bonus), end_bonuses(rule_set)))
class HeuristicBot(Bot):
    def __init__(
        self,
        points: float = 1.0,
        partial: float = 0.6,
        floor: float = 1.0,
        bonus: float = 1.0,
        centre: float = 0.1,
        marker: float = 1.0,
        endgame: float = 1.0,
    ):
        self.points = points
        self.partial = partial
        self.floor_w = floor
        self.bonus = bonus
        self.centre = centre
        self.marker = marker
        self.endgame = endgame
        self._weights: dict[RuleSet, RuleWeights] = {}

    def rule_weights(self, rule_set: RuleSet) -> RuleWeights:
        """The bot's weights applied to `rule_set` (`RuleWeights`), made once per rule set."""
        weights = self._weights.get(rule_set)
        if weights is None:
            weights = self._weights[rule_set] = RuleWeights(self, rule_set)
        return weights

    @property
    def floor_table(self) -> np.ndarray:
        """floor x the printed floor's cost table (float32): `RuleWeights.floor_table`."""
        return self.rule_weights(PRINTED_RULES).floor_table

    def evaluate(self, st, slots: np.ndarray) -> _Evaluation:
        return _Evaluation(self, st, slots)

    def act(self, st, slots, keys=None) -> np.ndarray:
        """`_Evaluation`'s choice, by the compiled evaluation the search bots' candidates and
        play-outs use too (`kernels.ranked_picks`, `candidates`)."""
        return candidates(self, st, np.asarray(slots), 1)[0]

    def choose_columns(self, st, slots, seat, row, colours, legal, keys=None) -> np.ndarray:
        wall = per_seat(st.wall, seat, slots)
        return best_columns(wall, row, legal, self.bonus, end_bonuses(st.rule_set))


def make_heuristic(params: dict) -> HeuristicBot:
    return HeuristicBot(**params)
