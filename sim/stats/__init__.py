"""Job statistics: exact integer counters (`count`, `merge`) and figures derived on read (`derive`).

See `sim.stats.counters` for the counter keys and docs/statistics.md for the JSON document.
"""

from .counters import HISTOGRAMS, Counters, count, merge, merge_all
from .derive import SCHEMA, derive, group_rows, moments, wilson

__all__ = [
    "HISTOGRAMS",
    "SCHEMA",
    "Counters",
    "count",
    "derive",
    "group_rows",
    "merge",
    "merge_all",
    "moments",
    "wilson",
]
