"""Golden games ("playthroughs", like OpenSpiel's): complete games recorded move by move.

A golden file (tests/goldens/*.json) pins one game: its parameters, per round the dealt factories
(with the bag and lid right after the deal), every move (action id, seat, readable form), the
gray-wall column choices, the scores/lines/walls after wall tiling, and the final record. The moves
come from a fixed deterministic policy on the BOT stream of `sim.rules.rng`:

- action at turn ``t``: ``legal[pick(uniform32(bot_key, t * 8), len(legal))]`` over the sorted
  legal action ids (uniform random);
- gray column for round ``r``, seat ``p``, pattern line ``row``:
  ``legal_cols[pick(uniform32(bot_key, COLUMN_COUNTER + (r * 4 + p) * 5 + row), len(legal_cols))]``.

``scores`` of a round are the scores after that round's wall tiling and floor penalty; on the last
round of a game that ended naturally they include the end bonuses (the record's ``bonus``).

`play_reference` replays a golden on the reference engine (or plays the policy when no moves are
given) and returns the same structure, so a test compares with ``==``; `replay_batch` does the same
through the batch engine's one driver (`sim.jobs.play.play_batch`), as every job's games are played.
Regenerating is a deliberate, reviewed command::

    python -m sim.rules.goldens --regenerate
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import sim

from .. import RULES_VERSION
from . import rng
from .actions import describe
from .constants import END_REASONS
from .reference import ReferenceGame

GOLDEN_DIR = Path(sim.__file__).resolve().parent.parent / "tests" / "goldens"

# name -> (players, wall, seed, game, first_player)
GOLDENS = {
    "2p_coloured": (2, "coloured", 20260101, 7, 0),
    "3p_coloured": (3, "coloured", 20260101, 8, 1),
    "4p_coloured": (4, "coloured", 20260101, 9, 3),
    "2p_gray": (2, "gray", 20260101, 20, 0),  # has two gray dead ends (docs/rules.md §9.4)
    "3p_gray": (3, "gray", 20260101, 21, 2),
    "4p_gray": (4, "gray", 20260101, 22, 1),
}


def bot_key(seed: int, game: int) -> np.ndarray:
    """(1,) uint64 key of the game's BOT stream."""
    return rng.game_keys(seed, np.array([game]), rng.BOT)


def policy_action(key: np.ndarray, turn: int, legal: list[int]) -> int:
    """The golden/lockstep policy: uniform over the sorted legal ids, counter ``turn * 8``."""
    return legal[int(rng.pick(rng.uniform32(key, turn * 8), len(legal))[0])]


def column_counter(round_: int, seat: int, row: int) -> int:
    return rng.COLUMN_COUNTER + (round_ * 4 + seat) * 5 + row


def policy_column(key: np.ndarray, round_: int, seat: int, row: int, legal_cols: list[int]) -> int:
    """The golden/lockstep gray-wall column: uniform over the legal columns."""
    u = rng.uniform32(key, column_counter(round_, seat, row))
    return legal_cols[int(rng.pick(u, len(legal_cols))[0])]


def _new_round(s: dict) -> dict:
    return {
        "round": s["round"],
        "start_player": s["current"],
        "factories": s["factories"],
        "bag": s["bag"],
        "lid": s["lid"],
        "moves": [],
        "columns": [],
    }


def _close_round(entry: dict, s: dict) -> None:
    entry["scores"] = s["scores"]
    entry["lines"] = s["lines"]
    entry["wall"] = s["wall"]


def play_reference(
    players: int,
    wall: str,
    seed: int,
    game: int,
    first_player: int,
    max_rounds: int = 100,
    moves: list[int] | None = None,
    columns: dict | None = None,
) -> dict:
    """Play one game on the reference engine and return its golden dict.

    With `moves` (action ids in order) and `columns` (``{(round, seat, row): col}``) the game is
    replayed from them; otherwise the policy of the module docstring chooses.
    """
    g = ReferenceGame(players, wall, seed, game, first_player, max_rounds)
    key = bot_key(seed, game)
    rounds = []
    s = g.snapshot()
    while not g.done:
        if not rounds or rounds[-1]["round"] != s["round"]:
            rounds.append(_new_round(s))
        entry = rounds[-1]
        r = s["round"]

        def choose(seat, row, colour, legal_cols, r=r, entry=entry):
            if columns is None:
                col = policy_column(key, r, seat, row, legal_cols)
            else:
                col = columns[(r, seat, row)]
            entry["columns"].append(
                {"seat": seat, "row": row, "colour": colour, "legal": legal_cols, "column": col}
            )
            return col

        legal = g.legal_actions()
        action = policy_action(key, g.turn, legal) if moves is None else moves[g.turn]
        entry["moves"].append(
            {"turn": g.turn, "seat": g.current, "action": action, "move": describe(action)}
        )
        g.step(action, choose_column=choose, legal=legal)
        s = g.snapshot()
        if s["done"] or s["round"] != r:
            _close_round(entry, s)
    return _golden(players, wall, seed, game, first_player, max_rounds, rounds, g.record())


def _golden(players, wall, seed, game, first_player, max_rounds, rounds, record) -> dict:
    return {
        "rules_version": RULES_VERSION,
        "players": players,
        "wall": wall,
        "seed": seed,
        "game": game,
        "first_player": first_player,
        "max_rounds": max_rounds,
        "rounds": rounds,
        "record": record,
    }


def moves_of(golden: dict) -> tuple[list[int], dict]:
    """The recorded action ids and ``{(round, seat, row): column}`` of a golden."""
    moves = [m["action"] for r in golden["rounds"] for m in r["moves"]]
    columns = {
        (r["round"], c["seat"], c["row"]): c["column"]
        for r in golden["rounds"]
        for c in r["columns"]
    }
    return moves, columns


def replay_reference(golden: dict) -> dict:
    """Replay a golden's moves on the reference engine; returns the golden dict it produces."""
    moves, columns = moves_of(golden)
    return play_reference(*_params(golden), moves=moves, columns=columns)


def _params(golden: dict):
    keys = ("players", "wall", "seed", "game", "first_player", "max_rounds")
    return tuple(golden[k] for k in keys)


def record_of(recs, i: int) -> dict:
    """Row `i` of a `sim.rules.records.GameRecords` in the reference engine's `record()` format."""
    reason = END_REASONS[int(recs.end_reason[i])]

    def seats(x):
        return [int(v) for v in x[i]]

    return {
        "game": int(recs.game[i]),
        "first_player": int(recs.first_player[i]),
        "scores": seats(recs.scores),
        "rounds": int(recs.rounds[i]),
        "turns": int(recs.turns[i]),
        "end_reason": reason,
        "terminated": reason == "row_completed",
        "truncated": reason != "row_completed",
        "complete_rows": seats(recs.complete_rows),
        "complete_cols": seats(recs.complete_cols),
        "complete_colours": seats(recs.complete_colours),
        "bonus": seats(recs.bonus),
        "floor_penalty": seats(recs.floor_penalty),
        "marker_takes": seats(recs.marker_takes),
        "winners": np.flatnonzero(recs.winners[i]).tolist(),
        "provisional_winners": np.flatnonzero(recs.provisional_winners[i]).tolist(),
    }


class _Scripted:
    """A bot for `sim.jobs.play.play_batch` that plays a golden's recorded moves and columns, and
    records them as a golden's rounds (it is also the driver's `sim.jobs.play.Recorder`)."""

    def __init__(self, moves: list[int], columns: dict):
        self.moves, self.columns = moves, columns
        self.rounds: list[dict] = []

    # the bot
    def act(self, st, slots, keys):
        return np.array([self.moves[int(st.turn[slots[0]])]], np.int64)

    def choose_columns(self, st, slots, seat, row, colours, legal, keys):
        entry = self.rounds[-1]
        cols = []
        for c, mask in zip(np.asarray(colours).tolist(), np.asarray(legal).tolist(), strict=True):
            col = self.columns[(entry["round"], seat, row)]
            legal_cols = [j for j in range(5) if mask >> j & 1]
            entry["columns"].append(
                {"seat": seat, "row": row, "colour": c, "legal": legal_cols, "column": col}
            )
            cols.append(col)
        return np.array(cols, dtype=np.int64)

    # the recorder
    def dealt(self, st, slots):
        from . import engine

        if slots.size:
            self.rounds.append(_new_round(engine.snapshot(st, 0)))

    def picking(self, st, slots, actions):
        action = int(actions[0])
        self.rounds[-1]["moves"].append(
            {
                "turn": int(st.turn[0]),
                "seat": int(st.current[0]),
                "action": action,
                "move": describe(action),
            }
        )

    def picked(self, st, slots, actions):
        pass

    def tiled(self, st, slots):
        from . import engine

        entry = self.rounds[-1]
        # The batch engine tiles row by row across seats: sort like the reference (seat, then
        # row) before comparing.
        entry["columns"].sort(key=lambda c: (c["seat"], c["row"]))
        _close_round(entry, engine.snapshot(st, 0))


def replay_batch(golden: dict) -> dict:
    """Replay a golden's moves on the batch engine (`sim.jobs.play.play_batch`, one slot); returns
    the golden dict it makes."""
    from ..jobs.play import play_batch

    players, wall, seed, game, first_player, max_rounds = _params(golden)
    script = _Scripted(*moves_of(golden))
    recs = play_batch(
        players,
        wall,
        seed,
        np.array([game]),
        np.array([first_player]),
        np.zeros((1, players), np.int8),
        [script],
        max_rounds,
        recorder=script,
    )
    record = record_of(recs, 0)
    return _golden(players, wall, seed, game, first_player, max_rounds, script.rounds, record)


def load(name: str) -> dict:
    return json.loads((GOLDEN_DIR / f"{name}.json").read_text())


def dumps(golden: dict) -> str:
    """JSON text of a golden: one line per move, column choice and per-seat board, for review."""

    def flat(x) -> bool:  # small enough for one line
        if isinstance(x, dict):
            return all(not isinstance(v, list | dict) or flat(v) for v in x.values())
        if isinstance(x, list):
            return all(not isinstance(v, list | dict) for v in x) or (
                all(isinstance(v, list) and flat(v) for v in x) and len(json.dumps(x)) <= 90
            )
        return True

    def fmt(x, indent: str) -> str:
        if not isinstance(x, list | dict) or flat(x):
            return json.dumps(x)
        inner = indent + " "
        if isinstance(x, dict):
            items = [f"{inner}{json.dumps(k)}: {fmt(v, inner)}" for k, v in x.items()]
            return "{\n" + ",\n".join(items) + "\n" + indent + "}"
        return "[\n" + ",\n".join(inner + fmt(v, inner) for v in x) + "\n" + indent + "]"

    return fmt(golden, "") + "\n"


def regenerate(names=None) -> list[Path]:
    written = []
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in names or GOLDENS:
        path = GOLDEN_DIR / f"{name}.json"
        path.write_text(dumps(play_reference(*GOLDENS[name])))
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim.rules.goldens", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help="rewrite tests/goldens/*.json from the reference engine (review the diff!)",
    )
    parser.add_argument(
        "names", nargs="*", help=f"goldens to write (default all: {', '.join(GOLDENS)})"
    )
    args = parser.parse_args(argv)
    if not args.regenerate:
        parser.error("nothing to do: pass --regenerate to rewrite the golden files")
    for path in regenerate(args.names):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
