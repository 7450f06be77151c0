"""The compiled engine's cache (sim/rules/kernel_cache.py, sim/rules/compile_once.py): the engine
(sim/rules/compiled.py) and the search bots' play-outs (sim/bots/kernels.py).

Processes that start together (a worker's pool, test runners) find no cached machine code; one
compiles and writes numba's cache while the others wait on the lock, then load it. Each must play
the same games as any other process. The cache's folder is named by a hash of the compiled
modules' sources, so an edit of any of them never loads stale code; and a cache built into a
read-only folder (the image, under the Kubernetes manifests' read-only root) is used from a copy
in the temporary directory, with nothing compiled.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sim.rules import kernel_cache
from tests.waits import generous

ROOT = Path(__file__).resolve().parent.parent

PLAY = """
from sim.jobs import self_play
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
for wall in ("coloured", "gray"):
    records = play_games(Configuration(2, ["search", "rollout"], wall=wall), 3, 0, 20)
    print(int(records.scores.sum()), int(records.turns.sum()))
    records = play_games(Configuration(2, ["random"] * 2, wall=wall), 3, 0, self_play.MIN_GAMES)
    print(int(records.scores.sum()), int(records.turns.sum()))
"""


# Three processes compiling numba's kernels at once: minutes of CPU on a busy two-core machine.
@pytest.mark.timeout(1800)
def test_processes_starting_together_compile_once_and_play_the_same_games(tmp_path):
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "NUMBA_DEBUG_CACHE": "1",  # numba says what it saves to and loads from its cache
        "PYTHONPATH": str(ROOT),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PLAY], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    games, saved = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=generous(240))
        assert proc.returncode == 0, err.decode()[-2000:]
        assert b"Warning" not in err, err.decode()[-2000:]
        lines = out.decode().splitlines()
        games.append([line for line in lines if not line.startswith("[cache]")])
        saved += [line.split("data saved to")[1] for line in lines if "data saved to" in line]
    assert games[0] and games.count(games[0]) == 3
    # Each kernel was compiled and saved by one process; the others loaded what it saved.
    assert len(saved) == len(set(saved)), saved
    names = {Path(path.strip(" '\"")).name.split("-")[0] for path in saved}
    engine = {"compiled.play_actions", "compiled.end_rounds", "compiled.play_games"}
    assert engine | {"kernels.play_picks"} <= names, names
    # In the folder of this code's key, under the configured base.
    key = kernel_cache.source_key()
    assert all(f"{tmp_path / 'cache' / key}" in path for path in saved), saved


def _numba_imported_after(*calls: str) -> list[bool]:
    """In a fresh process, whether numba is imported after each of the `calls` (in turn)."""
    script = "import sys\nfrom sim.jobs import self_play\nfrom sim.bots import make_bot\n"
    script += "from sim.jobs.play import play_games\nfrom sim.jobs.spec import Configuration as C\n"
    script += "".join(f"{call}\nprint('numba' in sys.modules)\n" for call in calls)
    return [
        line == "True"
        for line in subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=generous(240),
            check=True,
        ).stdout.split()
    ]


@pytest.mark.timeout(1800)
def test_specs_and_bots_do_without_numba_until_a_game_is_played():
    # numba costs about 50 MB and 0.3 s to import (docs/engine.md): the API server and spec
    # validation do without it; every game is played by the compiled engine.
    assert _numba_imported_after(
        "make_bot('search'), make_bot('rollout'), make_bot('greedy')",
        "play_games(C(2, ['greedy', 'heuristic']), 1, 0, 10)",
    ) == [False, True]


def test_every_compiled_module_is_in_the_cache_key():
    # The modules sim/rules/compiled.py and sim/bots/kernels.py import from sim, and so compile in.
    found = set()
    for name in ("sim/rules/compiled.py", "sim/bots/kernels.py"):
        tree = ast.parse((ROOT / name).read_text())
        here = (ROOT / name).parent
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.parent
                target = base.joinpath(*(node.module or "").split(".")) if node.module else base
                found.add(str(target.with_suffix(".py").relative_to(ROOT)))
    assert found <= set(kernel_cache.SOURCES), found - set(kernel_cache.SOURCES)


def test_an_edit_of_any_compiled_module_selects_another_cache(tmp_path, monkeypatch):
    copy = tmp_path
    for name in kernel_cache.SOURCES:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, copy / name)
    monkeypatch.setattr(kernel_cache, "ROOT", copy)
    keys = {kernel_cache.source_key()}
    assert keys == {kernel_cache.source_key()}  # the same sources, the same folder
    for name in kernel_cache.SOURCES:
        with open(copy / name, "a") as f:
            f.write("\n# an edit\n")
        keys.add(kernel_cache.source_key())
    assert len(keys) == len(kernel_cache.SOURCES) + 1


PLAY_SMALL = """
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
for bots in (["random", "greedy"], ["rollout", "random"]):
    records = play_games(Configuration(2, bots, wall="gray"), 3, 0, 6)
    print(int(records.scores.sum()), int(records.turns.sum()))
"""


PLAY_RANDOM = """
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
print(int(play_games(Configuration(2, ["random"] * 2, wall="gray"), 3, 0, 6).scores.sum()))
"""


def _run_as_user(env: dict, code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`code` in a fresh process, as another user when this one is root (root writes anywhere,
    so a folder of mode 0555 is read-only only to another user); both steps of a test run this
    way, so that both see the same interpreter (its version is part of the cache's key)."""
    run_as = []
    if os.geteuid() == 0:
        run_as = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run(
        [*run_as, sys.executable, "-c", code],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _read_only(path: Path) -> None:
    for folder, _dirs, files in os.walk(path):
        for name in files:
            os.chmod(Path(folder) / name, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(folder, 0o555)


def _open_dir() -> Path:
    """A fresh folder every user may enter (pytest's own temporary folders are the user's only,
    and the read-only runs may be another user's)."""
    path = Path(tempfile.mkdtemp(prefix="azulsim-cache-test-"))
    os.chmod(path, 0o755)
    return path


def _remove(path: Path) -> None:
    for folder, _dirs, _files in os.walk(path):
        os.chmod(folder, 0o755)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def open_dir():
    path = _open_dir()
    yield path
    _remove(path)


def _child_user() -> int:
    return 65534 if os.geteuid() == 0 else os.getuid()


# Session-wide, not module-wide: xdist runs other modules' tests between the tests of this group,
# and pytest tears a module fixture down whenever the next test is another module's.
@pytest.fixture(scope="session")
def compiled_by_the_child():
    """One compile from nothing, by the read-only runs' user and interpreter: an empty read-only
    cache folder, so the child compiles into its temporary directory. The three tests below read
    it, so the module compiles from nothing twice (here and in the first test), not four times."""
    path = _open_dir()
    built, spare = path / "image-cache", path / "tmp"
    built.mkdir()
    spare.mkdir()
    os.chmod(spare, 0o777)
    _read_only(built)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(built),
        "PYTHONPATH": str(ROOT),
        "HOME": "/",
        "TMPDIR": str(spare),
    }
    yield built, spare, _run_as_user(env, PLAY_SMALL)
    _remove(path)


@pytest.mark.xdist_group("kernel-cache-child")
def test_an_empty_read_only_cache_folder_compiles_into_the_temporary_directory(
    compiled_by_the_child,
):
    built, spare, run = compiled_by_the_child
    assert run.returncode == 0, run.stderr[-3000:]
    assert "no locator available" not in run.stderr
    assert list(built.iterdir()) == []
    compiled = list((spare / f"azulsim-kernels-{_child_user()}").iterdir())
    assert len(compiled) == 1 and any(compiled[0].rglob("*.nbi")), compiled


@pytest.mark.xdist_group("kernel-cache-child")
def test_a_cache_built_into_a_read_only_folder_plays_without_compiling(
    open_dir, compiled_by_the_child
):
    _, first_spare, first = compiled_by_the_child
    assert first.returncode == 0, first.stderr[-2000:]
    # The image's build step: the cache filled where the image keeps it. Here it is the one the
    # child compiled (one key, of the child's Python), copied there; numba's temporary files
    # (written under another name, then renamed) are left behind.
    (compiled,) = (first_spare / f"azulsim-kernels-{_child_user()}").iterdir()
    built, spare = open_dir / "image-cache", open_dir / "tmp"
    shutil.copytree(compiled, built / compiled.name, ignore=shutil.ignore_patterns("*.tmp.*"))
    _read_only(built)
    spare.mkdir()
    os.chmod(spare, 0o777)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(built),
        "PYTHONPATH": str(ROOT),
        "HOME": "/",
        "TMPDIR": str(spare),
        "NUMBA_DEBUG_CACHE": "1",
    }
    run = _run_as_user(env, PLAY_SMALL)
    assert run.returncode == 0, run.stderr[-3000:]
    played = [line for line in run.stdout.splitlines() if not line.startswith("[cache]")]
    assert played == first.stdout.splitlines()
    assert "data saved to" not in run.stdout and "data loaded from" in run.stdout
    copied = list((spare / f"azulsim-kernels-{_child_user()}").iterdir())  # one key
    assert len(copied) == 1 and any(copied[0].rglob("*.nbi")), copied


@pytest.mark.xdist_group("kernel-cache-child")
def test_another_checkout_of_the_same_sources_loads_the_cache_without_compiling(
    open_dir, compiled_by_the_child
):
    # A fresh clone, a CI run or a worktree: the same sources at another path, with another time
    # stamp on every file, find the cache that the first checkout compiled.
    _, spare, first = compiled_by_the_child
    assert first.returncode == 0, first.stderr[-2000:]
    clone = open_dir / "clone"
    shutil.copytree(ROOT / "sim", clone / "sim", ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _dirs, _files in os.walk(clone):
        os.chmod(folder, 0o755)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(spare / f"azulsim-kernels-{_child_user()}"),
        "PYTHONPATH": str(clone),
        "HOME": "/",
        "NUMBA_DEBUG_CACHE": "1",
    }
    # From the clone's folder: `python -c` looks in the working directory first.
    code = "import sim\nprint('from', sim.__file__)\n" + PLAY_SMALL
    run = _run_as_user(env, code, cwd=clone)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0] == f"from {clone / 'sim' / '__init__.py'}", lines[0]
    played = [line for line in lines[1:] if not line.startswith("[cache]")]
    assert played == first.stdout.splitlines()
    assert "data saved to" not in run.stdout and "data loaded from" in run.stdout


def test_a_completed_warm_up_loads_without_the_lock(tmp_path):
    # Once a warm-up completed for these sources (its marker), processes load the cache side by
    # side: one started while the lock is held (as by a compile of other code) plays at once.
    import fcntl

    from sim.rules import compile_once, engine

    engine.kernels()  # compiled or loaded here, under the lock if this cache had no marker yet
    marker = compile_once.done_marker(engine._warm)
    assert marker.exists(), marker
    lock = kernel_cache.configured / f"azulsim-kernels-{os.getuid()}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run = subprocess.run(
            [sys.executable, "-c", PLAY_RANDOM],
            env={**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_DEBUG_CACHE": "1"},
            capture_output=True,
            text=True,
            timeout=generous(120),
        )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "data loaded from" in run.stdout and "data saved to" not in run.stdout
