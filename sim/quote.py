"""Quoting a user's value in an error message: its repr, cut to a short prefix.

A message names the field and the reason and shows what was sent, but never all of it: a 10 KB
value (or one whose repr grows, as NUL bytes do fourfold) gives a message of a line, not 10 KB
echoed back through gRPC's metadata (whose size is limited).
"""

from __future__ import annotations

from typing import Any

SHOWN = 40  # characters of a value's repr quoted at most


def shown(value: Any, limit: int = SHOWN) -> str:
    """``repr(value)``, or its first `limit` characters and how long the value was."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str) else type(value).__name__
    return f"{text[:limit]}... ({size})"
