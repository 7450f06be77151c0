"""``--rules TEXT``: the rule set a study's games play under (`sim.rulesets`), one option for the
commands that take it (compare, sweep, tournament), with errors in the words of the command line."""

from __future__ import annotations

import argparse

from .common import UsageError

RULES_HELP = (
    "the rule set: printed (default) or key=value pairs joined by ',', e.g. "
    "'column_bonus=3,floor=1/2/3' (keys and limits: docs/rules.md, Rule variants)"
)


def add_rules_option(p: argparse.ArgumentParser, help: str = RULES_HELP) -> None:  # noqa: A002
    p.add_argument("--rules", metavar="TEXT", help=help)


def rules_of(args: argparse.Namespace, option: str = "rules"):
    """The `sim.rulesets.RuleSet` of ``--rules`` (the printed game when it is not given); a bad
    value is a `UsageError` naming the option and the rule (``--rules: rules.floor ...``)."""
    from sim.rulesets import RuleSet

    text = getattr(args, option, None)
    if text is None:
        return RuleSet()
    try:
        return RuleSet.parse(text)
    except ValueError as exc:
        raise UsageError(f"--{option.replace('_', '-')}: {exc}") from None
