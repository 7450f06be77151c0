"""External-bot protocol overhead per position (docs/bots.md, "External bots").

Builds batches of real mid-round positions (games played a few random picks in), then asks the
example bot `docs/examples/random_bot.py` for their actions through `sim.bots.external` again and
again. The example bot answers as soon as it has parsed a request, so the time per position is the
protocol's cost: encoding (numpy to JSON), the pipe, the bot's JSON parse and answer, decoding and
the legality check. CPU time is this process's `time.process_time` plus the bot process's user +
system time (from /proc); wall time is reported too (disturbed by other load on a shared machine).

Writes ``bench/results/external.json``.

Usage: ``python bench/external.py [--players 2 4] [--batch 256] [--seconds 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sim.bots import external  # noqa: E402
from sim.bots.features import unpack  # noqa: E402
from sim.bots.random_bot import RandomBot  # noqa: E402
from sim.rules import engine  # noqa: E402
from sim.rules.engine import wall_colours  # noqa: E402

EXAMPLE = ROOT / "docs" / "examples" / "random_bot.py"


def child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ROUND = 10


def best_of(fn, rounds: int = 15, per: int = 5) -> float:
    """Least CPU seconds per call of `fn` over `rounds` rounds (a loaded machine's noise is
    one-sided: the least is the closest to the cost)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(per):
            fn()
        best = min(best, (time.process_time() - t0) / per)
    return best


def as_rows(st, slots, mask):
    where = external.positions(st, slots)
    rows, ids = np.nonzero(mask)
    ids = np.ascontiguousarray(ids)
    bounds = np.searchsorted(rows, np.arange(slots.shape[0] + 1)).tolist()
    for i, pos in enumerate(where):
        pos["legal"] = ids[bounds[i] : bounds[i + 1]]
    return where


def as_lists(st, slots, mask):
    """The positions as the protocol's first encoder built them: nested Python lists."""
    n = slots.shape[0]
    tiles = unpack(np.ascontiguousarray(st.sources[:, slots])).transpose(2, 0, 1).tolist()
    lines = np.stack([st.line_colour[:, :, slots], st.line_count[:, :, slots]], axis=-1)
    lines = lines.transpose(2, 0, 1, 3).tolist()
    walls = wall_colours(st, slots).reshape(st.players, 5, 5, n).transpose(3, 0, 1, 2).tolist()
    columns = zip(
        st.game[slots].tolist(), st.round[slots].tolist(), st.turn[slots].tolist(),
        st.current[slots].tolist(), tiles, st.marker_in_centre[slots].tolist(),
        st.marker_holder[slots].tolist(), st.bag[:, slots].T.tolist(), st.lid[:, slots].T.tolist(),
        lines, walls, st.floor[:, slots].T.tolist(), st.scores[:, slots].T.tolist(), strict=True,
    )  # fmt: skip
    where = [
        {"game": g, "round": r, "turn": t, "seat": s, "factories": src[1:], "centre": src[0],
         "marker_in_centre": mc, "marker_holder": mh, "bag": bag, "lid": lid, "lines": ln,
         "wall": wl, "floor": fl, "scores": sc}
        for g, r, t, s, src, mc, mh, bag, lid, ln, wl, fl, sc in columns
    ]  # fmt: skip
    rows, ids = np.nonzero(mask)
    bounds = np.searchsorted(rows, np.arange(n + 1)).tolist()
    ids = ids.tolist()
    for i, pos in enumerate(where):
        pos["legal"] = ids[bounds[i] : bounds[i + 1]]
    return where


def measure(players: int, wall: str, batch: int, seconds: float) -> dict:
    games = np.arange(batch)
    st = engine.new_games(players, wall, 7, games, games % players)
    rnd = RandomBot()
    keys = np.arange(batch, dtype=np.uint64)
    for _ in range(3):  # a few picks in: a typical mid-round position
        engine.step(st, rnd.act(st, np.arange(batch), keys))
    bot = external.ExternalBot([sys.executable, str(EXAMPLE)], "bench", 60.0, batch)
    slots = np.arange(batch)
    bot.act(st, slots)  # starts the process
    pid = external._PROCESSES[tuple(bot.argv)][1].proc.pid
    cpu0, child0, wall0 = time.process_time(), child_cpu(pid), time.perf_counter()
    requests = 0
    rounds: list[float] = []  # this process's CPU per request, in rounds of ROUND requests
    while time.perf_counter() - wall0 < seconds:
        r0 = time.process_time()
        for _ in range(ROUND):
            bot.act(st, slots)
        rounds.append((time.process_time() - r0) / ROUND)
        requests += ROUND
    wall_s = time.perf_counter() - wall0
    cpu_s = time.process_time() - cpu0
    child_s = child_cpu(pid) - child0
    n = requests * batch
    # The encoding alone, as the protocol's first version built it (nested lists) and as it is
    # now (numpy rows that orjson writes): the same bytes, both timed here in turn.
    mask = external.legal_actions(st, slots)
    assert external._dumps({"positions": as_lists(st, slots, mask)}) == external._dumps(
        {"positions": as_rows(st, slots, mask)}
    )  # the same bytes on the wire
    lists_s = best_of(lambda: external._dumps({"positions": as_lists(st, slots, mask)}))
    rows_s = best_of(lambda: external._dumps({"positions": as_rows(st, slots, mask)}))
    size = len(external._dumps({"positions": external.positions(st, slots)}))
    return {
        "players": players,
        "wall": wall,
        "batch": batch,
        "requests": requests,
        "positions": n,
        "request_bytes_per_position": round(size / batch),
        "us_per_position_wall": round(1e6 * wall_s / n, 1),
        "us_per_position_cpu_simulator": round(1e6 * cpu_s / n, 1),
        "us_per_position_cpu_bot": round(1e6 * child_s / n, 1),
        "us_per_position_cpu_total": round(1e6 * (cpu_s + child_s) / n, 1),
        "us_per_position_cpu_simulator_best_round": round(1e6 * min(rounds) / batch, 1),
        "us_per_position_encode_lists": round(1e6 * lists_s / batch, 1),
        "us_per_position_encode_rows": round(1e6 * rows_s / batch, 1),
        "json": "orjson" if external._loads is not json.loads else "json",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--wall", nargs="+", default=["coloured"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    rows = []
    for p in args.players:
        for w in args.wall:
            rows.append(measure(p, w, args.batch, args.seconds))
            print(json.dumps(rows[-1]), flush=True)
    external.close_all()
    out = ROOT / "bench" / "results" / "external.json"
    out.write_text(json.dumps({"python": sys.version.split()[0], "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
