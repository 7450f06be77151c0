"""The `random` bot: uniform over the legal action ids.

Definition: at decision ``k`` of a game, draw ``u`` = the bot stream's uniform32 at counter
``k * 8``; among the ``N`` legal actions, enumerated colour by colour, then source by source
(ascending), then destination by destination (pattern lines ascending, the floor last), play the
one with index ``(u * N) >> 32`` (`sim.bots.sampling.uniform_legal`). On the gray wall a full line's
column is uniform among the legal columns (`sim.bots.sampling.random_columns`).
"""

from __future__ import annotations

import numpy as np

from .base import Bot


class RandomBot(Bot):
    def act(self, st, slots, keys) -> np.ndarray:
        """`uniform_legal`'s choices, made in compiled code (`engine.bot_picks`: the pick
        whole-game self-play makes; tests/test_self_play.py checks them against `uniform_legal`)."""
        from ..rules import engine

        return engine.bot_picks(st, slots, keys, "random")
