"""Replay one game of a job move by move (the ``ReplayGame`` RPC; ``azulsim replay`` renders it,
`service.cli.replay`).

Game ``g`` of a configuration depends only on ``(seed, g, configuration)`` (docs/design.md,
"Determinism"), so it can be played again alone: `sim.jobs.play`'s driver plays a batch of one game
with the job's set-up (`sim.jobs.play.set_table`: seats, start player, bots) and a
`sim.jobs.play.Recorder` takes the table (`sim.rules.engine.snapshot`) after each deal, pick and
wall tiling. One game is a few hundred engine calls on a batch of one: milliseconds, so the server
may do it in-process; it never plays batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.jobs.play import Recorder, play_table, set_table
from sim.jobs.spec import JobSpec
from sim.rules import engine
from sim.rules.actions import describe
from sim.rules.constants import END_REASONS
from sim.rules.rulesets import PRINTED_RULES, RuleSet

DEAL, PICK, WALL_TILING = "DEAL", "PICK", "WALL_TILING"


@dataclass
class Step:
    """One step: a deal, a pick by `seat` of `action`, or a wall tiling; `state` is after it."""

    kind: str
    state: dict[str, Any]  # sim.rules.engine.snapshot of the game after the step
    seat: int = -1
    action: int = -1

    @property
    def action_text(self) -> str:
        return describe(self.action) if self.action >= 0 else ""


@dataclass
class GameReplay:
    """A whole game: who sat where, every step, the result and the rules it was played under
    (`rules`: the whole rule set, wall and round cap included, `sim.rules.rulesets.RuleSet.of`)."""

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
    rules: RuleSet = PRINTED_RULES


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
    table = set_table(config, spec.seed, np.array([game], np.int64))
    steps = _Steps()
    rec = play_table(table, spec.max_rounds_of(config), recorder=steps)
    return GameReplay(
        configuration=configuration,
        game=game,
        players=config.players,
        wall=config.wall,
        seat_bots=[config.bot_specs[int(k)].label for k in table.seat_bot[0]],
        first_player=int(table.first_player[0]),
        steps=steps.steps,
        scores=[int(x) for x in rec.scores[0]],
        end_reason=END_REASONS[int(rec.end_reason[0])],
        winners=[int(p) for p in np.flatnonzero(rec.winners[0])],
        rules=RuleSet.of(config, spec),
    )


class _Steps(Recorder):
    """The steps of a batch of one game (slot 0)."""

    def __init__(self):
        self.steps: list[Step] = []
        self.seat = -1

    def dealt(self, st, slots):
        if slots.size:
            self.steps.append(Step(DEAL, engine.snapshot(st, 0)))

    def picking(self, st, slots, actions):
        self.seat = int(st.current[0])

    def picked(self, st, slots, actions):
        self.steps.append(Step(PICK, engine.snapshot(st, 0), self.seat, int(actions[0])))

    def tiled(self, st, slots):
        self.steps.append(Step(WALL_TILING, engine.snapshot(st, 0)))
