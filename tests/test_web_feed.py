"""The web view's live feed (service/web/feed.py) on its own: one poller for every watcher, the
statistics read again only now and then while progress moves at every poll, the last version
sent to every watcher and the feed gone when its job ends."""

from __future__ import annotations

import asyncio
import json

from service.web import feed


def test_one_feed_serves_every_watcher_and_reads_statistics_sparingly(monkeypatch):
    monkeypatch.setattr(feed, "STATS_EVERY_S", 3600.0)  # read once, then shown again
    calls: list[str | None] = []
    derived: list[str] = []

    async def load(job_id, ahead, recount, statistics):
        calls.append(statistics)
        if statistics is None:
            derived.append(f"stats {len(derived)}")
        polls = len(calls)
        parts = {
            "games_done": polls,
            "finished": polls >= 40,
            "html": {"progress": f"{polls} games", "statistics": derived[-1]},
        }
        return parts, ahead

    async def watch(feeds, seen):
        async with feeds.watch("job") as f:
            async for data in f.follow():
                if data is not None:
                    seen.append(json.loads(data))

    async def main():
        feeds = feed.Feeds(load, interval=0.005)
        seen = [[], [], []]
        await asyncio.gather(*(watch(feeds, s) for s in seen))
        return feeds, seen

    feeds, seen = asyncio.run(main())
    assert len(calls) == 40  # one poller for three watchers, to the job's end
    assert calls[0] is None and derived == ["stats 0"]  # read at the start only
    assert set(calls[1:]) == {"stats 0"}  # then shown again as read, while progress moved
    for s in seen:
        assert s[-1]["finished"] and s[-1]["games_done"] == 40  # everyone got the last version
        # The statistics HTML once per stream (it did not change), then progress alone.
        assert s[0]["html"]["statistics"] == "stats 0"
        assert all("statistics" not in p["html"] for p in s[1:])
        done = [p["games_done"] for p in s]
        assert done == sorted(done)
    assert feeds.feeds == {}  # the feed went with its last watcher
