"""``azulsim replay``: one game of a job, move by move, as text a person can check by hand or as
plain JSON.

The server sends every step with the whole table after it (`service.replay.GameReplay`). What a
reader needs besides is derived here from consecutive tables with the scoring helpers of
`sim.rules.scoring` (RULES §5.3, §6, §8.2): what lies on each floor line (the first-player marker
and tiles, in the order they fell), and for each wall tiling, per seat, the tiles placed with their
points, the floor penalty, the clamp at 0 and, on the last one, the end bonus. Floor penalties,
the marker and the end bonuses are those of the game's rule set (`GameReplay.rules`, docs/rules.md
"Rule variants"), which the text's first lines and the JSON's ``rules`` show.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from sim.rules.actions import decode
from sim.rules.constants import COLOUR_LETTERS, COLOURS
from sim.rules.rulesets import PRINTED_RULES, RuleSet
from sim.rules.scoring import complete_colours, complete_cols, complete_rows, placement_points

from .common import add_client_options, make_client, resolve_job_id, rpc_errors, whole_number

MARKER = "marker"  # the first-player marker on a floor line; "1" in the text, as on the tile
DEAL, PICK, WALL_TILING = "DEAL", "PICK", "WALL_TILING"


# --- what the tables do not say directly ----------------------------------------------------


@dataclass
class Placed:
    line: int  # pattern line 1..5
    colour: int
    column: int  # wall column 0..4, or -1 for a dead end (gray wall: its tiles fell)
    points: int


@dataclass
class SeatTiling:
    """One seat's wall tiling: ``after = max(0, before + placement - penalty) + bonus``."""

    seat: int
    before: int
    placed: list[Placed] = field(default_factory=list)
    floor: list[str] = field(default_factory=list)  # what lay on the floor, penalised
    penalty: int = 0  # the floor's, and the marker's points when it costs points
    marker_points: int = 0  # of `penalty`: the marker's, when it takes no floor slot
    bonus_rows: int = 0
    bonus_columns: int = 0
    bonus_colours: int = 0
    after: int = 0
    weights: tuple[int, int, int] = (2, 7, 10)  # the end bonus per row, column and colour

    @property
    def placement(self) -> int:
        return sum(p.points for p in self.placed)

    @property
    def bonus(self) -> int:
        row, column, colour = self.weights
        return row * self.bonus_rows + column * self.bonus_columns + colour * self.bonus_colours

    @property
    def clamped(self) -> bool:
        return self.before + self.placement - self.penalty < 0


def floor_penalty(n: int, rules: RuleSet = PRINTED_RULES) -> int:
    """Points lost for `n` objects on a floor line of `rules` (a full floor costs its total)."""
    cum = rules.floor_cumulative()
    return int(cum[min(n, len(rules.floor))])


def floor_after_pick(
    floor: list[str], before: dict, after: dict, seat: int, action: int,
    rules: RuleSet = PRINTED_RULES,
) -> list[str]:  # fmt: skip
    """The floor line of `seat` after its pick `action`: the marker first if this pick took it
    from the centre and it takes a floor slot (RULES §5.4), then the tiles that did not fit
    (§5.2), up to the floor's length."""
    _, colour, _ = decode(action)
    floor = list(floor)
    took_marker = before["marker_in_centre"] and not after["marker_in_centre"]
    if took_marker and rules.marker == "floor" and len(floor) < len(rules.floor):
        floor.append(MARKER)
    fell = after["floor"][seat] - len(floor)
    return floor + [COLOURS[colour]] * max(fell, 0)


def tiling(
    before: dict, after: dict, floors: list[list[str]], final_bonus: bool,
    rules: RuleSet = PRINTED_RULES,
) -> list[SeatTiling]:  # fmt: skip
    """Each seat's wall tiling between the table `before` it and `after` it (RULES §6, §9.4);
    with `final_bonus`, the end bonuses of §8.2 on the final wall; penalties and bonuses those
    of `rules`."""
    out = []
    weights = (rules.row_bonus, rules.column_bonus, rules.colour_bonus)
    for seat, floor in enumerate(floors):
        t = SeatTiling(seat=seat, before=before["scores"][seat], floor=list(floor), weights=weights)
        occupied = [[c >= 0 for c in row] for row in before["wall"][seat]]
        for r in range(5):
            colour, count = before["lines"][seat][r]
            if count < r + 1:
                continue
            new = [c for c in range(5) if not occupied[r][c] and after["wall"][seat][r][c] >= 0]
            if new:
                col = new[0]
                points = int(placement_points(occupied, r, col))
                occupied[r][col] = True
                t.placed.append(Placed(r + 1, colour, col, points))
            else:  # gray-wall dead end: all r + 1 tiles fall to the floor
                t.placed.append(Placed(r + 1, colour, -1, 0))
                room = len(rules.floor) - len(t.floor)
                t.floor += [COLOURS[colour]] * min(room, r + 1)
        if rules.marker_points is not None and before["marker_holder"] == seat:
            t.marker_points = rules.marker_points
        t.penalty = floor_penalty(len(t.floor), rules) + t.marker_points
        if final_bonus:
            wall = after["wall"][seat]
            t.bonus_rows = int(complete_rows(wall))
            t.bonus_columns = int(complete_cols(wall))
            t.bonus_colours = int(complete_colours(wall))
        t.after = after["scores"][seat]
        out.append(t)
    return out


@dataclass
class Annotated:
    """A step with the floor lines as they stand after it and, for a wall tiling, its scoring
    and the table just before it."""

    step: Any  # service.replay.Step
    floors: list[list[str]]
    tiling: list[SeatTiling] | None = None
    before: dict | None = None
    floor_moved: bool = False  # a pick that put something on its seat's floor


def annotate(replay) -> list[Annotated]:
    """Every step of `replay` (a `service.replay.GameReplay`) with what `tiling` and
    `floor_after_pick` derive under its rules."""
    rules = replay.rules
    empty = [[] for _ in range(replay.players)]
    floors, prev, out = empty, None, []
    last_tiling = max((i for i, s in enumerate(replay.steps) if s.kind == WALL_TILING), default=-1)
    for i, step in enumerate(replay.steps):
        if step.kind == PICK and prev is not None:
            floors = list(floors)
            old = floors[step.seat]
            floors[step.seat] = floor_after_pick(
                old, prev, step.state, step.seat, step.action, rules
            )
            out.append(Annotated(step, floors, floor_moved=floors[step.seat] != old))
        elif step.kind == WALL_TILING and prev is not None:
            bonus = i == last_tiling and replay.end_reason == "row_completed"
            out.append(Annotated(step, empty, tiling(prev, step.state, floors, bonus, rules), prev))
            floors = empty
        else:
            floors = empty
            out.append(Annotated(step, floors))
        prev = step.state
    return out


# --- text -----------------------------------------------------------------------------------


def _tiles(counts) -> str:
    return " ".join(COLOUR_LETTERS[c] * int(n) for c, n in enumerate(counts) if n) or "-"


def _floor_text(floor: list[str]) -> str:
    return " ".join("1" if x == MARKER else COLOUR_LETTERS[COLOURS.index(x)] for x in floor) or "-"


def _board_lines(state: dict, seat: int, floor: list[str], rules: RuleSet) -> list[str]:
    lines = []
    for r in range(5):
        colour, count = state["lines"][seat][r]
        line = (COLOUR_LETTERS[colour] if colour >= 0 else ".") * count + "." * (r + 1 - count)
        wall = "".join(COLOUR_LETTERS[c] if c >= 0 else "." for c in state["wall"][seat][r])
        lines.append(f"{line.rjust(5)} | {wall}")
    penalty = floor_penalty(len(floor), rules)
    lines.append(f"floor {_floor_text(floor)}" + (f" (-{penalty})" if penalty else ""))
    return lines


def format_state(
    state: dict, seat_bots: list[str], floors: list[list[str]], rules: RuleSet = PRINTED_RULES
) -> str:
    """The table: factories, centre, then each seat's pattern lines | wall, floor and score."""
    out = []
    facts = "  ".join(f"{i}:[{_tiles(f)}]" for i, f in enumerate(state["factories"]))
    marker = " +marker" if state["marker_in_centre"] else ""
    out.append(f"    factories {facts}")
    out.append(f"    centre [{_tiles(state['centre'])}]{marker}")
    boards = [_board_lines(state, p, floors[p], rules) for p in range(len(seat_bots))]
    heads = [f"seat {p} {b}: {state['scores'][p]} pts" for p, b in enumerate(seat_bots)]
    width = max(len(x) for x in heads + [x for b in boards for x in b]) + 3
    out.append("    " + "".join(h.ljust(width) for h in heads).rstrip())
    for r in range(6):
        out.append("    " + "".join(b[r].ljust(width) for b in boards).rstrip())
    return "\n".join(out)


def _tiling_text(t: SeatTiling, bot: str) -> str:
    placed = ", ".join(
        f"line {p.line} {COLOUR_LETTERS[p.colour]} -> column {p.column + 1} +{p.points}"
        if p.column >= 0
        else f"line {p.line} {COLOUR_LETTERS[p.colour]}: no free column, {p.line} tiles fall"
        for p in t.placed
    )
    sums = f"{t.before} + {t.placement} - {t.penalty}"
    floor = t.penalty - t.marker_points
    text = (
        f"    seat {t.seat} ({bot}): {placed or 'nothing placed'}; placement +{t.placement}, "
        + (f"floor [{_floor_text(t.floor)}] -{floor}" if t.floor else "floor empty -0")
        + (f", marker -{t.marker_points}" if t.marker_points else "")
        + f": {sums}"
    )
    net = max(0, t.before + t.placement - t.penalty)
    raw = t.before + t.placement - t.penalty
    text += f" = {raw}, never below 0: {net}" if t.clamped else f" = {net}"
    if t.bonus:
        row, column, colour = t.weights
        text += (
            f"; end bonus {t.bonus_rows} rows x{row} + {t.bonus_columns} columns x{column} + "
            f"{t.bonus_colours} colours x{colour} = +{t.bonus}: {net + t.bonus}"
        )
    return text


def rules_text(rules: RuleSet) -> str:
    """The rule set a replay states: ``printed``, or its label (the rules that differ)."""
    if rules.printed:
        return "printed (docs/rules.md)"
    return f'{rules.label} (docs/rules.md, "Rule variants"; the rest as printed)'


def format_replay(replay) -> str:
    """The game as readable text, move by move."""
    bots = replay.seat_bots
    rules = replay.rules
    out = [
        f"Game {replay.game} of configuration {replay.configuration}: {replay.players} players, "
        f"{replay.wall} wall; seats: "
        + ", ".join(f"{p} {b}" for p, b in enumerate(bots))
        + f"; seat {replay.first_player} starts\n"
        f"Rules: {rules_text(replay.rules)}\n"
        "Tiles: B blue, Y yellow, R red, K black, W white, 1 the first-player marker. Boards: "
        "pattern lines | wall, then the floor line and its penalty. Pattern lines and wall "
        "columns are numbered 1 to 5, from the top and from the left.\n"
    ]
    annotated = annotate(replay)
    for a in annotated:
        s = a.step.state
        if a.step.kind == DEAL:
            out.append(f"\nRound {s['round']}: deal\n{format_state(s, bots, a.floors, rules)}\n")
        elif a.step.kind == PICK:
            floor = a.floors[a.step.seat]
            note = f"   floor [{_floor_text(floor)}]" if a.floor_moved else ""
            out.append(
                f"  turn {s['turn']:3d}  seat {a.step.seat} ({bots[a.step.seat]}): "
                f"{a.step.action_text}{note}\n"
            )
        else:
            floors = [t.floor for t in a.tiling]
            rule = "max(0, before + placement - floor penalty)"
            if any(t.bonus for t in a.tiling):
                rule += " + end bonus"
            out.append(
                f"\nRound {s['round']}: wall tiling, full lines top first; score = {rule}\n"
                f"{format_state(a.before, bots, floors, rules)}\n"
            )
            out.extend(_tiling_text(t, bots[t.seat]) + "\n" for t in a.tiling)
            if a is annotated[-1]:  # otherwise the next deal shows the table
                out.append(f"  the final table:\n{format_state(s, bots, a.floors, rules)}\n")
    winners = ", ".join(f"seat {p}" for p in replay.winners) or "none (truncated game)"
    scores = ", ".join(f"seat {p} {x}" for p, x in enumerate(replay.scores))
    out.append(f"\nEnd ({replay.end_reason}): final scores {scores}; winner {winners}\n")
    return "".join(out)


# --- JSON -----------------------------------------------------------------------------------


def _counts(counts) -> dict[str, int]:
    return {name: int(n) for name, n in zip(COLOURS, counts, strict=True)}


def _colour(c: int) -> str | None:
    return COLOURS[c] if c >= 0 else None


def state_json(
    state: dict, floors: list[list[str]], rules: RuleSet = PRINTED_RULES
) -> dict[str, Any]:
    return {
        "round": state["round"],
        "turn": state["turn"],
        "current": state["current"],
        "factories": [_counts(f) for f in state["factories"]],
        "centre": _counts(state["centre"]),
        "marker_in_centre": state["marker_in_centre"],
        "marker_holder": state["marker_holder"],
        "bag": _counts(state["bag"]),
        "lid": _counts(state["lid"]),
        "boards": [
            {
                "lines": [{"colour": _colour(c), "count": n} for c, n in state["lines"][p]],
                "wall": [[_colour(c) for c in row] for row in state["wall"][p]],
                "floor": floors[p],
                "floor_penalty": floor_penalty(len(floors[p]), rules),
                "score": state["scores"][p],
            }
            for p in range(len(state["scores"]))
        ],
    }


def _tiling_json(t: SeatTiling) -> dict[str, Any]:
    return {
        "seat": t.seat,
        "score_before": t.before,
        "placed": [
            {
                "line": p.line,
                "colour": COLOURS[p.colour],
                "column": p.column + 1 if p.column >= 0 else None,  # 1..5, as line is
                "points": p.points,
            }
            for p in t.placed
        ],
        "placement_points": t.placement,
        "floor": t.floor,
        "floor_penalty": t.penalty - t.marker_points,
        "marker_points": t.marker_points,
        "end_bonus": {
            "rows": t.bonus_rows,
            "columns": t.bonus_columns,
            "colours": t.bonus_colours,
            "points": t.bonus,
        },
        "score_after": t.after,
    }


def replay_json(replay, job_id: str = "", rules_version: str = "") -> dict[str, Any]:
    """The replay as plain JSON: every field present, numbers as numbers, colours, walls and
    steps by the names the text uses (``null`` where a value does not apply)."""
    steps = []
    for a in annotate(replay):
        step = a.step
        pick = step.kind == PICK
        item = {
            "kind": step.kind.lower(),
            "seat": step.seat if pick else None,
            "action": step.action if pick else None,
            "action_text": step.action_text if pick else None,
            "state": state_json(step.state, a.floors, replay.rules),
            "scoring": [_tiling_json(t) for t in a.tiling] if a.tiling is not None else None,
        }
        steps.append(item)
    return {
        "job_id": job_id,
        "rules_version": rules_version,
        "configuration": replay.configuration,
        "game": replay.game,
        "players": replay.players,
        "wall": replay.wall,
        "rules": replay.rules.label,
        "rule_values": replay.rules.to_dict(),
        "seat_bots": list(replay.seat_bots),
        "first_player": replay.first_player,
        "steps": steps,
        "scores": list(replay.scores),
        "end_reason": replay.end_reason,
        "winners": list(replay.winners),
    }


# --- the command ----------------------------------------------------------------------------


def add_replay(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "replay",
        help="replay one game of a job move by move",
        description="Replay game G of a job move by move: the table at each deal, every pick "
        "(with what fell to the floor), and each wall tiling seat by seat: the tiles placed and "
        "their points, the floor and its penalty, the clamp at 0 and the end bonus. --json "
        "gives the same as plain JSON (every field present, numbers as numbers).",
    )
    p.add_argument("job_id", help="job id, or a unique prefix of one")
    p.add_argument(
        "--game", type=whole_number, default=0, help="game index in the configuration (default 0)"
    )
    p.add_argument(
        "--configuration", type=whole_number, default=0, help="configuration index (default 0)"
    )
    p.add_argument("--json", action="store_true", help="the replay as one JSON document")
    add_client_options(p)
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from ..convert import replay_from_proto

    with make_client(args) as client, rpc_errors(args):
        job_id = resolve_job_id(client, args.job_id)
        msg = client.replay(job_id, args.game, args.configuration)
    replay = replay_from_proto(msg)
    if args.json:
        json.dump(replay_json(replay, msg.job_id, msg.rules_version), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_replay(replay))
    return 0
