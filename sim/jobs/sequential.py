"""Joint chunks and the contiguous prefix: how paired and sequential jobs are played and stopped.

A job with a baseline or a stopping rule (`JobSpec.joint_chunks`) is cut into chunks of game
ranges ``[start, stop)`` played in *every* configuration at once, so that the paired differences
of game g can be counted. A chunk returns its full counters, and the few counters its stopping
rule reads split by **segment**: the games between two consecutive check points. Chunk
boundaries lie on check points (and on mirrored groups), so every segment comes whole from one
chunk; counting the rule's counters per segment is cheap, the full counters once per chunk.

`Prefix` takes chunks in any order and reads them in game order only: the rule is read at each
check point on the prefix that segment completes. The first check point that decides stops the
job; later chunks are dropped, never merged, and a stop inside a chunk has that chunk's games up
to the check point counted again alone (`Prefix.trim`). The statistics are then exactly those of
games ``[0, stop)``, and which game that is depends on the spec alone - not on the chunk size,
the worker count, the order chunks finish in or how often one was retried.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..rules.records import GameRecords
from ..stats import Counters, count, merge
from ..stats.balance import count_balance_paired
from ..stats.focal import count_pairs
from ..stats.groups import count_groups, count_paired
from .spec import JobSpec
from .stopping import evaluate, llr_bounds

Segment = tuple[int, Counters]


def check_points(spec: JobSpec) -> list[int]:
    """Prefix lengths (games of each configuration) at which a joint job is read: the stopping
    rule's check points, or just the end."""
    return spec.stop.check_points(spec.games) if spec.stop else [spec.games]


def _segments_of(spec: JobSpec, start: int, stop: int) -> list[tuple[int, int, int]]:
    """``(segment index, a, b)`` of the segments that tile ``[start, stop)``."""
    points = check_points(spec)
    out = []
    lo = 0
    for j, hi in enumerate(points):
        if hi > start and lo < stop:
            if lo < start or hi > stop:
                raise ValueError(
                    f"chunk [{start}, {stop}) does not hold whole check-point segments "
                    f"(segment {j} is [{lo}, {hi}))"
                )
            out.append((j, lo, hi))
        lo = hi
    return out


def rule_counters(
    spec: JobSpec, records: list[GameRecords], start: int, stop: int
) -> list[Segment]:
    """The counters the stopping rule reads, per segment of ``[start, stop)``: the group (and
    pentanomial) counters of its mirrored configuration, or the paired counters of its paired
    one. Counted per segment by slicing records that were played once for the whole chunk."""
    rule = spec.stop
    k = rule.configuration
    out = []
    for j, a, b in _segments_of(spec, start, stop):
        window = slice(a - start, b - start)
        if rule.paired:
            part = count_paired(records[spec.baseline].take(window), records[k].take(window), k)
        else:
            part = count_groups(records[k].take(window), k)
        out.append((j, part))
    return out


def count_chunk(spec: JobSpec, records: list[GameRecords], start: int, stop: int) -> dict[str, Any]:
    """A joint chunk's result from the records of games ``[start, stop)`` of each configuration
    (``records[k]``, sorted by game): ``{"start", "stop", "counters", "segments"}`` - the full
    counters of the chunk, and the rule's counters per check-point segment (none without a
    rule). JSON-ready (segments as ``[j, counters]`` lists)."""
    counters: Counters = {}
    for k, config in enumerate(spec.configurations):
        counters = merge(counters, count(records[k], k, config))
    for k, base in spec.pairings():
        counters = merge(counters, count_paired(records[base], records[k], k))
    for k, base in spec.pairs:  # rule sets paired: the balance measures' differences too
        counters = merge(counters, count_balance_paired(records[base], records[k], k))
    if spec.sweep:  # every pair of values, for the tests against the best (sim.stats.focal)
        counters = merge(counters, count_pairs(records, spec.sweep_groups()))
    segments = rule_counters(spec, records, start, stop) if spec.stop else []
    return {
        "start": start,
        "stop": stop,
        "counters": counters,
        "segments": [[j, part] for j, part in segments],
    }


def play_joint(
    spec: JobSpec, start: int, stop: int, play: Callable[..., GameRecords] | None = None
) -> dict[str, Any]:
    """Play games ``[start, stop)`` of every configuration and count them (`count_chunk`)."""
    if play is None:
        from .play import play_games as play
    records = []
    for config in spec.configurations:
        rec = play(config, spec.seed, start, stop, spec.max_rounds_of(config))
        if len(rec) != stop - start:
            raise RuntimeError(f"play_games returned {len(rec)} records for {stop - start} games")
        records.append(rec)
    return count_chunk(spec, records, start, stop)


class Prefix:
    """The contiguous prefix of a joint job: chunks taken in game order, the rule read at each
    check point on the rule's per-segment counters, the stop decided once.

    A chunk's full counters are merged when the whole chunk lies in the prefix. When the rule
    stops at a check point strictly inside a chunk, that chunk's games up to the check point must
    be counted again on their own: `trim` names them, and `finish` takes their counters (the
    caller plays them again - game g plays the same every time).
    """

    def __init__(self, spec: JobSpec):
        self.spec = spec
        self.points = check_points(spec)
        self.counters: Counters = {}  # full counters of the chunks merged
        self.rule: Counters = {}  # the rule's counters up to the last check point read
        self.end = 0  # games of each configuration in the merged chunks
        self.pending: dict[int, dict[str, Any]] = {}
        self.history: list[dict[str, Any]] = []  # the rule's values at each check point
        self.reason: str | None = None
        self.stopped_at: int | None = None  # games of each configuration at the stop
        self.trim: tuple[int, int] | None = None  # games to count again before `finish`

    @property
    def games(self) -> int:
        """Games of each configuration whose counters are in `counters`."""
        return self.end

    @property
    def done(self) -> bool:
        return self.trim is None and (self.reason is not None or self.end >= self.spec.games)

    def add(self, chunk: dict[str, Any]) -> bool:
        """Take one chunk result (`count_chunk`; any order; a repeat is ignored); True once the
        job has stopped (or `trim` asks for a recount)."""
        if self.reason is not None or chunk["start"] < self.end:
            return self.done or self.trim is not None
        self.pending.setdefault(chunk["start"], chunk)
        while self.reason is None and self.end in self.pending:
            self._take(self.pending.pop(self.end))
        if self.reason is not None:
            self.pending.clear()
        return self.done or self.trim is not None

    def _take(self, chunk: dict[str, Any]) -> None:
        rule = self.spec.stop
        for j, part in chunk["segments"]:
            self.rule = merge(self.rule, part)
            point = evaluate(rule, self.rule, self.spec, self.points[j])
            self.history.append(point)
            if point["reason"] is not None:
                self.reason = point["reason"]
                self.stopped_at = self.points[j]
                break
        if self.reason is not None and self.stopped_at < chunk["stop"]:
            self.trim = (chunk["start"], self.stopped_at)
            return
        self.counters = merge(self.counters, chunk["counters"])
        self.end = chunk["stop"]

    def finish(self, chunk: dict[str, Any]) -> None:
        """Take the recount of the games `trim` named (a `count_chunk` result of that range)."""
        if self.trim is None or (chunk["start"], chunk["stop"]) != self.trim:
            raise ValueError(f"expected the recount of games {self.trim}")
        self.counters = merge(self.counters, chunk["counters"])
        self.end = chunk["stop"]
        self.trim = None

    def state(self) -> dict[str, Any]:
        """What a job store keeps between chunks (JSON-ready): the rule's counters, the check
        points read, the stop and the games merged. Not the full counters, nor pending chunks."""
        return {
            "rule": self.rule,
            "history": self.history,
            "reason": self.reason,
            "stopped_at": self.stopped_at,
            "end": self.end,
        }

    @classmethod
    def restore(cls, spec: JobSpec, state: dict[str, Any] | None) -> Prefix:
        """A `Prefix` at a stored `state` (None: at the start)."""
        prefix = cls(spec)
        if state:
            prefix.rule = dict(state["rule"])
            prefix.history = list(state["history"])
            prefix.reason = state["reason"]
            prefix.stopped_at = state["stopped_at"]
            prefix.end = state["end"]
        return prefix

    def summary(self) -> dict[str, Any] | None:
        """The ``stopping`` section of the statistics (None without a rule)."""
        rule = self.spec.stop
        if rule is None:
            return None
        last = self.history[-1] if self.history else None
        return {
            "rule": rule.to_dict(),
            "reason": self.reason,
            "games": self.end,  # per configuration
            "llr": last["llr"] if last else None,
            # The bounds the last check point was read against (nominal ones moved in for the
            # check-point interval, `sim.jobs.stopping.overshoot`); the nominal ones beside them.
            "llr_bounds": last["llr_bounds"] if last else None,
            "llr_bounds_nominal": llr_bounds(rule),
            "estimate": last["estimate"] if last else None,
            "ci95": last["ci95"] if last else None,
            "check_points": [
                {k: p[k] for k in ("games", "llr", "llr_bounds", "estimate", "ci95")}
                for p in self.history
            ],
        }
