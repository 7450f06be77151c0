"""The chunk queue as kombu's Redis transport keeps it: its list keys and its length.

kombu stores a queue's waiting messages in Redis lists: the queue's own name for priority 0, and
``name + PRIORITY_SEP + level`` for each other level of the transport's ``priority_steps``
(kombu's default ``[0, 3, 6, 9]``; `workers.app` keeps it). Chunk tasks are published without a
priority, so they all wait in the first list, which is the one KEDA watches (``listName``); the
length read here counts every level, so a message published with a priority still counts. The
reconciler ("is the queue empty?") and the ``azulsim_queue_length`` gauge both read
`queue_lengths`: one figure.
"""

from __future__ import annotations

from collections.abc import Iterable

PRIORITY_SEP = "\x06\x16"  # kombu.transport.redis.Channel.sep
PRIORITY_STEPS = (0, 3, 6, 9)  # kombu.transport.redis.PRIORITY_STEPS, the transport's default


def queue_key(key_prefix: str, queue: str) -> str:
    """The Redis list of `queue`'s priority-0 messages (kombu's ``global_keyprefix`` first)."""
    return key_prefix + queue


def queue_lists(key: str) -> list[str]:
    """Every Redis list of the queue whose priority-0 list is `key`."""
    return [key if level == 0 else f"{key}{PRIORITY_SEP}{level}" for level in PRIORITY_STEPS]


def queue_lengths(client, keys: Iterable[str]) -> dict[str, int]:
    """``{key: messages waiting}`` for each queue's priority-0 list `key`, all priority levels
    together: one pipelined round trip (raises redis errors)."""
    keys = list(keys)
    pipe = client.pipeline(transaction=False)
    for key in keys:
        for name in queue_lists(key):
            pipe.llen(name)
    values = pipe.execute()
    per = len(PRIORITY_STEPS)
    return {key: int(sum(values[i * per : (i + 1) * per])) for i, key in enumerate(keys)}
