"""A tournament as one job: every pair (or table) of the bots in mirrored groups, then ratings.

For two players, one mirrored configuration per unordered pair of bots; for 3 or 4 players, one
per combination of that many different bots (tables of mixed bots), so every bot meets every
other at the same number of tables, and per order of the seats around the table. Mirrored seating
plays each deal once per rotation of the seats, so deal and seat luck cancel within a group; but a
rotation keeps the order around the table, who plays right after whom, and that order is worth a
lot in Azul (the next seat takes what the last one left: `rollout` seated right before `heuristic`
scores 67 % against it at four, right after it 49 %). So every table is played in each order of
its seats up to rotation (the first bot fixed, the others in every order: 2 for 3 seats, 6 for 4),
its games split evenly between them. The job carries ``ratings`` (`sim.jobs.spec.Ratings`)
and its statistics a ``ratings`` section (`sim.stats.ratings`): Bradley–Terry on the Elo scale,
anchored on a named bot (default: the first).
"""

from __future__ import annotations

from itertools import combinations, permutations

from sim.quote import shown

from ..bots.registry import parse_bot_spec
from ..jobs.spec import Configuration, JobSpec
from ..rules.rulesets import RuleSet

MAX_BOTS = 12


def tournament_spec(
    bots: list[str],
    players: int = 2,
    games_per_pair: int = 1000,
    seed: int = 0,
    wall: str = "coloured",
    anchor: str | None = None,
    max_rounds: int | None = None,
    rules: RuleSet | None = None,
) -> JobSpec:
    """The job of a tournament of `bots` (at least two different ones, at most `MAX_BOTS`),
    every game under `rules` (default the printed game; `wall` is then its wall, and a rules'
    wall other than coloured must not meet another `wall`).

    `games_per_pair` is the games of each pair or table, rounded up to whole mirrored groups of
    `players` games in each of its seat orders (`orders`).
    """
    labels = []
    for i, text in enumerate(bots):
        try:
            labels.append(parse_bot_spec(text).label)
        except ValueError as exc:
            raise ValueError(f"bots[{i}]: {exc}") from None
    if len(set(labels)) != len(labels):
        raise ValueError(f"bots must be different bots; got {labels}")
    if not 2 <= len(labels) <= MAX_BOTS:
        raise ValueError(f"bots must name 2 to {MAX_BOTS} bots; got {len(labels)}")
    if players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4; got {players}")
    if len(labels) < players:
        raise ValueError(
            f"a {players}-player tournament needs at least {players} bots; got {len(labels)}"
        )
    if not isinstance(games_per_pair, int) or games_per_pair < 1:
        got = shown(games_per_pair)
        raise ValueError(f"games_per_pair must be an integer of at least 1; got {got}")
    group = players * len(orders(labels[:players]))
    games = -(-games_per_pair // group) * players
    if rules is None:
        rules = RuleSet()
    if wall != "coloured":
        if rules.wall != "coloured" and rules.wall != wall:
            raise ValueError("give the wall once: wall or the rules' wall")
        rules = rules.with_value("wall", wall)
    configs = [
        Configuration.under(rules, players, order, "mirrored")
        for table in combinations(labels, players)
        for order in orders(table)
    ]
    extra = {} if max_rounds is None else {"max_rounds": max_rounds}
    return JobSpec(
        tuple(configs),
        games=games,
        seed=seed,
        ratings={"anchor": anchor if anchor is not None else labels[0]},
        **extra,
    )


def orders(table) -> list[tuple]:
    """The orders of a table's seats that rotations do not reach: the first bot fixed, the others
    in every order (one for a pair)."""
    return [(table[0], *rest) for rest in permutations(table[1:])]


def head_to_head_matrix(doc: dict) -> tuple[list[str], list[list[float | None]]]:
    """``(labels, rates)`` of a tournament's statistics, strongest first: ``rates[i][j]`` is the
    observed score rate of bot i against bot j over all configurations (None on the diagonal
    and for pairs that never met)."""
    ratings = doc["ratings"]
    labels = [r["bot"] for r in ratings["bots"]]
    index = {b: i for i, b in enumerate(labels)}
    rates: list[list[float | None]] = [[None] * len(labels) for _ in labels]
    for pair in ratings["head_to_head"]:
        i, j = index[pair["bot"]], index[pair["opponent"]]
        rates[i][j] = pair["observed"]
        rates[j][i] = 1.0 - pair["observed"]
    return labels, rates
