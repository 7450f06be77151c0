"""Whole games in compiled code, for line-ups whose every bot's choices are compiled.

`play.play_batch` steps every game of a batch in lockstep, a call into the compiled engine per
pick for all games at once and the bots' choices in between; each step has a fixed cost beside
its cost per game, above all at the end of a call, where the last games left (a gray-wall job's
games that run for dozens of rounds) take a thousand near-empty steps. Line-ups whose bots choose
in compiled code play each game to its end in one compiled loop instead, through the same engine
functions (`sim.rules.compiled`), with the same decisions and draws, so the same games and records
(tests/test_self_play.py checks them field for field):

- any mix of `random` and `greedy`: `compiled.play_games` (their picks `random_pick`,
  `greedy_pick`; their gray-wall columns the compiled column rules);
- `heuristic` self-play, with any weights: the search bots' compiled play-outs, round after
  round (`bots.playout.play_games_out`);
- one `heuristic` (any weights) with any mix of `random` and `greedy`: the same play-outs, each
  seat's pick its own bot's (`bots.playout.play_line_up`).

A subclass of these may play otherwise, so only the classes themselves do (`finisher`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..rules import engine, rng
from ..rules.records import GameRecords

# A call of this many games or more plays them whole (tests raise it to compare the two paths).
MIN_GAMES = 1
# Games set up at once: the state of a block (~200 bytes a game), whatever the call's size.
BLOCK = 16_384


def finisher(bots: list) -> Callable | None:
    """``finish(st, bot_keys, seat_bot)``, every game of a state played to its end in compiled
    code (``seat_bot`` (B, P) indexes `bots`), for a line-up of `RandomBot` and `GreedyBot` in any
    mix, or of one `HeuristicBot` with any mix of those (the classes themselves, not a subclass);
    None otherwise."""
    from ..bots.greedy import GreedyBot
    from ..bots.heuristic import HeuristicBot
    from ..bots.random_bot import RandomBot

    def own(bot) -> bool:  # no method of the class replaced on the instance
        return all(
            getattr(getattr(bot, name), "__func__", None) is getattr(type(bot), name)
            for name in ("act", "choose_columns")
        )

    if not all(own(bot) for bot in bots) or column_rules(bots) is None:
        return None
    kinds = {RandomBot: "random", GreedyBot: "greedy", HeuristicBot: "heuristic"}
    if not all(type(bot) in kinds for bot in bots):
        return None
    seat_kind = np.array([_BOT_KIND[kinds[type(bot)]] for bot in bots], np.int8)
    heuristic = [bot for bot in bots if type(bot) is HeuristicBot]
    if not heuristic:
        return lambda st, keys, seat_bot: play_compiled(st, keys, seat_kind[seat_bot])
    if len(heuristic) > 1:  # one set of weights per play-out
        return None
    from ..bots.playout import play_games_out, play_line_up

    if len(bots) == 1:
        return lambda st, keys, seat_bot: play_games_out(bots[0], st)

    def finish(st, keys, seat_bot):
        rule_of_bot, tables = column_rules(bots, st.rule_set)
        rules = np.ascontiguousarray(rule_of_bot[seat_bot])
        columns = engine.CompiledColumns(lambda st_, slots: (rules[slots], tables, keys[slots]))
        play_line_up(heuristic[0], st, seat_kind[seat_bot], keys, columns)

    return finish


# `compiled.BOT_*` and `kernels.BOT_HEURISTIC`, by bot name (literal: neither module is imported
# until a game is played).
_BOT_KIND = {"random": 0, "greedy": 1, "heuristic": 2}


def column_rules(bots: list, rule_set=None):
    """``(rule_of_bot, tables)`` when every bot's gray-wall column choice is compiled
    (`bots.base.column_table`, its keys weighed by `rule_set`'s bonuses): each bot's compiled
    column rule (len(bots),) int8 (`compiled.COLUMNS_RANDOM`, or the index of its table in
    `tables`), and the tables (K, 25,600) int16; None otherwise."""
    from ..bots.base import UNIFORM_COLUMNS, column_table
    from ..rules.rulesets import PRINTED_RULES

    found = [column_table(bot, rule_set or PRINTED_RULES) for bot in bots]
    if any(table is None for table in found):
        return None
    tables, rule_of_bot = [], []
    for table in found:
        if isinstance(table, str) and table == UNIFORM_COLUMNS:
            rule_of_bot.append(_COLUMNS_RANDOM)
            continue
        for k, known in enumerate(tables):
            if known is table or np.array_equal(known, table):
                rule_of_bot.append(k)
                break
        else:
            rule_of_bot.append(len(tables))
            tables.append(table)
    stacked = np.stack(tables).astype(np.int16) if tables else engine.NO_TABLES
    return np.array(rule_of_bot, np.int8), stacked


_COLUMNS_RANDOM = -1  # `compiled.COLUMNS_RANDOM` (literal, as `_BOT_KIND`)


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
    rule_set=None,
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
            players,
            wall,
            seed,
            games[block],
            first_player[block],
            max_rounds,
            deal_keys[block],
            rule_set,
        )
        finish(st, bot_keys[block], seat_bot[block])
        parts.append(engine.records(st, seat_bot=seat_bot[block]))
    return GameRecords.concat(parts)


def play_compiled(st, bot_keys: np.ndarray, seat_kind: np.ndarray, slots=None) -> None:
    """Play the games in `slots` (default all) of `st` to their end in place, seat p of slot b the
    compiled bot ``seat_kind[b, p]`` (`compiled.BOT_RANDOM`, `BOT_GREEDY`); `bot_keys` (B,) are
    the bot-stream keys of the batch's slots. A game may be waiting for its round end (no tiles
    left); a finished one is left as it is."""
    from ..bots.features import column_keys

    kernels = engine.kernels()
    slots = np.arange(st.batch) if slots is None else np.asarray(slots)
    slots = np.ascontiguousarray(slots, np.int64)
    seat_kind = np.ascontiguousarray(np.asarray(seat_kind, np.int8).take(slots, axis=0))
    # Column rules: random's uniform, greedy's the highest of `column_keys(0.0)` (table 0).
    columns = np.where(seat_kind == kernels.BOT_GREEDY, 0, kernels.COLUMNS_RANDOM).astype(np.int8)
    tables = column_keys(0.0)[None]
    keys = np.ascontiguousarray(np.asarray(bot_keys, np.uint64).take(slots))
    counts = np.zeros((st.factories, 5), np.int64)
    given = np.zeros((1, 5, st.players), np.int8)
    kernels.play_games(st.arrays(), slots, seat_kind, keys, columns, tables, counts, given)


def play_random(st, slots: np.ndarray, bot_keys: np.ndarray) -> None:
    """`play_compiled` with the `random` bot in every seat."""
    play_compiled(st, bot_keys, np.zeros((st.batch, st.players), np.int8), slots)
