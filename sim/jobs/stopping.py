"""Stopping rules of a job: an SPRT or a precision target, decided at fixed check points.

A rule (`StopRule`, the spec's ``stop`` object) names one configuration and one statistic of it:

- ``{"rule": "sprt", "elo0": E0, "elo1": E1, "alpha": a, "beta": b}`` on the head-to-head of a
  *mirrored* configuration: its focal player (the bot listed first, ``bots[0]``, wherever the
  rotation seats it) against the others (self-play, ``bots[0]`` equal to another, is allowed: it
  tests nothing and calibrates the test). Two players:
  the exact GSPRT of the pentanomial; three or four: the normal-approximation GSPRT of the group
  score, Elo read through Luce's choice model (docs/statistics.md);
- ``{"rule": "sprt", "statistic": "paired_score"|"paired_win", "delta0": D0, "delta1": D1, ...}``
  on the paired difference of a configuration to the job's ``baseline`` (points per game, or win
  rate), the normal-approximation GSPRT of the mean difference;
- ``{"rule": "precision", "statistic": S, "eps": e}``: stop when the 95 % interval of ``S`` is at
  most ``±e`` (S = ``score``: the focal bot's group score per game, ``elo``: its Elo,
  ``paired_score`` or ``paired_win``).

The job's ``games`` is always the maximum. Check points are every ``check_every`` games of each
configuration (fixed by the spec, never by the chunk size): at check point ``j`` the rule is read
on the statistics of games ``[0, j * check_every)`` of every configuration, the contiguous prefix,
so a job stops at the same game whatever the chunking, workers, order or retries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sim.quote import shown

RULES = ("sprt", "precision")
STATISTICS = ("score", "elo", "paired_score", "paired_win")
DEFAULT_CHECK_EVERY = 240  # a multiple of 2, 3 and 4: whole mirrored groups for every player count
MAX_CHECK_POINTS = 100_000

# Stop reasons, as the job records and reports them.
H1 = "h1_accepted"
H0 = "h0_accepted"
PRECISION = "precision_reached"
MAXIMUM = "max_games"
REASONS = (H1, H0, PRECISION, MAXIMUM)


def _number(data: Mapping, key: str, path: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{path}.{key} must be a finite number; got {shown(value)}")
    return float(value)


@dataclass(frozen=True)
class StopRule:
    """A validated stopping rule (see the module docstring for the JSON form).

    Cross-checks against the job (configuration index, mirrored seating, baseline) are done by
    `check_against`, which `sim.jobs.spec.JobSpec` calls.
    """

    rule: str
    configuration: int = 0
    statistic: str = "elo"  # sprt: "elo" (head-to-head), "paired_score" or "paired_win"
    elo0: float | None = None
    elo1: float | None = None
    delta0: float | None = None
    delta1: float | None = None
    alpha: float = 0.05
    beta: float = 0.05
    eps: float | None = None
    check_every: int = DEFAULT_CHECK_EVERY

    @classmethod
    def from_dict(cls, data: Any, path: str = "stop") -> StopRule:
        if not isinstance(data, Mapping):
            raise ValueError(f"{path} must be an object; got {shown(data)}")
        allowed = {
            "rule", "configuration", "statistic", "elo0", "elo1", "delta0", "delta1", "alpha",
            "beta", "eps", "check_every",
        }  # fmt: skip
        for key in data:
            if key not in allowed:
                raise ValueError(
                    f"{path}: unknown field {shown(key)} (allowed: {', '.join(sorted(allowed))})"
                )
        rule = data.get("rule")
        if rule not in RULES:
            raise ValueError(f"{path}.rule must be one of {', '.join(RULES)}; got {shown(rule)}")
        k = data.get("configuration", 0)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"{path}.configuration must be a configuration index; got {shown(k)}")
        every = data.get("check_every", DEFAULT_CHECK_EVERY)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(
                f"{path}.check_every must be a positive number of games; got {shown(every)}"
            )
        fields: dict[str, Any] = {"rule": rule, "configuration": k, "check_every": every}
        if rule == "sprt":
            for key in ("alpha", "beta"):
                value = _number(data, key, path) if key in data else 0.05
                if not 0.0 < value < 0.5:
                    got = shown(data.get(key))
                    raise ValueError(f"{path}.{key} must lie in (0, 0.5); got {got}")
                fields[key] = value
            paired = "delta0" in data or "delta1" in data
            statistic = data.get("statistic", "paired_score" if paired else "elo")
            if paired:
                if statistic not in ("paired_score", "paired_win"):
                    raise ValueError(
                        f"{path}.statistic must be paired_score or paired_win with delta0/delta1; "
                        f"got {shown(statistic)}"
                    )
                lo, hi = _number(data, "delta0", path), _number(data, "delta1", path)
                if lo >= hi:
                    raise ValueError(
                        f"{path}.delta1 must be greater than {path}.delta0; got delta0={lo:g}, "
                        f"delta1={hi:g}"
                    )
                fields.update(delta0=lo, delta1=hi)
            else:
                if statistic != "elo":
                    raise ValueError(
                        f"{path}.statistic must be elo with elo0/elo1 (or give delta0/delta1 for "
                        f"a paired difference); got {shown(statistic)}"
                    )
                lo, hi = _number(data, "elo0", path), _number(data, "elo1", path)
                if lo >= hi:
                    raise ValueError(
                        f"{path}.elo1 must be greater than {path}.elo0; got elo0={lo:g}, "
                        f"elo1={hi:g}"
                    )
                if max(abs(lo), abs(hi)) >= 1000:
                    raise ValueError(f"{path}.elo0/elo1 must lie in (-1000, 1000)")
                fields.update(elo0=lo, elo1=hi)
            fields["statistic"] = statistic
            for key in ("eps",):
                if key in data:
                    raise ValueError(f"{path}.{key} belongs to the precision rule, not sprt")
        else:
            statistic = data.get("statistic", "elo")
            if statistic not in STATISTICS:
                raise ValueError(
                    f"{path}.statistic must be one of {', '.join(STATISTICS)}; "
                    f"got {shown(statistic)}"
                )
            eps = _number(data, "eps", path)
            if eps <= 0:
                raise ValueError(f"{path}.eps must be greater than 0; got {shown(data.get('eps'))}")
            for key in ("elo0", "elo1", "delta0", "delta1", "alpha", "beta"):
                if key in data:
                    raise ValueError(f"{path}.{key} belongs to the sprt rule, not precision")
            fields.update(statistic=statistic, eps=eps)
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "configuration": self.configuration,
            "statistic": self.statistic,
            "check_every": self.check_every,
        }
        if self.rule == "sprt":
            out.update(alpha=self.alpha, beta=self.beta)
            if self.paired:
                out.update(delta0=self.delta0, delta1=self.delta1)
            else:
                out.update(elo0=self.elo0, elo1=self.elo1)
        else:
            out["eps"] = self.eps
        return out

    @property
    def paired(self) -> bool:
        return self.statistic.startswith("paired_")

    def check_against(self, spec) -> None:
        """Cross-field checks against the job (raises ValueError naming the field)."""
        n = len(spec.configurations)
        if self.configuration >= n:
            raise ValueError(f"stop.configuration must be in 0..{n - 1}; got {self.configuration}")
        config = spec.configurations[self.configuration]
        if self.paired:
            if spec.baseline is None:
                raise ValueError(f"stop.statistic {self.statistic} needs a baseline configuration")
            if self.configuration == spec.baseline:
                raise ValueError(
                    f"stop.configuration must not be the baseline ({spec.baseline}) for a paired "
                    "statistic"
                )
            if self.configuration not in spec.paired_configurations():
                raise ValueError(
                    f"stop.configuration {self.configuration} is not paired with the baseline "
                    "(same players and wall)"
                )
        else:
            if config.seating != "mirrored":
                raise ValueError(
                    f"stop.statistic {self.statistic} needs mirrored seating in "
                    f"configurations[{self.configuration}].seating; got {shown(config.seating)}"
                )
        for k, c in enumerate(spec.configurations):
            if c.seating == "mirrored" and self.check_every % c.players:
                raise ValueError(
                    f"stop.check_every must be a multiple of configurations[{k}].players "
                    f"({c.players}) for mirrored seating; got {self.check_every}"
                )
        if math.ceil(spec.games / self.check_every) > MAX_CHECK_POINTS:
            raise ValueError(
                f"stop.check_every gives more than {MAX_CHECK_POINTS} check points; got "
                f"{self.check_every} for {spec.games} games"
            )

    def check_points(self, games: int) -> list[int]:
        """Prefix lengths (games of each configuration) at which the rule is read."""
        points = list(range(self.check_every, games, self.check_every))
        return [*points, games]


def evaluate(rule: StopRule, counters, spec, games: int) -> dict[str, Any]:
    """Read `rule` on the counters of the prefix ``[0, games)`` (every configuration).

    Returns the check point: ``{"games", "llr", "llr_bounds", "estimate", "ci95", "reason"}``
    with ``llr`` and ``llr_bounds`` None for a precision rule and ``reason`` one of `REASONS` when
    the job stops here, else None. At ``games == spec.games`` (the maximum) the job stops whatever
    the statistics say.

    The SPRT's bounds are moved in by Siegmund's correction for a test read at check points
    rather than after every sample (`overshoot`), so that it keeps its error rates; they are
    reported per check point.
    """
    from ..stats import groups, sprt

    k = rule.configuration
    config = spec.configurations[k]
    players = config.players
    llr = bounds = None
    reason = None
    # Samples since the previous check point (the last interval may be short).
    since = games - (games - 1) // rule.check_every * rule.check_every
    if rule.paired:
        n, mean, var = groups.paired_moments(counters, k, rule.statistic.removeprefix("paired_"))
        estimate = mean
        ci = sprt.interval(mean, var * n / (n - 1), n) if n >= 2 else None
        if rule.rule == "sprt":
            llr = sprt.llr_normal(n, mean, var, rule.delta0, rule.delta1)
            shift = overshoot(since, rule.delta0, rule.delta1, var)
    else:
        n, mean, var = groups.group_moments(counters, k, players)
        score_ci = sprt.interval(mean, var, n) if n >= 2 else None
        if rule.statistic == "score":
            estimate, ci = mean, score_ci
        else:
            estimate = None if mean is None else groups.luce_elo(mean, players)
            ci = None if score_ci is None else [groups.luce_elo(x, players) for x in score_ci]
        if rule.rule == "sprt":
            s0, s1 = (groups.luce_share(e, players) for e in (rule.elo0, rule.elo1))
            if players == 2:
                counts = [int(counters.get(f"c{k}|penta|n{i}", 0)) for i in range(5)]
                llr = sprt.llr_pentanomial(counts, rule.elo0, rule.elo1)
            else:
                llr = sprt.llr_normal(n, mean, var, s0, s1)
            shift = overshoot(since // players, s0, s1, var)
    if rule.rule == "sprt":
        lower, upper = sprt.sprt_bounds(rule.alpha, rule.beta)
        shift = min(shift, 0.9 * min(upper, -lower))
        bounds = [lower + shift, upper - shift]
        if llr >= bounds[1]:
            reason = H1
        elif llr <= bounds[0]:
            reason = H0
    elif ci is not None and all(math.isfinite(x) for x in ci):
        if max(estimate - ci[0], ci[1] - estimate) <= rule.eps:
            reason = PRECISION
    if reason is None and games >= spec.games:
        reason = MAXIMUM

    def finite(x):
        return x if x is None or math.isfinite(x) else None

    return {
        "games": games,
        "llr": llr,
        "llr_bounds": bounds,
        "estimate": finite(estimate),
        "ci95": None if ci is None else [finite(x) for x in ci],
        "reason": reason,
    }


SIEGMUND = 0.583  # E[overshoot] / sd of a Gaussian random walk's step (Siegmund 1985, 8.33)


def overshoot(samples: int, m0: float, m1: float, var: float | None) -> float:
    """How far an SPRT read every `samples` samples moves its bounds in (Siegmund's corollary
    8.33, as fishtest): ``0.583 * sqrt(v)`` with ``v = samples (m1 - m0)^2 / var`` the variance of
    the LLR's step between check points (``var`` the per-sample variance, the prefix's estimate).
    At most 90 % of the smaller bound (beyond that the test is no longer sequential). 0 while the
    variance is unknown.

    Read after every sample the correction is small (0.1 at alpha = beta = 0.05, 40 Elo, greedy
    self-play); every 120 pairs it is about 1.2, and without it the test accepted H1 in 1.1 % of
    1000 repetitions at a nominal 5 % (bench/sprt.py)."""
    if not var or var <= 0 or samples <= 0:
        return 0.0
    return SIEGMUND * math.sqrt(samples * (m1 - m0) ** 2 / var)


def llr_bounds(rule: StopRule) -> list[float] | None:
    """The nominal ``[lower, upper]`` of an SPRT (None for a precision rule): ``log(beta/(1 -
    alpha))`` and ``log((1 - beta)/alpha)``, before the check-point correction (`overshoot`)."""
    if rule.rule != "sprt":
        return None
    return [math.log(rule.beta / (1 - rule.alpha)), math.log((1 - rule.beta) / rule.alpha)]
