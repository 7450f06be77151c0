"""Joint chunks and the contiguous prefix: how paired and sequential jobs are played and stopped.

A job with a baseline or a stopping rule (`JobSpec.joint_chunks`) is cut into chunks of game
ranges ``[start, stop)`` played in *every* configuration at once, so that the paired differences
of game g can be counted. A chunk returns its counters split by **segment**: the games between
two consecutive check points of the stopping rule (one segment per chunk without a rule). Chunk
boundaries lie on check points (and on mirrored groups), so every segment comes whole from one
chunk.

`Prefix` takes segments in any order and merges them in game order only: segment j is merged,
and the rule read on the prefix it completes, once segments 0..j-1 are in. The first check point
that decides stops the job; later segments are dropped, never merged. The statistics are then
exactly those of games ``[0, stop)``, and which game that is depends on the spec alone - not on
the chunk size, the worker count, the order chunks finish in or how often one was retried.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .records import GameRecords
from .spec import JobSpec
from .stats import Counters, count, merge
from .stats.groups import count_paired
from .stopping import evaluate, llr_bounds

Segment = tuple[int, Counters]


def check_points(spec: JobSpec) -> list[int]:
    """Prefix lengths (games of each configuration) at which a joint job is read: the stopping
    rule's check points, or just the end."""
    return spec.stop.check_points(spec.games) if spec.stop else [spec.games]


def align(spec: JobSpec, chunk_size: int) -> int:
    """`chunk_size` rounded up to whole check-point intervals (a stopping rule) or to whole
    mirrored groups, so that no chunk splits a segment or a group."""
    unit = spec.stop.check_every if spec.stop else spec.group_size
    return max(unit, math.ceil(chunk_size / unit) * unit)


def joint_ranges(spec: JobSpec, chunk_size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of every joint chunk, in game order (chunk_size already aligned)."""
    return [(a, min(a + chunk_size, spec.games)) for a in range(0, spec.games, chunk_size)]


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


def count_joint(spec: JobSpec, records: list[GameRecords], start: int, stop: int) -> list[Segment]:
    """Counters per segment of a joint chunk from the records of games ``[start, stop)`` of each
    configuration (``records[k]``, sorted by game)."""
    out = []
    paired = spec.paired_configurations()
    for j, a, b in _segments_of(spec, start, stop):
        part: Counters = {}
        for k, config in enumerate(spec.configurations):
            rec = records[k].take(slice(a - start, b - start))
            part = merge(part, count(rec, k, config))
            if k in paired:
                base = records[spec.baseline].take(slice(a - start, b - start))
                part = merge(part, count_paired(base, rec, k))
        out.append((j, part))
    return out


def play_joint(
    spec: JobSpec, start: int, stop: int, play: Callable[..., GameRecords] | None = None
) -> list[Segment]:
    """Play games ``[start, stop)`` of every configuration and count them by segment."""
    if play is None:
        from .play import play_games as play
    records = []
    for config in spec.configurations:
        rec = play(config, spec.seed, start, stop, spec.max_rounds)
        if len(rec) != stop - start:
            raise RuntimeError(f"play_games returned {len(rec)} records for {stop - start} games")
        records.append(rec)
    return count_joint(spec, records, start, stop)


class Prefix:
    """The contiguous prefix of a joint job: segments merged in game order, the rule read at each
    check point, the stop decided once."""

    def __init__(self, spec: JobSpec):
        self.spec = spec
        self.points = check_points(spec)
        self.counters: Counters = {}
        self.next = 0  # index of the next segment to merge
        self.pending: dict[int, Counters] = {}
        self.history: list[dict[str, Any]] = []  # the rule's values at each check point
        self.reason: str | None = None

    @property
    def games(self) -> int:
        """Games of each configuration in the prefix."""
        return self.points[self.next - 1] if self.next else 0

    @property
    def done(self) -> bool:
        return self.reason is not None or self.next == len(self.points)

    def add(self, segment: int, counters: Counters) -> bool:
        """Take one segment (any order; a repeat is ignored); True once the job has stopped."""
        if self.done or segment < self.next:
            return self.done
        self.pending.setdefault(segment, counters)
        while not self.done and self.next in self.pending:
            self.counters = merge(self.counters, self.pending.pop(self.next))
            self.next += 1
            if self.spec.stop is not None:
                point = evaluate(self.spec.stop, self.counters, self.spec, self.games)
                self.history.append(point)
                self.reason = point["reason"]
        if self.done:
            self.pending.clear()
        return self.done

    def summary(self) -> dict[str, Any] | None:
        """The ``stopping`` section of the statistics (None without a rule)."""
        rule = self.spec.stop
        if rule is None:
            return None
        last = self.history[-1] if self.history else None
        return {
            "rule": rule.to_dict(),
            "reason": self.reason,
            "games": self.games,  # per configuration
            "llr": last["llr"] if last else None,
            "llr_bounds": llr_bounds(rule),
            "estimate": last["estimate"] if last else None,
            "ci95": last["ci95"] if last else None,
            "check_points": [
                {k: p[k] for k in ("games", "llr", "estimate", "ci95")} for p in self.history
            ],
        }
