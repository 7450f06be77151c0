"""The batch game state: a dataclass of numpy arrays with the batch axis last (docs/engine.md).

Every per-game array ends in the batch axis ``B`` so that one game's element is reached with a
flat index ``i * B + b`` (batch-last layouts with flat gathers were the fastest measured).
Transitions in `sim.rules.engine` (compiled: `sim.rules.compiled`) mutate a state in place; `copy()`
it to branch.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, fields

import numpy as np

from .rulesets import PRINTED_RULES, RuleSet


@dataclass
class BatchState:
    players: int  # P, 2..4
    gray: bool  # True for the gray-wall variant (RULES §9)
    seed: int  # job seed: the deal stream is keyed by (seed, game)
    max_rounds: int  # round cap (RULES §10.6)
    # the game's rules (`sim.rules.rulesets`); wall and round cap as the two above
    rule_set: RuleSet

    game: np.ndarray  # (B,) int64: game index in the job
    deal_key: np.ndarray  # (B,) uint64: counter-based key of the game's deal stream
    first_player: np.ndarray  # (B,) int8: seat that started round 1

    # (S, B) int32: source 0 is the centre, 1+i factory i; the tiles of colour c are the 6-bit field
    # at bits 6c..6c+5 (at most 20 tiles of a colour, so fields never carry into each other).
    sources: np.ndarray
    # Presence, one 11-bit group per colour: source s (0 the centre, 1..9 the factories) is bit s
    # of its group, so 10 bits are used and bit 10 is never set; the stride is 11 rather than 10
    # only by choice (5 x 11 = 55 bits fit an int64 either way). Tables index one group at a time
    # (`sim.rules.tables.NTH_SOURCE`, 2048 rows), and a factory pick clears the source's bit of
    # every colour with one shifted mask (`sim.rules.tables.ALL_COLOURS11 << s`).
    presence: np.ndarray  # (B,) int64: bit 11*colour + s set when source s holds that colour
    marker_in_centre: np.ndarray  # (B,) bool: the first-player marker still lies in the centre
    marker_holder: np.ndarray  # (B,) int8: seat that took the marker this round, -1 if nobody yet
    tiles_left: np.ndarray  # (B,) int16: tiles on all factories and the centre
    bag: np.ndarray  # (5, B) int8: tiles per colour in the bag
    lid: np.ndarray  # (5, B) int8: tiles per colour in the lid, tiles lying on floors included

    line_colour: np.ndarray  # (P, 5, B) int8: colour of pattern line r, -1 when empty
    line_count: np.ndarray  # (P, 5, B) int8: tiles on pattern line r (capacity r + 1)
    wall: np.ndarray  # (P, B) int32: 25-bit occupancy, bit 5*row + col
    row_colours: np.ndarray  # (P, B) int32: bit 5*row + colour set when that row holds the colour
    col_colours: np.ndarray  # (P, B) int32: bit 5*col + colour set when that column holds it
    # (P, 25, B) int8, gray wall only: colour at cell 5*row + col where `wall` holds a tile; the
    # other cells are not cleared for a slot's next game (read through `engine.wall_colours`).
    wall_cells: np.ndarray
    accept: np.ndarray  # (P, B) int32: bit 5*colour + line set when that pattern line may take it
    floor: np.ndarray  # (P, B) int8: objects on the floor line, 0..7, the marker included
    scores: np.ndarray  # (P, B) int32

    current: np.ndarray  # (B,) int8: seat to move
    start_player: np.ndarray  # (B,) int8: seat that started the current round
    round: np.ndarray  # (B,) int16: current round, 1-based (the last one played once done)
    turn: np.ndarray  # (B,) int32: picks played so far in the game
    done: np.ndarray  # (B,) bool: the game has ended (terminated or truncated)
    end_reason: np.ndarray  # (B,) int8: END_* code, valid once done

    floor_penalty: np.ndarray  # (P, B) int32: sum of CUM[min(objects, 7)] over rounds
    marker_takes: np.ndarray  # (P, B) int16: rounds in which the seat took the marker
    bonus: np.ndarray  # (P, B) int16: end bonus (added to scores only on a natural end)

    # The lead after each wall tiling r (scores after the floor penalty and the clamp, before end
    # bonuses); the leaders L_r are the seats whose score is the highest.
    leaders: np.ndarray  # (B,) int8: bit p set when seat p led after the last tiling; 0 before
    lead_changes: np.ndarray  # (B,) int16: tilings r >= 2 with L_r != L_(r-1)
    trailing_rounds: np.ndarray  # (P, B) int64: bit r - 1 set when the seat trailed after r <= 63
    last_trailing_round: np.ndarray  # (P, B) int16: the last r after which it trailed, 0 if none

    # The choices of the game's turns (picks), counted before each pick (`sim.rules.compiled.pick`).
    decision_turns: np.ndarray  # (B,) int32: turns with more than one legal pick
    legal_actions: np.ndarray  # (B,) int32: legal picks summed over the turns

    @property
    def batch(self) -> int:
        return int(self.game.shape[0])

    @property
    def rules(self) -> np.ndarray:
        """(R,) int64: the rules as compiled code reads them (`RuleSet.table`, ``RULE_*``)."""
        return self.rule_set.table(self.players)

    @property
    def factories(self) -> int:
        return self.rule_set.factories_at(self.players)

    def take(self, slots: np.ndarray) -> BatchState:
        """A state of the games in `slots` only (repeats allowed): slot i of the result is a copy
        of slot ``slots[i]``, every array C-ordered (``np.take`` along the batch axis)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = np.take(v, slots, axis=-1) if isinstance(v, np.ndarray) else v
        return BatchState(**out)

    def arrays(self) -> EngineState:
        """The state as the compiled engine takes it (`sim.rules.compiled`): one `EngineState`."""
        return EngineState._make(getattr(self, name) for name in EngineState._fields)

    def copy(self) -> BatchState:
        return BatchState(
            **{
                f.name: (v.copy() if isinstance(v := getattr(self, f.name), np.ndarray) else v)
                for f in fields(self)
            }
        )


# What the compiled engine reads and writes, passed as one tuple (numba takes named tuples): every
# field of `BatchState` but the job seed (only `sim.rules.rng.game_keys` reads it, before play) and
# the rule set, which compiled code reads as its table `rules`; so a field added to the dataclass
# reaches every compiled function.
EngineState = namedtuple(
    "EngineState",
    [f.name for f in fields(BatchState) if f.name not in ("seed", "rule_set")] + ["rules"],
)


def empty_state(
    players: int,
    gray: bool,
    seed: int,
    max_rounds: int,
    batch: int,
    rule_set: RuleSet = PRINTED_RULES,
) -> BatchState:
    """A state of `batch` slots with no game in them (all marked done); `engine` fills them. The
    wall and the round cap are `gray` and `max_rounds` (the rule set's own two are not read)."""
    p, b = players, batch
    s = rule_set.factories_at(players) + 1
    i8 = np.int8
    return BatchState(
        players=players,
        gray=gray,
        seed=seed,
        max_rounds=max_rounds,
        rule_set=rule_set,
        game=np.zeros(b, np.int64),
        deal_key=np.zeros(b, np.uint64),
        first_player=np.zeros(b, i8),
        sources=np.zeros((s, b), np.int32),
        presence=np.zeros(b, np.int64),
        marker_in_centre=np.zeros(b, bool),
        marker_holder=np.full(b, -1, i8),
        tiles_left=np.zeros(b, np.int16),
        bag=np.zeros((5, b), i8),
        lid=np.zeros((5, b), i8),
        line_colour=np.full((p, 5, b), -1, i8),
        line_count=np.zeros((p, 5, b), i8),
        wall=np.zeros((p, b), np.int32),
        row_colours=np.zeros((p, b), np.int32),
        col_colours=np.zeros((p, b), np.int32),
        wall_cells=np.full((p, 25, b), -1, i8),
        accept=np.zeros((p, b), np.int32),
        floor=np.zeros((p, b), i8),
        scores=np.zeros((p, b), np.int32),
        current=np.zeros(b, i8),
        start_player=np.zeros(b, i8),
        round=np.zeros(b, np.int16),
        turn=np.zeros(b, np.int32),
        done=np.ones(b, bool),
        end_reason=np.zeros(b, i8),
        floor_penalty=np.zeros((p, b), np.int32),
        marker_takes=np.zeros((p, b), np.int16),
        bonus=np.zeros((p, b), np.int16),
        leaders=np.zeros(b, i8),
        lead_changes=np.zeros(b, np.int16),
        trailing_rounds=np.zeros((p, b), np.int64),
        last_trailing_round=np.zeros((p, b), np.int16),
        decision_turns=np.zeros(b, np.int32),
        legal_actions=np.zeros(b, np.int32),
    )
