"""Compiling numba kernels once per machine, not once per process that starts at the same time.

Processes that start together (a worker's pool, test runners) find no cached machine code; each
would compile and race to write the same cache files (numba has open issues about that race).
`under_lock` runs a warm-up that compiles or loads the kernels one process at a time: the first
compiles and saves them, the others load what it saved.

The lock is the cache folder's own (`sim.rules.kernel_cache`: one per version of the compiled
sources), and held only until a warm-up has once completed there: then every kernel it compiles is
in the cache, and loading it (read-only; numba replaces its files whole) needs no lock. Were loads
locked too, processes starting together would wait for each other's loads one by one: on a busy
two-core machine a pool child waited half a minute that way before its first chunk could play.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import kernel_cache

_depth = 0  # warm-ups running in this process: a nested one (a module's warm-up playing games
# through the engine's) runs under the lock already held; a second flock would wait on it


def _folder() -> Path:
    """The configured cache folder, else this user's temporary directory."""
    return kernel_cache.configured or Path(tempfile.gettempdir())


def done_marker(warm: Callable[[], None]) -> Path:
    """The file that says `warm` once completed in the cache folder, which is one version of the
    compiled sources (`kernel_cache.source_key`) shared by every checkout of them. `warm`'s own
    module chooses the argument types it compiles for, so the marker's name hashes that file too."""
    name = re.sub(r"[^A-Za-z0-9_.]+", "_", f"{warm.__module__}.{warm.__qualname__}")
    stamp = hashlib.sha1()
    try:
        stamp.update(Path(sys.modules[warm.__module__].__file__).read_bytes())
    except (KeyError, TypeError, OSError):  # no file to read: the name alone
        pass
    return _folder() / "warmed" / stamp.hexdigest()[:16] / name


def under_lock(warm: Callable[[], None]) -> None:
    """Run `warm` (calls that compile every kernel with the argument types of real calls) holding
    the cache folder's kernel lock, unless it once completed in that folder (`done_marker`)."""
    global _depth
    marker = done_marker(warm)
    if _depth or marker.exists():
        _depth += 1
        try:
            warm()
        finally:
            _depth -= 1
        return
    lock = _folder() / f"azulsim-kernels-{os.getuid()}.lock"
    try:
        held = open(lock, "a")  # noqa: SIM115 (held for the compile, closed below)
    except OSError:  # no writable folder: compile unlocked
        held = None
    try:
        if held is not None:
            fcntl.flock(held, fcntl.LOCK_EX)
        _depth += 1
        try:
            warm()
        finally:
            _depth -= 1
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:  # a folder that cannot be written: later processes lock, as before
            pass
    finally:
        if held is not None:
            held.close()  # releases the lock
