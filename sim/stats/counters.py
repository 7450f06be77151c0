"""Integer counters of finished games: `count` and `merge` (docs/design.md, "Statistics").

Counters are a flat ``dict[str, int]``. A key is ``|``-separated: an optional extremum prefix, the
configuration, the group, the statistic::

    c0|rounds.sum                    game-level statistic of configuration 0
    c0|all|score.sumsq               all players of configuration 0
    c0|bot=greedy|wins               every seat played by the bot labelled 'greedy'
    c0|seat=1|score.hist.35          seat 1; histogram bin [35, 40)
    c0|bot=greedy|seat=1|n           bot 'greedy' when sitting in seat 1
    c0|pos=0|wins                    the seat that started round 1 (turn-order position 0)
    c0|h2h=greedy|vs=random|above    head to head, 'greedy' against 'random'
    min|c0|bot=greedy|score          smallest score ('min|' keys merge by min)
    max|c0|rounds                    largest round count ('max|' keys merge by max)

Every other key merges by addition, so `merge` (and the Redis merge script) is generic: add, or
take the min/max for ``min|``/``max|`` keys. Counters are *sparse*: a key whose value is 0 is left
out (a missing key reads as 0, a missing extremum as "no observation"), so the counters of games
``[0, N)`` are the same dict whatever the chunking and merge order.

What is counted (docs/rules.md §8.3, §10.7). All statistics except the truncation counts are over
*finished* games (``end_reason == row_completed``); truncated games are counted apart, by reason,
and left out of everything else, win rates included.

Game level, per configuration (``c{k}|``):

- ``games``: finished games; ``truncated.<reason>``: truncated games by end reason;
- ``shared_games``: finished games with more than one winner;
- moments of ``rounds``, ``turns`` (picks, all seats) and ``margin`` (score of the winners minus the
  best score among non-winners; 0 when everyone shares the win or a tie was broken by rows).

Player level, per group ``G`` = ``all``, ``bot=<label>``, ``seat=<p>``, ``bot=<label>|seat=<p>``,
``pos=<k>`` (seat ``(first_player + k) % P``):

- ``n``: player-games (one per seat of a finished game in the group); ``truncated``: the same for
  truncated games;
- ``wins``: player-games among the §8.3 winners (a shared win counts); ``shared_wins``: those in a
  game with more than one winner;
- moments of ``score``, ``bonus`` (end bonus points), ``rows``, ``columns``, ``colours`` (complete
  rows, columns, colours), ``floor`` (floor penalty points, before the clamp at 0), ``marker``
  (rounds in which the seat took the first-player marker), over ``n``; and of ``win_margin``: the
  game's ``margin`` over the player-games that won (count ``wins``).

A *moment* ``x`` is ``x.sum``, ``x.sumsq``, ``min|...|x`` and ``max|...|x``; some also keep a
histogram ``x.hist.<lo>``, fixed bins ``[lo, lo + width)`` (see `HISTOGRAMS`), the last bin open
(``lo`` and above).

Head to head, per ordered pair of different labels ``a``, ``b`` (``c{k}|h2h=a|vs=b|``):

- ``games``: finished games in which both played;
- ``meetings``: ordered seat pairs (seat of ``a``, seat of ``b``) in those games (a game with ``a``
  twice and ``b`` once is two meetings);
- ``above``: meetings in which ``a`` finished higher than ``b``: higher score, or the same score and
  more complete rows (the §8.3 order applied to the two of them); ``level``: same score and rows.
  ``b``'s ``above`` against ``a`` is ``a``'s "below".

Mirrored configurations also count their groups, and paired configurations their differences
to the baseline (``c{k}|group|...``, ``c{k}|penta|...``, ``c{k}|paired|...``; `sim.stats.groups`).
Every configuration counts its balance measures (``c{k}|bal|...``; `sim.stats.balance`), its
turn order per start seat and bot (``c{k}|turn|...``; `sim.stats.turn_order`), and the focal
player (``bots[0]``) on its own (``c{k}|focal|...``; `sim.stats.focal`).

Bots are grouped by their canonical label (`sim.bots.registry`), so a label that sits in two seats
of a configuration is one group.

The one exception to "the same whatever the run": ``cpu|c{k}|bot=<label>|ns`` and ``|moves``, the
measured CPU of the bots that account theirs (`sim.stats.cpu`), added by
`sim.jobs.chunk.play_chunk`. They merge by addition like the rest; `derive` never reads them into
the statistics.
"""

from __future__ import annotations

import numpy as np

from ..rules.constants import END_REASONS
from ..rules.records import GameRecords
from .balance import count_balance
from .focal import count_focal
from .groups import count_groups
from .turn_order import count_turn_order

Counters = dict[str, int]

# name -> (bin width, lower bound of the last, open bin). Bins start at 0.
HISTOGRAMS: dict[str, tuple[int, int]] = {
    "score": (5, 200),
    "rounds": (1, 30),
    "turns": (10, 400),
    "margin": (2, 100),
}

GAME_MOMENTS = ("rounds", "turns", "margin")
PLAYER_MOMENTS = ("score", "bonus", "rows", "columns", "colours", "floor", "marker")
PLAYER_COUNTS = ("n", "truncated", "wins", "shared_wins")
H2H_COUNTS = ("games", "meetings", "above", "level")


def merge(a: Counters, b: Counters) -> Counters:
    """Merge two counter dicts exactly: add, or min/max for ``min|``/``max|`` keys.

    Associative and commutative; neither argument is changed.
    """
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif key.startswith("min|"):
            out[key] = min(out[key], value)
        elif key.startswith("max|"):
            out[key] = max(out[key], value)
        else:
            out[key] += value
    return {k: v for k, v in out.items() if v != 0 or k.startswith(("min|", "max|"))}


def merge_all(parts) -> Counters:
    """`merge` over an iterable of counter dicts (empty: ``{}``)."""
    out: Counters = {}
    for part in parts:
        out = merge(out, part)
    return out


def _hist_bins(name: str, values: np.ndarray) -> np.ndarray:
    width, top = HISTOGRAMS[name]
    return np.clip(values, 0, top) // width


class _Cells:
    """Per-cell integer statistics of one partition of values into `ncells` cells."""

    def __init__(self, cell: np.ndarray, ncells: int):
        self.cell = cell
        self.ncells = ncells

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        cell = self.cell if mask is None else self.cell[mask]
        return np.bincount(cell, minlength=self.ncells).astype(np.int64)

    def moment(self, values: np.ndarray, mask: np.ndarray | None = None):
        """(sum, sumsq, min, max) per cell, int64; min/max are meaningless for empty cells."""
        cell, v = self.cell, values.astype(np.int64)
        if mask is not None:
            cell, v = cell[mask], v[mask]
        s = np.zeros(self.ncells, np.int64)
        q = np.zeros(self.ncells, np.int64)
        lo = np.full(self.ncells, np.iinfo(np.int64).max)
        hi = np.full(self.ncells, np.iinfo(np.int64).min)
        np.add.at(s, cell, v)
        np.add.at(q, cell, v * v)
        np.minimum.at(lo, cell, v)
        np.maximum.at(hi, cell, v)
        return s, q, lo, hi

    def hist(self, name: str, values: np.ndarray) -> np.ndarray:
        width, top = HISTOGRAMS[name]
        nbins = top // width + 1
        flat = self.cell.astype(np.int64) * nbins + _hist_bins(name, values.astype(np.int64))
        return np.bincount(flat, minlength=self.ncells * nbins).reshape(self.ncells, nbins)


class _Emitter:
    """Accumulates counters into a sparse dict, summing cells into groups."""

    def __init__(self) -> None:
        self.out: Counters = {}

    def add(self, key: str, value) -> None:
        value = int(value)
        if value:
            self.out[key] = self.out.get(key, 0) + value

    def extreme(self, prefix: str, key: str, value: int) -> None:
        full = f"{prefix}|{key}"
        old = self.out.get(full)
        if old is None:
            self.out[full] = int(value)
        else:
            self.out[full] = min(old, int(value)) if prefix == "min" else max(old, int(value))

    def group(self, group: str, cells: list[int], stats: dict) -> None:
        """Emit `stats` (per-cell arrays) summed over `cells` under key prefix `group`."""
        n = sum(int(stats["n"][c]) for c in cells)
        for name in PLAYER_COUNTS:
            self.add(f"{group}|{name}", sum(int(stats[name][c]) for c in cells))
        for name in (*PLAYER_MOMENTS, "win_margin"):
            s, q, lo, hi = stats[name]
            self.add(f"{group}|{name}.sum", sum(int(s[c]) for c in cells))
            self.add(f"{group}|{name}.sumsq", sum(int(q[c]) for c in cells))
            occupied = [c for c in cells if stats["wins" if name == "win_margin" else "n"][c]]
            if occupied:
                self.extreme("min", f"{group}|{name}", min(int(lo[c]) for c in occupied))
                self.extreme("max", f"{group}|{name}", max(int(hi[c]) for c in occupied))
        if n:
            width = HISTOGRAMS["score"][0]
            hist = stats["score_hist"][cells].sum(axis=0)
            for b in np.flatnonzero(hist):
                self.add(f"{group}|score.hist.{int(b) * width}", hist[b])


def _margin(records: GameRecords) -> np.ndarray:
    """(N,) winners' score minus the best non-winner score (0 if all won); finished games only."""
    scores = records.scores.astype(np.int64)
    top = scores.max(axis=1)
    all_won = records.winners.all(axis=1)
    others = np.where(records.winners, np.iinfo(np.int64).min, scores).max(axis=1)
    return top - np.where(all_won, top, others)


def _player_stats(cells: _Cells, rec: GameRecords, finished: np.ndarray, margin: np.ndarray):
    """Per-cell counters of every player statistic; `cells.cell` is (N*P,) over all games."""
    fin = np.repeat(finished, rec.players)
    won = rec.winners.reshape(-1) & fin
    shared = won & np.repeat(rec.winners.sum(axis=1) > 1, rec.players)
    values = {
        "score": rec.scores,
        "bonus": rec.bonus,
        "rows": rec.complete_rows,
        "columns": rec.complete_cols,
        "colours": rec.complete_colours,
        "floor": rec.floor_penalty,
        "marker": rec.marker_takes,
    }
    stats = {
        "n": cells.count(fin),
        "truncated": cells.count(~fin),
        "wins": cells.count(won),
        "shared_wins": cells.count(shared),
    }
    for name, v in values.items():
        stats[name] = cells.moment(v.reshape(-1), fin)
    stats["win_margin"] = cells.moment(np.repeat(margin, rec.players), won)
    sub = _Cells(cells.cell[fin], cells.ncells)
    stats["score_hist"] = sub.hist("score", rec.scores.reshape(-1)[fin])
    return stats


def count(records: GameRecords, config_index: int, config) -> Counters:
    """Counters of a batch of games of one configuration.

    Parameters
    ----------
    records : the games (any subset of the job's games of this configuration, any order)
    config_index : position of the configuration in the job (the ``c{k}`` of every key)
    config : the `sim.jobs.spec.Configuration`; its canonical bot labels name the bot groups

    Returns
    -------
    counters : sparse ``dict[str, int]`` (see module docstring)
    """
    players = records.players
    if players != config.players:
        raise ValueError(
            f"records have {players} seats but configuration {config_index} has {config.players}"
        )
    # config.bots holds canonical labels; unique ones in order of first appearance.
    labels = list(dict.fromkeys(config.bots))
    lab_of_bot = np.array([labels.index(b) for b in config.bots], dtype=np.int64)
    n_lab = len(labels)
    c = f"c{config_index}"
    em = _Emitter()
    if len(records) == 0:
        return {}

    finished = ~records.truncated
    em.add(f"{c}|games", finished.sum())
    for code, reason in enumerate(END_REASONS):
        if code:
            em.add(f"{c}|truncated.{reason}", (records.end_reason == code).sum())

    fin = records.take(finished)
    margin_all = np.zeros(len(records), np.int64)
    if len(fin):
        margin_all[finished] = _margin(fin)
        em.add(f"{c}|shared_games", (fin.winners.sum(axis=1) > 1).sum())
        for name, values in (
            ("rounds", fin.rounds),
            ("turns", fin.turns),
            ("margin", margin_all[finished]),
        ):
            v = values.astype(np.int64)
            em.add(f"{c}|{name}.sum", v.sum())
            em.add(f"{c}|{name}.sumsq", (v * v).sum())
            em.extreme("min", f"{c}|{name}", v.min())
            em.extreme("max", f"{c}|{name}", v.max())
            width = HISTOGRAMS[name][0]
            hist = np.bincount(_hist_bins(name, v))
            for b in np.flatnonzero(hist):
                em.add(f"{c}|{name}.hist.{int(b) * width}", hist[b])

    # Player level: one cell per (label, seat); every group is a union of cells.
    seat_label = lab_of_bot[records.seat_bot.astype(np.int64)]  # (N, P)
    seat = np.broadcast_to(np.arange(players), seat_label.shape)
    stats = _player_stats(
        _Cells((seat_label * players + seat).reshape(-1), n_lab * players),
        records,
        finished,
        margin_all,
    )
    em.group(f"{c}|all", list(range(n_lab * players)), stats)
    for li, label in enumerate(labels):
        em.group(f"{c}|bot={label}", [li * players + p for p in range(players)], stats)
        for p in range(players):
            em.group(f"{c}|bot={label}|seat={p}", [li * players + p], stats)
    for p in range(players):
        em.group(f"{c}|seat={p}", [li * players + p for li in range(n_lab)], stats)

    # Turn-order position in round 1: seat (first_player + k) % P is position k.
    pos = (seat - records.first_player.astype(np.int64)[:, None]) % players
    pos_stats = _player_stats(_Cells(pos.reshape(-1), players), records, finished, margin_all)
    for k in range(players):
        em.group(f"{c}|pos={k}", [k], pos_stats)
    em.out.update(count_turn_order(records, config_index, seat_label, labels))
    em.out.update(count_focal(records, config_index))
    em.out.update(count_balance(records, config_index))

    if n_lab > 1 and len(fin):
        _head_to_head(em, c, labels, seat_label[finished], fin)
    if config.seating == "mirrored":
        em.out.update(count_groups(records, config_index))
    return em.out


def _head_to_head(em: _Emitter, c: str, labels: list[str], seat_label, fin: GameRecords) -> None:
    n_lab, players = len(labels), fin.players
    present = np.zeros((len(fin), n_lab), np.int64)
    np.put_along_axis(present, seat_label, 1, axis=1)
    games = present.T @ present  # (L, L): finished games in which both played
    meetings = np.zeros(n_lab * n_lab, np.int64)
    above = np.zeros(n_lab * n_lab, np.int64)
    level = np.zeros(n_lab * n_lab, np.int64)
    score = fin.scores.astype(np.int64)
    rows = fin.complete_rows.astype(np.int64)
    for p in range(players):
        for q in range(players):
            if p == q:
                continue
            a, b = seat_label[:, p], seat_label[:, q]
            pair = a * n_lab + b
            differ = a != b
            higher = (score[:, p] > score[:, q]) | (
                (score[:, p] == score[:, q]) & (rows[:, p] > rows[:, q])
            )
            same = (score[:, p] == score[:, q]) & (rows[:, p] == rows[:, q])
            meetings += np.bincount(pair[differ], minlength=n_lab * n_lab)
            above += np.bincount(pair[differ & higher], minlength=n_lab * n_lab)
            level += np.bincount(pair[differ & same], minlength=n_lab * n_lab)
    for ai, a in enumerate(labels):
        for bi, b in enumerate(labels):
            if ai == bi:
                continue
            key = f"{c}|h2h={a}|vs={b}"
            em.add(f"{key}|games", games[ai, bi])
            em.add(f"{key}|meetings", meetings[ai * n_lab + bi])
            em.add(f"{key}|above", above[ai * n_lab + bi])
            em.add(f"{key}|level", level[ai * n_lab + bi])
