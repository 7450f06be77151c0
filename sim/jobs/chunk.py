"""Chunks: how a job's games are cut into chunks, and playing and counting one chunk.

A job's chunks are numbered configuration by configuration: with ``per = ceil(games /
chunk_games)``, chunk ``c`` is chunk ``k = c % per`` of configuration ``c // per`` and covers games
``[k * chunk_games, min((k + 1) * chunk_games, games))``. The Celery workers (`workers.tasks`) and
the local runner (`sim.jobs.local`) both cut and play chunks through this module, so game ``g`` is
played by the same call whichever of them runs it.

A *joint* job (a baseline or a stopping rule: `JobSpec.joint_chunks`) has one chunk per game
range instead, played in every configuration at once (`sim.jobs.sequential`): chunk ``c`` covers
games ``[c * chunk_games, ...)`` of all of them. Chunk sizes are rounded up to whole mirrored groups
and whole check-point intervals (`aligned`), so that no chunk splits either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..stats import Counters, count
from ..stats.cpu import cpu_counters
from .play import DEFAULT_BATCH
from .spec import JobSpec

PlayGames = Callable[..., Any]  # the signature of `sim.jobs.play.play_games`

MIN_CHUNK_GAMES = 200  # however slow the bots: below this a chunk costs more in overhead than play
# A job with a stopping rule may stop after a few hundred games: what its chunks play past the
# stop is wasted, and a stop inside a chunk replays that chunk up to the check point, so its
# chunks are kept to a few thousand games (service and local runs alike).
STOP_CHUNK_GAMES = 4096
# A joint chunk (paired configurations: a sweep) counts every configuration, at a fixed cost each
# (~8 ms for two players) and merges its ~700 counters (~5 ms); below this many games per
# configuration the two pass 5 % of play (bench/results/sweep_service.json).
MIN_JOINT_CHUNK_GAMES = 5000

# Local runs (`sim.jobs.local`): games per chunk by default, several times the engine's batch width
# so that filling and draining the batch costs little (chunks of a few thousand games run at half
# speed), yet small enough that progress moves every few seconds and the work spreads over the pool.
MIN_CHUNK = 2 * DEFAULT_BATCH
MAX_CHUNK = 8 * DEFAULT_BATCH


def aligned(spec: JobSpec, chunk_games: int) -> int:
    """`chunk_games` rounded up to whole check-point intervals (a stopping rule) or whole mirrored
    groups (`JobSpec.group_size`); unchanged for other jobs."""
    unit = spec.stop.check_every if spec.stop is not None else spec.group_size
    return max(unit, -(-chunk_games // unit) * unit)


def per_configuration(spec: JobSpec, chunk_games: int) -> int:
    """Chunks per configuration: ``ceil(games / chunk_games)``."""
    return -(-spec.games // chunk_games)


def chunks_total(spec: JobSpec, chunk_games: int) -> int:
    """Number of chunks of a job: ``ceil(games / chunk_games)`` per configuration (once for a
    joint job)."""
    per = per_configuration(spec, chunk_games)
    return per if spec.joint_chunks else per * len(spec.configurations)


def chunk_games_range(spec: JobSpec, chunk_games: int, chunk: int) -> tuple[int, int, int]:
    """``(configuration index, start, stop)`` of chunk number `chunk` (module docstring); the
    configuration is None for a joint job's chunk (every configuration)."""
    per = per_configuration(spec, chunk_games)
    if spec.joint_chunks:
        if not 0 <= chunk < per:
            raise ValueError(f"chunk {chunk} out of range (the job has {per})")
        return None, chunk * chunk_games, min((chunk + 1) * chunk_games, spec.games)
    config, k = divmod(chunk, per)
    if not 0 <= config < len(spec.configurations):
        raise ValueError(
            f"chunk {chunk} out of range (the job has {per * len(spec.configurations)})"
        )
    start = k * chunk_games
    return config, start, min(start + chunk_games, spec.games)


def chunk_ranges(spec: JobSpec, chunk_games: int) -> list[tuple[int, int, int]]:
    """`chunk_games_range` of every chunk, in chunk order."""
    return [chunk_games_range(spec, chunk_games, c) for c in range(chunks_total(spec, chunk_games))]


def chunk_games_for(spec: JobSpec, chunk_games: int) -> int:
    """Games per chunk of a service job: `chunk_games` greedy-equivalent games
    (AZULSIM_CHUNK_GAMES), scaled down by the job's bot cost (`JobSpec.cost`) so that a chunk of
    slow bots still takes seconds, shared among the configurations of a joint job (at least
    `MIN_JOINT_CHUNK_GAMES` each), at most the configuration's games and, with a stopping rule,
    at most `STOP_CHUNK_GAMES` (then `aligned`)."""
    scaled = max(MIN_CHUNK_GAMES, int(chunk_games / max(1.0, spec.cost)))
    if spec.joint_chunks and spec.stop is None:
        # A joint chunk plays every configuration: `chunk_games` is shared among them, but each
        # gets enough games that counting it (a fixed cost per configuration) stays small
        # beside playing (bench/sweep_service.py: 100 configurations, a 10 x 10 sweep).
        scaled = max(MIN_JOINT_CHUNK_GAMES, scaled // len(spec.configurations))
    if spec.stop is not None:
        scaled = min(scaled, STOP_CHUNK_GAMES)
    return aligned(spec, max(1, min(spec.games, chunk_games, scaled)))


def default_chunk_size(games: int, workers: int, cost: float = 1.0) -> int:
    """Local runs: about four chunks per worker per configuration, within [`MIN_CHUNK`,
    `MAX_CHUNK`] greedy-equivalent games: bots `cost` times slower than greedy (`JobSpec.cost`)
    get chunks that many times smaller (at least `MIN_CHUNK_GAMES`), so that a run of a few
    thousand search games still spreads over the workers."""
    scale = max(1.0, cost)
    low = max(MIN_CHUNK_GAMES, int(MIN_CHUNK / scale))
    high = max(low, int(MAX_CHUNK / scale))
    even = math.ceil(games / (4 * max(1, workers)))
    return max(1, min(games, max(low, min(high, even))))


class ChunkResult(NamedTuple):
    """One chunk played and counted: its games, its `sim.stats` counters and where time went
    (seconds: ``play`` in the play function, ``count`` in `sim.stats.count`). A joint chunk also
    has ``joint``: `sim.jobs.sequential.count_chunk`'s result (its range and the stopping rule's
    counters per check-point segment)."""

    games: int
    counters: Counters
    timings: dict[str, float]
    joint: dict[str, Any] | None = None


def play_chunk(
    spec: JobSpec, chunk_games: int, chunk: int, play: PlayGames | None = None
) -> ChunkResult:
    """Play and count chunk `chunk` of `spec` cut into chunks of `chunk_games` games.

    `play` stands in for `sim.jobs.play.play_games` (same signature; tests use a fake engine).
    """
    if play is None:
        from .play import play_games as play
    config_index, start, stop = chunk_games_range(spec, chunk_games, chunk)
    if config_index is None:
        from .sequential import count_chunk

        t0 = time.perf_counter()
        records = [
            play(c, spec.seed, start, stop, spec.max_rounds_of(c)) for c in spec.configurations
        ]
        t1 = time.perf_counter()
        if any(len(r) != stop - start for r in records):
            raise RuntimeError(
                f"play_games returned the wrong number of records for {stop - start}"
            )
        joint = count_chunk(spec, records, start, stop)
        games = (stop - start) * len(spec.configurations)
        timings = {"play": t1 - t0, "count": time.perf_counter() - t1}
        return ChunkResult(games, joint["counters"], timings, joint)
    config = spec.configurations[config_index]
    t0 = time.perf_counter()
    records = play(config, spec.seed, start, stop, spec.max_rounds_of(config))
    t1 = time.perf_counter()
    if len(records) != stop - start:
        raise RuntimeError(f"play_games returned {len(records)} records for {stop - start} games")
    counters = count(records, config_index, config)
    counters.update(cpu_counters(getattr(records, "cpu", {}), config_index))
    return ChunkResult(stop - start, counters, {"play": t1 - t0, "count": time.perf_counter() - t1})
