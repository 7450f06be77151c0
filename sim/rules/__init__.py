"""The rules of Azul: the game's tables and rule sets, the readable reference engine,
the compiled batch engine that plays every game, and the checks that hold one to the other.

Read top-down: `constants`, `actions`, `rulesets`, `rng`, `state` (with `tables`), `records`;
`reference` (one game, plainly); `compiled` (the rules, compiled) and `engine` (its batch
calls), with `kernel_cache` and `compile_once` (where and when it compiles); `scoring` (the
rules vectors' helpers) and `goldens` (recorded games). docs/engine.md says where each rule
lives.
"""
