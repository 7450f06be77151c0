"""Bot registry: spec strings, parameter validation, canonical labels, lazy entry points."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from sim.bots import registry
from sim.bots.registry import (
    BotInfo,
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

PARAMS = [
    Param("floor", "float", 2.0, 0, 10, doc="weight of floor penalties"),
    Param("depth", "int", 2, 1, 5, doc="plies"),
    Param("greedy_end", "bool", False, doc="play greedily in the last round"),
    Param("order", "choice", "score", choices=("score", "tiles"), doc="move ordering"),
]


@pytest.fixture
def bots():
    register_bot("t_heur", "A test heuristic.", lambda p: ("heur", p), PARAMS, replace=True)
    register_bot("t_plain", "A test bot with no parameters.", lambda p: "plain", replace=True)
    yield
    unregister_bot("t_heur")
    unregister_bot("t_plain")


def test_defaults_filled_and_label_is_bare_name(bots):
    spec = parse_bot_spec("t_heur")
    assert spec.name == "t_heur"
    assert dict(spec.params) == {"floor": 2.0, "depth": 2, "greedy_end": False, "order": "score"}
    assert spec.label == "t_heur"


def test_label_is_canonical(bots):
    a = parse_bot_spec("t_heur:order=tiles,floor=2.50,depth=3")
    b = parse_bot_spec("t_heur:depth=3,floor=2.5,order=tiles")
    assert a == b
    assert a.label == "t_heur:depth=3,floor=2.5,order=tiles"
    # Giving a default explicitly does not change the label.
    assert parse_bot_spec("t_heur:floor=2,greedy_end=false").label == "t_heur"
    assert parse_bot_spec("t_heur:greedy_end=yes").label == "t_heur:greedy_end=true"
    assert parse_bot_spec(a.label) == a
    assert bot_spec_from_params("t_heur", {"floor": 2.5, "depth": 3, "order": "tiles"}) == a


@pytest.mark.parametrize(
    "text, message",
    [
        ("t_heur:floor=12", "bot 't_heur': parameter 'floor' must be between 0 and 10; got 12.0"),
        ("t_heur:floor=-1", "parameter 'floor' must be between 0 and 10; got -1.0"),
        ("t_heur:floor=abc", "parameter 'floor' must be a number; got 'abc'"),
        ("t_heur:floor=nan", "parameter 'floor' must be a number; got 'nan'"),
        ("t_heur:depth=2.5", "parameter 'depth' must be an integer; got '2.5'"),
        ("t_heur:depth=9", "parameter 'depth' must be between 1 and 5; got 9"),
        ("t_heur:greedy_end=maybe", "parameter 'greedy_end' must be a boolean"),
        ("t_heur:order=random", "parameter 'order' must be one of score, tiles; got 'random'"),
        ("t_heur:speed=1", "bot 't_heur': unknown parameter 'speed'"),
        ("t_heur:floor", "bot 't_heur': expected key=value; got 'floor'"),
        ("t_heur:floor=1,floor=2", "parameter 'floor' is given twice"),
        ("t_heur:", "nothing after ':'"),
        ("t_plain:x=1", "bot 't_plain': unknown parameter 'x' (parameters: none)"),
        ("no_such_bot", "unknown bot 'no_such_bot'"),
        ("", "has no bot name"),
        ("bad/name", "is not a bot name"),
    ],
)
def test_errors_name_bot_parameter_and_reason(bots, text, message):
    with pytest.raises(ValueError) as err:
        parse_bot_spec(text)
    assert message in str(err.value)


def test_unknown_bot_lists_known_ones(bots):
    with pytest.raises(ValueError, match="known bots: .*t_heur"):
        get_bot_info("t_nope")


def test_schema_validation():
    with pytest.raises(ValueError, match="must be between 0 and 1"):
        Param("w", "float", 3.0, 0, 1)
    with pytest.raises(ValueError, match="type must be one of"):
        Param("w", "str", "a")
    with pytest.raises(ValueError, match="needs choices"):
        Param("w", "choice", "a")
    with pytest.raises(ValueError, match="duplicate parameter"):
        register_bot("t_dup", "d", lambda p: p, [Param("a", "int", 0), Param("a", "int", 1)])
    with pytest.raises(ValueError, match="not an identifier"):
        register_bot("bad|name", "d", lambda p: p)


def test_register_twice_needs_replace(bots):
    with pytest.raises(ValueError, match="already registered"):
        register_bot("t_plain", "again", lambda p: p)


def test_list_and_make(bots):
    names = [b.name for b in list_bots()]
    assert {"t_heur", "t_plain"} <= set(names)
    assert names == sorted(names)
    info = get_bot_info("t_heur")
    assert info.describe()["params"][0] == {
        "name": "floor",
        "type": "float",
        "default": 2.0,
        "min": 0,
        "max": 10,
        "doc": "weight of floor penalties",
    }
    assert make_bot("t_heur:depth=4") == (
        "heur",
        {"floor": 2.0, "depth": 4, "greedy_end": False, "order": "score"},
    )


def test_split_bot_list():
    assert split_bot_list("greedy,random") == ["greedy", "random"]
    assert split_bot_list("h:a=1,b=2,random, h:c=3") == ["h:a=1,b=2", "random", "h:c=3"]


PLUGIN = """
from sim.bots.registry import BotInfo, Param
INFO = BotInfo("t_plug", "A plug-in bot.", lambda p: ("plug", p), (Param("k", "int", 1, 0, 9),))
LOADED = True
"""


def test_entry_point_loaded_lazily_by_name(tmp_path, monkeypatch):
    (tmp_path / "t_azul_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = importlib.metadata.EntryPoint(
        name="t_plug", value="t_azul_plugin:INFO", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    try:
        assert "t_azul_plugin" not in sys.modules
        spec = parse_bot_spec("t_plug:k=3")
        assert spec.label == "t_plug:k=3"
        assert "t_azul_plugin" in sys.modules
        assert get_bot_info("t_plug").source == "entry point t_azul_plugin:INFO"
        assert make_bot(spec) == ("plug", {"k": 3})
    finally:
        unregister_bot("t_plug")
        sys.modules.pop("t_azul_plugin", None)


def test_broken_entry_point_is_reported(monkeypatch):
    ep = importlib.metadata.EntryPoint(
        name="t_broken", value="t_no_such_module_xyz:INFO", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    with pytest.raises(ValueError, match="bot 't_broken': entry point .* failed to load"):
        get_bot_info("t_broken")


def test_entry_point_may_be_a_factory_function(tmp_path, monkeypatch):
    (tmp_path / "t_azul_plugin2.py").write_text(
        "from sim.bots.registry import BotInfo\n"
        "def bot():\n    return BotInfo('t_plug2', 'x', lambda p: 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = importlib.metadata.EntryPoint(
        name="t_plug2", value="t_azul_plugin2:bot", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    try:
        assert isinstance(get_bot_info("t_plug2"), BotInfo)
        assert make_bot("t_plug2") == 2
    finally:
        unregister_bot("t_plug2")
        sys.modules.pop("t_azul_plugin2", None)


# --- strict numbers and one canonical spec per bot (docs/bots.md) -------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        # Python's float()/int() accept these; a spec does not.
        ("t_heur:floor=0_5", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=\u0663", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=1e-400", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=1e2", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=+3", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=inf", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=0x1", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=1.", "parameter 'floor' must be a number; got"),
        ("t_heur:floor=0." + "0" * 400 + "1", "is too small to tell from 0"),
        ("t_heur:depth=3_0", "parameter 'depth' must be an integer; got"),
        ("t_heur:depth=\u0663", "parameter 'depth' must be an integer; got"),
        ("t_heur:depth=+3", "parameter 'depth' must be an integer; got"),
        ("t_heur:depth=2.0", "parameter 'depth' must be an integer; got"),
        # Whitespace is refused wherever it is, as in job ids.
        (" t_heur", "must not contain whitespace"),
        ("t_heur\n", "must not contain whitespace"),
        ("t_heur: floor=1", "must not contain whitespace"),
        ("t_heur:floor =1", "must not contain whitespace"),
        ("t_heur:floor=1 ", "must not contain whitespace"),
        ("t_heur:floor=\u00a01", "must not contain whitespace"),
        ("t_heur:greedy_end= true", "must not contain whitespace"),
    ],
)
def test_only_plain_ascii_decimals_and_no_whitespace(bots, text, message):
    with pytest.raises(ValueError) as err:
        parse_bot_spec(text)
    assert message in str(err.value)


def test_api_parameter_values_are_checked_the_same_way(bots):
    for bad in ("0_5", "\u0663", "1e-400", " 1", "1\n"):
        with pytest.raises(ValueError, match="parameter 'floor'"):
            bot_spec_from_params("t_heur", {"floor": bad})
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match="parameter 'floor' must be a finite number"):
            bot_spec_from_params("t_heur", {"floor": bad})
    assert bot_spec_from_params("t_heur", {"floor": "2.50"}).label == "t_heur:floor=2.5"


@pytest.mark.parametrize(
    "same",
    [
        ["t_heur:floor=0", "t_heur:floor=-0", "t_heur:floor=0.0", "t_heur:floor=-0.000"],
        ["t_heur:floor=2.5", "t_heur:floor=2.50", "t_heur:floor=02.5", "t_heur:floor=2.5000"],
        ["t_heur:depth=3", "t_heur:depth=03"],
        ["t_heur", "t_heur:floor=2", "t_heur:floor=2.000", "t_heur:depth=02"],
        ["t_heur:floor=0.00001", "t_heur:floor=0.000010"],
        ["t_heur:floor=9.99999999999999999999", "t_heur:floor=10"],  # rounds to one float
    ],
)
def test_one_canonical_label_per_bot(bots, same):
    specs = [parse_bot_spec(t) for t in same]
    assert len({s.label for s in specs}) == 1, [s.label for s in specs]
    assert len({tuple(sorted(s.params.items())) for s in specs}) == 1
    label = specs[0].label
    # The label is itself a valid spec and plain decimal (no '1e-05', no '-0.0').
    assert parse_bot_spec(label) == specs[0]
    assert "e" not in label.partition(":")[2].replace("depth", "").replace("greedy_end", "")
    assert "-0" not in label


def test_canonical_numbers_are_positional_and_shortest(bots):
    assert parse_bot_spec("t_heur:floor=0.00001").label == "t_heur:floor=0.00001"
    assert parse_bot_spec("t_heur:floor=-0").params["floor"] == 0.0
    assert str(parse_bot_spec("t_heur:floor=-0").params["floor"]) == "0.0"  # not -0.0
    assert parse_bot_spec("t_heur:floor=0").label == "t_heur:floor=0.0"
    assert parse_bot_spec("t_heur:floor=7").label == "t_heur:floor=7.0"
    assert parse_bot_spec("t_heur:floor=0.1").label == "t_heur:floor=0.1"


def test_error_messages_show_only_a_short_prefix_of_a_long_value(bots):
    for text in (
        "t_heur:floor=" + "1" * 10_000,
        "t_heur:order=" + "x" * 10_000,
        "t_" + "x" * 10_000,
        "t_heur:" + "k" * 10_000 + "=1",
    ):
        with pytest.raises(ValueError) as err:
            parse_bot_spec(text)
        assert len(str(err.value)) <= 300, str(err.value)[:400]
