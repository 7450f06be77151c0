"""Public scoring helpers, batched over leading axes (docs/rules.md §6.2, §5.3, §8.2, §8.3, §12.3).

Every function takes numpy arrays (or plain ints and nested lists) whose *last* axes are the board
axes, and works elementwise over any leading axes ``…``. They return numpy arrays; a result with no
leading axes is a 0-d array (``int(x)`` / ``bool(x)`` give the scalar).

- `placement_points`: adjacency points of one tile (§6.2), with the ``RUN`` table of §12.3.
- `floor_penalty`: ``FLOOR_CUM[min(n, 7)]`` (§5.3, §6.3).
- `complete_rows`, `complete_cols`, `complete_colours`, `end_bonus`: the end bonuses (§8.2). They
  take a *colour* wall (``-1`` empty, else the colour 0..4), so the same code serves the coloured
  and the gray wall (§9.5: a colour is complete when its 5 tiles are anywhere on the wall).
- `winners`: §8.3 (highest score, then most complete rows among the tied only, then shared).

Bad shapes or values raise ``ValueError`` naming the argument and what was wrong.
"""

from __future__ import annotations

import numpy as np

from .constants import FLOOR_CUM, FLOOR_SLOTS, N_COLOURS, RUN

_BITS = (1 << np.arange(5)).astype(np.int64)  # weight of column (or row) j in a 5-bit mask


def _board(wall, name: str, dtype) -> np.ndarray:
    wall = np.asarray(wall)
    if wall.ndim < 2 or wall.shape[-2:] != (5, 5):
        raise ValueError(f"{name} must have shape (..., 5, 5); got {wall.shape}")
    return wall.astype(dtype, copy=False)


def _index(value, name: str) -> np.ndarray:
    value = np.asarray(value)
    if not np.issubdtype(value.dtype, np.integer):
        raise ValueError(f"{name} must be an integer or an integer array; got dtype {value.dtype}")
    if value.size and (value.min() < 0 or value.max() > 4):
        raise ValueError(f"{name} must be in 0..4; got values from {value.min()} to {value.max()}")
    return value.astype(np.int64)


def placement_points(wall, row, col) -> np.ndarray:
    """Points for placing one tile at ``(row, col)`` of a wall (RULES §6.2).

    ``H`` and ``V`` are the lengths of the horizontal and vertical runs through the new tile (the
    tile included); the points are ``H + V`` when both are at least 2, else ``H + V - 1``.

    Parameters
    ----------
    wall : array_like of bool, shape (..., 5, 5)
        Occupancy *before* the tile is placed (any non-zero value is a tile).
    row, col : int or array_like of int
        The cell, 0..4; each broadcasts with the leading axes ``...`` of `wall`.

    Returns
    -------
    points : ndarray of int64, shape ``broadcast(..., row.shape, col.shape)``
        1 to 10.

    Raises
    ------
    ValueError
        If `wall` is not ``(..., 5, 5)``, `row`/`col` are out of range or do not broadcast, or the
        cell is already occupied.
    """
    wall = _board(wall, "wall", bool)
    row, col = _index(row, "row"), _index(col, "col")
    try:
        shape = np.broadcast_shapes(wall.shape[:-2], row.shape, col.shape)
    except ValueError:
        raise ValueError(
            f"row {row.shape} and col {col.shape} must broadcast with the leading axes of wall "
            f"{wall.shape[:-2]}"
        ) from None
    wall = np.broadcast_to(wall, shape + (5, 5))
    row, col = np.broadcast_to(row, shape), np.broadcast_to(col, shape)
    row_masks = wall @ _BITS  # (..., 5): bit j of row r = cell (r, j)
    col_masks = np.swapaxes(wall, -1, -2) @ _BITS  # (..., 5): bit i of column c = cell (i, c)
    row_mask = np.take_along_axis(row_masks, row[..., None], -1)[..., 0]
    col_mask = np.take_along_axis(col_masks, col[..., None], -1)[..., 0]
    if np.any(row_mask >> col & 1):
        bad = np.argwhere(np.atleast_1d(row_mask >> col & 1))[0]
        raise ValueError(f"cannot place onto an occupied cell (first at batch index {tuple(bad)})")
    h = RUN[row_mask | (1 << col), col].astype(np.int64)
    v = RUN[col_mask | (1 << row), row].astype(np.int64)
    return np.where((h > 1) & (v > 1), h + v, h + v - 1)


def floor_penalty(n) -> np.ndarray:
    """Penalty (positive) for `n` objects on the floor line, the marker included (RULES §5.3).

    Parameters
    ----------
    n : int or array_like of int, any shape
        Objects that fell onto the floor, ``n >= 0``; more than 7 cost the same as 7 (§5.3.1).

    Returns
    -------
    penalty : ndarray of int64, same shape as `n`
        ``FLOOR_CUM[min(n, 7)]``, 0 to 14.
    """
    n = np.asarray(n)
    if not np.issubdtype(n.dtype, np.integer):
        raise ValueError(f"n must be an integer or an integer array; got dtype {n.dtype}")
    if n.size and n.min() < 0:
        raise ValueError(f"n must be >= 0; got {n.min()}")
    return FLOOR_CUM[np.minimum(n, FLOOR_SLOTS)].astype(np.int64)


def _colour_wall(wall) -> np.ndarray:
    wall = _board(wall, "wall", np.int64)
    if wall.size and (wall.min() < -1 or wall.max() >= N_COLOURS):
        raise ValueError("wall must hold -1 (empty) or a colour 0..4")
    return wall


def complete_rows(wall) -> np.ndarray:
    """Complete horizontal rows of a colour wall.

    Parameters
    ----------
    wall : array_like of int, shape (..., 5, 5)
        ``-1`` for an empty cell, else the colour 0..4 of its tile.

    Returns
    -------
    rows : ndarray of int64, shape (...)
    """
    return np.all(_colour_wall(wall) >= 0, axis=-1).sum(axis=-1)


def complete_cols(wall) -> np.ndarray:
    """Complete vertical columns of a colour wall; shapes as in `complete_rows`."""
    return np.all(_colour_wall(wall) >= 0, axis=-2).sum(axis=-1)


def complete_colours(wall) -> np.ndarray:
    """Colours with all 5 tiles on a colour wall (anywhere: works for both walls, RULES §9.5).

    Shapes as in `complete_rows`.
    """
    wall = _colour_wall(wall)
    counts = (wall[..., None] == np.arange(N_COLOURS)).sum(axis=(-3, -2))  # (..., 5)
    return (counts == 5).sum(axis=-1)


def end_bonus(wall) -> np.ndarray:
    """End-of-game bonus: 2 per complete row, 7 per column, 10 per colour (RULES §8.2).

    Parameters
    ----------
    wall : array_like of int, shape (..., 5, 5)
        ``-1`` for an empty cell, else the colour 0..4 of its tile.

    Returns
    -------
    bonus : ndarray of int64, shape (...)
        0 to 95.
    """
    wall = _colour_wall(wall)
    return 2 * complete_rows(wall) + 7 * complete_cols(wall) + 10 * complete_colours(wall)


def winners(scores, complete_rows) -> np.ndarray:
    """Winning seats (RULES §8.3).

    The highest score wins; among the players tied on it *only*, the most complete rows wins; a
    remaining tie is a shared victory. Columns, colours and seat order never count.

    Parameters
    ----------
    scores : array_like of int, shape (..., n)
    complete_rows : array_like of int, shape (..., n)

    Returns
    -------
    mask : ndarray of bool, shape (..., n)
        At least one seat per game is True.
    """
    scores, rows = np.asarray(scores), np.asarray(complete_rows)
    if scores.ndim < 1 or scores.shape[-1] < 1:
        raise ValueError(f"scores must have shape (..., n) with n >= 1; got {scores.shape}")
    if scores.shape != rows.shape:
        raise ValueError(
            f"scores {scores.shape} and complete_rows {rows.shape} must have the same shape"
        )
    top = scores == scores.max(axis=-1, keepdims=True)
    rows_of_top = np.where(top, rows, np.iinfo(np.int64).min)
    return top & (rows_of_top == rows_of_top.max(axis=-1, keepdims=True))
