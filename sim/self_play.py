"""Self-play in compiled code: games where every seat plays one bot that can play a whole game so.

The numpy engine plays a step of every game in lockstep, and each step costs a fixed ~0.1 ms
beside its cost per game. For cheap bots that fixed cost counts: above all at the end of a call,
where the last games left (a gray-wall job's games that run for dozens of rounds; 0.1 % reach the
round cap) took over a thousand near-empty steps, a sixth of a 131,072-game random call. Two
bots play every game of a state to its end in compiled loops over single games instead, with the
same decisions and draws, so the same games and records as the numpy engine
(tests/test_self_play.py checks them field for field):

- `random`: `compiled.play_random`, about 0.1 µs a pick (`play_random`);
- `heuristic`, with any weights: the search bots' compiled play-outs, round after round
  (`bots.playout.play_games_out`).

A subclass of either may play otherwise, so only the classes themselves do (`finisher`).

Only calls of `MIN_GAMES` or more take this path: numba's import and the cached kernels' load
cost about 0.5 s of CPU once per process, so spec checks, small runs, replays and recordings stay
in numpy; the service's chunks (20,000 heuristic or 83,000 random games) and local runs' chunks
(13,000 heuristic or 32,768 random games or more) take it, in processes that play many.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import compile_once, engine, rng
from .records import GameRecords

# A call plays at least this many games for the compiled path (see the docstring).
MIN_GAMES = 16_384
# Games set up at once: the state of a block (~200 bytes a game), whatever the call's size.
BLOCK = 16_384

compiled = None  # sim.compiled once `_ready` has run


def finisher(bots: list) -> Callable | None:
    """``finish(st, bot_keys)``, every game of a state played to its end in compiled code, for a
    line-up of one bot (every seat the same spec) that is a `RandomBot` or a `HeuristicBot`
    (the classes themselves, not a subclass); None otherwise."""
    from .bots.heuristic import HeuristicBot
    from .bots.random_bot import RandomBot

    if len(bots) != 1:
        return None
    bot = bots[0]
    if type(bot) is RandomBot:
        return lambda st, keys: play_random(st, np.arange(st.batch), keys)
    if type(bot) is HeuristicBot:
        from .bots.playout import play_games_out

        return lambda st, keys: play_games_out(bot, st)
    return None


def play_games(
    finish: Callable,
    players: int,
    wall: str,
    seed: int,
    games: np.ndarray,
    first_player: np.ndarray,
    seat_bot: np.ndarray,
    max_rounds: int = 100,
    deal_keys: np.ndarray | None = None,
) -> GameRecords:
    """`play.play_batch` of `games` (same arguments) with `finish` (`finisher`'s): the records in
    the order of `games`."""
    if deal_keys is None:
        deal_keys = rng.game_keys(seed, games, rng.DEAL)
    bot_keys = rng.game_keys(seed, games, rng.BOT)
    parts = []
    for lo in range(0, games.shape[0], BLOCK):
        block = slice(lo, lo + BLOCK)
        st = engine.new_games(
            players, wall, seed, games[block], first_player[block], max_rounds, deal_keys[block]
        )
        finish(st, bot_keys[block])
        parts.append(engine.records(st, seat_bot=seat_bot[block]))
    return GameRecords.concat(parts)


def _ready() -> None:
    """Compile `compiled.play_random` (or load it from numba's cache) once per process, one
    process at a time (`compile_once.under_lock`)."""
    global compiled
    if compiled is not None:
        return
    from . import compiled as kernels

    compiled = kernels
    compile_once.under_lock(_warm)


def _warm() -> None:
    """The kernel, with the argument types of real calls (one signature for both walls)."""
    st = engine.new_games(2, "gray", 0, np.arange(2), np.zeros(2, np.int8))
    play_random(st, np.arange(2), np.zeros(2, np.uint64))


def play_random(st, slots: np.ndarray, bot_keys: np.ndarray) -> None:
    """Play the games in `slots` of `st` to their end in place, every seat the `random` bot;
    `bot_keys` (B,) are the bot-stream keys of the batch's slots. A game may be waiting for its
    round end (no tiles left); a finished one is left as it is."""
    _ready()
    compiled.play_random(
        np.ascontiguousarray(slots, np.int64),
        np.ascontiguousarray(bot_keys, np.uint64),
        st.sources,
        st.presence,
        st.marker_in_centre,
        st.marker_holder,
        st.tiles_left,
        st.bag,
        st.lid,
        st.line_colour,
        st.line_count,
        st.wall,
        st.row_colours,
        st.col_colours,
        st.wall_cells,
        st.accept,
        st.floor,
        st.scores,
        st.current,
        st.start_player,
        st.round,
        st.turn,
        st.done,
        st.end_reason,
        st.floor_penalty,
        st.marker_takes,
        st.bonus,
        st.lead_changes,
        st.trailing_rounds,
        st.last_trailing_round,
        st.deal_key,
        st.max_rounds,
        bool(st.gray),
        st.factories,
    )
