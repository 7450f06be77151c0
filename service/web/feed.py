"""Live updates of job pages: one poller per watched job, shared by every page watching it.

A `Feed` reads the job (the GetStatistics reply, from the servicer's cache) every `interval`
seconds in the thread pool and keeps the latest live parts (`Views.live`); each open event stream
waits for a newer version and sends it. So fifty pages on one running job cost one poll and one
render per change, not fifty. The feed stops when its job ends (the last version says so, and
every stream closes after sending it) or when no page watches any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

log = logging.getLogger("azulsim.web")

# load(job_id, ahead, recount, statistics) -> (live parts, ahead): reads the job in the pool;
# `ahead` is the work ahead of a queued job as last counted, counted again when `recount`;
# `statistics` the statistics HTML to send again (None: read GetStatistics now).
Load = Callable[[str, Any, bool, str | None], Awaitable[tuple[dict[str, Any], Any]]]

KEEPALIVE_S = 15.0  # an SSE comment this often on a quiet stream: proxies keep it, gone pages fail
AHEAD_EVERY_S = 5.0  # how often the work ahead of a queued job is counted again
# The statistics of a running job are read again at most every STATS_EVERY_S, and at most a
# STATS_SHARE of the time: deriving a 100-configuration document takes a few tenths of a second
# (more on a loaded machine), so progress moves every poll and its tables every 5-20 s (the last
# ones when it ends); a small job's tables every 2 s.
STATS_EVERY_S = 2.0
STATS_SHARE = 0.05


class Feed:
    """The latest live parts of one job, polled while anyone watches."""

    def __init__(self, job_id: str, load: Load, interval: float):
        self.job_id, self.load, self.interval = job_id, load, interval
        self.ahead: Any = None  # the work ahead of a queued job, as last counted
        self.version = 0
        self.latest: dict[str, Any] | None = None
        # The latest version as JSON, once for every stream: whole, and without the statistics
        # HTML (hundreds of kB for a big job) for streams that have sent these statistics.
        self.whole = self.slim = ""
        self.statistics: str | None = None
        self.stats_version = 0
        self.watchers = 0
        self.changed = asyncio.Event()
        self.task: asyncio.Task | None = None

    def _publish(self, payload: dict[str, Any]) -> None:
        html = payload.get("html") or {}
        if html.get("statistics") != self.statistics:
            self.statistics = html.get("statistics")
            self.stats_version += 1
        self.whole = json.dumps(payload, separators=(",", ":"))
        slim = {**payload, "html": {k: v for k, v in html.items() if k != "statistics"}}
        self.slim = json.dumps(slim, separators=(",", ":"))
        self.version += 1
        self.latest = payload
        self.changed.set()
        self.changed = asyncio.Event()  # waiters hold the one just set

    async def run(self) -> None:
        last, ahead_at = None, -1e9
        statistics, stats_at, cost = None, -1e9, 0.0
        try:
            while True:
                now = time.monotonic()
                recount = now - ahead_at >= AHEAD_EVERY_S
                due = now - stats_at >= max(STATS_EVERY_S, cost / STATS_SHARE)
                try:
                    payload, self.ahead = await self.load(
                        self.job_id, self.ahead, recount, None if due else statistics
                    )
                    if recount:
                        ahead_at = now
                    if due:
                        stats_at, cost = now, time.monotonic() - now
                        statistics = payload["html"]["statistics"]
                except Exception as exc:  # noqa: BLE001 - said to the page, which stops
                    from .errors import http_status

                    code, message = http_status(exc)
                    if code >= 500 and code != 503:
                        log.exception("live update of job %s failed", self.job_id)
                    payload = {"finished": code != 503, "error": message}
                html = payload.get("html") or {}
                # The statistics HTML shown again is the same object: compared at once.
                key = (payload.get("state"), payload.get("error"), html.get("progress"),
                       html.get("statistics"))  # fmt: skip
                if key != last:
                    last = key
                    self._publish(payload)
                if payload.get("finished"):
                    return
                await asyncio.sleep(self.interval)
        finally:
            self.changed.set()  # wake the streams: the feed is over

    async def follow(self) -> AsyncIterator[str | None]:
        """Each new version as JSON (None: nothing new for `KEEPALIVE_S`), without the
        statistics HTML when this stream has sent the same already; ends after the last one."""
        seen = sent_stats = 0
        while True:
            if self.version > seen:
                seen = self.version
                assert self.latest is not None
                yield self.slim if sent_stats == self.stats_version else self.whole
                sent_stats = self.stats_version
                if self.latest.get("finished"):
                    return
            if self.task is not None and self.task.done():
                return
            waiter = self.changed
            try:
                await asyncio.wait_for(waiter.wait(), KEEPALIVE_S)
            except TimeoutError:
                yield None


class Feeds:
    """The feeds of the jobs being watched, by job id."""

    def __init__(self, load: Load, interval: float = 0.5):
        self.load, self.interval = load, interval
        self.feeds: dict[str, Feed] = {}

    def watchers(self) -> int:
        return sum(f.watchers for f in self.feeds.values())

    @contextlib.asynccontextmanager
    async def watch(self, job_id: str):
        feed = self.feeds.get(job_id)
        if feed is None or (feed.task is not None and feed.task.done()):
            feed = self.feeds[job_id] = Feed(job_id, self.load, self.interval)
            feed.task = asyncio.create_task(feed.run(), name=f"azulsim-web-feed-{job_id}")
        feed.watchers += 1
        try:
            yield feed
        finally:
            feed.watchers -= 1
            if feed.watchers == 0 and self.feeds.get(job_id) is feed:
                del self.feeds[job_id]
                if feed.task is not None:
                    feed.task.cancel()

    async def close(self) -> None:
        tasks = [f.task for f in self.feeds.values() if f.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.feeds.clear()
