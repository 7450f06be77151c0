"""Plots of a tuning run (``azulsim tune --json``, schema ``azulsim.tune/1``): ``azulsim report``.

One panel per tuned parameter: θ at every iteration, with the band θ ± c_k that its two sides
played, and the start value dashed; a last panel: the plus side's score per iteration (0.5: no
edge either way), with the check's verdict in the title. Formats as for statistics reports:
``.png``, ``.svg``, ``.pdf``, or ``.html`` (a page with the figure embedded and the values).
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .report import DPI, FORMATS, PANEL_SIZE, ReportError

SCHEMA = "azulsim.tune/1"


def is_tuning(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("schema") == SCHEMA


def _title(doc: Mapping[str, Any], title: str | None) -> str:
    if title:
        return title
    t = doc["tuning"]
    return (
        f"SPSA tuning of {t['bot']}: {len(doc['path'])} iterations of {t['pairs']} mirrored "
        f"groups, {t['players']} players, {t['wall']} wall, seed {t['seed']}"
    )


def _check_text(doc: Mapping[str, Any]) -> str:
    check = doc.get("check") or {}
    if check.get("verdict") is None:
        return "no check"
    elo = check.get("elo")
    elo_text = "" if elo is None else f", Elo {elo:+.0f}"
    return f"SPRT [{check['elo0']:g}, {check['elo1']:g}]: {check['verdict']}{elo_text}"


def figure(doc: Mapping[str, Any], title: str | None = None):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    params = doc["tuning"]["params"]
    path = doc["path"]
    if not path:
        raise ReportError("the tuning run has no iterations to plot")
    panels = len(params) + 1
    cols = min(4, panels)
    rows = math.ceil(panels / cols)
    fig = Figure(
        figsize=(cols * PANEL_SIZE[0], rows * PANEL_SIZE[1] + 0.6), dpi=DPI, layout="constrained"
    )
    FigureCanvasAgg(fig)
    fig.suptitle(_title(doc, title), fontsize=11, fontweight="bold")
    axes = fig.subplots(rows, cols, squeeze=False).reshape(-1)
    ks = [p["iteration"] + 1 for p in path]
    for i, (ax, p) in enumerate(zip(axes, params, strict=False)):
        name = p["name"]
        theta = [q["theta"][name] for q in path] + [path[-1]["next"][name]]
        c_k = [q["c_k"][i] for q in path]
        x = [0, *ks]
        ax.plot(x, theta, color="C0", marker=".", label="θ")
        lo = [t - c for t, c in zip(theta[:-1], c_k, strict=True)]
        hi = [t + c for t, c in zip(theta[:-1], c_k, strict=True)]
        ax.fill_between(x[:-1], lo, hi, color="C0", alpha=0.15, label="θ ± c_k")
        ax.axhline(p["start"], color="grey", linestyle="--", linewidth=1, label="start")
        ax.set_title(f"{name}: {p['start']:g} → {doc['final'][name]:g}", fontsize=9)
        ax.set_xlabel("iteration", fontsize=8)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7)
    ax = axes[len(params)]
    ax.plot(ks, [q["score"] for q in path], color="C1", marker="o", markersize=3)
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_ylim(0, 1)
    ax.set_title(f"θ+ score per iteration; {_check_text(doc)}", fontsize=9)
    ax.set_xlabel("iteration", fontsize=8)
    ax.tick_params(labelsize=7)
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig


def write_tune_report(doc: Mapping[str, Any], path: str | Path, title: str | None = None) -> Path:
    """Draw the tuning run `doc` to `path` (the extension picks the format)."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in FORMATS:
        raise ReportError(f"output must end in {', '.join(FORMATS)}; got {path.name!r}")
    fig = figure(doc, title)
    try:
        if ext == ".html":
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=DPI)
            image = base64.b64encode(buf.getvalue()).decode()
            rows = "".join(
                f"<tr><td>{html.escape(p['name'])}</td><td>{p['start']:g}</td>"
                f"<td>{doc['final'][p['name']]:g}</td></tr>"
                for p in doc["tuning"]["params"]
            )
            page = (
                f"<!doctype html><meta charset='utf-8'><title>{html.escape(_title(doc, title))}"
                f"</title><h1>{html.escape(_title(doc, title))}</h1>"
                f"<table><tr><th>parameter</th><th>start</th><th>tuned</th></tr>{rows}</table>"
                f"<p>{html.escape(doc['final_spec'])} — {html.escape(_check_text(doc))}</p>"
                f"<img alt='tuning path' src='data:image/png;base64,{image}'>"
            )
            path.write_text(page, encoding="utf-8")
        else:
            fig.savefig(path, format=ext[1:], dpi=DPI)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
