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

from sim.quote import shown

from . import rng
from . import tables as T
from .actions import ACTION_COLOUR, ACTION_SOURCE, describe, n_actions
from .constants import (
    END_NO_TILES,
    END_REASONS,
    END_ROUND_CAP,
    END_ROW_COMPLETED,
    FLOOR_SLOTS,
    TILES_PER_COLOUR,
    wall_colour,
)
from .deal import deal
from .leaders import record_leaders
from .records import GameRecords
from .scoring import winners
from .state import BatchState, empty_state
from .tables import unpack_sources
from .tiling import tile_walls

# --- creating games ----------------------------------------------------------------------------


def new_games(
    players: int,
    wall: str,
    seed: int,
    games,
    first_player,
    max_rounds: int = 100,
    deal_keys=None,
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
    deal_keys : (B,) uint64 deal-stream keys (`sim.spec.deal_keys`); default each game's own,
        ``rng.game_keys(seed, g, DEAL)`` (mirrored groups pass their shared key)
    """
    if players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4; got {players}")
    if wall not in ("coloured", "gray"):
        raise ValueError(f"wall must be 'coloured' or 'gray'; got {shown(wall)}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1; got {max_rounds}")
    games = np.asarray(games, dtype=np.int64)
    st = empty_state(players, wall == "gray", seed, max_rounds, games.shape[0])
    reset_slots(st, np.arange(games.shape[0]), games, first_player, deal_keys=deal_keys)
    return st


def reset_slots(
    st: BatchState, slots: np.ndarray, games, first_player, deal: bool = True, deal_keys=None
) -> None:
    """Start new games in `slots` (continuous batching: finished slots take the next games).

    With ``deal=False`` round 1 is left to a later `start_rounds` call, so that new games and
    games going on to their next round are dealt in one call. `deal_keys` as for `new_games`.
    """
    first_player = np.broadcast_to(np.asarray(first_player, dtype=np.int8), slots.shape)
    if np.any((first_player < 0) | (first_player >= st.players)):
        raise ValueError(f"first_player must be a seat 0..{st.players - 1}")
    st.game[slots] = games
    if deal_keys is None:
        deal_keys = rng.game_keys(st.seed, np.asarray(games), rng.DEAL)
    st.deal_key[slots] = deal_keys
    st.first_player[slots] = first_player
    st.sources[:, slots] = 0
    st.bag[:, slots] = TILES_PER_COLOUR
    st.lid[:, slots] = 0
    st.line_colour[:, :, slots] = -1
    st.line_count[:, :, slots] = 0
    for name in ("wall", "row_colours", "col_colours", "floor", "scores"):
        getattr(st, name)[:, slots] = 0
    # wall_cells is not cleared: only the cells `wall` holds are read (`wall_colours`), and
    # clearing 25 cells per seat, one cache line each, was most of a gray reset's cost.
    st.floor_penalty[:, slots] = 0
    st.marker_takes[:, slots] = 0
    st.bonus[:, slots] = 0
    st.lead_changes[slots] = 0
    st.trailing_rounds[:, slots] = 0
    st.last_trailing_round[:, slots] = 0
    st.turn[slots] = 0
    st.round[slots] = 0
    st.done[slots] = False
    st.end_reason[slots] = 0
    st.accept[:, slots] = T.ALL_ACCEPT
    st.tiles_left[slots] = 0
    st.marker_holder[slots] = -1
    st.start_player[slots] = first_player
    if deal:
        start_rounds(st, slots)


def start_rounds(st: BatchState, slots: np.ndarray) -> None:
    """Deal the next round in `slots` (RULES §7); zero tiles dealt ends a game `no_tiles` (§10.5).

    The start player was set by `end_rounds` (the marker's holder, else the start player of the
    round just played); for a new game it is its first player.
    """
    start_player = st.start_player[slots]  # set by end_rounds (or reset_slots for a new game)
    next_round = st.round[slots] + 1
    dealt = deal(st, slots, next_round)
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


def refresh_accept(st: BatchState, slots: np.ndarray) -> None:
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
        acc |= T.SPREAD[empty_ok | started_ok] << r
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
        during wall tiling for the full pattern lines with a legal column (RULES §9.3); ``legal``
        is a 5-bit mask of legal columns. None picks the leftmost legal column (decision 9.3.1).

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
    if actions.dtype == np.int64:  # one comparison: negative ids are huge as uint64
        out_of_range = np.any(actions.view(np.uint64) >= limit)
    else:
        out_of_range = np.any((actions < 0) | (actions >= limit))
    if out_of_range:
        bad = int(np.flatnonzero((actions < 0) | (actions >= limit))[0])
        raise ValueError(
            f"action must be in 0..{limit - 1}; got {actions[bad]} in slot {slots[bad]}"
        )
    source = ACTION_SOURCE.take(actions)
    colour = ACTION_COLOUR.take(actions)
    seat = st.current[slots].astype(np.intp)

    src_flat = st.sources.reshape(-1)
    at = source * b_all + slots
    held = src_flat[at]
    shift = T.ACTION_SHIFT6.take(actions)
    taken = (held >> shift) & 63
    acc = st.accept.reshape(-1)[seat * b_all + slots]
    legal = (taken > 0) & (((acc | T.FLOOR_OK) & T.ACTION_NEEDS.take(actions)) != 0)
    if not legal.all():
        bad = int(np.flatnonzero(~legal)[0])
        raise ValueError(
            f"illegal action {actions[bad]} ({describe(actions[bad])}) in game slot {slots[bad]}"
        )

    # Take the tiles (§5.1); a factory's leftovers go to the centre.
    rest = held - (taken << shift)
    factory = source > 0
    centre = src_flat[slots]
    src_flat[at] = 0  # the factory taken from (a pick from the centre rewrites it just below)
    src_flat[slots] = rest + centre * factory
    # Presence: a factory loses every colour and the centre gains its leftovers' colours; a pick
    # from the centre only loses the colour taken.
    gained = np.where(factory, T.SPREAD11.take(T.nonzero_colours(rest)), 0)
    st.presence[slots] = (st.presence[slots] & ~T.ACTION_GONE.take(actions)) | gained
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
    cap = T.ACTION_CAP.take(actions)
    line_at = (seat * 5 + T.ACTION_LINE.take(actions)) * b_all + slots
    count_flat = st.line_count.reshape(-1)
    colour_flat = st.line_colour.reshape(-1)
    count = count_flat[line_at]
    placed = np.minimum(taken, np.maximum(cap - count, 0))
    excess = taken - placed
    new_count = count + placed
    count_flat[line_at] = new_count
    colour_flat[line_at] = np.where(placed > 0, colour, colour_flat[line_at])
    # The line now accepts only its colour, or nothing once full.
    line_bit = np.where(new_count < cap, T.ACTION_BIT.take(actions), 0)
    st.accept.reshape(-1)[seat_at] = (acc & T.ACTION_KEEP.take(actions)) | line_bit
    # Floor overflow goes to the lid at once (decision 5.3.2); tiles on the floor are counted in
    # the lid too, since they only reach it at cleanup and the lid is read only at a refill.
    floor_flat[seat_at] = np.minimum(floor + excess, FLOOR_SLOTS)
    st.lid.reshape(-1)[colour * b_all + slots] += excess.astype(np.int8)

    st.turn[slots] += 1
    st.current[slots] = T.NEXT_SEAT[st.players].take(seat)

    if not defer_round_end:
        ended = st.tiles_left[slots] == 0
        if ended.any():
            end_rounds(st, slots[ended], choose_columns)


# --- round end ---------------------------------------------------------------------------------


def end_rounds(st: BatchState, slots: np.ndarray, choose_columns=None, deal: bool = True) -> None:
    """Wall tiling, floor penalty, end check and the next deal for `slots` (RULES §6–§8).

    Every seat is tiled at once, row by row strictly top to bottom (decision 6.1.1). With
    ``deal=False`` the games that go on wait (not done, no tiles) for a `start_rounds` call.
    """
    tile_walls(st, slots, choose_columns)
    record_leaders(st, slots)  # before the end bonuses (sim.leaders)

    # The marker's holder starts next; untaken, the round's start player again (decision 10.4).
    holder = st.marker_holder[slots]
    next_start = np.where(holder >= 0, holder, st.start_player[slots]).astype(np.int8)
    st.start_player[slots] = next_start
    st.current[slots] = next_start

    # Bit 5r survives these ANDs only where row r is complete.
    wall = np.take(st.wall, slots, axis=1)
    full_rows = wall & (wall >> 1) & (wall >> 2) & (wall >> 3) & (wall >> 4) & T.COLUMN0
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
    walls = np.take(st.wall, slots, axis=1)
    row_colours = np.take(st.row_colours, slots, axis=1)
    rows = np.zeros(walls.shape, np.int16)
    cols = np.zeros(walls.shape, np.int16)
    colours = np.zeros(walls.shape, np.int16)
    for k in range(5):
        rows += (walls & T.ROW_BITS[k]) == T.ROW_BITS[k]
        cols += (walls & T.STRIDE5[k]) == T.STRIDE5[k]
        colours += (row_colours & T.STRIDE5[k]) == T.STRIDE5[k]
    return rows, cols, colours


# --- reading a batch ---------------------------------------------------------------------------


def records(st: BatchState, slots=None, seat_bot=None) -> GameRecords:
    """Records of the finished games in `slots` (default: every slot, all must be done)."""
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    if not st.done[slots].all():
        raise ValueError("records() needs finished games")
    rows, cols, colours = _completions(st, slots)
    scores = st.scores[:, slots].T
    provisional = winners(scores, rows.T)  # (n, P)
    natural = st.end_reason[slots] == END_ROW_COMPLETED
    n = slots.shape[0]
    if seat_bot is None:
        seat_bot = np.zeros((n, st.players), np.int8)
    return GameRecords(
        game=st.game[slots].copy(),
        first_player=st.first_player[slots].copy(),
        seat_bot=np.asarray(seat_bot, np.int8),
        scores=scores.astype(np.int32),
        end_reason=st.end_reason[slots].copy(),
        rounds=st.round[slots].copy(),
        turns=st.turn[slots].copy(),
        complete_rows=rows.T.astype(np.int8),
        complete_cols=cols.T.astype(np.int8),
        complete_colours=colours.T.astype(np.int8),
        bonus=st.bonus[:, slots].T.copy(),
        floor_penalty=st.floor_penalty[:, slots].T.copy(),
        marker_takes=st.marker_takes[:, slots].T.copy(),
        winners=provisional & natural[:, None],
        provisional_winners=provisional,
        lead_changes=st.lead_changes[slots].copy(),
        trailing_rounds=st.trailing_rounds[:, slots].T.copy(),
        last_trailing_round=st.last_trailing_round[:, slots].T.copy(),
    )


def wall_colours(st: BatchState, slots=None) -> np.ndarray:
    """(P, 25, n) int8 colour at cell 5*row + col of each wall, -1 when empty."""
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    occupied = (st.wall[:, None, slots] >> np.arange(25, dtype=np.int32)[None, :, None]) & 1
    if st.gray:  # a cell `wall` does not hold may keep the colour of an earlier game in the slot
        return np.where(occupied == 1, st.wall_cells[:, :, slots], -1).astype(np.int8)
    layout = np.array([wall_colour(r, c) for r in range(5) for c in range(5)], np.int8)
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
    refresh_accept(st, np.arange(games.shape[0]))
    return st
