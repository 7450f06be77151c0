"""Mid-game positions for bot tests: games played by the random bot, each for its own number of
turns, so one batch holds positions from every stage of a round."""

from __future__ import annotations

import numpy as np

from sim.bots import make_bot
from sim.jobs.spec import first_player
from sim.rules import engine
from sim.rules.rng import BOT, game_keys


def random_positions(players: int, wall: str, games: int = 40, seed: int = 5):
    """(state, bot keys) of `games` games after 0..44 random turns each (game g: 7·g mod 45)."""
    rand = make_bot("random")
    ids = np.arange(games)
    st = engine.new_games(players, wall, seed, ids, first_player(seed, ids, players))
    keys = game_keys(seed, ids, BOT)
    stop_at = (ids * 7) % 45  # each game stops after its own number of random turns
    for _ in range(45):
        slots = np.flatnonzero(~st.done & (st.turn < stop_at))
        if slots.size == 0:
            break
        engine.play(st, slots, rand.act(st, slots, keys[slots]), defer_round_end=True)
        waiting = np.flatnonzero(~st.done & (st.tiles_left == 0))
        if waiting.size:
            engine.end_rounds(st, waiting)
    return st, keys


def heuristic_positions(players: int, wall: str, games: int, seed: int, step: int,
                        rule_set=None):  # fmt: skip
    """Games of `heuristic` self-play, game g stopped after step·g mod 10·step picks (or at its
    end): positions from every stage of a game, late walls with complete rows and full lines."""
    bot = make_bot("heuristic")
    ids = np.arange(games)
    st = engine.new_games(players, wall, seed, ids, first_player(seed, ids, players),
                          rule_set=rule_set)  # fmt: skip
    stop_at = (ids * step) % (10 * step)
    for _ in range(10 * step):
        slots = np.flatnonzero(~st.done & (st.turn < stop_at))
        if slots.size == 0:
            break
        engine.play(st, slots, bot.act(st, slots), bot.choose_columns)
    return st
