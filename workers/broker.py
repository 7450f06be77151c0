"""What the broker holds for each chunk: kombu's queue list and its unacked bookkeeping, read.

kombu emulates acks on Redis (docs/reliability.md): a consumer takes a message off the queue
list (BRPOP) and records it in the hash ``unacked`` (delivery tag -> ``[message, exchange,
routing key]``) with its delivery time in the sorted set ``unacked_index``; the ack deletes both.
A rejected message goes back to the queue (the back); a restored one (visibility timeout, warm
shutdown) too. So a chunk's message is either in the queue, in ``unacked``, or lost.

A queue's waiting messages are in Redis lists: the queue's own name for priority 0, and
``name + PRIORITY_SEP + level`` for each other level of the transport's ``priority_steps`` (kombu's
default ``[0, 3, 6, 9]``, which `workers.app` keeps). Chunk tasks are published without a
priority, so they all wait in the first list, the one KEDA watches (``listName``).

Read here: the queue's length, every level counted (`queue_lengths`: the one figure of the
reconciler's "is the queue empty?" and of the ``azulsim_queue_length`` gauge); which chunks have
an unacked message (cheap: the hash holds one entry per message a consumer has taken and not
acked, i.e. per running chunk, plus those of dead nodes); and which have a message waiting in the
queue (one LRANGE of the whole list: the caller does it rarely).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from .store import JobStore
from .tasks import TASK_NAME

PRIORITY_SEP = "\x06\x16"  # kombu.transport.redis.Channel.sep
PRIORITY_STEPS = (0, 3, 6, 9)  # kombu.transport.redis.PRIORITY_STEPS, the transport's default
SCAN_PAGE = 2000  # messages per LRANGE while scanning the queue

Chunk = tuple[str, int]  # (job id, chunk index)


def queue_lists(key: str) -> list[str]:
    """Every Redis list of the queue whose priority-0 list is `key`."""
    return [key if level == 0 else f"{key}{PRIORITY_SEP}{level}" for level in PRIORITY_STEPS]


def queue_keys(store: JobStore, queue: str | None = None) -> list[str]:
    """The Redis lists of Celery queue `queue` (default the chunk queue): the queue and its
    priority sub-queues."""
    return queue_lists(store.settings.broker_key(queue or store.settings.queue))


def queue_lengths(client, keys: Iterable[str]) -> dict[str, int]:
    """``{key: messages waiting}`` for each queue's priority-0 list `key`, every priority level
    counted: one pipelined round trip (raises redis errors)."""
    keys = list(keys)
    pipe = client.pipeline(transaction=False)
    for key in keys:
        for name in queue_lists(key):
            pipe.llen(name)
    values = pipe.execute()
    per = len(PRIORITY_STEPS)
    return {key: int(sum(values[i * per : (i + 1) * per])) for i, key in enumerate(keys)}


def chunk_of_message(message: dict) -> Chunk | None:
    """``(job id, chunk)`` of a kombu message dict (Celery protocol 2), or None for a message
    that is not a chunk task or does not parse (another app's, a hand-made one)."""
    try:
        if message.get("headers", {}).get("task") != TASK_NAME:
            return None
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return str(args[0]), int(args[1])
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def chunk_of_raw(raw: bytes | str) -> Chunk | None:
    """The same for a message as stored in the queue list (its JSON text)."""
    try:
        return chunk_of_message(json.loads(raw))
    except (ValueError, TypeError):
        return None


@dataclass
class Unacked:
    """The unacked messages of chunk tasks: per chunk, its entries' delivery tags and times."""

    key: str
    entries: dict[Chunk, list[tuple[str, float]]] = field(default_factory=dict)

    def of(self, job_id: str, chunk: int) -> list[tuple[str, float]]:
        return self.entries.get((job_id, chunk), [])


def read_unacked(store: JobStore) -> Unacked:
    """kombu's ``unacked`` hash and ``unacked_index`` of this service's broker, by chunk."""
    key = store.settings.broker_key("unacked")
    pipe = store.redis.pipeline(transaction=False)
    pipe.hgetall(key)
    pipe.zrange(key + "_index", 0, -1, withscores=True)
    raw, index = pipe.execute()
    delivered = {_str(tag): float(score) for tag, score in index}
    out = Unacked(key)
    for tag, value in raw.items():
        try:
            message = json.loads(value)[0]
        except (ValueError, TypeError, IndexError, KeyError):
            continue
        chunk = chunk_of_message(message) if isinstance(message, dict) else None
        if chunk is not None:
            tag = _str(tag)
            out.entries.setdefault(chunk, []).append((tag, delivered.get(tag, 0.0)))
    return out


def waiting_chunks(store: JobStore, jobs: Iterable[str]) -> set[Chunk]:
    """The chunks of `jobs` that have a message waiting in the queue (scans the whole list)."""
    wanted = set(jobs)
    found: set[Chunk] = set()
    for name in queue_keys(store):
        start = 0
        while True:
            page = store.redis.lrange(name, start, start + SCAN_PAGE - 1)
            for raw in page:
                chunk = chunk_of_raw(raw)
                if chunk is not None and chunk[0] in wanted:
                    found.add(chunk)
            if len(page) < SCAN_PAGE:
                break
            start += SCAN_PAGE
    return found


def _str(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
