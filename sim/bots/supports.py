"""What a bot plays: the player counts and walls it declares, checked when a job is validated.

A bot that cannot play some configurations (an outside engine written for the coloured wall and
two players, say) declares it here, by name: ``declare_supports(name, fn)`` with
``fn(params, players, wall)`` returning None when it plays that table, else the reason it does
not. `sim.jobs.spec.Configuration` asks `refusal` for every seat, so such a job is refused when it
is submitted (a ValueError naming the seat and the reason: INVALID_ARGUMENT on a service), rather
than failing at the first request the bot cannot answer. A bot that declares nothing plays every
table (every built-in bot does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

Supports = Callable[[Mapping[str, Any], int, str], str | None]

_lock = threading.Lock()
_declared: dict[str, Supports] = {}

WALL_CHOICES = ("both", "coloured", "gray")


def declare_supports(name: str, fn: Supports) -> None:
    """Bot `name` plays only the tables for which ``fn(params, players, wall)`` returns None."""
    with _lock:
        _declared[name] = fn


def refusal(spec, players: int, wall: str) -> str | None:
    """Why the bot of `spec` (a `BotSpec`) does not play `players` on `wall`; None if it does."""
    with _lock:
        fn = _declared.get(spec.name)
    return None if fn is None else fn(spec.params, players, wall)


def parse_players(text: str, where: str) -> frozenset[int]:
    """Player counts written as digits, e.g. ``"24"`` (2 and 4) or ``"234"``."""
    counts = frozenset(int(ch) for ch in text if ch in "234")
    if not text or len(counts) != len(text) or any(ch not in "234" for ch in text):
        raise ValueError(
            f"{where} must list player counts as distinct digits 2-4 (e.g. 24); got {text!r}"
        )
    return counts


def table_refusal(walls: str, players: frozenset[int], n: int, wall: str) -> str | None:
    """The refusal of a bot declaring `walls` (one of `WALL_CHOICES`) and `players`."""
    if n not in players:
        listed = "".join(str(p) for p in sorted(players))
        return f"it plays {', '.join(listed)} players only (declared players={listed}), not {n}"
    if walls != "both" and walls != wall:
        return f"it plays the {walls} wall only (declared walls={walls}), not the {wall} wall"
    return None
