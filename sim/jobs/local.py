"""Run a job in this process (or a local process pool): no Redis, no Celery (README.md).

`run_local` splits each configuration's games ``[0, games)`` into chunks of consecutive games
(`sim.jobs.chunk`, numbered as the service numbers them), plays and counts each chunk with
`sim.jobs.chunk.play_chunk` and merges the counters. Game
``g`` plays the same in any chunk and `merge` is exact, associative and commutative, so the result
is identical whatever the worker count and chunk size.

With ``workers > 1`` the chunks run in forked processes (`sim.jobs.pool.ChunkPool`); the play
function reaches them through the pool's initialiser (inherited, not pickled), and the counters
come back as plain dicts. Progress is reported in the parent, after each chunk, as the number of
games done so far.

Memory does not grow with the job: chunks are handed out as earlier ones finish, at most
`IN_FLIGHT_PER_WORKER` per pool process at a time, so ``--games 10**12`` holds what ``--games
10**6`` holds. SIGINT and SIGTERM stop a run cleanly: in the main thread both raise `Interrupted`
(a ``KeyboardInterrupt``) while `run_local` runs, the pool is stopped and joined on the way out
(no process is left behind), and the pool processes ignore SIGINT and die quietly on the SIGTERM
the pool sends them (no traceback from them). A pool process starts with both signals blocked, and
unblocks them once it has its own handlers: a SIGTERM that comes sooner waits, and then ends it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sim.quote import shown

from ..stats import Counters, derive, merge
from ..stats.cpu import cpu_section
from .alloc import tune_allocator
from .chunk import (
    STOP_CHUNK_GAMES,
    PlayGames,
    aligned,
    chunks_total,
    default_chunk_size,
    play_chunk,
)
from .pool import ChunkPool
from .sequential import Prefix, play_joint
from .spec import JobSpec

Progress = Callable[[int], None]

# Chunks submitted ahead per pool process: enough that no process waits for the parent's next
# submission, few enough that memory stays flat whatever the job's size.
IN_FLIGHT_PER_WORKER = 2


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) arrived while `run_local` ran; the pool has been stopped."""


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
    # `sim.jobs.sequential.Prefix.summary` of a stopping rule
    stopping: dict[str, Any] | None = None

    def statistics(self) -> dict[str, Any]:
        """The statistics document (`sim.stats.derive`) with a separate ``timing`` section."""
        doc = derive(self.counters, self.spec)
        if self.stopping is not None:
            doc["stopping"] = self.stopping
        games = doc["games_done"]
        doc["timing"] = {
            "seconds": self.seconds,
            "games_per_second": games / self.seconds if self.seconds > 0 else None,
            "workers": self.workers,
            "chunk_size": self.chunk_size,
            "chunks": self.chunks,
        }
        cpu = cpu_section(self.counters)
        if cpu:  # bots that account their CPU per move (`sim.stats.cpu`)
            doc["timing"]["cpu"] = cpu
        return doc

    def ratings(self) -> dict[str, Any]:
        """The ``ratings`` section of a tournament (a plain dict)."""
        doc = self.statistics()
        if "ratings" not in doc:
            raise ValueError("this job is not a tournament (its spec has no ratings)")
        return doc["ratings"]

    def frame(self, table: str = "statistics"):
        """A table of the statistics as a pandas DataFrame (`sim.stats.frames`): ``statistics``,
        ``turn_order``, ``ratings``, ``head_to_head``, ``sweep`` or ``comparison``."""
        from ..stats import frames

        if table not in frames.FRAMES:
            raise ValueError(f"table must be one of {', '.join(frames.FRAMES)}; got {shown(table)}")
        return getattr(frames, f"{table}_frame")(self.statistics())

    def statistics_frame(self):
        return self.frame("statistics")

    def turn_order_frame(self):
        return self.frame("turn_order")

    def ratings_frame(self):
        return self.frame("ratings")

    def sweep_frame(self):
        return self.frame("sweep")

    def comparison_frame(self):
        return self.frame("comparison")


_worker_state: dict[str, Any] = {}


RETURN_ROWS = "<return>"  # rows_dir of a run whose chunks hand their records to the parent


def _init_worker(
    spec: JobSpec, chunk_size: int, play: PlayGames | None, rows_dir: str | None = None
) -> None:
    tune_allocator()  # inherited through fork already; set again for other start methods
    _worker_state.update(spec=spec, chunk_size=chunk_size, play=play, rows_dir=rows_dir)


def _init_pool_process(
    spec: JobSpec,
    chunk_size: int,
    play: PlayGames | None,
    rows_dir: str | None = None,
) -> None:
    # The parent stops the pool on SIGINT/SIGTERM; a pool process ignores Ctrl-C (sent to the
    # whole process group) and dies at once on the pool's SIGTERM (the parent's handler, which
    # fork copied, would raise in it and print a traceback). Both were blocked since the fork
    # (`_pool_results`): a SIGTERM sent meanwhile ends the process here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _init_worker(spec, chunk_size, play, rows_dir)


def _chunk(chunk: int):
    s = _worker_state
    if s.get("rows_dir") == RETURN_ROWS:  # the parent writes the records, in chunk order
        from .gamerows import recording

        seen, play = recording(s["play"])
        result = play_chunk(s["spec"], s["chunk_size"], chunk, play)
        return result._replace(joint=seen[0])
    if s.get("rows_dir"):  # --games-out of a joint job: the chunk's records to its chunk file
        from .gamerows import play_chunk_with_rows

        return play_chunk_with_rows(s["spec"], s["chunk_size"], chunk, s["rows_dir"], s["play"])
    return play_chunk(s["spec"], s["chunk_size"], chunk, s["play"])


def _play_chunk(chunk: int) -> tuple:
    games, counters, _, records = _chunk(chunk)
    if records is not None:  # RETURN_ROWS: the chunk's records come along
        return games, counters, chunk, records
    return games, counters


def _play_joint_chunk(chunk: int) -> dict[str, Any]:
    return _chunk(chunk).joint


def run_local(
    spec: JobSpec,
    workers: int | None = None,
    chunk_size: int | None = None,
    progress: Progress | None = None,
    play: PlayGames | None = None,
    on_check: Callable[[dict], None] | None = None,
    games_out: str | os.PathLike | None = None,
) -> LocalResult:
    """Play every game of `spec` here and return the merged counters.

    Parameters
    ----------
    spec : the job
    workers : processes; default ``os.cpu_count()``; 1 plays in this process with no pool
    chunk_size : games per chunk; default `default_chunk_size`
    progress : called with the number of games done (all configurations) after each chunk
    play : stand-in for `sim.jobs.play.play_games` (same signature); default the real one
    on_check : called with each check point of a stopping rule (`sim.jobs.stopping.evaluate`)
    games_out : also write every game as a row to this Parquet file (`sim.jobs.gamerows`), in
        (configuration, game) order, streamed chunk by chunk; not with a stopping rule

    A job with a baseline or a stopping rule runs in joint chunks (`sim.jobs.sequential`), aligned
    to its check points: it stops at the first check point that decides, and its counters are those
    of the prefix of games up to there. Chunk sizes are rounded up to whole mirrored groups and
    check-point intervals (`sim.jobs.chunk.aligned`).
    """
    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    if chunk_size is None:
        if spec.joint_chunks:
            chunk_size = default_joint_chunk_size(spec, workers)
        else:
            chunk_size = default_chunk_size(spec.games, workers, spec.cost)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1; got {chunk_size}")
    chunk_size = aligned(spec, chunk_size)
    tune_allocator()  # this process plays (workers == 1) or forks the pool that does
    if games_out is not None:
        return _run_with_rows(spec, workers, chunk_size, progress, play, games_out)
    return _run(spec, workers, chunk_size, progress, play, on_check)


def _run_with_rows(spec, workers, chunk_size, progress, play, games_out) -> LocalResult:
    import shutil
    import tempfile
    from pathlib import Path

    from .gamerows import GamesWriter, gather

    if spec.stop is not None:
        raise ValueError("games_out cannot be combined with a stopping rule")
    out = Path(games_out)
    if not spec.joint_chunks:
        # Chunks are numbered configuration by configuration: in chunk order they are the file's
        # (configuration, game) order. The parent writes them as they come, holding the few
        # that finish early (at most the pool's chunks in flight) until the ones before them.
        from .chunk import chunk_games_range

        with GamesWriter(out, spec) as writer:
            early: dict[int, Any] = {}
            following = 0

            def write(chunk, records):
                nonlocal following
                early[chunk] = records
                while following in early:
                    k = chunk_games_range(spec, chunk_size, following)[0]
                    writer.write(k, early.pop(following))
                    following += 1

            result = _run(spec, workers, chunk_size, progress, play, None, RETURN_ROWS, write)
        result.extra["games_out"] = {"path": str(out), "rows": writer.rows}
        return result
    # Joint chunks play every configuration: each writes its chunk file, gathered at the end.
    spool = tempfile.mkdtemp(
        prefix=".azulsim-games-", dir=out.parent if out.parent.exists() else None
    )
    try:
        result = _run(spec, workers, chunk_size, progress, play, None, spool)
        rows = gather(spool, out, spec, expected_chunks=result.chunks)
        result.extra["games_out"] = {"path": str(out), "rows": rows}
        return result
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _run(
    spec, workers, chunk_size, progress, play, on_check, rows_dir=None, write_rows=None
) -> LocalResult:
    if spec.joint_chunks:
        return _run_joint(spec, workers, chunk_size, progress, play, on_check, rows_dir)
    tasks = range(chunks_total(spec, chunk_size))
    workers = min(workers, len(tasks))
    counters: Counters = {}
    done = 0
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_stop_on_signals())
        if workers == 1:
            _init_worker(spec, chunk_size, play, rows_dir)
            stack.callback(_worker_state.clear)
            parts = map(_play_chunk, tasks)
        else:
            parts = stack.enter_context(
                contextlib.closing(
                    _pool_results(spec, chunk_size, play, workers, tasks, rows_dir=rows_dir)
                )
            )
        for n, part, *rows in parts:
            if rows:
                write_rows(*rows)
            counters = merge(counters, part)
            done += n
            if progress:
                progress(done)
    seconds = time.perf_counter() - began
    return LocalResult(spec, counters, seconds, workers, chunk_size, len(tasks))


def default_joint_chunk_size(spec: JobSpec, workers: int) -> int:
    """A joint chunk plays every configuration; a job that may stop early wants smaller chunks
    than a fixed one (what lies past the stop is wasted, and a stop inside a chunk recounts it),
    but not so small that the batch runs half empty."""
    if spec.stop is None:
        return default_chunk_size(spec.games, workers, spec.cost)
    return max(spec.stop.check_every, min(spec.games, STOP_CHUNK_GAMES))


def _run_joint(spec, workers, chunk_size, progress, play, on_check, rows_dir=None) -> LocalResult:
    tasks = range(chunks_total(spec, chunk_size))
    workers = min(workers, len(tasks))
    prefix = Prefix(spec)
    seen = 0
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_stop_on_signals())
        _init_worker(spec, chunk_size, play, rows_dir)  # a trimmed chunk's recount runs here
        stack.callback(_worker_state.clear)
        if workers == 1:
            parts = map(_play_joint_chunk, tasks)
        else:
            # Closing the generator at the stop terminates what runs past it (dropped anyway).
            parts = stack.enter_context(
                contextlib.closing(
                    _pool_results(
                        spec, chunk_size, play, workers, tasks, _play_joint_chunk, rows_dir
                    )
                )
            )
        for chunk in parts:
            prefix.add(chunk)
            if on_check:
                for point in prefix.history[seen:]:
                    on_check(point)
            seen = len(prefix.history)
            if progress and prefix.trim is None:
                progress(prefix.games * len(spec.configurations))
            if prefix.done or prefix.trim is not None:
                break
        if prefix.trim is not None:
            prefix.finish(play_joint(spec, *prefix.trim, play))
            if progress:
                progress(prefix.games * len(spec.configurations))
    seconds = time.perf_counter() - began
    return LocalResult(
        spec, prefix.counters, seconds, workers, chunk_size, len(tasks), stopping=prefix.summary()
    )


def _pool_results(
    spec: JobSpec, chunk_size: int, play, workers: int, tasks: range, fn=None, rows_dir=None
) -> Iterator[Any]:
    """``fn(chunk)`` (default: ``(games, counters)`` of the chunk) for every chunk of `tasks`, in
    completion order, from a `ChunkPool` of `workers` processes.

    Chunks are handed out as earlier ones finish, at most `IN_FLIGHT_PER_WORKER` per process at a
    time. Closing the generator early (the stop, an error, `Interrupted`) stops and joins the pool.
    """
    # Pool processes start with SIGTERM and SIGINT blocked. Unblocked, a process forked while
    # `_stop_on_signals` is in force took a SIGTERM that came before its initializer with the
    # parent's handler, which the fork copied: the signal could be lost (Python drops pending
    # signals just after a fork) or its `Interrupted` swallowed (raised where Python ignores
    # exceptions, such as an at-fork hook), and the process then lived on.
    with _blocked(STOP_SIGNALS):
        pool = ChunkPool(
            workers, fn or _play_chunk, _init_pool_process, (spec, chunk_size, play, rows_dir)
        )
    with pool:
        yield from pool.results(tasks, IN_FLIGHT_PER_WORKER)


# The signals that stop a run (`_stop_on_signals`).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


@contextlib.contextmanager
def _blocked(signals):
    """`signals` blocked in this thread (and in the threads and processes it starts) while the
    block runs; one that came meanwhile is handled on the way out."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def _stop_on_signals():
    """While the block runs in the main thread, SIGTERM and SIGINT raise `Interrupted`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def simulate(spec: JobSpec, **kwargs: Any) -> dict[str, Any]:
    """`run_local` then the statistics document (with ``timing``); kwargs as for `run_local`."""
    return run_local(spec, **kwargs).statistics()
