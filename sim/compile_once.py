"""Compiling numba kernels once per machine, not once per process that starts at the same time.

Processes that start together (a worker's pool, test runners) find no cached machine code; each
would compile and race to write the same cache files (numba has open issues about that race).
`under_lock` runs a warm-up that compiles or loads the kernels one process at a time: the first
compiles and saves them, the others load what it saved.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable

_depth = 0  # warm-ups running in this process: a nested one (a module's warm-up playing games
# through the engine's) runs under the lock already held; a second flock would wait on it


def under_lock(warm: Callable[[], None]) -> None:
    """Run `warm` (calls that compile every kernel with the argument types of real calls) holding
    this user's kernel lock."""
    global _depth
    if _depth:
        warm()
        return
    lock = os.path.join(tempfile.gettempdir(), f"azulsim-kernels-{os.getuid()}.lock")
    try:
        held = open(lock, "a")  # noqa: SIM115 (held for the compile, closed below)
    except OSError:  # no writable temporary directory: compile unlocked
        held = None
    try:
        if held is not None:
            fcntl.flock(held, fcntl.LOCK_EX)
        _depth += 1
        try:
            warm()
        finally:
            _depth -= 1
    finally:
        if held is not None:
            held.close()  # releases the lock
