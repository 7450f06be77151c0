"""SPSA tuning of a bot's numeric parameters by mirrored-pair matches (``azulsim tune``).

Simultaneous perturbation stochastic approximation, as fishtest tunes chess engines: at
iteration ``k`` (from 0) every tuned parameter ``i`` is moved by ``±c_k,i`` at once, the signs
``Δ_k`` drawn from the run's seed, and the bot with ``θ + c_k Δ_k`` plays the bot with
``θ − c_k Δ_k`` a batch of mirrored pairs (every deal played P times with the seats rotated, the
same job `azulsim compare` runs). With ``s_k`` the plus side's score (0..1),

    θ_k+1,i = clip(θ_k,i + a_k · (s_k − ½) · Δ_k,i · c_i² / c_k,i)

with the usual gains ``c_k,i = c_i / (k + 1)^0.101`` and ``a_k = a / (k + 1 + A)^0.602``,
``A = iterations / 10``: the step is a share of ``c_i`` per point of score edge, large at first
and shrinking. Parameters are clipped to their schema's range; an int parameter plays rounded
values (its perturbation at least 1). A match's seed is the run's seed plus ``k``, and the signs
come from `numpy.random.default_rng` of (seed, k), so a run is a pure function of its arguments:
the same seed gives the same path, whoever plays the matches (in-process or the service), since
each match's statistics are.

`Tuning` holds the arguments and does the arithmetic; `run` plays the iterations with a
`play(spec) -> statistics document` function and records the path (`schema` ``azulsim.tune/1``);
`check_spec` is the SPRT job of the tuned values against the start (`sim.jobs.stopping`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..bots.registry import BotSpec, get_bot_info, parse_bot_spec
from ..jobs.spec import JobSpec

SCHEMA = "azulsim.tune/1"
ALPHA, GAMMA = 0.602, 0.101  # Spall's gain exponents (fishtest's too)
DIGITS = 4  # parameter values are rounded to this many decimals: short labels, exact replays


@dataclass(frozen=True)
class Tuned:
    """One tuned parameter: its name, start value, perturbation ``c`` and range."""

    name: str
    start: float
    c: float
    lo: float
    hi: float
    integer: bool


@dataclass
class Tuning:
    """A tuning run's arguments (module docstring); `params` are parsed from the bot's schema."""

    bot: str  # the base spec, e.g. "deep:nodes=24": its other parameters stay as given
    names: tuple[str, ...]
    iterations: int = 20
    pairs: int = 100  # mirrored groups per iteration (2 players: 2 games each)
    players: int = 2
    wall: str = "coloured"
    seed: int = 0
    a: float = 4.0
    c: dict[str, float] = field(default_factory=dict)  # perturbation per parameter (default)
    base: BotSpec = field(init=False)
    params: tuple[Tuned, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.base = parse_bot_spec(self.bot)
        info = get_bot_info(self.base.name)
        if not self.names:
            raise ValueError("params: name at least one numeric parameter to tune")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"params: a parameter is named twice in {list(self.names)}")
        for key, value in (("iterations", self.iterations), ("pairs", self.pairs)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive integer; got {value!r}")
        if not (isinstance(self.a, int | float) and math.isfinite(self.a) and self.a > 0):
            raise ValueError(f"a must be a positive number; got {self.a!r}")
        unknown = set(self.c) - set(self.names)
        if unknown:
            raise ValueError(f"c: {sorted(unknown)} are not tuned parameters")
        tuned = []
        for name in self.names:
            p = info.param(name)
            if p.type not in ("float", "int") or p.min is None or p.max is None:
                raise ValueError(
                    f"params: bot {info.name!r} parameter {name!r} is not a bounded number"
                )
            span = float(p.max - p.min)
            c = float(self.c.get(name, span / 20))
            if p.type == "int":
                c = max(1.0, round(c))
            if not (math.isfinite(c) and 0 < c <= span / 2):
                raise ValueError(f"c: {name}={c!r} must be in (0, {span / 2:g}] (half its range)")
            tuned.append(
                Tuned(name, float(self.base.params[name]), c, float(p.min), float(p.max),
                      p.type == "int")
            )  # fmt: skip
        self.params = tuple(tuned)
        self.match_spec(dict.fromkeys(self.names, 0.0), dict.fromkeys(self.names, 0.0), 0)

    # --- the arithmetic ------------------------------------------------------------------------

    def gains(self, k: int) -> tuple[float, np.ndarray]:
        """``(a_k, c_k)``: the step gain and the perturbation of each parameter at iteration k."""
        big_a = self.iterations / 10
        a_k = self.a / (k + 1 + big_a) ** ALPHA
        c_k = np.array([p.c for p in self.params]) / (k + 1) ** GAMMA
        return a_k, c_k

    def signs(self, k: int) -> np.ndarray:
        """``Δ_k``: ±1 per parameter, from the run's seed and k alone."""
        rng = np.random.default_rng([self.seed, k])
        return np.where(rng.random(len(self.params)) < 0.5, -1.0, 1.0)

    def value(self, p: Tuned, x: float) -> float | int:
        """`x` as parameter `p` plays it: clipped to its range, rounded (int: to an integer)."""
        x = min(p.hi, max(p.lo, x))
        return int(round(x)) if p.integer else round(x, DIGITS) + 0.0

    def spec_of(self, theta: dict[str, float]) -> str:
        """The bot spec playing `theta` (the base spec's other parameters kept)."""
        params = dict(self.base.params)
        for p in self.params:
            params[p.name] = self.value(p, theta[p.name])
        info = get_bot_info(self.base.name)
        given = ",".join(f"{q.name}={q.format(params[q.name])}" for q in info.params)
        return parse_bot_spec(f"{info.name}:{given}" if given else info.name).label

    def match_spec(self, plus: dict[str, float], minus: dict[str, float], k: int) -> JobSpec:
        """The mirrored-pairs job of iteration k: `plus` in seat 0, `minus` in the others."""
        a, b = self.spec_of(plus), self.spec_of(minus)
        return pairs_spec(a, b, self.players, self.wall, self.pairs, self.seed + k)

    def step(self, theta: dict[str, float], k: int, score: float) -> dict[str, float]:
        """θ_k+1 from θ_k and the plus side's score at iteration k."""
        a_k, c_k = self.gains(k)
        delta = self.signs(k)
        out = {}
        for i, p in enumerate(self.params):
            moved = theta[p.name] + a_k * (score - 0.5) * delta[i] * p.c**2 / c_k[i]
            out[p.name] = round(min(p.hi, max(p.lo, moved)), 9)
        return out

    def sides(self, theta: dict[str, float], k: int) -> tuple[dict, dict]:
        _, c_k = self.gains(k)
        delta = self.signs(k)
        plus = {p.name: theta[p.name] + c_k[i] * delta[i] for i, p in enumerate(self.params)}
        minus = {p.name: theta[p.name] - c_k[i] * delta[i] for i, p in enumerate(self.params)}
        return plus, minus

    def describe(self) -> dict[str, Any]:
        return {
            "bot": self.base.label,
            "params": [
                {"name": p.name, "start": p.start, "c": p.c, "min": p.lo, "max": p.hi}
                for p in self.params
            ],
            "iterations": self.iterations,
            "pairs": self.pairs,
            "players": self.players,
            "wall": self.wall,
            "seed": self.seed,
            "a": self.a,
        }


def pairs_spec(a: str, b: str, players: int, wall: str, groups: int, seed: int, stop=None):
    """`azulsim compare`'s job: `a` in one seat, `b` in the others, mirrored (P games a deal)."""
    data: dict[str, Any] = {
        "configurations": [
            {"players": players, "bots": [a] + [b] * (players - 1), "seating": "mirrored",
             "wall": wall}
        ],
        "games": groups * players,
        "seed": seed,
    }  # fmt: skip
    if stop is not None:
        data["stop"] = stop
    return JobSpec.from_dict(data)


def match_score(doc: dict[str, Any]) -> float:
    """Seat 0's score (0..1) over the mirrored groups of a match's statistics document."""
    return float(doc["configurations"][0]["groups"]["score"])


Play = Callable[[JobSpec], dict[str, Any]]


def run(tuning: Tuning, play: Play, on_iteration: Callable[[dict], None] | None = None) -> dict:
    """Play the iterations of `tuning` with `play` and return the run's document (its path)."""
    theta = {p.name: p.start for p in tuning.params}
    path = []
    for k in range(tuning.iterations):
        plus, minus = tuning.sides(theta, k)
        spec = tuning.match_spec(plus, minus, k)
        a, b = spec.configurations[0].bots[:2]
        if a == b:  # both sides round to the same bot (an int at its bound): an even match
            doc, score = {"games_done": 0}, 0.5
        else:
            doc = play(spec)
            score = match_score(doc)
        a_k, c_k = tuning.gains(k)
        point = {
            "iteration": k,
            "theta": {n: round(v, 6) for n, v in theta.items()},
            "plus": spec.configurations[0].bots[0],
            "minus": spec.configurations[0].bots[1],
            "signs": tuning.signs(k).astype(int).tolist(),
            "a_k": a_k,
            "c_k": c_k.tolist(),
            "games": doc["games_done"],
            "score": score,
        }
        theta = tuning.step(theta, k, score)
        point["next"] = {n: round(v, 6) for n, v in theta.items()}
        path.append(point)
        if on_iteration is not None:
            on_iteration(point)
    final = {p.name: tuning.value(p, theta[p.name]) for p in tuning.params}
    return {
        "schema": SCHEMA,
        "tuning": tuning.describe(),
        "path": path,
        "final": final,
        "start_spec": tuning.spec_of({p.name: p.start for p in tuning.params}),
        "final_spec": tuning.spec_of(theta),
    }


def check_spec(doc: dict, elo0: float, elo1: float, games: int, seed: int, alpha=0.05, beta=0.05):
    """The SPRT job (H0 elo0 against H1 elo1, logistic Elo over mirrored pairs) of the tuned bot
    against its start values, at the run's table."""
    t = doc["tuning"]
    stop = {"rule": "sprt", "elo0": elo0, "elo1": elo1, "alpha": alpha, "beta": beta}
    players = t["players"]
    groups = max(1, games // players)
    return pairs_spec(doc["final_spec"], doc["start_spec"], players, t["wall"], groups, seed, stop)
