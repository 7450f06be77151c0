"""The C allocator, set once at the start of every process that plays (docs/engine.md).

A batch step makes many short-lived numpy temporaries of a few hundred kB to tens of MB. With
glibc's defaults each one above the (dynamic) mmap threshold is a fresh ``mmap`` that is faulted in
page by page and unmapped on free, and a freed top of the heap above 128 kB is trimmed back to the
kernel: heuristic play spent over a third of its CPU time in the kernel handling page faults.

`tune_allocator` keeps that memory in the process instead:

- ``M_MMAP_THRESHOLD`` 32 MiB (glibc's maximum): temporaries come from the heap, not from mmap;
  setting it also turns off the dynamic threshold;
- ``M_TRIM_THRESHOLD`` 1 GiB: free space at the top of the heap is kept for the next step;
- ``M_TOP_PAD`` 64 MiB: the heap grows in large steps (fewer ``brk`` calls).

The cost is that a process keeps its peak heap (a few hundred MB at most for the default batch).
Play is unchanged; only where numpy's buffers come from. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import os

# mallopt parameter numbers (glibc malloc.h).
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

SETTINGS = {
    M_MMAP_THRESHOLD: 32 * 1024 * 1024,
    M_TRIM_THRESHOLD: 1024 * 1024 * 1024,
    M_TOP_PAD: 64 * 1024 * 1024,
}

_tuned_pid: int | None = None


def _mallopt():
    try:
        fn = ctypes.CDLL(None).mallopt  # the C library already loaded (find_library would fork)
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def tune_allocator() -> bool:
    """Apply `SETTINGS` to this process's allocator (once per process; cheap to call again).

    Returns whether the settings are in force (False where glibc's ``mallopt`` is missing). A
    forked child inherits them; it is still safe to call in the child.
    """
    global _tuned_pid
    if _tuned_pid == os.getpid():
        return True
    mallopt = _mallopt()
    if mallopt is None:
        return False
    ok = all(mallopt(param, value) == 1 for param, value in SETTINGS.items())
    if ok:
        _tuned_pid = os.getpid()
    return ok
