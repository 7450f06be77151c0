"""Registers the built-in bots (imported lazily by `sim.bots.registry`)."""

from __future__ import annotations

from .alphabeta import PARAMS as ALPHABETA_PARAMS
from .alphabeta import alphabeta_cost, make_alphabeta
from .deep import PARAMS as DEEP_PARAMS
from .deep import deep_cost, make_deep
from .external import register_builtin as register_external
from .greedy import GreedyBot
from .heuristic import PARAMS as HEURISTIC_PARAMS
from .heuristic import make_heuristic
from .random_bot import RandomBot
from .registry import register_bot
from .restricted import PARAMS as RESTRICTED_PARAMS
from .restricted import check as restricted_check
from .restricted import cost as restricted_cost
from .restricted import make_restricted
from .rollout import PARAMS as ROLLOUT_PARAMS
from .rollout import make_rollout
from .search import PARAMS as SEARCH_PARAMS
from .search import make_search, search_cost

register_bot(
    "random",
    "Uniform over the legal action ids; gray-wall columns uniform over the legal ones.",
    lambda params: RandomBot(),
    source="builtin",
    cost=0.6,
)

register_bot(
    "greedy",
    "Most tiles onto a pattern line, then fewest objects to the floor, remaining ties uniformly "
    "at random; gray-wall column with the most adjacency points, ties leftmost.",
    lambda params: GreedyBot(),
    source="builtin",
)

register_bot(
    "heuristic",
    "Weighted one-move evaluation: line completion with adjacency points, progress to end "
    "bonuses, floor penalty, first-player marker, tiles pushed to the centre (docs/bots.md).",
    make_heuristic,
    HEURISTIC_PARAMS,
    source="builtin",
    cost=2.5,
)

register_bot(
    "rollout",
    "Search: the heuristic's best picks, each played out to the end of the round with the "
    "heuristic for every seat; plays the one with the best score margin (docs/bots.md).",
    make_rollout,
    ROLLOUT_PARAMS,
    source="builtin",
    # Time per game over greedy's, an upper bound over 2-4 players: measured (4 players, the
    # dearest) 3.3x at width 1, 21x at the default 4, 52x at 12.
    cost=lambda params: 5.0 + 5.5 * params["width"],
)

# `external` (a program speaking the JSON-lines protocol) and the names in AZULSIM_EXTERNAL_BOTS.
register_external()

register_bot(
    "search",
    "Two-ply Max-N search within the round: the heuristic's best picks, the next seat's best "
    "replies to each, heuristic play-outs until its own `depth`-th pick, round-end values "
    "(docs/bots.md).",
    make_search,
    SEARCH_PARAMS,
    source="builtin",
    cost=search_cost,
)

register_bot(
    "deep",
    "Budgeted Max-N tree search within the round: `nodes` leaves per decision (deterministic) "
    "or `ms` of CPU (anytime), the heuristic's best picks as children, heuristic play-outs and "
    "round-end values at the leaves (docs/bots.md).",
    make_deep,
    DEEP_PARAMS,
    source="builtin",
    cost=deep_cost,
)

register_bot(
    "alphabeta",
    "Compiled alpha-beta within the round, deepened while its budget lasts: `nodes` picks per "
    "decision (deterministic) or `ms` of CPU, the heuristic's best picks in its order, heuristic "
    "play-outs and round-end values at the leaves (docs/bots.md).",
    make_alphabeta,
    ALPHABETA_PARAMS,
    source="builtin",
    cost=alphabeta_cost,
)

register_bot(
    "restricted",
    "Any bot forbidden one strategic element: the first-player marker, the floor while a line "
    "can take tiles, the five-tile line, or completing a column or colour (docs/bots.md).",
    make_restricted,
    RESTRICTED_PARAMS,
    source="builtin",
    cost=restricted_cost,
    check=restricted_check,
)
