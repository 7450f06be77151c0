"""Charts drawn as inline SVG on the server: a line chart with bands and horizontal rules (the
stopping rule's path, a one-parameter sweep) and a heat map (a two-parameter sweep, the
head-to-head matrix). They only place figures the statistics document already holds; colours come
from classes in ``static/web.css``.

Written here rather than with a plotting library: a chart is a few dozen elements, drawn in well
under a millisecond, so a page re-rendered at every merged chunk stays cheap; matplotlib's SVG
takes tens of milliseconds a figure and embeds its own fonts and ids.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

W, H = 560, 240  # chart size, px
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 14, 40  # margins: tick labels left, axis title below


def _finite(values) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round tick values covering ``[lo, hi]``."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _label(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.3g}"


@dataclass
class Series:
    """A line with its points (None: no value there); `css` picks its colour."""

    ys: Sequence[float | None]
    css: str = "s0"
    label: str = ""


@dataclass
class LineChart:
    """Lines over common x values, with optional 95 % bands and horizontal rules."""

    xs: Sequence[float]
    series: list[Series] = field(default_factory=list)
    bands: list[tuple[Sequence[float | None], Sequence[float | None], str]] = field(
        default_factory=list
    )
    rules: list[tuple[float, str, str]] = field(default_factory=list)  # (y, css, label)
    xlabel: str = ""
    ylabel: str = ""
    title: str = ""

    def _range(self) -> tuple[float, float, float, float]:
        xs = _finite(self.xs) or [0.0]
        ys = [y for s in self.series for y in _finite(s.ys)]
        ys += [y for lo, hi, _ in self.bands for y in _finite([*lo, *hi])]
        ys += [y for y, _, _ in self.rules]
        ys = ys or [0.0]
        x0, x1 = min(xs), max(xs)
        y0, y1 = min(ys), max(ys)
        if x1 == x0:
            x0, x1 = x0 - 1, x1 + 1
        pad = (y1 - y0) * 0.06 or 1.0
        return x0, x1, y0 - pad, y1 + pad

    def render(self) -> Markup:
        x0, x1, y0, y1 = self._range()
        pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

        def px(x: float) -> float:
            return LEFT + (x - x0) / (x1 - x0) * pw

        def py(y: float) -> float:
            return TOP + (y1 - y) / (y1 - y0) * ph

        out = [
            f'<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
            f'aria-label="{escape(self.title)}"><title>{escape(self.title)}</title>',
            f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/>',
        ]
        for t in _ticks(y0, y1):
            y = py(t)
            out.append(
                f'<line class="grid" x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}"/>'
                f'<text class="tick" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">'
                f"{_label(t)}</text>"
            )
        for t in _ticks(x0, x1, 6):
            x = px(t)
            out.append(
                f'<text class="tick" x="{x:.1f}" y="{TOP + ph + 14}" text-anchor="middle">'
                f"{_label(t)}</text>"
            )
        for lo, hi, css in self.bands:
            pts = [
                (x, a, b)
                for x, a, b in zip(self.xs, lo, hi, strict=True)
                if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)
            ]
            if len(pts) > 1:
                top = " ".join(f"{px(x):.1f},{py(b):.1f}" for x, _, b in pts)
                bottom = " ".join(f"{px(x):.1f},{py(a):.1f}" for x, a, _ in reversed(pts))
                out.append(f'<polygon class="band {css}" points="{top} {bottom}"/>')
        for y, css, label in self.rules:
            out.append(
                f'<line class="rule {css}" x1="{LEFT}" x2="{LEFT + pw}" y1="{py(y):.1f}" '
                f'y2="{py(y):.1f}"/><text class="rule-label {css}" x="{LEFT + pw - 4}" '
                f'y="{py(y) - 4:.1f}" text-anchor="end">{escape(label)}</text>'
            )
        for s in self.series:
            pts = [(x, y) for x, y in zip(self.xs, s.ys, strict=True) if y is not None]
            if pts:
                line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
                out.append(f'<polyline class="line {s.css}" points="{line}"/>')
                out.extend(
                    f'<circle class="point {s.css}" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3"/>'
                    for x, y in pts
                )
        out.append(
            f'<text class="axis" x="{LEFT + pw / 2}" y="{H - 6}" text-anchor="middle">'
            f"{escape(self.xlabel)}</text>"
            f'<text class="axis" transform="translate(12 {TOP + ph / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(self.ylabel)}</text></svg>'
        )
        return Markup("".join(out))


def heat_map(
    cols: Sequence[str],
    rows: Sequence[str],
    grid: Sequence[Sequence[float | None]],
    text: Sequence[Sequence[str]],
    title: str,
    lo: float | None = None,
    hi: float | None = None,
) -> Markup:
    """A grid of cells shaded from `lo` (light) to `hi` (dark), each with its text; None cells
    are blank. ``grid[r][c]`` is drawn in row `r` (top first), column `c`."""
    values = [v for line in grid for v in _finite(line)]
    lo = min(values, default=0.0) if lo is None else lo
    hi = max(values, default=1.0) if hi is None else hi
    cw, ch, lw, th = 64, 28, 120, 28
    w, h = lw + cw * len(cols), th + ch * len(rows)
    out = [
        f'<svg class="heat" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for c, name in enumerate(cols):
        out.append(
            f'<text class="tick" x="{lw + cw * c + cw / 2}" y="{th - 8}" text-anchor="middle">'
            f"{escape(name)}</text>"
        )
    for r, name in enumerate(rows):
        y = th + ch * r
        out.append(
            f'<text class="tick" x="{lw - 6}" y="{y + ch / 2 + 4}" text-anchor="end">'
            f"{escape(name)}</text>"
        )
        for c, v in enumerate(grid[r]):
            if v is None or not math.isfinite(v):
                continue
            shade = 0.5 if hi == lo else (v - lo) / (hi - lo)
            light = 92 - 57 * shade  # lightness %: the higher the value, the darker the cell
            ink = "#fff" if light < 60 else "#111"
            out.append(
                f'<rect class="cell" x="{lw + cw * c}" y="{y}" width="{cw - 2}" height="{ch - 2}" '
                f'style="fill:hsl(212,60%,{light:.0f}%)"/><text x="{lw + cw * c + cw / 2 - 1}" '
                f'y="{y + ch / 2 + 4}" text-anchor="middle" style="fill:{ink}">'
                f"{escape(text[r][c])}</text>"
            )
    out.append("</svg>")
    return Markup("".join(out))
