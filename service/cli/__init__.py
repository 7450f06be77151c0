"""The ``azulsim`` command line (README.md), one module per group of commands:

- `common`: errors, the job-spec options, the client options, the client and gRPC error handling
  (every command module imports it; it imports none of them)
- `output`: statistics as table, JSON or CSV; jobs as lines, table cells and plain JSON
- `progress`: the progress displays (a `rich` bar on a terminal, a line every 2 s otherwise) and
  following a job to its end
- `simulate`: ``simulate`` (in-process, `sim.jobs.local`)
- `compare`: ``compare`` (two bots head to head or against a field, with a stopping rule)
- `jobs`: ``submit``, ``watch``, ``stats``, ``cancel``, ``jobs``, ``bots`` (API calls)
- `replay`: ``replay`` (one game as text a person can check, or plain JSON)
- `processes`: ``serve``, ``worker``; `local`: ``up``, ``demo`` (the stack of `service.stack`)
- `report`: ``report`` (plots of `service.report`)
- `app`: the parser over all of them and `main`, the console script
"""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
