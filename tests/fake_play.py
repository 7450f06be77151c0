"""A stand-in for `sim.jobs.play.play_games` that makes plausible records without playing (tests).

`fake_play_games` has the signature of ``play_games`` and the same determinism contract: game
``g``'s record depends only on ``(seed, g, config)``. Values are drawn from a private stream of
`sim.rules.rng`; scores are small so that ties (and shared wins) are frequent; about 1 game in 8 is
truncated. Winners follow RULES §8.3 on the drawn scores and rows; truncated games have none.
"""

from __future__ import annotations

import numpy as np

from sim.rules import rng
from sim.rules.constants import END_NO_TILES, END_ROUND_CAP, END_ROW_COMPLETED
from sim.rules.records import GameRecords
from sim.rules.scoring import winners

FAKE_STREAM = 97


def fake_play_games(config, seed: int, start: int, stop: int, max_rounds: int = 100) -> GameRecords:
    """Records of games ``[start, stop)`` of `config`, drawn rather than played."""
    from sim.jobs.spec import first_player, seat_assignment

    games = np.arange(start, stop, dtype=np.int64)
    n, players = games.size, config.players
    keys = rng.game_keys(seed, games, FAKE_STREAM)
    counter = iter(range(10**6))

    def draw(high: int, shape=(n, players)) -> np.ndarray:
        size = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        base = next(counter) * 16
        u = rng.uniform32(keys[:, None], base + np.arange(size)[None, :])
        return rng.pick(u, high).reshape(shape)

    rows = draw(3)
    cols = draw(3)
    colours = draw(2)
    bonus = 2 * rows + 7 * cols + 10 * colours
    scores = draw(25) + bonus
    end = draw(16, (n,))
    end_reason = np.where(
        end == 0, END_ROUND_CAP, np.where(end == 1, END_NO_TILES, END_ROW_COMPLETED)
    )
    truncated = end_reason != END_ROW_COMPLETED
    scores = np.where(truncated[:, None], scores - bonus, scores)
    rounds = np.where(end_reason == END_ROUND_CAP, max_rounds, 4 + draw(6, (n,)))
    provisional = winners(scores, rows)
    turns = rounds * (12 + draw(9, (n,)))
    floor_penalty, marker_takes = draw(15), draw(4)
    lead = {
        "lead_changes": draw(5, (n,)).astype(np.int16),
        "trailing_rounds": draw(64).astype(np.int64),
        "last_trailing_round": np.minimum(draw(8), rounds[:, None]).astype(np.int16),
    }
    decision_turns = turns - rounds * draw(3, (n,))  # a round's last picks may be forced
    choices = decision_turns * (2 + draw(40, (n,)))
    return GameRecords(
        game=games,
        first_player=first_player(seed, games, players),
        seat_bot=seat_assignment(config, seed, games),
        scores=scores.astype(np.int32),
        end_reason=end_reason.astype(np.int8),
        rounds=rounds.astype(np.int16),
        turns=turns.astype(np.int32),
        complete_rows=rows.astype(np.int8),
        complete_cols=cols.astype(np.int8),
        complete_colours=colours.astype(np.int8),
        bonus=bonus.astype(np.int16),
        floor_penalty=floor_penalty.astype(np.int32),
        marker_takes=marker_takes.astype(np.int16),
        winners=provisional & ~truncated[:, None],
        provisional_winners=provisional,
        **lead,
        decision_turns=decision_turns.astype(np.int32),
        legal_actions=(turns - decision_turns + choices).astype(np.int32),
    )
