"""The one loader of ``AZULSIM_*`` settings: typed models declared with `setting` and read by
`from_env` (the models: `workers.settings`, `service.config`, `sim.bots.external`).

A model is a frozen dataclass whose fields are declared with `setting`: the variable's name, its
default and how its text is read (`Kind`). `from_env` builds any model from an environment (default
``os.environ``): an unset or empty variable takes its default, a bad value raises ``ValueError``
naming the variable. It lives in `sim` (standard library only) so that the rules core's own
settings use it too; docs/configuration.md is the table of every variable (tests/test_settings.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sim.quote import shown

M = TypeVar("M")

_FLAGS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}  # fmt: skip


@dataclass(frozen=True)
class Kind:
    """How a variable's (stripped, non-empty) text becomes a value: ``parse(var, text)``."""

    name: str
    parse: Callable[[str, str], Any]


def _number(kind: type, what: str, minimum: float | None = None, negative: str = "") -> Kind:
    def parse(var: str, text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"{var} must be {what}; got {shown(text)}") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"{var} {negative}; got {shown(text)}")
        return value

    return Kind(what, parse)


def _flag(var: str, text: str) -> bool:
    if text.lower() not in _FLAGS:
        raise ValueError(f"{var} must be 0 or 1; got {shown(text)}")
    return _FLAGS[text.lower()]


def _port(var: str, text: str) -> int | None:
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"{var} must be a port number; got {shown(text)}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{var} must be 0..65535; got {port}")
    return port or None  # 0: off


def _tokens(var: str, text: str) -> tuple[str, ...]:
    tokens = tuple(t.strip() for t in text.split(",") if t.strip())
    if not tokens:  # a value that is set but empty of tokens: never read as "auth off"
        raise ValueError(f"{var} holds no token, only commas and spaces; unset it for none")
    return tokens


def _log_format(var: str, text: str) -> str:
    value = text.lower()
    if value not in LOG_FORMATS:
        raise ValueError(f"{var} must be text or json; got {shown(value)}")
    return value


def _log_level(var: str, text: str) -> int:
    name = text.upper()
    level = logging.getLevelName(name)
    if not isinstance(level, int):
        raise ValueError(
            f"{var} must be DEBUG, INFO, WARNING, ERROR or CRITICAL; got {shown(name)}"
        )
    return level


TEXT = Kind("text", lambda var, text: text)
INTEGER = _number(int, "an integer")
NUMBER = _number(float, "a number")
COUNT = _number(int, "a number", 0, "must not be negative")  # the API's limits
SECONDS = _number(float, "a number", 0, "must not be negative")
FLAG = Kind("0 or 1", _flag)
PORT = Kind("a port number", _port)
TOKENS = Kind("comma-separated tokens", _tokens)
LOG_FORMATS = ("text", "json")
LOG_FORMAT = Kind("text or json", _log_format)
LOG_LEVEL = Kind("a log level", _log_level)


def setting(var: str, default: Any, kind: Kind = TEXT, *, doc_default: str | None = None):
    """A dataclass field read from environment variable `var` by `from_env`.

    `doc_default` is how docs/configuration.md writes the default when it is not the value itself
    (a computed default such as the CPU count)."""
    return dataclasses.field(
        default=default, metadata={"env": var, "kind": kind, "doc_default": doc_default}
    )


def variables(model: type) -> dict[str, dataclasses.Field]:
    """``{variable: field}`` of a model, in declaration order."""
    return {f.metadata["env"]: f for f in dataclasses.fields(model) if "env" in f.metadata}


def from_env(model: type[M], env: Mapping[str, str] | None = None, **overrides: Any) -> M:
    """Build `model` from the variables of `env` (default ``os.environ``); `overrides` win.

    Unset or empty variables take their defaults; ValueError names the variable of a bad value
    (the model's own checks, in ``__post_init__``, run last)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for var, f in variables(model).items():
        text = env.get(var, "").strip()
        if text:
            values[f.name] = f.metadata["kind"].parse(var, text)
    values.update(overrides)
    return model(**values)
