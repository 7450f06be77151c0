"""A cache of GetStatistics replies, so many clients polling one running job share one
derivation per merged chunk."""

from __future__ import annotations

import threading
from collections import OrderedDict

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
        the cache when its counters have not moved. The web view (`service.web`) reads the
        statistics through this same call, so its figures are GetStatistics'."""
        info = backend.get(job_id)
        reply = self.get(info)
        if reply is None:
            reply = convert.statistics_to_proto(info, backend.statistics(info))
            self.put(info, reply)
        return reply
