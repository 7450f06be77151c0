"""Where numba caches the compiled engine: a folder named by a hash of the compiled code's sources.

numba keys a cached function by its own source file's time stamp only, so an edit of
`sim/rules/compiled.py` left the search kernels (`sim/bots/kernels.py`, which inline its functions)
to load stale machine code, and it writes next to the sources by default, which a read-only root
file system refuses (numba then fails at import: ``cannot cache function ...: no locator
available``). Here the cache lives in ``<base>/<key>``: ``key`` hashes every module whose code or
tables are compiled in (`SOURCES`) with the Python and numba versions, so any edit selects a new,
empty folder, and ``base`` is ``$NUMBA_CACHE_DIR`` (the image sets it and fills it at build time),
else ``~/.cache/azulsim-kernels``. When that folder cannot be written (a read-only root), its files,
if any were built into the image, are copied once to the temporary directory (``/tmp``, an
``emptyDir`` in the Kubernetes manifests), and the cache is used from there.

Inside that folder numba would file each module's kernels under a hash of its folder's absolute
path, so another checkout of the same code (a fresh clone, a CI run, a worktree) compiled
everything again. `SharedLocator` files them under the module's path in the repository instead, and
stamps them with the file's content, so every checkout of the same sources shares one cache.

`configure` runs before numba compiles or loads anything here (`sim.rules.compiled` calls it first).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import sim

# The folder that holds the package `sim`: `SOURCES` are paths from there, as in the repository.
ROOT = Path(sim.__file__).resolve().parent.parent
# Modules compiled into the engine's machine code: their functions, or the tables numba freezes.
SOURCES = (
    "sim/rules/kernel_cache.py",
    "sim/rules/compiled.py",
    "sim/rules/state.py",
    "sim/rules/constants.py",
    "sim/rules/tables.py",
    "sim/rules/actions.py",
    "sim/rules/rng.py",
    "sim/rules/rulesets.py",  # the rule table's indices (`RULE_*`, `MARKER_*`)
    "sim/bots/kernels.py",
    "sim/bots/features.py",
)


def source_key() -> str:
    """16 hex digits of a hash of `SOURCES`, the Python version and numba's."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode())
        digest.update((ROOT / name).read_bytes())
    digest.update(sys.version.encode())
    digest.update(metadata.version("numba").encode())
    return digest.hexdigest()[:16]


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            return True
    except OSError:
        return False


def cache_dir() -> Path:
    """The folder for this code's cache (see the module docstring)."""
    key = source_key()
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.expanduser("~/.cache/azulsim-kernels")
    built = Path(base) / key
    if _writable(built):
        return built
    spare = Path(tempfile.gettempdir()) / f"azulsim-kernels-{os.getuid()}" / key
    if built.is_dir() and not spare.exists():
        # Built into a read-only image: copied whole (the index files and the code they name).
        staging = spare.with_name(f"{key}.{os.getpid()}")
        shutil.copytree(built, staging, copy_function=shutil.copyfile)
        for folder, _dirs, _files in os.walk(staging):  # copytree kept the folders' read-only mode
            os.chmod(folder, 0o755)
        try:
            staging.rename(spare)  # atomic: a process starting beside this one sees all or none
        except OSError:  # another process copied it first
            shutil.rmtree(staging, ignore_errors=True)
    spare.mkdir(parents=True, exist_ok=True)
    return spare


def _locator_class():
    """numba's locator for `numba.config.CACHE_DIR`, with the folder's path left out."""
    from numba.core.caching import UserProvidedCacheLocator

    class SharedLocator(UserProvidedCacheLocator):
        """Kernels of ``ROOT/sim/rules/compiled.py`` in ``<CACHE_DIR>/sim_rules``, keyed by the
        file's content: numba files them by a hash of the folder's absolute path, and some of its
        versions stamp them with the file's time stamp, which a fresh clone changes too."""

        @classmethod
        def get_suitable_cache_subpath(cls, py_file):
            folder = Path(py_file).resolve().parent
            try:
                return "_".join(folder.relative_to(ROOT).parts) or "root"
            except ValueError:  # not this repository's code: numba's own naming
                return super().get_suitable_cache_subpath(py_file)

        def get_source_stamp(self):
            return hashlib.sha256(Path(self._py_file).read_bytes()).hexdigest()

    return SharedLocator


# the folder `configure` chose (`sim.rules.compile_once` locks there)
configured: Path | None = None


def configure() -> Path:
    """Point numba's cache at `cache_dir` (before any function here is compiled or loaded)."""
    global configured
    import numba
    from numba.core.caching import CacheImpl

    path = cache_dir()
    numba.config.CACHE_DIR = str(path)
    if not any(c.__name__ == "SharedLocator" for c in CacheImpl._locator_classes):
        CacheImpl._locator_classes.insert(0, _locator_class())
    configured = path
    return path
