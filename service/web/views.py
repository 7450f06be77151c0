"""Rendering the pages (Jinja2 templates in ``templates/``). Everything here is blocking and runs
in the server's thread pool, never on the event loop.

The live parts of a job page — its progress and its statistics sections — are rendered on their
own, so the event stream (`service.web.feed`) sends the same HTML the page was first drawn with.
The statistics HTML depends only on the GetStatistics figures, which change only when a chunk
merges: it is kept by the job record, so pages watching one job render it once a merge.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import jinja2

from sim.stats.collection import collection_paused

from ..api import azulsim_pb2 as pb
from ..server.replies import Shown
from .board import COLOUR_NAMES, table_svg
from .jobs import Progress, progress
from .sections import helpers, sections_of


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("service.web", "templates"),
        autoescape=True,  # every value from a job (bot specs, request ids, errors) is escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(helpers())
    env.globals["colour_names"] = COLOUR_NAMES
    return env


class Views:
    """The templates, and the statistics HTML by job record."""

    def __init__(self, size: int = 64):
        self.env = environment()
        self.size = size
        self._stats: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, name: str, **context: Any) -> str:
        return self.env.get_template(name).render(**context)

    def statistics(self, shown: Shown) -> str:
        """The job's statistics sections (`service.web.sections`) of GetStatistics' figures
        (`StatisticsReplies.document`)."""
        key = shown.job.SerializeToString(deterministic=True)
        with self._lock:
            html = self._stats.get(key)
        if html is None:
            doc = shown.doc
            with collection_paused():  # a big job's tables are many small objects
                html = self.page(
                    "statistics.html", doc=doc, sections=sections_of(doc), partial=shown.partial
                )
            with self._lock:
                self._stats[key] = html
                while len(self._stats) > self.size:
                    self._stats.popitem(last=False)
        return html

    def progress(self, p: Progress) -> str:
        return self.page("progress.html", p=p)

    def live(self, shown: Shown, ahead=None) -> dict[str, Any]:
        """The live parts of a job page: what its event stream sends at each change."""
        return self.live_parts(shown.job, self.statistics(shown), ahead)

    def live_parts(self, job: pb.Job, statistics: str, ahead=None) -> dict[str, Any]:
        """The live parts of `job` with statistics HTML already rendered."""
        p = progress(job, ahead)
        return {
            "state": p.state,
            "games_done": p.games_done,
            "finished": p.finished,
            "html": {"progress": self.progress(p), "statistics": statistics},
        }

    def game(self, replay, job_id: str) -> str:
        floor = replay.rules.floor
        boards = [
            table_svg(step.state, replay.seat_bots, replay.wall, floor) for step in replay.steps
        ]
        return self.page("game.html", replay=replay, job_id=job_id, boards=boards)
