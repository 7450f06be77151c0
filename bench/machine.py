"""What the benchmark scripts record about the machine their figures come from, and CPU time."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name: figures differ between the machines a session may get."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """The ``machine`` section of a results file: CPU model, cores, Python and numpy versions."""
    import numpy as np

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def cpu_seconds(children: bool = True) -> float:
    """User + system CPU seconds of this process and, with `children`, of its waited-for child
    processes (pool processes, subprocesses): games per CPU-second hold on a busy machine where
    games per wall second do not."""
    who = [resource.RUSAGE_SELF] + ([resource.RUSAGE_CHILDREN] if children else [])
    return sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime for w in who)
