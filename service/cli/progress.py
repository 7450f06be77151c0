"""Progress of a batch as it runs: a live bar on a terminal (drawn by `rich`), a plain line every
2 s otherwise (a log, a pipe), for ``simulate`` and for following a job (``watch``,
``submit --watch``, ``demo``).

Games are counted a chunk at a time, so progress comes in steps. The rate is the games counted
since the first sight of the job running over the time to the last step; the ETA is the time that
rate still needs, counted down between steps (it does not stall, then jump, at each chunk). While a
job waits in the queue the display says so, and how many games of how many earlier jobs are ahead
of it (the chunk queue is first in, first out).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from .common import CommandError
from .output import clock, job_line, state_name

LINE_EVERY_S = 2.0  # the promise of the non-terminal output
AHEAD_EVERY_S = 5.0  # how often the work ahead of a queued job is counted again
AHEAD_PAGES = 10  # ListJobs pages of 1000 read for it, at most


@dataclass
class Estimate:
    """Rate and ETA from (time, games done) observations."""

    total: int
    t0: float | None = None  # first observation while running
    d0: int = 0
    t_last: float | None = None  # last observation where the count moved
    d_last: int = 0

    def observe(self, done: int, now: float) -> None:
        if self.t0 is None:
            self.t0, self.d0, self.t_last, self.d_last = now, done, now, done
        elif done != self.d_last:
            self.t_last, self.d_last = now, done

    def rate(self) -> float | None:
        if self.t0 is None or self.t_last is None or self.t_last <= self.t0:
            return None
        return (self.d_last - self.d0) / (self.t_last - self.t0)

    def eta(self, now: float) -> float | None:
        rate = self.rate()
        if not rate:
            return None
        return max(0.0, (self.total - self.d_last) / rate - (now - self.t_last))

    def rate_text(self) -> str:
        rate = self.rate()
        return "- games/s" if rate is None else f"{rate:,.0f} games/s"

    def eta_text(self, now: float) -> str:
        eta = self.eta(now)
        return "ETA --:--" if eta is None else f"ETA {clock(eta)}"


class LineProgress:
    """A line every `LINE_EVERY_S` seconds, and one at the end: for logs and pipes."""

    tick = LINE_EVERY_S

    def __init__(self, stream: TextIO, total: int):
        self.stream = stream
        self.estimate = Estimate(total)
        self.last = -1e9
        self.running = False
        self.said = ""  # the last line written: the closing one does not repeat it

    def show(self, done: int, status: str = "", running: bool = True, force: bool = False) -> None:
        now = time.monotonic()
        if running:
            self.estimate.observe(done, now)
        started = running and not self.running
        if not force and not started and now - self.last < self.tick - 0.05:
            return  # the start of the run (queued -> running) is said at once
        e = self.estimate
        tail = f"  {e.rate_text()}  {e.eta_text(now)}" if running else ""
        head = f"{status}: " if status else ""
        line = f"{head}{done:,}/{e.total:,} games{tail}"
        if force and line == self.said:  # a job that ended as it was first seen (cancelled)
            return
        self.last, self.running, self.said = now, running, line
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        pass


class TerminalProgress(LineProgress):
    """A live bar with games, games/s and a smooth ETA, redrawn 10 times a second by `rich`."""

    tick = 0.1

    def __init__(self, stream: TextIO, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn
        from rich.text import Text

        super().__init__(stream, total)
        estimate = self.estimate

        class Figures(ProgressColumn):
            def render(self, task) -> Text:
                if not task.fields.get("running", True):
                    return Text("")
                return Text(f"{estimate.rate_text()}  {estimate.eta_text(time.monotonic())}")

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} games"),
            Figures(),
            console=Console(file=stream, force_terminal=True),
            refresh_per_second=10,
        )
        self.task = self.progress.add_task("", total=total, running=True)
        self.progress.start()

    def show(self, done: int, status: str = "", running: bool = True, force: bool = False) -> None:
        if running:
            self.estimate.observe(done, time.monotonic())
        self.progress.update(self.task, completed=done, description=status, running=running)

    def close(self) -> None:
        self.progress.refresh()
        self.progress.stop()


def display(stream: TextIO, total: int) -> LineProgress:
    """The display that suits `stream`: a live bar on a terminal, lines otherwise."""
    return TerminalProgress(stream, total) if stream.isatty() else LineProgress(stream, total)


def work_ahead(client, job) -> tuple[int, int, bool]:
    """Games not yet counted in the jobs created before `job` and still queued or running, how
    many such jobs, and whether the count is complete (at most `AHEAD_PAGES` pages are read)."""
    games = jobs = 0
    seen, token = False, ""
    for _ in range(AHEAD_PAGES):
        page, token = client.list(1000, token)
        for j in page:  # newest first: the older jobs come after this one
            if j.job_id == job.job_id:
                seen = True
            elif seen and state_name(j) in ("QUEUED", "RUNNING"):
                games += j.games_total - j.games_done
                jobs += 1
        if not token:
            return games, jobs, True
    return games, jobs, False


def _queued_status(client, job) -> str:
    games, jobs, complete = work_ahead(client, job)
    if not jobs:
        return "queued"
    more = "" if complete else " or more"
    return f"queued behind {games:,}{more} games of {jobs:,} earlier job{'s' if jobs > 1 else ''}"


def follow(client, job_id: str, stream: TextIO) -> int:
    """Follow a job to its end with a progress display on `stream`; 0 if it SUCCEEDED, else 1."""
    updates: queue.Queue = queue.Queue()
    call = client.watch(job_id)

    def pump() -> None:  # the stream blocks between changes; the display must not
        try:
            for job in call:
                updates.put(job)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            updates.put(exc)
        updates.put(None)

    threading.Thread(target=pump, daemon=True, name="azulsim-watch").start()
    began = time.monotonic()
    job, shown, status, ahead_at = None, None, "", -1e9
    try:
        while True:
            try:
                item = updates.get(timeout=shown.tick if shown else 1.0)
            except queue.Empty:
                item = job
            if item is None:
                break
            if isinstance(item, Exception):
                raise item
            job = item
            if shown is None:
                shown = display(stream, job.games_total)
            state = state_name(job)
            now = time.monotonic()
            if state == "QUEUED" and now - ahead_at >= AHEAD_EVERY_S:
                status, ahead_at = _queued_status(client, job), now
            elif state != "QUEUED":
                status = state.lower()
            shown.show(job.games_done, status, running=state != "QUEUED")
    finally:
        call.cancel()
        if shown is not None:
            if job is not None:
                shown.show(job.games_done, status, running=state_name(job) != "QUEUED", force=True)
            shown.close()
    if job is None:
        raise CommandError(f"no update for job {job_id}")
    print(f"{job_line(job)} (watched {clock(time.monotonic() - began)})", file=stream)
    return 0 if state_name(job) == "SUCCEEDED" else 1
