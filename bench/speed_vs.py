"""Two trees side by side: `bench/speed.py` runs of this tree and of another, row by row.

Run `bench/speed.py` in turn on both trees (the other first on ``PYTHONPATH``), then compare::

    PYTHONPATH=/path/to/other python /path/to/other/bench/speed.py --out other1.json
    python bench/speed.py --out this1.json            # and again, in turn: other2, this2, ...
    python bench/speed_vs.py --this this*.json --other other*.json --other-rev REV

Each row gives both trees' games per CPU-second run by run, the ratio of their means and the
lowest ratio (this tree's slowest run against the other's fastest), and whether the two trees
played the same games (equal mean scores). Writes ``bench/results/speed_vs_<REV>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _rows(path: str) -> dict:
    doc = json.loads(Path(path).read_text())
    return {f"{r['bot']} {r['players']}p {r['wall']}": r for r in doc["results"]}


def compare(this: list[str], other: list[str]) -> dict:
    mine, theirs = [_rows(p) for p in this], [_rows(p) for p in other]
    rows = {}
    for name in theirs[0]:
        if not all(name in runs for runs in mine + theirs):
            continue
        a = [runs[name]["games_per_cpu_second"] for runs in mine]
        b = [runs[name]["games_per_cpu_second"] for runs in theirs]
        rows[name] = {
            "games_per_cpu_second": a,
            "other_games_per_cpu_second": b,
            "ratio_of_means": round(sum(a) / len(a) / (sum(b) / len(b)), 2),
            "lowest_ratio": round(min(a) / max(b), 2),
            "same_games": all(
                runs[name]["mean_score"] == theirs[0][name]["mean_score"] for runs in mine + theirs
            ),
        }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--this", nargs="+", required=True, help="this tree's speed.py --out files")
    parser.add_argument("--other", nargs="+", required=True, help="the other tree's")
    parser.add_argument("--other-rev", required=True, help="the other tree's revision")
    parser.add_argument("--note", default="", help="how the runs were made")
    args = parser.parse_args(argv)
    rows = compare(args.this, args.other)
    for name, row in rows.items():
        print(f"{name:24s} {row['ratio_of_means']:5.2f}x (lowest {row['lowest_ratio']:.2f}x)")
    out = RESULTS / f"speed_vs_{args.other_rev}.json"
    doc = {"benchmark": "speed_vs", "other_rev": args.other_rev, "note": args.note, "rows": rows}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
