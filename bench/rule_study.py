"""The rule study of docs/research.md ("A rule study: the column bonus and the floor"), regenerated.

Three ``azulsim`` commands, run here in-process: the balance through `service.cli.main` with
``--json``, the two sweeps as the job their command builds (`sim.experiments.sweep.sweep_spec`),
played once with its game rows (`sim.jobs.local.run_local`, ``games_out``) for the per-game points
margin:

1. ``azulsim balance``: heuristic self-play at 2 and 4 players under the printed rules and nine
   variants (column bonus 3 to 10; a harsher and a gentler floor), each paired with the printed
   game on the same deals and seats; the start player's win rate and the turn-order balance.
2. ``azulsim sweep --rules 'column_bonus=3..10/1' --bots heuristic,greedy --players 2,4``: the
   heuristic's win rate against greedy per column bonus, paired with the printed value (7).
3. The same sweep over three floors (printed, harsher, gentler).

Writes bench/results/rule_study.json, docs/research/rule_study.png and the tables into
docs/research.md between its ``<!-- study:rule_study -->`` markers::

    python bench/rule_study.py [--quick]

``--quick`` (small game counts) writes neither.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inprocess import azulsim  # noqa: E402  (bench/, the script's own directory)
from research import _write_markers  # noqa: E402

SEED = 2026
PRINTED_FLOOR = "1/1/2/2/2/3/3"
HARSH_FLOOR = "2/2/3/3/3/4/4"
GENTLE_FLOOR = "1/1/1/1/1/1/1"
RULE_SETS = [
    "printed",
    *(f"column_bonus={b}" for b in (3, 4, 5, 6, 8, 9, 10)),
    f"floor={HARSH_FLOOR}",
    f"floor={GENTLE_FLOOR}",
]
PLAYERS = "2,4"


def _balance_argv(games: int) -> list[str]:
    argv = ["balance"]
    for r in RULE_SETS:
        argv += ["--rules", r]
    return argv + ["--players", PLAYERS, "--elements", "none", "--games", str(games),
                   "--seed", str(SEED)]  # fmt: skip


def first_player(games: int) -> dict:
    """The balance lab's start-player measures per rule set, with the paired differences."""
    argv = _balance_argv(games)
    doc = azulsim(argv)
    configs = doc["configurations"]
    rows = []
    for table in doc["balance_sheet"]["tables"]:
        for rs in table["rule_sets"]:
            m = rs["measures"]
            row = {"players": table["players"], "rule_set": rs["rule_set"], "games": rs["games"],
                   "first_player": m["first_player"]["value"],
                   "first_player_ci95": m["first_player"]["ci95"],
                   "balance": m["balance"]["value"], "balance_ci95": m["balance"]["ci95"],
                   "first_player_diff": m["first_player"].get("diff"),
                   "first_player_diff_ci95": m["first_player"].get("diff_ci95"),
                   "balance_diff": m["balance"].get("diff"),
                   "balance_diff_ci95": m["balance"].get("diff_ci95"),
                   "paired_games": rs.get("paired_games")}  # fmt: skip
            fp = configs[rs["configuration"]]["turn_order"][
                "first_player"
            ]  # points over the others'
            row["score_diff"], row["score_diff_ci95"] = fp["score_diff"], fp["score_diff_ci95"]
            rows.append(row)
    return {"command": "azulsim " + " ".join(_quote(a) for a in argv), "rows": rows}


def _quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in "|/ ") and not arg.startswith("--") else arg


def margin(rules: str, baseline: str, games: int) -> dict:
    """``azulsim sweep --rules RULES --bots heuristic,greedy --players 2,4``, its job played here
    once with its game rows (`sim.jobs.local.run_local`, ``games_out``): per value, the sweep's row
    (the heuristic's win rate, the paired difference to the baseline, the printed value) and, from
    the rows, the heuristic's points minus greedy's mean in each game, its mean with a 95 %
    interval and its paired difference to the baseline's same game (same deal and seats)."""
    import tempfile

    import numpy as np
    import pyarrow.parquet as pq

    from sim.bots.registry import split_bot_list
    from sim.experiments.sweep import sweep_spec
    from sim.jobs.local import run_local

    spec = sweep_spec(split_bot_list("heuristic,greedy"), games=games, seed=SEED, players=[2, 4],
                      rules=rules, baseline=baseline)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "games.parquet"
        doc = run_local(spec, workers=1, games_out=path).statistics()
        games_table = pq.read_table(path).to_pandas()
    per_config = {}
    for k, g in games_table.groupby("configuration"):
        g = g.sort_values("game")
        players = int(g["players"].iloc[0])
        bots = np.stack([g[f"bot_{s}"].astype(str).to_numpy() for s in range(players)], axis=1)
        scores = np.stack([g[f"score_{s}"].to_numpy(float) for s in range(players)], axis=1)
        heur = bots == "heuristic"
        if not (heur.sum(axis=1) == 1).all():
            raise SystemExit(f"configuration {k}: not one heuristic per game")
        own = (scores * heur).sum(axis=1)
        others = (scores * ~heur).sum(axis=1) / (players - 1)
        per_config[int(k)] = (g["game"].to_numpy(), own - others)
    sweep = doc["sweep"]
    configs = doc["configurations"]
    base_of = {c: grp["baseline"] for grp in sweep["groups"] for c in grp["configurations"]}
    rows = []
    for r in sweep["rows"]:
        k = r["configuration"]
        cfg = configs[k]
        (value,) = r["values"].values()
        bots = cfg["bots"]
        games_k, m = per_config[k]
        row = {
            "players": cfg["players"], "value": value, "games": r["games"], "paired": r["paired"],
            "win_rate": r["win_rate"], "win_rate_ci95": r["win_rate_ci95"],
            "win_rate_diff": r["win_rate_diff"], "win_rate_diff_ci95": r["win_rate_diff_ci95"],
            "score": r["score"], "score_ci95": r["score_ci95"],
            "greedy_score": bots["greedy"]["score"]["mean"],
            "margin": float(m.mean()), "margin_ci95": _ci(m),
            "margin_diff": None, "margin_diff_ci95": None,
            "floor_penalty": cfg["floor"]["mean"], "bonus": cfg["bonus"]["mean"],
            "columns": cfg["columns"]["mean"],
        }  # fmt: skip
        base = base_of[k]
        if base != k and r["paired"]:
            games_b, mb = per_config[base]
            if not np.array_equal(games_k, games_b):
                raise SystemExit(f"configurations {k} and {base} did not play the same games")
            d = m - mb
            row["margin_diff"], row["margin_diff_ci95"] = float(d.mean()), _ci(d)
        rows.append(row)

    by_config = {r["configuration"]: r for r in sweep["rows"]}

    def label(c: int):
        return next(iter(by_config[c]["values"].values()))

    best = [{"players": configs[g["best"]["configuration"]]["players"],
             "value": next(iter(g["best"]["values"].values())),
             "indistinguishable": [label(c) for c in g["versus_best"]["indistinguishable"]]}
            for g in sweep["groups"]]  # fmt: skip
    command = (f"azulsim sweep --rules '{rules}' --bots heuristic,greedy --players {PLAYERS} "
               f"--baseline '{baseline}' --games {games} --seed {SEED}")  # fmt: skip
    return {"command": command, "rows": rows, "best": best}


def _ci(x) -> list[float]:
    """Normal 95 % interval of the mean of `x`."""
    half = 1.959963984540054 * float(x.std(ddof=1)) / len(x) ** 0.5
    return [float(x.mean()) - half, float(x.mean()) + half]


def _pct(x, ci) -> str:
    return f"{100 * x:.1f} % [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _pt(x, ci) -> str:
    return f"{100 * x:+.1f} pt [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _num(x, ci, d=2) -> str:
    return f"{x:+.{d}f} [{ci[0]:+.{d}f}, {ci[1]:+.{d}f}]"


def _noise(ci) -> str:
    return "within noise" if ci[0] <= 0 <= ci[1] else "**clear of 0**"


def _value(v) -> str:
    return "/".join(str(x) for x in v) if isinstance(v, list) else f"{v:g}"


def tables(result: dict) -> str:
    fp = result["first_player"]
    lines = [f"`{fp['command']}`", "",
             "| players | rule set | games | start player wins | minus printed (paired) | "
             "turn-order balance | minus printed (paired) | start player's points over the "
             "others' |", "|" + " --- |" * 8]  # fmt: skip
    for r in fp["rows"]:
        if r["first_player_diff"] is None:
            d1 = d2 = "reference"
        else:
            d1 = (f"{_pt(r['first_player_diff'], r['first_player_diff_ci95'])}, "
                  f"{_noise(r['first_player_diff_ci95'])}")  # fmt: skip
            d2 = (f"{_num(r['balance_diff'], r['balance_diff_ci95'], 3)}, "
                  f"{_noise(r['balance_diff_ci95'])}")  # fmt: skip
        score = _num(r["score_diff"], r["score_diff_ci95"])
        lines.append(f"| {r['players']} | `{r['rule_set']}` | {r['games']:,} | "
                     f"{_pct(r['first_player'], r['first_player_ci95'])} | {d1} | "
                     f"{r['balance']:.3f} [{r['balance_ci95'][0]:.3f}, "
                     f"{r['balance_ci95'][1]:.3f}] | {d2} | {score} |")  # fmt: skip
    for name, what in (("column_margin", "column bonus"), ("floor_margin", "floor")):
        m = result[name]
        lines += ["", f"`{m['command']}`", "",
                  f"| players | {what} | games | heuristic's win rate | minus the printed value "
                  "(paired) | heuristic minus greedy, points | minus the printed value (paired) | "
                  "heuristic's score | greedy's score | floor penalty per player | end bonus per "
                  "player |", "|" + " --- |" * 11]  # fmt: skip
        for r in m["rows"]:
            if r["margin_diff"] is None:
                dm = "baseline"
            else:
                ci = r["margin_diff_ci95"]
                dm = f"{_num(r['margin_diff'], ci)}, {_noise(ci)}"
            if r["win_rate_diff"] is None:
                d = "baseline"
            else:
                d = (f"{_pt(r['win_rate_diff'], r['win_rate_diff_ci95'])}, "
                     f"{_noise(r['win_rate_diff_ci95'])}")  # fmt: skip
            lines.append(f"| {r['players']} | {_value(r['value'])} | {r['games']:,} | "
                         f"{_pct(r['win_rate'], r['win_rate_ci95'])} | {d} | "
                         f"{_num(r['margin'], r['margin_ci95'])} | {dm} | {r['score']:.2f} | "
                         f"{r['greedy_score']:.2f} | "
                         f"{r['floor_penalty']:.2f} | {r['bonus']:.2f} |")  # fmt: skip
        for b in m["best"]:
            same = ", ".join(_value(v) for v in b["indistinguishable"] if v != b["value"])
            lines.append("")
            lines.append(f"{b['players']} players: highest win rate at {_value(b['value'])}; "
                         f"other values the paired test (Holm) cannot tell from it: "
                         f"{same or 'none'}.")  # fmt: skip
    return "\n".join(lines)


def _short(label: str) -> str:
    names = {f"floor={HARSH_FLOOR}": "harsher\nfloor", f"floor={GENTLE_FLOOR}": "gentler\nfloor"}
    return names.get(label, label.replace("column_bonus=", "column\nbonus "))


def figure(result: dict, path: Path) -> None:
    """Left: the start player's win rate over its fair share per rule set; right: the heuristic's
    points over greedy's per column bonus; 95 % intervals."""
    from research import _errbar, _figure

    fig = _figure(10, 3.6)
    ax_fp, ax_m = fig.subplots(1, 2)
    rows = result["first_player"]["rows"]
    labels = list(dict.fromkeys(r["rule_set"] for r in rows))
    for i, players in enumerate((2, 4)):
        sub = [r for r in rows if r["players"] == players]
        xs = [labels.index(r["rule_set"]) + (i - 0.5) * 0.15 for r in sub]
        _errbar(ax_fp, xs, [r["first_player"] * players for r in sub],
                [[c * players for c in r["first_player_ci95"]] for r in sub], 100.0,
                linestyle="none", label=f"{players} players")  # fmt: skip
        sub = [r for r in result["column_margin"]["rows"] if r["players"] == players]
        _errbar(ax_m, [r["value"] for r in sub], [r["margin"] for r in sub],
                [r["margin_ci95"] for r in sub], label=f"{players} players")  # fmt: skip
    ax_fp.axhline(100, color="0.4", linestyle="--", linewidth=1, label="no advantage")
    ax_fp.set_xticks(range(len(labels)), [_short(t) for t in labels], fontsize=7)
    ax_fp.set_ylabel("start player's wins, % of a fair share")
    ax_fp.set_title("heuristic self-play", fontsize=9)
    ax_m.axvline(7, color="0.4", linestyle=":", linewidth=1, label="printed")
    ax_m.set_xlabel("column bonus")
    ax_m.set_ylabel("heuristic's points minus greedy's")
    ax_m.set_title("heuristic against greedy", fontsize=9)
    for ax in (ax_fp, ax_m):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle("Rule study: column bonus and floor (95% intervals)", fontsize=10)
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small game counts (a smoke run)")
    args = parser.parse_args()
    q = args.quick
    began = time.process_time()
    wall = time.time()
    result = {
        "seed": SEED,
        "first_player": first_player(240 if q else 24_000),
        "column_margin": margin("column_bonus=3..10/1", "column_bonus=7", 120 if q else 12_000),
        "floor_margin": margin(
            f"floor={PRINTED_FLOOR}|{HARSH_FLOOR}|{GENTLE_FLOOR}",
            f"floor={PRINTED_FLOOR}",
            120 if q else 12_000,
        ),  # fmt: skip
    }
    result["command"] = "python bench/rule_study.py" + (" --quick" if q else "")
    result["cpu_s"] = round(time.process_time() - began, 1)
    result["wall_s"] = round(time.time() - wall, 1)
    if not q:
        (ROOT / "bench" / "results" / "rule_study.json").write_text(
            json.dumps(result, indent=1) + "\n"
        )
        _write_markers(ROOT / "docs" / "research.md", {"rule_study": tables(result)})
        figure(result, ROOT / "docs" / "research" / "rule_study.png")
    else:
        print(tables(result))
    print(json.dumps({"cpu_s": result["cpu_s"], "wall_s": result["wall_s"],
                      "command": result["command"]}))  # fmt: skip


if __name__ == "__main__":
    main()
