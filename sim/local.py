"""Run a job in this process (or a local process pool): no Redis, no Celery (DESIGN.md §7).

`run_local` splits each configuration's games ``[0, games)`` into chunks of consecutive games
(`sim.chunk`, numbered as the service numbers them), plays and counts each chunk with
`sim.chunk.play_chunk` and merges the counters. Game
``g`` plays the same in any chunk and `merge` is exact, associative and commutative, so the result
is identical whatever the worker count and chunk size.

With ``workers > 1`` the chunks run in a ``multiprocessing`` pool; the play function reaches the
workers through the pool initialiser (inherited, not pickled, under the default ``fork`` start
method), and the counters come back as plain dicts. Progress is reported in the parent, after each
chunk, as the number of games done so far.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .chunk import PlayGames, chunks_total, default_chunk_size, play_chunk
from .spec import JobSpec
from .stats import Counters, derive, merge

Progress = Callable[[int], None]


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


_worker_state: dict[str, Any] = {}


def _init_worker(spec: JobSpec, chunk_size: int, play: PlayGames | None) -> None:
    _worker_state.update(spec=spec, chunk_size=chunk_size, play=play)


def _play_chunk(chunk: int) -> tuple[int, Counters]:
    s = _worker_state
    games, counters, _ = play_chunk(s["spec"], s["chunk_size"], chunk, s["play"])
    return games, counters


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
    tasks = range(chunks_total(spec, chunk_size))
    workers = min(workers, len(tasks))
    counters: Counters = {}
    done = 0
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if workers == 1:
            _init_worker(spec, chunk_size, play)
            stack.callback(_worker_state.clear)
            parts = map(_play_chunk, tasks)
        else:
            pool = stack.enter_context(
                multiprocessing.Pool(
                    workers, initializer=_init_worker, initargs=(spec, chunk_size, play)
                )
            )
            parts = pool.imap_unordered(_play_chunk, tasks)
        for n, part in parts:
            counters = merge(counters, part)
            done += n
            if progress:
                progress(done)
    seconds = time.perf_counter() - began
    return LocalResult(spec, counters, seconds, workers, chunk_size, len(tasks))


def simulate(spec: JobSpec, **kwargs: Any) -> dict[str, Any]:
    """`run_local` then the statistics document (with ``timing``); kwargs as for `run_local`."""
    return run_local(spec, **kwargs).statistics()
