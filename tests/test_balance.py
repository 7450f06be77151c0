"""Balance measures checked against an independent computation from per-game rows.

The games are played by the batch engine (`sim.jobs.play.play_table`) with a recorder that keeps
every pick and every gray-wall column; each game is then replayed on the reference engine
(`sim.rules.goldens.play_reference`), and the measures are computed here in plain Python from the
reference's scores after each wall tiling: lead changes, the rounds each seat trailed,
decisiveness, comebacks, seat balance, and the paired differences of two rule sets. The decision
turns are counted here too, from the reference's position before each pick (`choices_by_hand`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from sim.jobs.local import run_local
from sim.jobs.play import Recorder, play_table, set_table
from sim.jobs.spec import Configuration, JobSpec
from sim.rules.constants import END_REASONS
from sim.rules.goldens import play_reference
from sim.rules.reference import ReferenceGame
from sim.stats import count, derive, merge_all
from sim.stats.balance import (
    CHOICES,
    COMEBACK_ROUNDS,
    HIST_TOP,
    MIX,
    count_balance,
    count_balance_paired,
)
from sim.stats.intervals import Z95

SEED = 424242


class Moves(Recorder):
    """Every pick of every game, and the gray-wall column of every tiled line."""

    def __init__(self):
        self.moves = defaultdict(list)
        self.columns = defaultdict(dict)
        self.walls = {}

    def dealt(self, st, slots):
        for b in slots:
            self.walls[int(st.game[b])] = st.wall[:, b].copy()

    def picking(self, st, slots, actions):
        for b, a in zip(slots, actions, strict=True):
            self.moves[int(st.game[b])].append(int(a))

    def tiled(self, st, slots):
        for b in slots:
            g = int(st.game[b])
            new = st.wall[:, b] & ~self.walls[g]
            for p in range(st.players):
                for r in range(5):
                    bits = int(new[p]) >> (5 * r) & 31
                    if bits:
                        self.columns[g][(int(st.round[b]), p, r)] = bits.bit_length() - 1
            self.walls[g] = st.wall[:, b].copy()


def play_recorded(config: Configuration, games: range, max_rounds: int):
    moves = Moves()
    table = set_table(config, SEED, np.arange(games.start, games.stop))
    rec = play_table(table, max_rounds, recorder=moves)
    return rec, table, moves


def reference_history(config, table, moves, i: int, max_rounds: int) -> tuple[list, dict]:
    """The reference engine's scores after each wall tiling (before the end bonuses) of game i
    of `table`, and its record."""
    g = int(table.games[i])
    golden = play_reference(
        config.players,
        config.wall,
        SEED,
        g,
        int(table.first_player[i]),
        max_rounds,
        moves=moves.moves[g],
        columns=moves.columns[g],
    )
    record = golden["record"]
    history = [list(r["scores"]) for r in golden["rounds"]]
    if record["terminated"]:  # the last round's scores hold the bonuses
        history[-1] = [s - b for s, b in zip(history[-1], record["bonus"], strict=True)]
    return history, record


def legal_by_hand(s: dict) -> int:
    """The legal picks of the seat to move in snapshot `s`, counted from the rules (§5.1-§5.2):
    every (source, colour) it holds, to every line that may take the colour, or to the floor."""
    seat = s["current"]
    total = 0
    for tiles in [s["centre"], *s["factories"]]:
        for colour in range(5):
            if tiles[colour]:
                lines = sum(
                    1
                    for r, (c, k) in enumerate(s["lines"][seat])
                    if c in (-1, colour) and k < r + 1 and colour not in s["wall"][seat][r]
                )
                total += lines + 1
    return total


def choices_by_hand(config, table, moves, i: int, max_rounds: int) -> dict:
    """Game i of `table` replayed on the reference engine: its decision turns and legal picks,
    counted at every turn from the position before the pick."""
    g = int(table.games[i])
    game = ReferenceGame(
        config.players, config.wall, SEED, g, int(table.first_player[i]), max_rounds
    )
    columns = moves.columns[g]
    decisions = legal = 0
    for action in moves.moves[g]:
        n = legal_by_hand(game.snapshot())
        decisions += n > 1
        legal += n
        r = game.round
        game.step(action, choose_column=lambda seat, row, _c, _l, r=r: columns[(r, seat, row)])
    assert game.done
    return {"decision_turns": decisions, "legal_actions": legal}


def leaders_by_hand(history: list[list[int]]) -> dict:
    lead = [{p for p, s in enumerate(row) if s == max(row)} for row in history]
    players = len(history[0])
    trailing = [[r + 1 for r in range(len(lead)) if p not in lead[r]] for p in range(players)]
    return {
        "lead": lead,
        "lead_changes": sum(1 for r in range(1, len(lead)) if lead[r] != lead[r - 1]),
        "trailing": trailing,
        "trailing_bits": [sum(1 << (r - 1) for r in t if r <= 63) for t in trailing],
        "last": [max(t, default=0) for t in trailing],
    }


def measures_by_hand(history, record) -> dict:
    """Per-game measures of a finished game, from its score history and record alone."""
    hand = leaders_by_hand(history)
    winners = record["winners"]
    rounds = len(history)
    decisive = 1 + max(hand["last"][w] for w in winners)
    scores = record["scores"]
    others = [s for p, s in enumerate(scores) if p not in winners]
    return {
        "winners": winners,
        "rounds": rounds,
        "turns": record["turns"],
        "lead_changes": hand["lead_changes"],
        "decisive": decisive,
        "comeback": {
            k: any(k in hand["trailing"][w] for w in winners) for k in range(1, COMEBACK_ROUNDS + 1)
        },
        "final": any(rounds in hand["trailing"][w] for w in winners),
        "margin": max(scores) - max(others) if others else 0,
        "shared": len(winners) > 1,
        "decision_turns": record["decision_turns"],
        "legal_actions": record["legal_actions"],
    }


def positions(winners: list[int], record: dict) -> int:
    """Bitmask of the winners' turn-order positions in round 1 (bit q: the q-th seat after the
    start player)."""
    players = len(record["scores"])
    return sum(1 << ((w - record["first_player"]) % players) for w in winners)


CASES = [
    (2, "coloured", ("heuristic", "greedy"), 100),
    (3, "gray", ("heuristic", "greedy", "random"), 100),
    (4, "coloured", ("greedy", "heuristic", "greedy", "heuristic"), 5),
    (2, "gray", ("random", "greedy"), 12),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}p-{c[1]}-cap{c[3]}")
def played(request):
    players, wall, bots, cap = request.param
    config = Configuration(players, bots, wall=wall)
    rec, table, moves = play_recorded(config, range(30, 90), cap)
    rows = []
    for i in range(len(rec)):
        history, record = reference_history(config, table, moves, i, cap)
        record = {**record, **choices_by_hand(config, table, moves, i, cap)}
        rows.append((history, record))
    return config, rec, rows


def test_leader_records_are_the_reference_score_history(played):
    _config, rec, rows = played
    for i, (history, record) in enumerate(rows):
        assert record["scores"] == rec.scores[i].tolist()
        assert END_REASONS[rec.end_reason[i]] == record["end_reason"]
        hand = leaders_by_hand(history)
        assert rec.lead_changes[i] == hand["lead_changes"]
        assert rec.trailing_rounds[i].tolist() == hand["trailing_bits"]
        assert rec.last_trailing_round[i].tolist() == hand["last"]
        assert rec.decision_turns[i] == record["decision_turns"]
        assert rec.legal_actions[i] == record["legal_actions"]
        assert 0 < rec.decision_turns[i] <= rec.turns[i] <= rec.legal_actions[i]


def test_balance_counters_match_the_games_counted_by_hand(played):
    config, rec, rows = played
    got = count_balance(rec, 0)
    want: dict[str, int] = defaultdict(int)
    finished = [(h, r) for h, r in rows if r["terminated"]]
    values = defaultdict(list)
    for history, record in finished:
        m = measures_by_hand(history, record)
        want[f"c0|bal|winset.{positions(m['winners'], record)}"] += 1
        for name in HIST_TOP:
            v = m[name]
            values[name].append(v)
            want[f"c0|bal|{name}.sum"] += v
            want[f"c0|bal|{name}.sumsq"] += v * v
            want[f"c0|bal|{name}.hist.{min(v, HIST_TOP[name])}"] += 1
        for k in range(1, COMEBACK_ROUNDS + 1):
            want[f"c0|bal|comeback.{k}"] += m["comeback"][k]
            want[f"c0|bal|reached.{k}"] += m["rounds"] >= k
        want["c0|bal|comeback.final"] += m["final"]
        for name in CHOICES:
            v = m[name]
            values[name].append(v)
            want[f"c0|bal|{name}.sum"] += v
            want[f"c0|bal|{name}.sumsq"] += v * v
            want[f"c0|bal|{name}.turns"] += v * m["turns"]
    for name in (*HIST_TOP, *CHOICES):
        if values[name]:
            want[f"min|c0|bal|{name}"] = min(values[name])
            want[f"max|c0|bal|{name}"] = max(values[name])
    want = {k: int(v) for k, v in want.items() if v or k.startswith(("min|", "max|"))}
    assert got == want
    assert finished, "some games must finish"


def test_derived_balance_is_the_turn_order_win_rates_gap(played):
    config, rec, rows = played
    spec = JobSpec(configurations=[config], games=len(rec), seed=SEED)
    doc = derive(count(rec, 0, config), spec)["configurations"][0]["balance"]
    finished = [r for _h, r in rows if r["terminated"]]
    n = len(finished)
    players = config.players
    rates = [
        sum((r["first_player"] + q) % players in r["winners"] for r in finished) / n
        for q in range(players)
    ]
    assert doc["games"] == n
    assert doc["position_win_rates"] == pytest.approx(rates)
    assert doc["first_player_win_rate"] == pytest.approx(rates[0])
    assert doc["balance"] == pytest.approx(1 - (max(rates) - min(rates)))
    lo, hi = doc["balance_ci95"]
    assert lo <= doc["balance"] <= hi
    capped = sum(r["end_reason"] == "round_cap" for _h, r in rows)
    assert doc["round_cap_rate"] == pytest.approx(capped / len(rows))
    shared = sum(len(r["winners"]) > 1 for r in finished)
    assert doc["shared_win_rate"] == pytest.approx(shared / n)
    measures = [measures_by_hand(h, r) for h, r in rows if r["terminated"]]
    assert doc["lead_changes"]["mean"] == pytest.approx(
        sum(m["lead_changes"] for m in measures) / n
    )
    assert doc["decisive"]["mean"] == pytest.approx(sum(m["decisive"] for m in measures) / n)
    assert doc["decided_by_bonuses"] == sum(m["final"] for m in measures)
    turns = sum(m["turns"] for m in measures)
    for name, ratio in (
        ("decision_turns", "decision_turn_share"),
        ("legal_actions", "legal_actions_mean"),
    ):
        assert doc[name]["mean"] == pytest.approx(sum(m[name] for m in measures) / n)
        value = sum(m[name] for m in measures) / turns
        assert doc[ratio] == pytest.approx(value)
        # The ratio estimator's interval over games, in floats here.
        ybar = turns / n
        var = sum((m[name] - value * m["turns"]) ** 2 for m in measures) / (n - 1) / n / ybar**2
        half = Z95 * var**0.5
        assert doc[f"{ratio}_ci95"] == pytest.approx([value - half, value + half])


def test_paired_rule_sets_match_the_differences_by_hand():
    bots = ("greedy", "greedy", "random")
    base_cfg = Configuration(3, bots)
    other_cfg = Configuration(3, bots, wall="gray", max_rounds=5)
    base, bt, bm = play_recorded(base_cfg, range(0, 45), 100)
    other, ot, om = play_recorded(other_cfg, range(0, 45), 5)
    got = count_balance_paired(base, other, 1)
    want: dict[str, int] = defaultdict(int)
    pairs = []
    for i in range(45):
        hb, rb = reference_history(base_cfg, bt, bm, i, 100)
        ho, ro = reference_history(other_cfg, ot, om, i, 5)
        rb = {**rb, **choices_by_hand(base_cfg, bt, bm, i, 100)}
        ro = {**ro, **choices_by_hand(other_cfg, ot, om, i, 5)}
        want["c1|pbal|all"] += 1
        d_cap = (ro["end_reason"] == "round_cap") - (rb["end_reason"] == "round_cap")
        want["c1|pbal|capped.sum"] += d_cap
        want["c1|pbal|capped.sumsq"] += d_cap * d_cap
        if not (rb["terminated"] and ro["terminated"]):
            continue
        want["c1|pbal|n"] += 1
        mb, mo = measures_by_hand(hb, rb), measures_by_hand(ho, ro)
        for name in ("rounds", "turns", "margin", "lead_changes", "decisive", "shared", "final",
                     "decision_turns", "legal_actions"):  # fmt: skip
            d = int(mo[name]) - int(mb[name])
            want[f"c1|pbal|{name}.sum"] += d
            want[f"c1|pbal|{name}.sumsq"] += d * d
        pairs.append((mb, mo))
        counts = {f"{side}.{k}": m[k] for side, m in (("base", mb), ("other", mo))
                  for k in ("decision_turns", "legal_actions", "turns")}  # fmt: skip
        for j, u in enumerate(MIX):
            want[f"c1|pbal|mix.{u}"] += counts[u]
            for w in MIX[j:]:
                want[f"c1|pbal|mix.{u}.{w}"] += counts[u] * counts[w]
        assert rb["first_player"] == ro["first_player"]  # paired games start alike
        a, b = positions(mb["winners"], rb), positions(mo["winners"], ro)
        want[f"c1|pbal|win.{a}.{b}"] += 1
    assert got == {k: v for k, v in want.items() if v}
    assert want["c1|pbal|n"] > 20 and want["c1|pbal|capped.sum"] > 0
    # The paired ratio differences and their delta-method intervals, in floats here.
    from sim.stats.balance import derive_balance_paired

    doc = derive_balance_paired(got, 1, 0, 3)
    n = len(pairs)
    for name, ratio in (
        ("decision_turns", "decision_turn_share"),
        ("legal_actions", "legal_actions_mean"),
    ):
        sums = {
            side: [sum(p[s][k] for p in pairs) for k in (name, "turns")]
            for s, side in ((0, "b"), (1, "o"))
        }
        r_b, r_o = (sums[x][0] / sums[x][1] for x in ("b", "o"))
        e = [
            (mo[name] - r_o * mo["turns"]) / (sums["o"][1] / n)
            - (mb[name] - r_b * mb["turns"]) / (sums["b"][1] / n)
            for mb, mo in pairs
        ]
        half = Z95 * (sum(x * x for x in e) / (n - 1) / n) ** 0.5
        assert doc[ratio]["mean"] == pytest.approx(r_o - r_b)
        assert doc[ratio]["ci95"] == pytest.approx([r_o - r_b - half, r_o - r_b + half])


def test_balance_job_statistics_are_the_same_for_any_workers_and_chunks():
    from sim.experiments.balance_lab import balance_spec

    spec = balance_spec(
        ["printed", "wall=gray,max_rounds=7"], [2, 3], "greedy", ["marker", "five"], games=30
    )
    one = run_local(spec, workers=1, chunk_size=7)
    two = run_local(spec, workers=2, chunk_size=11)
    whole = run_local(spec, workers=1, chunk_size=30)
    assert one.counters == two.counters == whole.counters
    strip = lambda r: {k: v for k, v in r.statistics().items() if k != "timing"}  # noqa: E731
    assert strip(one) == strip(two)
    # and the counters are those of the games counted one configuration at a time
    from sim.jobs.play import play_games
    from sim.jobs.sequential import count_chunk

    records = [
        play_games(c, spec.seed, 0, spec.games, spec.max_rounds_of(c)) for c in spec.configurations
    ]
    parts = [count_chunk(spec, [r.take(slice(a, a + 10)) for r in records], a, a + 10)["counters"]
             for a in range(0, 30, 10)]  # fmt: skip
    assert merge_all(parts) == one.counters


def test_pairs_and_a_configurations_own_round_cap_in_the_spec_and_the_api():
    from service.convert import spec_from_proto, spec_to_proto

    data = {
        "configurations": [
            {"bots": ["greedy", "random"]},
            {"bots": ["greedy", "random"], "wall": "gray", "max_rounds": 9},
        ],
        "games": 10,
        "pairs": [[1, 0]],
    }
    spec = JobSpec.from_dict(data)
    assert spec.pairs == ((1, 0),) and spec.pairings() == [(1, 0)] and spec.joint_chunks
    assert [spec.max_rounds_of(c) for c in spec.configurations] == [100, 9]
    assert JobSpec.from_json(spec.to_json()) == spec
    assert spec_from_proto(spec_to_proto(spec)) == spec
    plain = JobSpec.from_dict({"configurations": [{"bots": ["greedy", "random"]}]})
    assert set(plain.to_dict()) == {"configurations", "games", "seed", "max_rounds"}
    assert set(plain.to_dict()["configurations"][0]) == {"players", "bots", "seating", "wall"}
    bad = [
        ({"pairs": [[1, 1]]}, "pairs[0] must be two different configuration indices"),
        ({"pairs": [[1, 5]]}, "pairs[0] must be two different configuration indices"),
        ({"pairs": [[1, 0], [1, 0]]}, "pairs[1]: configuration 1 is already paired"),
        ({"pairs": "1,0"}, "pairs must be a list"),
    ]
    for extra, message in bad:
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
            JobSpec.from_dict({**data, **extra})
    other = {"bots": ["random", "greedy"]}
    with pytest.raises(ValueError, match=r"configurations\[1\]\.bots must be the baseline's"):
        JobSpec.from_dict({**data, "configurations": [data["configurations"][0], other]})
    capped = {"bots": ["greedy", "random"], "max_rounds": 0}
    with pytest.raises(ValueError, match=r"configurations\[0\]\.max_rounds must be an integer"):
        JobSpec.from_dict({"configurations": [capped]})


def test_a_configurations_round_cap_is_the_one_it_plays():
    spec = JobSpec.from_dict(
        {
            "configurations": [
                {"bots": ["random", "random"]},
                {"bots": ["random", "random"], "max_rounds": 3},
            ],
            "games": 20,
            "max_rounds": 6,
        }
    )
    doc = run_local(spec, workers=1).statistics()
    first, second = doc["configurations"]
    assert first["max_rounds"] == 6 and second["max_rounds"] == 3
    assert second["truncated_by_reason"]["round_cap"] == 20
    assert first["truncated_by_reason"]["round_cap"] + first["games_finished"] == 20
    assert first["truncated_by_reason"]["round_cap"] < 20
