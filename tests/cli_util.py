"""Drive the installed ``azulsim`` console script as a user would: a child process with its
output on pipes (or on a pipe whose reader has gone), against a server on a free port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import generous

REPO = Path(__file__).resolve().parent.parent
AZULSIM = Path(sys.executable).with_name("azulsim")  # the console script of this venv


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no AZULSIM_* settings of the test run leak in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZULSIM_")}
    env.update(extra)
    return env


def azulsim(
    *args: str, check: bool = True, timeout: float = 120, **kw
) -> subprocess.CompletedProcess:
    """``azulsim ARGS`` with stdout and stderr on pipes; `check`: exit status 0 expected."""
    kw.setdefault("env", user_env())
    done = subprocess.run(
        [str(AZULSIM), *args], capture_output=True, text=True, timeout=generous(timeout), **kw
    )
    if check:
        assert done.returncode == 0, f"azulsim {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done


def azulsim_into_closed_pipe(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``azulsim ARGS`` writing into a pipe whose reader has already gone (``| head`` that has
    read enough): the first write fails with EPIPE. Returns the status and stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [str(AZULSIM), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=generous(timeout),
            env=user_env(),
        )
    finally:
        os.close(write)
    return done


@pytest.fixture
def in_process_server(azulsim_env):
    """The address of an API server on this test's Redis (no worker: jobs stay QUEUED)."""
    from tests.stack_util import api_thread

    with api_thread(azulsim_env) as server:
        yield server.address
