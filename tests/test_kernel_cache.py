"""The compiled engine's cache (sim/rules/kernel_cache.py, sim/rules/compile_once.py): the engine
(sim/rules/compiled.py) and the search bots' play-outs (sim/bots/kernels.py).

Processes that start together (a worker's pool, test runners) find no cached machine code; one
compiles and writes numba's cache while the others wait on the lock, then load it. Each must play
the same games as any other process. The cache's folder is named by a hash of the compiled
modules' sources, so an edit of any of them never loads stale code; and a cache built into a
read-only folder (the image, under the Kubernetes manifests' read-only root) is used from a copy
in the temporary directory, with nothing compiled. Another checkout of the same sources (a fresh
clone, a CI run) loads the cache the first one compiled.

The suite compiles from nothing once on purpose: in `compiled_together` (three processes, a
read-only and empty cache folder), which the tests of group "kernel-cache-child" read. Everything
else uses the user's cache folder, compiled by the first run on a machine and loaded afterwards.
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

# Every compiled path: search and rollout, random self-play (whole games compiled) and a line-up
# of random and greedy (compiled picks), on both walls.
PLAY = """
from sim.jobs import self_play
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
for wall in ("coloured", "gray"):
    records = play_games(Configuration(2, ["search", "rollout"], wall=wall), 3, 0, 20)
    print(int(records.scores.sum()), int(records.turns.sum()))
    records = play_games(Configuration(2, ["random"] * 2, wall=wall), 3, 0, self_play.MIN_GAMES)
    print(int(records.scores.sum()), int(records.turns.sum()))
    records = play_games(Configuration(2, ["random", "greedy"], wall=wall), 3, 0, 6)
    print(int(records.scores.sum()), int(records.turns.sum()))
"""


def _played(run: subprocess.CompletedProcess) -> list[str]:
    """The games' lines of a run of `PLAY` (numba's cache messages left out)."""
    return [line for line in run.stdout.splitlines() if not line.startswith("[cache]")]


# Three processes compiling numba's kernels at once: minutes of CPU on a busy two-core machine.
@pytest.mark.xdist_group("kernel-cache-child")
@pytest.mark.timeout(1800)
def test_processes_starting_together_compile_once_and_play_the_same_games(compiled_together):
    _, spare, runs = compiled_together
    games, saved = [], []
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert "Warning" not in run.stderr, run.stderr[-2000:]
        games.append(_played(run))
        lines = run.stdout.splitlines()
        saved += [line.split("data saved to")[1] for line in lines if "data saved to" in line]
    assert games[0] and games.count(games[0]) == 3
    # Each kernel was compiled and saved by one process; the others loaded what it saved.
    assert len(saved) == len(set(saved)), saved
    names = {Path(path.strip(" '\"")).name.split("-")[0] for path in saved}
    engine = {"compiled.play_actions", "compiled.end_rounds", "compiled.play_games"}
    assert engine | {"kernels.play_picks"} <= names, names
    # In the folder of this code's key (of the children's Python), under the temporary directory.
    key = _run_as_user(
        {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/"},
        "from sim.rules import kernel_cache\nprint(kernel_cache.source_key())",
    ).stdout.strip()
    folder = spare / f"azulsim-kernels-{_child_user()}" / key
    assert all(str(folder) in path for path in saved), (folder, saved)


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


PLAY_RANDOM = """
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration
print(int(play_games(Configuration(2, ["random"] * 2, wall="gray"), 3, 0, 6).scores.sum()))
"""


def _as_user() -> list[str]:
    """The command prefix that runs a process as another user when this one is root (root writes
    anywhere, so a folder of mode 0555 is read-only only to another user). Every child of these
    tests runs this way, so that all of them see the same interpreter (its version is part of the
    cache's key; as another user, ``.venv/bin/python`` may resolve to another Python)."""
    if os.geteuid() == 0:
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return []


def _run_as_user(env: dict, code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`code` in a fresh process, as `_as_user`."""
    return subprocess.run(
        [*_as_user(), sys.executable, "-c", code],
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
def compiled_together():
    """The suite's one compile from nothing: three processes started together by the read-only
    runs' user and interpreter, each playing `PLAY`, with an empty read-only cache folder, so they
    compile into their temporary directory. The tests of group "kernel-cache-child" read it."""
    path = _open_dir()
    built, spare = path / "image-cache", path / "tmp"
    built.mkdir()
    spare.mkdir()
    os.chmod(spare, 0o777)
    _read_only(built)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(built),
        "NUMBA_DEBUG_CACHE": "1",  # numba says what it saves to and loads from its cache
        "PYTHONPATH": str(ROOT),
        "HOME": "/",
        "TMPDIR": str(spare),
    }
    procs = [
        subprocess.Popen(
            [*_as_user(), sys.executable, "-c", PLAY],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        runs.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    yield built, spare, runs
    _remove(path)


@pytest.mark.xdist_group("kernel-cache-child")
def test_an_empty_read_only_cache_folder_compiles_into_the_temporary_directory(
    compiled_together,
):
    built, spare, runs = compiled_together
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "no locator available" not in run.stderr
    assert list(built.iterdir()) == []
    compiled = list((spare / f"azulsim-kernels-{_child_user()}").iterdir())
    assert len(compiled) == 1 and any(compiled[0].rglob("*.nbi")), compiled


@pytest.mark.xdist_group("kernel-cache-child")
def test_a_cache_built_into_a_read_only_folder_plays_without_compiling(open_dir, compiled_together):
    _, first_spare, (first, *_) = compiled_together
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
    run = _run_as_user(env, PLAY)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _played(run) == _played(first)
    assert "data saved to" not in run.stdout and "data loaded from" in run.stdout
    copied = list((spare / f"azulsim-kernels-{_child_user()}").iterdir())  # one key
    assert len(copied) == 1 and any(copied[0].rglob("*.nbi")), copied


@pytest.mark.xdist_group("kernel-cache-child")
def test_another_checkout_of_the_same_sources_loads_the_cache_without_compiling(
    open_dir, compiled_together
):
    # A fresh clone, a CI run or a worktree: the same sources at another path, with another time
    # stamp on every file, find the cache that the first checkout compiled.
    _, spare, (first, *_) = compiled_together
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
    code = "import sim\nprint('from', sim.__file__)\n" + PLAY
    run = _run_as_user(env, code, cwd=clone)
    assert run.returncode == 0, run.stderr[-3000:]
    played = _played(run)
    assert played[0] == f"from {clone / 'sim' / '__init__.py'}", played[0]
    assert played[1:] == _played(first)
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
