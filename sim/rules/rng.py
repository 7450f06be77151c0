"""Counter-based random numbers: every value is a pure function of (seed, game, stream, counter).

docs/design.md, "Determinism": game ``g`` of a job with seed ``s`` must play the same in any batch,
chunk, worker or retry, so no shared generator is consumed in batch order. A value is a 64-bit hash
(the SplitMix64 finaliser, applied three times) of its coordinates; its top 32 bits are the uniform
``uint32``.

Streams and their counters (documented here, used everywhere):

- ``DEAL`` (tile draws, start player, seat shuffles): draw ``slot`` of round ``r`` (1-based) uses
  counter ``r * 64 + slot`` (at most 36 draws a round); the start player uses ``START_COUNTER``
  and a seat shuffle ``SEATING_COUNTER + k``.
- ``MIRRORED_DEAL``: the deal stream of mirrored group ``k`` (``sim.jobs.spec.deal_keys``), keyed by
  the group, with the same counters as ``DEAL``; every game of the group reads it.
- ``BOT``: decision ``k`` of a game (its turn number, 0-based) uses counter ``k * 8``; the gray-wall
  column choice at round ``r``, seat ``p``, row ``row`` uses
  ``COLUMN_COUNTER + (r * 4 + p) * 5 + row``. Bots that need several values per turn use
  ``k * 8 + 1 .. k * 8 + 7``.

Mapping a uniform to a choice among ``n`` things is ``(u * n) >> 32`` (`pick`), exact for any
``n < 2**32`` up to the 2**-32 bias of a 32-bit draw.
"""

from __future__ import annotations

import numpy as np

DEAL = 1
BOT = 2
MIRRORED_DEAL = 3

START_COUNTER = 1 << 40
SEATING_COUNTER = 1 << 41
COLUMN_COUNTER = 1 << 42

# The SplitMix64 constants; `sim.rules.compiled.uniform32` computes the same hash from them.
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S32 = (np.uint64(k) for k in (30, 27, 31, 32))


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> _S30)) * MIX1
    z = (z ^ (z >> _S27)) * MIX2
    return z ^ (z >> _S31)


def game_keys(seed: int, games, stream: int) -> np.ndarray:
    """64-bit key of each game for one stream; `games` is an int array of game indices.

    Returns
    -------
    keys : ndarray of uint64, same shape as `games`
    """
    with np.errstate(over="ignore"):
        base = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + GOLDEN * np.uint64(stream))
        g = np.asarray(games, dtype=np.uint64)
        return _mix(base ^ _mix(g * GOLDEN + GOLDEN))


def uniform32(keys: np.ndarray, counter) -> np.ndarray:
    """The uniform ``uint64`` in ``[0, 2**32)`` at `counter` of each key (broadcasts)."""
    c = np.asarray(counter, dtype=np.uint64)
    if c.ndim and np.ndim(keys):  # array arithmetic wraps silently (the errstate costs a step)
        return _mix(keys + c * GOLDEN) >> _S32
    with np.errstate(over="ignore"):  # a scalar operand's overflow would warn
        return _mix(keys + c * GOLDEN) >> _S32


def pick(u, n):
    """Map uniform32 values `u` to ``0..n-1`` by ``(u * n) >> 32``; `n` may be an array."""
    return ((np.asarray(u, dtype=np.uint64) * np.asarray(n, dtype=np.uint64)) >> _S32).astype(
        np.int64
    )


def scalar_uniform32(seed: int, game: int, stream: int, counter: int) -> int:
    """One value, for the one-game reference engine and replays."""
    keys = game_keys(seed, np.array([game]), stream)
    return int(uniform32(keys, counter)[0])
