"""The batch engine's calls: Azul over a whole batch of games at once (docs/rules.md §3–§10).

Layout and encoding live in `sim.rules.state` and `sim.rules.actions`; the rules themselves are
compiled (`sim.rules.compiled`, the one fast implementation), and every call here hands it a set of
game slots. A step plays one pick in every active game; when a game's factories and centre run dry
its round ends inside the same call (wall tiling, floor penalty, end check, and the deal of the next
round), so callers only ever see games waiting for a pick, or finished.

Randomness is the deal stream of `sim.rules.rng` (see its docstring): a game deals the same tiles in
any batch, slot or order.

A batch plays one rule set (`sim.rules.rulesets.RuleSet`, ``rule_set=`` of `new_games` and
`from_snapshots`; the printed game by default): the state carries it, and compiled code reads it
as the state's table (docs/rules.md, "Rule variants"). Action ids follow the state's factories:
``(factories + 1) * 30`` of them (`action_count`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import compile_once, rng
from . import tables as T
from .actions import describe, n_actions
from .constants import (
    END_REASONS,
    END_ROW_COMPLETED,
    wall_colour,
)
from .records import GameRecords
from .rulesets import PRINTED_RULES, RuleSet
from .state import BatchState, empty_state
from .tables import unpack_sources

# sim.rules.compiled once `kernels` has loaded it: numba's import and the cached machine code's load
# cost a process about half a second of CPU once (docs/engine.md).
compiled = None


def kernels():
    """`sim.rules.compiled`, compiled or loaded from numba's cache once per process, one process at
    a time (`compile_once.under_lock`); later calls return it at once."""
    global compiled
    if compiled is None:
        from . import compiled as module

        compiled = module  # set first: the warm-up below calls back into this module
        compile_once.under_lock(_warm)
    return compiled


def _warm() -> None:
    """Every batch call of the engine with the argument types of real calls (one signature for
    both walls and every player count)."""
    slots = np.arange(2)
    st = new_games(2, "gray", 0, slots, np.zeros(2, np.int8))  # start_rounds
    play(st, slots, legal_mask(st).argmax(axis=1))  # play_actions
    refresh_accept(st, slots)
    end_rounds(st, slots, _first_legal, deal=False)  # gray_row_legal, end_rounds
    counted, won = np.empty((3, 2, 2), np.int16), np.empty((2, 2), np.bool_)
    compiled.count_completions(st.arrays(), slots, counted, won)
    compiled.placement_table(np.empty(32 * 32 * 25, np.int64))
    columns, tables, keys = CompiledColumns.uniform(lambda s: np.zeros(2, np.uint64)).rules(
        st, slots
    )
    seat_bots = np.zeros((2, 2), np.int8)
    counts, given = np.zeros((5, 5), np.int64), np.zeros((1, 5, 2), np.int8)
    compiled.play_games(st.arrays(), slots, seat_bots, keys, columns, tables, counts, given)
    bot_picks(st, slots, keys, "greedy")


def _first_legal(st, slots, seat, row, colours, legal):
    return np.log2(legal & -legal).astype(np.int32)


# --- creating games ----------------------------------------------------------------------------


def new_games(
    players: int,
    wall: str,
    seed: int,
    games,
    first_player,
    max_rounds: int = 100,
    deal_keys=None,
    rule_set: RuleSet | None = None,
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
    deal_keys : (B,) uint64 deal-stream keys (`sim.jobs.spec.deal_keys`); default each game's own,
        ``rng.game_keys(seed, g, DEAL)`` (mirrored groups pass their shared key)
    rule_set : the games' rules (`sim.rules.rulesets.RuleSet`, e.g. ``RuleSet.of(config, spec)``);
        default the printed game. The wall and the round cap are `wall` and `max_rounds`.
    """
    if players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4; got {players}")
    if wall not in ("coloured", "gray"):
        raise ValueError(f"wall must be 'coloured' or 'gray'; got {wall!r}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1; got {max_rounds}")
    games = np.asarray(games, dtype=np.int64)
    rule_set = _rule_set(rule_set, wall, max_rounds)
    st = empty_state(players, wall == "gray", seed, max_rounds, games.shape[0], rule_set)
    reset_slots(st, np.arange(games.shape[0]), games, first_player, deal_keys=deal_keys)
    return st


def _rule_set(rule_set: RuleSet | None, wall: str, max_rounds: int) -> RuleSet:
    """`rule_set` (default the printed game) with the call's wall and round cap."""
    rule_set = PRINTED_RULES if rule_set is None else rule_set
    if not isinstance(rule_set, RuleSet):
        raise ValueError(
            f"rule_set must be a sim.rules.rulesets.RuleSet; got {type(rule_set).__name__}"
        )
    if rule_set.wall == wall and rule_set.max_rounds == max_rounds:
        return rule_set
    return RuleSet.from_dict({"wall": wall, "max_rounds": int(max_rounds)}, base=rule_set)


def action_count(st: BatchState) -> int:
    """The number of action ids of the games of `st`: ``(factories + 1) * 30``."""
    return n_actions(st.players, st.factories)


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
    st.bag[:, slots] = st.rule_set.tiles_per_colour
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
    st.leaders[slots] = 0
    st.lead_changes[slots] = 0
    st.trailing_rounds[:, slots] = 0
    st.last_trailing_round[:, slots] = 0
    st.decision_turns[slots] = 0
    st.legal_actions[slots] = 0
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
    round just played; with no marker, the seat after it); for a new game it is its first player.
    """
    counts = np.empty((st.factories, 5), np.int64)  # scratch: compiled code allocates nothing
    kernels().start_rounds(st.arrays(), np.ascontiguousarray(slots, np.int64), counts)


# --- legality ----------------------------------------------------------------------------------


def refresh_accept(st: BatchState, slots: np.ndarray) -> None:
    """Recompute the accept masks of every seat in `slots` (`compiled.line_accepts`)."""
    kernels().refresh_accept(st.arrays(), np.ascontiguousarray(slots, np.int64))


def legal_mask(st: BatchState) -> np.ndarray:
    """Dense legality of every action id for the seat to move (all False in finished games).

    Returns
    -------
    mask : (B, action_count(st)) bool
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
    slots = np.ascontiguousarray(slots, np.int64)
    actions = np.ascontiguousarray(actions, np.int64)
    limit = action_count(st)
    code = kernels().play_actions(st.arrays(), slots, actions, limit)
    if code >= 0:  # nothing was played
        bad, why = divmod(code, 2)
        if why == compiled.ACTION_OUT_OF_RANGE:
            raise ValueError(
                f"action must be in 0..{limit - 1}; got {actions[bad]} in slot {slots[bad]}"
            )
        raise ValueError(
            f"illegal action {actions[bad]} ({describe(actions[bad])}) in game slot {slots[bad]}"
        )
    if not defer_round_end:
        ended = slots[st.tiles_left[slots] == 0]
        if ended.size:
            end_rounds(st, ended, choose_columns)


def bot_picks(st: BatchState, slots: np.ndarray, keys: np.ndarray, bot: str) -> np.ndarray:
    """The action ids the compiled `random` or `greedy` bot (`bot`) chooses in the games of
    `slots` (`keys` their bot-stream keys): whole-game self-play's choices (`compiled.play_games`),
    for a line-up stepped with other bots."""
    k = kernels()
    kind = k.BOT_GREEDY if bot == "greedy" else k.BOT_RANDOM
    slots = np.ascontiguousarray(slots, np.int64)
    actions = np.empty(slots.shape[0], np.int64)
    k.choose_picks(st.arrays(), slots, kind, np.ascontiguousarray(keys, np.uint64), actions)
    return actions


# --- round end ---------------------------------------------------------------------------------


class CompiledColumns:
    """Gray-wall columns chosen inside the compiled round end (`sim.rules.compiled`'s column rules):
    for a call's games `slots`, ``rules(st, slots)`` gives each (game, seat) its rule (n, P) int8,
    the tables of column keys the rules k >= 0 index (K, 25,600) int16, and the games' bot-stream
    keys (n,) uint64 (the rule `COLUMNS_RANDOM` draws from them)."""

    def __init__(self, rules: Callable):
        self.rules = rules

    @staticmethod
    def of_table(table: np.ndarray) -> CompiledColumns:
        """Every seat the legal column of the highest key of `table` (`features.column_keys`)."""
        tables = np.ascontiguousarray(table, np.int16)[None]

        def rules(st, slots):
            n = slots.shape[0]
            return np.zeros((n, st.players), np.int8), tables, np.zeros(n, np.uint64)

        return CompiledColumns(rules)

    @staticmethod
    def uniform(keys_of: Callable) -> CompiledColumns:
        """Every seat uniformly random among the legal columns (the `random` bot's), from the bot
        keys ``keys_of(slots)`` of the games."""

        def rules(st, slots):
            n = slots.shape[0]
            random = np.full((n, st.players), kernels().COLUMNS_RANDOM, np.int8)
            return random, NO_TABLES, np.ascontiguousarray(keys_of(slots), np.uint64)

        return CompiledColumns(rules)


NO_TABLES = np.zeros((1, 32 * 32 * 25), np.int16)


def end_rounds(st: BatchState, slots: np.ndarray, choose_columns=None, deal: bool = True) -> None:
    """Wall tiling, floor penalty, end check and the next deal for `slots` (RULES §6–§8).

    Every seat is tiled at once, row by row strictly top to bottom (decision 6.1.1). On the gray
    wall the columns come from `choose_columns`: a `CompiledColumns`, chosen inside the compiled
    round end; a function (see `step`), asked row by row first; None, the leftmost legal
    column. With ``deal=False`` the games that go on wait (not done, no tiles) for a
    `start_rounds` call.
    """
    slots = np.ascontiguousarray(slots, np.int64)
    if slots.size:
        k = kernels()
        state = st.arrays()
        n = slots.shape[0]
        given = _NO_COLUMNS
        if not st.gray:
            columns, tables, keys = _NO_COLUMN_RULES, NO_TABLES, _NO_KEYS
        elif isinstance(choose_columns, CompiledColumns):
            columns, tables, keys = choose_columns.rules(st, slots)
        elif choose_columns is None:
            columns = np.full((n, st.players), k.COLUMNS_LEFTMOST, np.int8)
            tables, keys = NO_TABLES, _NO_KEYS
        else:
            given = _asked_columns(st, state, slots, choose_columns)
            columns = np.full((n, st.players), k.COLUMNS_GIVEN, np.int8)
            tables, keys = NO_TABLES, _NO_KEYS
        k.end_rounds(state, slots, columns, tables, keys, given)
    if deal:
        going = slots[~st.done[slots]]
        if going.size:
            start_rounds(st, going)


_NO_COLUMN_RULES = np.zeros((1, 4), np.int8)
_NO_KEYS = np.zeros(1, np.uint64)
_NO_COLUMNS = np.zeros((1, 5, 4), np.int8)


def _asked_columns(st, state, slots: np.ndarray, choose_columns) -> np.ndarray:
    """(n, 5, P) int8: the column `choose_columns` picks for each full line with a legal column,
    asked row by row (a row's legal columns depend on the rows above), before anything is tiled:
    the function sees the state as the round ended (RULES §9.3).

    A `choose_columns` whose ``all_seats`` attribute is true takes every seat of the row in one
    call (``seat`` an array, element by element with the slots); otherwise it is called seat by
    seat with an int ``seat``, as `sim.bots.base` describes.
    """
    n = slots.shape[0]
    given = np.zeros((n, 5, st.players), np.int8)
    legal = np.empty((st.players, n), np.int64)
    for row in range(5):
        kernels().gray_row_legal(state, slots, row, given, legal)
        at = np.flatnonzero(legal)  # flat seat * n + j, in seat order
        if at.size == 0:
            continue
        seat, j = np.divmod(at, n)
        ok = legal.reshape(-1).take(at)
        colour = np.maximum(st.line_colour[seat, row, slots.take(j)], 0).astype(np.int32)
        if getattr(choose_columns, "all_seats", False):
            chosen = np.asarray(choose_columns(st, slots.take(j), seat, row, colour, ok), np.int32)
            _check_columns(chosen, ok, seat, row)
        else:
            chosen = np.empty(at.size, np.int32)
            ends = np.searchsorted(seat, np.arange(1, st.players + 1))
            for p in range(st.players):
                lo, hi = (ends[p - 1] if p else 0), ends[p]
                if lo == hi:
                    continue
                part = np.asarray(
                    choose_columns(st, slots.take(j[lo:hi]), p, row, colour[lo:hi], ok[lo:hi]),
                    np.int32,
                )
                _check_columns(part, ok[lo:hi], p, row)
                chosen[lo:hi] = part
        given[j, row, seat] = chosen
    return given


# _COLUMN_BIT[c + 1]: bit c of a 5-bit column mask for c in 0..4, and 0 for anything else (the
# look-up clips c + 1 into 0..6).
_COLUMN_BIT = np.array([0, 1, 2, 4, 8, 16, 0], np.int32)


def _check_columns(chosen: np.ndarray, legal: np.ndarray, seat, row: int) -> None:
    """Raise ValueError unless every chosen column is one of its 5-bit `legal` mask's."""
    if chosen.shape != legal.shape:
        raise ValueError(
            f"choose_columns returned {chosen.shape[0] if chosen.ndim else 1} columns for "
            f"{legal.shape[0]} lines (row {row})"
        )
    bad = (_COLUMN_BIT.take(chosen + 1, mode="clip") & legal) == 0
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        who = seat if np.isscalar(seat) else int(seat[first])
        raise ValueError(f"choose_columns returned an illegal column for seat {who}, row {row}")


# --- reading a batch ---------------------------------------------------------------------------


def records(st: BatchState, slots=None, seat_bot=None) -> GameRecords:
    """Records of the finished games in `slots` (default: every slot, all must be done)."""
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    if not st.done[slots].all():
        raise ValueError("records() needs finished games")
    slots = np.ascontiguousarray(slots, np.int64)
    counted = np.empty((3, st.players, slots.shape[0]), np.int16)
    won = np.empty((st.players, slots.shape[0]), np.bool_)
    kernels().count_completions(st.arrays(), slots, counted, won)
    rows, cols, colours = counted
    scores = st.scores[:, slots].T
    provisional = np.ascontiguousarray(won.T)  # (n, P): §8.3, in compiled code
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
        decision_turns=st.decision_turns[slots].copy(),
        legal_actions=st.legal_actions[slots].copy(),
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
    rule_set: RuleSet | None = None,
) -> BatchState:
    """A batch of games set up from canonical snapshots (the `snapshot` format), for tests.

    Each game continues exactly as from that position: its later deals come from (seed, game).
    Records count floor penalties and marker takes from this point on. A snapshot's
    ``start_player`` (the seat that started the round; default its ``current``) matters where
    nobody takes the marker, and always with no marker (`rule_set`, as for `new_games`).
    """
    games = np.asarray(games, dtype=np.int64)
    if len(snapshots) != games.shape[0]:
        raise ValueError("need one snapshot per game")
    rule_set = _rule_set(rule_set, wall, max_rounds)
    factories = rule_set.factories_at(players)
    for b, s in enumerate(snapshots):
        if len(s["factories"]) != factories:
            raise ValueError(
                f"snapshots[{b}].factories lists {len(s['factories'])} factories; the rules "
                f"have {factories} at {players} players"
            )
    st = empty_state(players, wall == "gray", seed, max_rounds, games.shape[0], rule_set)
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
