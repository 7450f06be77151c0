"""Replay one game of a job move by move (the ``ReplayGame`` RPC; ``azulsim replay`` renders it,
`service.cli.replay`).

Game ``g`` of a configuration depends only on ``(seed, g, configuration)`` (DESIGN.md §2), so it
can be played again alone: the batch engine runs a batch of one game with the job's bots, seats
(`sim.spec.seat_assignment`) and start player (`sim.spec.first_player`), in the same order of
calls as `sim.play.play_batch` — picks, then wall tiling, then the next deal — and records the
table (`sim.engine.snapshot`) after each of them. One game is a few hundred engine calls on a
batch of one: milliseconds, so the server may do it in-process; it never plays batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim import engine, rng
from sim.actions import describe
from sim.bots import make_bot
from sim.constants import END_REASONS
from sim.spec import JobSpec, first_player, seat_assignment

DEAL, PICK, WALL_TILING = "DEAL", "PICK", "WALL_TILING"


@dataclass
class Step:
    """One step: a deal, a pick by `seat` of `action`, or a wall tiling; `state` is after it."""

    kind: str
    state: dict[str, Any]  # sim.engine.snapshot of the game after the step
    seat: int = -1
    action: int = -1

    @property
    def action_text(self) -> str:
        return describe(self.action) if self.action >= 0 else ""


@dataclass
class GameReplay:
    """A whole game: who sat where, every step, and the result."""

    configuration: int
    game: int
    players: int
    wall: str
    seat_bots: list[str]  # canonical bot spec per seat
    first_player: int
    steps: list[Step] = field(default_factory=list)
    scores: list[int] = field(default_factory=list)
    end_reason: str = ""
    winners: list[int] = field(default_factory=list)  # empty for a truncated game


def replay_game(spec: JobSpec, configuration: int, game: int) -> GameReplay:
    """Play game `game` of configuration `configuration` of `spec` again, recording every step.

    Raises ValueError naming the field when `configuration` or `game` is out of range.
    """
    if not 0 <= configuration < len(spec.configurations):
        raise ValueError(
            f"configuration must be in 0..{len(spec.configurations) - 1}; got {configuration}"
        )
    if not 0 <= game < spec.games:
        raise ValueError(f"game must be in 0..{spec.games - 1}; got {game}")
    config = spec.configurations[configuration]
    games = np.array([game], np.int64)
    slots = np.array([0])
    seat_bot = seat_assignment(config, spec.seed, games)  # (1, P) index into config.bots
    first = first_player(spec.seed, games, config.players)
    seat_specs = [config.bot_specs[int(k)] for k in seat_bot[0]]
    bots = [make_bot(s) for s in seat_specs]  # the bot object of each seat
    keys = rng.game_keys(spec.seed, games, rng.BOT)

    def columns(st, slot_ids, seat, row, colours, legal):
        return bots[seat].choose_columns(
            st, slot_ids, seat, row, colours, legal, keys[np.zeros(slot_ids.shape[0], np.intp)]
        )

    choose = columns if config.wall == "gray" else None
    st = engine.new_games(config.players, config.wall, spec.seed, games, first, spec.max_rounds)
    out = GameReplay(
        configuration=configuration,
        game=game,
        players=config.players,
        wall=config.wall,
        seat_bots=[s.label for s in seat_specs],
        first_player=int(first[0]),
    )
    if not st.done[0]:
        out.steps.append(Step(DEAL, engine.snapshot(st, 0)))
    while not st.done[0]:
        if st.tiles_left[0] > 0:
            seat = int(st.current[0])
            action = int(np.asarray(bots[seat].act(st, slots, keys))[0])
            engine.play(st, slots, np.array([action], np.int64), choose, defer_round_end=True)
            out.steps.append(Step(PICK, engine.snapshot(st, 0), seat, action))
        else:
            engine.end_rounds(st, slots, choose, deal=False)
            out.steps.append(Step(WALL_TILING, engine.snapshot(st, 0)))
            if not st.done[0]:
                engine.start_rounds(st, slots)
                if not st.done[0]:
                    out.steps.append(Step(DEAL, engine.snapshot(st, 0)))
    rec = engine.records(st, slots, seat_bot)
    out.scores = [int(x) for x in rec.scores[0]]
    out.end_reason = END_REASONS[int(rec.end_reason[0])]
    out.winners = [int(p) for p in np.flatnonzero(rec.winners[0])]
    return out
