"""Third-party bots through the ``azulsim.bots`` entry-point group (docs/design.md, "Bots").

The package in ``tests/plugin_pkg`` is "installed" for the test only: its directory goes on
``sys.path`` next to a temporary ``azulsim_demo_plugin-0.1.dist-info`` holding the same entry point
as its ``pyproject.toml``, so ``importlib.metadata`` -- and through it the registry -- sees it as an
installed distribution. Nothing is written to the real environment.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from sim.bots import ENTRY_POINT_GROUP, get_bot_info, list_bots, parse_bot_spec, unregister_bot
from sim.jobs.play import play_games
from sim.jobs.spec import Configuration, JobSpec

PLUGIN_DIR = Path(__file__).parent / "plugin_pkg"
NAME = "edge_demo"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    dist = tmp_path / "azulsim_demo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: azulsim-demo-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n{NAME} = azulsim_demo_plugin:INFO\n"
    )
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.syspath_prepend(str(tmp_path))
    unregister_bot(NAME)
    yield
    unregister_bot(NAME)
    sys.modules.pop("azulsim_demo_plugin", None)


def test_entry_point_is_visible_to_importlib_metadata(installed):
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    assert NAME in eps.names
    assert eps[NAME].value == "azulsim_demo_plugin:INFO"


def test_plugin_bot_keeps_its_declared_cost(installed):
    """A plug-in's ``cost`` survives loading through the entry point, so its chunks shrink like
    a slow built-in's (it was dropped: 20 loaded as 1.0, full-size chunks)."""
    from sim.jobs.chunk import chunk_games_for

    assert get_bot_info(NAME).cost_of({"end": "first"}) == 20.0
    job = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": [NAME, NAME]}], "games": 100_000, "seed": 1}
    )
    assert job.cost == 20.0
    assert chunk_games_for(job, 50_000) == 2_500


def test_plugin_bot_loads_by_name_and_plays(installed):
    info = get_bot_info(NAME)
    assert info.source == "entry point azulsim_demo_plugin:INFO"
    assert parse_bot_spec(f"{NAME}:end=last").label == f"{NAME}:end=last"
    assert NAME in [b.name for b in list_bots()]
    config = Configuration(2, [f"{NAME}:end=last", "greedy"], wall="gray")
    rec = play_games(config, 4, 0, 20)
    assert len(rec) == 20 and (rec.turns > 0).all()
    # A job naming the plug-in validates at submit time like any built-in bot.
    job = JobSpec.from_dict({"configurations": [config.to_dict()], "games": 4, "seed": 1})
    assert job.configurations[0].bots[0] == f"{NAME}:end=last"


def test_plugin_parameters_are_validated(installed):
    with pytest.raises(ValueError, match="must be one of first, last"):
        parse_bot_spec(f"{NAME}:end=middle")


def test_unknown_bot_without_the_plugin():
    unregister_bot(NAME)
    with pytest.raises(ValueError, match=f"unknown bot '{NAME}'"):
        parse_bot_spec(NAME)
