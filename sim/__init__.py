"""AzulSim's simulation core, read top-down (docs/engine.md, "The packages of sim/"):

- `sim.rules`: the game: rule sets, the reference engine and the compiled engine that plays it;
- `sim.bots`: the bots, built-in and plugged in;
- `sim.stats`: exact counters of finished games and the figures derived from them;
- `sim.jobs`: the job model and how a job's games are played, chunked, stopped and run;
- `sim.experiments`: jobs built for a research question (sweeps, tournaments, tuning, balance).

This package knows nothing of Celery, Redis or gRPC (docs/design.md, "Parts and the flow of a job").
"""

RULES_VERSION = "azul-rules-2026.1"
