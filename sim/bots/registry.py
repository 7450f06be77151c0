"""The bot registry: names, parameter schemas, spec strings (docs/design.md, "Bots").

A *bot spec* names a bot and, optionally, some of its parameters::

    greedy
    heuristic:floor=2.5,centre=1

Grammar: ``name`` or ``name:key=value[,key=value...]``. Names and keys are case-sensitive
identifiers (letters, digits, ``_``, ``-``, ``.``); values are parsed by the parameter's type.
A spec contains no whitespace at all (as job ids). Numbers are plain ASCII decimals: an optional
``-``, digits, and for a float an optional ``.`` and digits (``2.5``, ``-0``, ``07``); no ``+``,
exponent, ``_`` separator, ``inf``/``nan`` or non-ASCII digits, and a float too small to tell from
0 is refused rather than rounded to it.

`parse_bot_spec` checks a spec against the registered schema and returns a `BotSpec` with every
parameter filled in (defaults for those not given) and a *canonical label*: the name, then the
non-default parameters sorted by key, each value written canonically (a float as the shortest
decimal that reads back as it, positional, with at least one decimal: ``2.5``, ``0.0``, ``0.00001``,
``7.0``; a plain int; ``true``/``false``; the choice string). Two specs that mean the same bot get
the same label, e.g. ``heuristic:floor=2.50``, ``heuristic:floor=02.5`` and
``heuristic:floor=2.5``, or ``floor=-0`` and ``floor=0``; a spec whose parameters are all at their
defaults is labelled by the bare name. Every label is itself a valid spec of the same bot.
Statistics are grouped by label.

Where bots come from, looked up lazily by name (`get_bot_info`):

1. bots registered in this process with `register_bot`;
2. the built-in bots: the module ``sim.bots.builtin`` is imported once and registers
   its bots with `register_bot` at import;
3. third-party bots: the entry point of that name in the group ``azulsim.bots``
   (``importlib.metadata``). The object it points to is a `BotInfo`, or a callable with no arguments
   that returns one, or anything whose import registers the name with `register_bot`.

`list_bots` loads all of them. A bot object is opaque here: `make_bot` calls the entry's factory
with the filled-in parameter dict.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..quote import shown  # messages quote a short prefix of a value (a 10 KB spec: one line)

ENTRY_POINT_GROUP = "azulsim.bots"
BUILTIN_MODULE = "sim.bots.builtin"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Characters a label must never contain: '|' separates the parts of statistics counter keys.
_FORBIDDEN_IN_LABEL = "|"

PARAM_TYPES = ("float", "int", "bool", "choice", "text")
# A text value (e.g. an external bot's command path): no whitespace, and none of the characters
# that separate specs, parameters and counter keys.
_TEXT_FORBIDDEN = ",|"

# ASCII only: [0-9], not \d (which takes Arabic-Indic and other Unicode digits).
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\Z")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_MAX_INT_DIGITS = 30  # far above any bound; keeps int() off Python's 4,300-digit limit


@dataclass(frozen=True)
class Param:
    """One parameter of a bot.

    Parameters
    ----------
    name : identifier used in spec strings (``heuristic:floor=2.5``)
    type : ``"float"``, ``"int"``, ``"bool"``, ``"choice"`` (one of `choices`, a string) or
        ``"text"`` (any string without whitespace, ``,`` or ``|``; at most 1000 characters)
    default : value used when the spec does not give one (must itself be valid)
    min, max : inclusive bounds for ``float`` and ``int`` (None: unbounded)
    choices : allowed strings for ``choice``
    doc : one line: what it does, with its unit
    """

    name: str
    type: str
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"parameter name {shown(self.name)} is not an identifier")
        if self.type not in PARAM_TYPES:
            raise ValueError(
                f"parameter {shown(self.name)}: type must be one of {', '.join(PARAM_TYPES)}; "
                f"got {shown(self.type)}"
            )
        if self.type == "choice":
            if not self.choices:
                raise ValueError(f"parameter {shown(self.name)}: a choice needs choices")
            object.__setattr__(self, "choices", tuple(str(c) for c in self.choices))
            for c in self.choices:
                if not c or any(ch in c for ch in ",=:| ") or c != c.strip():
                    raise ValueError(f"parameter {shown(self.name)}: bad choice {shown(c)}")
        # The default goes through the same check as a user value.
        object.__setattr__(self, "default", self.coerce(self.default, bot="<schema>"))

    def coerce(self, value: Any, bot: str) -> Any:
        """`value` (a string from a spec, or a Python value) as this parameter's type.

        Raises ValueError naming the bot, the parameter and the reason.
        """
        where = f"bot {shown(bot)}: parameter {shown(self.name)}"  # a registered name: short
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError(f"{where} must be a boolean (true or false); got {shown(value)}")
        if self.type == "text":
            if not isinstance(value, str):
                raise ValueError(f"{where} must be a string; got {shown(value)}")
            if len(value) > 1000 or any(ch.isspace() or ch in _TEXT_FORBIDDEN for ch in value):
                raise ValueError(
                    f"{where} must be at most 1000 characters without whitespace, ',' or '|'; "
                    f"got {shown(value)}"
                )
            return value
        if self.type == "choice":
            text = str(value)
            if text not in self.choices:
                raise ValueError(
                    f"{where} must be one of {', '.join(self.choices)}; got {shown(value)}"
                )
            return text
        if self.type == "int":
            number: float = self._integer(value, where)
        else:
            number = self._float(value, where)
        lo, hi = self.min, self.max
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            if lo is not None and hi is not None:
                bounds = f"between {_fmt_bound(lo)} and {_fmt_bound(hi)}"
            elif lo is not None:
                bounds = f"at least {_fmt_bound(lo)}"
            else:
                bounds = f"at most {_fmt_bound(hi)}"
            raise ValueError(f"{where} must be {bounds}; got {shown(number)}")
        return number

    @staticmethod
    def _integer(value: Any, where: str) -> int:
        if isinstance(value, bool):
            raise ValueError(f"{where} must be an integer; got {shown(value)}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        text = value if isinstance(value, str) else None
        if text is None or not _INTEGER.match(text):
            raise ValueError(
                f"{where} must be an integer; got {shown(value)} "
                "(a plain decimal integer such as 3)"
            )
        if len(text.lstrip("-")) > _MAX_INT_DIGITS:
            raise ValueError(f"{where}: integer too long; got {shown(value)}")
        return int(text)

    @staticmethod
    def _float(value: Any, where: str) -> float:
        if isinstance(value, bool):
            raise ValueError(f"{where} must be a number; got {shown(value)}")
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str) and _DECIMAL.match(value):
            number = float(value)
            if number == 0.0 and value.strip("-0.") != "":  # e.g. 0.<400 zeros>1
                raise ValueError(f"{where}: {shown(value)} is too small to tell from 0")
        else:
            raise ValueError(
                f"{where} must be a number; got {shown(value)} (a plain decimal number such as 2.5)"
            )
        if not math.isfinite(number):
            raise ValueError(f"{where} must be a finite number; got {shown(value)}")
        return number + 0.0  # -0.0 -> 0.0: one value, one label

    def format(self, value: Any) -> str:
        """Canonical text of a (coerced) value, as it appears in labels."""
        if self.type == "bool":
            return "true" if value else "false"
        if self.type == "float":
            # repr's shortest round-trip digits, written positionally (1e-05 -> 0.00001): a label
            # is a spec itself, and the spec grammar has no exponents.
            text = format(Decimal(repr(float(value) + 0.0)), "f")
            return text if "." in text else text + ".0"
        return str(value)

    def describe(self) -> dict[str, Any]:
        """JSON-ready description (for ``ListBots`` and ``azulsim bots``)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "default": self.default}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.choices:
            out["choices"] = list(self.choices)
        out["doc"] = self.doc
        return out


def _fmt_bound(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class BotInfo:
    """A registry entry: a bot's name, one-line description, factory and parameter schema.

    `factory` is called with the full parameter dict (every parameter filled in) and returns the bot
    object, which this module treats as opaque.
    """

    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    params: tuple[Param, ...] = ()
    source: str = "registered"  # "builtin", "entry point <value>" or "registered"
    # Time per game relative to `greedy` (a number, or a function of the parameter dict): jobs with
    # costly bots get smaller chunks, so a chunk still takes seconds (`JobSpec.cost`).
    cost: float | Callable[[dict[str, Any]], float] = 1.0
    # Checks a whole parameter set when a spec is parsed (raises ValueError): for rules no single
    # parameter's schema says, e.g. a required value or a setting of the process that parses it.
    check: Callable[[dict[str, Any]], None] | None = None

    def cost_of(self, params: Mapping[str, Any]) -> float:
        return float(self.cost(dict(params)) if callable(self.cost) else self.cost)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        allowed = ", ".join(p.name for p in self.params) or "none"
        raise ValueError(
            f"bot {shown(self.name)}: unknown parameter {shown(name)} (parameters: {allowed})"
        )

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the bot and its parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "params": [p.describe() for p in self.params],
        }


@dataclass(frozen=True)
class BotSpec:
    """A parsed, validated bot spec.

    Attributes
    ----------
    name : the registered bot name
    params : every parameter of the bot, given or default, coerced to its type
    label : canonical spec string (see module docstring); used to group statistics
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def __str__(self) -> str:
        return self.label


_lock = threading.RLock()
_registry: dict[str, BotInfo] = {}
_builtins_loaded = False


def register_bot(
    name: str,
    description: str,
    factory: Callable[[dict[str, Any]], Any],
    params: Sequence[Param] = (),
    *,
    replace: bool = False,
    source: str = "registered",
    cost: float | Callable[[dict[str, Any]], float] = 1.0,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> BotInfo:
    """Add a bot to the registry and return its entry.

    Raises ValueError for a bad name, duplicate parameter names, or a name already registered
    (unless `replace`).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"bot name {shown(name)} is not an identifier")
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"bot {shown(name)}: duplicate parameter names in {names}")
    if not callable(factory):
        raise ValueError(f"bot {shown(name)}: factory is not callable")
    info = BotInfo(name, " ".join(description.split()), factory, tuple(params), source, cost, check)
    with _lock:
        if name in _registry and not replace:
            raise ValueError(f"bot {shown(name)} is already registered")
        _registry[name] = info
    return info


def unregister_bot(name: str) -> None:
    """Remove a bot (tests use this to clean up); unknown names are ignored."""
    with _lock:
        _registry.pop(name, None)


def _load_builtins() -> None:
    global _builtins_loaded
    with _lock:
        if _builtins_loaded:
            return
        _builtins_loaded = True
        importlib.import_module(BUILTIN_MODULE)


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> BotInfo:
    try:
        obj = ep.load()
    except Exception as exc:  # a broken plug-in must not look like an unknown bot
        raise ValueError(
            f"bot {shown(ep.name)}: entry point {shown(ep.value)} failed to load: {exc}"
        ) from exc
    with _lock:
        if ep.name in _registry:  # importing it registered the bot
            return _registry[ep.name]
    if not isinstance(obj, BotInfo) and callable(obj):
        obj = obj()
    if not isinstance(obj, BotInfo):
        raise ValueError(
            f"bot {shown(ep.name)}: entry point {shown(ep.value)} gave {type(obj).__name__}, "
            "not a BotInfo"
        )
    return register_bot(
        ep.name,
        obj.description,
        obj.factory,
        obj.params,
        source=f"entry point {ep.value}",
        cost=obj.cost,  # a slow plug-in bot's cost sizes its chunks like a built-in's
        check=obj.check,
    )


def get_bot_info(name: str) -> BotInfo:
    """The registry entry of bot `name`, loading built-ins or its entry point on first use.

    Raises ValueError naming the bot and the known bots when there is no such bot.
    """
    with _lock:
        if name in _registry:
            return _registry[name]
    _load_builtins()
    with _lock:
        if name in _registry:
            return _registry[name]
    for ep in _entry_points():
        if ep.name == name:
            return _load_entry_point(ep)
    known = ", ".join(sorted(set(_registry) | {ep.name for ep in _entry_points()})) or "none"
    raise ValueError(f"unknown bot {shown(name)} (known bots: {known})")


def list_bots() -> list[BotInfo]:
    """Every available bot (registered, built-in and entry points), sorted by name."""
    _load_builtins()
    for ep in _entry_points():
        with _lock:
            known = ep.name in _registry
        if not known:
            _load_entry_point(ep)
    with _lock:
        return sorted(_registry.values(), key=lambda b: b.name)


def parse_bot_spec(text: str) -> BotSpec:
    """Parse and validate a spec string ``name[:key=value,...]`` (see module docstring).

    Raises ValueError naming the bot, the parameter and the reason, e.g.
    ``bot 'heuristic': parameter 'floor' must be between 0 and 10; got 12.0``.
    """
    if not isinstance(text, str):
        raise ValueError(f"a bot spec must be a string; got {shown(text)}")
    if any(ch.isspace() for ch in text):
        raise ValueError(f"bot spec {shown(text)} must not contain whitespace")
    name, sep, rest = text.partition(":")
    if not name:
        raise ValueError(f"bot spec {shown(text)} has no bot name")
    if not _NAME.match(name):
        raise ValueError(f"bot spec {shown(text)}: {shown(name)} is not a bot name")
    info = get_bot_info(name)
    given: dict[str, Any] = {}
    if sep and rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise ValueError(f"bot {shown(name)}: expected key=value; got {shown(item)}")
            param = info.param(key)
            if key in given:
                raise ValueError(f"bot {shown(name)}: parameter {shown(key)} is given twice")
            given[key] = param.coerce(value, bot=name)
    elif sep:
        raise ValueError(f"bot {shown(name)}: nothing after ':' in {shown(text)}")
    return _make_spec(info, given)


def bot_spec_from_params(name: str, params: Mapping[str, Any]) -> BotSpec:
    """Like `parse_bot_spec`, from a name and a dict of Python values (API requests)."""
    info = get_bot_info(name)
    given = {key: info.param(key).coerce(value, bot=name) for key, value in params.items()}
    return _make_spec(info, given)


def _make_spec(info: BotInfo, given: Mapping[str, Any]) -> BotSpec:
    full = {p.name: given.get(p.name, p.default) for p in info.params}
    if info.check is not None:
        info.check(dict(full))
    changed = sorted(
        (p for p in info.params if p.name in given and given[p.name] != p.default),
        key=lambda p: p.name,
    )
    label = info.name
    if changed:
        label += ":" + ",".join(f"{p.name}={p.format(full[p.name])}" for p in changed)
    if _FORBIDDEN_IN_LABEL in label:  # pragma: no cover - names and choices exclude it
        raise ValueError(f"bot label {shown(label)} contains {shown(_FORBIDDEN_IN_LABEL)}")
    return BotSpec(info.name, full, label)


def make_bot(spec: BotSpec | str) -> Any:
    """The bot object for `spec` (a `BotSpec` or a spec string), built by its factory."""
    if isinstance(spec, str):
        spec = parse_bot_spec(spec)
    return get_bot_info(spec.name).factory(dict(spec.params))


def split_bot_list(text: str) -> list[str]:
    """Split a comma-separated list of bot specs, one per seat, as the CLI takes it.

    Commas also separate a spec's parameters, so a piece of the form ``key=value`` (no ``:``)
    continues the previous spec: ``"heuristic:floor=2,centre=1,random"`` is
    ``["heuristic:floor=2,centre=1", "random"]``.
    """
    specs: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        if "=" in piece and ":" not in piece and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs
