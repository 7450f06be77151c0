"""A chunk whose pool child died goes back to the front of its queue, not to the back.

Celery requeues the message of a task whose pool child was lost (``task_reject_on_worker_lost``)
with a reject, and kombu's Redis transport puts a rejected message at the back of the queue
list (LPUSH; consumers BRPOP from the other end). For a job with a stopping rule that is the
worst place: chunks merge in game order only (`workers.store.prefix`), so the prefix waits at
the lost chunk while every chunk queued behind it plays, and early stopping saves nothing (one
killed child in an SPRT job of 100 chunks played all 100 instead of 22). `ChunkRequest` (the
chunk task's request class, `workers.tasks.register`) restores such a message to the front
instead (RPUSH: the next one taken), with kombu's own restore, which moves it from the
``unacked`` hash to the list in one transaction. Other transports get Celery's plain reject.
"""

from __future__ import annotations

import logging

from celery.worker.request import Request
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

log = logging.getLogger("azulsim.workers")


def requeue_first(message) -> bool:
    """Put a delivered, unacked kombu `message` back at the front of its queue; False when its
    transport is not Redis (the caller rejects it the usual way)."""
    qos = getattr(getattr(message, "channel", None), "qos", None)
    if not isinstance(qos, kombu_redis.QoS):
        return False
    tag = message.delivery_tag
    qos.restore_by_tag(tag, leftmost=False)  # unacked entry -> RPUSH, one transaction
    virtual.QoS.ack(qos, tag)  # forget the delivery in this consumer (what QoS.reject does)
    message._state = "REJECTED"
    return True


def forget_delivery(message) -> None:
    """Forget a delivery in this consumer only, its ack or reject having failed (the broker out
    of reach): its entry stays in kombu's ``unacked`` hash, so the visibility timeout or the
    reconciler's take-over brings the message back, and a redelivery of a merged chunk is
    skipped. Kept, it would count against the prefetch limit for good (kombu forgets a delivery
    only once the broker took the ack): with one pool process the worker never took another
    message after the partition that made the ack fail."""
    qos = getattr(getattr(message, "channel", None), "qos", None)
    if isinstance(qos, virtual.QoS) and message.delivery_tag in qos._delivered:
        virtual.QoS.ack(qos, message.delivery_tag)


class ChunkRequest(Request):
    """Celery's request, with a requeue (a lost pool child) to the front of the queue, and a
    delivery whose ack or reject failed forgotten (`forget_delivery`)."""

    def acknowledge(self):
        if self.acknowledged:
            return
        super().acknowledge()  # a broker error is logged ("Couldn't ack"), not raised
        if not self.message.acknowledged:
            forget_delivery(self.message)

    def reject(self, requeue=False):
        if requeue and not self.acknowledged:
            try:
                done = requeue_first(self.message)
            except self._connection_errors as exc:  # still unacked: the visibility timeout or
                # the reconciler's take-over brings it back (docs/reliability.md)
                log.critical("could not requeue %r: %r", self.message.delivery_tag, exc)
                forget_delivery(self.message)
                done = True
            if done:
                self.acknowledged = True
                self.send_event("task-rejected", requeue=True)
                return
        if not self.acknowledged:
            super().reject(requeue=requeue)
            if not self.message.acknowledged:
                forget_delivery(self.message)
