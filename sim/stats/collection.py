"""Python's cyclic garbage collector paused while a big document is built or drawn.

A 100-configuration job's statistics document is some 100,000 dicts and lists: building it
triggers a collection every 700 of them, and each older-generation collection walks every live
container of the process (in the API server: the documents it keeps), a third or more of the
derivation's time. The document holds no reference cycles, so nothing is left for the
collector to find in it; collection resumes when the last block that paused it ends (blocks may
run in several threads at once).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0  # blocks running now
_resume = False  # whether collection was on when the first of them began


@contextmanager
def collection_paused() -> Iterator[None]:
    global _paused, _resume
    with _lock:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()
