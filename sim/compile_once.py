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


def under_lock(warm: Callable[[], None]) -> None:
    """Run `warm` (calls that compile every kernel with the argument types of real calls) holding
    this user's kernel lock."""
    lock = os.path.join(tempfile.gettempdir(), f"azulsim-kernels-{os.getuid()}.lock")
    try:
        held = open(lock, "a")  # noqa: SIM115 (held for the compile, closed below)
    except OSError:  # no writable temporary directory: compile unlocked
        held = None
    try:
        if held is not None:
            fcntl.flock(held, fcntl.LOCK_EX)
        warm()
    finally:
        if held is not None:
            held.close()  # releases the lock
