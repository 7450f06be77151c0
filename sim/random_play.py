"""Random self-play, compiled: games where every seat plays the `random` bot, one game at a time.

The numpy engine plays a step of every game in lockstep, and each step costs a fixed ~0.1 ms
beside its cost per game. A random pick is so cheap that the fixed cost counts: above all at the
end of a call, where the last games left (a gray-wall job's games that run for dozens of rounds;
0.1 % reach the round cap) took over a thousand near-empty steps, a sixth of a 131,072-game call.
`compiled.play_random` plays each game to its end in one compiled loop instead, at about 0.1 µs a
pick: the same draws of `sim.rng`, so the same moves and the same records as the numpy engine
(tests/test_random_play.py checks them field for field).

Only calls of `MIN_GAMES` or more take this path: numba's import and the cached kernel's load
cost about 0.6 s of CPU once per process (`ready`), what a call of ~150,000 games saves. The
service's chunks of random games (50,000) and local runs' chunks (32,768 or more) take it, in
processes that play many; spec checks, small runs and the tests' games stay in numpy.
"""

from __future__ import annotations

import numpy as np

from . import compile_once, engine, rng
from .records import GameRecords

# A call plays at least this many games for the compiled path (see the docstring).
MIN_GAMES = 32_768
# Games set up at once: the state of a block (~200 bytes a game), whatever the call's size.
BLOCK = 16_384

compiled = None  # sim.compiled once `ready` has run


def plays_random(bot) -> bool:
    """The bot's picks and gray-wall columns are the `random` bot's."""
    from .bots.base import Bot
    from .bots.random_bot import RandomBot

    cls = type(bot)
    return cls.act is RandomBot.act and cls.choose_columns is Bot.choose_columns


def ready() -> None:
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
    games = np.arange(2)
    play_games(2, "gray", 0, games, np.zeros(2, np.int8), np.zeros((2, 2), np.int8))


def play_games(
    players: int,
    wall: str,
    seed: int,
    games: np.ndarray,
    first_player: np.ndarray,
    seat_bot: np.ndarray,
    max_rounds: int = 100,
    deal_keys: np.ndarray | None = None,
) -> GameRecords:
    """`play.play_batch` of `games` with the `random` bot in every seat (same arguments): the
    records in the order of `games`."""
    ready()
    if deal_keys is None:
        deal_keys = rng.game_keys(seed, games, rng.DEAL)
    bot_keys = rng.game_keys(seed, games, rng.BOT)
    parts = []
    for lo in range(0, games.shape[0], BLOCK):
        block = slice(lo, lo + BLOCK)
        st = engine.new_games(
            players, wall, seed, games[block], first_player[block], max_rounds, deal_keys[block]
        )
        finish(st, np.arange(st.batch), bot_keys[block])
        parts.append(engine.records(st, seat_bot=seat_bot[block]))
    return GameRecords.concat(parts)


def finish(st, slots: np.ndarray, bot_keys: np.ndarray) -> None:
    """Play the games in `slots` of `st` to their end in place, every seat the `random` bot;
    `bot_keys` (B,) are the bot-stream keys of the batch's slots. A game may be waiting for its
    round end (no tiles left); a finished one is left as it is."""
    ready()
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
        st.deal_key,
        st.max_rounds,
        bool(st.gray),
        st.factories,
    )
