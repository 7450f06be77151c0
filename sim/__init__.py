"""AzulSim rules core: batch engine, reference engine, bots and statistics.

This package knows nothing of Celery, Redis or gRPC (DESIGN.md §1).
"""

RULES_VERSION = "azul-rules-2026.1"
