"""A cache of GetStatistics replies, so many clients polling one running job share one
derivation per merged chunk; and of the documents the web view shows, derived once with them."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import convert
from ..api import azulsim_pb2 as pb


class StatisticsReplies:
    """The last GetStatistics replies, by job record. The counters change only when a chunk
    merges, which moves ``chunks_done`` in the same Lua script, and the rest of the record only
    with the state; so (job, state, chunks done, start and end times) names the counters. A job
    with a stopping rule merges when its prefix advances, which moves ``games_done``: in the key
    too."""

    def __init__(self, size: int = 256):
        self.size = size
        self.replies: OrderedDict[tuple, pb.Statistics] = OrderedDict()
        # The documents behind the last pages the web view drew (big: a few of them).
        self.documents: OrderedDict[tuple, Shown] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def _key(info) -> tuple:
        return (
            info.job_id,
            info.state,
            info.chunks_done,
            info.games_done,
            info.started_at,
            info.finished_at,
        )

    def get(self, info) -> pb.Statistics | None:
        with self.lock:
            return self.replies.get(self._key(info))

    def put(self, info, reply: pb.Statistics) -> None:
        with self.lock:
            self.replies[self._key(info)] = reply
            while len(self.replies) > self.size:
                self.replies.popitem(last=False)

    def reply(self, backend, job_id: str) -> pb.Statistics:
        """The GetStatistics reply for the job as it is now (blocking: run it in the pool), from
        the cache when its counters have not moved (or from the document the web view derived
        of these counters)."""
        info = backend.get(job_id)
        key = self._key(info)
        reply = self.get(info)
        if reply is None:
            with self.lock:
                held = self.documents.get(key)
            if held is not None:
                info, doc = held.info, held.whole
            else:
                doc = backend.statistics(info)
            reply = convert.statistics_to_proto(info, doc)
            self.put(info, reply)
        return reply

    def document(self, backend, job_id: str, keep: int = 16) -> Shown:
        """The job's statistics as the web view (`service.web`) shows them: GetStatistics'
        figures, its document parsed. A derivation for the page leaves the reply's JSON to the
        first GetStatistics caller (serialising a 100-configuration document costs about what
        rendering its page does). The document is kept (parsing a big reply again costs more
        than rendering it); callers must not change it."""
        info = backend.get(job_id)
        key = self._key(info)
        with self.lock:
            reply, held = self.replies.get(key), self.documents.get(key)
        if held is None:
            if reply is None:
                whole = backend.statistics(info)
            else:
                whole = json.loads(reply.statistics_json)
            held = Shown(convert.job_to_proto(info), info.state != "SUCCEEDED", info, whole)
        with self.lock:
            self.documents[key] = held
            self.documents.move_to_end(key)
            while len(self.documents) > keep:
                self.documents.popitem(last=False)
        return held


@dataclass(frozen=True)
class Shown:
    """A job's statistics for the web view: its `Job` message, whether the figures are partial
    (as the reply's ``partial``), the record they were derived of, and the document."""

    job: pb.Job
    partial: bool
    info: Any
    whole: dict[str, Any]  # as `Backend.statistics` returns it (its ``timing`` too)

    @property
    def doc(self) -> dict[str, Any]:
        """The document as ``statistics_json`` holds it, less its ``timing``."""
        return {k: v for k, v in self.whole.items() if k != "timing"}
