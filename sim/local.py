"""Run a job in this process (or a local process pool): no Redis, no Celery (DESIGN.md §7).

`run_local` splits each configuration's games ``[0, games)`` into chunks of consecutive games, plays
each chunk with `sim.play.play_games`, counts it (`sim.stats.count`) and merges the counters. Game
``g`` plays the same in any chunk and `merge` is exact, associative and commutative, so the result
is identical whatever the worker count and chunk size.

With ``workers > 1`` the chunks run in a ``multiprocessing`` pool; the play function reaches the
workers through the pool initialiser (inherited, not pickled, under the default ``fork`` start
method), and the counters come back as plain dicts. Progress is reported in the parent, after each
chunk, as the number of games done so far.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .alloc import tune_allocator
from .play import DEFAULT_BATCH
from .spec import JobSpec
from .stats import Counters, count, derive, merge

PlayGames = Callable[..., Any]
Progress = Callable[[int], None]

# Games per chunk by default: several times the engine's batch width, so that filling and draining
# the batch costs little (chunks of a few thousand games run at half speed), yet small enough that
# progress moves every few seconds and the work spreads over the pool.
MIN_CHUNK = 2 * DEFAULT_BATCH
MAX_CHUNK = 8 * DEFAULT_BATCH


@dataclass
class LocalResult:
    """Counters of a local run and how long it took."""

    spec: JobSpec
    counters: Counters
    seconds: float
    workers: int
    chunk_size: int
    chunks: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def statistics(self) -> dict[str, Any]:
        """The statistics document (`sim.stats.derive`) with a separate ``timing`` section."""
        doc = derive(self.counters, self.spec)
        games = doc["games_done"]
        doc["timing"] = {
            "seconds": self.seconds,
            "games_per_second": games / self.seconds if self.seconds > 0 else None,
            "workers": self.workers,
            "chunk_size": self.chunk_size,
            "chunks": self.chunks,
        }
        return doc


def default_chunk_size(games: int, workers: int) -> int:
    """About four chunks per worker per configuration, within [`MIN_CHUNK`, `MAX_CHUNK`] games."""
    even = math.ceil(games / (4 * max(1, workers)))
    return max(1, min(games, max(MIN_CHUNK, min(MAX_CHUNK, even))))


def chunks(spec: JobSpec, chunk_size: int) -> Iterator[tuple[int, int, int]]:
    """``(configuration index, start, stop)`` of every chunk, in order."""
    for k in range(len(spec.configurations)):
        for start in range(0, spec.games, chunk_size):
            yield k, start, min(start + chunk_size, spec.games)


_worker_state: dict[str, Any] = {}


def _init_worker(spec: JobSpec, play: PlayGames | None) -> None:
    tune_allocator()  # inherited through fork already; set again for other start methods
    _worker_state["spec"] = spec
    _worker_state["play"] = play


def _play_chunk(task: tuple[int, int, int]) -> tuple[int, Counters]:
    k, start, stop = task
    spec: JobSpec = _worker_state["spec"]
    play = _worker_state["play"]
    if play is None:
        from .play import play_games as play
    config = spec.configurations[k]
    records = play(config, spec.seed, start, stop, spec.max_rounds)
    if len(records) != stop - start:
        raise RuntimeError(f"play_games returned {len(records)} records for {stop - start} games")
    return stop - start, count(records, k, config)


def run_local(
    spec: JobSpec,
    workers: int | None = None,
    chunk_size: int | None = None,
    progress: Progress | None = None,
    play: PlayGames | None = None,
) -> LocalResult:
    """Play every game of `spec` here and return the merged counters.

    Parameters
    ----------
    spec : the job
    workers : processes; default ``os.cpu_count()``; 1 plays in this process with no pool
    chunk_size : games per chunk; default `default_chunk_size`
    progress : called with the number of games done (all configurations) after each chunk
    play : stand-in for `sim.play.play_games` (same signature); default the real one
    """
    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    if chunk_size is None:
        chunk_size = default_chunk_size(spec.games, workers)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1; got {chunk_size}")
    tune_allocator()  # this process plays (workers == 1) or forks the pool that does
    tasks = list(chunks(spec, chunk_size))
    workers = min(workers, len(tasks))
    counters: Counters = {}
    done = 0
    began = time.perf_counter()
    if workers == 1:
        _init_worker(spec, play)
        try:
            for n, part in map(_play_chunk, tasks):
                counters = merge(counters, part)
                done += n
                if progress:
                    progress(done)
        finally:
            _worker_state.clear()
    else:
        with multiprocessing.Pool(workers, initializer=_init_worker, initargs=(spec, play)) as pool:
            for n, part in pool.imap_unordered(_play_chunk, tasks):
                counters = merge(counters, part)
                done += n
                if progress:
                    progress(done)
    seconds = time.perf_counter() - began
    return LocalResult(spec, counters, seconds, workers, chunk_size, len(tasks))


def simulate(spec: JobSpec, **kwargs: Any) -> dict[str, Any]:
    """`run_local` then the statistics document (with ``timing``); kwargs as for `run_local`."""
    return run_local(spec, **kwargs).statistics()
