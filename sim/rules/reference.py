"""A small, readable one-game Azul engine that follows docs/rules.md section by section.

It is the oracle the batch engine (`sim.rules.engine`) is tested against in lockstep
(docs/engine.md): plain Python lists and ints, one game, no speed tricks. Comments cite
docs/rules.md §numbers.

Choices fixed here (the batch engine makes the same ones; tests/test_lockstep.py checks it):

- **Rules as data**: a game plays one `sim.rules.rulesets.RuleSet` (``rules=``, default the printed
  game): bonuses, floor, factories, tiles, marker and end rows as docs/rules.md, "Rule variants",
  says; ``T`` below is ``tiles_per_factory`` (4), the floor's slots ``len(rules.floor)`` (7).
- **Dealing** (§7.2, §12.6). At the start of round ``r`` (1-based), for factory ``i = 0..F-1`` and
  slot ``j = 0..T-1``: if the bag is empty, pour the whole lid into it; if it is still empty, stop
  filling altogether; else ``u = scalar_uniform32(seed, game, DEAL, r*64 + i*T + j)``,
  ``idx = (u * bag_total) >> 32`` and the tile is the smallest colour ``c`` with
  ``bag[0] + … + bag[c] > idx``. A round that deals zero tiles ends the game with ``no_tiles``
  (§10.5); nothing is drawn after the end (§7.1).
- **Round cap** (§10.6): after round ``max_rounds`` the game stops with ``round_cap`` instead of
  dealing again.
- **Marker** (§5.4, §5.6, §10.4): placed on the floor before the picked tiles; with a full floor it
  is still taken (its holder starts next) but occupies no slot. Untaken, the round's start player
  starts again. A marker of N points takes no slot: its holder loses N at the round end, with the
  floor penalty. With no marker (``off``) the seat left of the round's start player starts next.
- **Floor and lid** (§5.3, §6.4): tiles beyond the last slot go to the lid at once; floor tiles go
  to the lid at cleanup. The canonical snapshot's ``lid`` *includes* tiles lying on floors (the
  batch engine moves them at once), so the two engines agree at every step.
- **Gray wall** (§9): ``choose_column(seat, row, colour, legal_cols) -> col`` is called for each
  full pattern line whose tile has at least one legal column, seats ``0..n-1``, rows top to bottom;
  the default is the leftmost legal column (§9.3.1). No legal column is the dead end of §9.4 (the
  callback is not called).
- **At the end** the snapshot shows the final state: ``round`` is the last round played (a round
  that dealt nothing is not counted), ``current`` is the seat that would start the next round,
  floors are empty and the marker is where the last round left it (held by ``marker_holder``, or
  still in the centre if nobody took it).

Setting up positions for tests: `ReferenceGame.from_position` builds a game in the middle of a round
from keyword arguments (see its docstring); any attribute may also be assigned directly.
"""

from __future__ import annotations

import numpy as np

from sim.quote import shown

from . import rng
from .actions import FLOOR, decode, describe, encode, n_actions
from .constants import WALLS, wall_column
from .rulesets import PRINTED_RULES, RuleSet

MARKER = -1  # the start-player marker as an object on a floor line (it is not a tile, §5.4)


def _cell(grid, name: str) -> list:
    """`grid` as a 5x5 list of rows, or ValueError naming it."""
    try:
        rows = [list(row) for row in grid]
    except TypeError:
        rows = []
    if len(rows) != 5 or any(len(row) != 5 for row in rows):
        raise ValueError(f"{name} must be a 5x5 grid (5, 5); got {shown(grid)}")
    return rows


def _index(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value <= 4:
        raise ValueError(f"{name} must be in 0..4; got {shown(value)}")
    return int(value)


def placement_points(occupied, row: int, col: int) -> int:
    """Points for a tile at ``(row, col)`` (§6.2), by walking runs cell by cell.

    `occupied` is a 5x5 grid of truthy cells *before* placing; the cell must be empty. Written
    independently of the engine's `sim.rules.compiled.tile_points` (a table of runs): the two are
    tested against each other (tests/test_scoring.py).
    """
    occupied = _cell(occupied, "occupied")
    row, col = _index(row, "row"), _index(col, "col")
    if occupied[row][col]:
        raise ValueError(f"cell ({row}, {col}) is already occupied")

    def run(dr: int, dc: int) -> int:
        n, r, c = 0, row + dr, col + dc
        while 0 <= r < 5 and 0 <= c < 5 and occupied[r][c]:
            n, r, c = n + 1, r + dr, c + dc
        return n

    h = 1 + run(0, -1) + run(0, 1)
    v = 1 + run(-1, 0) + run(1, 0)
    if h == 1 and v == 1:
        return 1
    return (h if h >= 2 else 0) + (v if v >= 2 else 0)


def floor_penalty(objects: int, rules: RuleSet = PRINTED_RULES) -> int:
    """§5.3: slot k (left to right) costs ``rules.floor[k]``; the first `objects` slots (objects
    beyond the last slot cost nothing more: they go to the lid, §5.3.1)."""
    if isinstance(objects, bool) or not isinstance(objects, int | np.integer):
        raise ValueError(f"objects must be an integer; got {shown(objects)}")
    if objects < 0:
        raise ValueError(f"objects must be >= 0; got {objects}")
    return sum(rules.floor[: min(int(objects), len(rules.floor))])


def _colour_wall(wall) -> list:
    """A wall of colours (-1 empty, else 0..4) as a 5x5 list, or ValueError."""
    wall = _cell(wall, "wall")
    if any(not (isinstance(c, int | np.integer) and -1 <= c <= 4) for row in wall for c in row):
        raise ValueError("wall must hold -1 (empty) or a colour 0..4")
    return wall


def complete_rows_of(wall) -> int:
    """§8.2: the complete horizontal rows of one colour wall (-1 empty, else the colour)."""
    return sum(all(c >= 0 for c in row) for row in _colour_wall(wall))


def complete_cols_of(wall) -> int:
    """§8.2: the complete vertical columns of one colour wall."""
    wall = _colour_wall(wall)
    return sum(all(wall[r][j] >= 0 for r in range(5)) for j in range(5))


def complete_colours_of(wall) -> int:
    """§8.2 / §9.5: the colours with all 5 tiles on one colour wall, wherever they are (so one
    count serves both walls)."""
    wall = _colour_wall(wall)
    return sum(sum(row.count(c) for row in wall) == 5 for c in range(5))


def end_bonus(wall, rules: RuleSet = PRINTED_RULES) -> int:
    """§8.2: the end bonus of one colour wall: per complete row, column and colour, the rules'
    bonus (2, 7 and 10 printed)."""
    return (
        rules.row_bonus * complete_rows_of(wall)
        + rules.column_bonus * complete_cols_of(wall)
        + rules.colour_bonus * complete_colours_of(wall)
    )


def winner_seats(scores: list[int], rows: list[int]) -> list[int]:
    """§8.3: highest score, then most complete rows among the tied only, then shared."""
    if len(scores) < 1 or len(scores) != len(rows):
        raise ValueError(
            f"scores and rows must be the same length, at least 1; got {len(scores)} and "
            f"{len(rows)}"
        )
    best = max(scores)
    tied = [p for p, s in enumerate(scores) if s == best]
    most = max(rows[p] for p in tied)
    return [p for p in tied if rows[p] == most]


class ReferenceGame:
    """One game of Azul (docs/rules.md), dealt up to the first pick of round 1 on construction.

    Parameters
    ----------
    players : int
        2, 3 or 4 (§3.1).
    wall : str
        ``'coloured'`` or ``'gray'`` (§3.4, §9).
    seed, game : int
        Job seed and game index: key the deal stream (`sim.rules.rng`).
    first_player : int
        Seat that starts round 1 (§3.5).
    max_rounds : int
        Round cap (§10.6).
    rules : RuleSet
        The other rules (docs/rules.md, "Rule variants"); default the printed game. Its own wall
        and round cap are not read: `wall` and `max_rounds` are.
    """

    def __init__(
        self,
        players: int,
        wall: str,
        seed: int,
        game: int,
        first_player: int,
        max_rounds: int = 100,
        rules: RuleSet | None = None,
    ):
        if players not in (2, 3, 4):  # §3.1
            raise ValueError(f"players must be 2, 3 or 4; got {players}")
        if wall not in WALLS:
            raise ValueError(f"wall must be 'coloured' or 'gray'; got {shown(wall)}")
        if not 0 <= first_player < players:
            raise ValueError(f"first_player must be a seat in 0..{players - 1}; got {first_player}")
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1; got {max_rounds}")
        self.players = players
        self.wall_kind = wall
        self.gray = wall == "gray"
        self.seed = seed
        self.game = game
        self.first_player = first_player
        self.max_rounds = max_rounds
        self.rules = PRINTED_RULES if rules is None else rules
        if not isinstance(self.rules, RuleSet):
            raise ValueError(f"rules must be a sim.rules.rulesets.RuleSet; got {shown(self.rules)}")
        self.n_factories = self.rules.factories_at(players)  # §3.2: 5 / 7 / 9 printed
        self.n_actions = n_actions(players, self.n_factories)
        self.floor_slots = len(self.rules.floor)  # §5.3: 7 printed
        self._deal_key = rng.game_keys(seed, np.array([game]), rng.DEAL)

        # §3.3 setup: 100 tiles in the bag (printed), empty lid, zero scores.
        self.bag = [self.rules.tiles_per_colour] * 5
        self.lid = [0] * 5  # tiles in the box lid (tiles lying on floor lines are NOT in here)
        self.factories = [[0] * 5 for _ in range(self.n_factories)]
        self.centre = [0] * 5
        self.marker_in_centre = False
        self.marker_holder = -1  # seat that took the marker this round, -1 if nobody yet
        self.lines = [[[-1, 0] for _ in range(5)] for _ in range(players)]  # [colour, count]
        self.wall = [[[-1] * 5 for _ in range(5)] for _ in range(players)]  # colour or -1
        self.floor = [[] for _ in range(players)]  # objects in slot order: colours or MARKER
        self.scores = [0] * players

        self.round = 0
        self.turn = 0
        self.start_player = first_player  # seat that started the current round (§10.4)
        self.current = first_player
        self.done = False
        self.end_reason: str | None = None

        # Statistics for record() (GameRecords).
        # Sum over rounds of the floor's penalty (and a marker's points), before the clamp.
        self.floor_penalty = [0] * players
        self.marker_takes = [0] * players
        self.bonus = [0] * players
        # (round, scores) after each wall tiling: the floor penalty and the clamp done, no bonus.
        self.tiling_scores: list[tuple[int, list[int]]] = []
        # The choices of the turns (picks; a gray wall's columns are no turns): the turns with
        # more than one legal action, and the legal actions summed over the turns.
        self.decision_turns = 0
        self.legal_actions_total = 0

        # §3.6-3.7: fill the factories; the start player puts the marker in the centre.
        self._start_round(1)

    # ------------------------------------------------------------------ setting up positions

    @classmethod
    def from_position(
        cls,
        players: int = 2,
        wall: str = "coloured",
        *,
        seed: int = 0,
        game: int = 0,
        max_rounds: int = 100,
        round: int = 1,
        turn: int = 0,
        current: int = 0,
        start_player: int | None = None,
        factories=None,
        centre=None,
        marker_in_centre: bool = True,
        marker_holder: int = -1,
        lines=None,
        walls=None,
        floor=None,
        scores=None,
        lid=None,
        bag=None,
        rules: RuleSet | None = None,
    ) -> ReferenceGame:
        """A game in the middle of a round, for tests.

        Everything not given is empty: factories and centre ``[0]*5`` each, lines ``[-1, 0]``,
        walls ``-1``, floors ``[]`` (a floor is a list of objects in slot order: a colour, or
        `MARKER` for the marker), scores 0, lid empty; ``None`` for one seat's entry of `lines`,
        `walls` or `floor` means empty too. `factories` may list fewer factories than
        the game has; the rest are empty. `bag` defaults to whatever makes 20 tiles of each colour
        (§12.1; the rules' ``tiles_per_colour``). `start_player` defaults to `current`.
        Snapshot-style lists are accepted as is.
        No consistency check is made beyond what the engine needs; see
        tests/test_properties.py's ``check_invariants`` for that.
        """
        g = cls(players, wall, seed, game, first_player=0, max_rounds=max_rounds, rules=rules)
        n, f = players, g.n_factories
        g.factories = [list(x) for x in (factories or [])] + [
            [0] * 5 for _ in range(f - len(factories or []))
        ]
        g.centre = list(centre or [0] * 5)
        g.marker_in_centre = marker_in_centre
        g.marker_holder = marker_holder
        g.lines = [
            [list(x) for x in seat] if seat else [[-1, 0] for _ in range(5)]
            for seat in (lines or [None] * n)
        ]
        g.wall = [
            [list(r) for r in seat] if seat else [[-1] * 5 for _ in range(5)]
            for seat in (walls or [None] * n)
        ]
        g.floor = [list(x) if x else [] for x in (floor or [None] * n)]
        g.scores = list(scores or [0] * n)
        g.lid = list(lid or [0] * 5)
        g.round, g.turn, g.current = round, turn, current
        g.start_player = current if start_player is None else start_player
        if bag is None:
            bag = [g.rules.tiles_per_colour - t for t in g._visible_tiles()]
        if min(bag) < 0:
            raise ValueError(
                f"more than {g.rules.tiles_per_colour} tiles of some colour are placed: bag would "
                f"be {bag}"
            )
        g.bag = list(bag)
        return g

    def _visible_tiles(self) -> list[int]:
        """Tiles per colour outside the bag (§12.1 conservation: this plus the bag is the rules'
        tiles per colour, 20 printed)."""
        out = list(self.lid)
        for src in self.factories + [self.centre]:
            out = [a + b for a, b in zip(out, src, strict=True)]
        for p in range(self.players):
            for c, k in self.lines[p]:
                if c >= 0:
                    out[c] += k
            for row in self.wall[p]:
                for c in row:
                    if c >= 0:
                        out[c] += 1
            for obj in self.floor[p]:
                if obj != MARKER:
                    out[obj] += 1
        return out

    # ------------------------------------------------------------------ §5 factory offer

    def _line_accepts(self, seat: int, r: int, colour: int) -> bool:
        """§5.2 (a)-(c): pattern line `r` of `seat` may receive `colour`."""
        line_colour, count = self.lines[seat][r]
        if line_colour not in (-1, colour):  # (a) empty or same colour
            return False
        if count >= r + 1:  # (b) not full (§5.2.1: a full line is never a target)
            return False
        return colour not in self.wall[seat][r]  # (c) wall row lacks the colour (§9.2 too)

    def _source(self, source: int) -> list[int]:
        return self.centre if source == 0 else self.factories[source - 1]

    def legal_actions(self) -> list[int]:
        """Sorted legal action ids of the seat to move; ``[]`` once the game is done."""
        if self.done:
            return []
        # Destinations per colour for the seat to move; the floor is always legal (§5.2.4).
        dests = [
            [r for r in range(5) if self._line_accepts(self.current, r, colour)] + [FLOOR]
            for colour in range(5)
        ]
        out = []
        for source in range(self.n_factories + 1):
            tiles = self._source(source)
            for colour in range(5):
                if tiles[colour]:  # §5.1: the marker alone is never a source
                    first = encode(source, colour, 0)  # ids of one (source, colour) are consecutive
                    out += [first + d for d in dests[colour]]
        return out

    def _why_illegal(self, action) -> str | None:
        if self.done:
            return f"the game is over ({self.end_reason})"
        if isinstance(action, bool) or not isinstance(action, int | np.integer):
            return f"action must be an int; got {shown(action)}"
        if not 0 <= action < self.n_actions:
            return f"action {action} is out of range 0..{self.n_actions - 1}"
        source, colour, dest = decode(int(action))
        if self._source(source)[colour] == 0:
            where = "the centre" if source == 0 else f"factory {source - 1}"
            what = f"action {action} ({describe(action)})"
            return f"{what} is illegal: {where} holds no tile of that colour"
        if dest != FLOOR and not self._line_accepts(self.current, dest, colour):
            line_colour, count = self.lines[self.current][dest]
            if count >= dest + 1:
                why = "that pattern line is full"
            elif line_colour not in (-1, colour):
                why = "that pattern line holds another colour"
            else:
                why = "that wall row already holds the colour"
            return f"action {action} ({describe(action)}) is illegal for seat {self.current}: {why}"
        return None

    def _to_floor(self, seat: int, colour: int, k: int) -> None:
        """§5.3: fill free slots left to right; tiles beyond the last slot (7 printed) go to the
        lid at once."""
        for _ in range(k):
            if len(self.floor[seat]) < self.floor_slots:
                self.floor[seat].append(colour)
            else:
                self.lid[colour] += 1  # §5.3.1/5.3.2

    def step(self, action: int, choose_column=None, legal=None) -> None:
        """Play one pick for the seat to move (§5); finishes the round when the offer ends.

        `choose_column(seat, row, colour, legal_cols) -> col` decides gray-wall columns if this
        pick ends the round (§9.3); ``None`` takes the leftmost legal column (§9.3.1).
        `legal` is this position's ``legal_actions()`` when the caller has just listed them (the
        choices are counted, `decisions`); ``None`` lists them here.

        Raises
        ------
        ValueError
            If the game is over or the action is not legal, naming the problem.
        """
        problem = self._why_illegal(action)
        if problem:
            raise ValueError(problem)
        choices = len(self.legal_actions() if legal is None else legal)
        self.decision_turns += 1 if choices > 1 else 0
        self.legal_actions_total += choices
        source, colour, dest = decode(int(action))
        seat = self.current
        tiles = self._source(source)
        k = tiles[colour]  # §5.1: take all tiles of that colour
        tiles[colour] = 0
        if source != 0:  # §5.1: a factory's other tiles move to the centre
            for c in range(5):
                self.centre[c] += tiles[c]
                tiles[c] = 0
        elif self.marker_in_centre:  # §5.4: first from the centre takes the marker
            self.marker_in_centre = False
            self.marker_holder = seat
            self.marker_takes[seat] += 1
            # §5.4.1: before the tiles; a marker of points takes no slot (it costs its points)
            if self.rules.marker == "floor" and len(self.floor[seat]) < self.floor_slots:
                self.floor[seat].append(MARKER)
            # §5.6: floor full -> still held and starts next round, no slot, no penalty
        if dest == FLOOR:  # §5.2.4
            self._to_floor(seat, colour, k)
        else:  # §5.2, §5.2.2: as many as fit, the excess falls
            line = self.lines[seat][dest]
            m = min(k, dest + 1 - line[1])
            line[0], line[1] = colour, line[1] + m
            self._to_floor(seat, colour, k - m)
        self.turn += 1
        if any(map(any, self.factories)) or any(self.centre):  # §5.7
            self.current = (self.current + 1) % self.players  # §4.2
        else:
            self._end_round(choose_column)

    # ------------------------------------------------------------------ §6 wall tiling

    def legal_columns(self, seat: int, row: int, colour: int) -> list[int]:
        """§9.3: empty cell in `row` whose column holds no `colour` (gray wall)."""
        w = self.wall[seat]
        return [j for j in range(5) if w[row][j] == -1 and all(w[i][j] != colour for i in range(5))]

    def _tile_wall(self, seat: int, choose_column) -> int:
        """§6.1: rows top to bottom (§6.1.1); returns the placement points of this phase."""
        points = 0
        for r in range(5):
            colour, count = self.lines[seat][r]
            if count < r + 1:
                continue  # incomplete lines carry over
            self.lines[seat][r] = [-1, 0]
            if not self.gray:
                col = wall_column(r, colour)  # §2.3
            else:
                legal = self.legal_columns(seat, r, colour)
                if not legal:  # §9.4 dead end: all r+1 tiles to the floor now
                    self._to_floor(seat, colour, r + 1)
                    continue
                col = legal[0] if choose_column is None else choose_column(seat, r, colour, legal)
                if col not in legal:
                    raise ValueError(
                        f"choose_column returned {shown(col)} for seat {seat}, row {r}, colour "
                        f"{colour}; legal columns are {legal}"
                    )
            occupied = [[c >= 0 for c in row] for row in self.wall[seat]]
            points += placement_points(occupied, r, col)  # §6.2, scored immediately
            self.wall[seat][r][col] = colour
            self.lid[colour] += r  # the other r tiles go to the lid
        return points

    def floor_penalty_of(self, objects: int) -> int:
        """§5.3: the floor penalty of `objects` on a floor line of this game's rules."""
        return floor_penalty(objects, self.rules)

    def _end_round(self, choose_column) -> None:
        marker_points = self.rules.marker_points  # None unless the marker costs points
        for seat in range(self.players):
            points = self._tile_wall(seat, choose_column)
            objects = len(self.floor[seat])  # <= the floor's slots by construction (§5.4)
            penalty = self.floor_penalty_of(objects)
            if marker_points is not None and self.marker_holder == seat:
                penalty += marker_points  # taken with the floor penalty, before the clamp
            self.floor_penalty[seat] += penalty
            self.scores[seat] = max(0, self.scores[seat] + points - penalty)  # §6.3, §6.3.1
            for obj in self.floor[seat]:  # §6.4 cleanup: tiles to the lid, marker to its holder
                if obj != MARKER:
                    self.lid[obj] += 1
            self.floor[seat] = []
        self.tiling_scores.append((self.round, list(self.scores)))
        # §5.4 / §10.4: the marker's holder starts next; untaken, the start player starts again;
        # with no marker the seat left of this round's start player.
        if self.rules.marker == "off":
            self.start_player = (self.start_player + 1) % self.players
        elif self.marker_holder >= 0:
            self.start_player = self.marker_holder
        self.current = self.start_player
        self.bonus = [end_bonus(w, self.rules) for w in self.wall]
        # §8.1: ends after tiling; bonuses after the clamp (§8.2.1)
        if max(self.complete_rows()) >= self.rules.end_rows:
            self.scores = [s + b for s, b in zip(self.scores, self.bonus, strict=True)]
            self._finish("row_completed")
        elif self.round >= self.max_rounds:  # §10.6
            self._finish("round_cap")
        else:
            self._start_round(self.round + 1)

    # ------------------------------------------------------------------ §7 next round

    def _start_round(self, r: int) -> None:
        """§7.2 refill (dealing fixed exactly, see the module docstring), §7.4 marker."""
        per_factory = self.rules.tiles_per_factory  # 4 printed
        slots = per_factory * self.n_factories  # at most 64 (`sim.rules.rulesets`)
        draws = rng.uniform32(self._deal_key, r * 64 + np.arange(slots)).tolist()
        dealt = 0
        for slot in range(slots):  # factory i = slot // per_factory
            if sum(self.bag) == 0:  # §7.2.1: pour the lid only when the bag is empty
                self.bag = [b + t for b, t in zip(self.bag, self.lid, strict=True)]
                self.lid = [0] * 5
            if sum(self.bag) == 0:  # §7.2 step 2 / §7.3: stop filling altogether
                break
            idx = (draws[slot] * sum(self.bag)) >> 32  # draws[slot]: counter r*64 + i*4 + j
            colour, acc = 0, self.bag[0]
            while acc <= idx:  # smallest c with bag[0] + ... + bag[c] > idx
                colour += 1
                acc += self.bag[colour]
            self.bag[colour] -= 1
            self.factories[slot // per_factory][colour] += 1
            dealt += 1
        if dealt == 0:  # §10.5: a fixed point, end now
            self._finish("no_tiles")
            return
        self.round = r
        self.marker_in_centre = self.rules.marker != "off"  # §7.4 / §4.3
        self.marker_holder = -1
        self.current = self.start_player

    def _finish(self, reason: str) -> None:  # reason is one of END_REASONS
        self.done = True
        self.end_reason = reason

    # ------------------------------------------------------------------ §8 end, records

    def complete_rows(self) -> list[int]:
        return [complete_rows_of(w) for w in self.wall]

    def complete_cols(self) -> list[int]:
        return [complete_cols_of(w) for w in self.wall]

    def complete_colours(self) -> list[int]:
        return [complete_colours_of(w) for w in self.wall]

    def snapshot(self) -> dict:
        """The canonical state dict shared with the batch engine (plain lists and ints)."""
        lid = list(self.lid)
        for seat_floor in self.floor:  # the canonical lid includes floor tiles
            for obj in seat_floor:
                if obj != MARKER:
                    lid[obj] += 1
        return {
            "round": self.round,
            "turn": self.turn,
            "current": self.current,
            "done": self.done,
            "end_reason": self.end_reason,
            "factories": [list(f) for f in self.factories],
            "centre": list(self.centre),
            "marker_in_centre": self.marker_in_centre,
            "marker_holder": self.marker_holder,
            "bag": list(self.bag),
            "lid": lid,
            "lines": [[list(line) for line in seat] for seat in self.lines],
            "wall": [[list(row) for row in w] for w in self.wall],
            "floor": [len(f) for f in self.floor],
            "scores": list(self.scores),
        }

    def lead(self) -> dict:
        """The lead through the game, from the scores after each wall tiling r (`tiling_scores`;
        the leaders L_r are the seats with the highest score): ``lead_changes``, the r >= 2 with
        L_r != L_(r-1); per seat ``trailing_rounds``, bit r - 1 set when it was below the highest
        after r (r <= 63), and ``last_trailing_round``, the last such r (0 if none)."""
        changes = 0
        trailing = [0] * self.players
        last = [0] * self.players
        before = None
        for r, scores in self.tiling_scores:
            top = max(scores)
            leaders = {p for p in range(self.players) if scores[p] == top}
            if before is not None and leaders != before:
                changes += 1
            before = leaders
            for p in range(self.players):
                if scores[p] < top:
                    last[p] = r
                    if r <= 63:
                        trailing[p] |= 1 << (r - 1)
        return {"lead_changes": changes, "trailing_rounds": trailing, "last_trailing_round": last}

    def decisions(self) -> dict:
        """The choices of the game's turns (picks), counted in `step` from `legal_actions` before
        each pick: ``decision_turns``, the turns with more than one legal action, and
        ``legal_actions``, the legal actions summed over the turns. A gray wall's column choices
        at a round end are no turns."""
        return {"decision_turns": self.decision_turns, "legal_actions": self.legal_actions_total}

    def record(self) -> dict:
        """What `sim.rules.records.GameRecords` holds for this game (§10.7); valid once done.

        ``scores`` include bonuses only on a natural end; ``bonus`` is always what the bonuses are
        (``bonus_if_ended`` for a truncated game); ``winners`` (seat list) is empty when truncated;
        ``provisional_winners`` is §8.3 on the scores as they stand.
        """
        rows = self.complete_rows()
        terminated = self.end_reason == "row_completed"
        provisional = winner_seats(self.scores, rows)
        return {
            "game": self.game,
            "first_player": self.first_player,
            "scores": list(self.scores),
            "rounds": self.round,
            "turns": self.turn,
            "end_reason": self.end_reason,
            "terminated": terminated,
            "truncated": self.done and not terminated,
            "complete_rows": rows,
            "complete_cols": self.complete_cols(),
            "complete_colours": self.complete_colours(),
            "bonus": list(self.bonus),
            "floor_penalty": list(self.floor_penalty),
            "marker_takes": list(self.marker_takes),
            "winners": provisional if terminated else [],
            "provisional_winners": provisional,
        }
