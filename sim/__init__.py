"""AzulSim rules core: batch engine, reference engine, bots and statistics.

This package knows nothing of Celery, Redis or gRPC (docs/design.md, "Parts and the flow of a job").
"""

RULES_VERSION = "azul-rules-2026.1"
