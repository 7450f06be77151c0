"""The statistics sections of a job page, in page order: the one place a new section is added.

A section is a template under ``templates/sections/`` and a test of the statistics document
(`sim.stats.derive`'s, as GetStatistics returns it) that says whether the job has it. Its template
sees ``doc`` and the helpers of `helpers` (`service.web.tables`, the charts below). To add one
(say a chart of the lead changes), write ``templates/sections/lead.html`` and add
``Section("lead", "Lead changes", lambda doc: ...)`` to `SECTIONS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from . import tables
from .svg import LineChart, Series, heat_map


@dataclass(frozen=True)
class Section:
    name: str  # the template's name and the section's anchor on the page
    title: str
    applies: Callable[[dict[str, Any]], bool]

    @property
    def template(self) -> str:
        return f"sections/{self.name}.html"


SECTIONS: tuple[Section, ...] = (
    Section("stopping", "Stopping rule", lambda doc: bool(doc.get("stopping"))),
    Section("ratings", "Tournament ratings", lambda doc: bool(doc.get("ratings"))),
    Section("sweep", "Sweep", lambda doc: bool(doc.get("sweep"))),
    Section("balance", "Balance sheet", lambda doc: balance_job(doc)),
    Section("configurations", "Configurations", lambda doc: bool(doc.get("configurations"))),
)


def balance_job(doc: dict[str, Any]) -> bool:
    """Whether the document is a balance study's (`sim.experiments.balance_lab.is_balance_job` of
    its spec)."""
    from sim.experiments.balance_lab import is_balance_job
    from sim.jobs.spec import JobSpec

    spec = doc.get("spec") or {}
    configs = spec.get("configurations") or []
    if not spec.get("pairs") and not any(
        str((c.get("bots") or [""])[0]).startswith("restricted") for c in configs
    ):
        return False  # most jobs: no spec to parse
    return is_balance_job(JobSpec.from_dict(spec))


def sections_of(doc: dict[str, Any]) -> list[Section]:
    return [s for s in SECTIONS if s.applies(doc)]


# --- charts -----------------------------------------------------------------------------------


def _nan_none(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def _ci(points, side: int) -> list[float | None]:
    return [_nan_none(p["ci95"][side]) if p.get("ci95") else None for p in points]


def llr_chart(stopping: dict[str, Any]) -> Markup | None:
    """The LLR at every check point against the bounds it was read against."""
    points = stopping["check_points"]
    if not points or all(p["llr"] is None for p in points):
        return None
    xs = [p["games"] for p in points]
    lower = [p["llr_bounds"][0] if p.get("llr_bounds") else None for p in points]
    upper = [p["llr_bounds"][1] if p.get("llr_bounds") else None for p in points]
    nominal = stopping.get("llr_bounds_nominal") or []
    return LineChart(
        xs,
        series=[
            Series([p["llr"] for p in points], "s0", "LLR"),
            Series(lower, "bound", "lower bound"),
            Series(upper, "bound", "upper bound"),
        ],
        rules=[(b, "nominal", f"nominal {b:+.2f}") for b in nominal],
        xlabel="games per configuration",
        ylabel="log-likelihood ratio",
        title="LLR at each check point, with its bounds",
    ).render()


def estimate_chart(stopping: dict[str, Any]) -> Markup | None:
    points = stopping["check_points"]
    if not points or all(p["estimate"] is None for p in points):
        return None
    statistic = stopping["rule"].get("statistic", "")
    return LineChart(
        [p["games"] for p in points],
        series=[Series([_nan_none(p["estimate"]) for p in points], "s0", statistic)],
        bands=[(_ci(points, 0), _ci(points, 1), "s0")],
        xlabel="games per configuration",
        ylabel=f"{statistic} (95% interval)",
        title=f"Estimate of {statistic} at each check point",
    ).render()


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _distinct(values) -> list[Any]:
    """A sweep's values once each: numbers in order, other values (a rule's wall, marker or
    floor) as they come."""
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return sorted(out) if all(_is_number(v) for v in out) else out


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "/".join(map(str, v)) if isinstance(v, list) else str(v)


def sweep_charts(sweep: dict[str, Any]) -> list[tuple[str, Markup]]:
    """``(caption, chart)``: one parameter, win rate and score with 95 % bands against it; two,
    heat maps of them."""
    rows, params = sweep["rows"], sweep["parameters"]
    for group in sweep.get("groups") or []:  # several line-ups or player counts: the baseline's
        if sweep["baseline"] in group["configurations"]:
            rows = [rows[k] for k in group["configurations"]]
    metrics = (("win_rate", "win_rate_ci95", 100.0, "win rate (%)"), ("score", "score_ci95", 1.0,
               "final score"))  # fmt: skip
    base = next((r for r in rows if r["configuration"] == sweep["baseline"]), None)
    out = []
    if len(params) == 1:
        name = params[0]
        distinct = _distinct(r["values"][name] for r in rows)
        order = sorted(rows, key=lambda r: distinct.index(r["values"][name]))
        numeric = all(_is_number(v) for v in distinct)
        xs = [r["values"][name] if numeric else distinct.index(r["values"][name]) for r in order]
        xlabel = f"{name} (parameter of {sweep['bot']})"
        if name.startswith("rules."):
            xlabel = f"{name} (rule)"
        if not numeric:  # a wall, a marker, a floor: the values by position
            xlabel += ": " + ", ".join(f"{i}={_value(v)}" for i, v in enumerate(distinct))
        for key, ci_key, scale, label in metrics:

            def scaled(v, s=scale):
                return None if v is None else s * v

            rules = []
            if base is not None and base[key] is not None:
                rules.append((scale * base[key], "nominal", "baseline"))
            out.append((
                f"{label} of {sweep['bot']} by {name}, with its 95% interval",
                LineChart(
                    xs,
                    series=[Series([scaled(r[key]) for r in order], "s0", sweep["bot"])],
                    bands=[
                        (
                            [scaled(r[ci_key][0]) if r[ci_key] else None for r in order],
                            [scaled(r[ci_key][1]) if r[ci_key] else None for r in order],
                            "s0",
                        )
                    ],
                    rules=rules,
                    xlabel=xlabel,
                    ylabel=f"{label} (95% interval)",
                    title=f"{label} of {sweep['bot']} by {name}",
                ).render(),
            ))  # fmt: skip
        return out
    first, second = params
    xs = _distinct(r["values"][first] for r in rows)
    ys = _distinct(r["values"][second] for r in rows)
    for key, _, scale, label in metrics:
        grid: list[list[float | None]] = [[None] * len(xs) for _ in ys]
        for r in rows:
            if r[key] is not None:
                grid[ys.index(r["values"][second])][xs.index(r["values"][first])] = scale * r[key]
        text = [["" if v is None else f"{v:.1f}" for v in line] for line in grid]
        title = f"{label} of {sweep['bot']} over {first} and {second}"
        xs_text = [f"{first}={_value(x)}" for x in xs]
        ys_text = [f"{second}={_value(y)}" for y in ys]
        out.append((title, heat_map(xs_text, ys_text, grid, text, title)))
    return out


def head_to_head_map(doc: dict[str, Any]) -> Markup:
    """A tournament's matrix of observed score rates, row bot against column bot."""
    from sim.experiments.tournament import head_to_head_matrix

    labels, rates = head_to_head_matrix(doc)
    grid = [[None if x is None else 100 * x for x in row] for row in rates]
    text = [["" if v is None else f"{v:.0f}%" for v in row] for row in grid]
    return heat_map(labels, labels, grid, text, "score rate of the row bot", lo=0.0, hi=100.0)


def helpers() -> dict[str, Any]:
    """What every section template may call."""
    return {
        "tables": tables,
        "llr_chart": llr_chart,
        "estimate_chart": estimate_chart,
        "sweep_charts": sweep_charts,
        "head_to_head_map": head_to_head_map,
    }
