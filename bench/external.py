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

from sim import engine  # noqa: E402
from sim.bots import external  # noqa: E402
from sim.bots.random_bot import RandomBot  # noqa: E402

EXAMPLE = ROOT / "docs" / "examples" / "random_bot.py"


def child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    while time.perf_counter() - wall0 < seconds:
        bot.act(st, slots)
        requests += 1
    wall_s = time.perf_counter() - wall0
    cpu_s = time.process_time() - cpu0
    child_s = child_cpu(pid) - child0
    n = requests * batch
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
