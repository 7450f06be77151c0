"""Game records: what the statistics layer counts for every finished game (docs/rules.md §10.7)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass
class GameRecords:
    """Records of N finished games of one player count, seat-indexed (P seats).

    A natural end has ``end_reason == END_ROW_COMPLETED`` and scores with bonuses; a truncated game
    (``round_cap`` or ``no_tiles``) keeps its scores without bonuses, ``bonus`` then holds what the
    bonuses would have been ("bonus_if_ended") and ``winners`` is all False.
    """

    game: np.ndarray  # (N,) int64: game index in the job
    first_player: np.ndarray  # (N,) int8: seat that started round 1
    seat_bot: np.ndarray  # (N, P) int8: index of the bot (in the configuration's list) in each seat
    scores: np.ndarray  # (N, P) int32: final scores (bonuses included when terminated)
    end_reason: np.ndarray  # (N,) int8: END_ROW_COMPLETED, END_ROUND_CAP or END_NO_TILES
    rounds: np.ndarray  # (N,) int16: rounds played
    turns: np.ndarray  # (N,) int32: turns (picks) played, all seats together
    complete_rows: np.ndarray  # (N, P) int8
    complete_cols: np.ndarray  # (N, P) int8
    complete_colours: np.ndarray  # (N, P) int8
    bonus: np.ndarray  # (N, P) int16: 2*rows + 7*cols + 10*colours
    floor_penalty: np.ndarray  # (N, P) int32: sum over rounds of CUM[min(objects, 7)], before clamp
    marker_takes: np.ndarray  # (N, P) int16: rounds in which the seat took the first-player marker
    winners: np.ndarray  # (N, P) bool: docs/rules.md §8.3 winners; all False for truncated games
    provisional_winners: np.ndarray  # (N, P) bool: §8.3 on the scores as they stand (any end)
    # The lead after each wall tiling r = 1..R (the scores after the floor penalty and the clamp at
    # 0, before end bonuses); L_r is the set of seats with the highest score.
    lead_changes: np.ndarray  # (N,) int16: the r in 2..R with L_r != L_(r-1)
    trailing_rounds: np.ndarray  # (N, P) int64: bit r - 1 set iff below the highest after r <= 63
    last_trailing_round: np.ndarray  # (N, P) int16: the last r after which it trailed (0: never)
    # The choices of its turns (picks; the gray wall's columns at a round end are no turns).
    decision_turns: np.ndarray  # (N,) int32: turns with more than one legal pick
    legal_actions: np.ndarray  # (N,) int32: legal picks summed over the turns

    @property
    def players(self) -> int:
        return int(self.scores.shape[1])

    def __len__(self) -> int:
        return int(self.game.shape[0])

    @property
    def truncated(self) -> np.ndarray:
        """(N,) bool: the game was cut short (round cap or no tiles)."""
        return self.end_reason != 0

    def take(self, index) -> GameRecords:
        """The records at `index` (a mask or an index array)."""
        return GameRecords(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @staticmethod
    def concat(parts: list[GameRecords]) -> GameRecords:
        return GameRecords(
            **{
                f.name: np.concatenate([getattr(p, f.name) for p in parts])
                for f in fields(GameRecords)
            }
        )
