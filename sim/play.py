"""The play loop: games [start, stop) of one configuration, with continuous batching.

A fixed number of slots play in lockstep; when a game ends its record is taken and the slot starts
the next game, so the batch stays full (notes/numpy_speed.md, technique 4). Which slot or step a
game runs in never changes how it plays: its deal, seats, start player and bot choices depend only
on (seed, game, configuration).
"""

from __future__ import annotations

import numpy as np

from . import engine, rng
from .records import GameRecords

DEFAULT_BATCH = 16384


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
    deal_keys: np.ndarray | None = None,
) -> GameRecords:
    """Play `games` to the end and return their records, in the order of `games`.

    Parameters
    ----------
    games : (N,) int64 game indices; first_player : (N,) seat starting round 1
    seat_bot : (N, P) index into `bots` of the bot in each seat
    bots : bot objects with ``act(st, slots, keys) -> actions`` and, for the gray wall,
        ``choose_columns(st, slots, seat, row, colours, legal, keys) -> columns``
    batch : number of slots played in lockstep
    deal_keys : (N,) deal-stream key of each game (`sim.spec.deal_keys`); default its own
    """
    games = np.asarray(games, np.int64)
    total = games.shape[0]
    if total == 0:
        raise ValueError("games must not be empty")
    seat_bot = np.asarray(seat_bot, np.int8)
    width = min(batch, total)
    if deal_keys is None:
        deal_keys = rng.game_keys(seed, games, rng.DEAL)
    st = engine.new_games(
        players, wall, seed, games[:width], first_player[:width], max_rounds, deal_keys[:width]
    )
    bot_keys = rng.game_keys(seed, games, rng.BOT)
    slot_pos = np.arange(width)  # position in `games` of the game in each slot
    next_pos = width
    parts: list[GameRecords] = []
    positions: list[np.ndarray] = []
    single = len(bots) == 1

    def choose_columns(st_, slots, seat, row, colours, legal):
        pos = slot_pos[slots]
        if single:
            return bots[0].choose_columns(st_, slots, seat, row, colours, legal, bot_keys[pos])
        out = np.empty(slots.shape[0], np.intp)
        owner = seat_bot[pos, seat]
        for k, bot in enumerate(bots):
            sel = owner == k
            if sel.any():
                out[sel] = bot.choose_columns(
                    st_, slots[sel], seat, row, colours[sel], legal[sel], bot_keys[pos[sel]]
                )
        return out

    columns = choose_columns if wall == "gray" else None
    # Round ends wait until enough games need one: fewer, larger calls (play is unchanged).
    round_end_batch = max(1, width // 6)
    running = np.arange(width)
    while True:
        if running.size:
            pos = slot_pos[running]
            if single:
                actions = bots[0].act(st, running, bot_keys[pos])
            else:
                actions = np.empty(running.shape[0], np.int64)
                owner = seat_bot[pos, st.current[running]]
                for k, bot in enumerate(bots):
                    sel = owner == k
                    if sel.any():
                        actions[sel] = bot.act(st, running[sel], bot_keys[pos[sel]])
            engine.play(st, running, actions, columns, defer_round_end=True)
        live = ~st.done
        waiting_mask = live & (st.tiles_left == 0)
        waiting = np.flatnonzero(waiting_mask)
        if waiting.size == 0 and running.size == 0:
            break
        if waiting.size >= round_end_batch or waiting.size == np.count_nonzero(live):
            # Tile the walls, take the records of the games that ended, start the next games in
            # their slots, and deal every game that goes on in one call.
            engine.end_rounds(st, waiting, columns, deal=False)
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
                # A deal of zero tiles ends a game at once (4 players only, rare): go round again.
                to_deal = to_deal[st.done[to_deal]]
            running = np.flatnonzero(~st.done & (st.tiles_left > 0))
        else:
            running = np.flatnonzero(live & ~waiting_mask)
    order = np.argsort(np.concatenate(positions), kind="stable")
    return GameRecords.concat(parts).take(order)


def play_games(config, seed: int, start: int, stop: int, max_rounds: int = 100) -> GameRecords:
    """Play games ``[start, stop)`` of one configuration (a `sim.spec.Configuration`).

    Seats follow the configuration's seating rule and round 1's start player is drawn from the
    deal stream (`sim.spec.seat_assignment`, `sim.spec.first_player`), so game g plays the same
    in any chunk. Bots with the same canonical spec share one bot object.
    """
    from .bots import make_bot
    from .spec import deal_keys, first_player, seat_assignment

    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop; got start={start}, stop={stop}")
    games = np.arange(start, stop, dtype=np.int64)
    specs = list(config.bot_specs)
    labels = [s.label for s in specs]
    unique = list(dict.fromkeys(labels))
    to_unique = np.array([unique.index(label) for label in labels], np.int8)
    seat_bot = seat_assignment(config, seed, games)
    bots = [make_bot(specs[labels.index(label)]) for label in unique]
    records = play_batch(
        config.players,
        config.wall,
        seed,
        games,
        first_player(seed, games, config.players, config.seating),
        to_unique[seat_bot],
        bots,
        max_rounds,
        deal_keys=deal_keys(seed, games, config.players, config.seating),
    )
    records.seat_bot = seat_bot
    return records
