"""A game's table drawn as SVG from a `sim.rules.engine.snapshot` (a ReplayGame step's state): the
factory displays and the centre, then each player's board — pattern lines, wall, floor line and
score. Tiles are ``<rect class="tile c<colour>">`` (colours in ``static/web.css``), so the page's
colours are the game's (blue, yellow, red, black, white)."""

from __future__ import annotations

from markupsafe import Markup, escape

from sim.rules.constants import COLOURS, wall_colour

T = 22  # tile size, px
GAP = 3
FLOOR = (1, 1, 2, 2, 2, 3, 3)  # points lost per floor slot, printed (a rule set may change it)
BOARD_W = 5 * (T + GAP) + 16 + 5 * (T + GAP) + 20  # pattern lines, gap, wall, margins
BOARD_H = 30 + 5 * (T + GAP) + 14 + T + 24


def _tile(x: float, y: float, colour: int, extra: str = "") -> str:
    return f'<rect class="tile c{colour}{extra}" x="{x:.0f}" y="{y:.0f}" width="{T}" height="{T}"/>'


def _slot(x: float, y: float, extra: str = "") -> str:
    return f'<rect class="slot{extra}" x="{x:.0f}" y="{y:.0f}" width="{T}" height="{T}"/>'


def _tiles_of(counts: list[int]) -> list[int]:
    return [colour for colour, n in enumerate(counts) for _ in range(n)]


def _displays(state: dict) -> tuple[str, int]:
    """The factories in a row, then the centre (tiles by colour, the marker while there)."""
    out, x, size = [], 8, 2 * T + 3 * GAP
    for i, counts in enumerate(state["factories"]):
        out.append(
            f'<circle class="factory" cx="{x + size / 2:.0f}" cy="{8 + size / 2:.0f}" '
            f'r="{size / 2 + 4:.0f}"/><text class="tick" x="{x + size / 2:.0f}" '
            f'y="{size + 26}" text-anchor="middle">F{i + 1}</text>'
        )
        for j, colour in enumerate(_tiles_of(counts)[:4]):
            out.append(_tile(x + GAP + (j % 2) * (T + GAP), 8 + GAP + (j // 2) * (T + GAP), colour))
        x += size + 16
    cx = x + 8
    out.append(f'<text class="label" x="{cx}" y="14">centre</text>')
    tx = cx
    if state["marker_in_centre"]:
        out.append(
            f'<rect class="marker" x="{tx}" y="20" width="{T}" height="{T}"/>'
            f'<text class="marker-text" x="{tx + T / 2}" y="{20 + T * 0.72:.0f}" '
            'text-anchor="middle">1</text>'
        )
        tx += T + GAP
    for colour, n in enumerate(state["centre"]):
        if n:
            out.append(
                _tile(tx, 20, colour) + f'<text class="count" x="{tx + T / 2}" y="{20 + T + 13}" '
                f'text-anchor="middle">×{n}</text>'
            )
            tx += T + GAP
    width = max(tx, cx + 60) + 8
    return "".join(out), int(width)


def _board(
    state: dict, p: int, ox: float, oy: float, bot: str, gray: bool, floor_slots: tuple
) -> str:
    current = state["current"] == p and not state.get("done")
    out = [
        f'<g class="board{" current" if current else ""}" data-seat="{p}">',
        f'<rect class="board-bg" x="{ox}" y="{oy}" width="{BOARD_W}" height="{BOARD_H}" rx="6"/>',
        f'<text class="label" x="{ox + 8}" y="{oy + 19}">seat {p} · {escape(bot)}</text>',
        f'<text class="score" x="{ox + BOARD_W - 10}" y="{oy + 20}" text-anchor="end">'
        f"{state['scores'][p]} pts</text>",
    ]
    top = oy + 30
    wall_x = ox + 10 + 5 * (T + GAP) + 12
    for r in range(5):
        y = top + r * (T + GAP)
        colour, count = state["lines"][p][r]
        for i in range(r + 1):  # line r holds r+1 tiles, filled from the right
            x = wall_x - 12 - (i + 1) * (T + GAP)
            out.append(_tile(x, y, colour) if i < count and colour >= 0 else _slot(x, y))
        for c in range(5):
            x = wall_x + c * (T + GAP)
            cell = state["wall"][p][r][c]
            if cell >= 0:
                out.append(_tile(x, y, cell, " placed"))
            else:
                hint = "" if gray else f" c{wall_colour(r, c)}"
                out.append(_slot(x, y, f" wall{hint}"))
    y = top + 5 * (T + GAP) + 10
    floor = state["floor"][p]
    for i, penalty in enumerate(floor_slots):
        x = ox + 10 + i * (T + GAP)
        out.append(_slot(x, y, " floor-full") if i < floor else _slot(x, y))
        out.append(
            f'<text class="penalty" x="{x + T / 2}" y="{y + T + 11}" text-anchor="middle">'
            f"{-penalty}</text>"
        )
    if state["marker_holder"] == p and not state["marker_in_centre"]:
        out.append(f'<text class="label" x="{ox + BOARD_W - 10}" y="{y + 16}" '
                   'text-anchor="end">holds the 1 marker</text>')  # fmt: skip
    out.append("</g>")
    return "".join(out)


def table_svg(state: dict, seat_bots: list[str], wall: str, floor: tuple = FLOOR) -> Markup:
    """The whole table after a step; the player to move has the highlighted board. `floor`: the
    points lost per floor slot under the game's rules (one slot drawn per entry)."""
    displays, width = _displays(state)
    players = len(state["scores"])
    per_row = 2 if players <= 2 else min(players, 4)
    top = 2 * T + 3 * GAP + 40
    boards = []
    for p in range(players):
        ox = 8 + (p % per_row) * (BOARD_W + 12)
        oy = top + (p // per_row) * (BOARD_H + 12)
        boards.append(_board(state, p, ox, oy, seat_bots[p], wall == "gray", tuple(floor)))
    rows = (players + per_row - 1) // per_row
    w = max(width, 8 + per_row * (BOARD_W + 12))
    h = top + rows * (BOARD_H + 12)
    label = f"round {state['round']}, turn {state['turn']}: " + ", ".join(
        f"seat {p} {s} pts" for p, s in enumerate(state["scores"])
    )
    return Markup(
        f'<svg class="table" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>{displays}'
        + "".join(boards)
        + "</svg>"
    )


COLOUR_NAMES = COLOURS  # the legend's names, by the index of class c<i>
