"""Sweeps: a bot parameter given as a range or a list expands to one configuration per value.

In a bot spec of ``--bots``, a parameter's value may be

- a range ``START..STOP/STEP`` (``heuristic:floor=0..3/0.5`` is 0, 0.5, ..., 3; STOP is included
  when the steps land on it), or
- a list ``v1|v2|v3`` (``heuristic:floor=0|1.5|4``).

At most two parameters may be swept (two make a grid, every combination, the first parameter
varying slowest); everything else in the spec is fixed. The swept bot must be the first bot
(``bots[0]``, the focal player). All configurations have the same players, seating and wall, so
they play the same deals and seats game for game (`sim.spec.JobSpec.baseline`), each paired with
the baseline: the first value (combination), or the one named. The job's ``sweep`` field lists
the swept parameters; its statistics then carry a ``sweep`` section (`sim.stats.sweep`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

from sim.quote import shown

from .bots.registry import get_bot_info, parse_bot_spec
from .spec import Configuration, JobSpec

MAX_CONFIGURATIONS = 100  # a 10 x 10 grid; the service takes no more per job
MAX_SWEPT = 2
_RANGE = re.compile(r"^\s*(-?[0-9.eE+-]+)\s*\.\.\s*(-?[0-9.eE+-]+)\s*/\s*([0-9.eE+-]+)\s*$")


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number; got {shown(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite; got {shown(text)}")
    return value


def expand_range(text: str, where: str) -> list[str]:
    """The values of ``START..STOP/STEP`` as spec strings (``where`` names it in errors)."""
    m = _RANGE.match(text)
    if not m:
        raise ValueError(f"{where}: a range is START..STOP/STEP, e.g. 0..3/0.5; got {shown(text)}")
    start = _number(m.group(1), f"{where} START")
    stop = _number(m.group(2), f"{where} STOP")
    step = _number(m.group(3), f"{where} STEP")
    if step <= 0:
        raise ValueError(f"{where}: STEP must be positive; got {shown(m.group(3))}")
    if stop < start:
        raise ValueError(f"{where}: STOP must be at least START; got {shown(text)}")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_CONFIGURATIONS:
        raise ValueError(
            f"{where}: {shown(text)} has {count} values; a sweep holds at most {MAX_CONFIGURATIONS}"
        )
    # Rounded to 12 significant digits so that 0.1 steps print as 0.3, not 0.30000000000000004.
    return [_text(float(f"{start + i * step:.12g}")) for i in range(count)]


def _text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def parse_swept_bot(text: str) -> tuple[str, list[tuple[str, list[str]]], list[str]]:
    """``(name, swept, fixed)``: the bot name, ``[(param, [value text, ...]), ...]`` for swept
    parameters, and the fixed ``key=value`` items."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    info = get_bot_info(name)  # an unknown bot: ValueError naming the known ones
    swept: list[tuple[str, list[str]]] = []
    fixed: list[str] = []
    if sep:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key:
                got = shown(item.strip())
                raise ValueError(f"bot {shown(name)}: expected key=value; got {got}")
            info.param(key)  # unknown parameter: ValueError naming the bot's parameters
            where = f"bot {shown(name)} parameter {shown(key)}"
            if ".." in value:
                swept.append((key, expand_range(value, where)))
            elif "|" in value:
                values = [v.strip() for v in value.split("|")]
                if any(not v for v in values):
                    raise ValueError(f"{where}: a list is v1|v2|...; got {shown(value)}")
                swept.append((key, values))
            else:
                fixed.append(f"{key}={value.strip()}")
    return name, swept, fixed


def sweep_spec(
    bots: Sequence[str],
    games: int,
    seed: int = 0,
    players: int | None = None,
    wall: str = "coloured",
    seating: str = "rotate",
    baseline: str | None = None,
    max_rounds: int | None = None,
) -> JobSpec:
    """The job of a sweep: `bots` one spec per seat (one bot fills the seats left when
    ``players`` is larger), the first with one or two swept parameters.

    `baseline` names the baseline value as a spec (``heuristic:floor=1``) or its parameter
    values (``floor=1``); default the first configuration.
    """
    bots = list(bots)
    if not bots:
        raise ValueError("bots must name at least the swept bot")
    players = players or max(2, len(bots))
    if len(bots) == 1:
        raise ValueError(
            "bots must name the swept bot and its opponents, e.g. heuristic:floor=0..3/1,greedy"
        )
    if len(bots) < players:
        bots = bots + [bots[-1]] * (players - len(bots))
    if len(bots) != players:
        raise ValueError(f"bots must name at most {players} bots (one per seat); got {len(bots)}")
    name, swept, fixed = parse_swept_bot(bots[0])
    for i, other in enumerate(bots[1:], start=1):
        if ".." in other or "|" in other:
            raise ValueError(f"bots[{i}]: only the first bot (the focal player) may be swept")
    if not swept:
        raise ValueError(
            f"bots[0] ({shown(bots[0])}) sweeps no parameter: give one as START..STOP/STEP or v1|v2"
        )
    if len(swept) > MAX_SWEPT:
        raise ValueError(f"bots[0] sweeps {len(swept)} parameters; at most {MAX_SWEPT} (a grid)")
    names = [key for key, _ in swept]
    combos = list(itertools.product(*(values for _, values in swept)))
    if len(combos) > MAX_CONFIGURATIONS:
        raise ValueError(
            f"the sweep has {len(combos)} configurations; at most {MAX_CONFIGURATIONS} per job"
        )
    configs = []
    labels = []
    opponents = {parse_bot_spec(b).label for b in bots[1:]}
    for combo in combos:
        items = [f"{k}={v}" for k, v in zip(names, combo, strict=True)] + fixed
        spec = parse_bot_spec(f"{name}:{','.join(items)}")
        if spec.label in opponents:
            raise ValueError(
                f"sweep value {shown(spec.label)} is the same bot as an opponent; its statistics "
                "would "
                "merge with the opponent's: give the opponent other parameters"
            )
        labels.append(spec.label)
        configs.append(Configuration(players, (spec.label, *bots[1:]), seating=seating, wall=wall))
    if len(set(labels)) != len(labels):
        raise ValueError(f"sweep values give the same bot twice: {labels}")
    base = 0
    if baseline is not None:
        base = _baseline_index(baseline, name, fixed, labels)
    extra: dict[str, Any] = {} if max_rounds is None else {"max_rounds": max_rounds}
    return JobSpec(
        tuple(configs), games=games, seed=seed, baseline=base, sweep=tuple(names), **extra
    )


def _baseline_index(text: str, name: str, fixed: list[str], labels: list[str]) -> int:
    """The configuration of the baseline value: a full spec, or ``key=value,...`` of the swept
    parameters (the fixed ones are added)."""
    items = dict(item.split("=", 1) for item in fixed)
    body = text.partition(":")[2] if ":" in text else text
    for item in filter(None, (x.strip() for x in body.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"baseline: expected key=value; got {shown(item)}")
        items[key.strip()] = value.strip()
    try:
        body = ",".join(f"{k}={v}" for k, v in items.items())
        label = parse_bot_spec(f"{name}:{body}" if body else name).label
    except ValueError as exc:
        raise ValueError(f"baseline: {exc}") from None
    if label not in labels:
        raise ValueError(
            f"baseline must be one of the sweep's values ({', '.join(labels)}); got {shown(text)}"
        )
    return labels.index(label)
