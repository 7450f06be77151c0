"""The Makefile's targets work as the README says: `make install` on a fresh clone (no .venv yet),
`make lint` after `make test` (ruff comes with the test extras)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def dry_run(tmp_path: Path, target: str) -> list[str]:
    """The commands `make TARGET` would run in a fresh clone (a folder with no .venv)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["install", "lint", "test"])
def test_targets_create_the_venv_on_a_fresh_clone(tmp_path, target):
    lines = dry_run(tmp_path, target)
    create = next(i for i, line in enumerate(lines) if "-m venv .venv" in line)
    tools = next(i for i, line in enumerate(lines) if "'.[test]'" in line)
    assert create < tools  # the venv first, then the test extras (pytest, ruff) into it
    last = lines[-1]
    expected = {"install": "'.[dev]'", "lint": "-m ruff check", "test": "-m pytest"}[target]
    assert last.startswith(".venv/bin/python") and expected in last


def test_ruff_is_a_test_extra():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(d.startswith("ruff") for d in extras["test"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_then_lint_on_a_real_fresh_clone(tmp_path):
    """About a minute: a clone of the committed tree, `make install`, then `make lint`."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    for target in ("install", "lint"):
        done = subprocess.run(["make", target], cwd=clone, capture_output=True, text=True)
        assert done.returncode == 0, f"make {target}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert (clone / ".venv" / "bin" / "azulsim").exists()
