"""Loading a bench script (bench/NAME.py) as a module, for tests that call its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def bench_script(name: str):
    """bench/`name`.py as the module ``bench_<name>``, registered in ``sys.modules`` (a dataclass
    of the script looks its module up there)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
