"""Registers the built-in bots (imported lazily by `sim.bots.registry`)."""

from __future__ import annotations

from .random_bot import RandomBot
from .registry import register_bot

register_bot(
    "random",
    "Uniform over the legal action ids; gray-wall columns uniform over the legal ones.",
    lambda params: RandomBot(),
    source="builtin",
)
