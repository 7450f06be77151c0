"""Turn order (sim/stats/turn_order.py): the ``turn_order`` section against a plain loop over real
games, and its independence of how the games are split."""

from __future__ import annotations

import numpy as np
import pytest

from sim.jobs.play import play_games
from sim.jobs.spec import Configuration, JobSpec
from sim.stats import count, derive, merge
from sim.stats.intervals import Z95


@pytest.fixture(scope="module", params=[2, 3])
def played(request):
    players = request.param
    bots = ["greedy", "random", "heuristic"][:players]
    spec = JobSpec([Configuration(players, tuple(bots))], games=240, seed=11)
    records = play_games(spec.configurations[0], spec.seed, 0, spec.games)
    return spec, records


def _by_hand(records, players, labels):
    """Per (start seat, position) and per (bot, position): n, wins, score list; a plain loop."""
    start, bot, adv_score, adv_win = {}, {}, [], []
    for i in range(len(records)):
        if records.end_reason[i]:
            continue
        first = int(records.first_player[i])
        for seat in range(players):
            q = (seat - first) % players
            won = bool(records.winners[i, seat])
            score = int(records.scores[i, seat])
            label = labels[int(records.seat_bot[i, seat])]
            for table, key in ((start, (first, q)), (bot, (label, q))):
                n, w, xs = table.get(key, (0, 0, []))
                table[key] = (n + 1, w + won, xs + [score])
        others = [s for s in range(players) if s != first]
        adv_score.append(records.scores[i, first] - np.mean(records.scores[i, others]))
        adv_win.append(records.winners[i, first] - np.mean(records.winners[i, others]))
    return start, bot, np.array(adv_score), np.array(adv_win, dtype=float)


def _mean_ci(xs):
    xs = np.asarray(xs, dtype=float)
    half = Z95 * xs.std(ddof=1) / np.sqrt(len(xs))
    return xs.mean(), [xs.mean() - half, xs.mean() + half]


def test_turn_order_matches_a_plain_loop(played):
    spec, records = played
    cfg = spec.configurations[0]
    players = cfg.players
    doc = derive(count(records, 0, cfg), spec)
    turn = doc["turn_order"]
    assert doc["configurations"][0]["turn_order"] == turn
    start, bot, adv_score, adv_win = _by_hand(records, players, list(cfg.bots))
    assert turn["games"] == doc["games_finished"] == len(adv_score)
    for s, row in enumerate(turn["start_seats"]):
        n, w, xs = start.get((s, 0), (0, 0, []))
        assert row["seat"] == s and row["games"] == n and row["wins"] == w
        assert row["score"] == pytest.approx(np.mean(xs))
        for q, cell in enumerate(row["positions"]):
            n, w, xs = start[(s, q)]
            assert (cell["player_games"], cell["wins"]) == (n, w)
            assert cell["score_ci95"] == pytest.approx(_mean_ci(xs)[1])
    assert sum(r["games"] for r in turn["start_seats"]) == turn["games"]
    for q, row in enumerate(turn["positions"]):
        xs = sum((start[(s, q)][2] for s in range(players)), [])
        assert row["score"] == pytest.approx(np.mean(xs))
        # The same player-games as the older `positions` groups.
        assert row["wins"] == doc["positions"][q]["wins"]
        assert row["win_rate_ci95"] == doc["positions"][q]["win_rate_ci95"]
    for label, rows in turn["bots"].items():
        for q, cell in enumerate(rows):
            n, w, xs = bot[(label, q)]
            assert (cell["player_games"], cell["wins"]) == (n, w)
            assert cell["score"] == pytest.approx(np.mean(xs))
    first = turn["first_player"]
    assert first["fair_win_rate"] == pytest.approx(1 / players)
    assert first["win_rate"] == turn["positions"][0]["win_rate"]
    mean, ci = _mean_ci(adv_score)
    assert first["score_diff"] == pytest.approx(mean)
    assert first["score_diff_ci95"] == pytest.approx(ci)
    mean, ci = _mean_ci(adv_win)
    assert first["win_rate_diff"] == pytest.approx(mean)
    assert first["win_rate_diff_ci95"] == pytest.approx(ci)


def test_turn_order_counters_merge_like_the_whole(played):
    spec, records = played
    cfg = spec.configurations[0]
    whole = count(records, 0, cfg)
    order = np.random.default_rng(3).permutation(len(records))
    parts = [count(records.take(np.sort(ix)), 0, cfg) for ix in np.array_split(order, 3)]
    assert merge(merge(parts[2], parts[0]), parts[1]) == whole
    assert any(key.startswith("c0|turn|start=") for key in whole)


def test_a_truncated_game_is_left_out_of_turn_order(played):
    spec, records = played
    cfg = spec.configurations[0]
    cut = records.take(np.arange(10))
    cut.end_reason = cut.end_reason.copy()
    cut.end_reason[:4] = 1
    turn = derive(count(cut, 0, cfg), spec)["turn_order"]
    assert turn["games"] == 6
    assert sum(r["player_games"] for r in turn["positions"]) == 6 * cfg.players


def test_table_and_report_show_turn_order_in_plain_words(played):
    from service.cli.output import format_table
    from service.report import html_page

    spec, records = played
    doc = derive(count(records, 0, spec.configurations[0]), spec)
    text = format_table(doc)
    first = doc["turn_order"]["first_player"]
    assert "the start player of round 1 wins" in text
    assert f"{100 * first['win_rate']:.1f}%" in text
    assert "2nd to play" in text and "games started" in text
    page = html_page(doc)
    assert "starts in round 1" in page and "2nd to play in round 1" in page
