"""The batch engine: Azul transitions over a whole batch of games at once (RULES.md §3–§10).

Layout and encoding live in `sim.state` and `sim.actions`. Every function works on a set of game
slots at once; there is no Python loop over games or actions. A step plays one pick in every
active game; when a game's factories and centre run dry its round ends inside the same call (wall
tiling, floor penalty, end check, and the deal of the next round), so callers only ever see games
waiting for a pick, or finished.

Randomness is the deal stream of `sim.rng` (see its docstring): a game deals the same tiles in any
batch, slot or order.
"""

from __future__ import annotations

import numpy as np

from . import rng
from .actions import ACTION_COLOUR, ACTION_DESTINATION, ACTION_SOURCE, describe, n_actions
from .constants import (
    END_NO_TILES,
    END_REASONS,
    END_ROUND_CAP,
    END_ROW_COMPLETED,
    FLOOR_CUM,
    FLOOR_SLOTS,
    RUN,
    TILES_PER_COLOUR,
)
from .records import GameRecords
from .state import BatchState, empty_state

# --- constant tables ---------------------------------------------------------------------------

_RUN_FLAT = RUN.ravel().astype(np.int16)
# Bits 5*r + k for r in 0..4: with k a column, the cells of column k; with k a colour, that
# colour's bits in `row_colours`.
_STRIDE5 = np.array([sum(1 << (5 * r + k) for r in range(5)) for k in range(5)], dtype=np.int32)
# Bits of one wall row.
_ROW_BITS = np.array([31 << (5 * r) for r in range(5)], dtype=np.int32)
# accept-mask bits of pattern line r for every colour (accept bit is 5*colour + r).
_LINE_BITS = np.array([sum(1 << (5 * c + r) for c in range(5)) for r in range(5)], dtype=np.int32)
_POP5 = np.array([bin(m).count("1") for m in range(32)], dtype=np.int16)
# _NTH_DEST[mask, j]: the j-th set bit of a 5-bit line mask, or 5 (the floor) for j == popcount.
_NTH_DEST = np.full((32, 6), 5, dtype=np.int16)
for _m in range(32):
    for _j, _bit in enumerate(b for b in range(5) if _m >> b & 1):
        _NTH_DEST[_m, _j] = _bit
_NTH_DEST_FLAT = _NTH_DEST.ravel()
# _SPREAD[mask5]: the 5 colour bits of a mask moved to bits 5*colour (line 0's accept bits).
_SPREAD = np.array([sum(1 << (5 * c) for c in range(5) if m >> c & 1) for m in range(32)], np.int32)
# Popcount and j-th set bit of an 11-bit group of the presence mask (S <= 10 sources).
_POP11 = np.array([bin(m).count("1") for m in range(2048)], dtype=np.int16)
_NTH_SOURCE = np.zeros((2048, 10), dtype=np.int16)
for _m in range(2048):
    for _j, _bit in enumerate(b for b in range(10) if _m >> b & 1):
        _NTH_SOURCE[_m, _j] = _bit
_NTH_SOURCE_FLAT = _NTH_SOURCE.ravel()
# Packed sources: colour c is the 6-bit field at 6c. _FIELD_LOW has bit 6c set for every colour.
_FIELD6 = np.array([6 * c for c in range(5)], dtype=np.int32)
_FIELD_LOW = np.int32(sum(1 << (6 * c) for c in range(5)))
_FIELD_NONZERO_ADD = np.int32(31 * _FIELD_LOW)  # field + 31 reaches bit 6c+5 iff field > 0
_GATHER_NONZERO = np.int64(sum(1 << (5 * j) for j in range(5)))  # bits 6c -> bit 20 + c
# _SPREAD11[mask5]: bit 11c for each colour bit c of a 5-bit mask (source 0, the centre).
_SPREAD11 = np.array([sum(1 << (11 * c) for c in range(5) if m >> c & 1) for m in range(32)], np.int64)
_ALL_COLOURS11 = np.int64(_SPREAD11[31])


def _nonzero_colours(packed: np.ndarray) -> np.ndarray:
    """5-bit mask of the colours whose 6-bit field in `packed` is non-zero."""
    bits = ((packed + _FIELD_NONZERO_ADD) >> 5) & _FIELD_LOW  # bit 6c when field c > 0
    return (bits.astype(np.int64) * _GATHER_NONZERO >> 20) & 31


def unpack_sources(packed: np.ndarray) -> np.ndarray:
    """(..., ) packed sources -> (5, ...) tiles per colour."""
    return np.stack([(packed >> (6 * c)) & 63 for c in range(5)])
_FLOOR_CUM = FLOOR_CUM.astype(np.int32)
# _COLOURED_COLUMN[row, colour + 1]: column of the colour on the coloured wall (-1 -> 0, unused).
_COLOURED_COLUMN = np.array([[0] + [(c + r) % 5 for c in range(5)] for r in range(5)], np.int32)
_COLUMN0 = np.int32(sum(1 << (5 * r) for r in range(5)))  # the cells of column 0
_GATHER_COLUMN = np.int64(sum(1 << (4 * j) for j in range(5)))
_ALL_ACCEPT = np.int32((1 << 25) - 1)  # every empty line accepts every colour


def _gather(arr: np.ndarray, lead, b: np.ndarray) -> np.ndarray:
    """``arr[lead, b]`` for an array whose last axis is the batch, `lead` a flat leading index."""
    return arr.reshape(-1).take(lead * arr.shape[-1] + b)


# --- creating games ----------------------------------------------------------------------------


def new_games(
    players: int,
    wall: str,
    seed: int,
    games,
    first_player,
    max_rounds: int = 100,
) -> BatchState:
    """A batch of new games, round 1 dealt.

    Parameters
    ----------
    players : 2, 3 or 4
    wall : 'coloured' or 'gray'
    seed : the job seed; the deal of game g depends only on (seed, g)
    games : (B,) int, the game indices in the job
    first_player : (B,) int, the seat that starts round 1 of each game (RULES §3.5)
    max_rounds : round cap (RULES §10.6)
    """
    if players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4; got {players}")
    if wall not in ("coloured", "gray"):
        raise ValueError(f"wall must be 'coloured' or 'gray'; got {wall!r}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1; got {max_rounds}")
    games = np.asarray(games, dtype=np.int64)
    st = empty_state(players, wall == "gray", seed, max_rounds, games.shape[0])
    reset_slots(st, np.arange(games.shape[0]), games, first_player)
    return st


def reset_slots(st: BatchState, slots: np.ndarray, games, first_player, deal: bool = True) -> None:
    """Start new games in `slots` (continuous batching: finished slots take the next games).

    With ``deal=False`` round 1 is left to a later `start_rounds` call, so that new games and
    games going on to their next round are dealt in one call.
    """
    first_player = np.broadcast_to(np.asarray(first_player, dtype=np.int8), slots.shape)
    if np.any((first_player < 0) | (first_player >= st.players)):
        raise ValueError(f"first_player must be a seat 0..{st.players - 1}")
    st.game[slots] = games
    st.deal_key[slots] = rng.game_keys(st.seed, np.asarray(games), rng.DEAL)
    st.first_player[slots] = first_player
    st.sources[:, slots] = 0
    st.bag[:, slots] = TILES_PER_COLOUR
    st.lid[:, slots] = 0
    st.line_colour[:, :, slots] = -1
    st.line_count[:, :, slots] = 0
    for name in ("wall", "row_colours", "col_colours", "floor", "scores"):
        getattr(st, name)[:, slots] = 0
    st.wall_cells[:, :, slots] = -1
    st.floor_penalty[:, slots] = 0
    st.marker_takes[:, slots] = 0
    st.bonus[:, slots] = 0
    st.turn[slots] = 0
    st.round[slots] = 0
    st.done[slots] = False
    st.end_reason[slots] = 0
    st.accept[:, slots] = _ALL_ACCEPT
    st.tiles_left[slots] = 0
    st.marker_holder[slots] = -1
    st.start_player[slots] = first_player
    if deal:
        start_rounds(st, slots)


_FIELD_ONES = np.int64(0x01010101)
_FIELD_BIAS = np.int64(0x7F7F7F7F)
_SHIFTS = np.array([0, 8, 16, 24], dtype=np.int64)


# Colour c adds 1 to the cumulative-count fields of colours c..3.
_CUM_WEIGHTS = [np.int64(sum(1 << (8 * k) for k in range(c, 4))) for c in range(4)]


def _pack_cumulative(counts: np.ndarray) -> np.ndarray:
    """(5, n) colour counts -> int64 with the cumulative counts of colours 0..3 in 8-bit fields."""
    packed = counts[0].astype(np.int64) * _CUM_WEIGHTS[0]
    for c in range(1, 4):
        packed += counts[c].astype(np.int64) * _CUM_WEIGHTS[c]
    return packed


def _deal(st: BatchState, slots: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """Fill the factories of `slots` for round `rounds` (RULES §7.2); returns tiles dealt (n,).

    Factory i, slot j draws with counter ``round * 64 + 4 * i + j``; the lid is poured into the bag
    only when the bag is empty at a draw, and filling stops for good when both are empty.

    The draw itself is branch-free SWAR (notes/numpy_speed.md, technique 5): the bag's cumulative
    counts of colours 0..3 sit in four 8-bit fields of an int64; for a draw ``x`` the "thermometer"
    ``therm`` has a 1 in every field c with ``cum_c > x``, i.e. c >= the drawn colour, so the colour
    is ``4 - popcount(therm)`` and ``packed -= therm`` removes the tile. Summing the thermometers of
    a factory's 4 draws gives its cumulative colour counts.
    """
    n = slots.shape[0]
    f = st.factories
    draws = 4 * f
    bag = st.bag[:, slots]
    lid = st.lid[:, slots]
    in_bag = bag.sum(axis=0, dtype=np.int64)
    in_lid = lid.sum(axis=0, dtype=np.int64)
    # Tiles in the bag before draw t: the bag's, then after the pour at t == in_bag the lid's too.
    t = np.arange(draws, dtype=np.int64)
    before = in_bag[:, None] - t
    before = np.where(before > 0, before, before + in_lid[:, None])
    live = before > 0
    counters = rounds.astype(np.uint64)[:, None] * np.uint64(64) + t.astype(np.uint64)
    x = rng.pick(rng.uniform32(st.deal_key[slots][:, None], counters), np.maximum(before, 0))
    x_fields = np.ascontiguousarray((x * _FIELD_ONES).T)  # (draws, n)
    live_t = np.ascontiguousarray(live.T).astype(np.int64)
    packed = _pack_cumulative(bag)
    packed_lid = _pack_cumulative(lid)
    pour_at = np.where(in_lid > 0, in_bag, -1)  # draw index where the lid is poured, if ever
    sums = np.zeros((f, n), np.int64)
    for j in range(draws):
        pour = pour_at == j
        if pour.any():
            packed = np.where(pour, packed + packed_lid, packed)
        therm = (((packed + _FIELD_BIAS - x_fields[j]) >> 7) & _FIELD_ONES) * live_t[j]
        packed -= therm
        sums[j // 4] += therm
    # Decode: field c of `sums` counts draws of colour <= c; live draws per factory give white.
    # Live draws are a prefix of the draws, so factory i got clip(dealt - 4i, 0, 4) tiles.
    dealt = np.minimum(in_bag + in_lid, draws)
    dealt_per = np.clip(dealt - 4 * np.arange(f)[:, None], 0, 4)  # (f, n)
    fields = (sums[None] >> _SHIFTS[:, None, None]) & 255  # (4, f, n)
    counts = np.empty((f, 5, n), np.int8)
    counts[:, 0] = fields[0]
    counts[:, 1:4] = (fields[1:] - fields[:-1]).transpose(1, 0, 2)
    counts[:, 4] = dealt_per - fields[3]
    # Bag and lid after the deal: poured games start from bag + lid.
    poured = (pour_at >= 0) & (pour_at < draws)
    remaining = np.where(poured, bag + lid, bag).astype(np.int16) - counts.sum(axis=0)
    st.bag[:, slots] = remaining
    st.lid[:, slots] = np.where(poured, 0, lid)
    st.sources[0, slots] = 0
    st.sources[1:, slots] = (counts.astype(np.int32) << _FIELD6[None, :, None]).sum(axis=1)
    # Presence: bit 11c + 1 + i when factory i holds colour c.
    has = _SPREAD11[_nonzero_colours(st.sources[1:, slots])] << np.arange(1, f + 1)[:, None]
    st.presence[slots] = np.bitwise_or.reduce(has, axis=0)
    return dealt.astype(np.int16)


def start_rounds(st: BatchState, slots: np.ndarray) -> None:
    """Deal the next round in `slots` (RULES §7); zero tiles dealt ends a game `no_tiles` (§10.5).

    The start player was set by `end_rounds` (the marker's holder, else the start player of the
    round just played); for a new game it is its first player.
    """
    start_player = st.start_player[slots]  # set by end_rounds (or reset_slots for a new game)
    next_round = st.round[slots] + 1
    dealt = _deal(st, slots, next_round)
    st.tiles_left[slots] = dealt
    st.current[slots] = start_player
    empty = dealt == 0
    st.round[slots] = np.where(empty, next_round - 1, next_round)
    # A round that dealt nothing is not played: the marker stays where the last round left it.
    dealt_slots = slots[~empty]
    st.marker_in_centre[dealt_slots] = True
    st.marker_holder[dealt_slots] = -1
    if empty.any():
        _finish(st, slots[empty], END_NO_TILES)


# --- legality ----------------------------------------------------------------------------------


def _refresh_accept(st: BatchState, slots: np.ndarray) -> None:
    """Recompute the accept masks of every seat in `slots` (bit 5*colour + line, RULES §5.2)."""
    acc = np.zeros((st.players, slots.shape[0]), np.int32)
    row_colours = st.row_colours[:, slots]
    for r in range(5):
        count = st.line_count[:, r][:, slots]
        colour = st.line_colour[:, r][:, slots].astype(np.int32)
        in_row = (row_colours >> (5 * r)) & 31  # colours already on wall row r
        empty_ok = np.where(count == 0, 31 & ~in_row, 0)
        # A started line that is not full accepts its own colour (never on the wall row, §12.2).
        started_ok = np.where((count > 0) & (count < r + 1), 1 << np.maximum(colour, 0), 0)
        acc |= _SPREAD[empty_ok | started_ok] << r
    st.accept[:, slots] = acc


def legal_mask(st: BatchState) -> np.ndarray:
    """Dense legality of every action id for the seat to move (all False in finished games).

    Returns
    -------
    mask : (B, n_actions) bool
    """
    b = st.batch
    present = unpack_sources(st.sources).transpose(1, 0, 2) > 0  # (S, 5, B)
    acc = np.take_along_axis(st.accept, st.current[None].astype(np.intp), 0)[0]  # (B,)
    dest = np.ones((5, 6, b), bool)
    for c in range(5):
        for r in range(5):
            dest[c, r] = (acc >> (5 * c + r)) & 1
    mask = present[:, :, None, :] & dest[None]
    mask &= ~st.done
    return np.ascontiguousarray(mask.reshape(-1, b).T)


# --- a pick ------------------------------------------------------------------------------------


def step(st: BatchState, actions, choose_columns=None) -> None:
    """Play one pick in every game (RULES §5), and the round end where the round ran dry.

    Parameters
    ----------
    actions : (B,) int action ids; -1 for games already done (and only for those)
    choose_columns : gray wall only, ``f(st, slots, seat, row, colours, legal) -> columns``, called
        during wall tiling for the full pattern lines with a legal column (RULES §9.3); ``legal`` is a
        5-bit mask of legal columns. None picks the leftmost legal column (decision 9.3.1).

    Raises
    ------
    ValueError
        On an illegal action, an action for a finished game, or no action for a running one. The
        state is left unchanged.
    """
    actions = np.asarray(actions, dtype=np.int64)
    if actions.shape != (st.batch,):
        raise ValueError(f"actions must have shape ({st.batch},); got {actions.shape}")
    playing = actions >= 0
    if np.any(playing == st.done):
        b = int(np.flatnonzero(playing == st.done)[0])
        what = "finished, so its action must be -1" if st.done[b] else "running and needs an action"
        raise ValueError(f"game slot {b} is {what}; got action {actions[b]}")
    slots = np.flatnonzero(playing)
    if slots.size == 0:
        return
    play(st, slots, actions[slots], choose_columns)


def play(
    st: BatchState,
    slots: np.ndarray,
    actions: np.ndarray,
    choose_columns=None,
    defer_round_end: bool = False,
) -> None:
    """`step` restricted to `slots` (running games), with `actions` (n,) for those slots.

    With `defer_round_end`, games whose round ran dry are left waiting (``tiles_left == 0``) for a
    later `end_rounds` call, so that round ends run in larger batches; play is unchanged.
    """
    b_all = st.batch
    limit = n_actions(st.players)
    if np.any((actions < 0) | (actions >= limit)):
        bad = int(np.flatnonzero((actions < 0) | (actions >= limit))[0])
        raise ValueError(f"action must be in 0..{limit - 1}; got {actions[bad]} in slot {slots[bad]}")
    source = ACTION_SOURCE[actions].astype(np.intp)
    colour = ACTION_COLOUR[actions].astype(np.intp)
    dest = ACTION_DESTINATION[actions].astype(np.intp)
    seat = st.current[slots].astype(np.intp)

    src_flat = st.sources.reshape(-1)
    at = source * b_all + slots
    held = src_flat[at]
    taken = (held >> (6 * colour)) & 63
    acc = st.accept.reshape(-1)[seat * b_all + slots]
    to_line = dest < 5
    line_ok = ((acc >> (5 * colour + np.minimum(dest, 4))) & 1).astype(bool)
    legal = (taken > 0) & (~to_line | line_ok)
    if not legal.all():
        bad = int(np.flatnonzero(~legal)[0])
        raise ValueError(
            f"illegal action {actions[bad]} ({describe(actions[bad])}) in game slot {slots[bad]}"
        )

    # Take the tiles (§5.1); a factory's leftovers go to the centre.
    rest = held - (taken << (6 * colour))
    factory = source > 0
    src_flat[at] = np.where(factory, 0, rest)
    src_flat[slots] += np.where(factory, rest, 0)
    # Presence: a factory loses every colour and the centre gains its leftovers' colours; a pick
    # from the centre only loses the colour taken.
    gone = np.where(factory, _ALL_COLOURS11 << source, np.int64(1) << (11 * colour))
    gained = np.where(factory, _SPREAD11[_nonzero_colours(rest)], 0)
    st.presence[slots] = (st.presence[slots] & ~gone) | gained
    st.tiles_left[slots] -= taken

    # The first pick from the centre takes the marker to the floor (§5.4, §5.6).
    floor_flat = st.floor.reshape(-1)
    seat_at = seat * b_all + slots
    floor = floor_flat[seat_at].astype(np.int16)
    marker = (source == 0) & st.marker_in_centre[slots]
    if marker.any():
        mslots = slots[marker]
        st.marker_in_centre[mslots] = False
        st.marker_holder[mslots] = seat[marker]
        st.marker_takes.reshape(-1)[seat_at[marker]] += 1
        floor = floor + (marker & (floor < FLOOR_SLOTS))

    # Place on the pattern line; the excess falls to the floor (§5.2, §5.3). A pick to the floor
    # rewrites line 4 with its own values, so both cases share one path.
    taken = taken.astype(np.int16)
    line = np.minimum(dest, 4)
    line_at = (seat * 5 + line) * b_all + slots
    count_flat = st.line_count.reshape(-1)
    colour_flat = st.line_colour.reshape(-1)
    count = count_flat[line_at].astype(np.int16)
    placed = np.where(to_line, np.minimum(taken, line + 1 - count), 0)
    excess = taken - placed
    new_count = count + placed
    count_flat[line_at] = new_count
    colour_flat[line_at] = np.where(to_line, colour, colour_flat[line_at])
    # The line now accepts only its colour, or nothing once full.
    line_acc = np.where(new_count < line + 1, 1 << (5 * colour + line), 0)
    acc = np.where(to_line, (acc & ~_LINE_BITS[line]) | line_acc, acc).astype(np.int32)
    st.accept.reshape(-1)[seat_at] = acc
    # Floor overflow goes to the lid at once (decision 5.3.2); tiles on the floor are counted in
    # the lid too, since they only reach it at cleanup and the lid is read only at a refill.
    floor_flat[seat_at] = np.minimum(floor + excess, FLOOR_SLOTS)
    st.lid.reshape(-1)[colour * b_all + slots] += excess.astype(np.int8)

    st.turn[slots] += 1
    st.current[slots] = (seat + 1) % st.players

    if not defer_round_end:
        ended = st.tiles_left[slots] == 0
        if ended.any():
            end_rounds(st, slots[ended], choose_columns)


# --- round end ---------------------------------------------------------------------------------


def _placement_points(wall: np.ndarray, row: int, col: np.ndarray) -> np.ndarray:
    """Points for the tile just placed at (row, col) of `wall` (which includes it, §6.2)."""
    row_mask = (wall >> (5 * row)) & 31
    # Gather the column's bits 5r (after the shift) into bits 16 + r with one multiply: the
    # products 5r + 4j never collide, so nothing carries (j = 4 - r lands on 16 + r).
    col_bits = ((wall >> col) & _COLUMN0).astype(np.int64)
    col_mask = (col_bits * _GATHER_COLUMN >> 16) & 31
    h = _RUN_FLAT[row_mask * 5 + col]
    v = _RUN_FLAT[col_mask * 5 + row]
    return np.where((h > 1) & (v > 1), h + v, h + v - 1)


def _legal_columns(wall: np.ndarray, col_colours: np.ndarray, row: int, colour) -> np.ndarray:
    """5-bit mask of the columns where `colour` may go on gray-wall row `row` (RULES §9.3)."""
    legal = np.zeros_like(wall)
    for col in range(5):
        free = ((wall >> (5 * row + col)) & 1) == 0
        no_colour = ((col_colours >> (5 * col + colour)) & 1) == 0
        legal |= (free & no_colour).astype(np.int32) << col
    return legal


def _gray_columns(st, slots, row, full, colour, wall, col_colours, choose_columns):
    """Columns (P, n) for the full lines of gray-wall row `row`, -1 for a dead end (RULES §9.3-4)."""
    legal = np.where(full, _legal_columns(wall, col_colours, row, np.maximum(colour, 0)), 0)
    col = np.full(full.shape, -1, np.int32)
    for p in range(st.players):
        pick = np.flatnonzero(legal[p])
        if pick.size == 0:
            continue
        if choose_columns is None:
            chosen = _NTH_DEST_FLAT[legal[p, pick] * 6]  # leftmost (decision 9.3.1)
        else:
            chosen = np.asarray(
                choose_columns(st, slots[pick], p, row, colour[p, pick], legal[p, pick]), np.int32
            )
            if np.any((chosen < 0) | (chosen > 4)) or np.any(((legal[p, pick] >> chosen) & 1) == 0):
                raise ValueError(f"choose_columns returned an illegal column for seat {p}, row {row}")
        col[p, pick] = chosen
    return col


def end_rounds(st: BatchState, slots: np.ndarray, choose_columns=None, deal: bool = True) -> None:
    """Wall tiling, floor penalty, end check and the next deal for `slots` (RULES §6–§8).

    Every seat is tiled at once, row by row strictly top to bottom (decision 6.1.1). With
    ``deal=False`` the games that go on wait (not done, no tiles) for a `start_rounds` call.
    """
    wall = st.wall[:, slots]
    row_colours = st.row_colours[:, slots]
    col_colours = st.col_colours[:, slots]
    floor = st.floor[:, slots].astype(np.int32)
    counts = st.line_count[:, :, slots]
    colours = st.line_colour[:, :, slots].astype(np.int32)
    lid = st.lid[:, slots].astype(np.int16)
    accept = st.accept[:, slots]
    points = np.zeros(wall.shape, np.int32)
    cells = st.wall_cells.reshape(-1)
    b_all = st.batch
    n = slots.shape[0]
    cols = np.arange(n)
    lid_at = np.zeros((5, st.players, n), np.intp)
    lid_add = np.zeros((5, st.players, n), np.int32)
    for r in range(5):
        full = counts[:, r] == r + 1
        colour = colours[:, r]
        if st.gray:
            col = _gray_columns(st, slots, r, full, colour, wall, col_colours, choose_columns)
            dead = full & (col < 0)
            # Dead end: all r+1 tiles to the floor at once (RULES §9.4); they reach the lid.
            floor = np.minimum(floor + np.where(dead, r + 1, 0), FLOOR_SLOTS)
            placed = full & ~dead
            to_lid = np.where(placed, r, np.where(dead, r + 1, 0))
        else:
            col = _COLOURED_COLUMN[r].take(colour + 1)
            placed = full
            to_lid = full * np.int32(r)
        col = np.maximum(col, 0)
        hue = np.maximum(colour, 0)
        on = placed.astype(np.int32)
        wall |= on << (5 * r + col)
        row_colours |= on << (5 * r + hue)
        col_colours |= on << (5 * col + hue)
        points += on * _placement_points(wall, r, col)
        # The other r tiles of a tiled line go to the lid (§6.1); added up once below.
        lid_at[r] = hue * n + cols
        lid_add[r] = to_lid
        if st.gray and placed.any():
            # Gray walls keep each cell's colour; the coloured wall's follow from the layout.
            p_idx, g_idx = np.nonzero(placed)
            cells[(p_idx * 25 + 5 * r + col[p_idx, g_idx]) * b_all + slots[g_idx]] = colour[
                p_idx, g_idx
            ]
        counts[:, r] = np.where(full, 0, counts[:, r])
        colours[:, r] = np.where(full, -1, colour)
        # A cleared line accepts every colour its wall row lacks (it accepted none while full).
        accept |= full * (_SPREAD[31 & ~(row_colours >> (5 * r))] << r)
    lid += np.bincount(lid_at.ravel(), lid_add.ravel(), minlength=5 * n).reshape(5, n).astype(np.int16)
    penalty = _FLOOR_CUM[floor]
    st.wall[:, slots] = wall
    st.row_colours[:, slots] = row_colours
    st.col_colours[:, slots] = col_colours
    st.line_count[:, :, slots] = counts
    st.line_colour[:, :, slots] = colours
    st.lid[:, slots] = lid
    st.accept[:, slots] = accept
    st.floor_penalty[:, slots] += penalty
    st.scores[:, slots] = np.maximum(0, st.scores[:, slots] + points - penalty)
    st.floor[:, slots] = 0

    # The marker's holder starts next; untaken, the round's start player again (decision 10.4).
    holder = st.marker_holder[slots]
    next_start = np.where(holder >= 0, holder, st.start_player[slots]).astype(np.int8)
    st.start_player[slots] = next_start
    st.current[slots] = next_start

    # Bit 5r survives these ANDs only where row r is complete.
    full_rows = wall & (wall >> 1) & (wall >> 2) & (wall >> 3) & (wall >> 4) & _COLUMN0
    ended = (full_rows != 0).any(axis=0)
    if ended.any():
        _finish(st, slots[ended], END_ROW_COMPLETED)
    capped = ~ended & (st.round[slots] >= st.max_rounds)
    if capped.any():
        _finish(st, slots[capped], END_ROUND_CAP)
    going = ~ended & ~capped
    if deal and going.any():
        start_rounds(st, slots[going])


def _finish(st: BatchState, slots: np.ndarray, reason: int) -> None:
    """End the games in `slots`; bonuses count only on a natural end (RULES §8.2, §10.7)."""
    st.done[slots] = True
    st.end_reason[slots] = reason
    rows, cols, colours = _completions(st, slots)
    bonus = 2 * rows + 7 * cols + 10 * colours
    st.bonus[:, slots] = bonus
    if reason == END_ROW_COMPLETED:
        st.scores[:, slots] += bonus


def _completions(st: BatchState, slots: np.ndarray):
    """Complete rows, columns and colours (P, n) of each seat's wall (RULES §8.2)."""
    walls = st.wall[:, slots]
    row_colours = st.row_colours[:, slots]
    rows = np.zeros(walls.shape, np.int16)
    cols = np.zeros(walls.shape, np.int16)
    colours = np.zeros(walls.shape, np.int16)
    for k in range(5):
        rows += (walls & _ROW_BITS[k]) == _ROW_BITS[k]
        cols += (walls & _STRIDE5[k]) == _STRIDE5[k]
        colours += (row_colours & _STRIDE5[k]) == _STRIDE5[k]
    return rows, cols, colours


# --- reading a batch ---------------------------------------------------------------------------


def winners_of(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """RULES §8.3 over the seat axis 0: highest score, then most complete rows, then shared."""
    best = scores == scores.max(axis=0)
    rows_among = np.where(best, rows, -1)
    return best & (rows_among == rows_among.max(axis=0))


def records(st: BatchState, slots=None, seat_bot=None) -> GameRecords:
    """Records of the finished games in `slots` (default: every slot, all must be done)."""
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    if not st.done[slots].all():
        raise ValueError("records() needs finished games")
    rows, cols, colours = _completions(st, slots)
    scores = st.scores[:, slots]
    provisional = winners_of(scores, rows)
    natural = st.end_reason[slots] == END_ROW_COMPLETED
    n = slots.shape[0]
    if seat_bot is None:
        seat_bot = np.zeros((n, st.players), np.int8)
    return GameRecords(
        game=st.game[slots].copy(),
        first_player=st.first_player[slots].copy(),
        seat_bot=np.asarray(seat_bot, np.int8),
        scores=scores.T.astype(np.int32),
        end_reason=st.end_reason[slots].copy(),
        rounds=st.round[slots].copy(),
        turns=st.turn[slots].copy(),
        complete_rows=rows.T.astype(np.int8),
        complete_cols=cols.T.astype(np.int8),
        complete_colours=colours.T.astype(np.int8),
        bonus=st.bonus[:, slots].T.copy(),
        floor_penalty=st.floor_penalty[:, slots].T.copy(),
        marker_takes=st.marker_takes[:, slots].T.copy(),
        winners=(provisional & natural).T,
        provisional_winners=provisional.T,
    )


def wall_colours(st: BatchState, slots=None) -> np.ndarray:
    """(P, 25, n) int8 colour at cell 5*row + col of each wall, -1 when empty."""
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    if st.gray:
        return st.wall_cells[:, :, slots]
    occupied = (st.wall[:, None, slots] >> np.arange(25, dtype=np.int32)[None, :, None]) & 1
    layout = np.array([(c - r) % 5 for r in range(5) for c in range(5)], np.int8)
    return np.where(occupied == 1, layout[None, :, None], -1).astype(np.int8)


def snapshot(st: BatchState, b: int) -> dict:
    """The canonical plain-Python view of game slot `b` (the reference engine's format)."""
    p_count = st.players
    cells = wall_colours(st, [b])

    def counts(a):
        return [int(x) for x in a]

    return {
        "round": int(st.round[b]),
        "turn": int(st.turn[b]),
        "current": int(st.current[b]),
        "done": bool(st.done[b]),
        "end_reason": END_REASONS[st.end_reason[b]] if st.done[b] else None,
        "factories": [counts(unpack_sources(st.sources[1 + i, b])) for i in range(st.factories)],
        "centre": counts(unpack_sources(st.sources[0, b])),
        "marker_in_centre": bool(st.marker_in_centre[b]),
        "marker_holder": int(st.marker_holder[b]),
        "bag": counts(st.bag[:, b]),
        "lid": counts(st.lid[:, b]),
        "lines": [
            [[int(st.line_colour[p, r, b]), int(st.line_count[p, r, b])] for r in range(5)]
            for p in range(p_count)
        ],
        "wall": [
            [[int(cells[p, 5 * r + c, 0]) for c in range(5)] for r in range(5)]
            for p in range(p_count)
        ],
        "floor": [int(st.floor[p, b]) for p in range(p_count)],
        "scores": [int(st.scores[p, b]) for p in range(p_count)],
    }


def from_snapshots(
    players: int,
    wall: str,
    seed: int,
    games,
    snapshots: list[dict],
    max_rounds: int = 100,
    first_player=0,
) -> BatchState:
    """A batch of games set up from canonical snapshots (the `snapshot` format), for tests.

    Each game continues exactly as from that position: its later deals come from (seed, game).
    Records count floor penalties and marker takes from this point on.
    """
    games = np.asarray(games, dtype=np.int64)
    if len(snapshots) != games.shape[0]:
        raise ValueError("need one snapshot per game")
    st = empty_state(players, wall == "gray", seed, max_rounds, games.shape[0])
    st.game[:] = games
    st.deal_key[:] = rng.game_keys(seed, games, rng.DEAL)
    st.first_player[:] = first_player
    for b, s in enumerate(snapshots):
        sources = [s["centre"], *s["factories"]]
        for i, counts in enumerate(sources):
            st.sources[i, b] = sum(int(k) << (6 * c) for c, k in enumerate(counts))
            for c, k in enumerate(counts):
                if k:
                    st.presence[b] |= np.int64(1) << (11 * c + i)
        st.tiles_left[b] = sum(map(sum, sources))
        st.marker_in_centre[b] = s["marker_in_centre"]
        st.marker_holder[b] = s["marker_holder"]
        st.bag[:, b] = s["bag"]
        st.lid[:, b] = s["lid"]
        for p in range(players):
            for r, (colour, count) in enumerate(s["lines"][p]):
                st.line_colour[p, r, b] = colour
                st.line_count[p, r, b] = count
            for r, row in enumerate(s["wall"][p]):
                for col, colour in enumerate(row):
                    if colour < 0:
                        continue
                    st.wall[p, b] |= 1 << (5 * r + col)
                    st.row_colours[p, b] |= 1 << (5 * r + colour)
                    st.col_colours[p, b] |= 1 << (5 * col + colour)
                    st.wall_cells[p, 5 * r + col, b] = colour
            st.floor[p, b] = s["floor"][p]
            st.scores[p, b] = s["scores"][p]
        st.current[b] = s["current"]
        st.round[b] = s["round"]
        st.turn[b] = s["turn"]
        st.done[b] = s["done"]
        if s["done"]:
            st.end_reason[b] = END_REASONS.index(s["end_reason"])
    st.start_player[:] = [s.get("start_player", s["current"]) for s in snapshots]
    _refresh_accept(st, np.arange(games.shape[0]))
    return st
