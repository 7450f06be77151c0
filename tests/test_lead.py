"""The lead through a game (`GameRecords.lead_changes`, `trailing_rounds`, `last_trailing_round`):
the engine's counts, kept at every wall tiling (sim/rules/compiled.py `count_lead`), against the
reference engine's score history (`ReferenceGame.lead`), and through every path that plays games.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.jobs.play import play_games
from sim.jobs.spec import Configuration, first_player
from sim.rules import engine, rng
from sim.rules.reference import ReferenceGame


def test_the_reference_counts_the_lead_from_its_score_history():
    g = ReferenceGame(2, "coloured", 1, 0, 0)
    # Leaders {0, 1}, {0}, {1}, {1}, {0}: three changes; seat 0 trails after 3 and 4, seat 1
    # after 2 and 5.
    g.tiling_scores = [(1, [0, 0]), (2, [3, 1]), (3, [3, 5]), (4, [4, 6]), (5, [9, 6])]
    assert g.lead() == {
        "lead_changes": 3,
        "trailing_rounds": [0b1100, 0b10010],
        "last_trailing_round": [4, 5],
    }
    g.tiling_scores = [(63, [1, 0]), (64, [1, 2])]  # bits only for r <= 63; the last r always
    assert g.lead() == {
        "lead_changes": 1,
        "trailing_rounds": [0, 1 << 62],
        "last_trailing_round": [64, 63],
    }


def _random_games(players: int, wall: str, n: int, seed: int, max_rounds: int):
    """`n` games played on both engines with the random bot's draws (as tests/test_lockstep.py);
    returns the engine's records and the reference games."""
    games = np.arange(n, dtype=np.int64)
    first = first_player(seed, games, players)
    st = engine.new_games(players, wall, seed, games, first, max_rounds)
    refs = [
        ReferenceGame(players, wall, seed, int(g), int(f), max_rounds)
        for g, f in zip(games, first, strict=True)
    ]
    keys = rng.game_keys(seed, games, rng.BOT)
    bits = [[c for c in range(5) if m >> c & 1] for m in range(32)]

    def counter(b, seat, row):
        return rng.COLUMN_COUNTER + (refs[b].round * 4 + seat) * 5 + row

    def batch_columns(st_, slots, seat, row, colours, legal):
        out = []
        for k, (b, mask) in enumerate(zip(slots, legal, strict=True)):
            s = seat if np.isscalar(seat) else seat[k]
            u = rng.uniform32(keys[b : b + 1], counter(b, s, row))
            out.append(bits[mask][int(rng.pick(u, len(bits[mask]))[0])])
        return np.array(out)

    while not st.done.all():
        running = np.flatnonzero(~st.done)
        actions = np.empty(running.size, np.int64)
        for k, b in enumerate(running):
            legal = refs[b].legal_actions()
            u = rng.uniform32(keys[b : b + 1], refs[b].turn * 8)
            actions[k] = legal[int(rng.pick(u, len(legal))[0])]
        # The engine first (its column callback reads the reference's round before the step).
        engine.play(st, running, actions, batch_columns if wall == "gray" else None)
        for k, b in enumerate(running):

            def choose(seat, row, colour, legal_cols, b=b):
                u = rng.uniform32(keys[b : b + 1], counter(b, seat, row))
                return legal_cols[int(rng.pick(u, len(legal_cols))[0])]

            refs[b].step(int(actions[k]), choose)
    return engine.records(st), refs


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("wall", ["coloured", "gray"])
def test_the_engine_counts_the_lead_as_the_reference(players, wall):
    recs, refs = _random_games(players, wall, 60, seed=players, max_rounds=12)
    for b, g in enumerate(refs):
        assert recs.scores[b].tolist() == g.scores, f"game {b} played otherwise"
        lead = g.lead()
        assert int(recs.lead_changes[b]) == lead["lead_changes"], f"game {b}"
        assert recs.trailing_rounds[b].tolist() == lead["trailing_rounds"], f"game {b}"
        assert recs.last_trailing_round[b].tolist() == lead["last_trailing_round"], f"game {b}"
    assert recs.lead_changes.dtype == np.int16 and recs.lead_changes.shape == (60,)
    assert recs.trailing_rounds.dtype == np.int64 and recs.trailing_rounds.shape == (60, players)
    assert recs.last_trailing_round.dtype == np.int16
    assert recs.lead_changes.max() > 0 and recs.trailing_rounds.any()


@pytest.mark.parametrize("bots", [["random", "greedy"], ["heuristic"] * 2, ["greedy", "heuristic"]])
def test_every_path_counts_the_lead_from_the_scores_it_records(bots):
    # Whole games in compiled code (random with greedy, heuristic self-play) or step by step (a
    # mix with the heuristic): slots reused by later games start their counts afresh.
    recs = play_games(Configuration(2, bots, wall="gray"), 5, 0, 300)
    changes = recs.lead_changes
    assert changes.max() > 0 and (recs.last_trailing_round <= recs.rounds[:, None]).all()
    # A seat trails in no round after its last, and in that one.
    for b in range(len(recs)):
        for p in range(2):
            last = int(recs.last_trailing_round[b, p])
            bits = int(recs.trailing_rounds[b, p])
            assert bits.bit_length() == last or last > 63, (b, p)
        # Some seat led after every tiling: both never trailed in the same round.
        assert int(recs.trailing_rounds[b, 0]) & int(recs.trailing_rounds[b, 1]) == 0
