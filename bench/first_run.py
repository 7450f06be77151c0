"""The README's first command from a fresh clone: seconds until `make demo` has printed statistics.

Clones this repository (its committed HEAD) into a temporary directory, runs ``make demo`` there
(venv creation and install included: pip's cache is whatever this machine has) and records when
the statistics table appeared and when the command ended. Target: statistics within 60 s.
Writes bench/results/first_run.json::

    python bench/first_run.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "By bot"  # the first line of the statistics table `azulsim demo` prints


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "azulsim"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AZULSIM_", "VIRTUAL_ENV"))}
        began = time.monotonic()
        proc = subprocess.Popen(
            ["make", "demo"],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        statistics_s = None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if statistics_s is None and MARK in line:
                statistics_s = time.monotonic() - began
        rc = proc.wait()
        total_s = time.monotonic() - began
    if rc != 0 or statistics_s is None:
        sys.stderr.write("".join(lines[-40:]))
        print(f"make demo failed (exit {rc})", file=sys.stderr)
        return 1
    result = {
        "benchmark": "first_run",
        "command": "make demo (fresh clone, venv and install included)",
        "statistics_after_s": round(statistics_s, 1),
        "exit_after_s": round(total_s, 1),
        "target_s": 60,
        "cores": os.cpu_count(),
    }
    out = ROOT / "bench" / "results" / "first_run.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
