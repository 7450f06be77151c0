"""A tiny third-party bot package, loaded through the ``azulsim.bots`` entry-point group.

``tests/test_plugin.py`` installs it with a temporary ``.dist-info`` whose ``entry_points.txt``
names ``INFO`` below, so the registry finds it by name exactly as it would a pip-installed plugin.
"""

from __future__ import annotations

import numpy as np

from sim.bots import BotInfo, Param
from sim.bots.base import Bot
from sim.bots.sampling import uniform_legal


class EdgeBot(Bot):
    """Plays the first (or last) legal action in `sim.bots.sampling`'s enumeration order."""

    def __init__(self, end: str):
        self.u = np.uint64(0 if end == "first" else (1 << 32) - 1)

    def act(self, st, slots, keys):
        return uniform_legal(st, slots, np.full(slots.shape[0], self.u, np.uint64))


INFO = BotInfo(
    name="edge",
    description="First or last legal action in enumeration order (a plug-in example).",
    factory=lambda params: EdgeBot(params["end"]),
    params=(Param("end", "choice", "first", choices=("first", "last"), doc="which end"),),
    cost=20.0,  # declared slow (it is not), so tests see the cost reach the chunk size
)
