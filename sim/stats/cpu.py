"""CPU per move of the bots that account theirs (`sim.jobs.play.BotClock`), as integer counters.

Keys ``cpu|c{k}|bot=<label>|ns`` (CPU nanoseconds spent choosing, in this process and, for an
external program, in its own) and ``cpu|c{k}|bot=<label>|moves`` (picks chosen) merge by addition
like every other counter, so a job's totals are exact sums over its chunks (a retried chunk counts
once, as its games do). They are *measurements*: unlike every other counter they differ from run
to run, so `sim.stats.derive` leaves them out of the statistics document (which stays the same
for a spec and seed) and `cpu_section` reads them into the ``timing`` part beside it.
"""

from __future__ import annotations

from typing import Any

from .counters import Counters

PREFIX = "cpu|"


def cpu_counters(accounted: dict[str, tuple[int, int]], config_index: int) -> Counters:
    """The counters of one play call's ``records.cpu`` (label -> (ns, moves))."""
    out: Counters = {}
    for label, (ns, moves) in accounted.items():
        for name, value in (("ns", ns), ("moves", moves)):
            if value:
                out[f"{PREFIX}c{config_index}|bot={label}|{name}"] = int(value)
    return out


def strip(counters: Counters) -> Counters:
    """`counters` without the CPU measurements (what the determinism of a job is about)."""
    return {k: v for k, v in counters.items() if not k.startswith(PREFIX)}


def cpu_section(counters: Counters) -> list[dict[str, Any]]:
    """One row per (configuration, bot) that accounts its CPU: moves, CPU seconds, µs per move."""
    totals: dict[tuple[int, str], dict[str, int]] = {}
    # The few CPU keys picked out in one comprehension (a 100-configuration job holds some
    # 70,000 counters).
    for key in [k for k in counters if k.startswith(PREFIX)]:
        config, bot, name = key[len(PREFIX) :].split("|")
        totals.setdefault((int(config[1:]), bot[len("bot=") :]), {})[name] = int(counters[key])
    rows = []
    for (config, label), t in sorted(totals.items()):
        ns, moves = t.get("ns", 0), t.get("moves", 0)
        rows.append(
            {
                "configuration": config,
                "bot": label,
                "moves": moves,
                "cpu_seconds": ns / 1e9,
                "us_per_move": ns / moves / 1000 if moves else None,
            }
        )
    return rows
