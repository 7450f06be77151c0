"""Balance counters: the measures of game-design research, counted per configuration.

Counted over finished games (``end_reason == row_completed``) from the leader records that the
engine keeps (`sim.rules.compiled.count_lead`: the score leaders after each wall tiling; Azul scores
only at round ends, so a round is the unit of time). Keys, per configuration ``c{k}|bal|``:

- ``winset.<m>``: games whose §8.3 winners are the turn-order positions of bitmask ``m`` (bit q:
  position q in round 1, seat ``(first_player + q) % P``; 0 is the start player). Every
  position's win rate and the joint law of their wins follow, so the balance between positions
  and its interval are derived on read. Positions, not seats: the start seat is drawn at random,
  so seats are alike by construction, and who plays first is what a game's balance is about;
- moments (``.sum``, ``.sumsq``, ``min|``/``max|``, ``.hist.<v>`` bins of 1) of
  ``lead_changes`` (rounds r >= 2 whose leader set differs from round r - 1's) and ``decisive``:
  the round from which the eventual winners led for good, ``1 + max`` over the winners of their
  last trailing round; ``R + 1`` when a winner trailed after the last round R (won by the end
  bonuses);
- ``comeback.<k>`` (k = 1..`COMEBACK_ROUNDS`): games won by a seat that trailed after round k;
  ``reached.<k>``: games of at least k rounds; ``comeback.final``: games won by a seat that
  trailed after the last round (decided by the end bonuses, ``decisive == R + 1``);
- the choices of the turns (`sim.rules.compiled.pick` counts them before every pick, whichever bot
  picks; a gray wall's columns are no turns): moments (``.sum``, ``.sumsq``, ``min|``/``max|``)
  of ``decision_turns`` (turns with more than one legal pick) and ``legal_actions`` (legal picks
  summed over the game's turns), and their products with the game's turns, ``.turns`` (the sum
  of ``x * turns``): with the turns' moments (``c{k}|turns.sum``/``.sumsq``,
  `sim.stats.counters`) they give the ratios ``decision_turn_share`` and ``legal_actions_mean``
  and their intervals over games, exactly (`_ratio`).

Paired rule sets (`sim.jobs.spec.JobSpec.pairs`, ``c{k}|pbal|``), over the games g finished in both
configuration k and its baseline: ``n``; ``<m>.sum``/``.sumsq`` of the per-game difference
``x_k(g) - x_base(g)`` of each of `PAIRED_MEASURES`; ``win.<a>.<b>``: games whose baseline
winners are the positions ``a`` and configuration k's the positions ``b`` (paired games share
their start seat); ``mix.<u>`` and ``mix.<u>.<w>``, the sums of each of `MIX` (a choice count
or the turns of a game under either side) and of the products of every two of them, from which
the differences of the two ratios follow with their intervals (`_ratio_diff`). Over all game
pairs: ``all`` and ``capped.sum``/``.sumsq`` of the difference of the round-cap indicator.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..rules.constants import END_REASONS, END_ROUND_CAP
from ..rules.records import GameRecords
from .intervals import Z95, moments, wilson

Counters = dict[str, int]

COMEBACK_ROUNDS = 5
RATIOS = {"decision_turns": "decision_turn_share", "legal_actions": "legal_actions_mean"}
HIST_TOP = {"lead_changes": 20, "decisive": 30}  # last, open bin of each histogram
# per game, over its turns (`sim.rules.compiled.pick`)
CHOICES = ("decision_turns", "legal_actions")
PAIRED_MEASURES = (
    "rounds", "turns", "margin", "lead_changes", "decisive", "shared", "final", *CHOICES,
)  # fmt: skip
# The per-game counts of a pair whose second moments the paired ratios need: side.measure.
MIX = tuple(f"{side}.{m}" for side in ("base", "other") for m in (*CHOICES, "turns"))


class Seats:
    """The per-seat columns of the games ``rec[mask]`` that the measures read, one (n,) array
    per seat: numpy's reductions along a short last axis are slow, loops over seats are not."""

    def __init__(self, rec: GameRecords, mask: np.ndarray):
        self.n = int(mask.sum())
        self.players = rec.players
        # The games' rows, selected once by index (a chunk with no truncated game selects
        # nothing), then seat-major copies: boolean masks per column would gather P times.
        index = None if self.n == len(rec) else np.flatnonzero(mask)

        def rows(a: np.ndarray) -> np.ndarray:
            return a if index is None else a.take(index, axis=0)

        def seats(a: np.ndarray, dtype=None) -> list[np.ndarray]:
            return list(np.ascontiguousarray(rows(a).T, dtype=dtype))

        self.won = seats(rec.winners)
        # By turn-order position q in round 1: seat (first_player + q) % P.
        flat = rows(rec.winners).reshape(-1)
        base = np.arange(self.n) * rec.players
        first = rows(rec.first_player).astype(np.int64)
        self.won_at = [flat.take(base + (first + q) % rec.players) for q in range(rec.players)]
        self.last = seats(rec.last_trailing_round, np.int64)
        self.trailing = seats(rec.trailing_rounds)
        self.scores = seats(rec.scores, np.int64)
        self.rounds = rows(rec.rounds).astype(np.int64)
        self.turns = rows(rec.turns).astype(np.int64)
        self.lead_changes = rows(rec.lead_changes).astype(np.int64)
        self.decision_turns = rows(rec.decision_turns).astype(np.int64)
        self.legal_actions = rows(rec.legal_actions).astype(np.int64)

    def winner_sets(self) -> np.ndarray:
        """(n,) int64 bitmask of each game's winners (bit q: turn-order position q)."""
        out = np.zeros(self.n, np.int64)
        for q, won in enumerate(self.won_at):
            out |= won.astype(np.int64) << q
        return out

    def decisive(self) -> np.ndarray:
        """(n,) 1 + the last round after which a winner trailed (``R + 1``: the bonuses)."""
        out = np.zeros(self.n, np.int64)
        for won, last in zip(self.won, self.last, strict=True):
            np.maximum(out, np.where(won, last, 0), out=out)
        return out + 1

    def comebacks(self, k: int) -> np.ndarray:
        """(n,) bool: a winner trailed after round k (k <= 63)."""
        out = np.zeros(self.n, bool)
        for won, trailing in zip(self.won, self.trailing, strict=True):
            out |= won & ((trailing >> np.int64(k - 1)) & 1 == 1)
        return out

    def margins(self) -> np.ndarray:
        """(n,) winners' score minus the best non-winner's (0 when all share the win)."""
        low = np.iinfo(np.int64).min
        top = np.full(self.n, low)
        others = np.full(self.n, low)
        for won, score in zip(self.won, self.scores, strict=True):
            np.maximum(top, score, out=top)
            np.maximum(others, np.where(won, low, score), out=others)
        return np.where(others == low, 0, top - others)

    def shared(self) -> np.ndarray:
        return sum(w.astype(np.int64) for w in self.won) > 1

    def per_game(self) -> dict[str, np.ndarray]:
        """(n,) int64 of each of `PAIRED_MEASURES`."""
        decisive = self.decisive()
        return {
            "rounds": self.rounds,
            "turns": self.turns,
            "margin": self.margins(),
            "lead_changes": self.lead_changes,
            "decisive": decisive,
            "shared": self.shared().astype(np.int64),
            "final": (decisive == self.rounds + 1).astype(np.int64),
            "decision_turns": self.decision_turns,
            "legal_actions": self.legal_actions,
        }


def _add(out: Counters, key: str, value) -> None:
    value = int(value)
    if value:
        out[key] = out.get(key, 0) + value


def count_balance(records: GameRecords, config_index: int) -> Counters:
    """The ``c{k}|bal|`` counters of a batch of games of one configuration."""
    fin = Seats(records, ~records.truncated)
    out: Counters = {}
    if fin.n == 0:
        return out
    c = f"c{config_index}|bal"
    sets = np.bincount(fin.winner_sets())
    for m in np.flatnonzero(sets):
        _add(out, f"{c}|winset.{int(m)}", sets[m])
    values = fin.per_game()
    for name in HIST_TOP:
        v = values[name]
        _add(out, f"{c}|{name}.sum", v.sum())
        _add(out, f"{c}|{name}.sumsq", (v * v).sum())
        out[f"min|{c}|{name}"] = int(v.min())
        out[f"max|{c}|{name}"] = int(v.max())
        hist = np.bincount(np.minimum(v, HIST_TOP[name]))
        for b in np.flatnonzero(hist):
            _add(out, f"{c}|{name}.hist.{int(b)}", hist[b])
    for name in CHOICES:
        v = values[name]
        _add(out, f"{c}|{name}.sum", v.sum())
        _add(out, f"{c}|{name}.sumsq", (v * v).sum())
        _add(out, f"{c}|{name}.turns", (v * fin.turns).sum())
        out[f"min|{c}|{name}"] = int(v.min())
        out[f"max|{c}|{name}"] = int(v.max())
    rounds = fin.rounds
    for k in range(1, COMEBACK_ROUNDS + 1):
        _add(out, f"{c}|comeback.{k}", fin.comebacks(k).sum())
        _add(out, f"{c}|reached.{k}", (rounds >= k).sum())
    _add(out, f"{c}|comeback.final", values["final"].sum())
    return out


def count_balance_paired(base: GameRecords, other: GameRecords, config_index: int) -> Counters:
    """The ``c{k}|pbal|`` counters of configuration k's games against its baseline's: the same
    games in the same order."""
    if len(base) != len(other) or not (base.game == other.game).all():
        raise ValueError("paired records must hold the same games in the same order")
    out: Counters = {}
    if len(base) == 0:
        return out
    c = f"c{config_index}|pbal"
    capped = (other.end_reason == END_ROUND_CAP).astype(np.int64) - (
        base.end_reason == END_ROUND_CAP
    ).astype(np.int64)
    _add(out, f"{c}|all", len(base))
    _add(out, f"{c}|capped.sum", capped.sum())
    _add(out, f"{c}|capped.sumsq", (capped * capped).sum())
    both = ~base.truncated & ~other.truncated
    if not both.any():
        return out
    b, o = Seats(base, both), Seats(other, both)
    _add(out, f"{c}|n", b.n)
    vb, vo = b.per_game(), o.per_game()
    for name in PAIRED_MEASURES:
        d = vo[name] - vb[name]
        _add(out, f"{c}|{name}.sum", d.sum())
        _add(out, f"{c}|{name}.sumsq", (d * d).sum())
    mix = {
        f"{side}.{m}": v[m]
        for side, v in (("base", vb), ("other", vo))
        for m in (*CHOICES, "turns")
    }
    for i, u in enumerate(MIX):
        _add(out, f"{c}|mix.{u}", mix[u].sum())
        for w in MIX[i:]:
            _add(out, f"{c}|mix.{u}.{w}", (mix[u] * mix[w]).sum())
    players = base.players
    joint = np.bincount(b.winner_sets() * (1 << players) + o.winner_sets())
    for j in np.flatnonzero(joint):
        a, m = divmod(int(j), 1 << players)
        _add(out, f"{c}|win.{a}.{m}", joint[j])
    return out


# --- derived on read ----------------------------------------------------------------------------


def _get(counters: Counters, key: str) -> int:
    return int(counters.get(key, 0))


def _position_wins(sets: dict[int, int], players: int) -> list[int]:
    return [sum(c for m, c in sets.items() if m >> p & 1) for p in range(players)]


def _gap_positions(wins: list[int]) -> tuple[int, int]:
    """The positions of the largest and the smallest win count (first of ties)."""
    return wins.index(max(wins)), wins.index(min(wins))


def _balance(sets: dict[int, int], n: int, players: int) -> dict[str, Any]:
    """Balance ``1 - (max_q r_q - min_q r_q)`` over turn-order positions, and its interval."""
    wins = _position_wins(sets, players)
    hi, lo = _gap_positions(wins)
    # Per game y = w_hi - w_lo; its moments from the winner sets.
    s = q = 0
    for m, count in sets.items():
        y = (m >> hi & 1) - (m >> lo & 1)
        s += count * y
        q += count * y * y
    gap = moments(n, s, q)
    doc: dict[str, Any] = {
        "balance": None if gap["mean"] is None else 1.0 - gap["mean"],
        "balance_ci95": None,
        "gap_positions": [hi, lo],
    }
    if gap["ci95"] is not None:
        doc["balance_ci95"] = [max(0.0, 1.0 - gap["ci95"][1]), min(1.0, 1.0 - gap["ci95"][0])]
    return doc


# The readers below look up every key they may read (a winner set is one of the 2^P masks of
# the positions) rather than scan the counters: a 100-configuration job holds some 70,000 keys,
# and a scan per configuration made its derivation quadratic.


def _winsets(counters: Counters, prefix: str, players: int) -> dict[int, int]:
    head = f"{prefix}|winset."
    got = ((m, counters.get(f"{head}{m}", 0)) for m in range(1 << players))
    return {m: int(v) for m, v in got if v}


def _moment(counters: Counters, c: str, name: str, n: int) -> dict[str, Any]:
    out = moments(n, _get(counters, f"{c}|{name}.sum"), _get(counters, f"{c}|{name}.sumsq"))
    out["min"] = counters.get(f"min|{c}|{name}") if n else None
    out["max"] = counters.get(f"max|{c}|{name}") if n else None
    return out


def _ratio(n: int, sx: int, sy: int, qx: int, qy: int, qxy: int) -> dict[str, Any]:
    """``{"value", "ci95"}`` of the ratio ``sum x / sum y`` over n games, from the exact sums
    of x, y, x², y² and x y: its 95 % interval over games by the delta method (the ratio
    estimator's variance ``sum (x - R y)² / ((n - 1) n ybar²)``, computed in integers)."""
    out: dict[str, Any] = {"value": None, "ci95": None}
    if n <= 0 or sy <= 0:
        return out
    value = sx / sy
    out["value"] = value
    if n >= 2:
        # sum (x sy - y sx)², an exact integer: sy² sum (x - R y)².
        spread = sy * sy * qx - 2 * sy * sx * qxy + sx * sx * qy
        half = Z95 * math.sqrt(max(spread, 0) * n / (n - 1)) / (sy * sy)
        out["ci95"] = [value - half, value + half]
    return out


def _ratio_diff(counters: Counters, c: str, n: int, name: str) -> dict[str, Any]:
    """``{"n", "mean", "ci95"}`` of ``R_other - R_base``, each ``R = sum name / sum turns`` over
    the n paired games, from the ``mix`` counters: the delta method's interval, the per-game
    term ``e = (x_o - R_o y_o) / ybar_o - (x_b - R_b y_b) / ybar_b`` scaled to integers."""
    out: dict[str, Any] = {"n": n, "mean": None, "ci95": None}
    names = [f"other.{name}", "other.turns", f"base.{name}", "base.turns"]
    xo, yo, xb, yb = (_get(counters, f"{c}|mix.{u}") for u in names)
    if n <= 0 or yo <= 0 or yb <= 0:
        return out
    out["mean"] = xo / yo - xb / yb
    if n >= 2:
        # E = e * n^-1 * yo² yb², linear in the game's four counts with integer coefficients.
        coef = [yb * yb * yo, -yb * yb * xo, -yo * yo * yb, yo * yo * xb]
        total = 0
        for i, u in enumerate(names):
            for j, w in enumerate(names):
                a, z = sorted((u, w), key=MIX.index)
                total += coef[i] * coef[j] * _get(counters, f"{c}|mix.{a}.{z}")
        half = Z95 * math.sqrt(max(total, 0) * n / (n - 1)) / (yo * yo * yb * yb)
        out["ci95"] = [out["mean"] - half, out["mean"] + half]
    return out


def derive_balance(counters: Counters, k: int, config) -> dict[str, Any]:
    """The ``balance`` section of configuration k (docs/statistics.md, Balance)."""
    c, b = f"c{k}", f"c{k}|bal"
    players = config.players
    n = _get(counters, f"{c}|games")
    capped = _get(counters, f"{c}|truncated.round_cap")
    played = n + sum(_get(counters, f"{c}|truncated.{reason}") for reason in END_REASONS[1:])
    sets = _winsets(counters, b, players)
    wins = _position_wins(sets, players)
    shared = _get(counters, f"{c}|shared_games")
    doc: dict[str, Any] = {"games": n, "games_played": played}
    doc.update(_balance(sets, n, players))
    doc["position_win_rates"] = [w / n if n else None for w in wins]
    doc["position_win_rates_ci95"] = [wilson(w, n) for w in wins]
    doc["first_player_win_rate"] = wins[0] / n if n else None  # position 0 starts round 1
    doc["first_player_win_rate_ci95"] = wilson(wins[0], n)
    doc["shared_win_rate"] = shared / n if n else None
    doc["shared_win_rate_ci95"] = wilson(shared, n)
    doc["round_cap_rate"] = capped / played if played else None
    doc["round_cap_rate_ci95"] = wilson(capped, played)
    for name in ("rounds", "turns", "margin"):
        doc[name] = _moment(counters, c, name, n)
    for name, top in HIST_TOP.items():
        doc[name] = _moment(counters, b, name, n)
        doc[name]["histogram"] = [_get(counters, f"{b}|{name}.hist.{v}") for v in range(top + 1)]
    turns = (_get(counters, f"{c}|turns.sum"), _get(counters, f"{c}|turns.sumsq"))
    for name, ratio in RATIOS.items():
        doc[name] = _moment(counters, b, name, n)
        got = _ratio(
            n,
            _get(counters, f"{b}|{name}.sum"),
            turns[0],
            _get(counters, f"{b}|{name}.sumsq"),
            turns[1],
            _get(counters, f"{b}|{name}.turns"),
        )
        doc[ratio], doc[f"{ratio}_ci95"] = got["value"], got["ci95"]
    rows = []
    for r in range(1, COMEBACK_ROUNDS + 1):
        reached, won = _get(counters, f"{b}|reached.{r}"), _get(counters, f"{b}|comeback.{r}")
        rows.append(
            {
                "after_round": r,
                "games": reached,
                "comebacks": won,
                "rate": won / reached if reached else None,
                "rate_ci95": wilson(won, reached),
            }
        )
    doc["comebacks"] = rows
    final = _get(counters, f"{b}|comeback.final")
    doc["decided_by_bonuses"] = final
    doc["decided_by_bonuses_rate"] = final / n if n else None
    doc["decided_by_bonuses_rate_ci95"] = wilson(final, n)
    return doc


def _joint(counters: Counters, prefix: str, players: int) -> dict[tuple[int, int], int]:
    head = f"{prefix}|win."
    out = {}
    for a in range(1 << players):
        for m in range(1 << players):
            v = counters.get(f"{head}{a}.{m}", 0)
            if v:
                out[a, m] = int(v)
    return out


def derive_balance_paired(counters: Counters, k: int, baseline: int, players: int) -> dict:
    """The ``balance_paired`` section: configuration k minus its baseline, game for game."""
    c = f"c{k}|pbal"
    n = _get(counters, f"{c}|n")
    every = _get(counters, f"{c}|all")
    doc: dict[str, Any] = {"baseline": baseline, "games": n, "game_pairs": every}
    for name in PAIRED_MEASURES:
        doc[name] = moments(
            n, _get(counters, f"{c}|{name}.sum"), _get(counters, f"{c}|{name}.sumsq")
        )
    for name, ratio in RATIOS.items():
        doc[ratio] = _ratio_diff(counters, c, n, name)
    doc["round_cap_rate"] = moments(
        every, _get(counters, f"{c}|capped.sum"), _get(counters, f"{c}|capped.sumsq")
    )
    joint = _joint(counters, c, players)
    base_sets: dict[int, int] = {}
    other_sets: dict[int, int] = {}
    for (a, m), v in joint.items():
        base_sets[a] = base_sets.get(a, 0) + v
        other_sets[m] = other_sets.get(m, 0) + v
    bh, bl = _gap_positions(_position_wins(base_sets, players))
    oh, ol = _gap_positions(_position_wins(other_sets, players))
    # balance_k - balance_base = gap_base - gap_k: per game y, its moments from the joint sets.
    s = q = 0
    seat_s = [0] * players
    seat_q = [0] * players
    for (a, m), v in joint.items():
        y = ((a >> bh & 1) - (a >> bl & 1)) - ((m >> oh & 1) - (m >> ol & 1))
        s += v * y
        q += v * y * y
        for p in range(players):
            d = (m >> p & 1) - (a >> p & 1)
            seat_s[p] += v * d
            seat_q[p] += v * d * d
    doc["balance"] = moments(n, s, q)
    doc["position_win_rates"] = [moments(n, seat_s[p], seat_q[p]) for p in range(players)]
    return doc
