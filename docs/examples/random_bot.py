#!/usr/bin/env python3
"""An external AzulSim bot (docs/bots.md, "External bots"): a legal action chosen by a hash.

It reads one JSON request per line on stdin and writes one JSON answer per line on stdout, using
nothing but the protocol: each position lists its legal action ids (and, on the gray wall, its legal
columns), so the bot needs no rules of its own. The pick is a fixed hash of (game, turn), so a job
plays the same on every run. It exits when its input ends.

    AZULSIM_EXTERNAL_CMD=1 azulsim simulate --bots external:cmd=docs/examples/random_bot.py,greedy
"""

import json
import sys


def pick(options, *salt):
    h = 0
    for x in salt:
        h = (h * 1000003 + x + 1) & 0xFFFFFFFF
    return options[(h * 2654435761 & 0xFFFFFFFF) * len(options) >> 32]


def answer(request):
    positions = request["positions"]
    if request["type"] == "act":
        chosen = [pick(p["legal"], p["game"], p["turn"]) for p in positions]
        return {"id": request["id"], "actions": chosen}
    chosen = [pick(p["columns"], p["game"], p["round"], p["seat"], p["row"]) for p in positions]
    return {"id": request["id"], "columns": chosen}


def main():
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line)), separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
