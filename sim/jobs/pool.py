"""A few forked processes that play chunks, each with a pipe of its own.

``multiprocessing.Pool`` sends every result through one queue that its processes share, guarded by
a lock held across processes: a process stopped (the pool's own ``terminate``) while it held that
lock, sending a result, left it taken for good, and the pool's shutdown then waited on it for ever.
Here nothing is shared: each process reads its chunks from, and sends its results on, its own
pipe, so stopping any process at any moment leaves nothing behind that another one needs.

A process that ends while the pool runs (killed, out of memory, a crash in C) is seen at once, by
its sentinel, and fails the run: the chunks it held are lost, and waiting for them would last for
ever. There are no replacements.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.pool import RemoteTraceback
from typing import Any

# How long a stopped process may take to end before it is killed (SIGKILL).
STOP_GRACE_S = 5.0


class PoolProcessDied(RuntimeError):
    """A pool process ended while it held chunks."""


def _serve(
    conn: Connection,
    inherited: list[Connection],
    initializer: Callable[..., None],
    initargs: tuple,
    fn: Callable[[Any], Any],
) -> None:
    # The pipe ends of the processes forked before this one came with the fork: closed, so that
    # each of those sees the end of its pipe when the parent is gone (and exits, not left behind).
    for other in inherited:
        other.close()
    initializer(*initargs)
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the parent is gone
            return
        if task is None:
            return
        try:
            reply = (True, fn(task), None)
        except Exception as exc:
            reply = (False, exc, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as exc:  # a result or an error that does not pickle
            conn.send((False, RuntimeError(f"chunk {task}: {exc!r}"), traceback.format_exc()))


class ChunkPool:
    """`workers` forked processes; each runs ``initializer(*initargs)`` once, then ``fn(task)`` for
    the tasks it is given. Use as a context manager: leaving it stops every process."""

    def __init__(
        self,
        workers: int,
        fn: Callable[[Any], Any],
        initializer: Callable[..., None],
        initargs: tuple = (),
    ) -> None:
        context = multiprocessing.get_context("fork")  # the play function is inherited, not pickled
        self.conns: list[Connection] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []
        try:
            for _ in range(workers):
                mine, theirs = context.Pipe()
                process = context.Process(
                    target=_serve,
                    args=(theirs, [*self.conns, mine], initializer, initargs, fn),
                    daemon=True,
                )
                process.start()
                theirs.close()  # the child's end lives in the child only
                self.conns.append(mine)
                self.processes.append(process)
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> ChunkPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def results(self, tasks: Iterable[Any], ahead: int) -> Iterator[Any]:
        """``fn(task)`` for every task, in completion order, with at most `ahead` tasks given to
        each process at a time (memory stays flat whatever the number of tasks). A task's error
        is raised here, its remote traceback as its cause."""
        pending = iter(tasks)
        held = {conn: 0 for conn in self.conns}
        owner = {p.sentinel: p for p in self.processes}

        def give(conn: Connection) -> None:
            while held[conn] < ahead:
                task = next(pending, None)
                if task is None:
                    return
                conn.send(task)
                held[conn] += 1

        for conn in self.conns:
            give(conn)
        while any(held.values()):
            ready = wait([*self.conns, *owner])
            replies = [r for r in ready if r in held]
            if len(replies) < len(ready):  # a process ended: results still in its pipe are moot
                process = owner[next(r for r in ready if r in owner)]
                raise PoolProcessDied(
                    f"a simulate process (pid {process.pid}) died while playing a chunk "
                    f"(exit code {process.exitcode}: killed, out of memory or crashed); "
                    "the run is incomplete"
                )
            for conn in replies:
                ok, value, remote = conn.recv()
                held[conn] -= 1
                if not ok:
                    value.__cause__ = RemoteTraceback(remote)
                    raise value
                give(conn)
                yield value

    def stop(self) -> None:
        """Ask each process to end, then SIGTERM what is still running, then SIGKILL what is
        still there after `STOP_GRACE_S`; every process is joined (none is left behind)."""
        for conn in self.conns:
            try:
                conn.send(None)
            except OSError:  # its process is gone
                pass
        for process in self.processes:
            process.join(0.05)
            if process.exitcode is None:
                process.terminate()
        for process in self.processes:
            process.join(STOP_GRACE_S)
            if process.exitcode is None:
                process.kill()
                process.join()
        for conn in self.conns:
            conn.close()
        self.conns, self.processes = [], []
