"""`azulsim` commands run in the bench's own process (no subprocess start per command)."""

from __future__ import annotations

import contextlib
import io
import json


def azulsim(argv: list[str]) -> dict:
    """Run one ``azulsim`` command in this process; its ``--json`` output."""
    from service.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main([*argv, "--json"])
    if status:
        raise SystemExit(f"azulsim {' '.join(argv)} exited {status}")
    return json.loads(buf.getvalue())
