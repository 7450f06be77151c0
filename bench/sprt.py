"""Does the SPRT keep its error rates, how many games does it save, and what do mirrored groups buy?

Plays real Azul games (the batch engine, mirrored 2-player pairs) and writes
bench/results/sprt.json::

    python bench/sprt.py [--reps 1000] [--quick]

1. **False accepts** (``calibration``): A and B the same bot (greedy self-play, true Elo 0),
   GSPRT of H0 ``elo = 0`` against H1 ``elo = 40``, alpha = beta = 0.05, read after every pair and
   every 20 pairs; the rate at which H1 is accepted, with its Wilson interval, against alpha's
   binomial interval for that many repetitions; also read every 120 pairs (240 games: the default
   ``check_every`` of a spec and of ``azulsim compare``).
2. **Games to a decision** (``sample_size``): mean pairs to a decision of the same test against
   the pairs a fixed-size one-sided z-test of the same alpha and power needs
   (``((z_{1-a} + z_{1-b}) sigma / (s1 - s0))^2``, sigma the per-pair spread measured on a large
   sample), with the truth at H0 (self-play; and heuristic vs greedy tested at its measured Elo
   against 40 above) and at H1 (heuristic vs greedy tested at 40 below its measured Elo against
   it, read every 20 pairs and after every pair). "The truth" for heuristic vs greedy is its Elo
   measured on 20,000 other pairs, itself known to about ±6 Elo.
3. **Variance gain** (``variance_gain``): variance of the mean score counted over independent
   games over that counted over mirrored groups, with a bootstrap interval, for greedy vs
   heuristic and heuristic vs rollout (and greedy self-play).
4. **Overhead** (``overhead``): CPU time a chunk spends on group counters, the rule's per-segment
   counters and the check points, as a share of the chunk's play and count.

Every repetition is an independent sequence of pairs (its own groups of the deal stream); the
test at each check point is `sim.jobs.stopping.evaluate`'s (the exact GSPRT of the pentanomial, its
bounds moved in for the check-point interval by `sim.jobs.stopping.overshoot`). ``--uncorrected``
reads the nominal bounds instead, to show what the correction buys. Times
are CPU seconds of this process (time.process_time), so other load on the machine matters less.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.bots import make_bot  # noqa: E402
from sim.jobs.play import play_batch, play_games  # noqa: E402
from sim.jobs.spec import Configuration, JobSpec, deal_keys, first_player, seat_assignment  # noqa: E402
from sim.jobs.stopping import evaluate  # noqa: E402
from sim.stats import count  # noqa: E402
from sim.stats.derive import wilson  # noqa: E402
from sim.stats.groups import UNIT, count_groups, focal_points  # noqa: E402
from sim.stats.sprt import (  # noqa: E402
    elo_to_score,
    fixed_sample_size,
    pentanomial_moments,
    score_to_elo,
)

ALPHA = BETA = 0.05
WIDTH = 40.0  # elo1 - elo0


def play_pairs(config: Configuration, seed: int, groups: np.ndarray) -> np.ndarray:
    """Half-points (0..4) of the focal bot in each mirrored pair `groups` (-1: a truncated pair).

    The same set-up as `sim.jobs.play.play_games`, for an arbitrary set of groups in one batch.
    """
    games = (groups[:, None] * 2 + np.arange(2)).reshape(-1)
    specs = list(config.bot_specs)
    labels = [s.label for s in specs]
    unique = list(dict.fromkeys(labels))
    to_unique = np.array([unique.index(label) for label in labels], np.int8)
    seat_bot = seat_assignment(config, seed, games)
    rec = play_batch(
        2,
        config.wall,
        seed,
        games,
        first_player(seed, games, 2, config.seating),
        to_unique[seat_bot],
        [make_bot(specs[labels.index(label)]) for label in unique],
        deal_keys=deal_keys(seed, games, 2, config.seating),
    )
    rec.seat_bot = seat_bot
    pts = focal_points(rec).reshape(-1, 2).sum(axis=1) // (UNIT // 2)
    return np.where(rec.truncated.reshape(-1, 2).any(axis=1), -1, pts)


def run_sprts(config, seed, reps, elo0, elo1, check_pairs, max_pairs, block=120):
    """`reps` independent SPRTs, read every `check_pairs` pairs; returns (verdicts, pairs used).

    Verdict 1: H1 accepted, 0: H0 accepted, -1: undecided after `max_pairs`. Repetition r plays
    groups ``r * max_pairs ..``, a block of pairs at a time for all undecided repetitions at once.
    Each check point is `sim.jobs.stopping.evaluate` of a job whose rule reads every `check_pairs`
    pairs, on the counters of the repetition's pairs so far (bounds corrected as a job's are).
    """
    spec = JobSpec.from_dict({
        "configurations": [{"players": 2, "bots": list(config.bots), "seating": "mirrored"}],
        "games": 2 * max_pairs, "seed": seed,
        "stop": {"rule": "sprt", "elo0": elo0, "elo1": elo1, "alpha": ALPHA, "beta": BETA,
                 "check_every": 2 * check_pairs},
    })  # fmt: skip
    half = UNIT // 2
    counts = np.zeros((reps, 5), np.int64)
    used = np.zeros(reps, np.int64)  # pairs played (truncated ones included)
    verdict = np.full(reps, -1)
    live = np.arange(reps)
    block = max(block, check_pairs) // check_pairs * check_pairs
    i = np.arange(5)
    while live.size:
        groups = (live[:, None] * max_pairs + used[live, None] + np.arange(block)).reshape(-1)
        pts = play_pairs(config, seed, groups).reshape(live.size, block)
        still = []
        for row, r in enumerate(live):
            for c0 in range(0, block, check_pairs):
                part = pts[row, c0 : c0 + check_pairs]
                counts[r] += np.bincount(part[part >= 0], minlength=5)
                used[r] += check_pairs
                counters = {f"c0|penta|n{j}": int(counts[r, j]) for j in range(5)}
                counters["c0|group|n"] = int(counts[r].sum())
                counters["c0|group|sum"] = int((half * i * counts[r]).sum())
                counters["c0|group|sumsq"] = int(((half * i) ** 2 * counts[r]).sum())
                point = evaluate(spec.stop, counters, spec, 2 * int(used[r]))
                if point["reason"] in ("h1_accepted", "h0_accepted"):
                    verdict[r] = int(point["reason"] == "h1_accepted")
                    break
                if used[r] >= max_pairs:
                    break
            if verdict[r] < 0 and used[r] < max_pairs:
                still.append(r)
        live = np.array(still, np.int64)
    return verdict, used


def summary(verdict, used, fixed_pairs=None):
    reps = len(verdict)
    h1 = int((verdict == 1).sum())
    out = {
        "repetitions": reps,
        "h1_accepted": h1,
        "h0_accepted": int((verdict == 0).sum()),
        "undecided": int((verdict < 0).sum()),
        "h1_rate": h1 / reps,
        "h1_rate_wilson95": wilson(h1, reps),
        "mean_pairs": float(used.mean()),
        "median_pairs": float(np.median(used)),
        "p90_pairs": float(np.percentile(used, 90)),
    }
    if fixed_pairs:
        out["fixed_test_pairs"] = fixed_pairs
        out["mean_over_fixed"] = float(used.mean()) / fixed_pairs
    return out


def pair_sample(config, seed, pairs):
    """Pentanomial of `pairs` mirrored pairs from a seed of their own (a large sample)."""
    pts = play_pairs(config, seed, np.arange(pairs))
    return np.bincount(pts[pts >= 0], minlength=5)


def fixed_pairs_for(penta, elo0, elo1):
    _, _, var = pentanomial_moments(penta)
    return math.ceil(fixed_sample_size(var, elo_to_score(elo0), elo_to_score(elo1), ALPHA, BETA))


def variance_gain(bots, games, seed, resamples=400):
    """Gain of mirrored groups for 2 players: (var of per-game points / (2N)) / (var of the
    pair mean / N), from one run of `games` games, with a bootstrap 95 % interval over pairs."""
    config = Configuration(2, tuple(bots), "mirrored")
    began = time.process_time()
    rec = play_games(config, seed, 0, games)
    cpu = time.process_time() - began
    keep = ~rec.truncated.reshape(-1, 2).any(axis=1)
    pts = focal_points(rec).reshape(-1, 2)[keep] / UNIT  # (N, 2) per-game points of A

    def gain(x):
        return x.reshape(-1).var() / 2 / x.mean(axis=1).var() if x.mean(axis=1).var() else None

    boot_rng = np.random.default_rng(0)
    boots = [
        g
        for g in (gain(pts[boot_rng.integers(0, len(pts), len(pts))]) for _ in range(resamples))
        if g is not None
    ]
    counters = count(rec, 0, config)
    from sim.stats.groups import derive_groups

    doc = derive_groups(counters, 0, config)
    corr = np.corrcoef(pts[:, 0], pts[:, 1])[0, 1] if pts[:, 0].std() and pts[:, 1].std() else None
    return {
        "bots": list(bots),
        "games": int(games),
        "pairs": int(keep.sum()),
        "score": doc["score"],
        "elo": doc["elo"],
        "variance_gain": doc["variance_gain"],
        "variance_gain_bootstrap95": [
            float(np.percentile(boots, 2.5)),
            float(np.percentile(boots, 97.5)),
        ],  # fmt: skip
        "within_pair_correlation": None if corr is None else float(corr),
        "pentanomial": doc["pentanomial"],
        "cpu_seconds": cpu,
    }


def overhead(bots, games, check_every, repeats=3):
    """CPU share of a chunk spent on mirrored groups and the stop checks."""
    from sim.jobs.sequential import rule_counters

    spec = JobSpec.from_dict({
        "configurations": [{"players": 2, "bots": list(bots), "seating": "mirrored"}],
        "games": games, "seed": 3,
        "stop": {"rule": "sprt", "elo0": 0, "elo1": 20, "check_every": check_every},
    })  # fmt: skip
    config = spec.configurations[0]
    plain = Configuration(2, config.bots, "rotate")
    best: dict[str, float] = {}

    def clock(name, fn):
        began = time.process_time()
        out = fn()
        best[name] = min(best.get(name, math.inf), time.process_time() - began)
        return out

    for _ in range(repeats):
        rec = clock("play", lambda: play_games(config, spec.seed, 0, games))
        clock("count", lambda rec=rec: count(rec, 0, plain))
        clock("groups", lambda rec=rec: count_groups(rec, 0))
        segs = clock("segments", lambda rec=rec: rule_counters(spec, [rec], 0, games))

        def checks(segs=segs):
            acc: dict[str, int] = {}
            for j, part in segs:
                for k, v in part.items():
                    acc[k] = acc.get(k, 0) + v
                evaluate(spec.stop, acc, spec, (j + 1) * check_every)

        clock("checks", checks)
    chunk = best["play"] + best["count"]
    extra = best["groups"] + best["segments"] + best["checks"]
    return {
        "bots": list(bots),
        "chunk_games": games,
        "check_every": check_every,
        "cpu_seconds": best,
        "overhead_share": extra / chunk,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="SPRT repetitions (calibration)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    parser.add_argument("--uncorrected", action="store_true", help="nominal bounds throughout")
    parser.add_argument("--out", help="default bench/results/sprt.json (or sprt_uncorrected.json)")
    args = parser.parse_args()
    name = "sprt_uncorrected.json" if args.uncorrected else "sprt.json"
    args.out = args.out or str(ROOT / "bench" / "results" / name)
    if args.uncorrected:
        import sim.jobs.stopping

        sim.jobs.stopping.overshoot = lambda *a: 0.0
    reps = 40 if args.quick else args.reps
    began = time.process_time()
    greedy = Configuration(2, ("greedy", "greedy"), "mirrored")
    hg = Configuration(2, ("heuristic", "greedy"), "mirrored")
    result: dict = {
        "benchmark": "sprt",
        "command": "python bench/sprt.py"
        + (" --quick" if args.quick else f" --reps {reps}")
        + (" --uncorrected" if args.uncorrected else ""),
        "bounds": "nominal" if args.uncorrected else "moved in for the check points (overshoot)",
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "alpha": ALPHA,
        "beta": BETA,
        "alpha_binomial95": [
            ALPHA - 1.959964 * math.sqrt(ALPHA * (1 - ALPHA) / reps),
            ALPHA + 1.959964 * math.sqrt(ALPHA * (1 - ALPHA) / reps),
        ],  # fmt: skip
    }

    big = 2000 if args.quick else 20000
    self_penta = pair_sample(greedy, 999, big)
    hg_penta = pair_sample(hg, 999, big)
    _, hg_mu, _ = pentanomial_moments(hg_penta)
    hg_elo = score_to_elo(hg_mu)
    result["reference_samples"] = {
        "greedy_self_play": {"pairs": int(self_penta.sum()), "pentanomial": self_penta.tolist()},
        "heuristic_vs_greedy": {
            "pairs": int(hg_penta.sum()),
            "pentanomial": hg_penta.tolist(),
            "elo": hg_elo,
        },  # fmt: skip
    }

    # 1. False accepts of H1 when A and B are the same bot.
    calibration = []
    for check_pairs in (1, 20, 120):
        t = time.process_time()
        verdict, used = run_sprts(greedy, 11 + check_pairs, reps, 0.0, WIDTH, check_pairs, 20000)
        row = {"test": f"elo0=0, elo1={WIDTH:g}", "check_every_pairs": check_pairs}
        row.update(summary(verdict, used, fixed_pairs_for(self_penta, 0.0, WIDTH)))
        lo, hi = result["alpha_binomial95"]
        row["h1_rate_within_alpha_binomial95"] = lo <= row["h1_rate"] <= hi
        row["cpu_seconds"] = time.process_time() - t
        calibration.append(row)
        print(json.dumps(row), flush=True)
    result["calibration"] = calibration

    # 2. Games to a decision against the fixed-size test, truth at H0 and at H1.
    sample_size = [{"truth": "H0", "pair": "greedy self-play", **row} for row in calibration]
    rounded = round(hg_elo)
    for truth, elo0, elo1, every in (
        ("H1", rounded - WIDTH, rounded, 20),
        ("H1", rounded - WIDTH, rounded, 1),
        ("H0", rounded, rounded + WIDTH, 20),
    ):
        t = time.process_time()
        n = max(reps // 2, 20)
        verdict, used = run_sprts(hg, 21 + len(sample_size), n, elo0, elo1, every, 20000)
        row = {"truth": truth, "pair": "heuristic vs greedy", "test": f"elo0={elo0:g}, "
               f"elo1={elo1:g}", "check_every_pairs": every}  # fmt: skip
        row.update(summary(verdict, used, fixed_pairs_for(hg_penta, elo0, elo1)))
        row["cpu_seconds"] = time.process_time() - t
        sample_size.append(row)
        print(json.dumps(row), flush=True)
    result["sample_size"] = sample_size

    # 3. Variance gain of mirrored pairs.
    gains = []
    for bots, games in ((("heuristic", "greedy"), 20000), (("rollout", "heuristic"), 4000),
                        (("greedy", "greedy"), 20000)):  # fmt: skip
        row = variance_gain(bots, games // 10 if args.quick else games, 5)
        gains.append(row)
        print(json.dumps(row), flush=True)
    result["variance_gain"] = gains

    # 4. What mirrored groups and stop checks cost in a chunk.
    rows = []
    for bots, check_every in ((("heuristic", "greedy"), 240), (("greedy", "greedy"), 240),
                              (("heuristic", "greedy"), 40)):  # fmt: skip
        row = overhead(bots, 4080 if not args.quick else 480, check_every)
        rows.append(row)
        print(json.dumps(row), flush=True)
    result["overhead"] = rows
    result["cpu_seconds"] = time.process_time() - began
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    main()
