"""The ``azulsim`` command line (DESIGN.md §7), one module per group of commands:

- `common`: errors, the job-spec options, the client options, the client and gRPC error handling
  (every command module imports it; it imports none of them)
- `output`: statistics as table, JSON or CSV; job lines; progress displays
- `simulate`: ``simulate`` (in-process, `sim.local`)
- `compare`: ``compare`` (two bots head to head or against a field, with a stopping rule)
- `jobs`: ``submit``, ``watch``, ``stats``, ``cancel``, ``jobs``, ``bots``, ``replay`` (API calls)
- `processes`: ``serve``, ``worker``; `local`: ``up``, ``demo`` (the stack of `service.stack`)
- `report`: ``report`` (plots of `service.report`)
- `app`: the parser over all of them and `main`, the console script
"""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
