"""Mirror every `ReferenceGame.step` on the batch engine and compare, for the rule tests.

`mirror_steps` patches `ReferenceGame.step` so that a game's first step builds a one-game batch
twin from the reference's snapshot (`sim.rules.engine.from_snapshots`), and every step then checks
that both engines agree: the same legal actions before the step, the same verdict on an illegal
action (ValueError on both, neither changed), and equal snapshots, accumulators and records after
it. Gray-wall columns chosen by a test's callback are replayed on the twin in the same order per
(seat, row), so the callback runs once, as the test expects.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.rules import engine
from sim.rules.reference import ReferenceGame


def _twin_of(g: ReferenceGame):
    snap = dict(g.snapshot(), start_player=g.start_player)
    st = engine.from_snapshots(
        g.players, g.wall_kind, g.seed, [g.game], [snap], g.max_rounds, g.first_player
    )
    st.floor_penalty[:, 0] = g.floor_penalty
    st.marker_takes[:, 0] = g.marker_takes
    return st


def _check_same(g: ReferenceGame, st) -> None:
    assert engine.snapshot(st, 0) == g.snapshot()
    assert int(st.start_player[0]) == g.start_player
    assert st.floor_penalty[:, 0].tolist() == list(g.floor_penalty)
    assert st.marker_takes[:, 0].tolist() == list(g.marker_takes)
    mask = engine.legal_mask(st)[0]
    assert np.flatnonzero(mask).tolist() == g.legal_actions()
    if g.done:
        rec, ref = engine.records(st), g.record()
        assert rec.scores[0].tolist() == ref["scores"]
        assert rec.bonus[0].tolist() == ref["bonus"]
        assert rec.rounds[0] == ref["rounds"] and rec.turns[0] == ref["turns"]
        assert np.flatnonzero(rec.winners[0]).tolist() == ref["winners"]


def _columns_from(log: list):
    """A batch `choose_columns` that replays the reference's choices, in order per (seat, row)."""

    def choose(st, slots, seat, row, colours, legal):
        out = []
        for mask in legal:
            key = next((i for i, (s, r, _c) in enumerate(log) if (s, r) == (seat, row)), None)
            # After a rejected choice the reference stopped asking: fill in the leftmost column.
            leftmost = (int(mask) & -int(mask)).bit_length() - 1
            out.append(log.pop(key)[2] if key is not None else leftmost)
        return np.array(out)

    return choose


@pytest.fixture
def mirror_steps(monkeypatch):
    """Patch `ReferenceGame.step` to mirror every step on a batch-engine twin."""
    original = ReferenceGame.step

    # The twin lives on the game itself: a dict keyed by id() handed a dead game's twin to a new
    # game that reused its id, which failed tests depending on what ran before them.
    def step(self, action, choose_column=None):
        st = getattr(self, "_twin", None)
        if st is None:
            st = self._twin = _twin_of(self)
        before = engine.snapshot(st, 0)
        log: list = []
        chooser = None
        if choose_column is not None:

            def chooser(seat, row, colour, legal_cols):
                col = choose_column(seat, row, colour, legal_cols)
                log.append((seat, row, col))
                return col

        try:
            original(self, action, chooser)
        except ValueError:
            if log:  # the callback chose an illegal column: the batch rejects it too
                with pytest.raises(ValueError, match="column"):
                    engine.step(st, np.array([action]), _columns_from(log))
                del self._twin  # mid-tiling: neither engine promises a usable state
                raise
            if not (st.done[0] and int(action) < 0):  # -1 is the batch's "no move" when done
                with pytest.raises(ValueError):
                    engine.step(st, np.array([action]))
            assert engine.snapshot(st, 0) == before
            raise
        engine.step(st, np.array([action]), _columns_from(log) if chooser else None)
        _check_same(self, st)

    monkeypatch.setattr(ReferenceGame, "step", step)
