"""The play loop, the one driver of the batch engine: games [start, stop) of one configuration
with continuous batching, and single games replayed or recorded step by step.

A fixed number of slots play in lockstep; when a game ends its record is taken and the slot starts
the next game, so the batch stays full (docs/engine.md). Which slot or step a
game runs in never changes how it plays: its deal, seats, start player and bot choices depend only
on (seed, game, configuration).

Every call into the rules is the compiled engine's (`sim.rules.engine`, `sim.rules.compiled`); the
bots choose between the calls. A line-up whose bots all choose in compiled code (`random` and
`greedy` in any mix, with or without one `heuristic`) plays each game whole in compiled code
instead (`sim.jobs.self_play`): the same games and records.

Callers that want more than the records pass a `Recorder` (`service.replay` records every step of
one game, `sim.rules.goldens` a golden file); its hooks see the state between the engine calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..rules import engine, rng
from ..rules.records import GameRecords
from ..rules.rulesets import RuleSet
from . import self_play

DEFAULT_BATCH = 16384

# Games whose round ran dry wait (``tiles_left == 0``) until ``width // ROUND_END_FRACTION`` of
# them need a round end: wall tiling and the deal then run once for all of them, because a call's
# fixed cost is large beside its cost per game, while the waiting slots only idle a few steps.
# Play is unchanged (each game's calls depend only on itself). bench/round_end.py, uniform-random
# games, batch 16384, games per CPU second (noisy, shared machine): 2 players 120k with a third
# against 94k with every round end at once (a sixth: 114k, a twelfth: 106k); 4 players 62k
# against 52k (a sixth: 61k) (bench/results/round_end.json). A sixth was best before the round
# ends got cheaper; a third is also faster for greedy (+5-9 %), the gray wall (+4-8 %) and no
# slower for the heuristic.
ROUND_END_FRACTION = 3
# Once every game has started, the games left move to a batch of their own size when they fill
# at most 1 / COMPACT_FRACTION of the slots (and the batch has COMPACT_MIN slots or more): the
# last games of a job, above all the gray wall's games that run to the round cap, are otherwise
# played for hundreds of steps in a batch of mostly empty slots. Play is unchanged (a game's
# play does not depend on its slot).
COMPACT_FRACTION = 4
COMPACT_MIN = 64


class Recorder:
    """Hooks into `play_batch`, called with the state and the slots concerned (``st.game[slots]``
    are their game indices). Each does nothing here; a subclass records what it needs."""

    def dealt(self, st, slots: np.ndarray) -> None:
        """A round was dealt in `slots` (round 1 included) and is about to be played."""

    def picking(self, st, slots: np.ndarray, actions: np.ndarray) -> None:
        """The bots chose `actions` for `slots`; the picks are not played yet."""

    def picked(self, st, slots: np.ndarray, actions: np.ndarray) -> None:
        """The picks `actions` were played in `slots`."""

    def tiled(self, st, slots: np.ndarray) -> None:
        """The walls of `slots` were tiled (floor penalty and end check done; not dealt yet)."""


@dataclass
class Table:
    """Who plays games ``games`` of a configuration: the set-up shared by every caller.

    ``seat_bot[i, p]`` is the index into the configuration's bots of the bot in seat ``p`` of game
    ``games[i]`` (`sim.jobs.spec.seat_assignment`); ``first_player`` its round-1 start player
    (`sim.jobs.spec.first_player`); ``deal_keys`` its deal-stream key (`sim.jobs.spec.deal_keys`:
    shared by the games of a mirrored group). Bots with the same canonical spec share one object of
    `bots`; ``seat_object[i, p]`` indexes `bots`.
    """

    config: Any  # sim.jobs.spec.Configuration
    seed: int
    games: np.ndarray
    first_player: np.ndarray
    seat_bot: np.ndarray
    bots: list
    seat_object: np.ndarray
    deal_keys: np.ndarray


def set_table(config, seed: int, games: np.ndarray) -> Table:
    """The `Table` of games `games` of `config` (a `sim.jobs.spec.Configuration`) in a job of
    `seed`."""
    from ..bots import make_bot
    from .spec import deal_keys, first_player, seat_assignment

    games = np.asarray(games, np.int64)
    specs = list(config.bot_specs)
    labels = [s.label for s in specs]
    unique = list(dict.fromkeys(labels))
    to_unique = np.array([unique.index(label) for label in labels], np.int8)
    seat_bot = seat_assignment(config, seed, games)
    bots = [make_bot(specs[labels.index(label)]) for label in unique]
    return Table(
        config,
        seed,
        games,
        first_player(seed, games, config.players, config.seating),
        seat_bot,
        bots,
        to_unique[seat_bot],
        deal_keys(seed, games, config.players, config.seating),
    )


class BotClock:
    """CPU time and decisions of each bot of a batch, for the bots that account theirs.

    A bot class with ``cpu_accounted = True`` (the external and budgeted-search bots) has the CPU
    of its calls measured: this process's (`time.process_time_ns` around each call) plus what it
    reports spending elsewhere (``outside_cpu_ns()``, an external program's). ``moves[k]`` counts
    the picks bot ``k`` chose; gray-wall column choices add to its time, not its moves.
    """

    def __init__(self, bots: list):
        self.on = [bool(getattr(bot, "cpu_accounted", False)) for bot in bots]
        self.ns = [0] * len(bots)
        self.moves = [0] * len(bots)

    def call(self, k: int, bot, fn, moves: int):
        if not self.on[k]:
            return fn()
        outside = getattr(bot, "outside_cpu_ns", None)
        o0, t0 = (outside() if outside else 0), time.process_time_ns()
        out = fn()
        self.ns[k] += time.process_time_ns() - t0 + ((outside() - o0) if outside else 0)
        self.moves[k] += moves
        return out

    def accounted(self) -> dict[int, tuple[int, int]]:
        """``{bot index: (CPU ns, moves)}`` of the accounted bots."""
        return {k: (self.ns[k], self.moves[k]) for k, on in enumerate(self.on) if on}


def _by_bot(
    bots: list,
    owner: Callable[[], np.ndarray],
    n: int,
    dtype,
    call,
    clock: BotClock | None = None,
    moves: bool = False,
) -> np.ndarray:
    """``call(bot, sel)`` for each bot on the selection `sel` of the `n` slots it owns, put
    together; with one bot, ``call(bots[0], slice(None))`` (no ownership needed). `clock`
    measures the calls (`moves`: each slot is a pick)."""

    def run(k, bot, sel, count):
        if clock is None:
            return call(bot, sel)
        return clock.call(k, bot, lambda: call(bot, sel), count if moves else 0)

    if len(bots) == 1:
        return run(0, bots[0], slice(None), n)
    out = np.empty(n, dtype)
    owners = owner()
    for k, bot in enumerate(bots):
        sel = owners == k
        if sel.any():
            out[sel] = run(k, bot, sel, int(np.count_nonzero(sel)))
    return out


def _compiled_columns(
    bots: list, seat_bot: np.ndarray, slot_pos, bot_keys: np.ndarray, rule_set: RuleSet
):
    """An `engine.CompiledColumns` for the bots' gray-wall columns when every bot's choice is
    compiled (`self_play.column_rules`); None otherwise. ``slot_pos()`` is the position in the
    call's games of each slot's game (it changes as slots take new games)."""
    found = self_play.column_rules(bots, rule_set)
    if found is None:
        return None
    rule_of_bot, stacked = found

    def rules(st, slots):
        pos = slot_pos()[slots]
        return rule_of_bot[seat_bot[pos]], stacked, bot_keys[pos]

    return engine.CompiledColumns(rules)


def play_batch(
    players: int,
    wall: str,
    seed: int,
    games: np.ndarray,
    first_player: np.ndarray,
    seat_bot: np.ndarray,
    bots: list,
    max_rounds: int = 100,
    batch: int = DEFAULT_BATCH,
    recorder: Recorder | None = None,
    deal_keys: np.ndarray | None = None,
    rule_set: RuleSet | None = None,
) -> GameRecords:
    """Play `games` to the end and return their records, in the order of `games`.

    Parameters
    ----------
    games : (N,) int64 game indices; first_player : (N,) seat starting round 1
    seat_bot : (N, P) index into `bots` of the bot in each seat
    bots : bot objects with ``act(st, slots, keys) -> actions`` and, for the gray wall,
        ``choose_columns(st, slots, seat, row, colours, legal, keys) -> columns``
    batch : number of slots played in lockstep
    recorder : hooks called between the engine calls (`Recorder`)
    deal_keys : (N,) deal-stream key of each game (`sim.jobs.spec.deal_keys`); default its own
    rule_set : the games' rules (`sim.rules.rulesets.RuleSet`); default the printed game
    """
    games = np.asarray(games, np.int64)
    total = games.shape[0]
    if total == 0:
        raise ValueError("games must not be empty")
    seat_bot = np.asarray(seat_bot, np.int8)
    finish = self_play.finisher(bots) if recorder is None and total >= self_play.MIN_GAMES else None
    if finish is not None:  # self-play in compiled code: the same games (`sim.jobs.self_play`)
        return self_play.play_games(
            finish,
            players,
            wall,
            seed,
            games,
            first_player,
            seat_bot,
            max_rounds,
            deal_keys,
            rule_set,
        )
    width = min(batch, total)
    if deal_keys is None:
        deal_keys = rng.game_keys(seed, games, rng.DEAL)
    st = engine.new_games(
        players,
        wall,
        seed,
        games[:width],
        first_player[:width],
        max_rounds,
        deal_keys[:width],
        rule_set,
    )
    bot_keys = rng.game_keys(seed, games, rng.BOT)
    slot_pos = np.arange(width)  # position in `games` of the game in each slot
    clock = BotClock(bots)
    next_pos = width
    parts: list[GameRecords] = []
    positions: list[np.ndarray] = []

    def choose_columns(st_, slots, seat, row, colours, legal):
        pos = slot_pos[slots]
        return _by_bot(
            bots,
            lambda: seat_bot[pos, seat],
            slots.shape[0],
            np.intp,
            lambda bot, sel: bot.choose_columns(
                st_,
                slots[sel],
                seat if np.isscalar(seat) else seat[sel],
                row,
                colours[sel],
                legal[sel],
                bot_keys[pos[sel]],
            ),
            clock,
        )

    # Every seat of a row in one call when every bot's column choice works element by element
    # (`Bot.all_seats`; the built-in bots'); a plugin's gets one int seat at a time.
    choose_columns.all_seats = all(getattr(bot, "all_seats", False) for bot in bots)
    columns = choose_columns if wall == "gray" else None
    compiled_columns = _compiled_columns(bots, seat_bot, lambda: slot_pos, bot_keys, st.rule_set)
    if wall == "gray" and compiled_columns is not None:
        columns = compiled_columns  # every bot's column choice is made in compiled code

    def act(slots):
        pos = slot_pos[slots]
        return _by_bot(
            bots,
            lambda: seat_bot[pos, st.current[slots]],
            slots.shape[0],
            np.int64,
            lambda bot, sel: bot.act(st, slots[sel], bot_keys[pos[sel]]),
            clock,
            moves=True,
        )

    round_end_batch = max(1, width // ROUND_END_FRACTION)
    running = np.arange(width)
    if recorder:
        recorder.dealt(st, running[~st.done])
    while True:
        if running.size:
            actions = act(running)
            if recorder:
                recorder.picking(st, running, actions)
            engine.play(st, running, actions, columns, defer_round_end=True)
            if recorder:
                recorder.picked(st, running, actions)
        live = ~st.done
        waiting_mask = live & (st.tiles_left == 0)
        waiting = np.flatnonzero(waiting_mask)
        if waiting.size == 0 and running.size == 0:
            break
        if waiting.size >= round_end_batch or waiting.size == np.count_nonzero(live):
            # Tile the walls, take the records of the games that ended, start the next games in
            # their slots, and deal every game that goes on in one call.
            engine.end_rounds(st, waiting, columns, deal=False)
            if recorder:
                recorder.tiled(st, waiting)
            to_deal = waiting
            while to_deal.size:
                finished = to_deal[st.done[to_deal]]
                if finished.size:
                    fpos = slot_pos[finished]
                    parts.append(engine.records(st, finished, seat_bot[fpos]))
                    positions.append(fpos)
                    fresh = finished[: max(0, total - next_pos)]
                    if fresh.size:
                        new_pos = np.arange(next_pos, next_pos + fresh.size)
                        next_pos += fresh.size
                        slot_pos[fresh] = new_pos
                        engine.reset_slots(
                            st,
                            fresh,
                            games[new_pos],
                            first_player[new_pos],
                            deal=False,
                            deal_keys=deal_keys[new_pos],
                        )
                to_deal = to_deal[~st.done[to_deal]]
                engine.start_rounds(st, to_deal)
                if recorder:
                    recorder.dealt(st, to_deal[~st.done[to_deal]])
                # A deal of zero tiles ends a game at once (4 players only, rare): go round again.
                to_deal = to_deal[st.done[to_deal]]
            running = np.flatnonzero(~st.done & (st.tiles_left > 0))
            if next_pos >= total and recorder is None:
                # Every game has started: once most slots are empty, the games left are moved
                # to a smaller batch, so that no step pays for the empty slots.
                keep = np.flatnonzero(~st.done)
                if 0 < keep.size * COMPACT_FRACTION <= st.batch and st.batch >= COMPACT_MIN:
                    st = st.take(keep)
                    slot_pos = slot_pos[keep]
                    running = np.flatnonzero(st.tiles_left > 0)
        else:
            running = np.flatnonzero(live & ~waiting_mask)
    order = np.argsort(np.concatenate(positions), kind="stable")
    records = GameRecords.concat(parts).take(order)
    accounted = clock.accounted()
    if accounted:  # not a field: a measurement of this call, not of the games (`BotClock`)
        records.cpu = accounted
    return records


def play_table(
    table: Table,
    max_rounds: int = 100,
    batch: int = DEFAULT_BATCH,
    recorder: Recorder | None = None,
) -> GameRecords:
    """`play_batch` of a `Table` under its configuration's rules (`RuleSet.of`, with the round
    cap `max_rounds`); the records' ``seat_bot`` index the configuration's bots."""
    config = table.config
    records = play_batch(
        config.players,
        config.wall,
        table.seed,
        table.games,
        table.first_player,
        table.seat_object,
        table.bots,
        max_rounds,
        batch,
        recorder,
        table.deal_keys,
        RuleSet.of(config),
    )
    records.seat_bot = table.seat_bot
    if hasattr(records, "cpu"):  # by label (`table.bots` are in their first seats' order)
        labels = list(dict.fromkeys(s.label for s in config.bot_specs))
        records.cpu = {labels[k]: v for k, v in records.cpu.items()}
    return records


def play_games(config, seed: int, start: int, stop: int, max_rounds: int = 100) -> GameRecords:
    """Play games ``[start, stop)`` of one configuration (a `sim.jobs.spec.Configuration`).

    Seats follow the configuration's seating rule and round 1's start player is drawn from the
    deal stream (`set_table`), so game g plays the same in any chunk.
    """
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop; got start={start}, stop={stop}")
    return play_table(set_table(config, seed, np.arange(start, stop, dtype=np.int64)), max_rounds)
