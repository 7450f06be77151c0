"""The worked studies of docs/research.md, regenerated: each is one ``azulsim`` command, run here
in-process (`service.cli.main` with ``--json``), and its figure.

1. First-player advantage by player count and wall (``azulsim simulate --spec
   docs/research/first_player.json``): heuristic self-play, 2/3/4 players, both walls.
2. Gray versus coloured wall (``azulsim simulate --spec docs/research/walls.json``): the same
   deals on both walls, scores, game length, bonuses.
3. Tuning a heuristic weight (``azulsim sweep``), then confirming the best value against the
   default with ``azulsim compare`` (mirrored pairs, Elo with its interval).
4. The ladder as ratings (``azulsim tournament random greedy heuristic rollout search``), with 2,
   3 and 4 players.

Sweeps and tournaments are played here through the job specs their commands build
(`sim.experiments.sweep.sweep_spec`, `sim.experiments.tournament.tournament_spec`), once, so that
the figure (the report's study row) and the table come from the same statistics.

Writes the spec files and figures under docs/research/, bench/results/research.json, and the
figures' numbers into docs/research.md between its ``<!-- study:NAME -->`` markers (the ladders
into docs/bots.md too)::

    python bench/research.py [--quick] [--only ladder,ladder3,ladder4]

``--only`` plays the named studies again and keeps the others of bench/results/research.json;
``--quick`` writes neither the results nor the docs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inprocess import azulsim  # noqa: E402  (bench/, the script's own directory)

OUT = ROOT / "docs" / "research"
SEED = 2026


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _errbar(ax, xs, values, cis, scale=1.0, **kw):
    ys = [scale * v for v in values]
    lo = [scale * (v - c[0]) for v, c in zip(values, cis, strict=True)]
    hi = [scale * (c[1] - v) for v, c in zip(values, cis, strict=True)]
    ax.errorbar(xs, ys, yerr=[lo, hi], capsize=4, marker="o", **kw)


def first_player(games: int) -> dict:
    spec = {
        "configurations": [
            {"players": p, "bots": ["heuristic"] * p, "wall": w}
            for w in ("coloured", "gray")
            for p in (2, 3, 4)
        ],
        "games": games,
        "seed": SEED,
    }
    path = OUT / "first_player.json"
    path.write_text(json.dumps(spec, indent=1) + "\n")
    doc = azulsim(["simulate", "--spec", str(path.relative_to(ROOT)), "--workers", "1"])
    rows = []
    for cfg in doc["configurations"]:
        fp = cfg["turn_order"]["first_player"]
        rows.append({"players": cfg["players"], "wall": cfg["wall"], "games": cfg["games_finished"],
                     "win_rate": fp["win_rate"], "win_rate_ci95": fp["win_rate_ci95"],
                     "fair": fp["fair_win_rate"], "score_diff": fp["score_diff"],
                     "score_diff_ci95": fp["score_diff_ci95"]})  # fmt: skip
    fig = _figure(9, 3.4)
    ax_win, ax_score = fig.subplots(1, 2)
    for i, wall in enumerate(("coloured", "gray")):
        sub = [r for r in rows if r["wall"] == wall]
        xs = [r["players"] + (i - 0.5) * 0.12 for r in sub]
        _errbar(ax_win, xs, [r["win_rate"] / r["fair"] for r in sub],
                [[c / r["fair"] for c in r["win_rate_ci95"]] for r in sub], 100.0,
                label=f"{wall} wall")  # fmt: skip
        _errbar(ax_score, xs, [r["score_diff"] for r in sub], [r["score_diff_ci95"] for r in sub],
                label=f"{wall} wall")  # fmt: skip
    ax_win.axhline(100, color="0.4", linestyle="--", linewidth=1, label="no advantage")
    ax_win.set_ylabel("start player's wins, % of a fair share")
    ax_score.axhline(0, color="0.4", linestyle="--", linewidth=1)
    ax_score.set_ylabel("start player's score minus the others' mean")
    for ax in (ax_win, ax_score):
        ax.set_xticks([2, 3, 4], ["2 players", "3 players", "4 players"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle("First-player advantage, heuristic self-play (95% intervals)", fontsize=10)
    fig.savefig(OUT / "first_player.png")
    return {"command": f"azulsim simulate --spec {path.relative_to(ROOT)}", "rows": rows}


def walls(games: int) -> dict:
    spec = {
        "configurations": [
            {"players": 2, "bots": ["heuristic", "heuristic"], "wall": "coloured"},
            {"players": 2, "bots": ["heuristic", "heuristic"], "wall": "gray"},
        ],
        "games": games,
        "seed": SEED,
    }
    path = OUT / "walls.json"
    path.write_text(json.dumps(spec, indent=1) + "\n")
    doc = azulsim(["simulate", "--spec", str(path.relative_to(ROOT)), "--workers", "1"])
    keys = ("score", "rounds", "bonus", "rows", "columns", "colours", "floor")
    rows = []
    for cfg in doc["configurations"]:
        row = {"wall": cfg["wall"], "games": cfg["games_finished"]}
        for k in keys:
            row[k] = cfg[k]["mean"]
            row[f"{k}_ci95"] = cfg[k]["ci95"]
        rows.append(row)
    fig = _figure(9, 3.4)
    axes = fig.subplots(1, 2)
    labels = ["score", "bonus", "floor"]
    for i, row in enumerate(rows):
        xs = [j + (i - 0.5) * 0.2 for j in range(len(labels))]
        _errbar(axes[0], xs, [row[k] for k in labels], [row[f"{k}_ci95"] for k in labels],
                linestyle="none", label=f"{row['wall']} wall")  # fmt: skip
        counts = ["rounds", "rows", "columns", "colours"]
        xs = [j + (i - 0.5) * 0.2 for j in range(len(counts))]
        _errbar(axes[1], xs, [row[k] for k in counts], [row[f"{k}_ci95"] for k in counts],
                linestyle="none", label=f"{row['wall']} wall")  # fmt: skip
    axes[0].set_xticks(range(3), ["final score", "end bonus points", "floor penalty"])
    axes[0].set_ylabel("points per player and game")
    axes[1].set_xticks(range(4), ["rounds", "rows", "columns", "colours"])
    axes[1].set_ylabel("rounds per game; complete lines per player")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle("Gray versus coloured wall, heuristic self-play, 2 players (95% intervals)",
                 fontsize=10)  # fmt: skip
    fig.savefig(OUT / "walls.png")
    return {"command": f"azulsim simulate --spec {path.relative_to(ROOT)}", "rows": rows}


def tuning(games: int, confirm_games: int) -> dict:
    """``azulsim sweep --bots BOTS --games N --seed S`` (its job, played here once: the figure is
    the report's sweep row of the same statistics), then ``azulsim compare`` of the best value
    against the default heuristic."""
    from service.report import figure
    from sim.experiments.sweep import sweep_spec
    from sim.jobs.local import run_local

    bots = "heuristic:floor=0..3/0.5,greedy"
    from sim.bots.registry import split_bot_list

    spec = sweep_spec(split_bot_list(bots), games=games, seed=SEED)
    doc = run_local(spec, workers=1).statistics()
    figure(doc, configurations=[]).savefig(OUT / "tuning.png")
    sweep = doc["sweep"]
    best = sweep["best"]
    floor = best["values"]["floor"]
    compare_argv = ["compare", f"heuristic:floor={floor:g}", "heuristic", "--seed", str(SEED),
                    "--max-games", str(confirm_games)]  # fmt: skip
    confirm = azulsim(compare_argv)
    return {
        "command": f"azulsim sweep --bots '{bots}' --games {games} --seed {SEED}",
        "confirm_command": "azulsim " + " ".join(compare_argv),
        "best": best,
        "rows": [
            {
                k: r[k]
                for k in (
                    "values",
                    "win_rate",
                    "win_rate_ci95",
                    "score",
                    "score_diff",
                    "score_diff_ci95",
                )
            }
            for r in sweep["rows"]
        ],  # fmt: skip
        "confirm": {k: confirm[k] for k in ("games", "elo", "elo_ci95", "score", "los")},
    }


LADDER = ["random", "greedy", "heuristic", "rollout", "search"]


def ladder(games: int, players: int = 2) -> dict:
    """``azulsim tournament random greedy heuristic rollout search`` (its job played here once);
    with 3 or 4 players every table of that many of them, in every order of its seats."""
    from service.report import figure
    from sim.experiments.tournament import tournament_spec
    from sim.jobs.local import run_local

    spec = tournament_spec(LADDER, players, games_per_pair=games, seed=SEED, anchor="random")
    doc = run_local(spec, workers=1).statistics()
    if players == 2:
        figure(doc, configurations=[]).savefig(OUT / "ladder.png")
    command = (f"azulsim tournament {' '.join(LADDER)}"
               + (f" --players {players}" if players > 2 else "")
               + f" --games-per-pair {games} --seed {SEED} --anchor random")  # fmt: skip
    ratings = doc["ratings"]
    return {"command": command, "bots": ratings["bots"], "head_to_head": ratings["head_to_head"]}


def _pct(x, ci) -> str:
    return f"{100 * x:.1f} % [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _num(x, ci, d=2) -> str:
    return f"{x:+.{d}f} [{ci[0]:+.{d}f}, {ci[1]:+.{d}f}]"


def tables(result: dict) -> dict[str, str]:
    out = {}
    fp = result["first_player"]
    header = ("| wall | players | games | start player wins | fair share "
              "| start player's score minus the others' |")  # fmt: skip
    lines = [f"`{fp['command']}`", "", header, "| --- | --- | --- | --- | --- | --- |"]
    for r in fp["rows"]:
        lines.append(f"| {r['wall']} | {r['players']} | {r['games']:,} | "
                     f"{_pct(r['win_rate'], r['win_rate_ci95'])} | {100 * r['fair']:.1f} % | "
                     f"{_num(r['score_diff'], r['score_diff_ci95'])} |")  # fmt: skip
    out["first_player"] = "\n".join(lines)
    w = result["walls"]
    header = "| wall | games | score | rounds | bonus | rows | columns | colours | floor penalty |"
    lines = [f"`{w['command']}`", "", header, "|" + " --- |" * 9]
    for r in w["rows"]:
        names = ("score", "rounds", "bonus", "rows", "columns", "colours", "floor")
        cells = [f"{r[k]:.2f} ± {r[k] - r[f'{k}_ci95'][0]:.2f}" for k in names]
        lines.append(f"| {r['wall']} | {r['games']:,} | " + " | ".join(cells) + " |")
    lines += ["", "Game g deals the same tiles, seats and start player on both walls (the deal "
              "depends on the seed and the game, not on the wall)."]  # fmt: skip
    out["walls"] = "\n".join(lines)
    t = result["tuning"]
    header = "| floor | win rate vs greedy | score | score minus floor=0 |"
    lines = [f"`{t['command']}`", "", header, "| --- | --- | --- | --- |"]
    for r in t["rows"]:
        diff = (
            "baseline" if r["score_diff"] is None else _num(r["score_diff"], r["score_diff_ci95"])
        )
        lines.append(f"| {r['values']['floor']:g} | {_pct(r['win_rate'], r['win_rate_ci95'])} | "
                     f"{r['score']:.2f} | {diff} |")  # fmt: skip
    c = t["confirm"]
    lines += ["", f"Best value floor={t['best']['values']['floor']:g}; confirmed with "
              f"`{t['confirm_command']}`: {c['games']:,} games, Elo against the default "
              f"{c['elo']:+.1f} [{c['elo_ci95'][0]:+.1f}, {c['elo_ci95'][1]:+.1f}], "
              f"LOS {c['los']:.3f}."]  # fmt: skip
    out["tuning"] = "\n".join(lines)
    for name in ("ladder", "ladder3", "ladder4"):
        if name in result:
            out[name] = ladder_table(result[name])
    return out


def ladder_table(lad: dict) -> str:
    lines = [f"`{lad['command']}`", "", "| rank | bot | Elo (random = 0) | 95 % interval |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for i, b in enumerate(lad["bots"]):
        lines.append(f"| {i + 1} | {b['bot']} | {b['elo']:.0f} | "
                     f"[{b['elo_ci95'][0]:.0f}, {b['elo_ci95'][1]:.0f}] |")  # fmt: skip
    lines += ["", "| pair | comparisons | observed | predicted | within the interval |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for h in lad["head_to_head"]:
        lines.append(f"| {h['bot']} vs {h['opponent']} | {h['comparisons']:,} | "
                     f"{_pct(h['observed'], h['observed_ci95'])} | {100 * h['predicted']:.1f} % | "
                     f"{'yes' if h['agrees'] else '**no**'} |")  # fmt: skip
    return "\n".join(lines)


BOTS_ONLY = ("ladder3", "ladder4")  # in docs/bots.md only; the 2-player ladder in both


def write_docs(parts: dict[str, str]) -> None:
    _write_markers(
        ROOT / "docs" / "research.md", {k: v for k, v in parts.items() if k not in BOTS_ONLY}
    )
    ladders = {k: v for k, v in parts.items() if k == "ladder" or k in BOTS_ONLY}
    _write_markers(ROOT / "docs" / "bots.md", ladders)


def _write_markers(path: Path, parts: dict[str, str]) -> None:
    text = path.read_text()
    for name, body in parts.items():
        pattern = re.compile(rf"(<!-- study:{name} -->\n).*?(<!-- /study:{name} -->)", re.S)
        text, n = pattern.subn(lambda m, b=body: m.group(1) + b + "\n" + m.group(2), text)
        if n != 1:
            raise SystemExit(f"{path} has no study:{name} markers")
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small game counts (a smoke run)")
    parser.add_argument(
        "--only", help="comma-separated studies to play again (the others kept from the results)"
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    q = args.quick
    studies = {
        "first_player": lambda: first_player(240 if q else 12_000),
        "walls": lambda: walls(240 if q else 6_000),
        "tuning": lambda: tuning(120 if q else 2_000, 480 if q else 8_000),
        "ladder": lambda: ladder(40 if q else 400),
        "ladder3": lambda: ladder(60 if q else 600, 3),
        "ladder4": lambda: ladder(48 if q else 480, 4),
    }
    path = ROOT / "bench" / "results" / "research.json"
    only = None if args.only is None else args.only.split(",")
    if only is not None and (unknown := set(only) - set(studies)):
        raise SystemExit(f"unknown studies {sorted(unknown)}; known: {', '.join(studies)}")
    began = time.process_time()
    result = json.loads(path.read_text()) if only else {}
    result["seed"] = SEED
    for name, play in studies.items():
        if only is None or name in only:
            result[name] = play()
            result.setdefault("commands", {})[name] = (
                "python bench/research.py"
                + (" --quick" if q else "")
                + ("" if only is None else f" --only {args.only}")
            )
    result["command"] = "python bench/research.py" + (" --quick" if q else "")
    cpu = round(time.process_time() - began, 1)
    if only is None:
        result["cpu_s"] = cpu
    else:  # the CPU of the whole run stays as it was measured
        result.setdefault("cpu_s_only", {})[args.only] = cpu
    if not q:
        path.write_text(json.dumps(result, indent=1) + "\n")
    if not args.quick:
        write_docs(tables(result))
    print(json.dumps({"cpu_s": cpu, "command": result["command"], "only": args.only}))


if __name__ == "__main__":
    main()
