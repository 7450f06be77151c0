"""What a newcomer sees first, through real processes: `azulsim up` serving until SIGTERM (and
leaving nothing behind), and the progress bars of `simulate` and `submit --watch` drawn on a
terminal (a pseudo-terminal here) but never into a pipe.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from service.stack import free_port
from tests.waits import generous, wait_until

REPO = Path(__file__).resolve().parent.parent


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZULSIM_")}
    env["PYTHONPATH"] = str(REPO)
    return env


def run_on_terminal(argv: list[str], timeout: float = 120.0) -> tuple[int, str, str]:
    """Run `argv` with stderr on a pseudo-terminal and stdout on a pipe: (rc, stdout, terminal)."""
    master, slave = pty.openpty()
    out = tempfile.TemporaryFile()  # not a pipe: a full pipe would stall the child
    proc = subprocess.Popen(
        argv, env=clean_env(), stdout=out, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    seen = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    out.seek(0)
    return proc.returncode, out.read().decode(), seen.decode(errors="replace")


def test_simulate_draws_a_progress_bar_on_a_terminal_only():
    argv = [sys.executable, "-m", "service", "simulate", "--players", "2"]
    argv += ["--bots", "greedy,random", "--games", "3000", "--workers", "1", "--json"]
    rc, out, terminal = run_on_terminal(argv)
    assert rc == 0, terminal
    assert "\r\x1b[2K" in terminal  # the line is redrawn in place
    assert "games/s" in terminal and "ETA" in terminal
    assert "3,000/3,000 games" in terminal  # the last redraw shows the whole job done
    assert out.lstrip().startswith("{") and "\r" not in out  # stdout stays clean JSON

    piped = subprocess.run(
        argv, env=clean_env(), capture_output=True, text=True, timeout=generous(120)
    )
    assert piped.returncode == 0, piped.stderr
    assert "games/s" not in piped.stderr and "\r" not in piped.stderr


def test_up_serves_a_job_and_stops_everything_on_sigterm():
    port = free_port()
    up = subprocess.Popen(
        [sys.executable, "-m", "service", "up", "--listen", f"127.0.0.1:{port}", "--workers", "1"]
        + ["--ephemeral", "--web", "127.0.0.1:0"],  # a free port: tests run side by side
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = []
        wait_until(
            lambda: banner.append(up.stdout.readline()) or "Ctrl-C" in banner[-1],
            90,
            "`azulsim up` to print its banner",
            interval=0,
        )
        text = "".join(banner)
        assert f"API      127.0.0.1:{port}" in text and "(private; stops with this command)" in text
        stack = psutil.Process(up.pid).children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in stack)
        assert "redis-server" in names and "worker" in names and "serve" in names

        rc, out, terminal = run_on_terminal(
            [sys.executable, "-m", "service", "submit", "--server", f"127.0.0.1:{port}"]
            + ["--bots", "greedy,random", "--games", "2000", "--watch"]
        )
        assert rc == 0, terminal
        assert "games/s" in terminal and "ETA" in terminal and "SUCCEEDED" in terminal
        assert "\r\x1b[2K" in terminal  # redrawn in place, not a line per update

        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=generous(30)) == 0
        assert "stopping" in up.stderr.read()
        alive = psutil.wait_procs(stack, timeout=10)[1]
        assert not alive, f"still running after `up` stopped: {[p.pid for p in alive]}"
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
