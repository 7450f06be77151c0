"""Plots of a job's statistics: ``azulsim report`` (README.md).

A report draws, for each configuration of the statistics document (docs/statistics.md,
schema ``azulsim.stats/1``), one row of four panels:

- **score distribution per bot** — the fixed-bin score histograms of the document, as the share
  of each bot's player-games per bin (so bots with different player-game counts compare);
- **win rate per bot** with its 95 % Wilson interval (``win_rate``, ``win_rate_ci95``);
- **win rate by turn order** in round 1 (the start player, the 2nd to play, ...) with its Wilson
  interval and the 1-in-P line of no advantage (``turn_order.positions``; documents without it:
  win rate per seat);
- **game length** — the histogram of rounds per finished game.

The output format follows the file's extension: ``.png``, ``.svg`` or ``.pdf`` (one figure, a
row per configuration), or ``.html`` (a self-contained page: a title, a table of the key figures
and one embedded PNG per configuration). Drawing uses matplotlib's Agg canvas directly — no
``pyplot``, no display, no global state — so it works in servers, workers and CI alike.

Everything here reads only the derived document, never counters, so a report from a saved
``azulsim simulate --json`` file and one fetched from the API (`fetch_statistics`) are drawn by
the same code.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FORMATS = (".png", ".svg", ".pdf", ".html")
DPI = 110
PANEL_SIZE = (4.6, 3.4)  # inches per panel


class ReportError(ValueError):
    """The input is not a statistics document, or the output cannot be written."""


# --- input ------------------------------------------------------------------------------------


def unwrap(data: Any) -> dict[str, Any]:
    """The statistics document inside `data`.

    Accepts the document itself (``azulsim simulate --json``), a wrapper holding it under
    ``statistics`` or ``document`` (the ``--json`` of ``compare``, ``sweep`` and
    ``tournament``), or one holding its JSON text under ``statistics_json``
    (the API's ``Statistics`` message as JSON).
    """
    if isinstance(data, Mapping):
        if "configurations" in data:
            if "schema" not in data and "games_done" not in data:  # e.g. a job spec file
                raise ReportError(
                    "this is a job spec, not a statistics document: run it first "
                    "(`azulsim simulate --spec FILE --json > stats.json`) and plot that"
                )
            return dict(data)
        for key in ("statistics", "document", "stats"):
            if isinstance(data.get(key), Mapping):
                return unwrap(data[key])
        text = data.get("statistics_json") or data.get("statisticsJson")
        if isinstance(text, str):
            return unwrap(json.loads(text))
    raise ReportError(
        "not a statistics document (schema azulsim.stats/1): expected a JSON object with "
        "'configurations', as `azulsim simulate --json` prints (or one under 'statistics', as "
        "the --json of compare, sweep and tournament holds it)"
    )


def load_statistics(path: str | Path) -> dict[str, Any]:
    """Read a saved statistics document (see `unwrap` for the shapes accepted)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path} is not valid JSON: {exc}") from None
    return unwrap(data)


def fetch_statistics(job_id: str, **client_kwargs: Any) -> dict[str, Any]:
    """A job's statistics document from the API server, through `service.client.Client`.

    `client_kwargs` go to the client (``address``, ``token``, ``tls_ca``, ``timeout``); unset
    ones come from ``AZULSIM_SERVER``, ``AZULSIM_TOKEN`` and ``AZULSIM_TLS_CA``. Raises
    `grpc.RpcError` when the call fails.
    """
    from .client import Client

    with Client(**client_kwargs) as client:
        return client.statistics_document(job_id)


# --- figures ----------------------------------------------------------------------------------


def _hist(stat: Mapping[str, Any]) -> tuple[int, list[int]]:
    h = (stat or {}).get("histogram") or {}
    return int(h.get("bin_width") or 1), [int(c) for c in h.get("counts") or []]


def _used_bins(counts_list: Sequence[Sequence[int]]) -> tuple[int, int]:
    """First and one-past-last bin index with a count in any of the histograms (0, 1 if none)."""
    lo, hi = None, 0
    for counts in counts_list:
        nz = [i for i, c in enumerate(counts) if c]
        if nz:
            lo = nz[0] if lo is None else min(lo, nz[0])
            hi = max(hi, nz[-1] + 1)
    return (lo or 0, hi) if hi else (0, 1)


def _rate_bars(ax, labels: Sequence[str], groups: Sequence[Mapping[str, Any]], colours) -> None:
    """Bars of win rates (percent) with their Wilson intervals as error bars."""
    xs = list(range(len(labels)))
    rates, lows, highs = [], [], []
    for g in groups:
        rate = g.get("win_rate")
        ci = g.get("win_rate_ci95")
        if rate is None:
            rates.append(0.0)
            lows.append(0.0)
            highs.append(0.0)
            continue
        rates.append(100 * rate)
        lo, hi = ci if ci else (rate, rate)
        lows.append(max(0.0, 100 * (rate - lo)))  # rounding can put a bound a hair inside
        highs.append(max(0.0, 100 * (hi - rate)))
    ax.bar(
        xs,
        rates,
        color=colours,
        alpha=0.8,
        yerr=[lows, highs],
        capsize=4,
        error_kw={"elinewidth": 1.2, "ecolor": "black"},
    )
    for x, g, r, hi in zip(xs, groups, rates, highs, strict=True):
        text = "n/a" if g.get("win_rate") is None else f"{r:.1f}%"
        ax.annotate(
            text,
            (x, r + hi),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_xticks(
        xs,
        labels,
        rotation=20 if max(map(len, labels), default=0) > 8 else 0,
        ha="right" if max(map(len, labels), default=0) > 8 else "center",
        fontsize=8,
    )
    top = max((r + h for r, h in zip(rates, highs, strict=True)), default=0.0)
    ax.set_ylim(0, min(112.0, max(10.0, top * 1.2 + 5)))  # room above 100 % for the labels
    ax.set_ylabel("win rate, % (95% Wilson CI)")
    ax.grid(axis="y", alpha=0.3)


def position_name(q: int) -> str:
    """Plain words for turn-order position `q` of round 1 (0 is the start player)."""
    return "starts" if q == 0 else {1: "2nd", 2: "3rd", 3: "4th"}.get(q, f"{q + 1}th") + " to play"


def _draw_configuration(axes, cfg: Mapping[str, Any], palette) -> None:
    from matplotlib.ticker import MaxNLocator

    bots = list((cfg.get("bots") or {}).items())
    colour = {name: palette[i % len(palette)] for i, (name, _) in enumerate(bots)}

    # 1. score distribution per bot
    ax = axes[0]
    hists = [(name, *_hist(g.get("score"))) for name, g in bots]
    lo, hi = _used_bins([counts for _, _, counts in hists])
    for name, width, counts in hists:
        total = sum(counts)
        if not total:
            continue
        xs = [i * width for i in range(lo, hi + 1)]
        ys = [100 * counts[i] / total if i < len(counts) else 0.0 for i in range(lo, hi)]
        ax.stairs(ys, xs, label=name, color=colour[name], linewidth=1.6, fill=False)
        ax.stairs(ys, xs, color=colour[name], alpha=0.12, fill=True)
    ax.set_xlabel("final score (bins of the document)")
    ax.set_ylabel("% of the bot's player-games")
    ax.set_title("Score distribution by bot", fontsize=10)
    if bots:
        ax.legend(fontsize=8, frameon=False)
    ax.grid(alpha=0.3)

    # 2. win rate per bot
    ax = axes[1]
    _rate_bars(ax, [n for n, _ in bots], [g for _, g in bots], [colour[n] for n, _ in bots])
    ax.set_title("Win rate by bot", fontsize=10)

    # 3. win rate by turn order: rotated seating makes seats 50/50 by construction, who starts
    # round 1 is the seat luck that is left (documents without turn_order: by seat)
    ax = axes[2]
    turn = cfg.get("turn_order")
    if turn:
        groups = list(turn.get("positions") or [])
        labels = [position_name(q) for q in range(len(groups))]
        colours = ["C3"] + ["0.55"] * (len(groups) - 1)
        title = "Win rate by turn order in round 1"
    else:
        groups = list(cfg.get("seats") or [])
        seat_bots = list(cfg.get("seat_bots") or [])
        labels = [f"seat {i}" for i in range(len(groups))]
        colours = [
            colour.get(seat_bots[i], palette[-1])
            if cfg.get("seating") == "fixed" and i < len(seat_bots)
            else "0.55"
            for i in range(len(groups))
        ]
        title = "Win rate by seat"
    _rate_bars(ax, labels, groups, colours)
    if cfg.get("players"):
        ax.axhline(
            100 / cfg["players"],
            color="0.3",
            linestyle="--",
            linewidth=1,
            label=f"1 in {cfg['players']} (no advantage)",
        )
        ax.legend(fontsize=8, frameon=False, loc="best")
    ax.set_title(title, fontsize=10)

    # 4. game length
    ax = axes[3]
    width, counts = _hist(cfg.get("rounds"))
    if counts:
        lo, hi = _used_bins([counts])
        xs = list(range(lo, hi))
        ax.bar([i * width for i in xs], [counts[i] for i in xs], width=0.8 * width, color="0.35")
        last = len(counts) - 1
        if hi - 1 == last:  # the last bin is open: say so on its tick
            ax.annotate(
                "and up",
                (last * width, counts[last]),
                textcoords="offset points",
                xytext=(0, 3),
                ha="center",
                fontsize=7,
            )
    mean = (cfg.get("rounds") or {}).get("mean")
    ax.set_title(
        "Game length" + (f" (mean {mean:.2f} rounds)" if mean is not None else ""), fontsize=10
    )
    ax.set_xlabel("rounds per finished game")
    if counts:
        if hi - lo <= 15:
            ax.set_xticks([i * width for i in range(lo, hi)])
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim((lo - 1) * width, hi * width)
    ax.set_ylabel("games")
    ax.grid(axis="y", alpha=0.3)


def _configuration_title(cfg: Mapping[str, Any]) -> str:
    truncated = cfg.get("games_truncated", 0)
    return (
        f"Configuration {cfg.get('index', 0)}: {cfg.get('players', '?')} players, "
        f"{cfg.get('wall', '?')} wall, {cfg.get('seating', '?')} seating"
        # A rule set other than the printed game's, by its label (statistics carry it then).
        + (f", rules {cfg['rules']}" if isinstance(cfg.get("rules"), str) else "")
        + f" — {', '.join(cfg.get('seat_bots') or [])} — "
        f"{cfg.get('games_finished', 0):,} games finished"
        + (f", {truncated:,} truncated" if truncated else "")
    )


STOP_REASONS = {
    "h1_accepted": "H1 accepted",
    "h0_accepted": "H0 accepted",
    "precision_reached": "precision reached",
    "max_games": "maximum games reached",
}


def games_played(done: int, total: int, reason: str | None = None) -> str:
    """Games done of a job's `total`: ``"500/1,000 games"``; a job its stopping rule ended
    early says so, since ``1,200/24,000`` would read as unfinished."""
    if reason and done < total:
        why = STOP_REASONS.get(reason, reason.replace("_", " "))
        return f"{done:,} games (stopped early: {why}; at most {total:,})"
    return f"{done:,}/{total:,} games"


def document_title(doc: Mapping[str, Any], title: str | None = None) -> str:
    """The report's heading: `title`, or a summary of the document."""
    if title:
        return title
    spec = doc.get("spec") or {}
    done, total = doc.get("games_done"), doc.get("games_total")
    reason = (doc.get("stopping") or {}).get("reason")
    # Stopped by its rule: complete, not partial.
    partial = done is not None and total is not None and done < total and not reason
    parts = [f"AzulSim statistics — seed {spec.get('seed', '?')}"]
    if total is not None:
        parts.append(games_played(done, total, reason) + (" (partial)" if partial else ""))
    if doc.get("rules_version"):
        parts.append(str(doc["rules_version"]))
    return ", ".join(parts)


def figure(
    doc: Mapping[str, Any], title: str | None = None, configurations=None, study: bool = True
):
    """A matplotlib `Figure` (Agg canvas attached) with one row of panels per configuration.

    Parameters
    ----------
    doc : the statistics document
    title : heading (default: seed, games done and rules version)
    configurations : indices of ``doc["configurations"]`` to draw (default: all; for a sweep
        or a tournament `study_configurations`)
    study : draw a sweep's or a tournament's own row first (`study_kind`)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    configs = list(doc.get("configurations") or [])
    if configurations is None:
        configurations = study_configurations(doc)
    if configurations is not None:
        configs = [configs[i] for i in configurations]
    study = study_kind(doc) if study else None
    if not configs and study is None:
        raise ReportError("the statistics document has no configurations to plot")
    stopping = doc.get("stopping") or {}
    path = bool(stopping.get("check_points"))
    rows = len(configs) + path + (study is not None)
    fig = Figure(
        figsize=(4 * PANEL_SIZE[0], rows * PANEL_SIZE[1] + 0.6), dpi=DPI, layout="constrained"
    )
    FigureCanvasAgg(fig)
    fig.suptitle(document_title(doc, title), fontsize=12, fontweight="bold")
    palette = [f"C{i}" for i in range(10)]
    subfigs = list(fig.subfigures(rows, 1, squeeze=False)[:, 0])
    if study is not None:  # the study's answer first, the configurations' detail below
        STUDY_DRAWERS[study](subfigs.pop(0), doc)
    for sub, cfg in zip(subfigs[: len(configs)], configs, strict=True):
        sub.suptitle(_configuration_title(cfg), fontsize=10)
        _draw_configuration(sub.subplots(1, 4), cfg, palette)
    if path:
        _draw_stopping(subfigs[-1], stopping)
    return fig


def _draw_stopping(sub, stopping: Mapping[str, Any]) -> None:
    """The stopping rule's path: the LLR against its bounds, and the estimate with its 95 %
    interval, at every check point (games of each configuration)."""
    points = stopping["check_points"]
    games = [p["games"] for p in points]
    rule = stopping.get("rule", {})
    reason = stopping.get("reason") or "running"
    sub.suptitle(
        f"Stopping rule: {rule.get('rule', '?')} on {rule.get('statistic', '?')} of "
        f"configuration {rule.get('configuration', 0)} - {reason.replace('_', ' ')} at "
        f"{stopping.get('games', 0):,} games",
        fontsize=10,
    )
    ax_llr, ax_est = sub.subplots(1, 2)
    llr = [p["llr"] for p in points]
    if any(v is not None for v in llr):
        ax_llr.plot(games, [math.nan if v is None else v for v in llr], marker=".", color="C0")
        for bound in stopping.get("llr_bounds") or []:
            ax_llr.axhline(bound, color="C3", linestyle="--", linewidth=1)
        ax_llr.set_ylabel("log-likelihood ratio")
    else:
        ax_llr.text(0.5, 0.5, "no LLR (precision rule)", ha="center", va="center")
    ax_llr.set_xlabel("games per configuration")
    ax_llr.set_title("LLR and its bounds", fontsize=9)
    est = [math.nan if p["estimate"] is None else p["estimate"] for p in points]
    lo = [math.nan if not p["ci95"] or p["ci95"][0] is None else p["ci95"][0] for p in points]
    hi = [math.nan if not p["ci95"] or p["ci95"][1] is None else p["ci95"][1] for p in points]
    ax_est.fill_between(games, lo, hi, color="C0", alpha=0.2, label="95 % interval")
    ax_est.plot(games, est, marker=".", color="C0", label="estimate")
    ax_est.set_xlabel("games per configuration")
    ax_est.set_title(f"Estimate of {rule.get('statistic', '?')}", fontsize=9)
    ax_est.legend(fontsize=8)


def study_configurations(doc: Mapping[str, Any]) -> list[int] | None:
    """The configurations a study's report details by default: a sweep its baseline and best
    value, a tournament of more than 6 pairings none, a balance study none; None: all."""
    if doc.get("balance_sheet"):
        return []
    if doc.get("sweep"):
        sw = doc["sweep"]
        best = (sw.get("best") or {}).get("configuration")
        return list(dict.fromkeys(k for k in (sw["baseline"], best) if k is not None))
    if doc.get("ratings") and len(doc.get("configurations") or []) > 6:
        return []
    return None


def study_kind(doc: Mapping[str, Any]) -> str | None:
    """``"ratings"`` for a tournament, ``"sweep"`` for a sweep, ``"balance_sheet"`` for a balance
    study (``azulsim balance --json``), else None."""
    for kind in STUDY_DRAWERS:
        if doc.get(kind):
            return kind
    return None


def _draw_ratings(sub, doc: Mapping[str, Any]) -> None:
    """A tournament: Elo with its 95 % interval per bot (strongest on top), and the head-to-head
    matrix of observed score rates."""
    from sim.experiments.tournament import head_to_head_matrix

    ratings = doc["ratings"]
    sub.suptitle(
        f"Tournament ratings: {ratings['model']}, Elo scale, {ratings['anchor']} rated 0 - "
        f"{ratings['comparisons']:,} comparisons",
        fontsize=10,
    )
    ax_elo, ax_h2h = sub.subplots(1, 2)
    bots = [b for b in ratings["bots"] if b["elo"] is not None][::-1]
    ys = list(range(len(bots)))
    elo = [b["elo"] for b in bots]
    lo = [b["elo"] - (b["elo_ci95"] or [b["elo"]])[0] for b in bots]
    hi = [(b["elo_ci95"] or [0, b["elo"]])[1] - b["elo"] for b in bots]
    ax_elo.barh(ys, elo, xerr=[lo, hi], color="C0", alpha=0.8, capsize=4)
    ax_elo.set_yticks(ys, [b["bot"] for b in bots], fontsize=8)
    ax_elo.axvline(0, color="0.3", linewidth=1)
    ax_elo.set_xlabel(f"rating, Elo above {ratings['anchor']} (95% interval)")
    ax_elo.set_title("Rating by bot", fontsize=9)
    ax_elo.grid(axis="x", alpha=0.3)
    labels, rates = head_to_head_matrix(doc)
    grid = [[math.nan if x is None else 100 * x for x in row] for row in rates]
    image = ax_h2h.imshow(grid, cmap="RdBu", vmin=0, vmax=100)
    for i, row in enumerate(grid):
        for j, x in enumerate(row):
            if not math.isnan(x):
                ax_h2h.text(j, i, f"{x:.0f}%", ha="center", va="center", fontsize=8)
    ax_h2h.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax_h2h.set_yticks(range(len(labels)), labels, fontsize=8)
    ax_h2h.set_title("Share of meetings the row bot finished higher", fontsize=9)
    sub.colorbar(image, ax=ax_h2h, label="% of meetings won (a level one counts half)")


def _png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


# --- HTML -------------------------------------------------------------------------------------


def _pct(rate: float | None, ci: Sequence[float] | None) -> str:
    if rate is None:
        return "–"
    text = f"{100 * rate:.1f}%"
    return text + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def _mean(stat: Mapping[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    ci = stat.get("ci95")
    return f"{stat['mean']:.2f}" + (f" ± {(ci[1] - ci[0]) / 2:.2f}" if ci else "")


def _interval_text(mean: float | None, ci: Sequence[float] | None) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{mean:.2f}"


def html_page(doc: Mapping[str, Any], title: str | None = None) -> str:
    """A self-contained HTML report: key figures as tables and one embedded PNG per
    configuration (``data:image/png;base64``; no external files or scripts)."""
    head = html.escape(document_title(doc, title))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{head}</title>",
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1800px}"
        "table{border-collapse:collapse;margin:.5em 0 1em}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}</style>",
        f"</head><body><h1>{head}</h1>",
    ]
    if study_kind(doc) is not None:  # a sweep's or tournament's answer first, once
        png = _png_bytes(figure(doc, configurations=[]))
        b64 = base64.b64encode(png).decode("ascii")
        parts.append(f'<img alt="{study_kind(doc)}" src="data:image/png;base64,{b64}">')
    shown = study_configurations(doc)
    for k, cfg in enumerate(doc.get("configurations") or []):
        if shown is not None and k not in shown:
            continue
        png = _png_bytes(
            figure(doc, title=_configuration_title(cfg), configurations=[k], study=False)
        )
        parts.append(f"<h2>{html.escape(_configuration_title(cfg))}</h2>")
        parts.append(
            "<p>rounds "
            + _mean(cfg.get("rounds"))
            + " · turns "
            + _mean(cfg.get("turns"))
            + " · score "
            + _mean(cfg.get("score"))
            + " · margin of victory "
            + _mean(cfg.get("margin"))
            + "</p>"
        )
        rows = [
            "<table><tr><th>bot</th><th>player-games</th><th>score (mean ± 95%)</th>"
            "<th>wins</th><th>win rate [95% Wilson]</th></tr>"
        ]
        for name, g in (cfg.get("bots") or {}).items():
            rows.append(
                f"<tr><td>{html.escape(name)}</td><td>{g.get('player_games', 0):,}</td>"
                f"<td>{_mean(g.get('score'))}</td><td>{g.get('wins', 0):,}</td>"
                f"<td>{_pct(g.get('win_rate'), g.get('win_rate_ci95'))}</td></tr>"
            )
        for i, g in enumerate(cfg.get("seats") or []):
            rows.append(
                f"<tr><td>seat {i}</td><td>{g.get('player_games', 0):,}</td>"
                f"<td>{_mean(g.get('score'))}</td><td>{g.get('wins', 0):,}</td>"
                f"<td>{_pct(g.get('win_rate'), g.get('win_rate_ci95'))}</td></tr>"
            )
        for q, g in enumerate((cfg.get("turn_order") or {}).get("positions") or []):
            rows.append(
                f"<tr><td>{position_name(q)} in round 1</td><td>{g.get('player_games', 0):,}</td>"
                f"<td>{_interval_text(g.get('score'), g.get('score_ci95'))}</td>"
                f"<td>{g.get('wins', 0):,}</td>"
                f"<td>{_pct(g.get('win_rate'), g.get('win_rate_ci95'))}</td></tr>"
            )
        rows.append("</table>")
        parts.extend(rows)
        b64 = base64.b64encode(png).decode("ascii")
        alt = html.escape(f"plots of configuration {cfg.get('index', k)}")
        parts.append(f'<img alt="{alt}" src="data:image/png;base64,{b64}">')
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _sweep_value(v: Any) -> str:
    """A swept value as text: a number short (``0.5``), a list by ``/`` (a floor), else as is."""
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "/".join(str(x) for x in v)
    return str(v)


def _sweep_axis(name: str, bot: str) -> str:
    if name.startswith("rules."):
        return f"{name} (rule)"
    return f"{name} (parameter of {bot})"


def _positions(values: list[Any]) -> tuple[list[Any], list[float], list[str] | None]:
    """The distinct values in order, their x positions, and tick labels for values that are not
    numbers (a wall, a marker, a floor: evenly spaced categories), else None."""
    distinct = []
    for v in values:
        if v not in distinct:
            distinct.append(v)
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    if numeric:
        distinct.sort()
        return distinct, [float(v) for v in distinct], None
    return distinct, [float(i) for i in range(len(distinct))], [_sweep_value(v) for v in distinct]


def _draw_sweep(sub, doc: Mapping[str, Any]) -> None:
    """A sweep: the swept bot's win rate and score against the parameter (a bot's or a rule's)
    with 95 % interval bands, one line per group (line-up and player count) (one parameter), or
    heat maps of them over the grid of the baseline's group (two parameters)."""
    sw = doc["sweep"]
    params = sw["parameters"]
    rows = sw["rows"]
    best = sw.get("best") or {}
    groups = sw.get("groups") or [
        {
            "configurations": [r["configuration"] for r in rows],
            "baseline": sw["baseline"],
            "bot": sw["bot"],
            "opponents": sw["opponents"],
            "players": None,
        }  # fmt: skip
    ]
    many = len(groups) > 1
    sub.suptitle(
        f"Sweep of {sw['bot']} against {', '.join(sw['opponents'])} - best "
        + ", ".join(f"{k}={_sweep_value(v)}" for k, v in (best.get("values") or {}).items())
        + (f" (win rate {100 * best['win_rate']:.1f}%)" if best.get("win_rate") is not None else "")
        + (f"; {len(groups)} line-ups x player counts" if many else ""),
        fontsize=10,
    )
    ax_win, ax_score = sub.subplots(1, 2)
    metrics = (
        (ax_win, "win_rate", "win_rate_ci95", 100.0, "win rate, %"),
        (ax_score, "score", "score_ci95", 1.0, "final score"),
    )
    if len(params) == 1:
        name = params[0]
        distinct, xs, ticks = _positions([r["values"][name] for r in rows])
        for ax, key, ci_key, scale, label in metrics:
            for g, group in enumerate(groups):
                mine = [rows[k] for k in group["configurations"]]
                order = sorted(mine, key=lambda r: distinct.index(r["values"][name]))
                x = [xs[distinct.index(r["values"][name])] for r in order]
                ys = [math.nan if r[key] is None else scale * r[key] for r in order]
                lo = [math.nan if not r[ci_key] else scale * r[ci_key][0] for r in order]
                hi = [math.nan if not r[ci_key] else scale * r[ci_key][1] for r in order]
                colour = f"C{g % 10}"
                tag = (
                    f"{group['players']}p vs {', '.join(group['opponents'])}" if many else sw["bot"]
                )
                ax.fill_between(x, lo, hi, color=colour, alpha=0.2,
                                label=None if many else "95% interval")  # fmt: skip
                ax.plot(x, ys, marker="o", color=colour, label=tag)
                base = rows[group["baseline"]]
                if base[key] is not None:
                    ax.axhline(scale * base[key], color=colour if many else "0.4", linestyle="--",
                               linewidth=1, label=None if many else "baseline")  # fmt: skip
            if ticks is not None:
                ax.set_xticks(xs, ticks, fontsize=8)
            ax.set_xlabel(_sweep_axis(name, sw["bot"]))
            ax.set_ylabel(f"{label} (95% interval)")
            ax.set_title(f"{label.split(',')[0].capitalize()} by {name}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7 if many else 8, frameon=False)
        return
    first, second = params
    home = next(g for g in groups if sw["baseline"] in g["configurations"])
    mine = [rows[k] for k in home["configurations"]]
    xs, _, _ = _positions([r["values"][first] for r in mine])
    ys, _, _ = _positions([r["values"][second] for r in mine])
    for ax, key, _, scale, label in metrics:
        grid = [[math.nan] * len(xs) for _ in ys]
        for r in mine:
            if r[key] is not None:
                grid[ys.index(r["values"][second])][xs.index(r["values"][first])] = scale * r[key]
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        for i, line in enumerate(grid):
            for j, x in enumerate(line):
                if not math.isnan(x) and len(xs) * len(ys) <= 100:
                    ax.text(j, i, f"{x:.0f}", ha="center", va="center", fontsize=7, color="w")
        ax.set_xticks(range(len(xs)), [_sweep_value(x) for x in xs], fontsize=8)
        ax.set_yticks(range(len(ys)), [_sweep_value(y) for y in ys], fontsize=8)
        ax.set_xlabel(_sweep_axis(first, sw["bot"]))
        ax.set_ylabel(_sweep_axis(second, sw["bot"]))
        where = f" ({home['players']}p vs {', '.join(home['opponents'])})" if many else ""
        ax.set_title(f"{label.split(',')[0].capitalize()} of {sw['bot']}{where}", fontsize=9)
        sub.colorbar(image, ax=ax, label=label)


def _draw_balance(sub, doc: Mapping[str, Any]) -> None:
    from .report_balance import draw_balance

    draw_balance(sub, doc)


STUDY_DRAWERS = {"ratings": _draw_ratings, "sweep": _draw_sweep, "balance_sheet": _draw_balance}


# --- writing ----------------------------------------------------------------------------------


def write_report(doc: Mapping[str, Any], path: str | Path, title: str | None = None) -> Path:
    """Draw `doc` to `path`; the extension picks the format (`FORMATS`). Returns the path."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in FORMATS:
        raise ReportError(
            f"output must end in {', '.join(FORMATS)} (the extension picks the format); "
            f"got {path.name!r}"
        )
    doc = unwrap(doc)
    if not doc.get("configurations"):
        raise ReportError("the statistics document has no configurations to plot")
    try:
        if ext == ".html":
            path.write_text(html_page(doc, title), encoding="utf-8")
        else:
            figure(doc, title).savefig(path, format=ext[1:], dpi=DPI)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
