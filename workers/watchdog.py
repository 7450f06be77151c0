"""The worker's liveness watchdog: notice a consumer that is connected but no longer consuming.

Celery's Redis consumer has a long record of logging "Connection to broker lost. Trying to
re-establish the connection..." and then never taking another message, the process alive and
its connection up (celery/celery#8030, #9054, #10205, #10302; docs/reliability.md). Nothing
inside Celery notices, so a thread in the worker's main process checks, every few seconds:

* Redis answers (its own short-timeout client), and
* chunks wait in the queue (`workers.reconciler.queue_length`),

and the worker has received no task since. Once that has held without a break for
``AZULSIM_WATCHDOG_S`` seconds the worker is stuck: the watchdog logs why, stops touching the
liveness file and exits the process with status 70 (its pool children are killed first; their
chunks come back by the visibility timeout or the reconciler). ``azulsim worker`` and
``celery -A workers.app worker`` both get it (`workers.app.WatchdogStep`); Kubernetes restarts
the container (deploy/k8s: an exec probe on the liveness file's age, and the exit itself).

Why no "is a pool process free?" condition: the stuck state tests/test_netns.py reproduces
(three resets within three seconds) leaves a finished task counted as active for ever, so the
worker looks busy. Instead the limit must exceed the hard time limit (`Settings` checks it): in
that time every running chunk ends or is killed, so a healthy worker with work waiting receives.

While Redis does not answer nothing is judged: a partition is not the worker's fault, and
restarting workers during one only adds churn. The clock starts again when Redis answers.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("azulsim.watchdog")

EXIT_STUCK = 70  # EX_SOFTWARE: the supervisor (Kubernetes, systemd) restarts the worker


@dataclass
class Verdict:
    stuck: bool
    reason: str


@dataclass
class ConsumeClock:
    """How long the worker has gone without receiving while it should have (pure logic)."""

    limit_s: float
    since: float | None = None  # start of the current "should be consuming" stretch
    received_at: float = field(default=0.0)

    def received(self, now: float) -> None:
        self.received_at = now
        self.since = None

    def observe(self, now: float, redis_ok: bool, waiting: int) -> Verdict:
        if not redis_ok:
            self.since = None
            return Verdict(False, "Redis does not answer: not judged")
        if waiting <= 0:
            self.since = None
            return Verdict(False, "queue empty")
        if self.since is None:
            self.since = now
        idle = now - self.since
        if idle > self.limit_s:
            return Verdict(
                True,
                f"{waiting} chunk(s) waiting and Redis answering, yet no task received for "
                f"{idle:.0f} s (limit {self.limit_s:g} s, above the hard time limit): the "
                "consumer is stuck (celery#8030)",
            )
        return Verdict(False, f"waiting for a task for {idle:.0f} s")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def _exit_stuck() -> None:
    for child in _children(os.getpid()):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    logging.shutdown()
    os._exit(EXIT_STUCK)


class Watchdog:
    """The checking thread (one per worker process); `start` is idempotent."""

    def __init__(
        self,
        settings,
        on_stuck: Callable[[], None] = _exit_stuck,
        interval: float | None = None,
    ):
        self.settings = settings
        self.on_stuck = on_stuck
        self.clock = ConsumeClock(settings.watchdog_s)
        self.interval = interval or max(0.5, min(5.0, settings.watchdog_s / 8))
        self.liveness = Path(settings.liveness_file) if settings.liveness_file else None
        self.thread: threading.Thread | None = None
        self.last: Verdict | None = None
        self._store = None

    def received(self) -> None:
        self.clock.received(time.monotonic())

    def _waiting(self) -> int | None:
        """Chunks waiting in the queue, or None when Redis does not answer."""
        import redis

        from .reconciler import queue_length
        from .store import JobStore, connect

        try:
            if self._store is None:
                self._store = JobStore(connect(self.settings, api=True), self.settings)
            return queue_length(self._store, self.settings.queue)
        except (redis.RedisError, OSError):
            return None

    def check(self) -> Verdict:
        waiting = self._waiting()
        verdict = self.clock.observe(time.monotonic(), waiting is not None, waiting or 0)
        self.last = verdict
        if not verdict.stuck and self.liveness is not None:
            try:
                self.liveness.touch()
            except OSError:
                log.warning("cannot touch the liveness file %s", self.liveness)
        return verdict

    def _run(self) -> None:
        while True:
            try:
                verdict = self.check()
            except Exception:  # noqa: BLE001 - the watchdog itself must not die
                log.exception("watchdog check failed")
                verdict = None
            if verdict is not None and verdict.stuck:
                log.error("watchdog: %s; exiting with status %d", verdict.reason, EXIT_STUCK)
                self.on_stuck()
                return
            time.sleep(self.interval)

    def start(self) -> Watchdog:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="azulsim-watchdog", daemon=True)
            self.thread.start()
        return self
