"""A cache of GetStatistics replies, so many clients polling one running job share one
derivation per merged chunk."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
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
        # The documents behind the last replies the web view read (big: a few of them).
        self.documents: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
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
        the cache when its counters have not moved."""
        info = backend.get(job_id)
        reply = self.get(info)
        if reply is None:
            reply = convert.statistics_to_proto(info, backend.statistics(info))
            self.put(info, reply)
        return reply

    def document(self, backend, job_id: str, keep: int = 16) -> tuple[pb.Statistics, dict]:
        """`reply` and the statistics document its ``statistics_json`` holds, for the web view
        (`service.web`): its figures are GetStatistics'. The document is kept beside the reply
        (parsing a 100-configuration one again costs more than rendering it); callers must not
        change it."""
        info = backend.get(job_id)
        key = self._key(info)
        with self.lock:
            reply, doc = self.replies.get(key), self.documents.get(key)
        if reply is None:
            doc = backend.statistics(info)
            reply = convert.statistics_to_proto(info, doc)
            self.put(info, reply)
            doc = {k: v for k, v in doc.items() if k != "timing"}  # as statistics_json has it
        elif doc is None:
            doc = json.loads(reply.statistics_json)
        with self.lock:
            self.documents[key] = doc
            while len(self.documents) > keep:
                self.documents.popitem(last=False)
        return reply, doc
