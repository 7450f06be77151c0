"""The `search` bot (sim/bots/search.py): legal, pure, deterministic, Max-N back-up, strength.

Its defining property is checked against `rollout`: with one reply and play-outs to the end of the
round, the next seat's reply is the heuristic's pick and the search *is* `rollout` of the same
width, so every game must come out the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim.bots import make_bot, parse_bot_spec
from sim.bots import search as search_module
from sim.bots.registry import get_bot_info
from sim.bots.search import SearchBot
from sim.jobs.play import play_batch, play_games
from sim.jobs.spec import Configuration, first_player
from sim.rules import engine
from sim.rules.records import GameRecords
from tests.positions import random_positions

ROOT = Path(__file__).resolve().parents[1]
COMBOS = [(p, w) for p in (2, 3, 4) for w in ("coloured", "gray")]


def _positions(players: int, wall: str, games: int = 30, seed: int = 5):
    return random_positions(players, wall, games, seed)


@pytest.mark.parametrize("players,wall", COMBOS)
def test_legal_pure_and_independent_of_batch_and_keys(players, wall, monkeypatch):
    st, keys = _positions(players, wall)
    slots = np.flatnonzero(~st.done)
    mask = engine.legal_mask(st)[slots]
    before = st.copy()
    bot = make_bot("search:width=4,replies=3,depth=3")
    actions = bot.act(st, slots, keys[slots])
    assert mask[np.arange(slots.size), actions].all()
    for name, value in vars(before).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(st, name)), name
    # Another order, other keys and groups of 7 games: the same pick for every game.
    monkeypatch.setattr(search_module, "GROUP", 7)
    order = slots[::-1]
    again = bot.act(st, order, np.zeros(order.size, np.uint64))
    assert np.array_equal(again[::-1], actions)


@pytest.mark.parametrize(
    "players,wall", [(2, "coloured"), (3, "coloured"), (4, "coloured"), (3, "gray")]
)
def test_one_reply_to_the_end_of_the_round_is_rollout(players, wall):
    games = np.arange(12)
    first = first_player(4, games, players)
    seats = np.zeros((12, players), np.int8)
    seats[:, 1:] = 1
    search = make_bot("search:width=3,replies=1,depth=10")
    rollout = make_bot("rollout:width=3")  # gray wall: both take the heuristic's columns
    greedy = make_bot("greedy")
    a = play_batch(players, wall, 4, games, first, seats, [search, greedy])
    b = play_batch(players, wall, 4, games, first, seats, [rollout, greedy])
    for name, value in vars(a).items():
        assert np.array_equal(value, getattr(b, name)), name


def test_width_one_is_the_heuristic():
    a = play_games(Configuration(2, ["search:width=1", "greedy"]), 2, 0, 20)
    b = play_games(Configuration(2, ["heuristic", "greedy"]), 2, 0, 20)
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.turns, b.turns)


def test_max_n_backs_up_the_reply_the_next_seat_prefers():
    """Margins of 2 candidates x 2 replies, by hand: the next seat picks its best reply."""
    # value[seat, reply, copy]; copies 0, 1 are candidates 0, 1 of one game; seat 0 searches.
    value = np.array(
        [
            [[10.0, 9.0], [2.0, 8.0]],  # seat 0
            [[4.0, 1.0], [9.0, 3.0]],  # seat 1
        ]
    )
    copies = np.arange(2)
    theirs = search_module._margins(value, np.array([1, 1]), copies)
    assert theirs.tolist() == [[-6.0, -8.0], [7.0, -5.0]]
    chosen = theirs.argmax(axis=0)  # reply 1 to candidate 0, reply 1 to candidate 1
    mine = search_module._margins(value, np.array([0, 0]), copies)[chosen, copies]
    assert mine.tolist() == [-7.0, 5.0]  # candidate 1 is better for seat 0 once seat 1 answers


def test_same_games_whatever_the_chunking():
    config = Configuration(3, ["search:width=3,replies=2,depth=2", "heuristic", "rollout:width=2"],
                           seating="shuffle", wall="gray")  # fmt: skip
    whole = play_games(config, 21, 0, 6)
    parts = GameRecords.concat([play_games(config, 21, 0, 4), play_games(config, 21, 4, 6)])
    for name, value in vars(whole).items():
        assert np.array_equal(value, getattr(parts, name)), name


def test_parameters_and_cost():
    spec = parse_bot_spec("search:width=8,depth=2")
    bot = make_bot(spec)
    assert isinstance(bot, SearchBot) and (bot.width, bot.replies, bot.depth) == (8, 4, 2)
    assert bot.caution == 0.5
    with pytest.raises(ValueError, match="width"):
        parse_bot_spec("search:width=0")
    info = get_bot_info("search")
    small = info.cost_of(parse_bot_spec("search:width=2,replies=1,depth=0").params)
    default = info.cost_of(parse_bot_spec("search").params)
    large = info.cost_of(parse_bot_spec("search:width=12,replies=8,depth=10").params)
    assert 1 < small < default < large


def test_declared_cost_is_above_the_measured_cost():
    """The declared cost (time per game over greedy's, which sizes the service's chunks) bounds
    what `python bench/search.py --cost-grid` measured at 2, 3 and 4 players."""
    results = json.loads((ROOT / "bench" / "results" / "search.json").read_text())
    info = get_bot_info("search")
    grid = results["cost_grid"]
    assert {r["players"] for r in grid} == {2, 3, 4}
    for row in grid:
        declared = info.cost_of(parse_bot_spec(row["bot"]).params)
        assert declared >= row["x_greedy"], row


@pytest.mark.parametrize("players", [2, 3, 4])
def test_play_outs_end_after_depth_own_picks(players, monkeypatch):
    """``depth`` counts the searching seat's own picks after its candidate: the reply, then
    ``depth * P - 1`` picks, so the last pick of a play-out is its own."""
    asked = []
    real = SearchBot._play_out

    def spy(self, tree, depth):
        asked.append(depth)
        return real(self, tree, depth)

    monkeypatch.setattr(SearchBot, "_play_out", spy)
    st, keys = _positions(players, "coloured", games=40)
    slots = np.flatnonzero(~st.done & (st.tiles_left > 0))
    make_bot("search:width=3,replies=2,depth=2").act(st, slots, keys[slots])
    after_reply = 2 * players - 1
    # 2 players: the bound pass plays the heuristic's reply too; 3-4: replies are played first.
    assert set(asked) == ({after_reply + 1, after_reply} if players == 2 else {after_reply})


@pytest.mark.parametrize("spec", ["search", "search:width=4,replies=2,depth=1"])
def test_same_budget_and_seed_same_games(spec):
    """Deterministic for a budget and a seed: the same games on every run, whoever else plays."""
    config = Configuration(2, [spec, "rollout"], seating="mirrored")
    a = play_games(config, 11, 0, 8)
    b = play_games(config, 11, 0, 8)
    for name, value in vars(a).items():
        assert np.array_equal(value, getattr(b, name)), name
    other = Configuration(2, ["search:width=5", "rollout"], seating="mirrored")
    other = play_games(other, 11, 0, 8)
    assert not np.array_equal(a.scores, other.scores)  # the budget is part of the bot


def test_search_beats_rollout():
    rec = play_games(Configuration(2, ["search", "rollout"]), 99, 0, 60)
    wins = (rec.winners & (rec.seat_bot == 0)).any(axis=1)[~rec.truncated].mean()
    assert wins >= 0.6


@pytest.mark.parametrize("wall", ["coloured", "gray"])
@pytest.mark.parametrize("spec", ["search", "search:width=5,replies=3,depth=1", "search:depth=10"])
def test_two_player_pruning_changes_no_choice(wall, spec):
    """2 players: the bounded search (`_search_two`) picks what the full Max-N tree picks."""
    st, _ = _positions(2, wall, games=60)
    slots = np.flatnonzero(~st.done)
    bot = make_bot(spec)
    assert np.array_equal(
        bot._search_two(st, slots, 2 * bot.depth), bot._search(st, slots, 2 * bot.depth)
    )
