"""The settings models (`workers.settings`, `service.config`) and docs/configuration.md, the one
table of every variable: the table lists exactly the variables the models declare, with their
defaults, and the one loader reads each kind of value (or names the variable it cannot read)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service import config as service_config
from sim.bots.external import ExternalSettings
from workers import settings as worker_settings
from workers.settings import from_env, variables

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
MODELS = (*worker_settings.MODELS, *service_config.MODELS, ExternalSettings)
WORKERS, METRICS = worker_settings.Settings, worker_settings.MetricsSettings
SERVER = service_config.ServerConfig


def declared() -> dict[str, object]:
    """``{variable: field}`` over every model; a variable is declared once."""
    out: dict[str, object] = {}
    for model in MODELS:
        for var, f in variables(model).items():
            assert var not in out, f"{var} is declared twice"
            out[var] = f
    return out


def documented() -> dict[str, str]:
    """``{variable: default cell}`` of the table's AZULSIM_* rows."""
    out = {}
    for line in DOC.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        for var in re.findall(r"`(AZULSIM_[A-Z0-9_]+)`", cells[0]):
            out[var] = cells[2]
    return out


def doc_text(value) -> str:
    """A default as the table writes it: ``1`` for true, ``300`` for 300.0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_the_table_lists_exactly_the_declared_variables():
    assert sorted(documented()) == sorted(declared())


@pytest.mark.parametrize("var", sorted(declared()))
def test_the_table_gives_the_declared_default(var):
    f = declared()[var]
    cell = documented()[var]
    written = f.metadata["doc_default"]
    if written is not None:
        assert cell.startswith(written) or cell.startswith(f"`{written}`"), (var, cell)
    else:
        first = re.match(r"`([^`]*)`", cell)
        assert first is not None, f"{var}: the default cell {cell!r} should start with `value`"
        assert first.group(1) == doc_text(f.default), (var, cell, f.default)


def test_every_model_takes_its_defaults_from_an_empty_environment():
    for model in MODELS:
        built = from_env(model, {})
        for f in variables(model).values():
            assert getattr(built, f.name) == f.default, (model.__name__, f.name)


@pytest.mark.parametrize(
    ("model", "env", "field", "value"),
    [
        (WORKERS, {"AZULSIM_CHUNK_GAMES": " 700 "}, "chunk_games", 700),
        (WORKERS, {"AZULSIM_STALL_S": "901.5"}, "stall_s", 901.5),
        (
            worker_settings.Settings,
            {"AZULSIM_PREFIX_BROKER_KEYS": "off"},
            "prefix_broker_keys",
            False,
        ),
        (WORKERS, {"AZULSIM_PREFIX": ""}, "prefix", "azulsim"),
        (METRICS, {"AZULSIM_METRICS_PORT": "0"}, "port", None),
        (worker_settings.LogSettings, {"AZULSIM_LOG_LEVEL": "debug"}, "level", 10),
        (worker_settings.LogSettings, {"AZULSIM_LOG_FORMAT": "JSON"}, "format", "json"),
        (SERVER, {"AZULSIM_AUTH_TOKENS": "a, b,,"}, "auth_tokens", ("a", "b")),
        (service_config.ClientSettings, {"AZULSIM_SERVER": "h:1"}, "server", "h:1"),
    ],
)
def test_the_loader_reads_each_kind(model, env, field, value):
    assert getattr(from_env(model, env), field) == value


@pytest.mark.parametrize(
    ("model", "var", "text", "message"),
    [
        (WORKERS, "AZULSIM_CHUNK_GAMES", "many", "must be an integer; got 'many'"),
        (WORKERS, "AZULSIM_STALL_S", "x", "must be a number; got 'x'"),
        (WORKERS, "AZULSIM_PREFIX_BROKER_KEYS", "2", "must be 0 or 1; got '2'"),
        (WORKERS, "AZULSIM_PREFIX", "a b", "must be non-empty without spaces or braces; got 'a b'"),
        (METRICS, "AZULSIM_METRICS_PORT", "70000", "must be 0..65535; got 70000"),
        (METRICS, "AZULSIM_METRICS_PORT", "http", "must be a port number; got 'http'"),
        (SERVER, "AZULSIM_MAX_WATCHES", "-1", "must not be negative; got '-1'"),
        (SERVER, "AZULSIM_MAX_WATCHES", "1.5", "must be a number; got '1.5'"),
        (SERVER, "AZULSIM_GRACE_S", "soon", "must be a number; got 'soon'"),
    ],
)
def test_a_bad_value_names_its_variable(model, var, text, message):
    with pytest.raises(ValueError) as err:
        from_env(model, {var: text})
    assert str(err.value) == f"{var} {message}"


def test_the_time_limits_keep_their_order():
    with pytest.raises(ValueError) as err:
        from_env(WORKERS, {"AZULSIM_STALL_S": "100"})
    assert str(err.value) == (
        "AZULSIM_VISIBILITY_TIMEOUT_S (600) must be less than AZULSIM_STALL_S (100.0)"
    )


def test_tls_needs_both_files():
    with pytest.raises(ValueError, match="AZULSIM_TLS_CERT and AZULSIM_TLS_KEY"):
        service_config.ServerConfig.from_env({"AZULSIM_TLS_CERT": "/c.pem"})


@pytest.mark.parametrize("text", [" , ,", ",", " ,\t, "])
def test_tokens_that_are_only_commas_stop_the_server_at_start(text, tmp_path):
    """``AZULSIM_AUTH_TOKENS=" , ,"`` was read as no token: auth silently off. It is a bad value
    (unset turns auth off): the loader refuses it, and ``azulsim serve`` exits naming it."""
    import os
    import subprocess
    import sys

    with pytest.raises(ValueError) as err:
        from_env(SERVER, {"AZULSIM_AUTH_TOKENS": text})
    assert str(err.value).startswith("AZULSIM_AUTH_TOKENS ") and "no token" in str(err.value)
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "AZULSIM_AUTH_TOKENS": text, "PYTHONPATH": str(repo)}
    env["AZULSIM_REDIS_URL"] = "redis://127.0.0.1:1/0"  # never reached: it stops before
    serve = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--listen", "127.0.0.1:0"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert serve.returncode != 0
    assert "AZULSIM_AUTH_TOKENS" in serve.stderr and "no token" in serve.stderr, serve.stderr


def test_sentinels_and_the_merge_wait():
    """``AZULSIM_REDIS_SENTINELS`` is a host:port list; with it, merges wait for 1 replica by
    default, within a timeout under half the socket timeout and the soft limit; the broker URL
    becomes kombu's sentinel:// list with the primary's password and database."""
    from workers.app import celery_config
    from workers.store import broker_url

    load = worker_settings.load_settings
    plain = load({})
    assert plain.redis_sentinels == () and plain.wait_for == 0
    assert broker_url(plain) == plain.redis_url
    env = {
        "AZULSIM_REDIS_SENTINELS": " s1:26391, s2:26392 ",
        "AZULSIM_REDIS_URL": "redis://:p%40ss@ignored:1/3",
    }
    s = load(env)
    assert s.redis_sentinels == ("s1:26391", "s2:26392") and s.wait_for == 1
    assert broker_url(s) == "sentinel://:p%40ss@s1:26391/3;sentinel://:p%40ss@s2:26392/3"
    transport = celery_config(s)["broker_transport_options"]
    assert transport["master_name"] == "azulsim" and transport["sentinel_kwargs"]
    assert load({**env, "AZULSIM_REDIS_WAIT_REPLICAS": "0"}).wait_for == 0
    for bad, message in (
        ({"AZULSIM_REDIS_SENTINELS": "s1"}, "AZULSIM_REDIS_SENTINELS must be host:port"),
        ({"AZULSIM_REDIS_SENTINELS": "s1:0"}, "AZULSIM_REDIS_SENTINELS must be host:port"),
        ({"AZULSIM_REDIS_WAIT_REPLICAS": "-1"}, "AZULSIM_REDIS_WAIT_REPLICAS must not be"),
        ({"AZULSIM_REDIS_WAIT_TIMEOUT_S": "8"}, "less than half of AZULSIM_REDIS_TIMEOUT_S"),
        ({"AZULSIM_REDIS_WAIT_TIMEOUT_S": "0"}, "AZULSIM_REDIS_WAIT_TIMEOUT_S must be positive"),
        ({"AZULSIM_REDIS_WAIT_TIMEOUT_S": "4", "AZULSIM_TASK_SOFT_LIMIT_S": "6",
          "AZULSIM_TASK_HARD_LIMIT_S": "8", "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
          "AZULSIM_STALL_S": "12"}, "less than half of AZULSIM_TASK_SOFT_LIMIT_S"),
    ):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            load({**env, **bad})
