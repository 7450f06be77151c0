"""A read-only web view of the jobs, for people who follow their studies in a browser: the jobs,
newest first; a job's progress and statistics tables, its stopping rule's path, a tournament's
ratings, a sweep's bands, kept live by server-sent events until it ends; any game of a job
replayed on drawn boards.

Served by the API process itself when ``AZULSIM_WEB_LISTEN`` is set (`azulsim up` sets it): on
the gRPC server's event loop, with its `Backend`, its thread pool, its GetStatistics cache and its
bearer tokens. So a page shows exactly what the RPCs answer, auth has one list of tokens, and
fifty watching pages share the derivations gRPC clients already share. Nothing here computes a
statistic: the pages format the document `sim.stats.derive` made (`service.web.sections`).

Modules: `app` (routes, token check, errors), `feed` (live updates), `views` (templates),
`sections` (the statistics sections of a job page: the one place to add one), `tables` (the
``azulsim stats`` tables as rows), `jobs` (progress and spec summaries), `svg` (charts), `board`
(a game's table), `auth`, `errors`.
"""

from __future__ import annotations

from .app import RunningWeb, WebView, start_web

__all__ = ["RunningWeb", "WebView", "start_web"]
