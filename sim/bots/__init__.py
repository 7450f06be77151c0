"""Bots: the registry of bot names, parameter schemas and spec strings (docs/design.md, "Bots").

The built-in bots live in ``sim.bots.builtin`` (loaded lazily by the registry); third-party bots
plug in through the entry-point group ``azulsim.bots``. See `sim.bots.registry`.
"""

from .registry import (
    ENTRY_POINT_GROUP,
    BotInfo,
    BotSpec,
    Param,
    bot_spec_from_params,
    get_bot_info,
    list_bots,
    make_bot,
    parse_bot_spec,
    register_bot,
    split_bot_list,
    unregister_bot,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "BotInfo",
    "BotSpec",
    "Param",
    "bot_spec_from_params",
    "get_bot_info",
    "list_bots",
    "make_bot",
    "parse_bot_spec",
    "register_bot",
    "split_bot_list",
    "unregister_bot",
]
